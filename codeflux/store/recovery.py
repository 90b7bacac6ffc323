"""SQL of task recovery: the effects of a task whose outcome is unknown, their recorded resolutions, and the
immutable recovery assessments (see ``migrations/000005_recovery.sql``). Rows leave through one decoder per
row type with states, kinds, outcomes and actions as their enums (an unknown stored value raises
:class:`StoredValueUnknownError`); an assessment's known facts and ambiguous effects are the JSON snapshot it
recorded, decoded."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codeflux.domain.errors import ConflictError
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import AmbiguousEffect, EffectKind, EffectOutcome, RecoveryAction
from codeflux.domain.tasks import TaskState
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice, decode_optional_choice

__all__ = [
    "AssessmentRow",
    "ambiguous_effects_of_task",
    "insert_assessment",
    "insert_resolution",
    "latest_assessment",
]

_ASSESSMENT = ("id, task_id, interrupted_in, known_json, ambiguous_json, recommended, diff_identity, reason,"
               " assessed_at_us")

# Outcome-unknown effects of one task with the resolution recorded for each (NULL when none), oldest first.
_EFFECTS = """
SELECT 'tool-execution', e.id, r.tool || ' (' || coalesce(e.failure_kind, 'interrupted') || ')',
       s.outcome, e.intended_at_us
  FROM tool_executions AS e
  JOIN tool_requests AS r ON r.id = e.request_id
  LEFT JOIN ambiguity_resolutions AS s ON s.item_kind = 'tool-execution' AND s.item_id = e.id
 WHERE e.task_id = ? AND e.state = 'outcome-unknown'
UNION ALL
SELECT 'model-request', m.id, 'model call ' || m.provider || '/' || m.model, s.outcome, m.planned_at_us
  FROM model_requests AS m
  LEFT JOIN ambiguity_resolutions AS s ON s.item_kind = 'model-request' AND s.item_id = m.id
 WHERE m.task_id = ? AND m.state = 'outcome-unknown'
ORDER BY 5, 2
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssessmentRow:
    assessment_id: int
    task_id: TaskId
    interrupted_in: TaskState
    known: Mapping[str, object]
    ambiguous: Sequence[Mapping[str, object]]
    recommended: RecoveryAction
    diff_identity: str | None
    reason: str
    assessed_at_us: int


def _assessment(row: Row) -> AssessmentRow:
    return AssessmentRow(
        assessment_id=int(row[0]), task_id=TaskId.parse(str(row[1])),
        interrupted_in=decode_choice(TaskState, row[2], kind="task state"),
        known=json.loads(str(row[3])), ambiguous=json.loads(str(row[4])),
        recommended=decode_choice(RecoveryAction, row[5], kind="recovery action"),
        diff_identity=None if row[6] is None else str(row[6]), reason=str(row[7]), assessed_at_us=int(row[8]),
    )


def ambiguous_effects_of_task(view: ReadView, task_id: TaskId) -> list[AmbiguousEffect]:
    """Every tool execution and model request of the task whose outcome is unknown, with any resolution."""
    rows = view.query_all(_EFFECTS, (task_id.value, task_id.value))
    return [AmbiguousEffect(kind=decode_choice(EffectKind, row[0], kind="ambiguous effect kind"), item_id=str(row[1]),
                            summary=str(row[2]),
                            outcome=decode_optional_choice(EffectOutcome, row[3], kind="ambiguous effect outcome"))
            for row in rows]


def insert_assessment(
    tx: Transaction, *, task_id: TaskId, interrupted_in: TaskState, known: Mapping[str, object],
    ambiguous: Sequence[Mapping[str, object]], recommended: RecoveryAction, diff_identity: str | None, reason: str,
    at_us: int,
) -> AssessmentRow:  # fmt: skip
    rows = tx.execute(
        f"INSERT INTO recovery_assessments ({_ASSESSMENT.removeprefix('id, ')})"  # noqa: S608
        f" VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING {_ASSESSMENT}",
        (task_id.value, interrupted_in.value, json.dumps(known, sort_keys=True),
         json.dumps(list(ambiguous), sort_keys=True), recommended.value, diff_identity, reason, at_us),
    )
    return _assessment(rows[0])


def latest_assessment(view: ReadView, task_id: TaskId) -> AssessmentRow | None:
    row = view.query_one(f"SELECT {_ASSESSMENT} FROM recovery_assessments WHERE task_id = ?"  # noqa: S608
                         " ORDER BY id DESC LIMIT 1", (task_id.value,))
    return None if row is None else _assessment(row)


def insert_resolution(
    tx: Transaction, *, task_id: TaskId, effect: AmbiguousEffect, outcome: EffectOutcome, note: str | None, at_us: int
) -> bool:
    """Record ``outcome`` for ``effect``; False when exactly that was recorded already (a retry).

    A different outcome recorded earlier is a :class:`ConflictError` (the caller raises the precise one).
    """
    existing = tx.query_one("SELECT outcome FROM ambiguity_resolutions WHERE item_kind = ? AND item_id = ?",
                            (effect.kind.value, effect.item_id))
    if existing is not None:
        if str(existing[0]) != outcome.value:
            raise ConflictError(f"{effect.item_id} already has a recorded outcome")
        return False
    tx.execute("INSERT INTO ambiguity_resolutions (task_id, item_kind, item_id, outcome, note, recorded_by,"
               " recorded_at_us) VALUES (?, ?, ?, ?, ?, 'user', ?)",
               (task_id.value, effect.kind.value, effect.item_id, outcome.value, note, at_us))
    return True
