"""Exact money: integer minor units, one currency per operation, unknown never rendered as 0, no floats."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import CurrencyMismatchError, InexactNumberError, InvalidValueError
from codeflux.domain.money import (
    EUR,
    GBP,
    JPY,
    MAX_MINOR_UNITS,
    USD,
    CostRange,
    Currency,
    Money,
    Rounding,
    UnknownCost,
    sum_costs,
)

CURRENCIES = [USD, EUR, GBP, JPY, Currency.parse("CHF"), Currency.parse("KWD")]
amounts = st.integers(min_value=-(10**15), max_value=10**15)
currencies = st.sampled_from(CURRENCIES)
moneys = st.builds(lambda minor, currency: Money(minor=minor, currency=currency), amounts, currencies)
usd = st.builds(lambda minor: Money(minor=minor, currency=USD), amounts)
reasons = st.lists(st.text(min_size=1, max_size=20).filter(str.strip), min_size=1, max_size=3).map(tuple)
unknowns = reasons.map(UnknownCost)
fractions = st.fractions(min_value=-1000, max_value=1000, max_denominator=10**6)
inexact = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.booleans())


# ------------------------------------------------------------------------------------------ currency


def test_currencies_know_their_minor_unit_exponent() -> None:
    assert [(c.code, c.exponent, c.minor_per_major) for c in (USD, EUR, GBP, JPY)] == [
        ("USD", 2, 100), ("EUR", 2, 100), ("GBP", 2, 100), ("JPY", 0, 1)]  # fmt: skip
    assert Currency.parse("KWD").exponent == 3


@pytest.mark.parametrize("code", ["usd", "US", "USDX", "XYZ", "", "U$D"])
def test_an_unknown_or_malformed_currency_code_is_refused(code: str) -> None:
    with pytest.raises(InvalidValueError):
        Currency.parse(code)


def test_a_currency_with_the_wrong_exponent_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="USD has 2"):
        Currency(code="USD", exponent=3)
    with pytest.raises(InexactNumberError):
        Currency(code="USD", exponent=2.0)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ money values


@given(inexact)
def test_money_refuses_a_float_or_bool_amount(value: object) -> None:
    with pytest.raises(InexactNumberError):
        Money(minor=value, currency=USD)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["12", Decimal("1.2"), Fraction(1, 2), None])
def test_money_refuses_anything_but_an_integer_amount(value: object) -> None:
    with pytest.raises(InvalidValueError):
        Money(minor=value, currency=USD)  # type: ignore[arg-type]


def test_an_amount_beyond_64_bits_is_refused_never_wrapped() -> None:
    Money(minor=MAX_MINOR_UNITS, currency=USD)
    with pytest.raises(InvalidValueError, match="beyond"):
        Money(minor=MAX_MINOR_UNITS + 1, currency=USD)
    with pytest.raises(InvalidValueError):
        Money(minor=MAX_MINOR_UNITS, currency=USD) + Money(minor=1, currency=USD)


def test_a_decimal_string_becomes_minor_units_with_no_more_digits_than_the_currency_has() -> None:
    assert Money.parse_decimal("1.2", currency=USD) == Money(minor=120, currency=USD)
    assert Money.parse_decimal("-0.05", currency=EUR) == Money(minor=-5, currency=EUR)
    assert Money.parse_decimal("120", currency=JPY) == Money(minor=120, currency=JPY)
    with pytest.raises(InvalidValueError, match="2 digits"):
        Money.parse_decimal("0.405", currency=USD)
    with pytest.raises(InvalidValueError):
        Money.parse_decimal("1e3", currency=USD)
    with pytest.raises(InexactNumberError):
        Money.parse_decimal(0.4, currency=USD)  # type: ignore[arg-type]


def test_amounts_in_different_currencies_never_mix() -> None:
    dollar, euro = Money(minor=100, currency=USD), Money(minor=100, currency=EUR)
    with pytest.raises(CurrencyMismatchError, match="add USD and EUR"):
        dollar + euro
    with pytest.raises(CurrencyMismatchError):
        dollar - euro
    with pytest.raises(CurrencyMismatchError):
        _ = dollar < euro


@pytest.mark.parametrize(
    ("money", "text"),
    [
        (Money(minor=40, currency=USD), "$0.40"),
        (Money(minor=-123456, currency=USD), "-$1,234.56"),
        (Money(minor=5, currency=EUR), "€0.05"),
        (Money(minor=1200, currency=JPY), "¥1,200"),
        (Money(minor=1250, currency=Currency.parse("CHF")), "12.50 CHF"),
        (Money(minor=1, currency=Currency.parse("KWD")), "0.001 KWD"),
        (Money(minor=0, currency=GBP), "£0.00"),
    ],
)
def test_money_is_formatted_with_its_symbol_or_code(money: Money, text: str) -> None:
    assert str(money) == text
    assert Money.parse(text) == money


@pytest.mark.parametrize("text", ["$1,23.00", "$0.405", "1.00 usd", "$-1.00", "1.00", "$ 1.00"])
def test_a_badly_written_amount_does_not_parse(text: str) -> None:
    with pytest.raises(InvalidValueError):
        Money.parse(text)


# ----------------------------------------------------------------------------------------- rounding


@pytest.mark.parametrize(
    ("minor", "factor", "up", "half_up"),
    [
        (10, Fraction(1, 3), 4, 3),
        (5, Fraction(1, 2), 3, 3),
        (-5, Fraction(1, 2), -2, -3),
        (7, Fraction(2), 14, 14),
        (1, Fraction(1, 10**9), 1, 0),
    ],
)
def test_scaling_rounds_as_asked_up_or_half_away_from_zero(minor: int, factor: Fraction, up: int, half_up: int) -> None:
    money = Money(minor=minor, currency=USD)
    assert money.scale(factor, rounding=Rounding.UP).minor == up
    assert money.scale(factor, rounding=Rounding.HALF_UP).minor == half_up


@given(inexact)
def test_scaling_by_a_float_is_refused(factor: object) -> None:
    with pytest.raises(InexactNumberError):
        Money(minor=100, currency=USD).scale(factor, rounding=Rounding.UP)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- unknown costs


def test_an_unknown_cost_says_why_and_never_reads_as_zero() -> None:
    cost = UnknownCost.because("no price for model gpt-x")
    assert str(cost) == "unknown (no price for model gpt-x)"
    with pytest.raises(InvalidValueError):
        UnknownCost(())
    with pytest.raises(InvalidValueError):
        UnknownCost((" ",))


def test_unknown_reasons_accumulate_in_order_without_repeats() -> None:
    a, b = UnknownCost.because("a"), UnknownCost.because("b")
    total = Money(minor=5, currency=USD) + a + Money(minor=1, currency=USD) + b + a
    assert total == UnknownCost(("a", "b"))
    assert str(total) == "unknown (a; b)"


def test_summing_costs_is_unknown_if_any_is_unknown_or_in_another_currency() -> None:
    assert sum_costs([], currency=USD) == Money(minor=0, currency=USD)
    assert sum_costs([Money(minor=1, currency=USD)] * 3, currency=USD) == Money(minor=3, currency=USD)
    mixed = sum_costs([Money(minor=1, currency=USD), Money(minor=1, currency=EUR)], currency=USD)
    assert mixed == UnknownCost.because("a cost in EUR cannot be added to USD")


def test_a_range_is_formatted_with_an_en_dash_or_as_unknown() -> None:
    low, high = Money.parse("$0.40"), Money.parse("$1.20")
    assert str(CostRange(low=low, high=high)) == "$0.40 – $1.20"
    unknown = CostRange(low=low, high=UnknownCost.because("no price for model X"))
    assert str(unknown) == "unknown (no price for model X)" and not unknown.is_known
    assert "$" not in str(unknown)
    with pytest.raises(InvalidValueError):
        CostRange(low=high, high=low)
    with pytest.raises(CurrencyMismatchError):
        CostRange(low=low, high=Money(minor=200, currency=EUR))


# ------------------------------------------------------------------------------------- properties


@given(usd, usd, usd)
def test_addition_is_associative(a: Money, b: Money, c: Money) -> None:
    assert (a + b) + c == a + (b + c)


@given(usd, usd)
def test_addition_is_commutative_and_subtraction_undoes_it(a: Money, b: Money) -> None:
    assert a + b == b + a
    assert (a + b) - b == a


@given(st.lists(st.one_of(usd, unknowns), min_size=1, max_size=6))
def test_an_unknown_anywhere_makes_the_total_unknown_with_every_reason(costs: list[Money | UnknownCost]) -> None:
    total = sum_costs(costs, currency=USD)
    unknown = [cost for cost in costs if isinstance(cost, UnknownCost)]
    if unknown:
        assert isinstance(total, UnknownCost)
        assert {reason for cost in unknown for reason in cost.reasons} == set(total.reasons)
    else:
        assert total == Money(minor=sum(c.minor for c in costs if isinstance(c, Money)), currency=USD)


@given(moneys, fractions)
def test_scaling_is_exact_before_rounding(money: Money, factor: Fraction) -> None:
    exact = Fraction(money.minor) * factor
    up = money.scale(factor, rounding=Rounding.UP).minor
    nearest = money.scale(factor, rounding=Rounding.HALF_UP).minor
    assert exact <= up < exact + 1
    assert abs(nearest - exact) <= Fraction(1, 2)
    if exact.denominator == 1:
        assert up == nearest == exact


@given(moneys)
def test_formatting_round_trips_every_digit(money: Money) -> None:
    assert Money.parse(str(money)) == money


@given(unknowns, fractions)
def test_an_unknown_stays_unknown_when_scaled(cost: UnknownCost, factor: Fraction) -> None:
    assert cost.scale(factor, rounding=Rounding.UP) is cost
