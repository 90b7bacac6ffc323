"""``BudgetService``: a task's hard budget as ``codeflux budget`` manages it.

* ``GetBudget`` — the exact figures (limit, spent, reserved, remaining; unknown is never written as 0) and,
  with ``entries``, every ledger entry.
* ``ChangeBudget`` — creates the budget or changes its limits; compare-and-set on the budget's revision
  (``revision`` 0 = the current one). Amounts are exact decimals (:meth:`Money.parse_decimal`).
* ``AcknowledgeCharges`` — accepts overruns and unknown charges (all pending ones when no entry is named).
* ``ResumeAfterBudget`` / ``StopForBudget`` — continue or cancel a task paused by its budget; a stopped
  task's worktree is disposed of as ``CancelTask`` does.
* ``ApproveRung`` — allows spending on a ladder rung that asks first (``capable:max``) in this task.

Every reply is a :class:`BudgetReport` with the task's state, so the terminal prints one view whatever
the call was. The browser sets a budget through ``TaskService.SetBudget``; both end in
:class:`~codeflux.coordinator.spending.budget.BudgetService`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.model_approvals import approve_ladder_rung
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Rung
from codeflux.domain.money import USD, Cost, Currency, Money, UnknownCost
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of, parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.tasks import runs_of
from codeflux.services.views import budget_view, maybe_money, task_service

__all__ = ["budget_report", "methods"]

_SERVICE: Final = "BudgetService"


def budget_report(app: CoordinatorApp, task_id: TaskId, *, entries: bool = False,
                  outcome: str = "") -> pb.BudgetReport:
    """The task's budget as every BudgetService reply carries it."""
    state = task_service(app).show(task_id).task.state
    report = pb.BudgetReport(task_id=task_id.value, task_state=state.value, budget=budget_view(app, task_id),
                             outcome=outcome)
    if entries:
        for entry in BudgetService(app.db).entries(task_id):
            amount: Cost = (UnknownCost.because(entry.reason or "the amount is unknown")
                            if entry.amount_minor is None else Money(minor=entry.amount_minor, currency=entry.currency))
            report.entries.append(pb.LedgerEntryView(
                entry_id=entry.entry_id, request_id=entry.request_id, kind=entry.kind.value, amount=maybe_money(amount),
                reason=entry.reason or "", acknowledged=entry.acknowledged))
    return report


def _amount(text: str, currency: Currency, *, kind: str) -> Money:
    if not text:
        raise InvalidValueError(kind=kind, reason="give an amount such as 5.00")
    return Money.parse_decimal(text, currency=currency)


def _change(app: CoordinatorApp, task_id: TaskId, request: pb.ChangeBudgetRequest, key: str) -> pb.BudgetReport:
    budgets = BudgetService(app.db)
    currency = Currency.parse(request.currency) if request.currency else USD
    limit = _amount(request.hard_limit, currency, kind="hard limit")
    warning = _amount(request.warning, currency, kind="warning") if request.warning else None
    if request.revision < 0:
        raise InvalidValueError(kind="budget revision", reason="must not be negative")
    revision = request.revision or budgets.revision_of(task_id)
    budgets.set_budget(task_id, hard_limit=limit, warning=warning,
                       token_limit=request.token_limit if request.token_limit_set else None,
                       allow_unknown_price=request.allow_unknown_price, expected_revision=revision,
                       idempotency_key=key)
    return budget_report(app, task_id)


def _acknowledge(app: CoordinatorApp, task_id: TaskId, request: pb.AcknowledgeChargesRequest) -> pb.BudgetReport:
    budgets = BudgetService(app.db)
    if request.revision < 0:
        raise InvalidValueError(kind="budget revision", reason="must not be negative")
    revision = request.revision or budgets.summary(task_id).revision
    budgets.acknowledge(task_id, expected_revision=revision, entry_ids=list(request.entry_ids) or None)
    return budget_report(app, task_id)


def _resume(app: CoordinatorApp, task_id: TaskId) -> pb.BudgetReport:
    task = BudgetService(app.db).resume_task(task_id)
    return budget_report(app, task_id, outcome=f"task {task_id}: {task.state}")


def _stop(app: CoordinatorApp, task_id: TaskId) -> pb.BudgetReport:
    task = BudgetService(app.db).stop_task(task_id)
    runs_of(app).after_stop(task_id)
    return budget_report(app, task_id, outcome=f"task {task_id}: {task.state}")


def _approve_rung(app: CoordinatorApp, task_id: TaskId, request: pb.ApproveRungRequest) -> pb.BudgetReport:
    rung = Rung.parse(request.rung)
    approve_ladder_rung(app.db, task_id=task_id, rung=rung)
    return budget_report(app, task_id, outcome=f"task {task_id}: spending on {rung} is allowed; the gateway will no "
                                               "longer stop before it")


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def mutating(name: str, request_type: type[Message],
                 work: Callable[[TaskId, Message, str], pb.BudgetReport]) -> UnaryMethod[Message, Message]:
        def call(ctx: CallContext, request: Message) -> Message:
            mutation = mutation_of(ctx, name, getattr(request, "control"))  # noqa: B009 (every one has it)
            task_id = parse_task_id(getattr(request, "task_id"))  # noqa: B009
            return ledger.run(mutation, request, pb.BudgetReport, lambda: work(task_id, request, mutation.key))

        return UnaryMethod(name=method_name(_SERVICE, name), request_type=request_type,
                           response_type=pb.BudgetReport, handler=call, mutating=True)

    def get(ctx: CallContext, request: pb.GetBudgetRequest) -> pb.BudgetReport:
        return budget_report(app, parse_task_id(request.task_id), entries=request.entries)

    return [
        UnaryMethod(name=method_name(_SERVICE, "GetBudget"), request_type=pb.GetBudgetRequest,
                    response_type=pb.BudgetReport, handler=get),
        mutating("ChangeBudget", pb.ChangeBudgetRequest,
                 lambda task_id, request, key: _change(app, task_id, request, key)),
        mutating("AcknowledgeCharges", pb.AcknowledgeChargesRequest,
                 lambda task_id, request, key: _acknowledge(app, task_id, request)),
        mutating("ResumeAfterBudget", pb.BudgetTaskRequest, lambda task_id, request, key: _resume(app, task_id)),
        mutating("StopForBudget", pb.BudgetTaskRequest, lambda task_id, request, key: _stop(app, task_id)),
        mutating("ApproveRung", pb.ApproveRungRequest,
                 lambda task_id, request, key: _approve_rung(app, task_id, request)),
    ]
