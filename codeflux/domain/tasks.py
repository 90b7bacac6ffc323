"""Task states, the transitions between them, and what a person may do in each state.

The fourteen states are the stored vocabulary of ``tasks.state`` (kebab-case, part of the database
contract). The allowed changes between them are data — :data:`TASK_TRANSITIONS`, a set of
``(from, to)`` pairs — with one validator, :func:`validate_task_transition`, that the task service calls
before it writes a state change and its event in one transaction.

Rules the table encodes:

* ``completed``, ``cancelled`` and ``rolled-back`` are terminal: nothing leaves them. Undoing a change
  that already landed on the user's branch is a new task (or a ``git revert`` by the user), never an
  edit of the user's branch by codeflux, so ``completed → rolled-back`` is not allowed.
* Every other state can reach ``cancelled`` (rejecting a reviewed diff lands there too) and
  ``recovery-required`` (a crash, a lost worktree or a stale run can interrupt any open task).
* ``awaiting-authority → running`` follows a recorded decision on the pending tool request (allow or
  deny: a denial goes back to the model as the tool's result); the authority engine checks the decision.

The action matrix (:func:`describe_task_actions`) answers, for each state, which user actions are
available and — for the others — the reason the UI shows next to a disabled button, so an action never
fails only after a click. Reads (show, diff, patch, inspect) are always possible and not listed. The
matrix states what the *state* allows; the task service may still refuse an available action for a
finer reason (a stale diff identity, no pending approval), with its own error.

:func:`is_active_for_tools` answers the question the authority engine asks on every tool request: only
``running`` and ``validating`` may run tools that change anything. Every other state — including
``paused`` and ``awaiting-authority``, where work is suspended — denies every tool request except reads
inside the worktree. A request allowed while the task ran is re-checked when it is executed, so pausing
a task stops approved work that has not started yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Final, assert_never

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.ids import RepositoryId, TaskId

__all__ = [
    "AVAILABLE_TASK_ACTIONS",
    "TASK_ACTION_TARGETS",
    "TASK_TRANSITIONS",
    "TERMINAL_TASK_STATES",
    "Actor",
    "PatchKind",
    "TaskAction",
    "TaskActionAvailability",
    "TaskRecord",
    "TaskState",
    "available_task_actions",
    "describe_task_action",
    "describe_task_actions",
    "is_active_for_tools",
    "is_allowed_task_transition",
    "is_terminal",
    "next_task_states",
    "validate_task_transition",
]


class Actor(StrEnum):
    """Who made a change: a person, the headless policy (``--yes``) or codeflux itself."""

    USER = "user"
    HEADLESS_POLICY = "headless-policy"
    SYSTEM = "system"


class PatchKind(StrEnum):
    """Why a task's patch is kept in the database."""

    REJECTED = "rejected"  # the diff a person rejected
    PRESERVED = "preserved"  # work kept before a worktree goes (failure, recovery)


class TaskState(StrEnum):
    """The lifecycle states of a task (ARCHITECTURE §7)."""

    DRAFT = "draft"
    FORECASTING = "forecasting"
    AWAITING_PLAN_APPROVAL = "awaiting-plan-approval"
    READY = "ready"
    RUNNING = "running"
    PAUSED = "paused"
    AWAITING_AUTHORITY = "awaiting-authority"
    VALIDATING = "validating"
    AWAITING_REVIEW = "awaiting-review"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ROLLED_BACK = "rolled-back"
    RECOVERY_REQUIRED = "recovery-required"


TERMINAL_TASK_STATES: Final = frozenset({TaskState.COMPLETED, TaskState.CANCELLED, TaskState.ROLLED_BACK})

_S = TaskState

# The transitions each state allows besides the two that every open state allows (below).
_SPECIFIC_TRANSITIONS: Final[Mapping[TaskState, frozenset[TaskState]]] = MappingProxyType(
    {
        _S.DRAFT: frozenset({_S.FORECASTING}),
        _S.FORECASTING: frozenset({_S.AWAITING_PLAN_APPROVAL, _S.PAUSED, _S.FAILED}),
        # → forecasting: the plan was sent back with feedback; a new revision is drafted.
        _S.AWAITING_PLAN_APPROVAL: frozenset({_S.FORECASTING, _S.READY}),
        _S.READY: frozenset({_S.RUNNING, _S.PAUSED}),
        _S.RUNNING: frozenset({_S.PAUSED, _S.AWAITING_AUTHORITY, _S.VALIDATING, _S.FAILED}),
        # Resuming returns to where the work paused: planning, waiting to start, or the loop.
        _S.PAUSED: frozenset({_S.FORECASTING, _S.READY, _S.RUNNING}),
        _S.AWAITING_AUTHORITY: frozenset({_S.RUNNING, _S.PAUSED}),
        # → running: a gate sent work back to the loop (repair); → paused: pause works while checks run.
        _S.VALIDATING: frozenset({_S.RUNNING, _S.PAUSED, _S.AWAITING_REVIEW, _S.FAILED}),
        # → running: repair, a retry, or a reject with retry (the rejected patch is kept; cancelled is final, so a
        # task that tries again never passes through it); → completed: accept; → rolled-back: restore the
        # pre-change checkpoint.
        _S.AWAITING_REVIEW: frozenset({_S.RUNNING, _S.COMPLETED, _S.ROLLED_BACK}),
        _S.FAILED: frozenset({_S.READY}),
        _S.RECOVERY_REQUIRED: frozenset({_S.PAUSED, _S.READY, _S.FAILED, _S.ROLLED_BACK}),
        _S.COMPLETED: frozenset(),
        _S.CANCELLED: frozenset(),
        _S.ROLLED_BACK: frozenset(),
    }
)

_OPEN_STATES: Final = frozenset(TaskState) - TERMINAL_TASK_STATES

TASK_TRANSITIONS: Final[frozenset[tuple[TaskState, TaskState]]] = frozenset(
    {(source, target) for source, targets in _SPECIFIC_TRANSITIONS.items() for target in targets}
    | {(source, _S.CANCELLED) for source in _OPEN_STATES}
    | {(source, _S.RECOVERY_REQUIRED) for source in _OPEN_STATES if source is not _S.RECOVERY_REQUIRED}
)
"""Every allowed ``(from, to)`` change of a task's state; any other pair is refused."""


def is_terminal(state: TaskState) -> bool:
    """True for ``completed``, ``cancelled`` and ``rolled-back``: no transition leaves them."""
    return state in TERMINAL_TASK_STATES


def is_allowed_task_transition(from_state: TaskState, to_state: TaskState) -> bool:
    """True when the task state machine allows ``from_state → to_state``."""
    return (from_state, to_state) in TASK_TRANSITIONS


def next_task_states(state: TaskState) -> frozenset[TaskState]:
    """The states a task in ``state`` may move to (empty exactly for terminal states)."""
    return frozenset(target for source, target in TASK_TRANSITIONS if source is state)


def validate_task_transition(from_state: TaskState, to_state: TaskState) -> None:
    """Refuse a change of task state that the table does not allow (staying put is not a transition).

    Raises :class:`TransitionNotAllowedError` with ``machine="task"`` and both states.
    """
    if (from_state, to_state) not in TASK_TRANSITIONS:
        raise TransitionNotAllowedError(machine="task", from_state=from_state.value, to_state=to_state.value)


def is_active_for_tools(state: TaskState) -> bool:
    """True when a task in ``state`` may run tools beyond reads (writes, commands, anything that asks).

    ``running`` (the implementation loop) and ``validating`` (checks run commands in the worktree) are
    active. ``awaiting-authority`` is not: the task waits for a person, and only the decided request —
    re-checked once the task runs again — may go ahead.
    """
    match state:
        case TaskState.RUNNING | TaskState.VALIDATING:
            return True
        case (
            TaskState.DRAFT
            | TaskState.FORECASTING
            | TaskState.AWAITING_PLAN_APPROVAL
            | TaskState.READY
            | TaskState.PAUSED
            | TaskState.AWAITING_AUTHORITY
            | TaskState.AWAITING_REVIEW
            | TaskState.COMPLETED
            | TaskState.FAILED
            | TaskState.CANCELLED
            | TaskState.ROLLED_BACK
            | TaskState.RECOVERY_REQUIRED
        ):
            return False
        case _:
            assert_never(state)


class TaskAction(StrEnum):
    """What a person can ask of a task (UI buttons and CLI commands), besides reading it."""

    PLAN = "plan"
    APPROVE_PLAN = "approve-plan"
    SEND_BACK = "send-back"
    CHANGE_BUDGET = "change-budget"
    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    DECIDE_APPROVAL = "decide-approval"
    ACCEPT = "accept"
    REJECT = "reject"
    REPAIR = "repair"
    ROLLBACK = "rollback"
    RETRY = "retry"
    SAFE_RESUME = "safe-resume"
    RECONCILE = "reconcile"
    PRESERVE_PATCH = "preserve-patch"
    RECORD_OUTCOME = "record-outcome"
    ABANDON = "abandon"
    CANCEL = "cancel"


_A = TaskAction

AVAILABLE_TASK_ACTIONS: Final[Mapping[TaskState, frozenset[TaskAction]]] = MappingProxyType(
    {
        _S.DRAFT: frozenset({_A.PLAN, _A.CHANGE_BUDGET, _A.CANCEL}),
        _S.FORECASTING: frozenset({_A.PAUSE, _A.CANCEL}),
        _S.AWAITING_PLAN_APPROVAL: frozenset({_A.APPROVE_PLAN, _A.SEND_BACK, _A.CHANGE_BUDGET, _A.CANCEL}),
        _S.READY: frozenset({_A.START, _A.CHANGE_BUDGET, _A.CANCEL}),
        _S.RUNNING: frozenset({_A.PAUSE, _A.CANCEL}),
        _S.PAUSED: frozenset({_A.RESUME, _A.CHANGE_BUDGET, _A.CANCEL}),
        _S.AWAITING_AUTHORITY: frozenset({_A.DECIDE_APPROVAL, _A.PAUSE, _A.CANCEL}),
        _S.VALIDATING: frozenset({_A.PAUSE, _A.CANCEL}),
        _S.AWAITING_REVIEW: frozenset({_A.ACCEPT, _A.REJECT, _A.REPAIR, _A.ROLLBACK}),
        _S.COMPLETED: frozenset(),
        _S.FAILED: frozenset({_A.RETRY, _A.PRESERVE_PATCH, _A.CANCEL}),
        _S.CANCELLED: frozenset(),
        _S.ROLLED_BACK: frozenset(),
        _S.RECOVERY_REQUIRED: frozenset(
            {_A.SAFE_RESUME, _A.RECONCILE, _A.PRESERVE_PATCH, _A.RECORD_OUTCOME, _A.ABANDON}
        ),
    }
)
"""For every state, the actions a person may take in it; all others are shown disabled with a reason."""

TASK_ACTION_TARGETS: Final[Mapping[TaskAction, frozenset[TaskState]]] = MappingProxyType(
    {
        _A.PLAN: frozenset({_S.FORECASTING}),
        _A.APPROVE_PLAN: frozenset({_S.READY}),
        _A.SEND_BACK: frozenset({_S.FORECASTING}),
        _A.CHANGE_BUDGET: frozenset(),
        _A.START: frozenset({_S.RUNNING}),
        _A.PAUSE: frozenset({_S.PAUSED}),
        _A.RESUME: frozenset({_S.FORECASTING, _S.READY, _S.RUNNING}),
        _A.DECIDE_APPROVAL: frozenset({_S.RUNNING}),
        _A.ACCEPT: frozenset({_S.COMPLETED}),
        _A.REJECT: frozenset({_S.CANCELLED}),
        _A.REPAIR: frozenset({_S.RUNNING}),
        _A.ROLLBACK: frozenset({_S.ROLLED_BACK}),
        _A.RETRY: frozenset({_S.READY}),
        # Recovery goes through the ordinary resume afterwards: no bypass of its checks.
        _A.SAFE_RESUME: frozenset({_S.PAUSED}),
        _A.RECONCILE: frozenset({_S.PAUSED}),
        _A.PRESERVE_PATCH: frozenset(),
        _A.RECORD_OUTCOME: frozenset(),
        _A.ABANDON: frozenset({_S.CANCELLED}),
        _A.CANCEL: frozenset({_S.CANCELLED}),
    }
)
"""The states an action may move a task to; empty when it records something without a state change."""

_ACTION_NEEDS: Final[Mapping[TaskAction, str]] = MappingProxyType(
    {
        _A.PLAN: "a draft task",
        _A.APPROVE_PLAN: "a plan waiting for approval",
        _A.SEND_BACK: "a plan waiting for approval",
        _A.CHANGE_BUDGET: "a task that is not spending (draft, plan awaiting approval, ready or paused)",
        _A.START: "an approved plan that has not started",
        _A.PAUSE: "work in progress (planning, running, waiting for a decision or validating)",
        _A.RESUME: "a paused task",
        _A.DECIDE_APPROVAL: "a tool request waiting for a decision",
        _A.ACCEPT: "a finished diff awaiting review",
        _A.REJECT: "a finished diff awaiting review",
        _A.REPAIR: "a finished diff awaiting review",
        _A.ROLLBACK: "a finished diff awaiting review",
        _A.RETRY: "a failed task",
        _A.SAFE_RESUME: "a task that needs recovery",
        _A.RECONCILE: "a task that needs recovery",
        _A.PRESERVE_PATCH: "a failed task or one that needs recovery",
        _A.RECORD_OUTCOME: "a task that needs recovery after an effect whose outcome is unknown",
        _A.ABANDON: "a task that needs recovery (other open tasks are cancelled)",
        _A.CANCEL: "an open task",
    }
)

# Where a better way exists, the reason names it instead of the generic need.
_REASON_OVERRIDES: Final[Mapping[tuple[TaskState, TaskAction], str]] = MappingProxyType(
    {
        (_S.AWAITING_REVIEW, _A.CANCEL): "reject the diff instead: rejecting ends the task and keeps its patch",
        (_S.RECOVERY_REQUIRED, _A.CANCEL): "abandon the task instead, after choosing what to keep",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskActionAvailability:
    """Whether ``action`` is available; when it is not, ``reason`` is the sentence the UI shows."""

    action: TaskAction
    available: bool
    reason: str | None

    def __post_init__(self) -> None:
        if self.available and self.reason is not None:
            raise InvalidValueError(kind="task action availability", reason="an available action has no reason")
        if not self.available and not self.reason:
            raise InvalidValueError(kind="task action availability", reason="an unavailable action needs a reason")


def available_task_actions(state: TaskState) -> frozenset[TaskAction]:
    """The actions a person may take on a task in ``state`` (empty for terminal states)."""
    return AVAILABLE_TASK_ACTIONS[state]


def describe_task_action(state: TaskState, action: TaskAction) -> TaskActionAvailability:
    """Whether ``action`` is available in ``state``, and if not, why (one short, safe sentence)."""
    if action in AVAILABLE_TASK_ACTIONS[state]:
        return TaskActionAvailability(action=action, available=True, reason=None)
    if is_terminal(state):
        reason = f"the task is {state.value}, which is final; start a new task to change anything"
    elif (state, action) in _REASON_OVERRIDES:
        reason = _REASON_OVERRIDES[(state, action)]
    else:
        reason = f"{action.value} needs {_ACTION_NEEDS[action]}; the task is {state.value}"
    return TaskActionAvailability(action=action, available=False, reason=reason)


def describe_task_actions(state: TaskState) -> tuple[TaskActionAvailability, ...]:
    """Every action, in :class:`TaskAction` order, with its availability in ``state``."""
    return tuple(describe_task_action(state, action) for action in TaskAction)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """A task as the task service sees it. ``repository_id`` is None only for minimal tasks made by
    other services (tests, tools) before or outside the task service."""

    task_id: TaskId
    session_id: str
    repository_id: RepositoryId | None
    repository_root: Path
    worktree: Path
    base_revision: str | None
    title: str | None
    requirement: str | None
    state: TaskState
    revision: int
    created_at_us: int
    updated_at_us: int
