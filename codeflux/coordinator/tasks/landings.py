"""The accept journal: the intent of a landing committed before the checkout is touched, and its end.

:func:`record_intent` commits an ``accept_landings`` row and its ``accept-started`` event in one transaction
before :func:`~codeflux.gitwork.accept.land_prepared` touches anything. The landing's end is recorded with the
task's completion (``landed``, :mod:`.review`) or by :func:`resolve_landing` — which a retry of the accept and
startup recovery call on a landing without an end: the branch had moved → ``finished``; it had not → every
path codeflux wrote goes back to its old content (``rolled-back``). Either way an ``accept-resolved`` event
says which, and by whom.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codeflux.coordinator.tasks.changes import TaskChanges
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import AcceptResolved, AcceptStarted
from codeflux.domain.ids import TaskId
from codeflux.gitwork.accept import AcceptKind, AcceptOutcome, PreparedAccept
from codeflux.gitwork.landing import LandingPlan, LandingResolution, PlannedPath, resolve_interrupted
from codeflux.store import accept_landings as rows
from codeflux.store import task_records as records
from codeflux.store.database import Database, Transaction
from codeflux.store.events import JournalEvent, append_event

__all__ = ["PastResolution", "outcome_of", "past_resolutions", "plan_of", "record_end", "record_intent",
           "resolve_landing"]

_CLOCK_SLACK_NS = 1_000_000_000


def plan_of(row: rows.LandingRow) -> LandingPlan:
    """The landing plan a journal row recorded (what a resolution compares the checkout with)."""
    return LandingPlan(
        work_tree=Path(row.work_tree), git_dir=Path(row.git_dir), common_dir=Path(row.common_dir),
        branch_ref=row.branch_ref, previous_head=row.previous_head, previous_tree=row.previous_tree,
        landed_head=row.landed_head, landed_tree=row.landed_tree,
        paths=tuple(PlannedPath.from_json(dict(p)) for p in row.paths), token=row.token)


def outcome_of(row: rows.LandingRow) -> AcceptOutcome:
    """How the recorded landing ends once it landed."""
    return AcceptOutcome(kind=AcceptKind(row.mode), branch=row.branch_ref.removeprefix("refs/heads/"),
                         previous_head=row.previous_head, landed_head=row.landed_head, task_commit=row.task_commit,
                         conflicting_paths=())


def record_intent(changes: TaskChanges, task: records.TaskRecord, prepared: PreparedAccept, *,
                  reviewed_identity: str) -> rows.LandingRow:
    """Commit the intent of ``prepared``'s landing (row and ``accept-started`` event) — before it starts."""
    plan = prepared.plan
    if plan is None:
        raise InvalidValueError(kind="landing", reason="has nothing to land, so it has no intent")
    token = os.urandom(8).hex()
    task_lock = None if prepared.snapshot is None else f"{plan.common_dir / prepared.worktree.branch_ref}.lock"
    locks = tuple(str(lock) for lock in plan.locks) + ((task_lock,) if task_lock else ())

    def work(tx: Transaction, events: list[JournalEvent]) -> rows.LandingRow:
        row = rows.insert_landing(
            tx, task_id=task.task_id, diff_identity=reviewed_identity, mode=prepared.outcome.kind.value,
            work_tree=str(plan.work_tree), git_dir=str(plan.git_dir), common_dir=str(plan.common_dir),
            branch_ref=plan.branch_ref, previous_head=plan.previous_head, previous_tree=plan.previous_tree,
            landed_head=plan.landed_head, landed_tree=plan.landed_tree, task_commit=prepared.outcome.task_commit,
            task_branch_ref=None if prepared.snapshot is None else prepared.worktree.branch_ref,
            paths_json=plan.paths_json(), locks=locks, token=token, at_us=changes.clock())
        events.append(append_event(tx, session_id=task.session_id, event=AcceptStarted(
            task_id=task.task_id, landing_id=row.landing_id, diff_identity=reviewed_identity,
            mode=row.mode, branch=prepared.outcome.branch, previous_head=plan.previous_head,
            landed_head=plan.landed_head, paths=len(plan.paths))))
        return row

    return changes.write(work)


def record_end(tx: Transaction, events: list[JournalEvent], row: rows.LandingRow, *, session_id: str,
               outcome: rows.LandingOutcome, by: rows.LandingEndedBy, reason: str, at_us: int) -> None:
    """Record the landing's end in ``tx``; an ``accept-resolved`` event unless the accept itself landed it."""
    if not rows.insert_landing_end(tx, landing_id=row.landing_id, outcome=outcome, ended_by=by, detail=reason,
                                   at_us=at_us):
        return
    if outcome is rows.LandingOutcome.LANDED and by is rows.LandingEndedBy.ACCEPT:
        return
    resolution = LandingResolution.FINISHED if outcome is rows.LandingOutcome.LANDED else LandingResolution.ROLLED_BACK
    events.append(append_event(tx, session_id=session_id, event=AcceptResolved(
        task_id=row.task_id, landing_id=row.landing_id, resolution=resolution.value, by=by.value,
        branch=row.branch_ref.removeprefix("refs/heads/"), reason=reason[:512])))


def resolve_landing(changes: TaskChanges, row: rows.LandingRow, *, by: rows.LandingEndedBy,
                    reason: str) -> LandingResolution:
    """Finish or roll back the unfinished landing ``row`` in the checkout; a rollback is recorded here (a
    finish is recorded by the caller with the task's completion). Raises the typed refusal of
    :func:`~codeflux.gitwork.landing.resolve_interrupted` and records nothing then."""
    task_lock = None if row.task_branch_ref is None else Path(row.common_dir) / f"{row.task_branch_ref}.lock"
    extra = () if task_lock is None else ((task_lock, (b"", f"{row.task_commit}\n".encode())),)
    started_at_ns = row.started_at_us * 1000 - _CLOCK_SLACK_NS  # file times come from a coarser clock
    resolution = resolve_interrupted(plan_of(row), started_at_ns=started_at_ns, extra_locks=extra)
    if resolution is LandingResolution.ROLLED_BACK:
        def work(tx: Transaction, events: list[JournalEvent]) -> None:
            task = records.require_task_record(tx, row.task_id)
            record_end(tx, events, row, session_id=task.session_id, outcome=rows.LandingOutcome.ROLLED_BACK, by=by,
                       reason=reason, at_us=changes.clock())

        changes.write(work)
    return resolution


@dataclass(frozen=True, slots=True, kw_only=True)
class PastResolution:
    """An interrupted landing a retry or startup recovery resolved, as the journal recorded it: ``resolution``
    finished (the branch had moved; ``landed_head`` is the landed commit) or rolled back (the branch stayed at
    ``previous_head``); ``by`` ``recovery`` or ``retry``; ``reason`` why the landing had stopped."""

    task_id: TaskId
    landing_id: int
    resolution: LandingResolution
    by: rows.LandingEndedBy
    branch: str
    landed_head: str
    previous_head: str
    reason: str
    resolved_at_us: int
    started_at_us: int


def past_resolutions(db: Database, *, task_id: TaskId | None, limit: int) -> tuple[list[PastResolution], int]:
    """The newest ``limit`` landings a retry or startup recovery resolved (only ``task_id``'s when given), most
    recent first, and how many are recorded in all (read from ``accept_landing_ends``, which is never
    updated or deleted)."""
    resolved, total = db.read(lambda view: rows.resolved_landings(view, task_id=task_id, limit=limit))
    return [PastResolution(
        task_id=r.landing.task_id, landing_id=r.landing.landing_id,
        resolution=LandingResolution.FINISHED if r.outcome is rows.LandingOutcome.LANDED
        else LandingResolution.ROLLED_BACK,
        by=r.ended_by, branch=r.landing.branch_ref.removeprefix("refs/heads/"), landed_head=r.landing.landed_head,
        previous_head=r.landing.previous_head, reason=r.detail, resolved_at_us=r.ended_at_us,
        started_at_us=r.landing.started_at_us) for r in resolved], total
