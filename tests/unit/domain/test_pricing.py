"""Per-token prices from per-million rates, exact; usage counts that were not reported stay unknown."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InexactNumberError, InvalidValueError
from codeflux.domain.money import JPY, USD, Money, UnknownCost
from codeflux.domain.pricing import TOKENS_PER_MILLION, Price, PriceComponent, TokenUsage

SONNET = Price.from_per_million_tokens(
    currency=USD,
    input_per_million="3.00",
    output_per_million="15.00",
    cache_read_per_million="0.30",
    cache_write_per_million="3.75",
)
KNOWN = TokenUsage(input_tokens=0, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)


def usage(**counts: int | None) -> TokenUsage:
    values: dict[str, int | None] = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                                     "cache_write_tokens": 0}  # fmt: skip
    values.update(counts)
    return TokenUsage(**values)


def test_a_per_million_rate_becomes_an_exact_per_token_rate_in_minor_units() -> None:
    assert SONNET.input_minor_per_token == Fraction(3, 10_000)  # $3 / 1M tokens = 3/10000 of a cent
    assert SONNET.cache_read_minor_per_token == Fraction(3, 100_000)
    yen = Price.from_per_million_tokens(currency=JPY, input_per_million="450", output_per_million="0")
    assert yen.input_minor_per_token == Fraction(450, TOKENS_PER_MILLION)  # yen have no minor unit


def test_each_component_is_priced_once_at_its_own_rate() -> None:
    cost = SONNET.exact_minor_cost(
        usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000,
              cache_write_tokens=1_000_000), model="m",
    )  # fmt: skip
    assert cost == 300 + 1500 + 30 + 375


def test_a_charge_is_rounded_up_to_the_cent_and_never_below_the_exact_cost() -> None:
    assert SONNET.exact_minor_cost(usage(input_tokens=1), model="m") == Fraction(3, 10_000)
    assert SONNET.cost_of(usage(input_tokens=1), model="m") == Money(minor=1, currency=USD)
    assert SONNET.cost_of(KNOWN, model="m") == Money(minor=0, currency=USD)


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        ({"input_tokens": None}, "input tokens not reported by the provider"),
        ({"cache_read_tokens": None}, "cache-read tokens not reported by the provider"),
        ({"output_tokens": None}, "output tokens not reported by the provider"),
    ],
)
def test_an_unreported_count_makes_the_cost_unknown(counts: dict[str, int | None], reason: str) -> None:
    assert SONNET.cost_of(usage(**counts), model="m") == UnknownCost.because(reason)


def test_a_used_component_without_a_rate_makes_the_cost_unknown_naming_the_model() -> None:
    no_cache = Price.from_per_million_tokens(currency=USD, input_per_million="1", output_per_million="2")
    assert no_cache.cost_of(usage(cache_write_tokens=5), model="local-7b") == UnknownCost.because(
        "no cache-write price for model local-7b"
    )
    assert no_cache.cost_of(usage(input_tokens=5), model="local-7b") == Money(minor=1, currency=USD)


def test_a_free_component_costs_nothing_even_when_its_count_is_unknown() -> None:
    free = Price.from_per_million_tokens(currency=USD, input_per_million="0", output_per_million="0",
                                         cache_read_per_million="0", cache_write_per_million="0")  # fmt: skip
    assert free.cost_of(TokenUsage(), model="m") == Money(minor=0, currency=USD)


def test_reasoning_billed_apart_splits_the_output() -> None:
    price = Price.from_per_million_tokens(currency=USD, input_per_million="0", output_per_million="10",
                                          reasoning_per_million="20", cache_read_per_million="0",
                                          cache_write_per_million="0")  # fmt: skip
    both = usage(output_tokens=1_000_000, reasoning_tokens=250_000)
    assert price.exact_minor_cost(both, model="m") == 750 + 500
    unknown = price.cost_of(usage(output_tokens=10), model="m")
    assert isinstance(unknown, UnknownCost) and "reasoning tokens not reported by the provider" in unknown.reasons


@pytest.mark.parametrize("rate", ["-1.00", "3.0e1", "1,5", "", " 3", "3.", ".5", "1.1234567890123"])
def test_a_malformed_or_negative_rate_is_refused(rate: str) -> None:
    with pytest.raises(InvalidValueError):
        Price.from_per_million_tokens(currency=USD, input_per_million=rate, output_per_million="1")


@given(st.one_of(st.floats(), st.booleans()))
def test_a_float_or_bool_rate_is_refused_however_it_arrives(value: object) -> None:
    with pytest.raises(InexactNumberError):
        Price.from_per_million_tokens(currency=USD, input_per_million=value, output_per_million="1")  # type: ignore[arg-type]
    with pytest.raises(InexactNumberError):
        Price(currency=USD, input_minor_per_token=value, output_minor_per_token=None)  # type: ignore[arg-type]
    with pytest.raises(InexactNumberError):
        TokenUsage(input_tokens=value)  # type: ignore[arg-type]


def test_usage_counts_are_non_negative_and_reasoning_is_part_of_output() -> None:
    with pytest.raises(InvalidValueError):
        TokenUsage(input_tokens=-1)
    with pytest.raises(InvalidValueError):
        TokenUsage(output_tokens=5, reasoning_tokens=6)
    assert not TokenUsage(input_tokens=1, output_tokens=1).is_known
    assert KNOWN.is_known


@pytest.mark.parametrize("text", ["3.00", "0.30", "0.125", "0.005", "15.00", "0.075"])
def test_a_rate_shows_as_the_per_million_text_it_came_from(text: str) -> None:
    price = Price.from_per_million_tokens(currency=USD, input_per_million=text, output_per_million="1")
    assert price.per_million_text(PriceComponent.INPUT) == text
    assert price.per_million_text(PriceComponent.CACHE_READ) is None


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=10**7))
def test_pricing_is_linear_and_exact(tokens: int, cents_per_million: int) -> None:
    rate = f"{cents_per_million // 100}.{cents_per_million % 100:02d}"
    price = Price.from_per_million_tokens(currency=USD, input_per_million=rate, output_per_million="0",
                                          cache_read_per_million="0", cache_write_per_million="0")  # fmt: skip
    assert price.exact_minor_cost(usage(input_tokens=tokens), model="m") == Fraction(tokens * cents_per_million, 10**6)
