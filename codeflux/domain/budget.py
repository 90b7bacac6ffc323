"""Budget rules: what a call reserves, how a reservation closes, what blocks a paid call, and the figures
a person reads. Pure: the ledger (``codeflux.coordinator.spending.ledger``) applies these rules to stored
entries; docs/money.md explains them to users.

- **Reserve** a bound before a paid call: ``max_output_tokens`` × the highest output-side rate plus an
  input estimate (:func:`bound_input_tokens`, a calibrated token bound) × the rate the input is billed
  at — the input rate, or a cache read's if that is higher, and the cache-write rate only for a call
  that asks the provider to write a cache — rounded *up* to the minor unit. No price, or no input or
  output rate, makes the bound unknown (:func:`reservation_bound`).
- **Close** each reservation exactly once (:func:`closing_moves`): settle the actual cost and release
  the rest; above the bound, settle the bound and record the rest as an *overrun*; when usage or price
  is unknown, charge the bound as an *unknown charge* (unknown itself when the bound was); when
  nothing was sent, release it.
- **Block** (:func:`check_paid_call`): an unacknowledged overrun or unknown charge blocks every further
  paid call until a person acknowledges it; a call whose bound does not fit in what is left
  (limit − spent − reserved), or whose token bound does not fit the token limit, is refused as the hard
  limit reached. A call whose bound is known to be 0 is not paid and is never blocked by money.
- **Unknown prices**: a call with an unknown bound is refused unless the person allowed unknown-price
  calls for the task; its charge is then recorded as unknown and acknowledged by that standing
  allowance, and the limit is checked against the known part only. Unknown is never shown as 0: a
  total with an unknown part is ``unknown (…)`` with its reasons and the known part
  (:func:`summarize_budget`).
- **Warn** once, on the charge that brings the known spend from below the warning threshold to or above
  it (:func:`crosses_warning`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Final

from codeflux.domain.ids import TaskId
from codeflux.domain.models import ModelRequest, ReasoningPart, TextPart, ToolCall, ToolResult
from codeflux.domain.money import Cost, Currency, Money, UnknownCost
from codeflux.domain.pricing import Price, PriceComponent
from codeflux.domain.token_estimate import estimate_text_tokens

__all__ = [
    "Budget",
    "BudgetRefusal",
    "BudgetRefusalCause",
    "BudgetRefusalKind",
    "BudgetSummary",
    "LedgerEntryRow",
    "LedgerKind",
    "LedgerMove",
    "LedgerTotals",
    "bound_input_tokens",
    "budget_limits_refusal",
    "charged_by",
    "check_paid_call",
    "closing_moves",
    "crosses_warning",
    "is_paid",
    "overrun_of",
    "reservation_bound",
    "reserve_move",
    "resume_refusal",
    "summarize_budget",
]

_MESSAGE_OVERHEAD_TOKENS: Final = 8
_REQUEST_OVERHEAD_TOKENS: Final = 32
_TOOL_OVERHEAD_TOKENS: Final = 8  # the wrapper around each tool definition
# The system prompt a provider adds when tools are offered: Anthropic documents 346 tokens (tool choice
# "auto"/"none", current models; the "Tool use" pricing table), the largest published figure.
_TOOL_USE_PROMPT_TOKENS: Final = 346
_REASON_LIMIT: Final = 1024  # what the ledger keeps of a reason
_INPUT_SIDE: Final = (PriceComponent.INPUT, PriceComponent.CACHE_READ)
_CACHING_INPUT_SIDE: Final = (*_INPUT_SIDE, PriceComponent.CACHE_WRITE)
_OUTPUT_SIDE: Final = (PriceComponent.OUTPUT, PriceComponent.REASONING)


class LedgerKind(StrEnum):
    RESERVE = "reserve"
    SETTLE = "settle"
    RELEASE = "release"
    OVERRUN = "overrun"
    UNKNOWN_CHARGE = "unknown-charge"


_CHARGES: Final = frozenset({LedgerKind.SETTLE, LedgerKind.OVERRUN, LedgerKind.UNKNOWN_CHARGE})


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerMove:
    """One entry to append: ``amount_minor`` None is unknown (then ``reason`` says why)."""

    kind: LedgerKind
    amount_minor: int | None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """A task's hard budget: limit and warning in its currency, an optional token limit, and whether the
    person allowed calls at an unknown price."""

    task_id: TaskId
    hard_limit: Money
    warning: Money | None
    token_limit: int | None
    allow_unknown_price: bool
    revision: int
    created_at_us: int
    updated_at_us: int

    @property
    def currency(self) -> Currency:
        return self.hard_limit.currency


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerTotals:
    """Aggregates of a task's ledger in minor units. ``*_unknown`` counts entries with an unknown amount."""

    reserved_minor: int
    reserved_unknown: int
    open_requests: int
    spent_minor: int
    spent_unknown: int
    charged_at_bound: int
    charged_at_bound_minor: int
    overrun_minor: int
    pending_decisions: tuple[int, ...]
    tokens_used: int
    tokens_reserved: int


# ─── reserving and closing ───────────────────────────────────────────────────────────────────────


def bound_input_tokens(request: ModelRequest) -> int:
    """An upper estimate of the request's input tokens: every text's calibrated token bound
    (:func:`~codeflux.domain.token_estimate.estimate_text_tokens`) plus fixed overheads for the request,
    each message, each tool definition and the tool-use prompt providers add when tools are offered.

    It is an estimate, not a guarantee: a provider that reports more is charged in full and the excess
    recorded as an overrun; the reported usage, never this bound, is what a settled call costs.

    A loop sends its conversation again on every turn, so each text's estimate is remembered
    (:func:`_text_tokens`): a turn estimates only what is new since the last one.
    """
    size = _text_tokens(request.system) + _REQUEST_OVERHEAD_TOKENS
    if request.tools:
        size += _TOOL_USE_PROMPT_TOKENS
    for tool in request.tools:
        size += _TOOL_OVERHEAD_TOKENS + _text_tokens(tool.name) + _text_tokens(tool.description)
        size += _text_tokens(tool.input_schema_json)
    for message in request.messages:
        size += _MESSAGE_OVERHEAD_TOKENS + sum(_part_tokens(part) for part in message.parts)
    return size


def _part_tokens(part: object) -> int:
    if isinstance(part, TextPart):
        return _text_tokens(part.text)
    if isinstance(part, ReasoningPart):
        return _text_tokens(part.text) + _text_tokens(part.signature)
    if isinstance(part, ToolCall):
        return sum(_text_tokens(text) for text in (part.call_id, part.name, part.arguments_json))
    if isinstance(part, ToolResult):
        return _text_tokens(part.call_id) + _text_tokens(part.content)
    return 0


_CACHED_TEXT_CHARS: Final = (64, 1 << 16)
"""Texts this long (characters, inclusive range) have their estimate remembered among :data:`_CACHED_TEXTS`; a
shorter one among :data:`_CACHED_SHORT_TEXTS` of its own (so the many short texts of a conversation — tool names,
call ids — never push a long one out); a longer one is not kept alive by a cache."""
_CACHED_TEXTS: Final = 512
"""How many texts are remembered: at most 512 × 64 Ki characters (≈ 32 MiB of text, 128 MiB at worst for text
outside Latin-1) stay alive in a long-running coordinator; a loop's conversation is far fewer texts than this."""
_CACHED_SHORT_TEXTS: Final = 4096
"""How many short texts are remembered (under 64 characters each: ≈ 1 MiB at worst). Estimating even a short text
costs ≈ 5 µs (the estimate's fixed work), a look-up ≈ 0.1 µs, and a request's system prompt and tool names are sent
again on every call."""


@lru_cache(maxsize=_CACHED_TEXTS)
def _cached_text_tokens(text: str) -> int:
    return estimate_text_tokens(text)


@lru_cache(maxsize=_CACHED_SHORT_TEXTS)
def _cached_short_text_tokens(text: str) -> int:
    return estimate_text_tokens(text)


def _text_tokens(text: str) -> int:
    """:func:`estimate_text_tokens`, remembered for the last 512 texts of 64 characters to 64 Ki and the last
    4,096 shorter ones (the estimate is a pure function of the text)."""
    low, high = _CACHED_TEXT_CHARS
    size = len(text)
    if size < low:
        return _cached_short_text_tokens(text)
    return _cached_text_tokens(text) if size <= high else estimate_text_tokens(text)


def reservation_bound(
    price: Price | None, *, input_tokens: int, max_output_tokens: int, model: str, writes_cache: bool
) -> Cost:
    """What to reserve for one call, rounded up; unknown without a price or an input/output rate.

    The input is reserved at the highest rate it can be billed at on this call: the input rate or the
    cache-read rate (a provider may serve any of it from its cache), and the cache-write rate only when
    ``writes_cache`` (the call asks the provider to write a cache). Such a call without a cache-write rate
    cannot be bounded (its writes could cost anything), so its bound is unknown, like one without an input
    or output rate.
    """
    if price is None:
        return UnknownCost.because(f"no price for model {model}")
    needed = (PriceComponent.INPUT, PriceComponent.OUTPUT, *((PriceComponent.CACHE_WRITE,) if writes_cache else ()))
    missing = [c.value for c in needed if price.rate(c) is None]
    if missing:
        return UnknownCost.because(f"no {' or '.join(missing)} price for model {model}")
    sides = _CACHING_INPUT_SIDE if writes_cache else _INPUT_SIDE
    input_rate = max(rate for c in sides if (rate := price.rate(c)) is not None)
    output_rate = max(rate for c in _OUTPUT_SIDE if (rate := price.rate(c)) is not None)
    # input_tokens × input_rate + max_output_tokens × output_rate rounded up, over the product of the rates'
    # denominators in integers: the same exact amount (Fraction's products and sum cost ≈ 10 µs on every model call)
    numerator = (input_tokens * input_rate.numerator * output_rate.denominator
                 + max_output_tokens * output_rate.numerator * input_rate.denominator)
    return Money(minor=-(-numerator // (input_rate.denominator * output_rate.denominator)), currency=price.currency)


def reserve_move(bound: Cost) -> LedgerMove:
    """The ``reserve`` entry of a call with reservation ``bound``: unknown keeps its reasons, never 0."""
    if isinstance(bound, Money):
        return LedgerMove(kind=LedgerKind.RESERVE, amount_minor=bound.minor)
    return LedgerMove(kind=LedgerKind.RESERVE, amount_minor=None, reason="; ".join(bound.reasons)[:_REASON_LIMIT])


def closing_moves(*, reserved_minor: int | None, actual: Cost | None) -> tuple[LedgerMove, ...]:
    """The entries that close one reservation. ``actual`` None: nothing was sent; an
    :class:`UnknownCost`: it may have been billed and the amount is unknown; :class:`Money`: priced usage."""
    if actual is None:
        reason = None if reserved_minor is not None else "the reservation was unknown; nothing was sent"
        return (LedgerMove(kind=LedgerKind.RELEASE, amount_minor=reserved_minor, reason=reason),)
    if isinstance(actual, UnknownCost):
        why = "; ".join(actual.reasons)
        text = f"charged the reserved bound: {why}" if reserved_minor is not None else why
        return (LedgerMove(kind=LedgerKind.UNKNOWN_CHARGE, amount_minor=reserved_minor, reason=text[:_REASON_LIMIT]),)
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


def charged_by(moves: Sequence[LedgerMove], currency: Currency) -> Cost:
    """What closing entries charged: settled + overrun + unknown charge (unknown if any of them is)."""
    amounts = [move.amount_minor for move in moves if move.kind in _CHARGES]
    if any(amount is None for amount in amounts):
        reasons = tuple(move.reason for move in moves if move.amount_minor is None and move.reason)
        return UnknownCost(reasons or ("the charge is unknown",))
    return Money(minor=sum(amount for amount in amounts if amount is not None), currency=currency)


def overrun_of(moves: Sequence[LedgerMove], currency: Currency) -> Money | None:
    """The overrun among closing entries, or None when the call stayed within its reservation."""
    over = next((move.amount_minor for move in moves if move.kind is LedgerKind.OVERRUN), None)
    return None if over is None else Money(minor=over, currency=currency)


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

    @property
    def committed_known(self) -> Money:
        """The known part of what is spent and reserved: what the hard limit is checked against."""
        return self.spent_known + self.reserved_known

    def spend_line(self) -> str:
        """Measured spend so far and what is left of the hard limit, in one line (``codeflux run``, ``task
        show``, the review); unknown is written with its reason, never as 0."""
        return (f"spent {self.spent} of the hard limit {self.hard_limit}; remaining {self.remaining}; "
                f"{self.tokens_used:,} tokens used")

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


def summarize_budget(budget: Budget, totals: LedgerTotals) -> BudgetSummary:
    """The budget's figures from its ledger's totals; an unknown part makes the figure unknown."""
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


class BudgetRefusalCause(StrEnum):
    """What a person does about a refusal depends on its cause (the message names the exact command)."""

    PENDING_DECISIONS = "pending-decisions"  # overruns or unknown charges await `budget acknowledge`
    UNKNOWN_PRICE = "unknown-price"  # no price (or no input/output rate) for the model: `prices set`
    CURRENCY = "currency"  # the price and the budget are in different currencies
    MONEY_LIMIT = "money-limit"
    TOKEN_LIMIT = "token-limit"  # noqa: S105 (a cause, not a secret)


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRefusal:
    kind: BudgetRefusalKind
    reason: str
    cause: BudgetRefusalCause


def is_paid(bound: Cost) -> bool:
    """Whether a call with reservation ``bound`` spends money: anything but a bound known to be 0."""
    return not (isinstance(bound, Money) and bound.minor == 0)


def check_paid_call(summary: BudgetSummary, *, bound: Cost, tokens: int) -> BudgetRefusal | None:
    """Why a call with reservation ``bound`` and token bound ``tokens`` may not start now, or None."""
    paid = is_paid(bound)
    if paid and summary.pending_decisions:
        count = len(summary.pending_decisions)
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION, cause=BudgetRefusalCause.PENDING_DECISIONS,
                             reason=f"{count} overrun(s) or unknown charge(s) await acknowledgement")
    if isinstance(bound, UnknownCost) and not summary.allow_unknown_price:
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION, cause=BudgetRefusalCause.UNKNOWN_PRICE,
                             reason=f"the call's cost cannot be bounded ({'; '.join(bound.reasons)})")
    if isinstance(bound, Money) and bound.currency != summary.hard_limit.currency:
        return BudgetRefusal(kind=BudgetRefusalKind.DECISION, cause=BudgetRefusalCause.CURRENCY,
                             reason=f"the price is in {bound.currency.code}; the budget is in "
                                    f"{summary.hard_limit.currency.code}")
    known = bound if isinstance(bound, Money) else Money.zero(summary.hard_limit.currency)
    committed = summary.committed_known
    if paid and committed + known > summary.hard_limit:
        left = summary.hard_limit - committed
        return BudgetRefusal(kind=BudgetRefusalKind.EXHAUSTED, cause=BudgetRefusalCause.MONEY_LIMIT,
                             reason=f"the next call reserves {known} and {left} is left of {summary.hard_limit}")
    if summary.token_limit is not None and summary.tokens_used + summary.tokens_reserved + tokens > summary.token_limit:
        return BudgetRefusal(kind=BudgetRefusalKind.EXHAUSTED, cause=BudgetRefusalCause.TOKEN_LIMIT,
                             reason=f"the next call may use {tokens:,} tokens; {summary.tokens_used:,} used and "
                                    f"{summary.tokens_reserved:,} reserved of {summary.token_limit:,}")
    return None


def crosses_warning(after: BudgetSummary, moves: Sequence[LedgerMove]) -> bool:
    """Whether the charges in ``moves`` took the known spend from below the warning threshold to at or
    above it — true for exactly one charge as the spend climbs past the threshold."""
    warning = after.warning
    if warning is None:
        return False
    charged = sum(move.amount_minor or 0 for move in moves if move.kind is not LedgerKind.RELEASE)
    return after.spent_known.minor - charged < warning.minor <= after.spent_known.minor


def budget_limits_refusal(*, hard_limit: Money, warning: Money | None, token_limit: int | None) -> str | None:
    """Why these limits cannot be a budget, or None: a warning above the limit, or a negative limit."""
    if warning is not None and warning > hard_limit:
        return "the warning threshold is above the hard limit"
    if token_limit is not None and token_limit < 0:
        return "the token limit cannot be negative"
    if hard_limit.minor < 0:
        return "the hard limit cannot be negative"
    return None


def resume_refusal(summary: BudgetSummary) -> str | None:
    """Why the budget still keeps a paused task from running, or None once it no longer blocks."""
    if summary.pending_decisions:
        return "acknowledge the pending charges first"
    if summary.committed_known >= summary.hard_limit:
        return "nothing is left of the hard limit; raise it first"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntryRow:
    """One immutable ledger entry; ``amount_minor`` None is unknown."""

    entry_id: int
    task_id: TaskId
    request_id: str
    kind: LedgerKind
    amount_minor: int | None
    currency: Currency
    reason: str | None
    recorded_at_us: int
    acknowledged: bool
