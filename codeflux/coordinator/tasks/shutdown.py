"""Stopping a task's run for a shutdown: pause it at its next boundary, then keep a ``shutdown`` checkpoint.

Both ways codeflux stops while a task runs go through these two functions: ``codeflux start`` on
SIGINT/SIGTERM (:meth:`BackgroundRuns.shutdown <codeflux.coordinator.runs.scheduler.BackgroundRuns.shutdown>`)
and a command that runs a task in its own process (``codeflux run``, ``task start|resume``; the CLI's signal
handler). Nothing is cut off half-way:

1. :func:`pause_task_for_shutdown` moves the task to ``paused`` through the task service — the honest path:
   the loop reads the task's state before every turn and every tool call, and the runner at every hand-over,
   so the run ends ``paused`` at the next boundary (a tool already executing finishes first) with its
   attempt's ledger finished. A task still ``ready`` (its run is about to start it) is watched until it runs
   and then paused; a task in no pausable state otherwise (say, awaiting review) is left as it is.
2. once the run has stopped, :func:`capture_shutdown_checkpoint` preserves its worktree (ARCHITECTURE §7:
   checkpoints on pause and shutdown). ``codeflux task resume`` then goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from codeflux.coordinator.tasks.changes import Actor, TaskChanges
from codeflux.coordinator.tasks.checkpoints import CheckpointService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import ConflictError, TaskActionUnavailableError, TransitionNotAllowedError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskAction, TaskState, describe_task_action
from codeflux.store.checkpoints import CheckpointRow, CheckpointTrigger

__all__ = ["capture_shutdown_checkpoint", "pause_task_for_shutdown"]

_LOOK_AGAIN_S: Final = 0.05


def pause_task_for_shutdown(
    tasks: TaskService, task_id: TaskId, *, reason: str, actor: Actor, keep_trying: Callable[[], bool]
) -> bool:
    """Pause ``task_id`` so that its run stops at the next boundary (see the module docstring).

    Looks again while the run moves the task meanwhile or has not started it yet, as long as
    ``keep_trying()`` says so. True once the task is paused; False when nothing runs that a pause could stop
    or ``keep_trying()`` turned False first.
    """
    while keep_trying():
        task = tasks.show(task_id).task
        if describe_task_action(task.state, TaskAction.PAUSE).available:
            try:
                tasks.transition(task_id, TaskState.PAUSED, expected_revision=task.revision, reason=reason,
                                 actor=actor, idempotency_key=f"shutdown:{task_id.value}:{task.revision}")
                return True
            except (ConflictError, TaskActionUnavailableError, TransitionNotAllowedError):
                pass  # the run moved the task meanwhile: look again
        elif task.state is not TaskState.READY:
            return False
        time.sleep(_LOOK_AGAIN_S)
    return False


def capture_shutdown_checkpoint(changes: TaskChanges, task_id: TaskId) -> CheckpointRow | None:
    """Preserve the worktree of a task whose run stopped for a shutdown; None when it has no worktree yet."""
    return CheckpointService(changes).capture_checkpoint(task_id, CheckpointTrigger.SHUTDOWN)
