"""A person's rejection of a reviewed diff, as one part of a transaction: the patch kept, the decision recorded.

Rejecting has two endings, and both record the same things here: the worktree's current patch is stored
(``task_patches``, kind ``rejected``, with a ``patch-stored`` event) and the delivery decision of the attempt
that reached review (stage 36 failed with the reason, 37 blocked). A plain reject then ends the task
(:meth:`codeflux.coordinator.tasks.review.ReviewService.reject_task`); a reject *with retry* moves the task
``awaiting-review → running`` in the same transaction and opens the next attempt on the same approved plan
(:meth:`codeflux.coordinator.tasks.service.TaskService.start_run`) — ``cancelled`` is final, so a task that
is to try again never passes through it. The rejected diff's identity stays on record with its patch; the
worktree is kept as it is for the next attempt, whose conversation starts with the reason.

:func:`read_rejection` takes the patch (a read of the worktree, nothing changed) before the transaction;
:func:`record_rejection` writes it inside one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from codeflux.coordinator.tasks.changes import Actor, check_text
from codeflux.coordinator.tasks.checkpoints import record_delivery_decision
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import PatchStored
from codeflux.domain.tasks import PatchKind
from codeflux.gitwork.accept import RejectedPatch, reject_task_diff
from codeflux.gitwork.worktrees import TaskWorktree
from codeflux.store import task_records as records
from codeflux.store.database import Transaction
from codeflux.store.events import JournalEvent, append_event

__all__ = ["MAX_REJECTION_REASON", "DiffRejection", "read_rejection", "record_rejection"]

MAX_REJECTION_REASON: Final = 2048
_IDENTITY: Final = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRejection:
    """What a person rejected: the identity they reviewed, why, and the patch the worktree holds now."""

    reviewed_identity: str
    reason: str
    patch: RejectedPatch

    @property
    def note(self) -> str:
        """The reason as stored with the patch (saying so when the worktree moved on since the review)."""
        if self.patch.matches_review:
            return self.reason
        return (f"{self.reason} (reviewed {self.reviewed_identity[:12]}; the worktree now holds "
                f"{self.patch.identity[:12]}, kept)")[:MAX_REJECTION_REASON]


def read_rejection(binding: TaskWorktree, *, reviewed_identity: str, reason: str) -> DiffRejection:
    """The rejection of ``reviewed_identity`` with ``reason`` (1..2048 characters): the worktree's current patch."""
    check_text(reason, kind="rejection reason", limit=MAX_REJECTION_REASON)
    if _IDENTITY.fullmatch(reviewed_identity) is None:
        raise InvalidValueError(kind="diff identity", reason="give the 64 hex digits of the diff you reviewed")
    return DiffRejection(reviewed_identity=reviewed_identity, reason=reason,
                         patch=reject_task_diff(binding, reviewed_identity=reviewed_identity))


def record_rejection(tx: Transaction, events: list[JournalEvent], task: records.TaskRecord, rejection: DiffRejection,
                     *, at_us: Callable[[], int]) -> records.TaskPatchRow:
    """Store the rejected patch (once) and the attempt's delivery decision, in ``tx``; returns the patch row."""
    rejected = rejection.patch
    row, created = records.insert_task_patch(
        tx, task_id=task.task_id, kind=PatchKind.REJECTED, diff_identity=rejected.identity, base_commit=rejected.base,
        head_commit=rejected.head, patch=rejected.patch, reason=rejection.note, at_us=at_us())
    if created:
        events.append(append_event(tx, session_id=task.session_id, event=PatchStored(
            task_id=task.task_id, kind=row.kind.value, diff_identity=rejected.identity,
            patch_sha256=row.patch_sha256, bytes=len(rejected.patch))))
    record_delivery_decision(tx, events, task_id=task.task_id, diff_identity=rejection.reviewed_identity,
                             accepted=False, landed_commit=None, reason=rejection.reason, decided_by=Actor.USER,
                             at_us=at_us())
    return row
