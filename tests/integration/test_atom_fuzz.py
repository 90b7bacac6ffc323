"""Stage 12 atom-fuzz (issue 17): atoms that parse or decode are fuzzed with Hypothesis in the task's real, confined
worker, on a scratch copy of the final tree, within a 1 s budget per atom (a stored setting). The reproduction of the
issue's "Why": the stage was ``not-implemented`` — a decoder that crashes on one byte, or hangs on some text, reached
review without any check having tried it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import venv as venv_module
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.findings import FINDINGS_JOIN_SEND_BACK
from codeflux.pipeline.fuzz import FUZZ_DIRECTORY, FUZZ_WORKING_DIRECTORY, evaluate_atom_fuzz
from codeflux.pipeline.fuzz_script import FUZZ_REPORT
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import ATOM_FUZZ_BUDGET_S, StoredSettings, set_threshold
from codeflux.pipeline.tool_overlay import COVERAGE, MANIFEST, repository_tools, resolve_tools
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow,
    allow_overlay_install,
    assembled_facts,
    no_install_driver,
    running_ports,
    wheelhouse_version,
)
from tests.fixtures.task_runs import Harness, make_harness

SEED = 20261202

CODEC = '''"""A small codec."""


def parse_pair(text: str) -> tuple[str, str]:
    """Split ``KEY=VALUE``.

    Raises:
        ValueError: when there is no ``=``.
    """
    key, value = text.split("=", 1)
    return key, value


def decode_ratio(data: bytes) -> int:
    """The length over the first byte."""
    return len(data) // data[0] if data else 0


def read_until(text: str) -> int:
    """Waits while the text is longer than one character."""
    while len(text) > 1:
        pass
    return len(text)


def load_note(text: str) -> int:
    """Keeps a note beside its module and in its working directory (the fuzzing copy, never the worktree)."""
    from pathlib import Path
    Path(__file__).with_name("fuzz-note.txt").write_text("x")
    Path("fuzz-cwd-note.txt").write_text("x")
    return len(text)


def read_stubborn(text: str) -> int:
    """Swallows every interruption, the per-input timer's too: only the watchdog ends it."""
    while len(text) > 1:
        try:
            while True:
                pass
        except BaseException:
            pass
    return len(text)


def scale(a: int, b: int) -> int:
    """Neither parses nor decodes."""
    return a * b
'''
FIXED = '''"""A small codec."""


def parse_pair(text: str) -> tuple[str, str]:
    """Split ``KEY=VALUE``.

    Raises:
        ValueError: when there is no ``=``.
    """
    key, value = text.split("=", 1)
    return key, value


def decode_ratio(data: bytes) -> int:
    """The length over the first byte (0 when it is 0)."""
    return len(data) // data[0] if data and data[0] else 0
'''
ARITHMETIC = "def scale(a: int, b: int) -> int:\n    return a * b\n"


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def with_budget(harness: Harness, ports: PipelinePorts) -> PipelinePorts:
    """The ports reading the stored settings, the fuzz budget set to 1 s (the default is 20)."""
    set_threshold(harness.db, ATOM_FUZZ_BUDGET_S, 1, expected_revision=None)
    return dataclasses.replace(ports, settings=StoredSettings(harness.db))



def atoms_of(result: StageResult) -> dict[str, dict[str, object]]:
    found = result.evidence["atoms"]
    assert isinstance(found, list)
    return {str(item["qualified_name"]): item for item in found}


def test_a_crash_and_a_hang_fail_it_with_the_input_kept_and_a_command_that_replays_it(
        harness: Harness) -> None:
    ports = with_budget(harness, running_ports(harness))
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "codec.py").write_text(CODEC)
    identity = diff_against_base(ports.facts.worktree).identity

    result = evaluate_atom_fuzz(assembled_facts(ports), seed=SEED)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    atoms = atoms_of(result)
    # the undocumented exception: the input, the exception and the traceback's tail are kept
    crash = atoms["pkg.codec.decode_ratio"]
    assert crash["outcome"] == "failed" and crash["input"] == "{'data': b'\\x00'}", crash
    assert str(crash["exception"]).startswith("builtins.ZeroDivisionError: ")
    assert any("return len(data) // data[0]" in line for line in crash["traceback_tail"])  # type: ignore[union-attr]
    # the hang: stopped by the per-input deadline, its input kept
    hang = atoms["pkg.codec.read_until"]
    assert hang["outcome"] == "hang" and hang["stopped"] == "input deadline" and str(hang["input"]).startswith(
        "{'text': '"), hang
    # the hang that swallows the per-input timer: the watchdog ended the run, the input it was on kept
    stubborn = atoms["pkg.codec.read_stubborn"]
    assert stubborn["outcome"] == "hang" and stubborn["stopped"] == "watchdog", stubborn
    assert str(stubborn["input"]).startswith("{'text': '")
    # a documented raise passes; an atom writing files wrote into the fuzzing copy only
    assert atoms["pkg.codec.parse_pair"]["outcome"] == "passed", atoms["pkg.codec.parse_pair"]
    assert atoms["pkg.codec.parse_pair"]["documented_raises"] == ["ValueError"]
    assert int(str(atoms["pkg.codec.parse_pair"]["inputs"])) > 10
    assert atoms["pkg.codec.load_note"]["outcome"] == "passed"
    assert not (worktree / "pkg" / "fuzz-note.txt").exists() and not (worktree / "fuzz-cwd-note.txt").exists()
    assert diff_against_base(ports.facts.worktree).identity == identity == result.evidence["diff_identity"]
    temp = harness.driver.task_temp_directory(ports.facts.task_id)
    assert not (temp / "codeflux-scratch" / "fuzz").exists() and not list(temp.glob("codeflux-checks/*"))
    assert not (worktree / ".hypothesis").exists()
    # what does not parse is listed, not fuzzed
    assert atoms["pkg.codec.scale"]["fuzzed"] is False
    assert str(atoms["pkg.codec.scale"]["detail"]).startswith("not fuzzed: it does not parse or decode")
    # the findings (they join a send-back), the seed, the setting and the budget's time apart
    findings = result.evidence["findings"]
    assert isinstance(findings, list) and len(findings) == 3
    assert findings[0].startswith("pkg.codec.decode_ratio raised builtins.ZeroDivisionError")
    assert "(documented raises: none documented); reproduce with: " in findings[0]
    assert findings[1].startswith("pkg.codec.read_until hung on input {'text': '")
    assert "(stopped by the input deadline)" in findings[1] and "(stopped by the watchdog)" in findings[2]
    assert StageName.ATOM_FUZZ in FINDINGS_JOIN_SEND_BACK
    assert result.evidence["seed"] == SEED and result.evidence["run"]["seed"] == SEED  # type: ignore[index]
    assert result.evidence["settings"] == {"budget_s": {"key": "pipeline.atom-fuzz.budget-s", "value": 1,
                                                        "source": "setting pipeline.atom-fuzz.budget-s, revision 0",
                                                        "default": 20}, "input_deadline_s": 1.0}
    timing = result.evidence["fuzz_time"]
    assert isinstance(timing, dict) and timing["budget_s_per_atom"] == 1 and timing["atoms"] == 5
    assert "benchmark excludes it" in timing["reported_apart"]
    tools = result.evidence["tools"]
    assert isinstance(tools, dict) and tools["tools"][0]["provided_by"] == "repository environment"
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("5 atom(s) fuzzed with Hypothesis ") and f"(seed {SEED}, " in said

    # the printed command replays the crash: the same seed gives the same inputs, in a copy of the final tree
    argv = tuple(str(part) for part in crash["reproduce_argv"])  # type: ignore[attr-defined]
    assert str(crash["reproduce"]).startswith(f"{harness.venv_python} -c \"$CODEFLUX_FUZZ_SCRIPT\" - ")
    allow(harness.driver, ports.facts.task_id, pytest_argv(harness.venv_python), attempt=2)  # a fresh request
    assert write_base_scratch(ports.facts.worktree, root=temp, directory=FUZZ_DIRECTORY,
                              overlay=["pkg/codec.py"]).path is not None
    try:
        replay = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=2,
                                                  working_directory=FUZZ_WORKING_DIRECTORY,
                                                  covered_by=pytest_argv(harness.venv_python))
        replayed = json.loads((temp / PurePosixPath(FUZZ_REPORT)).read_text())
    finally:
        remove_base_scratch(temp, FUZZ_DIRECTORY)
    assert replay.ran and replay.exit_code == 0, replay
    assert replayed["results"]["pkg.codec.decode_ratio"]["input"] == crash["input"]
    assert replayed["results"]["pkg.codec.decode_ratio"]["outcome"] == "failed"


def test_a_diff_whose_atoms_do_not_parse_or_decode_is_skipped_with_the_reason(harness: Harness) -> None:
    ports = with_budget(harness, running_ports(harness))
    (ports.facts.worktree.path / "pkg" / "arith.py").write_text(ARITHMETIC)

    result = evaluate_atom_fuzz(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.SKIPPED
    assert (result.verdict.reason or "").startswith("no atom parses or decodes")
    assert atoms_of(result)["pkg.arith.scale"]["fuzzed"] is False


def venv_without_hypothesis(harness: Harness, root: Path) -> None:
    """The repository's ``.venv`` becomes an environment with pytest and pip (linked from codeflux's own) but no
    Hypothesis and no coverage."""
    venv_module.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(root)
    site = next((root / "lib").glob("python3*/site-packages"))
    own = Path(os.path.realpath(harness.venv_python)).parent.parent
    own_site = next((own / "lib").glob("python3*/site-packages"))
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pip", "py.py"):
        if (own_site / name).exists():
            (site / name).symlink_to(own_site / name)
    link = harness.repo / ".venv"
    link.unlink()
    link.symlink_to(root, target_is_directory=True)


def test_hypothesis_missing_and_not_installable_blocks_it_naming_the_tool_and_the_fix(
        db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:  # a headless run without --allow-check-tools
        harness = make_harness(db, tmp_path, driver)
        venv_without_hypothesis(harness, tmp_path / "plainvenv")
        ports = with_budget(harness, running_ports(harness))
        (ports.facts.worktree.path / "pkg" / "codec.py").write_text(FIXED)

        result = evaluate_atom_fuzz(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.BLOCKED, result.verdict
    assert result.evidence == {}  # a blocked stage records no evidence (the ledger's rule)
    reason = result.verdict.reason or ""
    assert reason.startswith("hypothesis is not in the repository's environment"), reason
    assert "only with --allow-check-tools" in reason and "CODEFLUX_TOOL_WHEELHOUSE" in reason
    assert f"{harness.venv_python} -m pip install 'hypothesis>=6.100,<7'" in reason


def test_an_overlay_made_before_hypothesis_joined_still_serves_coverage_and_gets_hypothesis_on_the_next_install(
        harness: Harness, tmp_path: Path) -> None:
    """An overlay holding coverage only (made before Hypothesis was a check tool) keeps serving a check that needs
    coverage; stage 12, which needs Hypothesis, installs every check tool through the install request and fuzzes
    with Hypothesis from the new overlay."""
    venv_without_hypothesis(harness, tmp_path / "plainvenv")
    ports = with_budget(harness, running_ports(harness))
    python, test_argv = harness.venv_python, pytest_argv(harness.venv_python)
    key = resolve_tools(ports, attempt=1, interpreter=python, test_argv=test_argv, tools=(COVERAGE,)).key
    assert key is not None
    older = repository_tools(harness.driver.tools_directory, harness.repo) / key
    (older / "site" / "coverage-7.4.0.dist-info").mkdir(parents=True)
    (older / MANIFEST).write_text(json.dumps({"key": key, "tools": {"coverage": "7.4.0"}}))

    coverage_only = resolve_tools(ports, attempt=1, interpreter=python, test_argv=test_argv, tools=(COVERAGE,))
    assert coverage_only.ready and coverage_only.install is None and coverage_only.overlay_site == older / "site"

    allow_overlay_install(harness, ports.facts.task_id)
    (ports.facts.worktree.path / "pkg" / "codec.py").write_text(FIXED)
    result = evaluate_atom_fuzz(assembled_facts(ports))

    # nothing beyond the documented raises (ValueError of parse_pair), no hang; a fresh seed, recorded
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert (result.verdict.gate_evaluation or "").endswith(": no exception beyond the documented raises, no hang")
    assert result.evidence["findings"] == [] and result.evidence["seed_given"] is False
    assert isinstance(result.evidence["seed"], int)
    assert {name: entry["outcome"] for name, entry in atoms_of(result).items()} == {
        "pkg.codec.parse_pair": "passed", "pkg.codec.decode_ratio": "passed"}
    hypothesis = wheelhouse_version("hypothesis")
    tools = result.evidence["tools"]
    assert isinstance(tools, dict) and tools["tools"] == [{
        "tool": "hypothesis", "version": hypothesis, "provided_by": "codeflux overlay",
        "location": str(older / "site")}]
    assert result.evidence["run"]["hypothesis"] == hypothesis  # type: ignore[index]
    manifest = json.loads((older / MANIFEST).read_text())
    assert manifest["tools"] == {"coverage": wheelhouse_version(), "hypothesis": hypothesis}


def test_stage_12_is_performed_in_phase_b_and_the_catalog_says_what_it_measures() -> None:
    assert StageName.ATOM_FUZZ in [stage.stage for stage in ATOM_STAGES]
    stage = stage_named(StageName.ATOM_FUZZ)
    assert stage.performable and not stage.sends_back
    assert "Hypothesis" in stage.gate and "recorded seed" in stage.gate and "Not proven" in stage.gate
