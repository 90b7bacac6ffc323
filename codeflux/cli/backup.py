"""`codeflux backup --output PATH`: a consistent online snapshot of the database in a new file.

The snapshot is copied with SQLite's online backup API from this command's own read-only connection,
in one step, so it is one consistent point in time even while the coordinator keeps writing (a
stepwise copy restarts every time another process commits, and can never finish under a busy writer).

Never overwrites (an existing output is a usage error, exit 2), never creates or changes the mode of
any directory (the output's directory must exist), writes the file 0600, and says why it failed.
The source connection is read-only and is closed without a checkpoint, so a snapshot that was written
is never reported as failed afterwards. The database is never created or migrated here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import write_backup_snapshot
from codeflux.domain.errors import OperationFailedError, OutputExistsError, UsageError

NAME = "backup"
SUMMARY = ("write a consistent snapshot of the database to a new file (safe while codeflux runs; "
           "never overwrites)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", required=True, metavar="PATH",
        help="the snapshot file to create; it must not exist yet and its directory must exist",
    )


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    output = _parse_output(args.output)
    _check_output_location(output)
    report = write_backup_snapshot(ctx.location(), output)
    ctx.say(f"backup: wrote a consistent snapshot to {report.path} "
            f"({report.bytes:,} bytes, {report.pages:,} pages)")
    return 0


def _parse_output(raw: str) -> Path:
    if not raw.strip():
        raise UsageError("--output is empty; give the path of a new file, "
                         "for example --output ./codeflux-backup.sqlite3")
    if "\x00" in raw:
        raise UsageError("--output contains a NUL byte")
    return Path(os.path.abspath(os.path.expanduser(raw)))


def _check_output_location(output: Path) -> None:
    """Fail early, with the reason, on what would make the copy fail; O_EXCL in the store still decides."""
    if os.path.lexists(output):
        raise OutputExistsError(what=f"the output {output}")
    parent = output.parent
    if not parent.exists():
        raise OperationFailedError(
            f"the output directory {parent} does not exist; create it first "
            "(backup never creates directories)"
        )
    if not parent.is_dir():
        raise OperationFailedError(f"{parent} is not a directory; choose an output inside a directory")

