"""Commands load lazily: ``codeflux version`` and ``--help`` import no coordinator, grpc, pygit2 or apsw, and the
light command table loses nothing the full parser (every command loaded) shows."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import codeflux
from codeflux.cli import version
from codeflux.cli.command_table import COMMANDS
from codeflux.cli.main import build_parser, main, parser_for_command

CLI_FOLDER = Path(codeflux.__file__).parent / "cli"
PROBE = """
import contextlib, io, json, sys
from codeflux.cli.main import main
seen = {}
for label, argv in (("version", ["version"]), ("help", ["--help"]), ("task help", ["task", "--help"]),
                    ("version --libraries", ["version", "--libraries"])):
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    seen[label] = {"code": code, "modules": sorted(sys.modules)}
print(json.dumps(seen))
"""


def _heavy(modules: list[str]) -> list[str]:
    """The modules of a slow start: the libraries, the coordinator's services, the transports, the channel."""
    heavy_roots = ("grpc", "google.protobuf", "pygit2", "apsw", "keyring", "httpx", "websockets", "structlog")
    ours = ("codeflux.services", "codeflux.server", "codeflux.cli.channel", "codeflux.store.database",
            "codeflux.coordinator.")
    return [name for name in modules
            if name.split(".")[0] in heavy_roots
            or (name.startswith(ours) and name != "codeflux.coordinator.schema_version")]


def test_version_and_help_import_no_coordinator_grpc_pygit2_or_apsw() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert {label: run["code"] for label, run in seen.items()} == dict.fromkeys(seen, 0)
    assert _heavy(seen["version"]["modules"]) == []
    assert _heavy(seen["help"]["modules"]) == []
    # Positive controls: the probe sees what a command loads — one command's module, the libraries on request.
    assert "codeflux.cli.task" not in seen["help"]["modules"]
    assert "codeflux.cli.task" in seen["task help"]["modules"]
    assert {"apsw", "pygit2"} <= set(_heavy(seen["version --libraries"]["modules"]))


def _command_modules_on_disk() -> set[str]:
    """The modules under codeflux/cli that define a command (a top-level ``NAME`` and a ``run`` function)."""
    found = set()
    for path in CLI_FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {target.id for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if "NAME" in names and "run" in functions:
            found.add(path.stem)
    return found


def test_the_table_names_every_command_module_with_its_own_name_and_summary() -> None:
    assert {entry.module for entry in COMMANDS} == _command_modules_on_disk()
    for entry in COMMANDS:
        module = entry.load()
        assert (entry.name, entry.summary) == (module.NAME, module.SUMMARY), entry.module


def test_help_from_the_table_is_the_full_parsers_help_for_the_tool_and_each_command() -> None:
    full, light = build_parser(), parser_for_command(None)
    assert light.format_help() == full.format_help()
    full_commands = full._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for entry in COMMANDS:
        one = parser_for_command(entry.name)._subparsers._group_actions[0].choices  # type: ignore[union-attr]
        assert one[entry.name].format_help() == full_commands[entry.name].format_help(), entry.name
        # argparse wraps the help (also after hyphens): compare without whitespace
        assert "".join((entry.name + entry.summary).split()) in "".join(light.format_help().split())


def test_top_level_version_prints_the_first_line_of_the_version_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--version"]) == 0
    short = capsys.readouterr().out
    assert main(["version"]) == 0
    long = capsys.readouterr().out
    assert short == f"codeflux: {codeflux.__version__}\n"
    assert long.splitlines()[0] == short.strip()
    assert "commit: " in long and "frozen: no" in long


def test_the_build_commit_comes_from_the_build_file_and_is_never_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    (tmp_path / version.BUILD_INFO_FILE).write_text(json.dumps({"commit": commit}))
    facts = version.build_facts(package_folder=tmp_path)
    assert (facts.commit, facts.commit_source) == (commit, "build")
    (tmp_path / version.BUILD_INFO_FILE).write_text(json.dumps({"commit": "HEAD"}))
    assert version.build_facts(package_folder=tmp_path).commit == "unknown"
    (tmp_path / version.BUILD_INFO_FILE).unlink()
    # This checkout is an editable install: pip recorded no commit, and none is read from the .git nearby.
    assert version.build_facts(package_folder=tmp_path).commit == "unknown"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert version.build_facts(package_folder=tmp_path).frozen is True


@pytest.mark.parametrize("name", ["apsw", "pygit2", "codeflux", "typing-extensions", "Typing_Extensions", "no-such"])
def test_library_versions_are_what_importlib_metadata_reads(name: str) -> None:
    """codeflux version reads the installed metadata without importing importlib.metadata: the same answers."""
    try:
        expected: str | None = metadata.version(name)
    except metadata.PackageNotFoundError:
        expected = None
    assert version.installed_version(name) == expected


def test_the_entry_itself_imports_neither_typing_nor_the_error_classes() -> None:
    """Every command (and every worker) starts with the entry's hardening; `typing` and the ~1,200-line error module
    cost that start ~15 ms together and are only needed once something is typed-checked or raised."""
    probe = "import sys, codeflux.cli.entry; print(sorted({'typing', 'codeflux.domain.errors'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
