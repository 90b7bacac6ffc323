"""Stages 19 molecule-tests, 20 molecules and 21 molecule-verification (issue 18) on compositions that are not
verified: one tested only with a mocked callee (the issue's "a composition tested only with a mock (19 fails)"), one
whose molecule test fails on the final tree. Real worker, real coverage run, one real stub run of the callers in a
scratch copy; the obligations in the real database. The stages that hold are in ``test_control_flow.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.pipeline.obligations import ObligationKind, ObligationState
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, keep_overlay
from tests.fixtures.task_runs import Harness, make_harness
from tests.integration.test_control_flow import (
    BROKEN_MOLECULE,
    CALC,
    MOCKED_CALLEE,
    MOLECULE_STAGES,
    evaluate_all,
    prepared,
)


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def test_a_composition_tested_only_with_a_mocked_callee_fails_19_and_stays_open_in_21(
        harness: Harness, overlay_cache: Path) -> None:
    facts = prepared(harness, overlay_cache, CALC, MOCKED_CALLEE)

    results = evaluate_all(facts)
    keep_overlay(harness, overlay_cache)

    outcomes = {stage: results[stage].verdict.outcome for stage in MOLECULE_STAGES}
    assert outcomes == {StageName.MOLECULE_TESTS: StageOutcome.FAILED, StageName.MOLECULES: StageOutcome.SATISFIED,
                        StageName.MOLECULE_VERIFICATION: StageOutcome.FAILED}
    assert results[StageName.MOLECULE_TESTS].evidence["findings"] == [
        "no test reaches pkg.calc.total -> pkg.calc.add: none executes both the caller's and the real callee's body "
        "(a mocked callee is never executed)"]
    assert "open: pkg.calc.total -> pkg.calc.add" in (
        results[StageName.MOLECULE_VERIFICATION].verdict.gate_evaluation or "")
    (composition,) = harness.tasks.obligations(facts.ports.facts.task_id, 1, ObligationKind.COMPOSITION)
    assert (composition.state, composition.discharged_by) == (ObligationState.OPEN, None)


def test_a_molecule_test_that_fails_on_the_final_tree_fails_19_20_and_21_naming_it(
        harness: Harness, overlay_cache: Path) -> None:
    facts = prepared(harness, overlay_cache, CALC, BROKEN_MOLECULE)

    results = evaluate_all(facts)

    assert {stage: results[stage].verdict.outcome for stage in MOLECULE_STAGES} == dict.fromkeys(
        MOLECULE_STAGES, StageOutcome.FAILED)
    assert results[StageName.MOLECULES].evidence["findings"] == [
        "molecule test tests/test_calc.py::test_total of pkg.calc.total -> pkg.calc.add did not pass (failed)"]
    assert "not passing on the final tree: tests/test_calc.py::test_total" in (
        results[StageName.MOLECULE_TESTS].verdict.gate_evaluation or "")
