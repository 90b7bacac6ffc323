"""Shipped price snapshots: units pinned, every entry dated and sourced, no float anywhere near money."""

from __future__ import annotations

import datetime as dt
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from codeflux.domain.errors import InexactNumberError, InvalidValueError, UsageError
from codeflux.domain.money import USD, Money, UnknownCost
from codeflux.domain.pricing import PriceComponent, TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import MODEL_CAPABILITIES
from codeflux.providers.prices import (
    DEFAULT_PRICE_SNAPSHOTS,
    SHIPPED_SOURCE,
    default_price_snapshot,
    parse_price_snapshot_json,
)

REPO = Path(__file__).resolve().parents[3]
MONEY_MODULES = ["codeflux/domain/money.py", "codeflux/domain/pricing.py", "codeflux/providers/prices.py",
                 "codeflux/providers/price_data.py", "codeflux/providers/price_import.py"]
ONE_MILLION_INPUT = TokenUsage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)


def test_a_per_million_rate_is_priced_in_the_right_unit() -> None:
    snapshot = default_price_snapshot(ProviderName.ANTHROPIC, "claude-sonnet-4-5")
    assert snapshot is not None
    assert snapshot.price.per_million_text(PriceComponent.INPUT) == "3.00"
    # 1,000,000 input tokens at "3.00" per million cost 300 cents; one token costs 3/10000 of a cent, exactly.
    assert snapshot.price.cost_of(ONE_MILLION_INPUT, model="claude-sonnet-4-5") == Money(minor=300, currency=USD)
    assert snapshot.price.input_minor_per_token == Fraction(3, 10_000)
    one = TokenUsage(input_tokens=1, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)
    assert snapshot.price.exact_minor_cost(one, model="claude-sonnet-4-5") == Fraction(3, 10_000)


@pytest.mark.parametrize("path", MONEY_MODULES)
def test_no_float_is_built_in_the_money_modules(path: str) -> None:
    source = (REPO / path).read_text()
    assert "float(" not in source
    assert re.search(r"(?<![\w\"'])\d+\.\d+(?![\w\"'])", _code_only(source)) is None, "a float literal"


def _code_only(source: str) -> str:
    # Strip strings and comments: rates are written as decimal *strings*, which is the point.
    without_strings = re.sub(r'("""|\'\'\')[\s\S]*?\1|"[^"\n]*"|\'[^\'\n]*\'', '""', source)
    return re.sub(r"#.*", "", without_strings)


def test_every_shipped_snapshot_is_dated_sourced_and_prices_input_and_output() -> None:
    seen: set[tuple[ProviderName, str]] = set()
    for snapshot in DEFAULT_PRICE_SNAPSHOTS:
        names = {snapshot.model, *snapshot.aliases}
        assert not any((snapshot.provider, name) in seen for name in names), snapshot.model
        seen.update((snapshot.provider, name) for name in names)
        assert dt.date(2024, 1, 1) <= snapshot.effective_date <= dt.date.today()
        assert snapshot.source.startswith(f"{SHIPPED_SOURCE}; https://")
        price = snapshot.price
        assert price.currency == USD
        for component in (PriceComponent.INPUT, PriceComponent.OUTPUT, PriceComponent.CACHE_READ):
            rate = price.rate(component)
            assert rate is not None and rate > 0, (snapshot.model, component)
        assert price.rate(PriceComponent.CACHE_WRITE) is not None
        assert price.output_minor_per_token is not None and price.input_minor_per_token is not None
        assert price.output_minor_per_token > price.input_minor_per_token


def test_snapshots_cover_both_providers_and_match_dated_ids() -> None:
    providers = {snapshot.provider for snapshot in DEFAULT_PRICE_SNAPSHOTS}
    assert providers == {ProviderName.ANTHROPIC, ProviderName.OPENAI}
    assert default_price_snapshot(ProviderName.OPENAI, "gpt-5-2025-08-07") is default_price_snapshot(
        ProviderName.OPENAI, "gpt-5"
    )
    assert default_price_snapshot(ProviderName.ANTHROPIC, "gpt-5") is None


def test_every_model_codeflux_knows_has_a_shipped_price_named_by_its_source() -> None:
    assert SHIPPED_SOURCE.startswith("genai-prices 0.")
    priced = {(snapshot.provider, snapshot.model, snapshot.aliases) for snapshot in DEFAULT_PRICE_SNAPSHOTS}
    assert priced == {(row.provider, row.model, row.aliases) for row in MODEL_CAPABILITIES}


def test_gpt_5_codex_is_priced_as_gpt_5_with_cached_input() -> None:
    codex = default_price_snapshot(ProviderName.OPENAI, "gpt-5-codex")
    gpt5 = default_price_snapshot(ProviderName.OPENAI, "gpt-5")
    assert codex is not None and gpt5 is not None
    assert codex.price == gpt5.price
    assert [codex.price.per_million_text(c) for c in PriceComponent] == [
        "1.25", "10.00", "0.125", "0.00", None, None]  # input, output, cache read, cache write, 1-hour cache write
    # (OpenAI has none: a reported one would be unknown), reasoning (as output)
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000,
                       cache_write_tokens=0)
    assert codex.price.cost_of(usage, model="gpt-5-codex") == Money(minor=125 + 100 + 25, currency=USD)


def test_a_model_codeflux_has_no_rates_for_has_no_snapshot() -> None:
    assert default_price_snapshot(ProviderName.OPENAI, "gpt-9-preview") is None
    assert default_price_snapshot(ProviderName.OPENAI_COMPATIBLE, "qwen2.5-coder:7b") is None


def test_openai_cache_writes_are_free_and_cache_reads_discounted() -> None:
    snapshot = default_price_snapshot(ProviderName.OPENAI, "gpt-4.1")
    assert snapshot is not None
    assert snapshot.price.cache_write_minor_per_token == 0
    usage = TokenUsage(input_tokens=0, output_tokens=0, cache_read_tokens=1_000_000, cache_write_tokens=None)
    assert snapshot.price.cost_of(usage, model="gpt-4.1") == Money(minor=50, currency=USD)


USER_SNAPSHOT = {
    "provider": "openai-compatible", "model": "qwen2.5-coder:7b", "effective_date": "2025-11-01",
    "source": "my electricity bill", "input_per_million": "0.02", "output_per_million": "0.02",
}  # fmt: skip


def test_a_user_snapshot_is_read_from_json_with_decimal_string_rates() -> None:
    snapshot = parse_price_snapshot_json(json.dumps(USER_SNAPSHOT))
    assert snapshot.provider is ProviderName.OPENAI_COMPATIBLE
    assert snapshot.effective_date == dt.date(2025, 11, 1)
    assert snapshot.price.input_minor_per_token == Fraction(2, 1_000_000)
    assert isinstance(snapshot.price.cost_of(TokenUsage(input_tokens=1), model="q"), UnknownCost)


@pytest.mark.parametrize("rate", [3.0, 3, True])
def test_a_user_snapshot_with_a_number_for_a_rate_is_refused(rate: object) -> None:
    expected = InexactNumberError if isinstance(rate, float) else InvalidValueError
    with pytest.raises(expected, match="input_per_million"):
        parse_price_snapshot_json(json.dumps({**USER_SNAPSHOT, "input_per_million": rate}))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"input_per_million": "-0.02"}, "cannot be negative"),
        ({"currency": "usd"}, "three capital letters"),
        ({"surprise": "field"}, "surprise"),
        ({"effective_date": "yesterday"}, "effective_date"),
        ({"model": ""}, "must not be empty"),
    ],
)
def test_a_bad_user_snapshot_is_refused_with_a_clear_error(change: dict[str, str], error: str) -> None:
    with pytest.raises(InvalidValueError, match=error):
        parse_price_snapshot_json(json.dumps({**USER_SNAPSHOT, **change}))


def test_a_user_snapshot_for_an_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown provider"):
        parse_price_snapshot_json(json.dumps({**USER_SNAPSHOT, "provider": "acme"}))
