"""A cancelled task whose command may still be running, and its worktree (issue 16 item 6).

``codeflux task cancel`` may run in another process than the run (a second terminal, the in-process channel
while ``codeflux run`` works): that process can record ``cancelled`` but cannot reach the other process's
worker. So the worktree is removed only once no execution of the task is in flight:

* the cancelling process disposes of the worktree now only when no execution intent of the task lacks its
  result (:func:`dispose_if_idle`); otherwise it leaves it — the run removes it when its command stops;
* the process that runs the command notices: its tool driver reads the task's state while the command runs
  (every :data:`~codeflux.coordinator.runs.tool_driver.CANCEL_POLL_S`) and, once the task has ended, asks its
  worker to cancel the request — the worker kills the command's process group and the result is recorded
  ``cancelled`` (never the command's own failure);
* the run then ends (the loop reads the task's state before every turn), and the process that ran it calls
  :func:`dispose_if_idle` (``codeflux run`` / the scheduler's end of a run): the worktree goes.

An intent without a result left by a process that died is reconciled ``outcome-unknown`` at the next start;
such a worktree is kept anyway (an unknown outcome keeps it until a person resolves it).
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.coordinator.tasks.worktree_lifecycle import WorktreeDisposal, dispose_task_worktree
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import is_terminal
from codeflux.store import task_records as records
from codeflux.store.authority import unfinished_executions
from codeflux.store.database import Database

__all__ = ["IdleDisposal", "dispose_if_idle", "execution_in_flight"]

LEFT_FOR_THE_RUN = "the run will remove it when its command stops"


@dataclass(frozen=True, slots=True)
class IdleDisposal:
    """What :func:`dispose_if_idle` did: ``disposal`` when it tried; ``left`` says why it did not."""

    disposal: WorktreeDisposal | None
    left: str | None = None


def execution_in_flight(db: Database, task_id: TaskId) -> bool:
    """An execution intent of the task has no result yet (a command of it may be running right now)."""
    return any(row.task_id == task_id for row in db.read(unfinished_executions))


def dispose_if_idle(db: Database, task_id: TaskId) -> IdleDisposal:
    """Dispose of the worktree of an ended task (its last stored patch counts as saved work) unless an
    execution of it is in flight; a task that has not ended is left alone."""
    state = db.read(lambda view: records.require_task_record(view, task_id)).state
    if not is_terminal(state):
        return IdleDisposal(disposal=None, left=f"the task is {state}")
    if execution_in_flight(db, task_id):
        return IdleDisposal(disposal=None, left=LEFT_FOR_THE_RUN)
    patches = db.read(lambda view: records.patches_of_task(view, task_id))
    saved = patches[-1].diff_identity if patches else None
    return IdleDisposal(disposal=dispose_task_worktree(db, task_id, saved_patch_identity=saved, delete_branch=False))
