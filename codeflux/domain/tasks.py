"""Task states, and which of them may run tools that do more than read.

The fourteen states are the stored vocabulary of ``tasks.state`` (kebab-case, part of the database
contract). The transition table between them belongs to the task service and is not defined here; this
module only answers the question the authority engine asks on every tool request: *is this task active
enough to let a tool change anything?*

Only ``running`` and ``validating`` are. Every other state — including ``paused`` and
``awaiting-authority``, where work is suspended, and every state before a plan is approved or after the
run ended — denies every tool request except reads inside the worktree. A request that was allowed while
the task ran is re-checked when it is executed, so pausing a task stops approved work that has not
started yet.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never

__all__ = ["TaskState", "is_active_for_tools"]


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
