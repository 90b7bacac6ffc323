"""SQL of obligations and their states (see ``migrations/000012_obligations.sql``); the rules live in
:mod:`codeflux.domain.pipeline.obligations`. Both tables are facts: no UPDATE, no DELETE. Rows leave through one
decoder, kinds, states and stage names as their enums (an unknown stored value raises
:class:`~codeflux.domain.errors.StoredValueUnknownError`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from codeflux.domain.errors import NotFoundError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline.obligations import (
    NewObligation,
    ObligationChange,
    ObligationKind,
    ObligationRecord,
    ObligationState,
    ObligationSubject,
    next_state,
)
from codeflux.domain.pipeline.stages import StageName
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice, decode_optional_choice

__all__ = ["change_obligation_state", "insert_obligations", "obligations_of_attempt"]

_SELECT = (
    "SELECT o.id, o.task_id, o.attempt, o.kind, o.subject, o.recorded_by_stage, o.detail_json, s.state,"
    " s.discharged_by_stage, s.sequence, s.evidence_json FROM obligations o"
    " JOIN obligation_states s ON s.obligation_id = o.id"
    " AND s.sequence = (SELECT max(sequence) FROM obligation_states WHERE obligation_id = o.id)"
)


def _json(document: Mapping[str, object]) -> str:
    return json.dumps(dict(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _record(row: Row) -> ObligationRecord:
    return ObligationRecord(
        task_id=TaskId.parse(str(row[1])), attempt=int(row[2]),
        kind=decode_choice(ObligationKind, row[3], kind="obligation kind"), subject=ObligationSubject(str(row[4])),
        recorded_by=decode_choice(StageName, row[5], kind="stage name"), detail=json.loads(str(row[6])),
        state=decode_choice(ObligationState, row[7], kind="obligation state"),
        discharged_by=decode_optional_choice(StageName, row[8], kind="stage name"), revision=int(row[9]),
        evidence=json.loads(str(row[10])))


def insert_obligations(tx: Transaction, *, task_id: TaskId, attempt: int, obligations: Sequence[NewObligation],
                       at_us: int) -> list[ObligationRecord]:
    """Record each obligation ``open`` in the attempt; one already recorded (same kind and subject) is kept as it
    is. Returns them all as stored, in the order given."""
    for obligation in obligations:
        rows = tx.execute(
            "INSERT INTO obligations (task_id, attempt, kind, subject, recorded_by_stage, detail_json, recorded_at_us)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, attempt, kind, subject) DO NOTHING RETURNING id",
            (task_id.value, attempt, obligation.kind.value, obligation.subject.value, obligation.recorded_by.value,
             _json(obligation.detail), at_us))
        if rows:
            tx.execute("INSERT INTO obligation_states (obligation_id, sequence, state, discharged_by_stage,"
                       " evidence_json, recorded_at_us) VALUES (?, 1, 'open', NULL, '{}', ?)", (int(rows[0][0]), at_us))
    return [_require(tx, task_id, attempt, obligation.kind, obligation.subject) for obligation in obligations]


def _require(view: ReadView, task_id: TaskId, attempt: int, kind: ObligationKind,
             subject: ObligationSubject) -> ObligationRecord:
    row = view.query_one(f"{_SELECT} WHERE o.task_id = ? AND o.attempt = ? AND o.kind = ? AND o.subject = ?",
                         (task_id.value, attempt, kind.value, subject.value))
    if row is None:
        raise NotFoundError(kind="obligation", entity_id=f"{task_id.value}#{attempt} {kind.value} {subject.value}")
    return _record(row)


def change_obligation_state(tx: Transaction, *, task_id: TaskId, attempt: int, change: ObligationChange,
                            at_us: int) -> ObligationRecord:
    """Enter ``change.state`` for the attempt's obligation (by :func:`next_state`'s rule; the newest state is read in
    this transaction) and return it as stored."""
    current = _require(tx, task_id, attempt, change.kind, change.subject)
    next_state(current.state, change.state)
    tx.execute(
        "INSERT INTO obligation_states (obligation_id, sequence, state, discharged_by_stage, evidence_json,"
        " recorded_at_us) SELECT id, ?, ?, ?, ?, ? FROM obligations"
        " WHERE task_id = ? AND attempt = ? AND kind = ? AND subject = ?",
        (current.revision + 1, change.state.value, None if change.discharged_by is None else change.discharged_by.value,
         _json(change.evidence), at_us, task_id.value, attempt, change.kind.value, change.subject.value))
    return _require(tx, task_id, attempt, change.kind, change.subject)


def obligations_of_attempt(view: ReadView, task_id: TaskId, attempt: int,
                           kind: ObligationKind | None = None) -> list[ObligationRecord]:
    """The attempt's obligations (of ``kind``, else all) with their newest states, in the order recorded."""
    if kind is None:
        rows = view.query_all(f"{_SELECT} WHERE o.task_id = ? AND o.attempt = ? ORDER BY o.id",
                              (task_id.value, attempt))
    else:
        rows = view.query_all(f"{_SELECT} WHERE o.task_id = ? AND o.attempt = ? AND o.kind = ? ORDER BY o.id",
                              (task_id.value, attempt, kind.value))
    return [_record(row) for row in rows]
