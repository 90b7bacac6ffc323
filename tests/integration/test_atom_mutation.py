"""Stage 13 atom-mutation (issue 17): mutants made with libcst on the changed lines of each atom, each judged against
only the tests that execute its line (coverage.py from codeflux's overlay, installed from the wheelhouse), switched
in one confined process in a scratch copy of the final tree under the task's TMPDIR. Real task worktrees, a real
worker, real pytest. The reproduction of the issue's "Why": the stage was ``not-implemented`` — nothing said
whether the tests would notice a wrong operator on a changed line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.mutation import evaluate_atom_mutation
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow_overlay_install,
    assembled_facts,
    keep_overlay,
    no_install_driver,
    running_ports,
)
from tests.fixtures.task_runs import Harness, make_harness


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def evaluate(ports: PipelinePorts) -> StageResult:
    return evaluate_atom_mutation(assembled_facts(ports))


def atoms_of(result: StageResult) -> dict[str, dict[str, object]]:
    found = result.evidence["atoms"]
    assert isinstance(found, list)
    return {str(item["atom"]): item for item in found}


CALC = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def scale(a, b):\n    total = a * b\n    return total + 1\n\n\n"
    "def countdown(n):\n    steps = 0\n    while n > 0:\n        n -= 1\n        steps += 1\n    return steps\n"
)
GOOD_TESTS = (
    "from pkg.calc import add, countdown, scale\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_scale():\n    assert scale(2, 3) == 7\n\n\n"
    "def test_countdown():\n    assert countdown(3) == 3\n"
)
WEAK_TESTS = (
    "from pkg.calc import add, scale\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_scale_runs():\n    assert scale(2, 3) is not None\n"
)


def test_good_tests_kill_every_mutant_a_hung_one_counts_apart_and_no_mutant_touches_the_worktree(
        harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(CALC)
    (worktree / "tests" / "test_calc.py").write_text(GOOD_TESTS)
    identity = diff_against_base(ports.facts.worktree).identity

    result = evaluate(ports)
    keep_overlay(harness, overlay_cache)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    atoms = atoms_of(result)
    assert "pkg.calc.add" not in atoms  # unchanged from the base: not an atom of this diff
    scale, countdown = atoms["pkg.calc.scale"], atoms["pkg.calc.countdown"]
    assert scale["tests"] == ["tests/test_calc.py::test_scale"]
    assert (scale["judged"], scale["killed"], scale["survived"], scale["score"]) == (4, 4, 0, 100.0)
    # ``n -= 1`` → ``n += 1`` never ends: interrupted by the per-mutant timer, counted apart (and as killed)
    assert countdown["timed_out"] == 1 and countdown["survived"] == 0 and countdown["score"] == 100.0
    assert result.evidence["timed_out"] == 1
    # mutants were judged — and the worktree's diff is what it was: no mutant ever touched it
    judged = result.evidence["mutants_judged"]
    assert isinstance(judged, int) and judged >= 10
    assert result.evidence["diff_identity_before"] == result.evidence["diff_identity_after"] == identity
    assert diff_against_base(ports.facts.worktree).identity == identity
    assert (worktree / "pkg" / "calc.py").read_text() == CALC
    temp = harness.driver.task_temp_directory(ports.facts.task_id)
    assert not (temp / "codeflux-scratch" / "mutation").exists() and not list(temp.glob("codeflux-checks/*"))
    assert result.evidence["threshold"] == {"key": "pipeline.atom-mutation.min-score", "value": 70,
                                            "source": "default, this run reads no settings", "default": 70}
    assert result.evidence["complete"] is True and result.evidence["findings"] == []
    measured = result.evidence["measured_with"]
    assert isinstance(measured, dict) and measured["pytest"]
    run = result.evidence["run"]
    assert isinstance(run, dict) and run["argv"][1:3] == ["-c", "MUTATION_SCRIPT"]


def test_after_stage_8_the_mutants_are_judged_in_its_run_with_the_same_verdicts(
        harness: Harness, overlay_cache: Path) -> None:
    """Stage 8's stubs and these mutants are switched by one runner process (phase B speed): stage 13 reads the
    mutants' results from stage 8's run — the same verdicts as its own run in the test above, the timer included."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(CALC)
    (worktree / "tests" / "test_calc.py").write_text(GOOD_TESTS)
    identity = diff_against_base(ports.facts.worktree).identity
    facts = assembled_facts(ports)

    examples = evaluate_atom_example_tests(facts)
    result = evaluate_atom_mutation(facts)
    keep_overlay(harness, overlay_cache)

    assert examples.verdict.outcome is StageOutcome.SATISFIED, examples.verdict
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    shared, own = result.evidence["run"], examples.evidence["run"]
    assert isinstance(shared, dict) and isinstance(own, dict)
    assert shared["shared_with"] == "atom-example-tests" and shared["request_id"] == own["request_id"]
    atoms = atoms_of(result)
    scale, countdown = atoms["pkg.calc.scale"], atoms["pkg.calc.countdown"]
    assert (scale["judged"], scale["killed"], scale["survived"], scale["score"]) == (4, 4, 0, 100.0)
    assert countdown["timed_out"] == 1 and countdown["survived"] == 0
    stubs = {str(item["atom"]): item for item in examples.evidence["atoms"]}  # type: ignore[union-attr]
    assert stubs["pkg.calc.countdown"]["failed_against_stub"] == ["tests/test_calc.py::test_countdown"]
    assert result.evidence["diff_identity_after"] == identity == diff_against_base(ports.facts.worktree).identity


def test_a_weak_test_lets_mutants_survive_and_each_is_named_with_its_diff(
        harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(CALC)
    (worktree / "tests" / "test_calc.py").write_text(WEAK_TESTS)

    result = evaluate(ports)
    keep_overlay(harness, overlay_cache)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    scale = atoms_of(result)["pkg.calc.scale"]
    assert (scale["judged"], scale["killed"], scale["survived"]) == (4, 1, 3)  # only ``return None`` is noticed
    surviving = scale["surviving"]
    assert isinstance(surviving, list)
    arithmetic = next(item for item in surviving if item["original"] == "a * b")
    assert arithmetic["replacement"] == "a / b" and arithmetic["line"] == 6
    assert "-    total = a * b\n+    total = a / b\n" in arithmetic["diff"]
    # countdown's body runs under no test: its mutants survive, named as such
    countdown = atoms_of(result)["pkg.calc.countdown"]
    assert countdown["killed"] == 0 and countdown["survived"] == countdown["judged"]
    reason = result.verdict.gate_evaluation or ""
    assert "below the threshold: pkg.calc.scale, pkg.calc.countdown" in reason
    findings = result.evidence["findings"]
    assert isinstance(findings, list)
    assert "pkg/calc.py:6 surviving mutant of pkg.calc.scale (arithmetic: a * b → a / b)" in findings
    assert any(item.endswith("— no test executes this line") for item in findings)


def test_mutants_no_test_executes_are_skipped_and_no_atoms_is_skipped(harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    (ports.facts.worktree.path / "pkg" / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
        "def mul(a, b):\n    return a * b\n")

    result = evaluate(ports)
    keep_overlay(harness, overlay_cache)

    assert result.verdict.outcome is StageOutcome.SKIPPED, result.verdict
    assert "no passing test executes any mutated line" in (result.verdict.reason or "")

    (ports.facts.worktree.path / "pkg" / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (ports.facts.worktree.path / "README.md").write_text("# calc\n\nChanged words only.\n")
    no_atoms = evaluate(ports)
    assert no_atoms.verdict.outcome is StageOutcome.SKIPPED
    assert "no atom to mutate" in (no_atoms.verdict.reason or "")


def test_without_coverage_and_no_way_to_install_it_the_stage_is_blocked_naming_the_tool(
        db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(CALC)

        result = evaluate(ports)

    assert result.verdict.outcome is StageOutcome.BLOCKED
    assert (result.verdict.reason or "").startswith("coverage is not in the repository's environment")


def test_the_catalog_says_stage_13_is_performed_in_phase_b_and_what_it_does_not_prove() -> None:
    stage = stage_named(StageName.ATOM_MUTATION)
    assert stage.performable and "70 %" in stage.gate and "Not proven" in stage.gate
    assert StageName.ATOM_MUTATION in [item.stage for item in ATOM_STAGES]
