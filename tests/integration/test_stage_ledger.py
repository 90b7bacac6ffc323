"""The stage ledger in a real database: the stage NAME is the identity, five outcomes, rows immutable and
written in stage order by the domain rules (blocked propagation, not-implemented, stop point), and an
attempt ends only with one row per stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import ConflictError, StageAlreadyRecordedError, StoreError, UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import (
    STAGES,
    StageName,
    StageOutcome,
    StageVerdict,
    stage_named,
    transitive_prerequisites,
)
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.task_records import require_task_record
from tests.fixtures.tasks import a_repository, a_running_task, keys

N = StageName
OUT = StageOutcome


@pytest.fixture
def service(db: Database, tmp_path: Path) -> TaskService:
    return TaskService(db, worktrees_root=tmp_path / "worktrees")


@pytest.fixture
def repo(tmp_path: Path) -> RepositorySnapshot:
    return a_repository(tmp_path / "one")


@pytest.fixture
def task(service: TaskService, repo: RepositorySnapshot) -> TaskId:
    return a_running_task(service, repo).task_id


def satisfied(stage: StageName, seen: str = "checked and held") -> StageVerdict:
    return StageVerdict(stage=stage, outcome=OUT.SATISFIED, gate_evaluation=seen)


def failed(stage: StageName) -> StageVerdict:
    return StageVerdict(stage=stage, outcome=OUT.FAILED, gate_evaluation="checked and did not hold")


def specification() -> list[StageVerdict]:
    """Stages 1–3 held (the implementation loop starts only then)."""
    return [satisfied(N.INSTRUCTIONS), satisfied(N.CLARIFICATION), satisfied(N.ATOMIC_INSTRUCTIONS)]


def ledger(db: Database, task: TaskId, attempt: int = 1) -> list[ledger_rows.LedgerRow]:
    return db.read(lambda view: ledger_rows.ledger_of_attempt(view, task, attempt))


def test_stages_the_run_went_past_are_filled_in_and_evidence_stays_with_its_verdict(
    db: Database, service: TaskService, task: TaskId
) -> None:
    rows = service.record_stage_verdicts(task, 1, [*specification(), satisfied(N.DECOMPOSITION_COVERAGE),
                                                   satisfied(N.ASSEMBLY)],
                                         evidence={N.INSTRUCTIONS: {"examples": 2}})

    assert [(r.verdict.stage, r.verdict.outcome) for r in rows][:5] == [
        (N.INSTRUCTIONS, OUT.SATISFIED), (N.CLARIFICATION, OUT.SATISFIED), (N.ATOMIC_INSTRUCTIONS, OUT.SATISFIED),
        (N.DECOMPOSITION_COVERAGE, OUT.SATISFIED), (N.CONTRACTS, OUT.BLOCKED)]
    assert [r.number for r in rows] == list(range(1, 27))
    # the stages it went past: the performable ones undecided, so blocked, with every stage after them that needs
    # one (a hard prerequisite; an order-only edge never blocks); the others not implemented
    assert "without deciding" in (rows[4].verdict.reason or "")
    for row in rows[5:25]:
        stage = stage_named(row.verdict.stage)
        needs_undecided = any(stage_named(p).performable for p in transitive_prerequisites(stage.name)
                              if stage_named(p).number >= 5)
        blocked = stage.performable or needs_undecided
        assert row.verdict.outcome is (OUT.BLOCKED if blocked else OUT.NOT_IMPLEMENTED), row.verdict
    assert rows[0].evidence == {"examples": 2} and rows[2].evidence == {}
    assert ledger(db, task) == list(rows)


def test_a_verdict_after_a_failed_prerequisite_is_stored_blocked_naming_it(db: Database, service: TaskService,
                                                                           task: TaskId) -> None:
    service.record_stage_verdicts(task, 1, [failed(N.INSTRUCTIONS)])

    rows = service.record_stage_verdicts(task, 1, [satisfied(N.ATOMIC_INSTRUCTIONS)],
                                         evidence={N.ATOMIC_INSTRUCTIONS: {"steps": 3}})

    clarification, atomic = rows
    assert clarification.verdict.outcome is OUT.BLOCKED and "instructions" in (clarification.verdict.reason or "")
    assert atomic.verdict.outcome is OUT.BLOCKED and "clarification" in (atomic.verdict.reason or "")
    assert atomic.evidence == {} and atomic.verdict.gate_evaluation is None


def test_a_stage_recorded_twice_or_out_of_order_is_refused_and_nothing_changes(
    db: Database, service: TaskService, task: TaskId
) -> None:
    service.record_stage_verdicts(task, 1, specification())
    before = ledger(db, task)

    with pytest.raises(StageAlreadyRecordedError) as twice:
        service.record_stage_verdicts(task, 1, [failed(N.INSTRUCTIONS)])
    assert (twice.value.stage, twice.value.outcome) == ("instructions", "satisfied")
    service.record_stage_verdicts(task, 1, [satisfied(N.ASSEMBLY)])
    with pytest.raises(StageAlreadyRecordedError, match="decomposition-coverage"):  # went past it: filled in
        service.record_stage_verdicts(task, 1, [satisfied(N.DECOMPOSITION_COVERAGE)])
    with pytest.raises(StageAlreadyRecordedError, match="recall"):  # the run went past it to assembly
        service.record_stage_verdicts(task, 1, [StageVerdict(stage=N.RECALL, outcome=OUT.SKIPPED, reason="late")])
    assert ledger(db, task)[:3] == before and len(ledger(db, task)) == 26


def test_finishing_fills_every_stage_once_and_ends_the_attempt(db: Database, service: TaskService,
                                                               task: TaskId) -> None:
    service.record_stage_verdicts(task, 1, [*specification(), StageVerdict(stage=N.CONTRACTS, outcome=OUT.SKIPPED,
                                                                           reason="no atom in the diff")])

    rows = service.finish_attempt(task, 1, stopped_at=None)

    assert [r.verdict.stage for r in rows] == [stage.name for stage in STAGES]
    outcomes = {r.verdict.stage: r.verdict.outcome for r in rows}
    assert outcomes[N.RECALL] is outcomes[N.ATOMS] is outcomes[N.ASSEMBLY] is OUT.BLOCKED  # never decided
    assert ledger(db, task) == list(rows)
    attempt = db.read(lambda view: ledger_rows.require_run_attempt(view, task, 1))
    assert not attempt.is_open and attempt.stopped_at is None
    with pytest.raises(ConflictError, match="ended"):
        service.record_stage_verdicts(task, 1, [satisfied(N.DELIVER)])


def test_a_run_that_stops_early_marks_the_rest_blocked_not_not_implemented(
    db: Database, service: TaskService, task: TaskId
) -> None:
    service.record_stage_verdicts(task, 1, [*specification(), failed(N.ASSEMBLY)])

    rows = service.finish_attempt(task, 1, stopped_at=N.ASSEMBLY)

    after = [r.verdict for r in rows if r.number > 26]
    assert after and all(v.outcome is OUT.BLOCKED for v in after)
    assert all("stopped at assembly" in (v.reason or "") for v in after)


def test_a_gate_sending_work_back_opens_a_fresh_attempt_with_its_own_ledger(
    db: Database, service: TaskService, task: TaskId
) -> None:
    service.record_stage_verdicts(task, 1, [*specification(), failed(N.ASSEMBLY)])
    service.finish_attempt(task, 1, stopped_at=N.ASSEMBLY)

    second = service.begin_next_attempt(task, idempotency_key=keys())
    rows = service.record_stage_verdicts(task, 2, [*specification(),
                                                   satisfied(N.ASSEMBLY, "the package imports")])

    assert second.attempt == 2 and second.plan_revision == 1
    # the stages between, never decided here, do not veto assembly: its only prerequisite is atomic-instructions
    assert rows[-1].verdict == satisfied(N.ASSEMBLY, "the package imports")
    assert {r.attempt for r in ledger(db, task, 2)} == {2}
    assert ledger(db, task, 1)[25].verdict.outcome is OUT.FAILED


def test_a_performable_stage_the_run_went_past_blocks_the_stages_after_it(
    db: Database, service: TaskService, task: TaskId
) -> None:
    rows = service.record_stage_verdicts(task, 1, [satisfied(N.INSTRUCTIONS), failed(N.ASSEMBLY)])

    outcomes = {r.verdict.stage: r.verdict for r in rows}
    assert outcomes[N.ATOMIC_INSTRUCTIONS].outcome is OUT.BLOCKED  # never decided
    assert outcomes[N.ASSEMBLY].outcome is OUT.BLOCKED and outcomes[N.ASSEMBLY].gate_evaluation is None


def test_a_new_attempt_needs_the_previous_one_ended(service: TaskService, task: TaskId) -> None:
    with pytest.raises(ConflictError, match="open one"):
        service.begin_next_attempt(task, idempotency_key=keys())


def test_recording_verdicts_appends_one_event_to_the_task_journal(db: Database, service: TaskService,
                                                                  task: TaskId) -> None:
    service.record_stage_verdicts(task, 1, [satisfied(N.INSTRUCTIONS)])

    session = db.read(lambda view: require_task_record(view, task)).session_id
    events = db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=100))
    assert events[-1].kind == "stage-verdicts-recorded"
    assert events[-1].payload["stages"] == [["instructions", "satisfied"]]


def test_evidence_must_belong_to_a_recorded_stage_and_be_json(service: TaskService, task: TaskId) -> None:
    with pytest.raises(UsageError, match="without a verdict"):
        service.record_stage_verdicts(task, 1, [satisfied(N.INSTRUCTIONS)], evidence={N.DELIVER: {}})
    with pytest.raises(UsageError, match="JSON"):
        service.record_stage_verdicts(task, 1, [satisfied(N.INSTRUCTIONS)],
                                      evidence={N.INSTRUCTIONS: {"value": object()}})


# ─── the schema on its own ──────────────────────────────────────────────────────────────────────────


def insert_raw(db: Database, task: TaskId, *, number: int, stage: str, outcome: str, evaluation: str | None = "x",
               reason: str | None = None) -> None:
    db.write(lambda tx: tx.execute(
        "INSERT INTO stage_ledger (task_id, attempt, stage_number, stage, outcome, gate_evaluation, reason,"
        " evidence_json, recorded_at_us) VALUES (?, 1, ?, ?, ?, ?, ?, '{}', 1)",
        (task.value, number, stage, outcome, evaluation, reason)))


@pytest.mark.parametrize(("number", "stage", "outcome"), [
    (1, "clarification", "satisfied"),  # the number must be the catalog's number for that name
    (1, "instructions", "passed"),  # exactly five outcomes
    (1, "instruction", "satisfied"),  # unknown name
    (2, "clarification", "not-implemented"),  # no gaps
])  # fmt: skip
def test_the_schema_keeps_names_numbers_outcomes_and_order_straight(
    db: Database, task: TaskId, number: int, stage: str, outcome: str
) -> None:
    with pytest.raises(StoreError):
        insert_raw(db, task, number=number, stage=stage, outcome=outcome, reason="r")


def test_ledger_rows_are_immutable_and_an_attempt_cannot_end_incomplete(db: Database, service: TaskService,
                                                                        task: TaskId) -> None:
    service.record_stage_verdicts(task, 1, [satisfied(N.INSTRUCTIONS)])

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE stage_ledger SET outcome = 'failed' WHERE task_id = ?",
                                       (task.value,)))
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("DELETE FROM stage_ledger WHERE task_id = ?", (task.value,)))
    with pytest.raises(StoreError):
        db.write(lambda tx: ledger_rows.end_run_attempt(tx, task_id=task, attempt=1, stopped_at=None, at_us=1))
    assert db.read(lambda view: ledger_rows.require_run_attempt(view, task, 1)).is_open
