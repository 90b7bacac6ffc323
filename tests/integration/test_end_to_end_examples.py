"""Stage 29 runs the person's acceptance examples (issue 14 item 6), with the scripted provider (not a
model), real worker processes, real pytest and confined commands.

The reproduction of the issue's "Why": a named test that does not exist, or a command whose output does not
match, used to yield a "clean" bundle (stage 29 was not implemented). Now each example is reproduced on the
attempt's diff, and one that does not hold sends the work back.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codeflux.authority.decide import DecisionOutcome
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ExecutionRecord, ToolDriver
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.pipeline.program import junit_case_of, pytest_argv
from codeflux.providers.scripted import ScriptedTurn
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database
from tests.fixtures.repos import BASE_FILES, commit_all, write_files
from tests.fixtures.task_runs import (
    FIXED_CALC,
    Harness,
    calc_tests,
    done,
    implementing_turns,
    make_harness,
    rewriting_turns,
    scripted_gateway,
    write_file,
)

GATES_DECIDE = LoopLimits(max_finish_repairs=0)
"""Some scripts here write a wrong change on purpose, to see a gate send it back: the loop's own check at finish
(issue 15 item 2) is red too, and with no finish repairs the finish is accepted and the gates decide."""
EXTRA_TEST = "\n\ndef test_add_zero():\n    assert add(0, 5) == 5\n"


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def run(harness: Harness, requirement: str, turns: list[ScriptedTurn], *, allow: tuple[list[str], ...] = (),
        limits: LoopLimits | None = None) -> tuple[TaskId, RunOutcome]:
    task_id = harness.ready_task(requirement=requirement)
    return task_id, run_ready(harness, task_id, turns, allow=allow, limits=limits)


def run_ready(harness: Harness, task_id: TaskId, turns: list[ScriptedTurn], *, allow: tuple[list[str], ...] = (),
              limits: LoopLimits | None = None) -> RunOutcome:
    gateway, _ = scripted_gateway(harness.db, turns)
    allowed = [PreapprovedOperation.command(pytest_argv(harness.venv_python)),
               *(PreapprovedOperation.command(argv) for argv in allow)]
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(),
                       limits=limits or GATES_DECIDE, headless_policy=HeadlessPolicy.allowing(allowed))
    return outcome


def examples_of(harness: Harness, task_id: TaskId, attempt: int) -> tuple[StageOutcome, list[dict[str, object]]]:
    row = next(row for row in harness.tasks.ledger(task_id, attempt) if row.verdict.stage is StageName.END_TO_END_TESTS)
    found = row.evidence.get("examples")
    return row.verdict.outcome, list(found) if isinstance(found, list) else []


def evidence_of(harness: Harness, task_id: TaskId, attempt: int, stage: StageName) -> dict[str, Any]:
    return dict(next(row.evidence for row in harness.tasks.ledger(task_id, attempt) if row.verdict.stage is stage))


def requirement_naming(test: str) -> str:
    return f"Make add() handle negative numbers.\n<<<ACCEPTANCE\ntest: {test}\n>>>\n"


def test_a_named_test_that_does_not_exist_goes_back_until_it_exists_and_passes(harness: Harness) -> None:
    requirement = requirement_naming("tests/test_calc.py::test_add_zero")
    adding = [write_file("pkg/calc.py", FIXED_CALC, "a2w1", replacing=FIXED_CALC),
              write_file("tests/test_calc.py", calc_tests(-3) + EXTRA_TEST, "a2w2", replacing=calc_tests(-3)), done()]

    task_id, outcome = run(harness, requirement, [*implementing_turns(), done(), *adding])

    first, examples = examples_of(harness, task_id, 1)
    assert first is StageOutcome.FAILED  # every test passed, but the named one does not exist
    assert examples[0]["outcome"] == "failed" and "does not exist" in str(examples[0]["detail"])
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 2
    second, examples = examples_of(harness, task_id, 2)
    assert second is StageOutcome.SATISFIED and examples[0]["outcome"] == "satisfied"
    # add(0, 5) == 5 held before the change too: the example is run on the base code with the final test
    # files, and the evidence says it is not shown to need this change (a finding, not a gate failure).
    assert examples[0]["discriminates"] is False
    assert "not shown to need this change" in str(examples[0]["discrimination"])
    assert evidence_of(harness, task_id, 2, StageName.END_TO_END_TESTS)["not_shown_to_need_this_change"] == [
        "tests/test_calc.py::test_add_zero"]


FLAG_TEST = "\n\ndef test_flag():\n    from pkg.calc import NEGATIVES_HANDLED\n    assert NEGATIVES_HANDLED\n"


def test_an_example_that_fails_on_the_base_code_discriminates(harness: Harness) -> None:
    with_flag = [write_file("pkg/calc.py", FIXED_CALC, "w1", replacing=BASE_FILES["pkg/calc.py"]),
                 write_file("tests/test_calc.py", calc_tests(-3) + FLAG_TEST, "w2",
                            replacing=BASE_FILES["tests/test_calc.py"]), done()]

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_flag"), with_flag)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    satisfied, examples = examples_of(harness, task_id, 1)
    assert satisfied is StageOutcome.SATISFIED
    assert examples[0]["discriminates"] is True and "failed on the base revision" in str(examples[0]["discrimination"])
    runs = evidence_of(harness, task_id, 1, StageName.INTEGRATION_TESTS)["base_runs"]
    assert [run["purpose"] for run in runs] == ["discrimination"]  # the tests passed: no base run for failures
    assert runs[0]["statuses"] == {"tests/test_calc.py::test_flag": "failed"}
    # the scratch is gone: nothing of the base run is left in the worktree, the diff or the task's TMPDIR
    assert not (harness.tasks.show(task_id).task.worktree / "codeflux-scratch").exists()
    assert not (harness.driver.task_temp_directory(task_id) / "codeflux-scratch").exists()
    assert "codeflux-scratch" not in " ".join(str(f["path"]) for f in evidence_of(
        harness, task_id, 1, StageName.ASSEMBLY)["files"])


def test_a_test_that_fails_on_the_base_revision_too_is_listed_never_sent_back(harness: Harness) -> None:
    write_files(harness.repo, {"tests/test_legacy.py": "def test_legacy_is_broken():\n    assert 1 == 2\n"})
    commit_all(harness.repo, "a test that was already failing")

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), done()])

    # Before: the old failure sent the work back until repair ran out (exit 1, "needs you"). Now it is listed.
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 1, outcome.reason
    tests = evidence_of(harness, task_id, 1, StageName.INTEGRATION_TESTS)
    assert tests["failing_on_base_too"] == ["tests.test_legacy::test_legacy_is_broken"]
    runs = tests["base_runs"]
    assert runs[0]["purpose"] == "failures the base shares" and runs[0]["failing"] == [
        "tests.test_legacy::test_legacy_is_broken"]
    verdict = next(row.verdict for row in harness.tasks.ledger(task_id, 1)
                   if row.verdict.stage is StageName.INTEGRATION_TESTS)
    assert verdict.outcome is StageOutcome.SATISFIED and "also fails on the base revision" in str(
        verdict.gate_evaluation)


def test_a_failing_test_the_change_adds_is_sent_back_even_when_it_fails_on_the_base_too(harness: Harness) -> None:
    wrong = calc_tests(-3) + "\n\ndef test_zero():\n    assert add(0, 0) == 1\n"
    turns = [write_file("pkg/calc.py", FIXED_CALC, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", wrong, "w2", replacing=BASE_FILES["tests/test_calc.py"]), done(),
             *rewriting_turns(expected=-3, previous=-3, attempt=2)]
    turns[-2] = write_file("tests/test_calc.py", calc_tests(-3), "a2w2", replacing=wrong)

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"), turns)

    tests = evidence_of(harness, task_id, 1, StageName.INTEGRATION_TESTS)
    assert tests["failing_on_base_too"] == []  # the base's own tests pass: the new test is the change's
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 2, outcome.reason


def test_a_command_example_holds_only_with_exactly_the_expected_output(harness: Harness) -> None:
    argv = [harness.venv_python, "-c", "from pkg.calc import add; print(add(-1, -2))"]
    good = f"Fix add().\n<<<ACCEPTANCE\ncommand: {shlex.join(argv)}\nexpected: -3\n>>>\n"

    task_id, outcome = run(harness, good, [*implementing_turns(), done()], allow=(argv,))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    satisfied, examples = examples_of(harness, task_id, 1)
    assert satisfied is StageOutcome.SATISFIED
    assert examples[0]["exit_code"] == 0 and examples[0]["stdout_lines"] == ["-3"]


def test_a_command_example_whose_output_differs_is_sent_back_then_needs_you(harness: Harness) -> None:
    argv = [harness.venv_python, "-c", "from pkg.calc import add; print(add(-1, -2))"]
    wrong = f"Fix add().\n<<<ACCEPTANCE\ncommand: {shlex.join(argv)}\nexpected: -4\n>>>\n"
    again = [write_file("pkg/calc.py", FIXED_CALC, "a2w1", replacing=FIXED_CALC),
             write_file("tests/test_calc.py", calc_tests(-3), "a2w2", replacing=calc_tests(-3)), done()]

    task_id, outcome = run(harness, wrong, [*implementing_turns(), done(), *again], allow=(argv,),
                           limits=replace(GATES_DECIDE, max_repairs_per_rung=1))

    failed, examples = examples_of(harness, task_id, 1)
    assert failed is StageOutcome.FAILED and "differs from the expected output at line 1" in str(examples[0]["detail"])
    assert outcome.kind is RunOutcomeKind.NEEDS_YOU and "end-to-end-tests" in outcome.reason
    # the example command ran on the base revision once: attempt 2 (same test files) reused attempt 1's run
    first, second = (evidence_of(harness, task_id, n, StageName.INTEGRATION_TESTS)["base_runs"][0] for n in (1, 2))
    assert first["from_attempt"] == 1 and second["from_attempt"] == 1 and first["key"] == second["key"]
    assert first["commands"][json.dumps(argv, separators=(",", ":"))]["stdout_lines"] == ["-3"]


def test_a_whole_file_is_not_an_example() -> None:
    from codeflux.domain.acceptance import examples_in_requirement

    examples, problems = examples_in_requirement(requirement_naming("tests/test_calc.py"))
    assert examples == () and "a whole file or suite is not an example" in problems[0]


@pytest.mark.parametrize(("node_id", "case"), [
    ("tests/test_ops.py::test_add_negative", ("tests.test_ops", "test_add_negative")),
    ("tests/unit/test_x.py::TestThing::test_it[1-2]", ("tests.unit.test_x.TestThing", "test_it[1-2]")),
    ("test_top.py::test_a", ("test_top", "test_a")),
])
def test_a_node_id_maps_to_the_junit_case_pytest_writes(node_id: str, case: tuple[str, str]) -> None:
    assert junit_case_of(node_id) == case


def test_a_changed_module_that_does_not_import_fails_assembly_and_goes_back(harness: Harness) -> None:
    """Issue 14 item 4, the "Why": a change adding an unresolvable import used to pass 26 and reach review with
    exit 0 because no test imports that module. Now every changed module is imported in the box."""
    broken = "import definitely_not_installed_anywhere\n\n\ndef report():\n    return 'ok'\n"
    fixed = "def report():\n    return 'ok'\n"
    turns = [*implementing_turns(), write_file("pkg/report.py", broken, "w3"), done(),
             write_file("pkg/calc.py", FIXED_CALC, "a2w1", replacing=FIXED_CALC),
             write_file("tests/test_calc.py", calc_tests(-3), "a2w2", replacing=calc_tests(-3)),
             write_file("pkg/report.py", fixed, "a2w3", replacing=broken), done()]

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"), turns)

    first = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.ASSEMBLY)
    assert first.verdict.outcome is StageOutcome.FAILED
    assert "pkg.report: ModuleNotFoundError" in str(first.verdict.gate_evaluation)
    imports = dict(first.evidence["imports"])
    assert imports["checked"] and imports["modules"] == ["pkg.calc", "pkg.report"]
    assert [failure["module"] for failure in imports["failures"]] == ["pkg.report"]
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 2, outcome.reason
    second = evidence_of(harness, task_id, 2, StageName.ASSEMBLY)["imports"]
    assert second["failures"] == [] and second["detail"] == "2 of 2 changed module(s) import"


PYPROJECT = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "{backend}"\n\n'
             '[project]\nname = "calc-sample"\nversion = "0.1.0"\n\n[tool.setuptools]\npackages = ["pkg"]\n')


def test_a_repository_with_build_configuration_gets_a_wheel_built_without_network(harness: Harness) -> None:
    write_files(harness.repo, {"pyproject.toml": PYPROJECT.format(backend="setuptools.build_meta")})
    commit_all(harness.repo, "packaging")

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    row = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.PROGRAM)
    assert row.verdict.outcome is StageOutcome.SATISFIED, row.verdict
    wheels = row.evidence["wheels"]
    assert [wheel["name"] for wheel in wheels] == ["calc_sample-0.1.0-py3-none-any.whl"]
    assert len(wheels[0]["sha256"]) == 64 and "--no-index" in row.evidence["argv"]
    worktree = harness.tasks.show(task_id).task.worktree
    assert not (worktree / "codeflux-scratch").exists() and not (worktree / "build").exists()
    assert not (harness.driver.task_temp_directory(task_id) / "codeflux-scratch").exists()
    assert not list(worktree.glob("*.egg-info"))  # the build ran in a copy: nothing of it reaches the diff


def test_a_missing_build_backend_blocks_the_build_naming_it_and_never_the_tests(harness: Harness) -> None:
    write_files(harness.repo, {"pyproject.toml": PYPROJECT.format(backend="no_such_backend_anywhere")})
    commit_all(harness.repo, "packaging with a backend this environment lacks")

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), done()])

    rows = {row.verdict.stage: row.verdict for row in harness.tasks.ledger(task_id, 1)}
    assert rows[StageName.PROGRAM].outcome is StageOutcome.BLOCKED
    assert "no_such_backend_anywhere" in str(rows[StageName.PROGRAM].reason)
    assert rows[StageName.INTEGRATION_TESTS].outcome is StageOutcome.SATISFIED  # 28 needs assembly, not program
    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW, outcome.reason


def test_scratch_copies_a_killed_run_left_in_tmpdir_are_removed_and_the_worktree_is_never_touched(
        harness: Harness) -> None:
    """The pipeline's copies live under the task's TMPDIR (issue 16): what a killed run left there is removed
    when the next run starts (the build copy too, though this repository has nothing to build), and a folder the
    change itself writes — even one named like codeflux's old scratch — is the change's own: never deleted by
    name, it is in the diff that is reviewed."""
    task_id = harness.ready_task(requirement=requirement_naming("tests/test_calc.py::test_add_negative"))
    temp = harness.driver.task_temp_directory(task_id)
    for leftover in ("codeflux-scratch/base/pkg/calc.py", "codeflux-scratch/build/stale.txt"):
        (temp / leftover).parent.mkdir(parents=True, exist_ok=True)
        (temp / leftover).write_text("left by a killed run\n")
    own = write_file(".codeflux-checks/base/notes.txt", "the change's own file\n", "w9")

    outcome = run_ready(harness, task_id, [*implementing_turns(), own, done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert not (temp / "codeflux-scratch").exists()
    paths = [str(item["path"]) for item in evidence_of(harness, task_id, 1, StageName.ASSEMBLY)["files"]]
    assert paths == [".codeflux-checks/base/notes.txt", "pkg/calc.py", "tests/test_calc.py"]


def test_the_base_run_never_writes_into_the_worktree_and_leaves_the_diff_identity_as_it_was(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16 item 4: while the base run's commands run (observed at each execution), the base copy is in
    the task's TMPDIR and the worktree holds no scratch folder; the diff's identity then, and after the run, is
    the one assembly recorded and review binds to."""
    with_flag = [write_file("pkg/calc.py", FIXED_CALC, "w1", replacing=BASE_FILES["pkg/calc.py"]),
                 write_file("tests/test_calc.py", calc_tests(-3) + FLAG_TEST, "w2",
                            replacing=BASE_FILES["tests/test_calc.py"]), done()]
    task_id = harness.ready_task(requirement=requirement_naming("tests/test_calc.py::test_flag"))
    temp = harness.driver.task_temp_directory(task_id)
    seen: list[tuple[bool, frozenset[str], str]] = []
    execute = harness.driver.execute

    def binding() -> TaskWorktree:
        found = task_worktree_binding(harness.tasks.show(task_id).task)
        assert found is not None
        return found

    def observed(request_id: str) -> ExecutionRecord:
        in_base = (temp / "codeflux-scratch" / "base").is_dir()
        listing = frozenset(path.name for path in binding().path.iterdir())
        seen.append((in_base, listing, diff_against_base(binding()).identity if in_base else ""))
        return execute(request_id)

    monkeypatch.setattr(harness.driver, "execute", observed)

    outcome = run_ready(harness, task_id, with_flag)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    base_run = evidence_of(harness, task_id, 1, StageName.INTEGRATION_TESTS)["base_runs"][0]
    assert base_run["directory"] == "$TMPDIR/codeflux-scratch/base"
    for request_id in base_run["request_ids"]:  # derived from the decision in the root, naming where it started
        request = harness.db.read(lambda view, rid=request_id: authority_rows.read_tool_request(view, rid))
        decision = harness.db.read(lambda view, rid=request_id: authority_rows.latest_decision(view, rid))
        assert request.operation.cwd == "$TMPDIR/codeflux-scratch/base"
        assert decision.outcome is DecisionOutcome.ALLOWED_ONCE  # by the same decider as the root's decision:
        assert f"decided by {decision.decided_by})" in decision.reason
        assert decision.reason.startswith("the base-revision run of request ")
        assert decision.reason.endswith(", started in $TMPDIR/codeflux-scratch/base")
    reviewed = evidence_of(harness, task_id, 1, StageName.ASSEMBLY)["diff_identity"]
    during_base = [identity for in_base, _, identity in seen if in_base]
    assert during_base and set(during_base) == {reviewed}  # the base run's commands ran; the diff was the same
    assert all("codeflux-scratch" not in listing and ".codeflux-checks" not in listing for _, listing, _ in seen)
    assert not (binding().path / "codeflux-scratch").exists() and not (binding().path / ".codeflux-checks").exists()
    assert not (temp / "codeflux-scratch").exists()
    assert diff_against_base(binding()).identity == reviewed


def test_a_pytest_configuration_the_change_adds_does_not_become_the_base_runs_root(harness: Harness) -> None:
    """pytest looks for its configuration upwards from the base copy, so a base without one would take whatever
    is above it as its root and name every test differently — the example would look "not collected" there
    and be claimed to discriminate. The copy's own root is pinned instead."""
    config = write_file("pytest.ini", "[pytest]\naddopts = -ra\n", "w3")

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), config, done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    _, examples = examples_of(harness, task_id, 1)
    assert examples[0]["discriminates"] is False  # add(-1, -2) == -3 held on the base code already
    run_record = evidence_of(harness, task_id, 1, StageName.INTEGRATION_TESTS)["base_runs"][0]
    assert run_record["statuses"] == {"tests/test_calc.py::test_add_negative": "passed"}
    assert "pytest's root pinned" in run_record["detail"]


def test_a_module_that_already_failed_to_import_on_the_base_is_listed_not_sent_back(harness: Harness) -> None:
    broken = "import a_dependency_this_environment_lacks\n"
    write_files(harness.repo, {"pkg/gpu.py": broken})
    commit_all(harness.repo, "an optional module whose dependency is not installed here")
    touched = write_file("pkg/gpu.py", broken + "# touched by the change\n", "w3", replacing=broken)

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), touched, done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 1, outcome.reason
    imports = evidence_of(harness, task_id, 1, StageName.ASSEMBLY)["imports"]
    assert [failure["module"] for failure in imports["failures"]] == ["pkg.gpu"]
    assert imports["failing_on_base_too"] == ["pkg.gpu"]


def test_a_src_layout_module_is_imported_from_the_worktree(harness: Harness) -> None:
    write_files(harness.repo, {"src/tool/__init__.py": "", "src/tool/names.py": "NAME = 'old'\n"})
    commit_all(harness.repo, "a src-layout package (not installed in the environment)")
    renamed = write_file("src/tool/names.py", "NAME = 'new'\n", "w3", replacing="NAME = 'old'\n")

    task_id, outcome = run(harness, requirement_naming("tests/test_calc.py::test_add_negative"),
                           [*implementing_turns(), renamed, done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    imports = evidence_of(harness, task_id, 1, StageName.ASSEMBLY)["imports"]
    assert "tool.names" in imports["modules"] and imports["failures"] == []
