"""Budgets of tasks: set a hard limit (compare-and-set), acknowledge charges, summarize, and resume or
stop a task its budget paused.

The rules (what a call reserves, how a reservation closes, what blocks a paid call, the figures shown)
are :mod:`codeflux.domain.budget`; the ledger's entries are written only by
:class:`~codeflux.coordinator.spending.ledger.BudgetLedger`, which the model gateway calls around every
call and this service calls to acknowledge charges. docs/money.md explains both to users.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codeflux.coordinator.spending.ledger import BudgetLedger, read_budget_summary
from codeflux.domain.budget import BudgetSummary, budget_limits_refusal, resume_refusal
from codeflux.domain.errors import ConflictError, InvalidValueError
from codeflux.domain.events import BudgetAcknowledged, BudgetSet
from codeflux.domain.ids import TaskId
from codeflux.domain.money import Money
from codeflux.domain.tasks import Actor, TaskState
from codeflux.store import money as rows
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import append_event
from codeflux.store.idempotency import run_idempotent
from codeflux.store.task_records import change_task_state
from codeflux.store.tasks import TaskRow, require_task

__all__ = ["BudgetService", "BudgetSummary"]


class BudgetService:
    """Sets limits (compare-and-set), acknowledges charges, summarizes, resumes or stops a paused task."""

    def __init__(self, db: Database, *, clock: Callable[[], int] = now_us) -> None:
        self._db = db
        self._clock = clock
        self._ledger = BudgetLedger(clock=clock)

    def summary(self, task_id: TaskId) -> BudgetSummary:
        return self._db.read(lambda view: read_budget_summary(view, task_id))

    def revision_of(self, task_id: TaskId) -> int | None:
        """The budget's current revision, or None when the task has no budget yet."""
        budget = self._db.read(lambda view: rows.read_budget(view, task_id))
        return None if budget is None else budget.revision

    def entries(self, task_id: TaskId) -> list[rows.LedgerEntryRow]:
        return self._db.read(lambda view: rows.budget_entries_of_task(view, task_id))

    def set_budget(
        self, task_id: TaskId, *, hard_limit: Money, expected_revision: int | None, idempotency_key: str,
        warning: Money | None = None, token_limit: int | None = None, allow_unknown_price: bool = False,
    ) -> BudgetSummary:  # fmt: skip
        """Create the budget (``expected_revision`` None) or change it from that revision. A limit below
        what is already spent and reserved is refused; so is a warning above the limit."""
        refusal = budget_limits_refusal(hard_limit=hard_limit, warning=warning, token_limit=token_limit)
        if refusal is not None:
            raise InvalidValueError(kind="budget", reason=refusal)

        def work(tx: Transaction) -> None:
            task = require_task(tx, task_id)

            def apply() -> dict[str, object]:
                at = self._clock()
                current = rows.read_budget(tx, task_id)
                if current is None and expected_revision is None:
                    rows.insert_budget(tx, task_id=task_id, hard_limit=hard_limit, warning=warning,
                                       token_limit=token_limit, allow_unknown_price=allow_unknown_price, at_us=at)
                else:
                    if current is not None and expected_revision is None:
                        raise ConflictError(f"task {task_id} already has a budget at revision {current.revision}; "
                                            "pass that revision to change it")
                    if current is not None and current.currency != hard_limit.currency:
                        raise InvalidValueError(kind="budget", reason=f"the budget is in {current.currency}")
                    summary = read_budget_summary(tx, task_id) if current is not None else None
                    if summary is not None and hard_limit < summary.committed_known:
                        committed = summary.committed_known
                        raise InvalidValueError(kind="budget", reason=f"{hard_limit} is below the {committed} "
                                                "already spent and reserved")
                    rows.change_budget(tx, task_id=task_id, expected_revision=expected_revision or 0,
                                       hard_limit=hard_limit, warning=warning, token_limit=token_limit,
                                       allow_unknown_price=allow_unknown_price, at_us=at)
                append_event(tx, session_id=task.session_id, event=BudgetSet(
                    task_id=task_id, hard_limit_minor=hard_limit.minor, currency=hard_limit.currency.code,
                    warning_minor=None if warning is None else warning.minor, token_limit=token_limit,
                    allow_unknown_price=allow_unknown_price,
                ))
                return {"task_id": task_id.value}

            run_idempotent(tx, scope=f"budget:{task_id.value}", key=idempotency_key, work=apply, request={
                "hard_limit_minor": hard_limit.minor, "currency": hard_limit.currency.code,
                "warning_minor": None if warning is None else warning.minor, "token_limit": token_limit,
                "allow_unknown_price": allow_unknown_price, "expected_revision": expected_revision,
            })

        self._db.write(work)
        return self.summary(task_id)

    def acknowledge(
        self, task_id: TaskId, *, expected_revision: int, entry_ids: Sequence[int] | None = None,
        acknowledged_by: str = "user", note: str | None = None,
    ) -> BudgetSummary:  # fmt: skip
        """Accept overruns and unknown charges (all pending ones when ``entry_ids`` is None), so paid
        calls may go on. An entry that is not a pending charge of this task is refused."""
        if acknowledged_by not in ("user", "headless-policy"):
            raise InvalidValueError(kind="acknowledgement", reason="a person or the headless policy acknowledges")

        def work(tx: Transaction) -> None:
            task = require_task(tx, task_id)
            budget = rows.require_budget(tx, task_id)
            chosen = self._ledger.acknowledge(tx, task_id=task_id, entry_ids=entry_ids,
                                              acknowledged_by=acknowledged_by, note=note)
            rows.change_budget(tx, task_id=task_id, expected_revision=expected_revision, hard_limit=budget.hard_limit,
                               warning=budget.warning, token_limit=budget.token_limit,
                               allow_unknown_price=budget.allow_unknown_price, at_us=self._clock())
            append_event(tx, session_id=task.session_id,
                         event=BudgetAcknowledged(task_id=task_id, entries=tuple(chosen), by=acknowledged_by))

        self._db.write(work)
        return self.summary(task_id)

    def resume_task(self, task_id: TaskId) -> TaskRow:
        """``paused`` → ``running`` once the budget no longer blocks (nothing awaits a decision and
        something is left); otherwise the refusal says what to do first."""

        def work(tx: Transaction) -> TaskRow:
            task = require_task(tx, task_id)
            refusal = resume_refusal(read_budget_summary(tx, task_id))
            if refusal is not None:
                raise InvalidValueError(kind="resume", reason=refusal)
            if task.state is not TaskState.PAUSED:
                raise InvalidValueError(kind="resume", reason=f"the task is {task.state}, not paused")
            return change_task_state(tx, task_id=task_id, expected_revision=task.revision, state=TaskState.RUNNING,
                                     reason="resumed after the budget allowed it", actor=Actor.USER)

        return self._db.write(work)

    def stop_task(self, task_id: TaskId) -> TaskRow:
        """``paused`` → ``cancelled``: the person stops the task instead of raising its limit."""

        def work(tx: Transaction) -> TaskRow:
            task = require_task(tx, task_id)
            if task.state is not TaskState.PAUSED:
                raise InvalidValueError(kind="stop", reason=f"the task is {task.state}, not paused")
            return change_task_state(tx, task_id=task_id, expected_revision=task.revision, state=TaskState.CANCELLED,
                                     reason="stopped while paused by its budget", actor=Actor.USER)

        return self._db.write(work)
