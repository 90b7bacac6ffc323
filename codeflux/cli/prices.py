"""`codeflux prices list|set`: the per-model rates calls are priced with.

``list`` shows the shipped defaults merged with your recorded revisions (yours win), each with its
effective date and source; a rate nobody published is shown as ``unknown``, never 0. ``set`` records a
new user revision. Rates are decimal strings in major units per million tokens (``3.00`` is $3 per
1M tokens), at most 10 digits after the point; a negative rate or anything that is not such a decimal
is a usage error. Nothing here contacts a provider.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from typing import Final

from codeflux.cli.context import CliContext
from codeflux.coordinator.spending.prices import PriceCatalog, PriceListing, merge_price_listings
from codeflux.domain.errors import DatabaseMissingError, UsageError
from codeflux.domain.money import Currency
from codeflux.domain.pricing import Price, PriceComponent
from codeflux.domain.providers import ProviderName
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS
from codeflux.store.opening import open_store

NAME = "prices"
SUMMARY = "list the model prices in force (shipped defaults and your revisions) or record your own"
RECORDS_APP_LOG = True

_RATE: Final = re.compile(r"\d{1,7}(?:\.\d{1,10})?")
_TOO_FINE: Final = re.compile(r"\d+\.\d{11,}")
_MODEL: Final = re.compile(r"[!-~]{1,200}")
_COLUMNS: Final = ("provider", "model", "input", "output", "cache read", "cache write", "currency", "effective",
                   "source")
_SHOWN: Final = (PriceComponent.INPUT, PriceComponent.OUTPUT, PriceComponent.CACHE_READ, PriceComponent.CACHE_WRITE)


def configure(parser: argparse.ArgumentParser) -> None:
    names = ", ".join(p.value for p in ProviderName)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the prices in force, with effective date and source",
                                 allow_abbrev=False)
    listing.add_argument("--provider", default=None, metavar="P", help=f"only this provider: {names}")
    listing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    setting = actions.add_parser("set", help="record your own rates for a model (a new revision)",
                                 description="Rates are decimals in major units per million tokens, e.g. 3.00",
                                 allow_abbrev=False)
    setting.add_argument("--provider", required=True, metavar="P", help=f"provider: {names}")
    setting.add_argument("--model", required=True, metavar="M", help="the model id as the provider names it")
    setting.add_argument("--input", required=True, metavar="R", help="uncached input, per million tokens")
    setting.add_argument("--output", required=True, metavar="R", help="output (reasoning included), per million")
    setting.add_argument("--cache-read", default=None, metavar="R", help="cache reads per million (else unknown)")
    setting.add_argument("--cache-write", default=None, metavar="R", help="cache writes per million (else unknown)")
    setting.add_argument("--currency", required=True, metavar="CODE", help="ISO 4217 code, such as USD")
    setting.add_argument("--effective-date", default=None, metavar="YYYY-MM-DD",
                         help="from when the rates apply (default: today, UTC)")
    setting.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.action == "list":
        return _list(args, ctx)
    return _set(args, ctx)


def parse_rate_text(text: str, *, flag: str) -> str:
    """``text`` if it is a non-negative decimal with at most 10 digits after the point, else UsageError."""
    if text.startswith("-"):
        raise UsageError(f"{flag} cannot be negative")
    if _TOO_FINE.fullmatch(text):
        raise UsageError(f"{flag} has more than 10 digits after the point")
    if _RATE.fullmatch(text) is None:
        raise UsageError(f"{flag} must be a decimal per million tokens, such as 3.00 (at most 7 digits before the "
                         "point)")
    return text


def _set(args: argparse.Namespace, ctx: CliContext) -> int:
    provider = ProviderName.parse(args.provider)
    if _MODEL.fullmatch(args.model) is None:
        raise UsageError("--model must be 1 to 200 printable characters without spaces")
    currency = Currency.parse(args.currency)
    rates = {
        "input_per_million": parse_rate_text(args.input, flag="--input"),
        "output_per_million": parse_rate_text(args.output, flag="--output"),
        "cache_read_per_million": None if args.cache_read is None else parse_rate_text(args.cache_read,
                                                                                       flag="--cache-read"),
        "cache_write_per_million": None if args.cache_write is None else parse_rate_text(args.cache_write,
                                                                                         flag="--cache-write"),
    }
    price = Price.from_per_million_tokens(currency=currency, **rates)
    effective = _effective_date(args.effective_date)
    db = open_store(ctx.location(), create=True, migrate=True)
    try:
        row = PriceCatalog(db).set_user_price(provider=provider.value, model=args.model, price=price,
                                              effective_date=effective)
    finally:
        db.close()
    shown = ", ".join(f"{component.value} {_rate(price, component)}" for component in _SHOWN)
    ctx.say(f"prices: recorded {provider.value} {args.model} revision {row.revision} (user, effective "
            f"{effective.isoformat()}): {shown} {currency.code} per million tokens")
    return 0


def _effective_date(text: str | None) -> dt.date:
    if text is None:
        return dt.datetime.now(dt.UTC).date()
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise UsageError("--effective-date must be a date written YYYY-MM-DD") from None


def _list(args: argparse.Namespace, ctx: CliContext) -> int:
    provider = None if args.provider is None else ProviderName.parse(args.provider).value
    try:
        db = open_store(ctx.location(), create=False, migrate=False)
    except DatabaseMissingError:
        listings = merge_price_listings(DEFAULT_PRICE_SNAPSHOTS, (), provider=provider)
    else:
        try:
            listings = PriceCatalog(db).list_prices(provider)
        finally:
            db.close()
    table = [_COLUMNS, *(_cells(item) for item in listings)]
    widths = [max(len(row[i]) for row in table) for i in range(len(_COLUMNS))]
    for row in table:
        ctx.say("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    ctx.say("rates: major units per million tokens; unknown = no published rate (a call using it has an "
            "unknown cost)")
    return 0


def _cells(item: PriceListing) -> tuple[str, ...]:
    source = item.source if item.revision is None or item.source == "shipped" else f"user r{item.revision}"
    model = item.model + (f" ({', '.join(item.aliases)})" if item.aliases else "")
    return (item.provider, model, *(_rate(item.price, component) for component in _SHOWN), item.price.currency.code,
            item.effective_date.isoformat(), source)


def _rate(price: Price, component: PriceComponent) -> str:
    return price.per_million_text(component) or "unknown"
