"""SQL of run attempts and their stage ledger.

An attempt is one pass of a task's run through the pipeline, under an approved plan revision (a trigger
refuses any other). Its ledger is one immutable row per stage, keyed by the stage NAME, written in stage
order without gaps while the attempt is open; the attempt ends once, when all 37 stages have a verdict.
The rules deciding *which* verdict each stage gets live in :mod:`codeflux.domain.pipeline`; this module
only stores what the task service decided. Rows leave through one decoder per row type, stage names and
outcomes as their enums (an unknown stored value raises :class:`StoredValueUnknownError`) and the evidence
as the JSON object it was stored as.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from codeflux.domain.errors import NotFoundError
from codeflux.domain.ids import RunId, TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict, stage_named
from codeflux.domain.pipeline.ledger import LedgerRow, RunAttemptRow
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice, decode_optional_choice

__all__ = [
    "LedgerRow",
    "RunAttemptRow",
    "end_run_attempt",
    "insert_ledger_rows",
    "latest_run_attempt",
    "ledger_of_attempt",
    "open_run_attempt",
    "require_run_attempt",
]

_ATTEMPT = "id, task_id, attempt, plan_revision, plan_sha256, started_at_us, ended_at_us, stopped_at_stage"
_LEDGER = ("task_id, attempt, stage_number, stage, outcome, gate_evaluation, reason, evidence_json,"
           " recorded_at_us")


def _attempt(row: Row) -> RunAttemptRow:
    return RunAttemptRow(
        run_id=RunId.parse(str(row[0])), task_id=TaskId.parse(str(row[1])), attempt=int(row[2]),
        plan_revision=int(row[3]), plan_sha256=str(row[4]), started_at_us=int(row[5]),
        ended_at_us=None if row[6] is None else int(row[6]),
        stopped_at=decode_optional_choice(StageName, row[7], kind="stage name"),
    )


def open_run_attempt(
    tx: Transaction, *, run_id: RunId, task_id: TaskId, plan_revision: int, plan_sha256: str, at_us: int
) -> RunAttemptRow:
    """Open the task's next attempt under the approved plan revision ``plan_revision`` / ``plan_sha256``."""
    rows = tx.execute(
        f"INSERT INTO task_runs ({_ATTEMPT})"  # noqa: S608
        " SELECT ?, ?, coalesce(max(attempt), 0) + 1, ?, ?, ?, NULL, NULL FROM task_runs WHERE task_id = ?"
        f" RETURNING {_ATTEMPT}",
        (run_id.value, task_id.value, plan_revision, plan_sha256, at_us, task_id.value),
    )
    return _attempt(rows[0])


def latest_run_attempt(view: ReadView, task_id: TaskId) -> RunAttemptRow | None:
    """The task's newest attempt (open or ended), or None before its first start."""
    raw = view.query_one(f"SELECT {_ATTEMPT} FROM task_runs WHERE task_id = ?"  # noqa: S608
                         " ORDER BY attempt DESC LIMIT 1", (task_id.value,))
    return None if raw is None else _attempt(raw)


def require_run_attempt(view: ReadView, task_id: TaskId, attempt: int) -> RunAttemptRow:
    """Attempt ``attempt`` of the task, or :class:`NotFoundError`."""
    raw = view.query_one(f"SELECT {_ATTEMPT} FROM task_runs WHERE task_id = ? AND attempt = ?",  # noqa: S608
                         (task_id.value, attempt))
    if raw is None:
        raise NotFoundError(kind="run attempt", entity_id=f"{task_id.value}#{attempt}")
    return _attempt(raw)


def end_run_attempt(
    tx: Transaction, *, task_id: TaskId, attempt: int, stopped_at: StageName | None, at_us: int
) -> RunAttemptRow:
    """Close the attempt; the schema refuses unless every stage has its ledger row."""
    rows = tx.execute(
        "UPDATE task_runs SET ended_at_us = ?, stopped_at_stage = ? WHERE task_id = ? AND attempt = ?"  # noqa: S608
        f" RETURNING {_ATTEMPT}",
        (at_us, None if stopped_at is None else stopped_at.value, task_id.value, attempt),
    )
    if not rows:
        raise NotFoundError(kind="run attempt", entity_id=f"{task_id.value}#{attempt}")
    return _attempt(rows[0])


def _ledger(row: Row) -> LedgerRow:
    verdict = StageVerdict.as_recorded(stage=decode_choice(StageName, row[3], kind="stage name"),
                                       outcome=decode_choice(StageOutcome, row[4], kind="stage outcome"),
                                       gate_evaluation=None if row[5] is None else str(row[5]),
                                       reason=None if row[6] is None else str(row[6]))
    return LedgerRow(task_id=TaskId.parse(str(row[0])), attempt=int(row[1]), number=int(row[2]), verdict=verdict,
                     evidence=json.loads(str(row[7])), recorded_at_us=int(row[8]))


def insert_ledger_rows(
    tx: Transaction, *, task_id: TaskId, attempt: int,
    verdicts: Sequence[tuple[StageVerdict, Mapping[str, object]]], at_us: int,
) -> list[LedgerRow]:
    """Append the verdicts (in stage order, each with its evidence object) to the attempt's ledger."""
    stored: list[LedgerRow] = []
    for verdict, evidence in verdicts:
        number = stage_named(verdict.stage).number
        body = json.dumps(dict(evidence), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        tx.execute(
            f"INSERT INTO stage_ledger ({_LEDGER}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
            (task_id.value, attempt, number, verdict.stage.value, verdict.outcome.value, verdict.gate_evaluation,
             verdict.reason, body, at_us),
        )
        stored.append(LedgerRow(task_id=task_id, attempt=attempt, number=number, verdict=verdict,
                                evidence=dict(evidence), recorded_at_us=at_us))
    return stored


def ledger_of_attempt(view: ReadView, task_id: TaskId, attempt: int) -> list[LedgerRow]:
    """The attempt's ledger in stage order (a prefix of the catalog while the attempt is open)."""
    rows = view.query_all(f"SELECT {_LEDGER} FROM stage_ledger WHERE task_id = ? AND attempt = ?"  # noqa: S608
                          " ORDER BY stage_number", (task_id.value, attempt))
    return [_ledger(row) for row in rows]
