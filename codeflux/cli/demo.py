"""`codeflux demo init PATH`: a small sample repository to try codeflux offline.

The repository (shipped as package data in ``codeflux/cli/demo_files/``) is a tiny Python package with one
failing test and a ``TASK.md`` holding the requirement; ``script.json`` is the scripted provider's (not a
model) script that fixes it: a plan turn, an ``edit_file`` turn, a ``run_command`` of the tests and a final
turn. ``init`` refuses a non-empty PATH, runs ``git init`` and commits, then prints the exact
``codeflux run`` command that works through it with ``--provider scripted`` and the test command
pre-approved. The tests need ``python3`` with pytest on your PATH.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
from importlib import resources
from pathlib import Path
from typing import Final

from codeflux.cli.context import CliContext
from codeflux.domain.errors import GitOperationFailedError, OutputExistsError, UsageError

NAME = "demo"
SUMMARY = "create a sample repository with a failing test and print the offline `codeflux run` to fix it"
RECORDS_APP_LOG = True

DEMO_TEST_COMMAND: Final = "python3 -m pytest -p no:cacheprovider --junitxml=.codeflux-checks/junit.xml"
_GIT_IDENTITY: Final = ("-c", "user.name=codeflux demo", "-c", "user.email=demo@codeflux.invalid")


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="create the sample repository at PATH (git init + commit)",
                              description="create the sample repository at PATH (must be missing or empty), "
                                          "commit it, and print the `codeflux run` command to try",
                              allow_abbrev=False)
    init.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    init.add_argument("path", metavar="PATH", help="where to create the repository (missing or empty)")


def sample_files() -> dict[str, str]:
    raw = json.loads(resources.files("codeflux.cli").joinpath("demo_files", "repository.json").read_text("utf-8"))
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise UsageError("the shipped demo repository is malformed; reinstall codeflux")
    return {str(path): content for path, content in files.items()}


def _git(root: Path, *args: str) -> None:
    done = subprocess.run(["git", *_GIT_IDENTITY, "-C", str(root), *args], capture_output=True, text=True,
                          check=False, timeout=60)
    if done.returncode != 0:
        raise GitOperationFailedError(operation=f"{args[0]} the demo repository", problem="failed",
                                      detail=done.stderr.strip()[:300])


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    root = Path(args.path).expanduser().absolute()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise OutputExistsError(what=f"{root} (not an empty directory)")
    root.mkdir(parents=True, exist_ok=True)
    for relative, content in sample_files().items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "calc demo: add() is wrong for negative numbers")
    ctx.say(f"sample repository created at {root} (branch main, 1 commit; tests/test_ops.py::test_add_negative "
            "fails)")
    ctx.say("try it offline (scripted provider, not a model; needs python3 with pytest on PATH):")
    ctx.say("  " + " ".join(demo_run_command(root)))
    return 0


def demo_run_command(root: Path) -> list[str]:
    """The exact ``codeflux run`` command line for the sample at ``root`` (shell-quoted words)."""
    return ["codeflux", "run", "--repo", shlex.quote(str(root)), "--requirement-file",
            shlex.quote(str(root / "TASK.md")), "--provider", "scripted", "--allow",
            shlex.quote(f"run_command:{DEMO_TEST_COMMAND}"), "--budget", "1.00", "--yes"]
