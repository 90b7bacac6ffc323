"""Removing a task's worktree once the task is over — unless that would lose something, and then saying why.

A task in a terminal state (``completed``, ``cancelled``, ``rolled-back``) no longer needs its worktree.
:func:`dispose_task_worktree` removes it through :func:`codeflux.gitwork.worktrees.remove_task_worktree`
with ``keep_if_unsaved``, so it is **kept** when:

* the outcome is ambiguous — the task has an effect whose outcome is unknown and nobody has recorded
  what happened (the worktree may be the only evidence);
* it holds work stored nowhere else — uncommitted changes whose diff is not the stored patch, content no
  patch can carry, or a branch with commits the user's branch lacks (when the branch would go too);
* it fails verification, so what removal would lose is unknown.

When the worktree is removed, the task's checkpoint refs (``refs/codeflux/checkpoints/<task>/<n>``) go
too: only refs a ``checkpoints`` row names, and only while each still points at the commit that row
recorded (:func:`codeflux.gitwork.checkpoint_refs.delete_checkpoint_ref`). The rows stay — they are
history. A kept worktree keeps its refs (they may be what recovery or the person needs).

Either way one ``worktree-removed`` / ``worktree-kept`` event with the reason (and, for a removal, the
number of checkpoint refs deleted) is recorded in the task's journal. A task that never started a run has
no worktree and nothing is recorded.

The cleanup is journaled (``migrations/000011_task_cleanups.sql``): its intent (the task, whether the branch
goes, the stored patch's identity) commits before anything is removed, and its end commits with the event.
A cleanup a stop or an error interrupted part-way — the directory gone but the branch not, say — has no end:
startup recovery runs it again (:func:`finish_interrupted_cleanups`, every step of which can run twice)
until it ends, removed or kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from codeflux.domain.errors import CodefluxError, RepositoryNotUsableError, UsageError, WorktreeNotUsableError
from codeflux.domain.events import WorktreeKept, WorktreeRemoved
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import unresolved_effects
from codeflux.domain.tasks import is_terminal
from codeflux.gitwork.checkpoint_refs import delete_checkpoint_ref
from codeflux.gitwork.worktrees import CleanupFault, TaskWorktree, remove_task_worktree
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store import recovery as recovery_rows
from codeflux.store import task_cleanups as cleanup_rows
from codeflux.store import task_records as records
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import JournalEvent, append_event

__all__ = [
    "WorktreeDisposal",
    "dispose_task_worktree",
    "finish_interrupted_cleanups",
    "record_cleanup_intent",
    "task_worktree_binding",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeDisposal:
    """What happened to the worktree: ``removed``, or kept with ``refusal`` (a short code) and ``detail``."""

    removed: bool
    refusal: str | None
    detail: str
    branch_deleted: bool
    checkpoint_refs_deleted: int = 0


def task_worktree_binding(task: records.TaskRecord) -> TaskWorktree | None:
    """The task's worktree binding, or None when no run ever started (no base commit, so no worktree)."""
    if task.base_revision is None:
        return None
    return TaskWorktree(repo_root=task.repository_root, path=task.worktree, task_id=task.task_id,
                        base=task.base_revision)


def dispose_task_worktree(
    db: Database, task_id: TaskId, *, saved_patch_identity: str | None, delete_branch: bool,
    publish: Callable[[JournalEvent], None] | None = None, fault: Callable[[CleanupFault], None] | None = None,
    intent: cleanup_rows.CleanupRow | None = None,
) -> WorktreeDisposal | None:  # fmt: skip
    """Remove the worktree of a task in a terminal state, or keep it and say why (see the module docstring).

    ``saved_patch_identity`` is the diff identity of a patch stored for the task (its worktree content is
    then saved); ``delete_branch`` also deletes the task branch (only when nothing would be lost). Returns
    None when the task has no worktree. Refuses (:class:`UsageError`) a task that is not terminal. The
    intent commits first (``intent``: the caller committed it with the task's end, see
    :func:`record_cleanup_intent`); an error part-way leaves it without an end, for startup recovery to
    finish. ``fault`` is called between the steps (tests only).
    """
    task = db.read(lambda view: records.require_task_record(view, task_id))
    if not is_terminal(task.state):
        raise UsageError(f"task {task_id} is {task.state}; its worktree stays until the task ends")
    row = intent if intent is not None else db.write(lambda tx: record_cleanup_intent(
        tx, task, delete_branch=delete_branch, saved_patch_identity=saved_patch_identity))
    if row is None:  # no run ever started: no worktree
        return None
    return _run_cleanup(db, row, publish=publish, fault=fault)


def record_cleanup_intent(tx: Transaction, task: records.TaskRecord, *, delete_branch: bool,
                          saved_patch_identity: str | None) -> cleanup_rows.CleanupRow | None:
    """Record in ``tx`` that the task's worktree is to be cleaned up — in the transaction that ends the task, so
    a stop right after it still leaves the cleanup for startup recovery. None when the task has no worktree."""
    if task_worktree_binding(task) is None:
        return None
    return cleanup_rows.insert_cleanup(tx, task_id=task.task_id, delete_branch=delete_branch,
                                       saved_patch_identity=saved_patch_identity, at_us=now_us())


def finish_interrupted_cleanups(db: Database, publish: Callable[[JournalEvent], None] | None = None) -> list[str]:
    """Run every cleanup without an end again (startup recovery); one line per cleanup saying how it ended,
    or that it failed again (it stays unfinished, for the next startup)."""
    lines = []
    for row in db.read(cleanup_rows.unfinished_cleanups):
        try:
            disposal = _run_cleanup(db, row, publish=publish, fault=None, by_recovery=True)
        except CodefluxError as error:
            lines.append(f"the interrupted cleanup of task {row.task_id} failed again and stays for the next start: "
                         f"{error}")
            continue
        if disposal.removed:
            lines.append(f"the interrupted cleanup of task {row.task_id} was finished: worktree removed"
                         + (", branch deleted" if disposal.branch_deleted else "")
                         + f", {disposal.checkpoint_refs_deleted} checkpoint ref(s) deleted")
        else:
            lines.append(f"the interrupted cleanup of task {row.task_id} ended with the worktree kept: "
                         f"{disposal.detail}")
    return lines


def _run_cleanup(db: Database, row: cleanup_rows.CleanupRow, *, publish: Callable[[JournalEvent], None] | None,
                 fault: Callable[[CleanupFault], None] | None, by_recovery: bool = False) -> WorktreeDisposal:
    """Remove (or keep) the worktree, delete the branch and checkpoint refs, then record the end with its event."""
    task, unresolved = db.read(lambda view: (
        records.require_task_record(view, row.task_id),
        unresolved_effects(recovery_rows.ambiguous_effects_of_task(view, row.task_id))))
    binding = task_worktree_binding(task)
    if binding is None:  # cannot happen for a recorded intent; end it rather than retry forever
        disposal = WorktreeDisposal(removed=False, refusal="unverifiable", branch_deleted=False,
                                    detail="the task has no worktree binding")
        _record(db, task, row, disposal, publish)
        return disposal
    try:
        removal = remove_task_worktree(binding, keep_if_unsaved=True, outcome_ambiguous=bool(unresolved),
                                       saved_patch_identity=row.saved_patch_identity,
                                       delete_branch=row.delete_branch, fault=fault)
        disposal = WorktreeDisposal(removed=removal.removed, branch_deleted=removal.branch_deleted,
                                    refusal=None if removal.refusal is None else removal.refusal.value,
                                    detail=removal.detail)
    except (WorktreeNotUsableError, RepositoryNotUsableError) as error:
        disposal = WorktreeDisposal(removed=False, refusal="unverifiable", branch_deleted=False,
                                    detail=f"left alone: {error}")
    if unresolved and not disposal.removed:
        disposal = WorktreeDisposal(removed=False, refusal=disposal.refusal, branch_deleted=False,
                                    detail=f"{disposal.detail} (unknown outcome: {', '.join(unresolved)})")
    if disposal.removed:
        if fault is not None:
            fault(CleanupFault.BRANCH_DELETED)
        disposal = replace(disposal, checkpoint_refs_deleted=_prune_checkpoint_refs(db, task))
        if by_recovery:
            disposal = replace(disposal, detail="removed by startup recovery (the cleanup had been interrupted)")
    _record(db, task, row, disposal, publish)
    return disposal


def _prune_checkpoint_refs(db: Database, task: records.TaskRecord) -> int:
    """Delete the checkpoint refs the task's rows name, each only while it names the recorded commit."""
    deleted = 0
    for row in db.read(lambda view: checkpoint_rows.checkpoints_of_task(view, task.task_id)):
        try:
            deleted += delete_checkpoint_ref(task.repository_root, row.ref_name, commit=row.commit_id)
        except (RepositoryNotUsableError, WorktreeNotUsableError):
            break  # the repository is gone or unusable: nothing to prune there
    return deleted


def _record(db: Database, task: records.TaskRecord, row: cleanup_rows.CleanupRow, disposal: WorktreeDisposal,
            publish: Callable[[JournalEvent], None] | None) -> None:
    """The cleanup's end and its event in one transaction (nothing when an end is recorded already)."""
    events: list[JournalEvent] = []

    def work(tx: Transaction) -> None:
        if not cleanup_rows.insert_cleanup_end(tx, cleanup_id=row.cleanup_id, removed=disposal.removed,
                                               refusal=disposal.refusal, detail=disposal.detail, at_us=now_us()):
            return
        events.append(append_event(tx, session_id=task.session_id, event=(
            WorktreeRemoved if disposal.removed else WorktreeKept)(
                task_id=task.task_id, path=str(task.worktree), refusal=disposal.refusal, detail=disposal.detail,
                branch_deleted=disposal.branch_deleted, checkpoint_refs_deleted=disposal.checkpoint_refs_deleted)))

    db.write(work)
    if publish is not None:  # only after the commit, so nothing unrecorded is ever shown
        for event in events:
            publish(event)
