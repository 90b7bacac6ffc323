"""`codeflux memory list|show|invalidate|confirm|export`: what codeflux learned about your repositories.

``list`` prints entries newest first (``--kind``, ``--state``, or ``--query WORDS`` — words only, never search
syntax) with each one's applicability verdict in its repository's checkout as it is now, and why (an entry whose
repository codeflux knows no checkout of is "not-checked", never applicable). ``show ID`` adds its sources,
evidence, provenance edges and every state it entered. ``invalidate ID --reason TEXT`` quarantines the entry and
everything derived from it and flags what it influenced for review, in one transaction; quarantine is final (only
a new entry replaces one). ``confirm ID --reason TEXT`` keeps an entry flagged ``needs-review`` (a person reviewed it;
it is active again). ``export --output FILE`` writes every entry, edge and state as JSON to a new file
(O_CREAT|O_EXCL, 0600: an existing path is never overwritten). Every action is a call of the method table
(``MemoryService``): through a running coordinator when one serves the data directory, else in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from codeflux.api.v1 import memory_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.views import print_memory_detail, print_memory_invalidation, print_memory_list
from codeflux.domain.errors import OperationFailedError, OutputExistsError, UsageError
from codeflux.domain.memory import MemoryKind, MemoryState

NAME = "memory"
SUMMARY = "list, show, invalidate, confirm or export what codeflux learned (with each entry's applicability verdict)"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="entries with their verdict now", allow_abbrev=False)
    listing.add_argument("--kind", default="", choices=[k.value for k in MemoryKind], metavar="KIND",
                         help=f"only this kind: {', '.join(k.value for k in MemoryKind)}")
    listing.add_argument("--state", default="", choices=[s.value for s in MemoryState], metavar="STATE",
                         help=f"only this state: {', '.join(s.value for s in MemoryState)}")
    listing.add_argument("--query", default="", metavar="WORDS", help="entries whose text has any of these words")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="at most N entries (1..500)")
    listing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    showing = actions.add_parser("show", help="one entry: verdict, sources, evidence, provenance, history",
                                 allow_abbrev=False)
    showing.add_argument("entry_id", metavar="ID", help="the entry's id (mem_…)")
    showing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    invalidating = actions.add_parser(
        "invalidate", help="quarantine an entry and everything derived from it (final)", allow_abbrev=False,
        description="Quarantine the entry and everything derived from it; flag what it influenced for review.")
    invalidating.add_argument("entry_id", metavar="ID", help="the entry's id (mem_…)")
    invalidating.add_argument("--reason", required=True, metavar="TEXT", help="why (recorded with every change)")
    invalidating.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    confirming = actions.add_parser(
        "confirm", help="keep an entry flagged needs-review (it becomes active again)", allow_abbrev=False,
        description="You reviewed an entry flagged needs-review (something it was influenced by was quarantined) "
                    "and it is still right: it becomes active again. A quarantined entry cannot be confirmed.")
    confirming.add_argument("entry_id", metavar="ID", help="the entry's id (mem_…)")
    confirming.add_argument("--reason", required=True, metavar="TEXT", help="why it is still right (recorded)")
    confirming.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    exporting = actions.add_parser("export", help="every entry, edge and state as JSON to a new file (0600)",
                                   allow_abbrev=False)
    exporting.add_argument("--output", required=True, metavar="FILE", help="a path that does not exist yet")
    exporting.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    if args.action == "list" and not 1 <= args.limit <= 500:
        raise UsageError("--limit must be between 1 and 500")
    if args.action == "export":
        _parse_output(args.output)
    return ChannelNeeds(use=ChannelUse.EXISTING)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    if args.action == "list":
        request = pb.ListMemoryRequest(kind=args.kind, state=args.state, query=args.query, limit=args.limit)
        print_memory_list(ctx, channel.call("MemoryService/List", request, pb.MemoryList))
    elif args.action == "show":
        print_memory_detail(ctx, channel.call("MemoryService/Show", pb.ShowMemoryRequest(entry_id=args.entry_id),
                                              pb.MemoryEntryDetail))
    elif args.action == "invalidate":
        request = pb.InvalidateMemoryRequest(control=control(), entry_id=args.entry_id, reason=args.reason)
        print_memory_invalidation(ctx, channel.call("MemoryService/Invalidate", request, pb.MemoryInvalidationView))
    elif args.action == "confirm":
        request = pb.ConfirmMemoryRequest(control=control(), entry_id=args.entry_id, reason=args.reason)
        print_memory_detail(ctx, channel.call("MemoryService/Confirm", request, pb.MemoryEntryDetail))
    else:
        output = _parse_output(args.output)
        exported = channel.call("MemoryService/Export", pb.ExportMemoryRequest(), pb.MemoryExport)
        _write_new_file(output, exported.document_json.encode("utf-8"))
        ctx.say(f"wrote {exported.entries} memory entries to {output} (0600)")
    return 0


def _parse_output(raw: str) -> Path:
    if not raw.strip():
        raise UsageError("--output is empty; give the path of a new file, for example --output ./memory.json")
    if "\x00" in raw:
        raise UsageError("--output contains a NUL byte")
    return Path(os.path.abspath(os.path.expanduser(raw)))


def _write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` (O_EXCL, 0600, not following a link) and write ``data``; on failure nothing is left."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise OutputExistsError(what=f"the output {path}") from None
    except (FileNotFoundError, NotADirectoryError):
        raise OperationFailedError(f"the output directory {path.parent} does not exist; create it first") from None
    except OSError as err:
        raise OperationFailedError(f"cannot create the output file ({err.strerror})") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise OperationFailedError(f"the export could not be written ({err.strerror}); nothing was left") from None
    os.close(fd)
