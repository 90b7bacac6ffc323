"""The person's review of a finished task: accept lands the diff, reject keeps the patch; both end the task.

* :meth:`ReviewService.accept_task` lands exactly the reviewed diff on the user's current branch through
  :func:`codeflux.gitwork.accept.prepare_accept` and :func:`~codeflux.gitwork.accept.land_prepared`
  (fast-forward, or a merge commit when the branch moved on), journaled: the landing's intent commits first
  (:mod:`.landings`), and then, in one transaction, the landing's end, ``awaiting-review → completed`` with
  its transition row and a ``task-accepted`` event, and the delivery decision (stages 36 and 37,
  :func:`~codeflux.coordinator.tasks.checkpoints.record_delivery_decision`). A conflict is returned as a value:
  nothing in git changed, the task stays ``awaiting-review`` and an ``accept-conflicted`` event names the
  paths. A retry after a crash between the landing and the commit finds the task commit already on the
  branch and completes the task.
* :meth:`ReviewService.reject_task` takes the worktree's current patch and, in one transaction, stores it
  (``task_patches``, kind ``rejected``), records the ``patch-stored`` event and moves the task to the
  domain's reject target (``cancelled``) with the delivery decision (36 failed, 37 blocked). The patch
  stays retrievable: :meth:`ReviewService.task_patch`. :meth:`ReviewService.rejection` reads the same
  rejection for a retry instead (:mod:`.rejection`): the task then goes back to ``running`` on the same plan,
  never through ``cancelled``.

After either, the worktree is removed unless that would lose something (:mod:`.worktree_lifecycle`). After an
accept, memory records what the accepted attempt showed (:mod:`.learning`: the test command, the verified atoms and
the tests covering their files), bound to the person's checkout; it decides nothing about the task.
The idempotency key of each decision is derived from the reviewed identity, so repeating the same
decision replays the first result instead of deciding twice.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from codeflux.coordinator.incidents import record_incidents_fixed
from codeflux.coordinator.tasks import gates
from codeflux.coordinator.tasks.changes import Actor, TaskChange, TaskChanges, check_text
from codeflux.coordinator.tasks.checkpoints import record_delivery_decision
from codeflux.coordinator.tasks.landings import outcome_of, record_end, record_intent, resolve_landing
from codeflux.coordinator.tasks.learning import learn_from_accepted
from codeflux.coordinator.tasks.ledger import evidence_diff_identity
from codeflux.coordinator.tasks.rejection import (
    MAX_REJECTION_REASON,
    DiffRejection,
    read_rejection,
    record_rejection,
)
from codeflux.coordinator.tasks.running_lock import shared_running_lock
from codeflux.coordinator.tasks.worktree_lifecycle import (
    WorktreeDisposal,
    dispose_task_worktree,
    record_cleanup_intent,
    task_worktree_binding,
)
from codeflux.domain.errors import (
    CodefluxError,
    EvidenceOnOtherDiffError,
    GitLockHeldError,
    NotFoundError,
    TaskActionUnavailableError,
)
from codeflux.domain.events import AcceptConflicted, TaskAccepted
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import (
    TASK_ACTION_TARGETS,
    PatchKind,
    TaskAction,
    TaskState,
    describe_task_action,
    validate_task_transition,
)
from codeflux.gitwork.accept import AcceptKind, AcceptOutcome, PreparedAccept, land_prepared, prepare_accept
from codeflux.gitwork.diff import CommitAuthor
from codeflux.gitwork.landing import LandingFault, LandingResolution
from codeflux.gitwork.worktrees import CleanupFault, TaskWorktree
from codeflux.store import accept_landings as landing_rows
from codeflux.store import task_records as records
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import JournalEvent, append_event
from codeflux.store.location import DataLocation
from codeflux.store.task_cleanups import CleanupRow

__all__ = ["AcceptResult", "RejectResult", "ReviewService", "require_task_action"]

_MAX_REASON = MAX_REJECTION_REASON
_REJECT_TARGET: TaskState = next(iter(TASK_ACTION_TARGETS[TaskAction.REJECT]))


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptResult:
    """How the accept ended; ``change`` and ``worktree`` are None when nothing landed (a conflict)."""

    outcome: AcceptOutcome
    change: TaskChange | None
    worktree: WorktreeDisposal | None

    @property
    def conflicted(self) -> bool:
        return self.outcome.kind is AcceptKind.CONFLICT


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectResult:
    change: TaskChange
    patch: records.TaskPatchRow
    matches_review: bool
    worktree: WorktreeDisposal | None


def require_task_action(task: records.TaskRecord, action: TaskAction) -> None:
    """Refuse with :class:`TaskActionUnavailableError` unless the task's state offers ``action``."""
    availability = describe_task_action(task.state, action)
    if not availability.available:
        raise TaskActionUnavailableError(task_id=task.task_id.value, action=action.value, state=task.state.value,
                                         reason=availability.reason or f"{action.value} is not available")


class ReviewService:
    """Accept and reject reviewed task diffs against ``db`` (see the module docstring)."""

    def __init__(
        self, db: Database, *, clock: Callable[[], int] = now_us, committer: CommitAuthor | None = None,
        publish: Callable[[JournalEvent], None] | None = None,
        landing_fault: Callable[[LandingFault], None] | None = None,
        cleanup_fault: Callable[[CleanupFault], None] | None = None,
    ) -> None:  # fmt: skip
        """``landing_fault`` is called at each :class:`~codeflux.gitwork.landing.LandingFault`, ``cleanup_fault``
        at each :class:`~codeflux.gitwork.worktrees.CleanupFault` of the worktree's cleanup (tests only)."""
        self._db = db
        self._landing_fault = landing_fault
        self._cleanup_fault = cleanup_fault
        self._publish = publish
        self._committer = committer
        self._changes = TaskChanges(db, clock=clock, entropy=lambda: os.urandom(16), publish=publish, fault=None)

    def _reviewable(self, task_id: TaskId, action: TaskAction) -> tuple[records.TaskRecord, TaskWorktree]:
        task = self._db.read(lambda view: records.require_task_record(view, task_id))
        require_task_action(task, action)
        binding = task_worktree_binding(task)
        if binding is None:
            raise TaskActionUnavailableError(task_id=task_id.value, action=action.value, state=task.state.value,
                                             reason="the task never ran, so it has no diff to review")
        return task, binding

    def accept_task(self, task_id: TaskId, *, reviewed_identity: str) -> AcceptResult:
        """Land the reviewed diff and complete the task, or report a conflict with nothing changed.

        Journaled (:mod:`.landings`): an unfinished landing of the task is resolved first (finished →
        the task completes with it; rolled back → this accept starts afresh), then the intent of the new
        landing commits before the checkout is touched. Held while this process lands: the shared running
        lock, so no other process's startup recovery takes this landing for an interrupted one. A diff that is
        not the one the newest attempt's checks gathered their evidence on is refused
        (:class:`EvidenceOnOtherDiffError`): the evidence binds to the diff it describes."""
        task, binding = self._reviewable(task_id, TaskAction.ACCEPT)
        with shared_running_lock(DataLocation(directory=self._db.path.parent)):
            pending = self._db.read(lambda view: landing_rows.landing_of_task(view, task_id, unfinished_only=True))
            if pending is not None:
                resolution = resolve_landing(self._changes, pending, by=landing_rows.LandingEndedBy.RETRY,
                                             reason="resolved by a retry of the accept")
                if resolution is LandingResolution.FINISHED:
                    return self.complete_landed(pending, by=landing_rows.LandingEndedBy.RETRY,
                                                reason="the branch had moved: the accept was complete")
            checked = self._db.read(lambda view: evidence_diff_identity(view, task_id))
            if checked is not None and checked != reviewed_identity:
                raise EvidenceOnOtherDiffError(task_id=task_id.value, evidence=checked, diff=reviewed_identity)
            prepared = prepare_accept(task.repository_root, binding, reviewed_identity=reviewed_identity,
                                      committer=self._committer)
            outcome = prepared.outcome
            if outcome.kind is AcceptKind.CONFLICT:
                self._changes.write(lambda tx, events: events.append(append_event(
                    tx, session_id=task.session_id, event=AcceptConflicted(
                        task_id=task_id, diff_identity=reviewed_identity, branch=outcome.branch,
                        conflicting_paths=tuple(outcome.conflicting_paths)))))
                return AcceptResult(outcome=outcome, change=None, worktree=None)
            if prepared.plan is None:
                return self._complete(task_id, reviewed_identity, outcome, landing=None, by=None, reason="")
            row = record_intent(self._changes, task, prepared, reviewed_identity=reviewed_identity)
            self._land(prepared, row)
            return self._complete(task_id, reviewed_identity, outcome, landing=row,
                                  by=landing_rows.LandingEndedBy.ACCEPT, reason="landed")

    def _land(self, prepared: PreparedAccept, row: landing_rows.LandingRow) -> None:
        """Land ``prepared``; on a failure, roll back what was written right away when possible (else a
        retry or startup recovery does it from the journal) and raise the failure."""
        try:
            land_prepared(prepared, token=row.token, fault=self._landing_fault)
        except Exception as error:
            reason = str(error) if isinstance(error, CodefluxError) else f"{type(error).__name__} while landing"
            if isinstance(error, GitLockHeldError):  # refused before anything in the checkout was written
                self._changes.write(lambda tx, events: record_end(
                    tx, events, row, session_id=records.require_task_record(tx, row.task_id).session_id,
                    outcome=landing_rows.LandingOutcome.ROLLED_BACK, by=landing_rows.LandingEndedBy.ACCEPT,
                    reason=reason, at_us=self._changes.clock()))
            else:
                with contextlib.suppress(CodefluxError, OSError):
                    resolve_landing(self._changes, row, by=landing_rows.LandingEndedBy.ACCEPT, reason=reason)
            raise

    def complete_landed(self, row: landing_rows.LandingRow, *, by: landing_rows.LandingEndedBy,
                        reason: str) -> AcceptResult:
        """Complete the task of a landing found finished (the branch moved) by a retry or startup recovery."""
        return self._complete(row.task_id, row.diff_identity, outcome_of(row), landing=row, by=by, reason=reason)

    def _complete(self, task_id: TaskId, reviewed_identity: str, outcome: AcceptOutcome, *,
                  landing: landing_rows.LandingRow | None, by: landing_rows.LandingEndedBy | None,
                  reason: str) -> AcceptResult:
        """One transaction: the landing's end (when journaled), ``completed`` with its event, the delivery."""
        text = f"accepted: {outcome.kind.value} of {outcome.branch} to {outcome.landed_head[:12]}"
        intents: list[CleanupRow | None] = []

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            current = records.require_task_record(tx, task_id)
            if landing is not None and by is not None:
                record_end(tx, events, landing, session_id=current.session_id,
                           outcome=landing_rows.LandingOutcome.LANDED, by=by, reason=reason,
                           at_us=self._changes.clock())
            record = self._end_review(tx, events, current, TaskState.COMPLETED, reason=text)
            events.append(append_event(tx, session_id=current.session_id, event=TaskAccepted(
                task_id=task_id, diff_identity=reviewed_identity, kind=outcome.kind.value, branch=outcome.branch,
                previous_head=outcome.previous_head, landed_head=outcome.landed_head, task_commit=outcome.task_commit)))
            record_delivery_decision(tx, events, task_id=task_id, diff_identity=reviewed_identity, accepted=True,
                                     landed_commit=outcome.landed_head, reason=None, decided_by=Actor.USER,
                                     at_us=self._changes.clock())
            intents.append(record_cleanup_intent(tx, record, delete_branch=True, saved_patch_identity=None))
            events.extend(record_incidents_fixed(tx, task_id, at_us=self._changes.clock()))
            return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision}

        change = self._changes.mutate(scope=f"task:{task_id.value}", key=f"accept:{reviewed_identity}", work=work,
                                      request={"operation": "accept", "reviewed_identity": reviewed_identity})
        disposal = dispose_task_worktree(self._db, task_id, saved_patch_identity=None, delete_branch=True,
                                         publish=self._publish, fault=self._cleanup_fault,
                                         intent=intents[0] if intents else None)
        learn_from_accepted(self._db, task_id)  # memory of what the accepted attempt showed; it decides nothing
        return AcceptResult(outcome=outcome, change=change, worktree=disposal)

    def reject_task(self, task_id: TaskId, *, reviewed_identity: str, reason: str) -> RejectResult:
        """Store the worktree's patch and end the task (see the module docstring)."""
        rejection = self.rejection(task_id, reviewed_identity=reviewed_identity, reason=reason)
        stored: list[records.TaskPatchRow] = []
        intents: list[CleanupRow | None] = []

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            current = records.require_task_record(tx, task_id)
            stored.append(record_rejection(tx, events, current, rejection, at_us=self._changes.clock))
            record = self._end_review(tx, events, current, _REJECT_TARGET, reason=f"rejected: {reason}"[:_MAX_REASON])
            intents.append(record_cleanup_intent(tx, record, delete_branch=False,
                                                 saved_patch_identity=stored[-1].diff_identity))
            return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision}

        change = self._changes.mutate(scope=f"task:{task_id.value}", key=f"reject:{reviewed_identity}", work=work,
                                      request={"operation": "reject", "reviewed_identity": reviewed_identity,
                                               "reason": reason})
        patch = stored[0] if stored else self._latest_patch(task_id)
        disposal = dispose_task_worktree(self._db, task_id, saved_patch_identity=patch.diff_identity,
                                         delete_branch=False, publish=self._publish, fault=self._cleanup_fault,
                                         intent=intents[0] if intents else None)
        return RejectResult(change=change, patch=patch, matches_review=rejection.patch.matches_review,
                            worktree=disposal)

    def rejection(self, task_id: TaskId, *, reviewed_identity: str, reason: str) -> DiffRejection:
        """The rejection of the task's diff under review (its patch read now, nothing changed), for
        :meth:`reject_task` or for a retry that records it as it starts the next attempt
        (:meth:`~codeflux.coordinator.tasks.service.TaskService.start_run`, ``rejection``)."""
        check_text(reason, kind="rejection reason", limit=MAX_REJECTION_REASON)
        _, binding = self._reviewable(task_id, TaskAction.REJECT)
        return read_rejection(binding, reviewed_identity=reviewed_identity, reason=reason)

    def _end_review(self, tx: Transaction, events: list[JournalEvent], task: records.TaskRecord,
                    to_state: TaskState, *, reason: str) -> records.TaskRecord:
        validate_task_transition(task.state, to_state)
        gates.require_entry_allowed(tx, task, to_state, dedicated_ok=False)
        return self._changes.transition(tx, events, task, to_state, reason=reason, actor=Actor.USER)

    def _latest_patch(self, task_id: TaskId) -> records.TaskPatchRow:
        patches = self._db.read(lambda view: records.patches_of_task(view, task_id))
        if not patches:
            raise NotFoundError(kind="stored patch of task", entity_id=task_id.value)
        rejected = [p for p in patches if p.kind is PatchKind.REJECTED]
        return (rejected or patches)[-1]

    def task_patch(self, task_id: TaskId) -> records.TaskPatchRow:
        """The patch kept for the task (the rejected one, else the newest preserved one): exact bytes and
        the diff identity they were taken at."""
        return self._latest_patch(task_id)
