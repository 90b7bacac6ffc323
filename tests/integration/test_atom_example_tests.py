"""Stage 8 atom-example-tests (issue 17): every atom is executed by a test, and a test of it fails against the atom's
stub — measured with coverage.py (from codeflux's overlay, installed from the wheelhouse) and stubs made with libcst
in a scratch copy of the final tree under the task's TMPDIR. Real task worktrees, a real worker, real pytest,
confined. The reproduction of the issue's "Why": the stage was ``not-implemented`` — nothing said whether the tests
touch the changed code at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.authority.decide import UserDecision
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import (
    HeadlessPolicy,
    PreapprovedOperation,
    RunOutcomeKind,
    resume_run,
    run_task,
)
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.tool_overlay import INSTALL_WORKING_DIRECTORY, install_argv
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow_overlay_install,
    assembled_facts,
    keep_overlay,
    no_install_driver,
    running_ports,
)
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import Harness, calc_tests, done, make_harness, scripted_gateway, write_file


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def evaluate(ports: PipelinePorts) -> StageResult:
    return evaluate_atom_example_tests(assembled_facts(ports))


def atoms_of(result: StageResult) -> dict[str, dict[str, object]]:
    found = result.evidence["atoms"]
    assert isinstance(found, list)
    return {str(item["atom"]): item for item in found}


WEAK_AND_UNTESTED = (
    "def add(a, b):\n    total = a + b\n    return total\n\n\n"
    "def sub(a, b):\n    difference = a - b\n    return difference\n\n\n"
    "def mul(a, b):\n    return a * b\n"
)
SWALLOWING_TEST = (
    "from pkg.calc import sub\n\n\n"
    "def test_sub_runs():\n    try:\n        sub(3, 1)\n    except Exception:\n        pass\n"
)


def test_a_weak_test_and_an_untested_atom_fail_the_stage_both_stubs_judged_in_one_process_never_the_worktree(
        harness: Harness, overlay_cache: Path) -> None:
    """Two stubbed atoms are judged by one confined run of the in-process switching runner (one request, one
    process id) in a scratch copy under TMPDIR — before, each stub started a pytest process of its own."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(WEAK_AND_UNTESTED)
    (worktree / "tests" / "test_sub.py").write_text(SWALLOWING_TEST)
    identity = diff_against_base(ports.facts.worktree).identity

    result = evaluate(ports)
    keep_overlay(harness, overlay_cache)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    atoms = atoms_of(result)
    assert atoms["pkg.calc.add"]["tests"] == ["tests/test_calc.py::test_add"]
    assert atoms["pkg.calc.add"]["failed_against_stub"] == ["tests/test_calc.py::test_add"]
    assert atoms["pkg.calc.sub"]["tests"] == ["tests/test_sub.py::test_sub_runs"]
    assert atoms["pkg.calc.sub"]["failed_against_stub"] == []
    assert atoms["pkg.calc.sub"]["passed_against_stub"] == ["tests/test_sub.py::test_sub_runs"]
    assert atoms["pkg.calc.mul"]["tests"] == [] and atoms["pkg.calc.mul"]["finding"] == \
        "no test executes this atom's body"
    reason = result.verdict.gate_evaluation or ""
    assert "no test executes: pkg.calc.mul" in reason
    assert "every covering test still passes against the stub of: pkg.calc.sub" in reason
    assert "tests/test_sub.py::test_sub_runs (does not test pkg.calc.sub)" in reason
    # stubs ran (two atoms had tests) — and the worktree's diff is what it was: no stub ever touched it
    assert result.evidence["stubs_run"] == 2
    # one process judged both stubs: one confined request, the runner's one process id, every stub reached
    run = result.evidence["run"]
    assert isinstance(run, dict) and run["argv"][1:3] == ["-c", "MUTATION_SCRIPT"], run
    assert isinstance(run["pid"], int) and run["complete"] is True and run["state"] == "succeeded", run
    assert atoms["pkg.calc.add"]["request_id"] == atoms["pkg.calc.sub"]["request_id"] == run["request_id"]
    assert result.evidence["diff_identity_before"] == result.evidence["diff_identity_after"] == identity
    assert diff_against_base(ports.facts.worktree).identity == identity
    assert (worktree / "pkg" / "calc.py").read_text() == WEAK_AND_UNTESTED
    temp = harness.driver.task_temp_directory(ports.facts.task_id)
    assert not (temp / "codeflux-scratch" / "stub").exists() and not list(temp.glob("codeflux-checks/*"))
    tools = result.evidence["tools"]
    assert isinstance(tools, dict) and tools["tools"][0]["provided_by"] == "codeflux overlay"
    coverage = result.evidence["coverage"]
    assert isinstance(coverage, dict) and coverage["diff_identity"] == identity
    assert coverage["measured_with"]["coverage"] == tools["tools"][0]["version"]


POISONED_RC = "[run]\ndata_file = poisoned-rc/.coverage\nbranch = False\n"
POISONED_PYPROJECT = '[tool.coverage.run]\ndata_file = "poisoned-pyproject/.coverage"\n'


def test_tests_that_fail_against_the_stub_satisfy_it_and_a_poisoned_coverage_config_redirects_nothing(
        harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text("def add(a, b):\n    \"\"\"Add.\"\"\"\n    return b + a\n\n\n"
                                              "def sub(a, b):\n    return a - b\n")
    (worktree / ".coveragerc").write_text(POISONED_RC)
    (worktree / "pyproject.toml").write_text(POISONED_PYPROJECT)
    (worktree / "setup.cfg").write_text("[coverage:run]\ndata_file = poisoned-setup/.coverage\n")

    result = evaluate(ports)
    keep_overlay(harness, overlay_cache)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert atoms_of(result)["pkg.calc.add"]["failed_against_stub"] == ["tests/test_calc.py::test_add"]
    assert (result.verdict.gate_evaluation or "").startswith("1 atom(s); 1 stub run(s) in a scratch copy")
    # the repository's coverage configuration was never read: no data file anywhere it named, branch data kept
    assert sorted(path.name for path in worktree.iterdir() if path.name.startswith("poisoned")) == []
    assert [path.name for path in worktree.rglob(".coverage*")] == [".coveragerc"]


def test_a_diff_without_atoms_is_skipped(harness: Harness) -> None:
    ports = running_ports(harness)
    (ports.facts.worktree.path / "README.md").write_text("# calc\n\nChanged words only.\n")

    result = evaluate(ports)

    assert result.verdict.outcome is StageOutcome.SKIPPED
    assert "no function or method" in (result.verdict.reason or "")


def test_without_coverage_and_no_way_to_install_it_the_stage_is_blocked_naming_the_tool_and_the_fix(
        db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(WEAK_AND_UNTESTED)

        result = evaluate(ports)

    assert result.verdict.outcome is StageOutcome.BLOCKED
    reason = result.verdict.reason or ""
    assert reason.startswith("coverage is not in the repository's environment")
    assert "-m pip install 'coverage>=7.4,<8'" in reason and "CODEFLUX_TOOL_WHEELHOUSE" in reason
    assert "only with --allow-check-tools" in reason  # nothing was asked: the install was declined, not pending


def test_the_catalog_says_stage_8_is_performed_and_what_it_measures() -> None:
    stage = stage_named(StageName.ATOM_EXAMPLE_TESTS)
    assert stage.performable
    assert "raise NotImplementedError" in stage.gate and "Not checked" in stage.gate


CHANGED_ADD = "def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n    return a - b\n"


def test_a_headless_run_with_the_install_pre_approved_records_stage_8_satisfied_with_its_evidence(
        harness: Harness) -> None:
    """The whole run: the runner's pre-flight settles the overlay's install request like the test command (here by
    the headless run's pre-approved operations), stage 8 installs or reuses the overlay and records its verdict."""
    task_id = harness.ready_task()  # a fresh data directory: no overlay yet
    install = install_argv(harness.venv_python, SOURCE)
    turns = [write_file("pkg/calc.py", CHANGED_ADD, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(-3), "w2", replacing=BASE_FILES["tests/test_calc.py"]), done()]
    gateway, _ = scripted_gateway(harness.db, turns)
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python)),
                                      PreapprovedOperation.command(install)])

    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=policy)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    row = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.ATOM_EXAMPLE_TESTS)
    assert row.verdict.outcome is StageOutcome.SATISFIED, row.verdict
    atoms = {str(item["atom"]): item for item in row.evidence["atoms"]}  # type: ignore[union-attr]
    assert atoms["pkg.calc.add"]["failed_against_stub"] == ["tests/test_calc.py::test_add",
                                                           "tests/test_calc.py::test_add_negative"]
    assert row.evidence["stubs_run"] == 1
    tools = row.evidence["tools"]
    assert isinstance(tools, dict) and tools["tools"][0]["provided_by"] == "codeflux overlay"
    installed = tools["install"]
    assert isinstance(installed, dict) and installed["argv"] == list(install)
    decided = harness.db.read(lambda view: authority_rows.latest_decision(view, str(installed["request_id"])))
    assert decided.decided_by.value == "headless-policy"  # settled by the runner's pre-flight, before validation
    # 8, 11 and 13 read the attempt's one coverage map. Before, 13 asked for its own — the same request again (same
    # idempotency key), whose map 8 had already read — and was blocked "the coverage run ended … without its map"
    ledger = {row.verdict.stage: row for row in harness.tasks.ledger(task_id, 1)}
    assert ledger[StageName.ATOM_VERIFICATION].verdict.outcome is StageOutcome.SATISFIED
    # stage 7 is decided in the whole run too: add is unannotated and undeclared, so it has no input ladder
    cases = ledger[StageName.ATOM_CASE_SYNTHESIS]
    assert cases.verdict.outcome is StageOutcome.SKIPPED, cases.verdict
    assert (cases.verdict.reason or "").startswith("no atom has a parameter with a type codeflux derives")
    mutation = ledger[StageName.ATOM_MUTATION]
    assert mutation.verdict.outcome in (StageOutcome.SATISFIED, StageOutcome.FAILED), mutation.verdict
    assert mutation.evidence["coverage"] == row.evidence["coverage"]


PLANTING_TEST = '''import os
import pathlib

from pkg.calc import add, sub


def test_plants_a_link_where_the_stubbed_file_was():
    if "codeflux-scratch" in os.getcwd():  # only in the stub's scratch copy, never in the worktree
        here = pathlib.Path("pkg/calc.py")
        here.unlink()
        os.symlink(VICTIM, here)
    assert add(1, 2) == 3 and sub(3, 1) == 2
'''


@pytest.mark.security
def test_a_link_a_stub_run_plants_in_its_scratch_copy_is_never_written_through(
        harness: Harness, overlay_cache: Path, tmp_path: Path) -> None:
    """The repository's tests run in the scratch copy, confined but able to write TMPDIR: one replaces the stubbed
    file with a link to a file outside. Nothing writes the next stub or the original back through it — the
    in-box runner renames a new file over the link, and the coordinator (unconfined) writes nothing into the copy
    once a test ran — so the outside file is untouched, and both stubs still ran."""
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(WEAK_AND_UNTESTED)
    (worktree / "tests" / "test_plant.py").write_text(PLANTING_TEST.replace("VICTIM", repr(str(victim))))

    result = evaluate(ports)

    assert victim.read_text() == "untouched\n"
    atoms = atoms_of(result)
    assert "tests/test_plant.py::test_plants_a_link_where_the_stubbed_file_was" in atoms["pkg.calc.sub"][
        "failed_against_stub"]
    assert result.evidence["stubs_run"] == 2


def test_with_prompting_on_the_install_is_a_card_a_person_decides_before_the_checks_run(harness: Harness) -> None:
    """Not headless: the runner's pre-flight records the overlay's install request before validation and the run
    waits for the person (awaiting authority), exactly like the test command; allowed, the run resumes, installs
    the overlay and records stage 8."""
    task_id = harness.ready_task()
    turns = [write_file("pkg/calc.py", CHANGED_ADD, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(-3), "w2", replacing=BASE_FILES["tests/test_calc.py"]), done()]
    gateway, _ = scripted_gateway(harness.db, turns)
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=None)
    asked: list[str] = []
    for _ in range(5):  # every card the run shows, decided by the person in turn
        if outcome.kind is not RunOutcomeKind.AWAITING_AUTHORITY:
            break
        pending = outcome.pending_request_id or ""
        request = harness.db.read(lambda view, pending=pending: authority_rows.read_tool_request(view, pending))
        asked.append(str(request.operation.cwd))
        harness.driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the person allows it")
        outcome = resume_run(outcome)

    assert INSTALL_WORKING_DIRECTORY in asked  # the install was a card of its own
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    row = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.ATOM_EXAMPLE_TESTS)
    assert row.verdict.outcome is StageOutcome.SATISFIED, row.verdict
