"""Forecasts follow the documented heuristic, are bound to their inputs, and never hide an unknown price."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InexactNumberError, InvalidValueError
from codeflux.domain.forecast import (
    ESTIMATE_LABEL,
    HEURISTIC_VERSION,
    CountRange,
    ForecastInputs,
    ModelPrice,
    TaskClass,
    forecast_task,
)
from codeflux.domain.ladder import Effort
from codeflux.domain.money import USD, Currency, Money, UnknownCost
from codeflux.domain.pricing import Price

PRICE = Price.from_per_million_tokens(
    currency=USD, input_per_million="3.00", output_per_million="15.00",
    cache_read_per_million="0.30", cache_write_per_million="3.75",
)  # fmt: skip
INPUTS = ForecastInputs(
    task_class=TaskClass.BUG_FIX,
    repository_files=2_500,
    repository_bytes=10_000_000,
    likely_files=3,
    checks=2,
    model="claude-sonnet-4-5",
    effort=Effort.LOW,
    repository_revision="0" * 40,
    task_fingerprint="f" * 64,
)


def test_a_bug_fix_forecast_is_the_documented_sum() -> None:
    forecast = forecast_task(INPUTS, price=PRICE)
    # base 720 s / 90k; 3 file buckets + 1 byte bucket: 240 s / 20k; 3 likely files: 135 s / 12k;
    # 2 checks: 120 s / 6k  →  1215 s and 128k tokens at P50, twice that at P90.
    assert forecast.wall_seconds == CountRange(p50=1215, p90=2430)
    assert forecast.tokens == CountRange(p50=128_000, p90=256_000)
    assert forecast.input_tokens == CountRange(p50=96_000, p90=192_000)
    assert forecast.output_tokens == CountRange(p50=32_000, p90=64_000)
    # 96k × $3/M + 32k × $15/M = $0.288 + $0.48 = $0.768 → $0.77 (rounded up); P90 exactly $1.536 → $1.54.
    assert forecast.cost.low == Money.parse("$0.77") and forecast.cost.high == Money.parse("$1.54")
    assert forecast.describe() == (
        "Estimate, not a promise. Time 21 – 41 min; tokens 128,000 – 256,000; cost $0.77 – $1.54."
    )
    assert forecast.heuristic == HEURISTIC_VERSION and forecast.label == ESTIMATE_LABEL
    assert forecast.uncertainty == ()


def test_without_a_price_the_cost_range_is_unknown_with_its_reason() -> None:
    forecast = forecast_task(INPUTS, price=None)
    assert not forecast.cost.is_known
    assert str(forecast.cost) == "unknown (no price for model claude-sonnet-4-5)"
    assert forecast.uncertainty == ("price-unavailable",)
    assert forecast.describe().startswith(ESTIMATE_LABEL)
    assert "$0" not in forecast.describe()


def test_a_price_missing_a_component_used_by_the_forecast_leaves_the_cost_unknown() -> None:
    input_only = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million=None)
    cost = forecast_task(INPUTS, price=input_only).cost
    assert isinstance(cost.low, UnknownCost)
    assert cost.reasons == ("no output price for model claude-sonnet-4-5",)


CHEAP = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="5.00")
CAPABLE = Price.from_per_million_tokens(currency=USD, input_per_million="3.00", output_per_million="15.00")


def test_p50_is_priced_at_the_starting_model_and_p90_at_the_dearest_model_the_ladder_may_climb_to() -> None:
    """Issue 14 item 10: the forecast uses the price snapshot in force for the ladder's models."""
    forecast = forecast_task(replace(INPUTS, model="cheap-model"), price=CHEAP,
                             climb=[ModelPrice(model="capable-model", price=CAPABLE)])
    # P50 at the cheap model: 96k × $1/M + 32k × $5/M = $0.096 + $0.16 = $0.256 → $0.26 (rounded up).
    # P90 at the capable one: 192k × $3/M + 64k × $15/M = $0.576 + $0.96 = $1.536 → $1.54.
    assert forecast.cost.low == Money.parse("$0.26") and forecast.cost.high == Money.parse("$1.54")
    assert forecast.uncertainty == ()
    alone = forecast_task(replace(INPUTS, model="cheap-model"), price=CHEAP)
    # P90 at the cheap model alone: 192k × $1/M + 64k × $5/M = $0.192 + $0.32 = $0.512 → $0.52.
    assert alone.cost.high == Money.parse("$0.52") and alone.inputs_sha256 != forecast.inputs_sha256
    # a climb to a cheaper model never lowers the P90 end
    cheaper = forecast_task(INPUTS, price=CAPABLE, climb=[ModelPrice(model="cheap-model", price=CHEAP)])
    assert cheaper.cost.high == Money.parse("$1.54")


def test_a_model_on_the_ladder_without_a_price_leaves_the_p90_end_unknown_with_its_reason() -> None:
    forecast = forecast_task(replace(INPUTS, model="cheap-model"), price=CHEAP,
                             climb=[ModelPrice(model="capable-model", price=None)])
    assert forecast.cost.low == Money.parse("$0.26")
    assert isinstance(forecast.cost.high, UnknownCost) and not forecast.cost.is_known
    assert forecast.cost.reasons == ("no price for model capable-model",)
    assert str(forecast.cost) == "unknown (no price for model capable-model)"
    assert "price-unavailable" in forecast.uncertainty
    assert forecast.is_for(replace(INPUTS, model="cheap-model"), CHEAP, [ModelPrice(model="capable-model", price=None)])
    assert not forecast.is_for(replace(INPUTS, model="cheap-model"), CHEAP,
                               [ModelPrice(model="capable-model", price=CAPABLE)])


def test_prices_in_two_currencies_are_not_converted() -> None:
    euros = Price.from_per_million_tokens(currency=Currency.parse("EUR"), input_per_million="1.00",
                                          output_per_million="1.00")
    forecast = forecast_task(INPUTS, price=CHEAP, climb=[ModelPrice(model="euro-model", price=euros)])
    assert forecast.cost.low == Money.parse("$0.26")
    assert forecast.cost.reasons == ("the ladder's models are priced in EUR and USD",)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"likely_files": 0}, "scope-not-localized"),
        ({"checks": 0}, "validation-unknown"),
        ({"repository_files": 10_001}, "large-repository"),
        ({"repository_bytes": 600 * 1024 * 1024}, "large-repository"),
        ({"likely_files": 21}, "wide-likely-file-set"),
    ],
)
def test_uncertainty_reasons_are_listed(change: dict[str, int], reason: str) -> None:
    assert reason in forecast_task(replace(INPUTS, **change), price=PRICE).uncertainty  # type: ignore[arg-type]


def test_repository_size_buckets_are_capped_at_ten_each() -> None:
    huge = forecast_task(replace(INPUTS, repository_files=10**9, repository_bytes=10**15), price=PRICE)
    capped = forecast_task(replace(INPUTS, repository_files=10_000, repository_bytes=500 * 1024 * 1024), price=PRICE)
    assert huge.wall_seconds == capped.wall_seconds and huge.tokens == capped.tokens


def test_a_forecast_is_bound_to_its_inputs_and_price() -> None:
    forecast = forecast_task(INPUTS, price=PRICE)
    assert forecast.is_for(INPUTS, PRICE)
    assert not forecast.is_for(INPUTS, None)
    other_price = Price.from_per_million_tokens(
        currency=USD, input_per_million="3.01", output_per_million="15.00",
        cache_read_per_million="0.30", cache_write_per_million="3.75",
    )  # fmt: skip
    assert not forecast.is_for(INPUTS, other_price)
    digests = {forecast.inputs_sha256}
    for change in ({"effort": Effort.MAX}, {"model": "gpt-5"}, {"repository_revision": "1" * 40},
                   {"task_fingerprint": "e" * 64}, {"checks": 3}, {"task_class": TaskClass.FEATURE}):  # fmt: skip
        changed = replace(INPUTS, **change)
        assert not forecast.is_for(changed, PRICE)
        digests.add(forecast_task(changed, price=PRICE).inputs_sha256)
    assert len(digests) == 7


@pytest.mark.parametrize("field", ["repository_files", "repository_bytes", "likely_files", "checks"])
def test_counts_must_be_non_negative_integers(field: str) -> None:
    with pytest.raises(InvalidValueError):
        replace(INPUTS, **{field: -1})  # type: ignore[arg-type]
    with pytest.raises(InexactNumberError):
        replace(INPUTS, **{field: 1.5})  # type: ignore[arg-type]


@given(
    st.sampled_from(TaskClass), st.integers(0, 10**7), st.integers(0, 10**12), st.integers(0, 200), st.integers(0, 50)
)
def test_p90_is_exactly_twice_p50_and_more_likely_files_never_cost_less(
    task_class: TaskClass, files: int, size: int, likely: int, checks: int
) -> None:
    inputs = replace(INPUTS, task_class=task_class, repository_files=files, repository_bytes=size,
                     likely_files=likely, checks=checks)  # fmt: skip
    forecast = forecast_task(inputs, price=PRICE)
    assert forecast.wall_seconds.p90 == 2 * forecast.wall_seconds.p50
    assert forecast.tokens.p90 == 2 * forecast.tokens.p50
    wider = forecast_task(replace(inputs, likely_files=likely + 1), price=PRICE)
    assert wider.wall_seconds.p50 > forecast.wall_seconds.p50
    assert isinstance(wider.cost.high, Money) and isinstance(forecast.cost.high, Money)
    assert wider.cost.high >= forecast.cost.high
