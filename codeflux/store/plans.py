"""SQL of plan revisions (immutable, hashed) and the one decision on each (approved or sent back).

A revision stores the plan's canonical JSON and the sha256 of its bytes; reading it back recomputes the
hash and refuses a row whose text no longer matches (:class:`StoreCorruptError`), so an approval can
never bind to text other than the one that was hashed; the text itself stays here (rows carry the parsed
plan and its hash). Author, verdict and decider leave as their enums through one decoder per row type; an
unknown stored value raises :class:`StoredValueUnknownError`. Revision numbers count up per task (a trigger
refuses any other number); decisions name the revision and its hash, and only the newest revision.
"""

from __future__ import annotations

import hashlib
import json

from codeflux.domain.errors import StoreCorruptError
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import (
    Plan,
    PlanAuthor,
    PlanDecider,
    PlanDecisionRow,
    PlanRevisionRow,
    PlanVerdict,
    canonical_plan_json,
    plan_from_document,
)
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "PlanDecisionRow",
    "PlanRevisionRow",
    "insert_plan_decision",
    "insert_plan_revision",
    "latest_plan_revision",
    "plan_decision",
    "plan_revision",
    "plan_revisions_of_task",
]

_REVISION = "task_id, revision, plan_json, sha256, created_by, feedback, created_at_us"
_DECISION = "task_id, revision, sha256, decision, feedback, decided_by, decided_at_us"


def _revision(row: Row) -> PlanRevisionRow:
    text = str(row[2])
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest != str(row[3]):
        raise StoreCorruptError(f"plan revision {row[1]} of task {row[0]} does not match its recorded hash")
    return PlanRevisionRow(
        task_id=TaskId.parse(str(row[0])), revision=int(row[1]), plan=plan_from_document(json.loads(text)),
        sha256=digest, created_by=decode_choice(PlanAuthor, row[4], kind="plan author"),
        feedback=None if row[5] is None else str(row[5]),
        created_at_us=int(row[6]),
    )


def insert_plan_revision(
    tx: Transaction, *, task_id: TaskId, plan: Plan, created_by: PlanAuthor, feedback: str | None, at_us: int
) -> PlanRevisionRow:
    """Record ``plan`` as the task's next revision; returns it with its number and hash."""
    text = canonical_plan_json(plan)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    rows = tx.execute(
        f"INSERT INTO plan_revisions ({_REVISION})"  # noqa: S608
        " SELECT ?, coalesce(max(revision), 0) + 1, ?, ?, ?, ?, ? FROM plan_revisions WHERE task_id = ?"
        " RETURNING revision",
        (task_id.value, text, digest, created_by.value, feedback, at_us, task_id.value),
    )
    return PlanRevisionRow(task_id=task_id, revision=int(rows[0][0]), plan=plan, sha256=digest,
                           created_by=created_by, feedback=feedback, created_at_us=at_us)


def latest_plan_revision(view: ReadView, task_id: TaskId) -> PlanRevisionRow | None:
    """The task's newest plan revision, or None when it has no plan yet."""
    raw = view.query_one(f"SELECT {_REVISION} FROM plan_revisions WHERE task_id = ?"  # noqa: S608
                         " ORDER BY revision DESC LIMIT 1", (task_id.value,))
    return None if raw is None else _revision(raw)


def plan_revision(view: ReadView, task_id: TaskId, revision: int) -> PlanRevisionRow | None:
    raw = view.query_one(f"SELECT {_REVISION} FROM plan_revisions WHERE task_id = ? AND revision = ?",  # noqa: S608
                         (task_id.value, revision))
    return None if raw is None else _revision(raw)


def plan_revisions_of_task(view: ReadView, task_id: TaskId) -> list[PlanRevisionRow]:
    """Every revision of the task's plan, oldest first."""
    rows = view.query_all(f"SELECT {_REVISION} FROM plan_revisions WHERE task_id = ?"  # noqa: S608
                          " ORDER BY revision", (task_id.value,))
    return [_revision(row) for row in rows]


def _decision(row: Row) -> PlanDecisionRow:
    return PlanDecisionRow(task_id=TaskId.parse(str(row[0])), revision=int(row[1]), sha256=str(row[2]),
                           decision=decode_choice(PlanVerdict, row[3], kind="plan decision"),
                           feedback=None if row[4] is None else str(row[4]),
                           decided_by=decode_choice(PlanDecider, row[5], kind="plan decider"),
                           decided_at_us=int(row[6]))


def insert_plan_decision(
    tx: Transaction, *, task_id: TaskId, revision: int, sha256: str, decision: PlanVerdict, feedback: str | None,
    decided_by: PlanDecider, at_us: int,
) -> PlanDecisionRow:
    """Record the decision on revision ``revision`` (with its hash) of the task's plan."""
    tx.execute(
        f"INSERT INTO plan_decisions ({_DECISION}) VALUES (?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
        (task_id.value, revision, sha256, decision.value, feedback, decided_by.value, at_us),
    )
    return PlanDecisionRow(task_id=task_id, revision=revision, sha256=sha256, decision=decision, feedback=feedback,
                           decided_by=decided_by, decided_at_us=at_us)


def plan_decision(view: ReadView, task_id: TaskId, revision: int) -> PlanDecisionRow | None:
    """The decision on that revision, or None while it waits for one."""
    raw = view.query_one(f"SELECT {_DECISION} FROM plan_decisions WHERE task_id = ? AND revision = ?",  # noqa: S608
                         (task_id.value, revision))
    return None if raw is None else _decision(raw)
