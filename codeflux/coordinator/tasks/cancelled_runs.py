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

The cancel says what it did (:class:`CancelReport`, the ``cancel_outcome`` of ``CancelTask``'s reply): the
executions in flight when the task was cancelled are watched (at most :data:`STOP_WAIT_S`) until the run that
runs them records their result — "stopped" with the recorded state, or "stopping" when none came in time —
and the worktree was removed, kept (why), left to the run, or there was none.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.coordinator.journal import latest_session_event
from codeflux.coordinator.tasks.worktree_lifecycle import WorktreeDisposal, dispose_task_worktree
from codeflux.domain.events import EventKind, WorktreeDisposed, WorktreeRemoved
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import is_terminal
from codeflux.store import task_records as records
from codeflux.store.authority import execution_of_request, unfinished_executions
from codeflux.store.database import Database

__all__ = [
    "STOP_WAIT_S",
    "CancelReport",
    "CommandAtCancel",
    "IdleDisposal",
    "WorktreeAtCancel",
    "dispose_if_idle",
    "execution_in_flight",
    "report_cancel",
    "requests_in_flight",
]

LEFT_FOR_THE_RUN = "the run will remove it when its command stops"
STOP_WAIT_S: Final = 10.0
"""How long a cancel waits for the run to record the result of the command it stops (it polls every 0.25 s)."""
_POLL_S: Final = 0.1
_STOPPED: Final = frozenset({ToolExecutionState.CANCELLED, ToolExecutionState.OUTCOME_UNKNOWN})


@dataclass(frozen=True, slots=True)
class IdleDisposal:
    """What :func:`dispose_if_idle` did: ``disposal`` when it tried; ``left`` says why it did not."""

    disposal: WorktreeDisposal | None
    left: str | None = None


def execution_in_flight(db: Database, task_id: TaskId) -> bool:
    """An execution intent of the task has no result yet (a command of it may be running right now)."""
    return bool(requests_in_flight(db, task_id))


def requests_in_flight(db: Database, task_id: TaskId) -> tuple[str, ...]:
    """The tool requests of the task whose execution has no result yet (their commands may be running)."""
    return tuple(row.request_id for row in db.read(unfinished_executions) if row.task_id == task_id)


class CommandAtCancel(StrEnum):
    """What a cancel found and did about a running command of the task."""

    NONE = "none"  # no command of the task was running
    STOPPED = "stopped"  # one was running; it was stopped and its result recorded
    STOPPING = "stopping"  # one was running; the run is stopping it (no result yet when the cancel replied)
    ENDED = "ended"  # one was running; it ended on its own before it was stopped


class WorktreeAtCancel(StrEnum):
    """What happened to the task's worktree when it was cancelled."""

    REMOVED = "removed"
    KEPT = "kept"
    LEFT_TO_THE_RUN = "left-to-the-run"
    NONE = "none"  # no run ever started: there was no worktree


@dataclass(frozen=True, slots=True)
class CancelReport:
    """What ``codeflux task cancel`` did: to a running command (``command_state``: the stopped command's
    recorded state) and to the worktree (``detail``: why it was kept)."""

    task_id: TaskId
    command: CommandAtCancel
    worktree: WorktreeAtCancel
    detail: str = ""
    command_state: str = ""
    by_the_run: bool = False
    """The run removed (or kept) the worktree once the command had stopped, before the cancel replied."""

    def summary(self) -> str:
        """One line in words (the CLI prints it; the browser shows it)."""
        head = f"task {self.task_id} cancelled"
        match self.command:
            case CommandAtCancel.STOPPED:
                head += f"; its running command was stopped (recorded {self.command_state})"
            case CommandAtCancel.STOPPING:
                head += (f"; its running command is being stopped (no result was recorded within "
                         f"{STOP_WAIT_S:g} s)")
            case CommandAtCancel.ENDED:
                head += f"; its running command had ended on its own (recorded {self.command_state})"
            case CommandAtCancel.NONE:
                pass
        match self.worktree:
            case WorktreeAtCancel.LEFT_TO_THE_RUN if self.command is not CommandAtCancel.NONE:
                return head + " — the run removes the worktree when the command has stopped"
            case WorktreeAtCancel.LEFT_TO_THE_RUN:
                return head + " — the run removes the worktree when it has stopped (at its next turn)"
            case WorktreeAtCancel.REMOVED if self.by_the_run:
                return head + " — the run removed the worktree once the command had stopped"
            case WorktreeAtCancel.KEPT if self.by_the_run:
                return head + f" — the run kept the worktree once the command had stopped: {self.detail}"
            case WorktreeAtCancel.REMOVED:
                return head + "; its worktree was removed"
            case WorktreeAtCancel.KEPT:
                return head + f"; its worktree was kept: {self.detail}"
            case WorktreeAtCancel.NONE:
                return head + "; it had no worktree"


def report_cancel(db: Database, task_id: TaskId, *, in_flight: tuple[str, ...], disposal: IdleDisposal | None,
                  since_sequence: int = 0, wait_s: float = STOP_WAIT_S,
                  sleep: Callable[[float], None] = time.sleep) -> CancelReport:
    """The truth about a cancel that just committed: ``in_flight`` are the requests whose commands were running
    when it did (:func:`requests_in_flight`, read before); ``disposal`` what this process did to the worktree
    (None: it left it to a run of this process that is still busy). Waits (at most ``wait_s``) for the run
    to record those commands' results; a worktree the run disposed of meanwhile (an event of the task's
    session after ``since_sequence``, its head before the cancel) is reported as the run's."""
    report = _report(db, task_id, in_flight=in_flight, disposal=disposal, wait_s=wait_s, sleep=sleep)
    if report.worktree is not WorktreeAtCancel.LEFT_TO_THE_RUN:
        return report
    session_id = db.read(lambda view: records.require_task_record(view, task_id)).session_id
    found = latest_session_event(db, session_id=session_id,
                                 kinds=(EventKind.WORKTREE_REMOVED, EventKind.WORKTREE_KEPT))
    if found is None or found.sequence <= since_sequence or not isinstance(found.event, WorktreeDisposed):
        return report
    removed = isinstance(found.event, WorktreeRemoved)
    return dataclasses.replace(report, worktree=WorktreeAtCancel.REMOVED if removed else WorktreeAtCancel.KEPT,
                               detail="" if removed else found.event.detail, by_the_run=True)


def _report(db: Database, task_id: TaskId, *, in_flight: tuple[str, ...], disposal: IdleDisposal | None,
            wait_s: float, sleep: Callable[[float], None]) -> CancelReport:
    if disposal is None or disposal.left == LEFT_FOR_THE_RUN:
        worktree, detail = WorktreeAtCancel.LEFT_TO_THE_RUN, ""
    elif disposal.left is not None:
        worktree, detail = WorktreeAtCancel.KEPT, disposal.left
    elif disposal.disposal is None:
        worktree, detail = WorktreeAtCancel.NONE, ""
    elif disposal.disposal.removed:
        worktree, detail = WorktreeAtCancel.REMOVED, ""
    else:
        worktree, detail = WorktreeAtCancel.KEPT, disposal.disposal.detail
    if not in_flight:
        return CancelReport(task_id=task_id, command=CommandAtCancel.NONE, worktree=worktree, detail=detail)
    deadline = time.monotonic() + wait_s
    while True:
        rows = db.read(lambda view: [execution_of_request(view, request_id) for request_id in in_flight])
        states = [row.result.state for row in rows if row is not None]
        if all(state.is_finished() for state in states):
            stopped = any(state in _STOPPED for state in states)
            return CancelReport(task_id=task_id, command=CommandAtCancel.STOPPED if stopped else CommandAtCancel.ENDED,
                                worktree=worktree, detail=detail,
                                command_state=", ".join(sorted({state.value for state in states})) or "nothing")
        if time.monotonic() >= deadline:
            return CancelReport(task_id=task_id, command=CommandAtCancel.STOPPING, worktree=worktree, detail=detail)
        sleep(_POLL_S)


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
