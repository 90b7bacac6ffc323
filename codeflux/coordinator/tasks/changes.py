"""How every task change is written: one transaction, idempotent, published after the commit.

:class:`TaskChanges` runs a change as one ``BEGIN IMMEDIATE`` transaction holding the aggregate change,
its journal events, the transition row of a state change and the idempotency record. An identical retry
(same scope, key and request) returns the original :class:`TaskChange` marked ``replayed``; the same key
with another request is an :class:`~codeflux.domain.errors.IdempotencyConflictError`. The events are
handed to the publisher only after the commit, so nothing is ever shown that was not recorded; each state
change likewise reaches the observers (:class:`~codeflux.coordinator.hooks.TaskStateChanged`) after the commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from codeflux.coordinator.hooks import Observers, TaskStateChanged
from codeflux.domain.errors import InvalidValueError, StaleRevisionError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import Actor, TaskState
from codeflux.store import task_records as records
from codeflux.store.database import Database, Transaction
from codeflux.store.events import JournalEvent
from codeflux.store.idempotency import run_idempotent

__all__ = [
    "Actor",
    "ChangeWork",
    "TaskChange",
    "TaskChanges",
    "TaskFault",
    "check_text",
    "deciding_actor",
    "require_revision",
]

T = TypeVar("T")


class TaskFault(StrEnum):
    """Named points where tests inject a failure into a task change."""

    BEFORE_COMMIT = "before-commit"  # state, event and transition row written; raising rolls all back
    AFTER_COMMIT_BEFORE_PUBLISH = "after-commit-before-publish"  # committed; nothing published yet


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskChange:
    """The result of a task change as first recorded (a replayed retry returns the same, ``replayed``)."""

    task_id: TaskId
    state: TaskState
    revision: int
    attempt: int | None = None
    plan_revision: int | None = None
    replayed: bool = False


ChangeWork = Callable[[Transaction, list[JournalEvent]], Mapping[str, object]]
"""The body of a change: writes in the transaction, appends its events, returns the result document."""


def check_text(value: str, *, kind: str, limit: int) -> str:
    """``value`` if it is 1..``limit`` characters of non-blank text without NUL; else InvalidValueError."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value or len(value) > limit:
        raise InvalidValueError(kind=kind, reason=f"must be 1 to {limit} characters of text without NUL")
    return value


def deciding_actor(actor: Actor) -> Actor:
    """``actor`` if a person or the headless policy; codeflux never decides for the person."""
    chosen = Actor(actor)
    if chosen is Actor.SYSTEM:
        raise InvalidValueError(kind="decision", reason="a person or the headless policy decides, not codeflux")
    return chosen


def require_revision(task: records.TaskRecord, expected_revision: int) -> None:
    """Refuse with :class:`StaleRevisionError` unless the task is still at ``expected_revision``."""
    if task.revision != expected_revision:
        raise StaleRevisionError(kind="task", entity_id=task.task_id.value, expected=expected_revision,
                                 actual=task.revision)


def _change(result: Mapping[str, object], *, replayed: bool) -> TaskChange:
    def number(key: str) -> int | None:
        value = result.get(key)
        return None if value is None else int(str(value))

    return TaskChange(task_id=TaskId.parse(str(result["task_id"])), state=TaskState(str(result["state"])),
                      revision=int(str(result["revision"])), attempt=number("attempt"),
                      plan_revision=number("plan_revision"), replayed=replayed)


class TaskChanges:
    """Runs task changes against ``db``; ``clock`` gives microseconds, ``entropy`` 16 random bytes."""

    def __init__(
        self, db: Database, *, clock: Callable[[], int], entropy: Callable[[], bytes],
        publish: Callable[[JournalEvent], None] | None, fault: Callable[[TaskFault], None] | None,
        observers: Observers | None = None,
    ) -> None:  # fmt: skip
        """``observers`` hear of every state change once its transaction committed."""
        self.db = db
        self.clock = clock
        self.entropy = entropy
        self._publish = publish
        self._fault = fault
        self._observers = observers

    def mutate(self, *, scope: str, key: str, request: Mapping[str, object], work: ChangeWork) -> TaskChange:
        """Run ``work`` once per (scope, key) in one transaction; publish its events after the commit."""
        events: list[JournalEvent] = []
        ran: list[bool] = []

        def transaction(tx: Transaction) -> Mapping[str, object]:
            def apply() -> Mapping[str, object]:
                ran.append(True)
                result = work(tx, events)
                self._inject(TaskFault.BEFORE_COMMIT)
                return result

            result = run_idempotent(tx, scope=scope, key=key, request=request, work=apply)
            tx.after_commit(lambda: self.deliver(events))
            return result

        return _change(self.db.write(transaction), replayed=not ran)

    def write(self, work: Callable[[Transaction, list[JournalEvent]], T]) -> T:
        """Run ``work`` in one transaction (no idempotency key: the change is idempotent by its own
        identity, such as a ledger stage or a patch identity); publish its events after the commit."""
        events: list[JournalEvent] = []

        def transaction(tx: Transaction) -> T:
            result = work(tx, events)
            tx.after_commit(lambda: self.deliver(events))
            return result

        return self.db.write(transaction)

    def deliver(self, events: Sequence[JournalEvent]) -> None:
        """Hand committed events to the publisher, in order."""
        self._inject(TaskFault.AFTER_COMMIT_BEFORE_PUBLISH)
        if self._publish is not None:
            for event in events:
                self._publish(event)

    def _inject(self, point: TaskFault) -> None:
        if self._fault is not None:
            self._fault(point)

    def transition(
        self, tx: Transaction, events: list[JournalEvent], task: records.TaskRecord, to_state: TaskState, *,
        reason: str, actor: Actor, base_revision: str | None = None,
    ) -> records.TaskRecord:  # fmt: skip
        """Record ``task.state → to_state`` (validated and gated by the caller) with its event and row."""
        record, _, event = records.record_task_transition(
            tx, task_id=task.task_id, expected_revision=task.revision, to_state=to_state, reason=reason,
            actor=actor, at_us=self.clock(), base_revision=base_revision)
        events.append(event)
        if self._observers is not None:
            observers, changed = self._observers, TaskStateChanged(
                task_id=task.task_id, from_state=task.state, to_state=record.state, revision=record.revision,
                actor=actor.value, reason=reason)
            tx.after_commit(lambda: observers.notify(changed))
        return record
