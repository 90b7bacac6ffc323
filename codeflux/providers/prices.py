"""Shipped default price snapshots, and the parser for user-supplied ones.

Each :class:`PriceSnapshot` names a provider, a model (with its aliases and dated ids), an exact
:class:`~codeflux.domain.pricing.Price`, the date from which the rates apply and where they come from.
Rates are written exactly as the providers publish them — decimal strings per million tokens, in
USD — and converted once, exactly, to minor units per token. A model with no snapshot has no price:
its cost is unknown, never 0.

These figures were copied from the providers' public price pages into codeflux; the pages change, so
``source`` says where to check, and a user override (recorded as a new revision by the gateway's
store) always wins. Anthropic rates are the standard ones for prompts up to 200K tokens (codeflux
never sends the long-context beta header) and 5-minute cache writes. OpenAI bills no cache writes
(its prompt caching is automatic), so their rate is 0; reasoning tokens are billed as output by both.

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

__all__ = ["DEFAULT_PRICE_SNAPSHOTS", "PriceSnapshot", "default_price_snapshot", "parse_price_snapshot_json"]

_ANTHROPIC_SOURCE = "https://www.anthropic.com/pricing (API; prompts up to 200K tokens, 5-minute cache writes)"
_OPENAI_SOURCE = "https://openai.com/api/pricing/ (standard tier)"


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


def _usd(input_: str, output: str, cache_read: str, cache_write: str) -> Price:
    return Price.from_per_million_tokens(
        currency=USD,
        input_per_million=input_,
        output_per_million=output,
        cache_read_per_million=cache_read,
        cache_write_per_million=cache_write,
    )


def _anthropic(model: str, dated: str, date: str, rates: tuple[str, str, str, str]) -> PriceSnapshot:
    return PriceSnapshot(
        provider=ProviderName.ANTHROPIC, model=model, aliases=(dated,), price=_usd(*rates),
        effective_date=dt.date.fromisoformat(date), source=_ANTHROPIC_SOURCE,
    )  # fmt: skip


def _openai(model: str, dated: str, date: str, rates: tuple[str, str, str]) -> PriceSnapshot:
    input_, cache_read, output = rates
    return PriceSnapshot(
        provider=ProviderName.OPENAI, model=model, aliases=(dated,), price=_usd(input_, output, cache_read, "0"),
        effective_date=dt.date.fromisoformat(date), source=_OPENAI_SOURCE,
    )  # fmt: skip


# Anthropic: (input, output, cache read, cache write) per million tokens.
# OpenAI: (input, cached input, output) per million tokens.
DEFAULT_PRICE_SNAPSHOTS: tuple[PriceSnapshot, ...] = (
    _anthropic("claude-opus-4-5", "claude-opus-4-5-20251101", "2025-11-24", ("5.00", "25.00", "0.50", "6.25")),
    _anthropic("claude-opus-4-1", "claude-opus-4-1-20250805", "2025-08-05", ("15.00", "75.00", "1.50", "18.75")),
    _anthropic("claude-opus-4-0", "claude-opus-4-20250514", "2025-05-22", ("15.00", "75.00", "1.50", "18.75")),
    _anthropic("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "2025-09-29", ("3.00", "15.00", "0.30", "3.75")),
    _anthropic("claude-sonnet-4-0", "claude-sonnet-4-20250514", "2025-05-22", ("3.00", "15.00", "0.30", "3.75")),
    _anthropic("claude-haiku-4-5", "claude-haiku-4-5-20251001", "2025-10-15", ("1.00", "5.00", "0.10", "1.25")),
    _openai("gpt-5", "gpt-5-2025-08-07", "2025-08-07", ("1.25", "0.125", "10.00")),
    _openai("gpt-5-mini", "gpt-5-mini-2025-08-07", "2025-08-07", ("0.25", "0.025", "2.00")),
    _openai("gpt-5-nano", "gpt-5-nano-2025-08-07", "2025-08-07", ("0.05", "0.005", "0.40")),
    _openai("gpt-4.1", "gpt-4.1-2025-04-14", "2025-04-14", ("2.00", "0.50", "8.00")),
    _openai("gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", "2025-04-14", ("0.40", "0.10", "1.60")),
    _openai("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", "2025-04-14", ("0.10", "0.025", "0.40")),
    _openai("gpt-4o", "gpt-4o-2024-08-06", "2024-08-06", ("2.50", "1.25", "10.00")),
    _openai("gpt-4o-mini", "gpt-4o-mini-2024-07-18", "2024-07-18", ("0.15", "0.075", "0.60")),
    _openai("o3", "o3-2025-04-16", "2025-06-10", ("2.00", "0.50", "8.00")),
    _openai("o4-mini", "o4-mini-2025-04-16", "2025-04-16", ("1.10", "0.275", "4.40")),
)  # fmt: skip


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
    )
    return PriceSnapshot(
        provider=ProviderName.parse(raw.provider),
        model=raw.model,
        aliases=(),
        price=price,
        effective_date=raw.effective_date,
        source=raw.source,
    )
