"""`codeflux logs purge [--before YYYY-MM-DD]`: delete application log records, and nothing else.

Only rows of the application log are deleted (all of them, or those written before midnight UTC of the
given date). Events, evidence and provider references live in their own tables and are never touched;
the purge itself is recorded as an event (counts only) in the same transaction.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re

from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import purge_application_logs
from codeflux.domain.errors import UsageError

NAME = "logs"
SUMMARY = "manage application logs: `logs purge [--before YYYY-MM-DD]` deletes log records only"
# No application log record for a purge: it is recorded as an event instead, and a purge leaves none.

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="logs_action", metavar="ACTION", required=True)
    purge = actions.add_parser(
        "purge",
        help="delete application log records (events, evidence and provider references are kept)",
        description="delete application log records; events, evidence and provider references are kept",
        allow_abbrev=False,
    )
    purge.add_argument("--before", type=_parse_before, default=None, metavar="YYYY-MM-DD",
                       help="only records written before 00:00 UTC of this date (default: all records)")
    purge.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH",
                       help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    before: dt.date | None = args.before
    before_us = None if before is None else _utc_midnight_us(before)
    deleted = purge_application_logs(ctx.location(), before_us=before_us)
    scope = "" if before is None else f" written before {before.isoformat()} 00:00 UTC"
    noun = "record" if deleted == 1 else "records"
    ctx.say(f"logs purge: deleted {deleted} application log {noun}{scope}")
    ctx.say("logs purge: events, evidence and provider references were not touched")
    return 0


def _parse_before(raw: str) -> dt.date:
    if _DATE.fullmatch(raw) is None:
        raise UsageError("--before must be a date written YYYY-MM-DD (UTC), for example --before 2025-01-31")
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise UsageError(f"--before {raw} is not a real calendar date; use YYYY-MM-DD (UTC)") from None


def _utc_midnight_us(day: dt.date) -> int:
    midnight = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    return int(midnight.timestamp()) * 1_000_000
