"""The checks a task passes, inside the transaction that changes it, before it may start or go on.

- **Run slots**: a task is *active* while ``running``, ``awaiting-authority`` or ``validating``. Becoming
  active from any other state needs a free slot: at most :data:`MAX_ACTIVE_TASKS` active tasks in all and
  at most one per repository. The check reads the active tasks in the same ``BEGIN IMMEDIATE``
  transaction that writes the change, so two concurrent starts cannot both pass; a refusal names the
  task holding the repository, or the four active ones. The schema enforces both limits again.
- **Approved plan**: becoming active, or ``ready``, needs the task's newest plan revision to carry an
  approval bound to its hash; any newer revision needs its own.
- **The user's checkout**: a first start needs the same repository (its identity), a branch to land on,
  no git operation in progress, and — when there are uncommitted changes — an acknowledgement of
  exactly the current list (by its hash).
- **Dedicated paths**: some transitions carry more than a state change (a plan, a decision, a run
  attempt) and only their own service method makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from codeflux.domain.errors import (
    CheckoutNotCleanError,
    DetachedHeadError,
    DirtyTreeNotAcknowledgedError,
    PlanNotApprovedError,
    RepositoryChangedError,
    TaskLimitReachedError,
    UsageError,
)
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store.database import ReadView
from codeflux.store.plans import PlanRevisionRow, latest_plan_revision, plan_decision
from codeflux.store.repositories import RepositoryRow
from codeflux.store.task_records import TaskRecord, tasks_in_states

__all__ = [
    "ACTIVE_TASK_STATES",
    "MAX_ACTIVE_TASKS",
    "is_active",
    "require_acknowledged_tree",
    "require_approved_plan",
    "require_entry_allowed",
    "require_landable_checkout",
    "require_run_slot",
    "require_same_repository",
]

MAX_ACTIVE_TASKS: Final = 4
ACTIVE_TASK_STATES: Final = frozenset({TaskState.RUNNING, TaskState.AWAITING_AUTHORITY, TaskState.VALIDATING})

_S = TaskState
_DEDICATED: Final[Mapping[tuple[TaskState, TaskState], str]] = MappingProxyType(
    {
        (_S.FORECASTING, _S.AWAITING_PLAN_APPROVAL): "record a plan revision",
        (_S.AWAITING_PLAN_APPROVAL, _S.READY): "approve the plan revision",
        (_S.AWAITING_PLAN_APPROVAL, _S.FORECASTING): "send the plan back with feedback",
        (_S.READY, _S.RUNNING): "start the run",
    }
)


def is_active(state: TaskState) -> bool:
    """True while a task holds a run slot (running, awaiting-authority, validating)."""
    return state in ACTIVE_TASK_STATES


def require_entry_allowed(view: ReadView, task: TaskRecord, to_state: TaskState, *, dedicated_ok: bool) -> None:
    """Refuse ``task.state → to_state`` unless the gates above allow it (the domain table was checked)."""
    way = _DEDICATED.get((task.state, to_state))
    if way is not None and not dedicated_ok:
        raise UsageError(f"task {task.task_id}: {task.state} → {to_state} happens only when you {way}")
    if to_state is TaskState.READY or (is_active(to_state) and not is_active(task.state)):
        require_approved_plan(view, task)
    if is_active(to_state) and not is_active(task.state):
        require_run_slot(view, task)


def require_approved_plan(view: ReadView, task: TaskRecord) -> PlanRevisionRow:
    """The task's newest plan revision, which must carry an approval; else :class:`PlanNotApprovedError`."""
    latest = latest_plan_revision(view, task.task_id)
    if latest is None:
        raise PlanNotApprovedError(task_id=task.task_id.value, revision=None)
    decision = plan_decision(view, task.task_id, latest.revision)
    if decision is None or not decision.approved or decision.sha256 != latest.sha256:
        raise PlanNotApprovedError(task_id=task.task_id.value, revision=latest.revision)
    return latest


def require_run_slot(view: ReadView, task: TaskRecord) -> None:
    """Refuse with :class:`TaskLimitReachedError` unless ``task`` may become active now."""
    others = [t for t in tasks_in_states(view, ACTIVE_TASK_STATES) if t.task_id != task.task_id]
    holders = [t for t in others if task.repository_id is not None and t.repository_id == task.repository_id]
    if holders:
        raise TaskLimitReachedError(task_id=task.task_id.value, limit="repository",
                                    holders=tuple(t.task_id.value for t in holders), maximum=1)
    if len(others) >= MAX_ACTIVE_TASKS:
        raise TaskLimitReachedError(task_id=task.task_id.value, limit="active-tasks",
                                    holders=tuple(t.task_id.value for t in others), maximum=MAX_ACTIVE_TASKS)


def require_same_repository(task: TaskRecord, repository: RepositoryRow, snapshot: RepositorySnapshot) -> None:
    """Refuse a checkout that is not the repository the task was created for."""
    if snapshot.identity != repository.identity:
        raise RepositoryChangedError(task_id=task.task_id.value, path=str(snapshot.root),
                                     expected=repository.identity, found=snapshot.identity)


def require_landable_checkout(snapshot: RepositorySnapshot) -> None:
    """Refuse a detached HEAD (no branch to land on) or a git operation in progress."""
    if snapshot.operations:  # first: a rebase also detaches HEAD, and finishing it is the fix
        raise CheckoutNotCleanError(paths=(), operations=tuple(str(op) for op in snapshot.operations))
    if snapshot.branch is None:
        raise DetachedHeadError(head=snapshot.head)


def require_acknowledged_tree(snapshot: RepositorySnapshot, acknowledged_hash: str | None) -> None:
    """Refuse uncommitted changes unless ``acknowledged_hash`` is exactly their current hash.

    A clean tree needs no acknowledgement. ``acknowledged_hash`` is None when nothing was acknowledged.
    """
    if snapshot.is_dirty and acknowledged_hash != snapshot.dirty_hash:
        raise DirtyTreeNotAcknowledgedError(path=str(snapshot.root), change_count=len(snapshot.changes),
                                            current_hash=snapshot.dirty_hash, acknowledged_hash=acknowledged_hash)
