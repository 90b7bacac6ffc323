"""The budget ledger: per-task hard limits, reservations, settlements, acknowledgements — and prices in force.

Rules (the model gateway applies them around every call; docs/money.md explains them to users):

- **Reserve** a bound before a paid call: ``max_output_tokens`` × the highest output-side rate plus an
  input estimate (:func:`bound_input_tokens`) × the highest input-side rate, rounded *up* to the
  minor unit. No price, or no input or output rate, makes the bound unknown.
- **Close** each reservation exactly once (:func:`closing_moves`): settle the actual cost and release
  the rest; above the bound, settle the bound and record the rest as an *overrun*; when usage or price
  is unknown, charge the bound as an *unknown charge* (unknown itself when the bound was); when
  nothing was sent, release it.
- **Block**: an unacknowledged overrun or unknown charge blocks every further paid call until a person
  acknowledges it; a call whose bound does not fit in what is left (limit − spent − reserved), or
  whose token bound does not fit the token limit, is refused as the hard limit reached. A call whose
  bound is known to be 0 is not paid and is never blocked by money.
- **Unknown prices**: a call with an unknown bound is refused unless the person allowed unknown-price
  calls for the task; its charge is then recorded as unknown and acknowledged by that standing
  allowance, and the limit is checked against the known part only. Unknown is never shown as 0: a
  total with an unknown part is ``unknown (…)`` with its reasons and the known part.

Prices in force: the newest ``user`` revision of a model (``codeflux prices set``) wins; else the
shipped default (``codeflux.providers.prices``), recorded as a ``shipped`` revision the first time a
call is priced with it, so every request points at the exact rates it used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Final

from codeflux.domain.errors import ConflictError, InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.models import ModelRequest, ReasoningPart, TextPart, ToolCall, ToolResult
from codeflux.domain.money import Cost, Money, Rounding, UnknownCost
from codeflux.domain.pricing import Price, PriceComponent
from codeflux.domain.tasks import TaskState
from codeflux.store import money as rows
from codeflux.store.database import Database, ReadView, Transaction, now_us
from codeflux.store.events import append_event
from codeflux.store.idempotency import run_idempotent
from codeflux.store.task_records import change_task_state
from codeflux.store.tasks import TaskRow, require_task

__all__ = [
    "BudgetRefusal",
    "BudgetRefusalKind",
    "BudgetService",
    "BudgetSummary",
    "LedgerKind",
    "LedgerMove",
    "bound_input_tokens",
    "check_paid_call",
    "closing_moves",
    "read_budget_summary",
    "reservation_bound",
    "summarize_budget",
]

_MESSAGE_OVERHEAD_TOKENS: Final = 8
_REQUEST_OVERHEAD_TOKENS: Final = 32
_INPUT_SIDE: Final = (PriceComponent.INPUT, PriceComponent.CACHE_READ, PriceComponent.CACHE_WRITE)
_OUTPUT_SIDE: Final = (PriceComponent.OUTPUT, PriceComponent.REASONING)


class LedgerKind(StrEnum):
    RESERVE = "reserve"
    SETTLE = "settle"
    RELEASE = "release"
    OVERRUN = "overrun"
    UNKNOWN_CHARGE = "unknown-charge"


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerMove:
    """One entry to append: ``amount_minor`` None is unknown (then ``reason`` says why)."""

    kind: LedgerKind
    amount_minor: int | None
    reason: str | None = None


def bound_input_tokens(request: ModelRequest) -> int:
    """An upper estimate of the request's input tokens: its UTF-8 bytes plus a fixed overhead per message.

    No tokenizer packs more than one token into a byte of text, so bytes bound the text's tokens; the
    overhead covers role and formatting tokens. It is an estimate, not a guarantee: a provider that
    reports more is charged in full and the excess recorded as an overrun.
    """
    size = len(request.system.encode()) + _REQUEST_OVERHEAD_TOKENS
    for tool in request.tools:
        size += len(tool.name.encode()) + len(tool.description.encode()) + len(tool.input_schema_json.encode())
    for message in request.messages:
        size += _MESSAGE_OVERHEAD_TOKENS + sum(_part_bytes(part) for part in message.parts)
    return size


def _part_bytes(part: object) -> int:
    if isinstance(part, TextPart):
        return len(part.text.encode())
    if isinstance(part, ReasoningPart):
        return len(part.text.encode()) + len(part.signature.encode())
    if isinstance(part, ToolCall):
        return len(part.call_id.encode()) + len(part.name.encode()) + len(part.arguments_json.encode())
    if isinstance(part, ToolResult):
        return len(part.call_id.encode()) + len(part.content.encode())
    return 0


def reservation_bound(price: Price | None, *, input_tokens: int, max_output_tokens: int, model: str) -> Cost:
    """What to reserve for one call, rounded up; unknown without a price or an input/output rate."""
    if price is None:
        return UnknownCost.because(f"no price for model {model}")
    missing = [c.value for c in (PriceComponent.INPUT, PriceComponent.OUTPUT) if price.rate(c) is None]
    if missing:
        return UnknownCost.because(f"no {' or '.join(missing)} price for model {model}")
    input_rate = max(rate for c in _INPUT_SIDE if (rate := price.rate(c)) is not None)
    output_rate = max(rate for c in _OUTPUT_SIDE if (rate := price.rate(c)) is not None)
    exact = Fraction(input_tokens) * input_rate + Fraction(max_output_tokens) * output_rate
    return Money.from_exact_minor(exact, currency=price.currency, rounding=Rounding.UP)


def closing_moves(*, reserved_minor: int | None, actual: Cost | None) -> tuple[LedgerMove, ...]:
    """The entries that close one reservation. ``actual`` None: nothing was sent; an
    :class:`UnknownCost`: it may have been billed and the amount is unknown; :class:`Money`: priced usage."""
    if actual is None:
        reason = None if reserved_minor is not None else "the reservation was unknown; nothing was sent"
        return (LedgerMove(kind=LedgerKind.RELEASE, amount_minor=reserved_minor, reason=reason),)
    if isinstance(actual, UnknownCost):
        why = "; ".join(actual.reasons)
        text = f"charged the reserved bound: {why}" if reserved_minor is not None else why
        return (LedgerMove(kind=LedgerKind.UNKNOWN_CHARGE, amount_minor=reserved_minor, reason=text[:1024]),)
    if reserved_minor is None:
        return (LedgerMove(kind=LedgerKind.SETTLE, amount_minor=actual.minor),
                LedgerMove(kind=LedgerKind.RELEASE, amount_minor=None, reason="the reservation was unknown"))
    if actual.minor <= reserved_minor:
        rest = reserved_minor - actual.minor
        settle = LedgerMove(kind=LedgerKind.SETTLE, amount_minor=actual.minor)
        return (settle, LedgerMove(kind=LedgerKind.RELEASE, amount_minor=rest)) if rest else (settle,)
    over = actual.minor - reserved_minor
    reserved = Money(minor=reserved_minor, currency=actual.currency)
    return (LedgerMove(kind=LedgerKind.SETTLE, amount_minor=reserved_minor),
            LedgerMove(kind=LedgerKind.OVERRUN, amount_minor=over,
                       reason=f"billed {actual} against a reservation of {reserved}"))


# ─── summaries and the call check ────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSummary:
    """Exact figures of one task's budget. ``spent``, ``reserved`` and ``remaining`` are unknown when
    any part of them is; ``*_known`` are their known parts."""

    task_id: TaskId
    revision: int
    hard_limit: Money
    warning: Money | None
    token_limit: int | None
    allow_unknown_price: bool
    spent: Cost
    reserved: Cost
    remaining: Cost
    spent_known: Money
    reserved_known: Money
    open_requests: int
    charged_at_bound: int
    charged_at_bound_amount: Money
    overruns: Money
    pending_decisions: tuple[int, ...]
    tokens_used: int
    tokens_reserved: int

    def lines(self) -> list[str]:
        """The figures as lines for people; unknown is never written as 0."""
        limit = "none" if self.token_limit is None else f"{self.token_limit:,}"
        lines = [
            f"budget of task {self.task_id} (revision {self.revision})",
            f"  hard limit   {self.hard_limit}" + (f"   warning at {self.warning}" if self.warning else ""),
            f"  spent        {self.spent}",
            f"  reserved     {self.reserved}   ({self.open_requests} call(s) not settled)",
            f"  remaining    {self.remaining}",
            f"  charged at the reserved bound (usage unknown): {self.charged_at_bound_amount}"
            f" over {self.charged_at_bound} call(s)",
            f"  overruns     {self.overruns}",
            f"  tokens       used {self.tokens_used:,}, reserved {self.tokens_reserved:,}, limit {limit}",
        ]
        if self.pending_decisions:
            ids = ", ".join(str(entry) for entry in self.pending_decisions)
            lines.append(f"  awaiting a decision: ledger entries {ids} (acknowledge them to continue)")
        if self.allow_unknown_price:
            lines.append("  calls at an unknown price are allowed; their charges stay unknown")
        return lines


def summarize_budget(budget: rows.BudgetRow, totals: rows.LedgerTotals) -> BudgetSummary:
    currency = budget.currency
    spent_known = Money(minor=totals.spent_minor, currency=currency)
    reserved_known = Money(minor=totals.reserved_minor, currency=currency)
    spent: Cost = spent_known
    if totals.spent_unknown:
        spent = UnknownCost.because(f"{totals.spent_unknown} charge(s) of unknown amount; known part {spent_known}")
    reserved: Cost = reserved_known
    if totals.reserved_unknown:
        reserved = UnknownCost.because(
            f"{totals.reserved_unknown} reservation(s) of unknown amount; known part {reserved_known}"
        )
    return BudgetSummary(
        task_id=budget.task_id, revision=budget.revision, hard_limit=budget.hard_limit, warning=budget.warning,
        token_limit=budget.token_limit, allow_unknown_price=budget.allow_unknown_price, spent=spent,
        reserved=reserved, remaining=budget.hard_limit - spent - reserved, spent_known=spent_known,
        reserved_known=reserved_known, open_requests=totals.open_requests,
        charged_at_bound=totals.charged_at_bound,
        charged_at_bound_amount=Money(minor=totals.charged_at_bound_minor, currency=currency),
        overruns=Money(minor=totals.overrun_minor, currency=currency), pending_decisions=totals.pending_decisions,
        tokens_used=totals.tokens_used, tokens_reserved=totals.tokens_reserved,
    )  # fmt: skip


class BudgetRefusalKind(StrEnum):
    EXHAUSTED = "exhausted"  # the hard limit (money or tokens) is reached
    DECISION = "decision"  # an unknown price or an unacknowledged charge waits for a person


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRefusal:
    kind: BudgetRefusalKind
    reason: str


def check_paid_call(summary: BudgetSummary, *, bound: Cost, tokens: int) -> BudgetRefusal | None:
    """Why a call with reservation ``bound`` and token bound ``tokens`` may not start now, or None."""
    paid = not (isinstance(bound, Money) and bound.minor == 0)
    if paid and summary.pending_decisions:
        count = len(summary.pending_decisions)
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION,
                             reason=f"{count} overrun(s) or unknown charge(s) await acknowledgement")
    if isinstance(bound, UnknownCost) and not summary.allow_unknown_price:
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION,
                             reason=f"the call's cost cannot be bounded ({'; '.join(bound.reasons)}); set a price "
                                    "or allow unknown-price calls for this task")
    if isinstance(bound, Money) and bound.currency != summary.hard_limit.currency:
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION,
                             reason=f"the price is in {bound.currency.code}; the budget is in "
                                    f"{summary.hard_limit.currency.code}")
    known = bound if isinstance(bound, Money) else Money.zero(summary.hard_limit.currency)
    committed = summary.spent_known + summary.reserved_known
    if paid and committed + known > summary.hard_limit:
        left = summary.hard_limit - committed
        return BudgetRefusal(kind=BudgetRefusalKind.EXHAUSTED,
                             reason=f"the next call reserves {known} and {left} is left of {summary.hard_limit}")
    if summary.token_limit is not None and summary.tokens_used + summary.tokens_reserved + tokens > summary.token_limit:
        return BudgetRefusal(kind=BudgetRefusalKind.EXHAUSTED,
                             reason=f"the next call may use {tokens:,} tokens; {summary.tokens_used:,} used and "
                                    f"{summary.tokens_reserved:,} reserved of {summary.token_limit:,}")
    return None


def read_budget_summary(view: ReadView, task_id: TaskId) -> BudgetSummary:
    return summarize_budget(rows.require_budget(view, task_id), rows.ledger_totals(view, task_id))


# ─── the service ─────────────────────────────────────────────────────────────────────────────────


class BudgetService:
    """Sets limits (compare-and-set), acknowledges charges, summarizes, resumes or stops a paused task."""

    def __init__(self, db: Database, *, clock: Callable[[], int] = now_us) -> None:
        self._db = db
        self._clock = clock

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
        if warning is not None and warning > hard_limit:
            raise InvalidValueError(kind="budget", reason="the warning threshold is above the hard limit")
        if token_limit is not None and token_limit < 0:
            raise InvalidValueError(kind="budget", reason="the token limit cannot be negative")
        if hard_limit.minor < 0:
            raise InvalidValueError(kind="budget", reason="the hard limit cannot be negative")

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
                    if summary is not None and hard_limit < summary.spent_known + summary.reserved_known:
                        committed = summary.spent_known + summary.reserved_known
                        raise InvalidValueError(kind="budget", reason=f"{hard_limit} is below the {committed} "
                                                "already spent and reserved")
                    rows.change_budget(tx, task_id=task_id, expected_revision=expected_revision or 0,
                                       hard_limit=hard_limit, warning=warning, token_limit=token_limit,
                                       allow_unknown_price=allow_unknown_price, at_us=at)
                append_event(tx, session_id=task.session_id, kind="budget-set", payload={
                    "task_id": task_id.value, "hard_limit_minor": hard_limit.minor,
                    "currency": hard_limit.currency.code, "warning_minor": None if warning is None else warning.minor,
                    "token_limit": token_limit, "allow_unknown_price": allow_unknown_price,
                })
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
            pending = rows.ledger_totals(tx, task_id).pending_decisions
            chosen = pending if entry_ids is None else tuple(entry_ids)
            unknown = [entry for entry in chosen if entry not in pending]
            if unknown:
                raise InvalidValueError(kind="acknowledgement",
                                        reason=f"ledger entry {unknown[0]} is not a pending charge of this task")
            at = self._clock()
            rows.change_budget(tx, task_id=task_id, expected_revision=expected_revision, hard_limit=budget.hard_limit,
                               warning=budget.warning, token_limit=budget.token_limit,
                               allow_unknown_price=budget.allow_unknown_price, at_us=at)
            for entry in chosen:
                rows.insert_acknowledgement(tx, task_id=task_id, entry_id=entry, acknowledged_by=acknowledged_by,
                                            note=note, at_us=at)
            append_event(tx, session_id=task.session_id, kind="budget-acknowledged",
                         payload={"task_id": task_id.value, "entries": list(chosen), "by": acknowledged_by})

        self._db.write(work)
        return self.summary(task_id)

    def resume_task(self, task_id: TaskId) -> TaskRow:
        """``paused`` → ``running`` once the budget no longer blocks (nothing awaits a decision and
        something is left); otherwise the refusal says what to do first."""

        def work(tx: Transaction) -> TaskRow:
            task = require_task(tx, task_id)
            summary = read_budget_summary(tx, task_id)
            if summary.pending_decisions:
                raise InvalidValueError(kind="resume", reason="acknowledge the pending charges first")
            if summary.spent_known + summary.reserved_known >= summary.hard_limit:
                raise InvalidValueError(kind="resume", reason="nothing is left of the hard limit; raise it first")
            if task.state is not TaskState.PAUSED:
                raise InvalidValueError(kind="resume", reason=f"the task is {task.state}, not paused")
            return change_task_state(tx, task_id=task_id, expected_revision=task.revision, state=TaskState.RUNNING,
                                     reason="resumed after the budget allowed it", actor="user")

        return self._db.write(work)

    def stop_task(self, task_id: TaskId) -> TaskRow:
        """``paused`` → ``cancelled``: the person stops the task instead of raising its limit."""

        def work(tx: Transaction) -> TaskRow:
            task = require_task(tx, task_id)
            if task.state is not TaskState.PAUSED:
                raise InvalidValueError(kind="stop", reason=f"the task is {task.state}, not paused")
            return change_task_state(tx, task_id=task_id, expected_revision=task.revision, state=TaskState.CANCELLED,
                                     reason="stopped while paused by its budget", actor="user")

        return self._db.write(work)
