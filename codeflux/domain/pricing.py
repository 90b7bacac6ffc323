"""Token usage and exact per-token prices: what a call used, and what each used token costs.

Providers publish rates per million tokens in major units ("$3.00 per 1M input tokens"). A
:class:`Price` keeps them as exact :class:`~fractions.Fraction` values in *minor units per token*
(the field names say so: ``input_minor_per_token``), and :meth:`Price.from_per_million_tokens` is the
only way in from the published unit, so a per-million figure cannot be used as a per-token one: "3.00"
becomes 3/10000 of a cent per token, and 1,000,000 tokens cost exactly 300 cents.

A :class:`TokenUsage` count that the provider did not report is ``None`` (unknown), never 0; pricing a
usage with an unknown count gives an :class:`~codeflux.domain.money.UnknownCost` saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.money import (
    Cost,
    Currency,
    Money,
    Rounding,
    UnknownCost,
    refuse_inexact,
    require_exact_fraction,
    require_exact_int,
    round_minor_units,
)

__all__ = ["TOKENS_PER_MILLION", "Price", "PriceComponent", "PriceSource", "TokenUsage"]

TOKENS_PER_MILLION: Final = 1_000_000
_RATE = re.compile(r"\d{1,12}(?:\.\d{1,12})?")
_USAGE_FIELDS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                        "cache_write_1h_tokens", "reasoning_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """Tokens one call used, as the provider reported them. ``None`` is *not reported*: unknown, never 0.

    The components do not overlap, so each is priced once: ``input_tokens`` is uncached input (billed
    at the input rate), ``cache_read_tokens`` and ``cache_write_tokens`` the cached parts, and
    ``output_tokens`` every output token *including* reasoning; ``reasoning_tokens`` is the part of
    the output spent on reasoning, where a provider reports it.

    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written for one hour (Anthropic bills
    those at a higher rate than the default 5-minute writes); None where the provider does not break its
    writes down by lifetime — then every write is one of the provider's default writes (an adapter whose
    provider has lifetimes and does not say reports None for the *writes*, not for this breakdown).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_1h_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in _USAGE_FIELDS:
            value = getattr(self, name)
            if value is not None and require_exact_int(value, kind=f"token usage {name}") < 0:
                raise InvalidValueError(kind="token usage", reason=f"{name} cannot be negative")
        reasoning, output = self.reasoning_tokens, self.output_tokens
        if reasoning is not None and output is not None and reasoning > output:
            raise InvalidValueError(kind="token usage", reason="reasoning tokens are part of the output tokens")
        one_hour, writes = self.cache_write_1h_tokens, self.cache_write_tokens
        if one_hour is not None and writes is not None and one_hour > writes:
            raise InvalidValueError(kind="token usage", reason="1-hour cache writes are part of the cache writes")

    @property
    def is_known(self) -> bool:
        """Whether input, output and both cache counts were all reported (reasoning is a breakdown)."""
        counts = (self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens)
        return all(count is not None for count in counts)


class PriceSource(StrEnum):
    """Where a recorded price revision came from: the defaults codeflux ships, or the user."""

    SHIPPED = "shipped"
    USER = "user"


class PriceComponent(StrEnum):
    """The priced parts of a call's usage."""

    INPUT = "input"
    OUTPUT = "output"
    CACHE_READ = "cache-read"
    CACHE_WRITE = "cache-write"
    CACHE_WRITE_1H = "cache-write-1h"
    REASONING = "reasoning"


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """Exact rates in ``currency`` *minor units per token*; ``None`` is "no rate published".

    Build it with :meth:`from_per_million_tokens` from the per-million decimal strings providers
    publish. ``reasoning_minor_per_token`` is only for providers that bill reasoning apart from output;
    without it reasoning tokens are billed as the output tokens they are part of.
    ``cache_write_minor_per_token`` is the rate of the provider's default cache writes (Anthropic's
    5-minute ones), ``cache_write_1h_minor_per_token`` that of 1-hour writes: without it a reported
    1-hour write is an unknown charge (never the 5-minute rate, never 0).
    """

    currency: Currency
    input_minor_per_token: Fraction | None
    output_minor_per_token: Fraction | None
    cache_read_minor_per_token: Fraction | None = None
    cache_write_minor_per_token: Fraction | None = None
    reasoning_minor_per_token: Fraction | None = None
    cache_write_1h_minor_per_token: Fraction | None = None

    def __post_init__(self) -> None:
        for component in PriceComponent:
            name = _RATE_FIELD[component]
            value = getattr(self, name)
            if value is None:
                continue
            rate = require_exact_fraction(value, kind=f"price {component.value} rate")
            if rate < 0:
                raise InvalidValueError(kind="price", reason=f"the {component.value} rate cannot be negative")
            object.__setattr__(self, name, rate)

    @classmethod
    def from_per_million_tokens(
        cls,
        *,
        currency: Currency,
        input_per_million: str | None,
        output_per_million: str | None,
        cache_read_per_million: str | None = None,
        cache_write_per_million: str | None = None,
        reasoning_per_million: str | None = None,
        cache_write_1h_per_million: str | None = None,
    ) -> Price:
        """Rates given as major units per million tokens (``"3.00"`` = $3 per 1M tokens = 3/10000 ¢ each)."""

        def convert(text: str | None, component: PriceComponent) -> Fraction | None:
            if text is None:
                return None
            refuse_inexact(text, kind=f"price {component.value} rate")
            if isinstance(text, str) and text.startswith("-"):
                raise InvalidValueError(kind="price", reason=f"the {component.value} rate cannot be negative")
            if not isinstance(text, str) or _RATE.fullmatch(text) is None:
                raise InvalidValueError(
                    kind="price", reason=f"the {component.value} rate must be a decimal string such as '3.00'"
                )
            return Fraction(text) * currency.minor_per_major / TOKENS_PER_MILLION

        return cls(
            currency=currency,
            input_minor_per_token=convert(input_per_million, PriceComponent.INPUT),
            output_minor_per_token=convert(output_per_million, PriceComponent.OUTPUT),
            cache_read_minor_per_token=convert(cache_read_per_million, PriceComponent.CACHE_READ),
            cache_write_minor_per_token=convert(cache_write_per_million, PriceComponent.CACHE_WRITE),
            reasoning_minor_per_token=convert(reasoning_per_million, PriceComponent.REASONING),
            cache_write_1h_minor_per_token=convert(cache_write_1h_per_million, PriceComponent.CACHE_WRITE_1H),
        )

    def rate(self, component: PriceComponent) -> Fraction | None:
        """Minor units per token for ``component``, or None."""
        rate: Fraction | None = getattr(self, _RATE_FIELD[component])
        return rate

    def per_million_text(self, component: PriceComponent) -> str | None:
        """The rate as a per-million decimal string in major units (``"3.00"``), for display."""
        rate = self.rate(component)
        if rate is None:
            return None
        major = rate * TOKENS_PER_MILLION / self.currency.minor_per_major
        digits = 2
        while (major * 10**digits).denominator != 1 and digits < 12:
            digits += 1
        scaled = round_minor_units(major * 10**digits, Rounding.HALF_UP)
        whole, fraction = divmod(scaled, 10**digits)
        return f"{whole}.{fraction:0{digits}d}"

    def exact_minor_cost(self, usage: TokenUsage, *, model: str) -> Fraction | UnknownCost:
        """The exact cost of ``usage`` in minor units, or unknown with every reason.

        A component counts as 0 when its count is 0 or its rate is 0 (anything times 0 is 0, even an
        unreported count). Otherwise an unreported count, or a used component without a rate, makes
        the whole cost unknown.
        """
        reasons: list[str] = []
        total = Fraction(0)
        for label, count, rate in self._billed_parts(usage):
            if rate == 0 or count == 0:
                continue
            if count is None:
                reasons.append(f"{label} tokens not reported by the provider")
            elif rate is None:
                reasons.append(f"no {label} price for model {model}")
            else:
                total += count * rate
        return UnknownCost(tuple(reasons)) if reasons else total

    def cost_of(self, usage: TokenUsage, *, model: str) -> Cost:
        """The charge for ``usage``: the exact cost rounded *up* to a whole minor unit, or unknown."""
        exact = self.exact_minor_cost(usage, model=model)
        if isinstance(exact, UnknownCost):
            return exact
        return Money.from_exact_minor(exact, currency=self.currency, rounding=Rounding.UP)

    def _billed_parts(self, usage: TokenUsage) -> list[tuple[str, int | None, Fraction | None]]:
        parts = [
            ("input", usage.input_tokens, self.input_minor_per_token),
            ("cache-read", usage.cache_read_tokens, self.cache_read_minor_per_token),
            *self._cache_write_parts(usage),
        ]
        reasoning_rate = self.reasoning_minor_per_token
        if reasoning_rate is None or reasoning_rate == self.output_minor_per_token:
            return [*parts, ("output", usage.output_tokens, self.output_minor_per_token)]
        # Reasoning billed apart: the non-reasoning output at the output rate, reasoning at its own.
        output, reasoning = usage.output_tokens, usage.reasoning_tokens
        plain = None if output is None or reasoning is None else output - reasoning
        return [
            *parts,
            ("non-reasoning output", plain, self.output_minor_per_token),
            ("reasoning", reasoning, reasoning_rate),
        ]

    def _cache_write_parts(self, usage: TokenUsage) -> list[tuple[str, int | None, Fraction | None]]:
        """The writes at the default rate and the 1-hour writes at theirs. Without a breakdown (None) every write
        is a default one; with one, a 1-hour write needs the 1-hour rate (none: the cost is unknown)."""
        writes, one_hour = usage.cache_write_tokens, usage.cache_write_1h_tokens
        default_rate, one_hour_rate = self.cache_write_minor_per_token, self.cache_write_1h_minor_per_token
        if one_hour is None or writes == 0:
            return [("cache-write", writes, default_rate)]
        default = None if writes is None else writes - one_hour
        return [("cache-write", default, default_rate), ("cache-write-1h", one_hour, one_hour_rate)]


_RATE_FIELD: Final = {
    PriceComponent.INPUT: "input_minor_per_token",
    PriceComponent.OUTPUT: "output_minor_per_token",
    PriceComponent.CACHE_READ: "cache_read_minor_per_token",
    PriceComponent.CACHE_WRITE: "cache_write_minor_per_token",
    PriceComponent.CACHE_WRITE_1H: "cache_write_1h_minor_per_token",
    PriceComponent.REASONING: "reasoning_minor_per_token",
}
