"""`codeflux inspect ENTITY [--id ID] [--limit N] [--json]`: read-only look at stored rows.

The entity names a fixed query (no free SQL); the connection is read-only. Output is a tab-separated
header and rows, then ``rows: N`` and ``truncated: yes|no`` (exact: one more row than the limit is
fetched). Cell text is passed through the redaction pipeline and control characters are escaped, so
neither a stored secret nor a terminal escape sequence reaches the screen.
"""

from __future__ import annotations

import argparse
import json

from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import (
    MAX_INSPECT_LIMIT,
    InspectionResult,
    inspect_stored_rows,
    inspectable_entities,
)
from codeflux.domain.errors import UsageError
from codeflux.redact import redact

NAME = "inspect"
SUMMARY = "show stored rows of one entity (read-only, bounded): " + ", ".join(sorted(inspectable_entities()))

DEFAULT_LIMIT = 50

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def configure(parser: argparse.ArgumentParser) -> None:
    entities = "; ".join(
        f"{e.name}: {e.description}" + (f" (--id: {e.id_meaning})" if e.id_meaning else "")
        for e in inspectable_entities().values()
    )
    parser.add_argument("entity", metavar="ENTITY", help=f"what to show — {entities}")
    parser.add_argument("--id", dest="entity_id", default=None, metavar="ID",
                        help="only rows of this id (its meaning depends on the entity, see ENTITY)")
    parser.add_argument("--limit", type=_parse_limit, default=DEFAULT_LIMIT, metavar="N",
                        help=f"at most N rows, 1-{MAX_INSPECT_LIMIT} (default {DEFAULT_LIMIT})")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    result = inspect_stored_rows(ctx.location(), entity=args.entity, entity_id=args.entity_id, limit=args.limit)
    if args.json:
        ctx.say(_as_json(result))
        return 0
    ctx.say("\t".join(result.columns))
    for row in result.rows:
        ctx.say("\t".join(_printable(redact(value)) for value in row))
    ctx.say(f"rows: {len(result.rows)}")
    ctx.say(f"truncated: {'yes' if result.truncated else 'no'}")
    return 0


def _parse_limit(raw: str) -> int:
    try:
        limit = int(raw, 10)
    except ValueError:
        raise UsageError(f"--limit must be a whole number between 1 and {MAX_INSPECT_LIMIT}") from None
    if not 1 <= limit <= MAX_INSPECT_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_INSPECT_LIMIT}")
    return limit


def _as_json(result: InspectionResult) -> str:
    return json.dumps(
        {
            "entity": result.entity,
            "columns": list(result.columns),
            "rows": [dict(zip(result.columns, (redact(v) for v in row), strict=True)) for row in result.rows],
            "limit": result.limit,
            "truncated": result.truncated,
        },
        indent=2,
        ensure_ascii=True,
    )


def _printable(text: str) -> str:
    """One cell on one line: tabs, newlines, backslashes and other control characters escaped."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif not ch.isprintable():
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)
