"""Phases C and D (issue 18): 18 composition-obligations, 19–21 molecules and 22–25 control flow — compositions found
in the diff's syntax tree and branch arcs on its changed lines, judged from the attempt's one coverage run (coverage.py
with branch data and per-test contexts, from codeflux's overlay installed from the wheelhouse, in a real worker,
confined) and one stub run of the callers in a scratch copy, stored as obligations in the real database. The
reproduction of the issue's "Why": these stages were ``not-implemented``, and the reference reported statement
coverage as branch coverage — an untested ``else`` passed unseen; a composition tested only with a mocked callee too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.domain.pipeline.atom_evidence import atom_evidence
from codeflux.domain.pipeline.obligations import ObligationKind, ObligationState
from codeflux.pipeline.assembly import evaluate_assembly
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.compositions import evaluate_composition_obligations
from codeflux.pipeline.control_flow import (
    evaluate_control_flow,
    evaluate_control_obligations,
    evaluate_control_tests,
    evaluate_path_coverage,
)
from codeflux.pipeline.coverage_map import COVERAGE_SCRIPT
from codeflux.pipeline.molecules import evaluate_molecule_tests, evaluate_molecule_verification, evaluate_molecules
from codeflux.pipeline.phase_b import ATOM_STAGES, record_atom_stages
from codeflux.pipeline.phase_cd import PHASE_CD
from codeflux.pipeline.ports import CheckCommandPort, CheckCommandRun, ToolSource
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.runner import record_specification
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import PATH_COVERAGE_MIN, StoredSettings, set_threshold
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow,
    allow_overlay_install,
    assembled_facts,
    keep_overlay,
    no_install_driver,
    running_ports,
)
from tests.fixtures.task_runs import Harness, make_harness
from tests.fixtures.tasks import keys

CALC = (
    "def add(a, b):\n"                      # 1
    "    return sum((a, b))\n"              # 2
    "\n\n"                                  # 3, 4
    "def sign(x):\n"                        # 5
    "    if x > 0:\n"                       # 6
    "        return 1\n"                    # 7
    "    return -1\n"                       # 8
    "\n\n"                                  # 9, 10
    "def total(values):\n"                  # 11
    "    result = 0\n"                      # 12
    "    for value in values:\n"            # 13
    "        result = add(result, value)\n"  # 14
    "    return result\n"                   # 15
)
ALL_PATHS = (
    "from pkg.calc import sign, total\n\n\n"
    "def test_positive():\n    assert sign(5) == 1\n\n\n"
    "def test_negative():\n    assert sign(-5) == -1\n\n\n"
    "def test_total():\n    assert total([1, 2]) == 3\n"
)
NO_ELSE = (
    "from pkg.calc import sign, total\n\n\n"
    "def test_positive():\n    assert sign(5) == 1\n\n\n"
    "def test_total():\n    assert total([1, 2]) == 3\n"
)
MOCKED_CALLEE = (
    "import pkg.calc as calc\nfrom pkg.calc import sign\n\n\n"
    "def test_signs():\n    assert sign(5) == 1\n    assert sign(-5) == -1\n\n\n"
    "def test_total_with_a_mocked_add(monkeypatch):\n"
    "    monkeypatch.setattr(calc, 'add', lambda a, b: a + b)\n    assert calc.total([1, 2]) == 3\n"
)
BROKEN_MOLECULE = ALL_PATHS.replace("assert total([1, 2]) == 3", "assert total([1, 2]) == 4")
STAGES = (evaluate_composition_obligations, evaluate_molecule_tests, evaluate_molecules,
          evaluate_molecule_verification, evaluate_control_obligations, evaluate_control_tests,
          evaluate_control_flow, evaluate_path_coverage)
MOLECULE_STAGES = (StageName.MOLECULE_TESTS, StageName.MOLECULES, StageName.MOLECULE_VERIFICATION)
CONTROL_STAGES = (StageName.CONTROL_OBLIGATIONS, StageName.CONTROL_TESTS, StageName.CONTROL_FLOW,
                  StageName.PATH_COVERAGE)


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def prepared(harness: Harness, overlay_cache: Path, source: str, tests: str) -> AtomFacts:
    ports = running_ports(harness)
    ports = dataclasses.replace(ports, settings=StoredSettings(harness.db))
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(source)
    (worktree / "tests" / "test_calc.py").write_text(tests)
    return assembled_facts(ports)


def evaluate_all(facts: AtomFacts) -> dict[StageName, StageResult]:
    results = [evaluate(facts) for evaluate in STAGES]
    return {result.verdict.stage: result for result in results}


class CountingCommands:
    """The real check-command port, each argv it ran kept (to count the coverage runs)."""

    def __init__(self, real: CheckCommandPort) -> None:
        self.real = real
        self.ran: list[tuple[str, ...]] = []

    def run_check_command(self, task_id: TaskId, argv: tuple[str, ...], **options: Any) -> CheckCommandRun:
        self.ran.append(argv)
        return self.real.run_check_command(task_id, argv, **options)

    def temp_directory(self, task_id: TaskId) -> Path:
        return self.real.temp_directory(task_id)

    def tools_directory(self) -> Path:
        return self.real.tools_directory()

    def tool_source(self) -> ToolSource | None:
        return self.real.tool_source()

    @property
    def coverage_runs(self) -> int:
        return sum(1 for argv in self.ran if len(argv) > 2 and argv[2] == COVERAGE_SCRIPT)


def test_the_phases_record_on_one_coverage_run_and_discharge_every_obligation_and_a_lost_arc_regresses(
        harness: Harness, overlay_cache: Path) -> None:
    facts = prepared(harness, overlay_cache, CALC, ALL_PATHS)
    commands = CountingCommands(facts.ports.commands)
    ports = dataclasses.replace(facts.ports, commands=commands)
    task_id = ports.facts.task_id
    assert record_specification(task_id, 1, ports=ports) is None
    examples = next(stage for stage in ATOM_STAGES if stage.stage is StageName.ATOM_EXAMPLE_TESTS)

    record_atom_stages(ports, 1, facts.assembly, (examples, *PHASE_CD))  # as run_pipeline does, before 26
    keep_overlay(harness, overlay_cache)

    assert commands.coverage_runs == 1  # stage 8 and 19–25 read the same map
    rows = {row.verdict.stage: row for row in harness.tasks.ledger(task_id, 1)}
    results = {stage.stage: StageResult(verdict=rows[stage.stage].verdict, evidence=dict(rows[stage.stage].evidence))
               for stage in PHASE_CD}
    assert {stage: result.verdict.outcome for stage, result in results.items()} == dict.fromkeys(
        results, StageOutcome.SATISFIED), {stage: result.verdict for stage, result in results.items()}
    composition = results[StageName.COMPOSITION_OBLIGATIONS]
    assert composition.evidence["atoms"] == [{"qualified_name": "pkg.calc.total", "path": "pkg/calc.py",
                                              "compositions": ["pkg.calc.total -> pkg.calc.add "
                                                               "(called at pkg/calc.py:14)"]}]
    assert results[StageName.CONTROL_OBLIGATIONS].evidence["atoms"] == [
        {"qualified_name": "pkg.calc.sign", "path": "pkg/calc.py",
         "branch_arcs": ["pkg/calc.py:6->7", "pkg/calc.py:6->8"]},
        {"qualified_name": "pkg.calc.total", "path": "pkg/calc.py",
         "branch_arcs": ["pkg/calc.py:13->14", "pkg/calc.py:13->15"]}]
    arc_tests = {name: tests for atom in results[StageName.CONTROL_TESTS].evidence["atoms"]  # type: ignore[union-attr]
                 for name, tests in atom["arc_tests"].items()}
    assert arc_tests == {"pkg/calc.py:6->7": ["tests/test_calc.py::test_positive"],
                         "pkg/calc.py:6->8": ["tests/test_calc.py::test_negative"],
                         "pkg/calc.py:13->14": ["tests/test_calc.py::test_total"],
                         "pkg/calc.py:13->15": ["tests/test_calc.py::test_total"]}
    assert results[StageName.PATH_COVERAGE].evidence["branch_coverage_percent"] == 100.0
    stored = harness.tasks.obligations(facts.ports.facts.task_id, 1)
    assert [(item.kind, item.subject.value, item.state, item.discharged_by) for item in stored] == [
        (ObligationKind.COMPOSITION, "pkg.calc.total -> pkg.calc.add", ObligationState.DISCHARGED,
         StageName.MOLECULE_VERIFICATION),
        *((ObligationKind.CONTROL_PATH, arc, ObligationState.DISCHARGED, StageName.CONTROL_FLOW)
          for arc in ("pkg/calc.py:6->7", "pkg/calc.py:6->8", "pkg/calc.py:13->14", "pkg/calc.py:13->15"))]
    assert stored[1].evidence == {"tests": ["tests/test_calc.py::test_positive"]}
    assert stored[0].detail["call_site"] == "pkg/calc.py:14"
    assert stored[0].evidence == {"tests": ["tests/test_calc.py::test_total"]}
    (molecule,) = results[StageName.MOLECULE_TESTS].evidence["atoms"][0]["compositions"]  # type: ignore[index]
    assert molecule == {"subject": "pkg.calc.total -> pkg.calc.add",
                        "molecule_tests": ["tests/test_calc.py::test_total"],
                        "failed_against_caller_stub": ["tests/test_calc.py::test_total"],
                        "passed_against_caller_stub": [], "outcomes": {"tests/test_calc.py::test_total": "passed"}}

    # the next attempt loses the else test: 24 keeps 6->8 open and marks it regressed (attempt 1 discharged it)
    harness.tasks.finish_attempt(task_id, 1, stopped_at=None)
    harness.tasks.begin_next_attempt(task_id, idempotency_key=keys())
    allow(harness.driver, task_id, pytest_argv(harness.venv_python), attempt=2)
    (ports.facts.worktree.path / "tests" / "test_calc.py").write_text(NO_ELSE)
    second = assembled_facts(ports, attempt=2)
    assert evaluate_control_obligations(second).verdict.outcome is StageOutcome.SATISFIED
    flow = evaluate_control_flow(second)
    assert flow.verdict.outcome is StageOutcome.FAILED
    assert flow.evidence["findings"] == ["branch arc pkg/calc.py:6->8 (in pkg.calc.sign) is not taken by a passing "
                                         "test — it regressed: the attempt before discharged it"]
    (lost,) = [item for item in harness.tasks.obligations(task_id, 2, ObligationKind.CONTROL_PATH)
               if item.subject.value == "pkg/calc.py:6->8"]
    assert (lost.state, lost.revision, lost.evidence) == (ObligationState.REGRESSED, 2, {"discharged_in_attempt": 1})
    assert harness.tasks.obligations(task_id, 1, ObligationKind.CONTROL_PATH)[1].state is ObligationState.DISCHARGED


def test_an_uncovered_else_arc_fails_23_24_and_25_with_the_arc_named(harness: Harness, overlay_cache: Path) -> None:
    facts = prepared(harness, overlay_cache, CALC, NO_ELSE)

    results = evaluate_all(facts)

    outcomes = {stage: result.verdict.outcome for stage, result in results.items()}
    assert outcomes == {StageName.COMPOSITION_OBLIGATIONS: StageOutcome.SATISFIED,
                        **dict.fromkeys(MOLECULE_STAGES, StageOutcome.SATISFIED),
                        StageName.CONTROL_OBLIGATIONS: StageOutcome.SATISFIED,
                        StageName.CONTROL_TESTS: StageOutcome.FAILED, StageName.CONTROL_FLOW: StageOutcome.FAILED,
                        StageName.PATH_COVERAGE: StageOutcome.FAILED}
    coverage = results[StageName.PATH_COVERAGE]
    assert coverage.evidence["uncovered_arcs"] == ["pkg/calc.py:6->8"]
    assert coverage.evidence["branch_coverage_percent"] == 75.0
    assert coverage.evidence["threshold"] == {"key": PATH_COVERAGE_MIN.key, "value": 90, "source": "default, not set",
                                              "default": 90}
    assert "branch coverage of the changed lines 75.0% (3 of 4 branch arc(s) taken), threshold 90%" in (
        coverage.verdict.gate_evaluation or "")
    assert "not taken: pkg/calc.py:6->8" in (coverage.verdict.gate_evaluation or "")
    assert results[StageName.CONTROL_TESTS].evidence["findings"] == [
        "no test takes the branch arc pkg/calc.py:6->8 (in pkg.calc.sign)"]
    assert "open: pkg/calc.py:6->8" in (results[StageName.CONTROL_FLOW].verdict.gate_evaluation or "")
    states = {item.subject.value: item.state for item in harness.tasks.obligations(facts.ports.facts.task_id, 1,
                                                                                    ObligationKind.CONTROL_PATH)}
    assert states == {"pkg/calc.py:6->7": ObligationState.DISCHARGED, "pkg/calc.py:6->8": ObligationState.OPEN,
                      "pkg/calc.py:13->14": ObligationState.DISCHARGED,
                      "pkg/calc.py:13->15": ObligationState.DISCHARGED}

    # the threshold is a stored setting: at 75 % the same run holds, and the evidence names the setting
    set_threshold(harness.db, PATH_COVERAGE_MIN, 75, expected_revision=None)
    lowered = evaluate_path_coverage(facts)
    assert lowered.verdict.outcome is StageOutcome.SATISFIED
    assert lowered.evidence["threshold"]["source"] == f"setting {PATH_COVERAGE_MIN.key}, revision 0"  # type: ignore[index]

    # per atom, the evidence bundle's section shows the branch arcs and what became of them
    verdicts = [result.verdict for result in results.values()]
    section = atom_evidence(verdicts, {result.verdict.stage: result.evidence for result in results.values()})
    sign = next(atom for atom in section["atoms"] if atom["qualified_name"] == "pkg.calc.sign")  # type: ignore[union-attr, index]
    by_stage = {item["stage"]: item for item in sign["evidence"]}
    assert by_stage["path-coverage"]["findings"] == ["branch arc pkg/calc.py:6->8 not taken"]
    assert by_stage["control-flow"]["facts"]["obligations"] == {"pkg/calc.py:6->7": "discharged",
                                                                "pkg/calc.py:6->8": "open"}
    # an atom a stage does not list is said why (the section reads `not_checked` when another stage lists the atom)
    assert results[StageName.PATH_COVERAGE].evidence["not_checked"] == {
        "pkg.calc.add": "no branch arc leaves its changed lines"}
    assert results[StageName.COMPOSITION_OBLIGATIONS].evidence["not_checked"] == {
        "pkg.calc.add": "calls no other atom of the diff", "pkg.calc.sign": "calls no other atom of the diff"}


def test_without_compositions_or_branches_18_and_22_to_25_are_skipped_with_the_reason(
        harness: Harness, overlay_cache: Path) -> None:
    facts = prepared(harness, overlay_cache, "def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n"
                     "    return a - b\n", "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")

    results = evaluate_all(facts)

    assert {result.verdict.outcome for result in results.values()} == {StageOutcome.SKIPPED}
    assert "none of the diff's 1 atom(s) calls another atom" in (
        results[StageName.COMPOSITION_OBLIGATIONS].verdict.reason or "")
    assert "no line the diff adds or rewrites inside an atom has a branch" in (
        results[StageName.PATH_COVERAGE].verdict.reason or "")
    assert harness.tasks.obligations(facts.ports.facts.task_id, 1) == ()


def test_without_coverage_or_an_obligation_store_they_are_blocked_saying_why(db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(CALC)
        facts = assembled_facts(ports)
        results = evaluate_all(facts)
        unstored = evaluate_composition_obligations(dataclasses.replace(
            facts, ports=dataclasses.replace(ports, obligations=None)))

    assert results[StageName.COMPOSITION_OBLIGATIONS].verdict.outcome is StageOutcome.SATISFIED  # static: no run
    for stage in (*MOLECULE_STAGES, *CONTROL_STAGES):
        verdict = results[stage].verdict
        assert verdict.outcome is StageOutcome.BLOCKED, verdict
        assert "coverage" in (verdict.reason or ""), verdict
    assert unstored.verdict.outcome is StageOutcome.BLOCKED
    assert "no obligation store" in (unstored.verdict.reason or "")


def test_a_diff_that_does_not_assemble_records_them_all_blocked_before_assembly(harness: Harness) -> None:
    ports = running_ports(harness)
    (ports.facts.worktree.path / "pkg" / "calc.py").write_text("def add(a, b:\n")
    assembly = evaluate_assembly(ports, attempt=1)
    assert assembly.verdict.outcome is StageOutcome.FAILED
    assert record_specification(ports.facts.task_id, 1, ports=ports) is None

    record_atom_stages(ports, 1, assembly, PHASE_CD)

    rows = {row.verdict.stage: row.verdict for row in harness.tasks.ledger(ports.facts.task_id, 1)}
    for stage in (StageName.COMPOSITION_OBLIGATIONS, StageName.CONTROL_OBLIGATIONS, StageName.PATH_COVERAGE):
        assert rows[stage].outcome is StageOutcome.BLOCKED
        assert "did not assemble" in (rows[stage].reason or "")
    assert rows[StageName.MOLECULE_TESTS] == StageVerdict(  # not performed yet, and its prerequisite did not hold
        stage=StageName.MOLECULE_TESTS, outcome=StageOutcome.BLOCKED,
        reason="prerequisite composition-obligations did not hold (blocked)")

