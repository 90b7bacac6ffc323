"""The obligations table (migration 000012) in a real database: one row per task, attempt, kind and subject,
opened ``open``; states follow one another one step at a time; ``discharged_by_stage`` is required exactly when
discharged; rows and states are facts (no UPDATE, no DELETE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.domain.errors import InvalidValueError, StoreError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName
from codeflux.domain.pipeline.obligations import (
    NewObligation,
    ObligationChange,
    ObligationKind,
    ObligationState,
    ObligationSubject,
)
from codeflux.store.database import Database
from tests.fixtures.task_runs import Harness, make_harness
from tests.fixtures.tasks import keys

ARC = ObligationSubject("pkg/calc.py:6->8")
CALL = ObligationSubject("pkg.calc.total -> pkg.calc.add")


def started(db: Database, tmp_path: Path) -> tuple[Harness, TaskId]:
    harness = make_harness(db, tmp_path, driver=None)  # type: ignore[arg-type]  # no check command runs here
    task_id = harness.ready_task()
    harness.tasks.start_run(task_id, harness.snapshot(), expected_revision=harness.tasks.show(task_id).task.revision,
                            idempotency_key=keys())
    return harness, task_id


def test_obligations_open_once_per_kind_and_subject_and_change_state_one_step_at_a_time(
        db: Database, tmp_path: Path) -> None:
    harness, task_id = started(db, tmp_path)
    tasks = harness.tasks
    first = tasks.record_obligations(task_id, 1, [
        NewObligation(kind=ObligationKind.CONTROL_PATH, subject=ARC, recorded_by=StageName.CONTROL_OBLIGATIONS,
                      detail={"from_line": 6, "to_line": 8}),
        NewObligation(kind=ObligationKind.COMPOSITION, subject=CALL, recorded_by=StageName.COMPOSITION_OBLIGATIONS)])
    assert [(item.state, item.revision, item.discharged_by) for item in first] == [(ObligationState.OPEN, 1, None)] * 2
    again = tasks.record_obligations(task_id, 1, [NewObligation(
        kind=ObligationKind.CONTROL_PATH, subject=ARC, recorded_by=StageName.CONTROL_OBLIGATIONS, detail={"x": 1})])
    assert again[0].detail == {"from_line": 6, "to_line": 8}  # recorded once: the first stays
    assert len(tasks.obligations(task_id, 1)) == 2

    discharged = tasks.change_obligations(task_id, 1, [ObligationChange(
        kind=ObligationKind.CONTROL_PATH, subject=ARC, state=ObligationState.DISCHARGED,
        discharged_by=StageName.CONTROL_FLOW, evidence={"tests": ["t::a"]})])
    assert (discharged[0].state, discharged[0].discharged_by, discharged[0].revision) == (
        ObligationState.DISCHARGED, StageName.CONTROL_FLOW, 2)
    with pytest.raises(InvalidValueError, match="an obligation discharged cannot become discharged"):
        tasks.change_obligations(task_id, 1, [ObligationChange(
            kind=ObligationKind.CONTROL_PATH, subject=ARC, state=ObligationState.DISCHARGED,
            discharged_by=StageName.CONTROL_FLOW)])
    regressed = tasks.change_obligations(task_id, 1, [ObligationChange(
        kind=ObligationKind.CONTROL_PATH, subject=ARC, state=ObligationState.REGRESSED)])
    assert (regressed[0].state, regressed[0].discharged_by, regressed[0].revision) == (
        ObligationState.REGRESSED, None, 3)
    assert tasks.obligations(task_id, 1, ObligationKind.COMPOSITION)[0].state is ObligationState.OPEN
    assert tasks.obligations(task_id, 2) == ()


def test_the_schema_refuses_a_discharge_without_its_stage_states_out_of_order_and_any_change(
        db: Database, tmp_path: Path) -> None:
    harness, task_id = started(db, tmp_path)
    harness.tasks.record_obligations(task_id, 1, [NewObligation(
        kind=ObligationKind.CONTROL_PATH, subject=ARC, recorded_by=StageName.CONTROL_OBLIGATIONS)])
    row_id = db.read(lambda view: view.query_one("SELECT id FROM obligations"))
    assert row_id is not None
    refused = {
        "discharged without its stage": "INSERT INTO obligation_states (obligation_id, sequence, state,"
        " discharged_by_stage, evidence_json, recorded_at_us) VALUES (?, 2, 'discharged', NULL, '{}', 1)",
        "open with a stage": "INSERT INTO obligation_states (obligation_id, sequence, state, discharged_by_stage,"
        " evidence_json, recorded_at_us) VALUES (?, 2, 'regressed', 'control-flow', '{}', 1)",
        "a gap in the sequence": "INSERT INTO obligation_states (obligation_id, sequence, state, discharged_by_stage,"
        " evidence_json, recorded_at_us) VALUES (?, 3, 'discharged', 'control-flow', '{}', 1)",
        "open twice": "INSERT INTO obligation_states (obligation_id, sequence, state, discharged_by_stage,"
        " evidence_json, recorded_at_us) VALUES (?, 2, 'open', NULL, '{}', 1)",
        "an update": "UPDATE obligations SET subject = 'other' WHERE id = ?",
        "a state update": "UPDATE obligation_states SET state = 'discharged' WHERE obligation_id = ?",
        "a delete": "DELETE FROM obligation_states WHERE obligation_id = ?",
    }
    for what, sql in refused.items():
        with pytest.raises(StoreError, match="ConstraintError"):
            db.write(lambda tx, sql=sql: tx.execute(sql, (int(row_id[0]),)))
            pytest.fail(f"the schema accepted {what}")
    with pytest.raises(StoreError, match="ConstraintError"):  # the same kind and subject twice in one attempt
        db.write(lambda tx: tx.execute(
            "INSERT INTO obligations (task_id, attempt, kind, subject, recorded_by_stage, detail_json, recorded_at_us)"
            " VALUES (?, 1, 'control-path', ?, 'control-obligations', '{}', 1)", (task_id.value, ARC.value)))
