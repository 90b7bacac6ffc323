"""The shipped price snapshot is generated from the locked genai-prices release, exactly, and refuses inexact data.

The data file of the installed (hash-locked) release is the real input; the small data texts below are written
in that file's own syntax to show what is refused.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from codeflux.domain.errors import InexactNumberError, InvalidValueError
from codeflux.domain.providers import ProviderName
from codeflux.providers import price_data
from codeflux.providers.capabilities import ModelCapabilities, OpenAIWire
from codeflux.providers.price_import import (
    SOURCE_DISTRIBUTION,
    installed_source,
    main,
    pricing_pages,
    read_source,
    render_price_data,
    select_rates,
)

REPO = Path(__file__).resolve().parents[3]
GENERATED = REPO / "codeflux" / "providers" / "price_data.py"


def _known(model: str, *aliases: str, provider: ProviderName = ProviderName.OPENAI,
           window: int = 400_000) -> ModelCapabilities:
    return ModelCapabilities(provider=provider, model=model, aliases=aliases, wire=OpenAIWire.CHAT_COMPLETIONS,
                             context_window=window, source="test")


def _data(prices: str, *, match: str = "ClauseEquals(equals='m-1')", model_id: str = "m-1") -> str:
    """A genai-prices data.py text with one OpenAI model, in the package's own syntax."""
    return f"""
import datetime
from decimal import Decimal

from .types import *

providers: list[Provider] = [
    Provider(
        id='openai',
        name='OpenAI',
        api_pattern='https://api\\\\.openai\\\\.com',
        pricing_urls=['https://example.test/pricing'],
        models=[
            ModelInfo(id='{model_id}', match={match}, prices={prices}),
        ],
    ),
]
"""


def _select(text: str, *known: ModelCapabilities, as_of: dt.date = dt.date(2026, 12, 1)) -> list[tuple[object, ...]]:
    rates = select_rates(read_source(text), as_of=as_of, known=known or (_known("m-1"),))
    return [(r.model, r.source_model, r.effective_date, r.input, r.output, r.cache_read, r.cache_write) for r in rates]


def test_the_committed_snapshot_is_what_the_locked_release_produces() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--as-of", "committed"]) == 0
    assert out.getvalue() == GENERATED.read_text(encoding="utf-8")
    locked = re.search(r"^genai-prices==(\S+) \\$", (REPO / "requirements" / "dev.lock").read_text(), re.MULTILINE)
    assert locked is not None
    assert price_data.SOURCE_VERSION == locked[1] == importlib.metadata.version(SOURCE_DISTRIBUTION)


def test_regenerating_today_records_the_day_and_keeps_the_release() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        main(["--as-of", "today"], today=lambda: dt.date(2027, 1, 2))
    assert 'SNAPSHOT_DATE: Final = "2027-01-02"' in out.getvalue()
    assert f'SOURCE_VERSION: Final = "{price_data.SOURCE_VERSION}"' in out.getvalue()


def test_the_release_prices_gpt_5_codex_as_gpt_5_and_claude_cache_writes() -> None:
    version, text = installed_source()
    providers = read_source(text)
    rates = {r.model: r for r in select_rates(providers, as_of=dt.date(2026, 12, 3))}
    assert (rates["gpt-5-codex"].source_model, rates["gpt-5-codex"].input, rates["gpt-5-codex"].cache_read) == (
        "gpt-5", "1.25", "0.125")
    sonnet = rates["claude-sonnet-4-5"]  # tiered at 200,000 tokens: beyond the 200,000-token window, base rates
    assert (sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write, sonnet.cache_write_1h) == (
        "3", "15", "0.3", "3.75", "6")  # the source's cache_write_1h_mtok: 1-hour writes at 2× input
    rendered = render_price_data(list(rates.values()), version=version, as_of=dt.date(2026, 12, 3),
                                 pages=pricing_pages(providers))
    assert '("openai", "gpt-5-codex", "gpt-5", None, "1.25", "10", "0.125", None, None),' in rendered
    assert '("anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5", None, "3", "15", "0.3", "3.75", "6"),' in rendered


def test_the_one_hour_cache_write_rate_is_taken_where_the_source_gives_one() -> None:
    prices = ("ModelPrice(input_mtok=Decimal('3'), output_mtok=Decimal('15'), cache_write_mtok=Decimal('3.75'),"
              " cache_write_1h_mtok=Decimal('6'))")
    rates = select_rates(read_source(_data(prices)), as_of=dt.date(2026, 12, 1), known=(_known("m-1"),))
    assert [(r.cache_write, r.cache_write_1h) for r in rates] == [("3.75", "6")]
    without = select_rates(read_source(_data("ModelPrice(input_mtok=Decimal('3'), output_mtok=Decimal('15'))")),
                           as_of=dt.date(2026, 12, 1), known=(_known("m-1"),))
    assert [r.cache_write_1h for r in without] == [None]  # not given: none (a 1-hour write is then unknown)


def test_rates_are_the_decimal_texts_of_the_source() -> None:
    prices = ("ModelPrice(input_mtok=Decimal('0.625'), cache_read_mtok=Decimal('0.0625'), output_mtok=Decimal('5'),"
              " cache_write_mtok=Decimal('0.78125'))")
    assert _select(_data(prices)) == [("m-1", "m-1", None, "0.625", "5", "0.0625", "0.78125")]


@pytest.mark.parametrize(("written", "got"), [
    ("0.1", "float"),
    ("Decimal(0.1)", "float"),
    ("Decimal('1E-7')", "decimal text '1E-7'"),
    ("Decimal('-1')", "decimal text '-1'"),
])  # fmt: skip
def test_a_rate_that_is_not_an_exact_decimal_text_is_refused(written: str, got: str) -> None:
    with pytest.raises(InexactNumberError, match="input_mtok") as refused:
        _select(_data(f"ModelPrice(input_mtok={written}, output_mtok=Decimal('5'))"))
    assert refused.value.got == got


def test_a_float_outside_any_rate_is_not_refused() -> None:
    prices = "ModelPrice(input_mtok=Decimal('1'), output_mtok=Decimal('5'))"
    text = _data(prices).replace("api_pattern=", "ratio=0.5, api_pattern=")
    assert _select(text)[0][3:5] == ("1", "5")


def test_dated_prices_take_the_last_one_started_and_its_date() -> None:
    prices = ("[ConditionalPrice(prices=ModelPrice(input_mtok=Decimal('1'), output_mtok=Decimal('6'))),"
              " ConditionalPrice(constraint=StartDateConstraint(start_date=datetime.date(2026, 7, 30)),"
              " prices=ModelPrice(input_mtok=Decimal('0.2'), output_mtok=Decimal('1.2')))]")
    assert _select(_data(prices), as_of=dt.date(2026, 7, 29)) == [("m-1", "m-1", None, "1", "6", None, None)]
    assert _select(_data(prices), as_of=dt.date(2026, 7, 30)) == [
        ("m-1", "m-1", dt.date(2026, 7, 30), "0.2", "1.2", None, None)]


def test_a_tier_inside_the_context_window_is_refused_not_priced_at_its_base() -> None:
    prices = ("ModelPrice(input_mtok=TieredPrices(base=Decimal('1'), tiers=[Tier(start=272000, price=Decimal('2'))]),"
              " output_mtok=Decimal('6'))")
    with pytest.raises(InvalidValueError, match="tier starts at 272000 tokens, inside the 400000-token"):
        _select(_data(prices))
    assert _select(_data(prices), _known("m-1", window=272_000))[0][3] == "1"


def test_a_model_or_alias_the_source_prices_otherwise_is_refused() -> None:
    prices = "ModelPrice(input_mtok=Decimal('1'), output_mtok=Decimal('5'))"
    with pytest.raises(InvalidValueError, match="no price for openai model m-2"):
        _select(_data(prices), _known("m-2"))
    with pytest.raises(InvalidValueError, match="alias m-1-2026 is not priced as m-1"):
        _select(_data(prices), _known("m-1", "m-1-2026"))
    matched = _data(prices, match="ClauseOr(or_=[ClauseEquals(equals='m-1'), ClauseRegex(regex='^m-1-\\\\d{4}$')])")
    assert _select(matched, _known("m-1", "m-1-2026")) == [("m-1", "m-1", None, "1", "5", None, None)]


def test_text_that_is_not_price_data_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="no `providers"):
        read_source("x = 1\n")
    with pytest.raises(InvalidValueError, match="unexpected"):
        read_source("providers: list[Provider] = [Provider(id=lambda: 0)]\n")
