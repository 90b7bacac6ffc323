"""`codeflux prices list|set`: the per-model rates calls are priced with.

``list`` shows the shipped defaults merged with your recorded revisions (yours win), each with its
effective date and source, and names the package, version and date the shipped rates were generated from; a
rate nobody published is shown as ``unknown``, never 0. ``set`` records a new user revision. Rates are decimal
strings in major units per million tokens (``3.00`` is $3 per 1M tokens), at most 10 digits after the point; a
negative rate or anything that is not such a decimal is a usage error (checked before anything is written).
Both are calls of the method table (``PriceService``): through a running coordinator when one serves the data
directory, else in this process (:mod:`codeflux.cli.channel`). Nothing here contacts a provider.
"""

from __future__ import annotations

import argparse
from typing import Final, cast

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.views import print_prices
from codeflux.coordinator.spending.prices import merge_price_listings
from codeflux.domain.providers import ProviderName
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS, SHIPPED_SOURCE
from codeflux.services.prices import FIELD_LABELS, parse_price, price_list

NAME = "prices"
SUMMARY = "list the model prices in force (shipped defaults and your revisions) or record your own"
RECORDS_APP_LOG = True


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
    setting.add_argument("--cache-write", default=None, metavar="R",
                         help="cache writes per million (Anthropic: the 5-minute ones; else unknown)")
    setting.add_argument("--cache-write-1h", default=None, metavar="R",
                         help="1-hour cache writes per million (Anthropic; else a reported one is unknown)")
    setting.add_argument("--currency", required=True, metavar="CODE", help="ISO 4217 code, such as USD")
    setting.add_argument("--effective-date", default=None, metavar="YYYY-MM-DD",
                         help="from when the rates apply (default: today, UTC)")
    setting.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")


_FLAGS: Final = {name: f"--{name.replace('_', '-')}" for name in FIELD_LABELS}


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    """``list`` never creates a database (without one it shows the shipped defaults); ``set`` does, once its
    flags are known to be good."""
    if args.action == "list":
        return ChannelNeeds(use=ChannelUse.OPTIONAL)
    _set_request(args)
    return ChannelNeeds(use=ChannelUse.CREATE)


def _set_request(args: argparse.Namespace) -> pb.SetPriceRequest:
    request = pb.SetPriceRequest(
        control=control(), provider=args.provider, model=args.model, input=args.input, output=args.output,
        cache_read=args.cache_read or "", cache_write=args.cache_write or "",
        cache_write_1h=args.cache_write_1h or "", currency=args.currency,
        effective_date=args.effective_date or "")
    parse_price(request, _FLAGS)  # a bad flag is refused here, before a database is created for it
    return request


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel | None) -> int:
    if args.action == "set":  # CREATE always gives a channel
        print_prices(ctx, cast(Channel, channel).call("PriceService/SetPrice", _set_request(args), pb.PriceList))
        return 0
    provider = "" if args.provider is None else ProviderName.parse(args.provider).value
    if channel is None:  # no database yet: nobody recorded a rate, the shipped defaults are in force
        print_prices(ctx, price_list(merge_price_listings(DEFAULT_PRICE_SNAPSHOTS, (), provider=provider or None)))
    else:
        print_prices(ctx, channel.call("PriceService/ListPrices", pb.ListPricesRequest(provider=provider),
                                       pb.PriceList))
    ctx.say(f"shipped rates: {SHIPPED_SOURCE}, generated from the package's data (codeflux/providers/price_data.py)")
    return 0
