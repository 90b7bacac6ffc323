"""Shipped default price snapshots, and the parser for user-supplied ones.

Each :class:`PriceSnapshot` names a provider, a model (with its aliases and dated ids), an exact
:class:`~codeflux.domain.pricing.Price`, the date from which the rates apply and where they come from.
Rates are written exactly as the providers publish them — decimal strings per million tokens, in
USD — and converted once, exactly, to minor units per token. A model with no snapshot has no price:
its cost is unknown, never 0.

The figures are generated (never hand-copied): :mod:`codeflux.providers.price_data` is written by
``cmd/codeflux-dev prices`` from the locked release of a maintained price package (genai-prices, read by
:mod:`codeflux.providers.price_import`), for every model of the capability table; each snapshot's ``source``
names the package, its version and the snapshot date, then the provider's pricing page. The pages change, and a
user override (recorded as a new revision by the gateway's store) always wins. Anthropic rates are the standard
ones for prompts up to 200K tokens (codeflux never sends the long-context beta header) and 5-minute cache
writes. An OpenAI model whose row gives no cache-write rate bills none (its prompt caching is automatic), so
that rate is 0; reasoning tokens are billed as output by both.

:func:`parse_price_snapshot_json` reads a user's snapshot: rates must be decimal strings — a JSON
number such as ``3.0`` is refused with :class:`InexactNumberError`, a negative rate or an unknown
field with :class:`InvalidValueError`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, ValidationError

from codeflux.domain.errors import InexactNumberError, InvalidValueError
from codeflux.domain.money import USD, Currency
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ProviderName
from codeflux.providers import price_data
from codeflux.providers.capabilities import capabilities_of

__all__ = ["DEFAULT_PRICE_SNAPSHOTS", "SHIPPED_SOURCE", "PriceSnapshot", "default_price_snapshot",
           "parse_price_snapshot_json"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceSnapshot:
    """The rates of one model from ``effective_date`` on, with their ``source``."""

    provider: ProviderName
    model: str
    aliases: tuple[str, ...]
    price: Price
    effective_date: dt.date
    source: str

    def matches(self, model: str) -> bool:
        """Whether ``model`` is this snapshot's model id or one of its aliases (exact match)."""
        return model == self.model or model in self.aliases


def _cache_write(text: str | None, provider: ProviderName) -> str | None:
    if text is None and provider is ProviderName.OPENAI:
        return "0"  # OpenAI's automatic prompt caching bills no writes unless the source gives a rate
    return text


def _snapshot(row: tuple[str, str, str, str | None, str, str, str | None, str | None, str | None]) -> PriceSnapshot:
    provider_name, model, _, effective, input_, output, cache_read, cache_write, cache_write_1h = row
    provider = ProviderName.parse(provider_name)
    capabilities = capabilities_of(provider, model)
    price = Price.from_per_million_tokens(
        currency=USD, input_per_million=input_, output_per_million=output,
        cache_read_per_million=cache_read, cache_write_per_million=_cache_write(cache_write, provider),
        cache_write_1h_per_million=cache_write_1h,
    )  # fmt: skip
    return PriceSnapshot(
        provider=provider, model=model, aliases=() if capabilities is None else capabilities.aliases, price=price,
        effective_date=dt.date.fromisoformat(effective or price_data.SNAPSHOT_DATE),
        source=f"{SHIPPED_SOURCE}; {price_data.PRICING_PAGES[provider.value]}",
    )  # fmt: skip


SHIPPED_SOURCE = f"{price_data.SOURCE} {price_data.SOURCE_VERSION} (snapshot {price_data.SNAPSHOT_DATE})"
"""The package, version and date the shipped rates come from, as every shipped snapshot's ``source`` begins."""
DEFAULT_PRICE_SNAPSHOTS: tuple[PriceSnapshot, ...] = tuple(_snapshot(row) for row in price_data.RATES)


def default_price_snapshot(provider: ProviderName, model: str) -> PriceSnapshot | None:
    """The shipped snapshot for ``model`` of ``provider``, or None (then the cost is unknown)."""
    for snapshot in DEFAULT_PRICE_SNAPSHOTS:
        if snapshot.provider is provider and snapshot.matches(model):
            return snapshot
    return None


class _SnapshotInput(BaseModel):
    """A user's price snapshot as JSON; every rate a decimal string per million tokens."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    provider: str
    model: str
    currency: str = "USD"
    effective_date: dt.date
    source: str
    input_per_million: str
    output_per_million: str
    cache_read_per_million: str | None = None
    cache_write_per_million: str | None = None
    reasoning_per_million: str | None = None
    cache_write_1h_per_million: str | None = None


def parse_price_snapshot_json(text: str | bytes) -> PriceSnapshot:
    """A user's snapshot from JSON, or :class:`InexactNumberError` (a float rate) /
    :class:`InvalidValueError` (anything else wrong), located but never echoing values."""
    try:
        raw = _SnapshotInput.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_context=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the snapshot"
        if isinstance(first.get("input"), float):
            raise InexactNumberError(kind=f"price snapshot {where}", got="float") from None
        raise InvalidValueError(kind="price snapshot", reason=f"{where}: {first['type']}") from None
    if not raw.model or not raw.source:
        raise InvalidValueError(kind="price snapshot", reason="model and source must not be empty")
    price = Price.from_per_million_tokens(
        currency=Currency.parse(raw.currency),
        input_per_million=raw.input_per_million,
        output_per_million=raw.output_per_million,
        cache_read_per_million=raw.cache_read_per_million,
        cache_write_per_million=raw.cache_write_per_million,
        reasoning_per_million=raw.reasoning_per_million,
        cache_write_1h_per_million=raw.cache_write_1h_per_million,
    )
    return PriceSnapshot(
        provider=ProviderName.parse(raw.provider),
        model=raw.model,
        aliases=(),
        price=price,
        effective_date=raw.effective_date,
        source=raw.source,
    )
