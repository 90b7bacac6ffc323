"""Named hook points: how the CLI and the services watch the coordinator without subclassing it.

Four points, one frozen notification each:

- :class:`ToolCallSubmitted` — a tool request was recorded with its first decision
  (:meth:`ToolDriver.submit_tool_request <codeflux.coordinator.runs.tool_driver.ToolDriver.submit_tool_request>`);
- :class:`ToolCallDecided` — a person or the headless policy answered a pending request (``ToolDriver.decide``);
- :class:`ToolCallRan` — a request's execution was stored (``ToolDriver.execute`` returned it);
- :class:`TaskStateChanged` — a task moved from one state to another through the task service (the move from
  ``ready`` to ``running`` is a run starting).

Whoever builds a :class:`~codeflux.coordinator.runs.tool_driver.ToolDriver` or a
:class:`~codeflux.coordinator.tasks.service.TaskService` hands it an :class:`Observers`, to which observers
subscribed per hook point::

    observers = Observers()
    observers.subscribe(ToolCallRan, lambda ran: print(ran.execution.state))
    driver = ToolDriver(db, state_dir=..., observers=observers)

Delivery rules, the same at every point:

* **After the commit.** An observer hears of a change only once the transaction that recorded it committed;
  a change that rolled back is never announced.
* **Synchronous.** Observers run on the thread that made the change, in the order they subscribed, before the
  coordinator's method returns to its caller.
* **No veto.** An observer cannot stop, undo or alter the change: one that raises is logged (its type and a
  safe message) and the remaining observers still run; the caller gets its result as if nobody watched.

Observers must be quick and must not write to the database through the notifying connection's transaction
(there is none left: it committed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from codeflux.coordinator.tool_calls import ExecutionRecord, SubmittedRequest
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import CodefluxError, safe_error_message
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.logs import get_logger

__all__ = [
    "Notification",
    "Observers",
    "TaskStateChanged",
    "ToolCallDecided",
    "ToolCallRan",
    "ToolCallSubmitted",
]

_LOG: Final = "coordinator.hooks"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSubmitted:
    """A tool request was recorded with its first decision (a retry under the same key announces the
    recorded request again, with the same ``request_id``)."""

    request: SubmittedRequest
    arguments: Mapping[str, object]
    """The arguments as submitted (a read-only copy), before binding to the tool descriptor."""
    source: str
    confinement: ConfinementMode
    """The box the request's worker runs in: what approving it would mean."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDecided:
    """A pending request was answered (allow once, allow for the task, deny)."""

    request: SubmittedRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRan:
    """A request's execution is stored: it ran now, or ``execute`` found the execution recorded before."""

    request_id: str
    execution: ExecutionRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStateChanged:
    """A task moved ``from_state → to_state``; ``revision`` is the task's revision after the move."""

    task_id: TaskId
    from_state: TaskState
    to_state: TaskState
    revision: int
    actor: str
    reason: str

    @property
    def run_started(self) -> bool:
        """The move that starts a run (only ``TaskService.start_run`` makes it)."""
        return self.from_state is TaskState.READY and self.to_state is TaskState.RUNNING


Notification = ToolCallSubmitted | ToolCallDecided | ToolCallRan | TaskStateChanged
N = TypeVar("N", ToolCallSubmitted, ToolCallDecided, ToolCallRan, TaskStateChanged)


class Observers:
    """Observers subscribed per hook point (the notification's class); see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # copy-on-write: a notification reads the tuple in force without taking the lock
        self._by_point: dict[type[object], tuple[Callable[[Any], None], ...]] = {}

    def subscribe(self, point: type[N], observer: Callable[[N], None]) -> Observers:
        """Call ``observer`` with every ``point`` notification from now on; returns ``self`` (to chain)."""
        with self._lock:
            self._by_point[point] = (*self._by_point.get(point, ()), observer)
        return self

    def notify(self, notification: Notification) -> None:
        """Deliver ``notification`` to its point's observers, in order. Call only after the commit."""
        for observer in self._by_point.get(type(notification), ()):
            try:
                observer(notification)
            except Exception as error:  # an observer never changes the outcome: logged, then the next one
                get_logger(_LOG).error("an observer failed", point=type(notification).__name__,
                                       error_type=type(error).__name__, error=safe_error_message(error),
                                       exc_info=not isinstance(error, CodefluxError))

