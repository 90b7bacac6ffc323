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


# ─── 1-hour cache writes (issue 21, items 7/8) ────────────────────────────────────────────────────────

SONNET_1H = Price.from_per_million_tokens(currency=USD, input_per_million="3.00", output_per_million="15.00",
                                          cache_read_per_million="0.30", cache_write_per_million="3.75",
                                          cache_write_1h_per_million="6.00")  # fmt: skip


def test_one_hour_writes_are_priced_at_their_own_rate_and_the_rest_of_the_writes_at_the_default_one() -> None:
    assert SONNET_1H.cache_write_1h_minor_per_token == Fraction(6, 10_000)
    assert SONNET_1H.per_million_text(PriceComponent.CACHE_WRITE_1H) == "6.00"
    cost = SONNET_1H.exact_minor_cost(usage(cache_write_tokens=1_000_000, cache_write_1h_tokens=400_000), model="m")
    assert cost == Fraction(375 * 600_000 + 600 * 400_000, 10**6)  # 225 + 240 cents, not 375 for all of them


def test_one_hour_writes_without_a_one_hour_rate_are_unknown_never_the_default_rate_nor_zero() -> None:
    cost = SONNET.cost_of(usage(cache_write_tokens=248, cache_write_1h_tokens=100), model="claude-x")
    assert cost == UnknownCost(("no cache-write-1h price for model claude-x",))
    # none of them written for an hour: the default rate for all of them, no 1-hour rate needed
    assert SONNET.exact_minor_cost(usage(cache_write_tokens=248, cache_write_1h_tokens=0), model="m") == \
        248 * SONNET.cache_write_minor_per_token  # type: ignore[operator]


def test_one_hour_writes_are_part_of_the_writes() -> None:
    with pytest.raises(InvalidValueError, match="part of the cache writes"):
        TokenUsage(cache_write_tokens=10, cache_write_1h_tokens=11)
    assert TokenUsage(cache_write_tokens=None, cache_write_1h_tokens=11).cache_write_1h_tokens == 11
    unreported_writes = SONNET_1H.cost_of(usage(cache_write_tokens=None, cache_write_1h_tokens=5), model="m")
    assert unreported_writes == UnknownCost(("cache-write tokens not reported by the provider",))


_COUNT = st.integers(min_value=0, max_value=10**8)
_RATE_TEXT = st.integers(min_value=0, max_value=10**5).map(lambda cents: f"{cents // 100}.{cents % 100:02d}")


@given(writes=_COUNT, share=st.fractions(min_value=0, max_value=1), default_rate=_RATE_TEXT,
       one_hour_rate=st.none() | _RATE_TEXT, reported=st.booleans())
def test_the_cache_write_rule(writes: int, share: Fraction, default_rate: str, one_hour_rate: str | None,
                              reported: bool) -> None:
    """The writes cost (writes − 1h) × default + 1h × 1-hour rate; a 1-hour write with no 1-hour rate is unknown;
    no breakdown reported (None) is every write at the default rate; the cost never falls when a write moves from
    the default lifetime to the hour while the hour costs at least as much."""
    one_hour = int(writes * share) if reported else None
    price = Price.from_per_million_tokens(currency=USD, input_per_million="1", output_per_million="1",
                                          cache_read_per_million="0", cache_write_per_million=default_rate,
                                          cache_write_1h_per_million=one_hour_rate)  # fmt: skip
    cost = price.exact_minor_cost(usage(cache_write_tokens=writes, cache_write_1h_tokens=one_hour), model="m")
    default = Fraction(default_rate) * 100 / 10**6
    if not one_hour:  # None or 0: every write at the default rate
        assert cost == writes * default
        return
    if one_hour_rate is None:
        assert cost == UnknownCost(("no cache-write-1h price for model m",))
        return
    hour = Fraction(one_hour_rate) * 100 / 10**6
    assert cost == (writes - one_hour) * default + one_hour * hour
    if hour >= default:
        assert isinstance(cost, Fraction) and cost >= writes * default
