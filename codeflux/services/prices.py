"""``PriceService``: the per-model rates calls are priced with.

* ``ListPrices`` — the shipped defaults merged with the user's recorded revisions (theirs win), each with
  its effective date and source; a rate nobody published is empty (unknown), never 0.
* ``SetPrice`` — records the user's own rates for a model as its next revision (a ``price-set`` event in
  the system journal). Rates are decimal strings in major units per million tokens (``3.00`` is $3 per
  1M tokens), at most 10 digits after the point; :func:`parse_price` refuses anything else and is what
  the terminal checks its flags with before anything is written.

Nothing here contacts a provider.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.spending.prices import PriceCatalog, PriceListing
from codeflux.domain.errors import UsageError
from codeflux.domain.money import Currency
from codeflux.domain.pricing import Price, PriceComponent
from codeflux.domain.providers import ProviderName
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name

__all__ = ["FIELD_LABELS", "ParsedPrice", "methods", "parse_price", "price_list"]

_SERVICE: Final = "PriceService"
_RATE: Final = re.compile(r"\d{1,7}(?:\.\d{1,10})?")
_TOO_FINE: Final = re.compile(r"\d+\.\d{11,}")
_MODEL: Final = re.compile(r"[!-~]{1,200}")

# How a field is named in a refusal: the request's own names (the terminal passes its flags instead).
FIELD_LABELS: Final[Mapping[str, str]] = {name: name.replace("_", " ") for name in (
    "provider", "model", "input", "output", "cache_read", "cache_write", "cache_write_1h", "currency",
    "effective_date")}


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedPrice:
    provider: ProviderName
    model: str
    price: Price
    effective_date: dt.date | None


def _rate(text: str, label: str) -> str:
    if text.startswith("-"):
        raise UsageError(f"{label} cannot be negative")
    if _TOO_FINE.fullmatch(text):
        raise UsageError(f"{label} has more than 10 digits after the point")
    if _RATE.fullmatch(text) is None:
        raise UsageError(f"{label} must be a decimal per million tokens, such as 3.00 (at most 7 digits before the "
                         "point)")
    return text


def parse_price(request: pb.SetPriceRequest, labels: Mapping[str, str] = FIELD_LABELS) -> ParsedPrice:
    """The request's rates as an exact :class:`Price`, or :class:`InvalidValueError` naming the field."""
    provider = ProviderName.parse(request.provider)
    if _MODEL.fullmatch(request.model) is None:
        raise UsageError(f"{labels['model']} must be 1 to 200 printable characters without spaces")
    currency = Currency.parse(request.currency)
    price = Price.from_per_million_tokens(
        currency=currency, input_per_million=_rate(request.input, labels["input"]),
        output_per_million=_rate(request.output, labels["output"]),
        cache_read_per_million=_rate(request.cache_read, labels["cache_read"]) if request.cache_read else None,
        cache_write_per_million=_rate(request.cache_write, labels["cache_write"]) if request.cache_write else None,
        cache_write_1h_per_million=(_rate(request.cache_write_1h, labels["cache_write_1h"]) if request.cache_write_1h
                                    else None))
    effective = None
    if request.effective_date:
        try:
            effective = dt.date.fromisoformat(request.effective_date)
        except ValueError:
            raise UsageError(f"{labels['effective_date']} must be a date written YYYY-MM-DD") from None
    return ParsedPrice(provider=provider, model=request.model, price=price, effective_date=effective)


def _per_million(price: Price, component: PriceComponent) -> str:
    return price.per_million_text(component) or ""


def price_list(listings: Sequence[PriceListing], *, outcome: str = "") -> pb.PriceList:
    """The listing as every PriceService reply carries it (also what the terminal shows without a database)."""
    return pb.PriceList(outcome=outcome, prices=[pb.PriceRow(
        provider=item.provider, model=item.model, aliases=list(item.aliases),
        input=_per_million(item.price, PriceComponent.INPUT), output=_per_million(item.price, PriceComponent.OUTPUT),
        cache_read=_per_million(item.price, PriceComponent.CACHE_READ),
        cache_write=_per_million(item.price, PriceComponent.CACHE_WRITE),
        cache_write_1h=_per_million(item.price, PriceComponent.CACHE_WRITE_1H), currency=item.price.currency.code,
        effective_date=item.effective_date.isoformat(), source=item.source.value, revision=item.revision or 0)
        for item in listings])


def _provider_filter(text: str) -> str | None:
    return ProviderName.parse(text).value if text else None


def _set(app: CoordinatorApp, request: pb.SetPriceRequest) -> pb.PriceList:
    parsed = parse_price(request)
    effective = parsed.effective_date or dt.datetime.now(dt.UTC).date()
    catalog = PriceCatalog(app.db)
    row = catalog.set_user_price(provider=parsed.provider.value, model=parsed.model, price=parsed.price,
                                 effective_date=effective)
    shown = ", ".join(f"{component.value} {parsed.price.per_million_text(component) or 'unknown'}"
                      for component in (PriceComponent.INPUT, PriceComponent.OUTPUT, PriceComponent.CACHE_READ,
                                        PriceComponent.CACHE_WRITE, PriceComponent.CACHE_WRITE_1H))
    outcome = (f"prices: recorded {parsed.provider.value} {parsed.model} revision {row.revision} (user, effective "
               f"{effective.isoformat()}): {shown} {parsed.price.currency.code} per million tokens")
    return price_list(catalog.list_prices(parsed.provider.value), outcome=outcome)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def list_prices(ctx: CallContext, request: pb.ListPricesRequest) -> pb.PriceList:
        return price_list(PriceCatalog(app.db).list_prices(_provider_filter(request.provider)))

    def set_price(ctx: CallContext, request: pb.SetPriceRequest) -> pb.PriceList:
        mutation = mutation_of(ctx, "SetPrice", request.control)
        return ledger.run(mutation, request, pb.PriceList, lambda: _set(app, request))

    return [
        UnaryMethod(name=method_name(_SERVICE, "ListPrices"), request_type=pb.ListPricesRequest,
                    response_type=pb.PriceList, handler=list_prices),
        UnaryMethod(name=method_name(_SERVICE, "SetPrice"), request_type=pb.SetPriceRequest,
                    response_type=pb.PriceList, handler=set_price, mutating=True),
    ]
