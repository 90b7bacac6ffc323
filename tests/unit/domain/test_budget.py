"""Budget rules for all inputs: a reservation is closed without losing or double-counting a minor unit, a
granted call never takes the known spend and reservations past the hard limit, unknown is never 0, and
the warning fires once as the spend climbs past it."""

from __future__ import annotations

from fractions import Fraction
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.budget import (
    Budget,
    BudgetRefusalKind,
    BudgetSummary,
    LedgerKind,
    LedgerMove,
    LedgerTotals,
    bound_input_tokens,
    budget_limits_refusal,
    charged_by,
    check_paid_call,
    closing_moves,
    crosses_warning,
    is_paid,
    overrun_of,
    reservation_bound,
    reserve_move,
    resume_refusal,
    summarize_budget,
)
from codeflux.domain.budget import _text_tokens as remembered_text_tokens
from codeflux.domain.ids import TaskId
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import EUR, USD, Cost, Money, UnknownCost
from codeflux.domain.pricing import Price
from codeflux.domain.token_estimate import estimate_text_tokens

AMOUNTS = st.integers(min_value=0, max_value=10**12)
ACTUALS = st.one_of(
    st.none(), st.builds(lambda minor: Money(minor=minor, currency=USD), AMOUNTS),
    st.just(UnknownCost.because("usage not reported")),
)  # fmt: skip
BOUNDS = st.one_of(st.builds(lambda minor: Money(minor=minor, currency=USD), AMOUNTS),
                   st.just(UnknownCost.because("no price for model m")))  # fmt: skip
CHARGES = (LedgerKind.SETTLE, LedgerKind.OVERRUN, LedgerKind.UNKNOWN_CHARGE)
TASK = TaskId.parse("tsk_" + "a" * 32)


def total(moves: tuple[LedgerMove, ...], *kinds: LedgerKind) -> int:
    return sum(m.amount_minor or 0 for m in moves if m.kind in kinds)


def summary_of(
    *, limit: int, spent: int = 0, reserved: int = 0, spent_unknown: int = 0, reserved_unknown: int = 0,
    pending: tuple[int, ...] = (), allow_unknown_price: bool = False, token_limit: int | None = None,
    tokens_used: int = 0, tokens_reserved: int = 0, warning: int | None = None,
) -> BudgetSummary:  # fmt: skip
    budget = Budget(task_id=TASK, hard_limit=Money(minor=limit, currency=USD),
                    warning=None if warning is None else Money(minor=warning, currency=USD), token_limit=token_limit,
                    allow_unknown_price=allow_unknown_price, revision=0, created_at_us=0, updated_at_us=0)
    totals = LedgerTotals(reserved_minor=reserved, reserved_unknown=reserved_unknown, open_requests=1,
                          spent_minor=spent, spent_unknown=spent_unknown, charged_at_bound=0, charged_at_bound_minor=0,
                          overrun_minor=0, pending_decisions=pending, tokens_used=tokens_used,
                          tokens_reserved=tokens_reserved)
    return summarize_budget(budget, totals)


# ─── closing a reservation ───────────────────────────────────────────────────────────────────────


@given(reserved=AMOUNTS, actual=ACTUALS)
def test_closing_a_known_reservation_accounts_for_every_minor_unit(reserved: int, actual: Cost | None) -> None:
    moves = closing_moves(reserved_minor=reserved, actual=actual)

    assert all(m.amount_minor is None or m.amount_minor >= 0 for m in moves)
    assert len({m.kind for m in moves}) == len(moves)  # each kind at most once per request
    if actual is None:  # nothing was sent: all of it comes back
        assert [(m.kind, m.amount_minor) for m in moves] == [(LedgerKind.RELEASE, reserved)]
    elif isinstance(actual, UnknownCost):  # maybe billed: the bound is charged, once
        assert [(m.kind, m.amount_minor) for m in moves] == [(LedgerKind.UNKNOWN_CHARGE, reserved)]
    else:
        assert total(moves, *CHARGES) == actual.minor  # the charge is exactly the actual cost
        released = total(moves, LedgerKind.RELEASE)
        settled = total(moves, LedgerKind.SETTLE)
        assert settled + released == reserved  # the reservation is used or given back, never both
        assert total(moves, LedgerKind.OVERRUN) == max(0, actual.minor - reserved)


@given(actual=ACTUALS)
def test_an_unknown_reservation_never_turns_into_a_known_charge_by_itself(actual: Cost | None) -> None:
    moves = closing_moves(reserved_minor=None, actual=actual)

    if isinstance(actual, Money):
        assert total(moves, *CHARGES) == actual.minor
    else:
        assert all(m.amount_minor is None and m.reason for m in moves)


@given(reserved=st.one_of(st.none(), AMOUNTS), actual=ACTUALS)
def test_what_a_closing_charged_is_the_sum_of_its_charges_or_unknown(reserved: int | None, actual: Cost | None) -> None:
    moves = closing_moves(reserved_minor=reserved, actual=actual)
    charged = charged_by(moves, USD)
    overrun = overrun_of(moves, USD)

    if any(m.kind in CHARGES and m.amount_minor is None for m in moves):
        assert isinstance(charged, UnknownCost) and str(charged).startswith("unknown (")
    else:
        assert charged == Money(minor=total(moves, *CHARGES), currency=USD)
    expected_overrun = total(moves, LedgerKind.OVERRUN)
    assert overrun == (Money(minor=expected_overrun, currency=USD) if expected_overrun else None)


# ─── reserving ───────────────────────────────────────────────────────────────────────────────────


@given(input_tokens=st.integers(0, 10**7), max_output=st.integers(1, 10**6),
       rates=st.tuples(*(st.fractions(min_value=0, max_value=100, max_denominator=10**6),) * 4))
def test_the_reservation_bound_is_never_below_any_usage_the_estimate_covers(
    input_tokens: int, max_output: int, rates: tuple[Fraction, Fraction, Fraction, Fraction]
) -> None:
    price = Price(currency=USD, input_minor_per_token=rates[0], output_minor_per_token=rates[1],
                  cache_read_minor_per_token=rates[2], cache_write_minor_per_token=rates[3])
    caching = reservation_bound(price, input_tokens=input_tokens, max_output_tokens=max_output, model="m",
                                writes_cache=True)
    plain = reservation_bound(price, input_tokens=input_tokens, max_output_tokens=max_output, model="m",
                              writes_cache=False)

    assert isinstance(caching, Money) and isinstance(plain, Money)
    # Any split of the input among uncached, cache-read and (when the call writes a cache) cache-write
    # tokens, and any output up to the cap.
    for split in ((input_tokens, 0, 0), (0, input_tokens, 0), (0, 0, input_tokens)):
        exact = split[0] * rates[0] + split[1] * rates[2] + split[2] * rates[3] + max_output * rates[1]
        assert caching.minor >= exact
        if split[2] == 0:
            assert plain.minor >= exact


@given(text=st.one_of(st.text(max_size=63), st.text(min_size=64, max_size=300)))
def test_a_remembered_estimate_is_the_estimate_of_the_text(text: str) -> None:
    # the short and the long texts each have a cache; asked twice (the second answer from the cache), the same
    assert remembered_text_tokens(text) == remembered_text_tokens(text) == estimate_text_tokens(text)


@given(input_tokens=st.integers(0, 10**7), max_output=st.integers(1, 10**6), writes_cache=st.booleans(),
       rates=st.tuples(*(st.fractions(min_value=0, max_value=100, max_denominator=10**6),) * 4))
def test_the_reservation_bound_is_the_exact_dearest_cost_rounded_up_to_the_minor_unit(
    input_tokens: int, max_output: int, writes_cache: bool, rates: tuple[Fraction, Fraction, Fraction, Fraction]
) -> None:
    price = Price(currency=USD, input_minor_per_token=rates[0], output_minor_per_token=rates[1],
                  cache_read_minor_per_token=rates[2], cache_write_minor_per_token=rates[3])
    bound = reservation_bound(price, input_tokens=input_tokens, max_output_tokens=max_output, model="m",
                              writes_cache=writes_cache)

    input_rate = max(rates[0], rates[2], *((rates[3],) if writes_cache else ()))
    exact = input_tokens * input_rate + max_output * rates[1]
    assert isinstance(bound, Money) and bound.currency == USD
    assert exact <= bound.minor < exact + 1  # rounded up, by less than one minor unit


def test_a_call_that_writes_no_cache_is_not_reserved_at_the_cache_write_rate() -> None:
    # Anthropic's rates for a Sonnet model: $3 input, $15 output, $0.30 cache read, $3.75 cache write.
    price = Price.from_per_million_tokens(currency=USD, input_per_million="3.00", output_per_million="15.00",
                                          cache_read_per_million="0.30", cache_write_per_million="3.75")
    plain = reservation_bound(price, input_tokens=1_000_000, max_output_tokens=1, model="m", writes_cache=False)
    caching = reservation_bound(price, input_tokens=1_000_000, max_output_tokens=1, model="m", writes_cache=True)
    assert plain == Money(minor=301, currency=USD)  # 300 ¢ of input + 0.0015 ¢ of output, rounded up
    assert caching == Money(minor=376, currency=USD)  # the positive control: 375 ¢ at the cache-write rate


def test_a_call_that_writes_a_cache_without_a_cache_write_rate_cannot_be_bounded() -> None:
    # Its writes could cost anything: unknown, never reserved at a cheaper rate.
    price = Price.from_per_million_tokens(currency=USD, input_per_million="3.00", output_per_million="15.00",
                                          cache_read_per_million="0.30")
    assert reservation_bound(price, input_tokens=10, max_output_tokens=1, model="m", writes_cache=True) == \
        UnknownCost.because("no cache-write price for model m")
    assert reservation_bound(price, input_tokens=10, max_output_tokens=1, model="m", writes_cache=False) == \
        Money(minor=1, currency=USD)  # the positive control: a call that writes no cache is bounded


def test_no_price_or_a_missing_output_rate_makes_the_bound_unknown() -> None:
    assert isinstance(reservation_bound(None, input_tokens=1, max_output_tokens=1, model="m", writes_cache=False),
                      UnknownCost)
    partial = Price(currency=USD, input_minor_per_token=Fraction(1), output_minor_per_token=None)
    bound = reservation_bound(partial, input_tokens=1, max_output_tokens=1, model="m", writes_cache=False)
    assert bound == UnknownCost.because("no output price for model m")


@given(text=st.text(max_size=2000))
def test_the_input_estimate_covers_every_text_at_its_token_bound(text: str) -> None:
    request = ModelRequest(model="m", system=text, messages=(Message.user_text(text),))
    assert bound_input_tokens(request) >= 2 * estimate_text_tokens(text)
    assert bound_input_tokens(request) >= 2 * len(text.encode("ascii", "ignore")) // 4


def test_a_conversation_sent_again_is_bounded_from_the_estimates_of_its_earlier_turns() -> None:
    """Each text's estimate is remembered, so a turn estimates only what is new; the bound is unchanged by it."""
    history = tuple(Message.user_text(f"turn {n}: " + "Read the file and explain what it does. " * 40)
                    for n in range(6))
    first = ModelRequest(model="m", system="You are a coding agent. " * 10, messages=history)
    second = ModelRequest(model="m", system="You are a coding agent. " * 10,
                          messages=(*history, Message.user_text("And now the tests, please. " * 5)))
    expected = bound_input_tokens(first)
    with patch("codeflux.domain.budget.estimate_text_tokens", side_effect=estimate_text_tokens) as estimate:
        assert bound_input_tokens(first) == expected  # every text remembered from the call above
        assert estimate.call_count == 0
        later = bound_input_tokens(second)
        assert estimate.call_count == 1  # only the new message's text
    with patch("codeflux.domain.budget._text_tokens", side_effect=estimate_text_tokens):  # nothing remembered
        assert later == bound_input_tokens(second)
        assert expected == bound_input_tokens(first)


@given(bound=BOUNDS)
def test_a_reserve_entry_is_the_bound_and_an_unknown_one_is_never_zero(bound: Cost) -> None:
    move = reserve_move(bound)

    assert move.kind is LedgerKind.RESERVE
    if isinstance(bound, Money):
        assert (move.amount_minor, move.reason) == (bound.minor, None)
    else:
        assert move.amount_minor is None and move.reason == "no price for model m"


# ─── whether a call may start ────────────────────────────────────────────────────────────────────


@given(spent=AMOUNTS, reserved=AMOUNTS, limit=AMOUNTS, bound=AMOUNTS)
def test_a_paid_call_starts_only_if_its_bound_fits_in_what_is_left(
    spent: int, reserved: int, limit: int, bound: int
) -> None:
    summary = summary_of(limit=limit, spent=spent, reserved=reserved)
    refusal = check_paid_call(summary, bound=Money(minor=bound, currency=USD), tokens=1)

    fits = spent + reserved + bound <= limit or bound == 0
    assert (refusal is None) is fits
    if refusal is not None:
        assert refusal.kind is BudgetRefusalKind.EXHAUSTED


@given(spent=AMOUNTS, reserved=AMOUNTS, limit=AMOUNTS, bound=BOUNDS, unknown=st.integers(0, 3),
       pending=st.lists(st.integers(1, 99), max_size=2).map(tuple), allow=st.booleans(),
       token_limit=st.one_of(st.none(), st.integers(0, 10**6)), tokens=st.integers(0, 10**6))
def test_a_granted_call_never_takes_the_known_spend_and_reservations_past_the_limit(
    *, spent: int, reserved: int, limit: int, bound: Cost, unknown: int, pending: tuple[int, ...], allow: bool,
    token_limit: int | None, tokens: int,
) -> None:  # fmt: skip
    summary = summary_of(limit=limit, spent=spent, reserved=reserved, spent_unknown=unknown, pending=pending,
                         allow_unknown_price=allow, token_limit=token_limit)
    refusal = check_paid_call(summary, bound=bound, tokens=tokens)

    if refusal is None:
        known = bound.minor if isinstance(bound, Money) else 0
        assert not is_paid(bound) or spent + reserved + known <= limit
        assert token_limit is None or tokens <= token_limit
        assert not (is_paid(bound) and pending)  # an unacknowledged charge blocks every paid call
        assert isinstance(bound, Money) or allow  # an unknown bound needs the standing allowance
    elif is_paid(bound) and pending:
        assert refusal.kind is BudgetRefusalKind.DECISION


def test_a_bound_in_another_currency_waits_for_a_person() -> None:
    refusal = check_paid_call(summary_of(limit=100), bound=Money(minor=1, currency=EUR), tokens=1)

    assert refusal is not None and refusal.kind is BudgetRefusalKind.DECISION and "EUR" in refusal.reason


@given(pending=st.lists(st.integers(1, 99), max_size=2).map(tuple), spent=AMOUNTS, reserved=AMOUNTS,
       limit=AMOUNTS)
def test_a_paused_task_resumes_only_when_nothing_awaits_a_decision_and_something_is_left(
    pending: tuple[int, ...], spent: int, reserved: int, limit: int
) -> None:
    refusal = resume_refusal(summary_of(limit=limit, spent=spent, reserved=reserved, pending=pending))

    assert (refusal is None) is (not pending and spent + reserved < limit)


@given(limit=st.integers(-5, 5), warning=st.one_of(st.none(), st.integers(-5, 10)),
       token_limit=st.one_of(st.none(), st.integers(-5, 5)))
def test_limits_are_refused_when_negative_or_when_the_warning_is_above_the_limit(
    limit: int, warning: int | None, token_limit: int | None
) -> None:
    refusal = budget_limits_refusal(hard_limit=Money(minor=limit, currency=USD),
                                    warning=None if warning is None else Money(minor=warning, currency=USD),
                                    token_limit=token_limit)

    valid = limit >= 0 and (warning is None or warning <= limit) and (token_limit is None or token_limit >= 0)
    assert (refusal is None) is valid


# ─── figures ─────────────────────────────────────────────────────────────────────────────────────


@given(spent=AMOUNTS, reserved=AMOUNTS, limit=AMOUNTS, spent_unknown=st.integers(0, 3),
       reserved_unknown=st.integers(0, 3))
def test_unknown_is_never_shown_as_a_number(
    spent: int, reserved: int, limit: int, spent_unknown: int, reserved_unknown: int
) -> None:
    summary = summary_of(limit=limit, spent=spent, reserved=reserved, spent_unknown=spent_unknown,
                         reserved_unknown=reserved_unknown)

    assert isinstance(summary.spent, UnknownCost) is bool(spent_unknown)
    assert isinstance(summary.reserved, UnknownCost) is bool(reserved_unknown)
    assert isinstance(summary.remaining, UnknownCost) is bool(spent_unknown or reserved_unknown)
    assert summary.committed_known == Money(minor=spent + reserved, currency=USD)
    if isinstance(summary.remaining, Money):
        assert summary.remaining == Money(minor=limit - spent - reserved, currency=USD)
    for figure in (summary.spent, summary.reserved, summary.remaining):
        if isinstance(figure, UnknownCost):
            assert str(figure).startswith("unknown (") and "known part" in str(figure)
    text = "\n".join(summary.lines())
    if spent_unknown:
        assert "  spent        unknown (" in text


@given(warning=st.integers(1, 10**6), charges=st.lists(st.integers(0, 10**5), max_size=30),
       released=st.integers(0, 10**5))
def test_the_warning_fires_once_as_the_spend_climbs_past_it(warning: int, charges: list[int], released: int) -> None:
    spent, fired = 0, 0
    for charge in charges:
        spent += charge
        moves = (LedgerMove(kind=LedgerKind.SETTLE, amount_minor=charge),
                 LedgerMove(kind=LedgerKind.RELEASE, amount_minor=released))  # a release is never a charge
        fired += crosses_warning(summary_of(limit=10**12, spent=spent, warning=warning), moves)

    assert fired == (1 if spent >= warning else 0)


def test_no_warning_threshold_never_warns() -> None:
    moves = (LedgerMove(kind=LedgerKind.SETTLE, amount_minor=5),)
    assert not crosses_warning(summary_of(limit=10, spent=5), moves)
