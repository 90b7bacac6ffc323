"""Online snapshots with SQLite's backup API: consistent while another process writes.

A snapshot is written to a path that must not exist (reserved with O_CREAT|O_EXCL, 0600) and is deleted
again if copying fails, so a failed snapshot never leaves a half file behind and an existing file is
never overwritten. Nothing here changes the mode of any directory it did not create.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import apsw

from codeflux.domain.errors import OperationFailedError, OutputExistsError
from codeflux.store.connection import map_sqlite_errors

__all__ = ["PAGES_PER_STEP", "SnapshotReport", "restore_database_from_snapshot", "write_snapshot"]

# Copy in one step: with a smaller step, every commit by another process restarts the copy, so a
# snapshot of a busy database never finishes. One step holds a read snapshot for the whole copy.
PAGES_PER_STEP = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotReport:
    path: Path
    pages: int
    bytes: int


def write_snapshot(
    source: apsw.Connection, destination: Path, *, pages_per_step: int = PAGES_PER_STEP
) -> SnapshotReport:
    """Copy the ``main`` database of ``source`` into a new file at ``destination``."""
    destination = Path(os.path.abspath(destination))
    parent = destination.parent
    if not parent.is_dir():
        raise OperationFailedError("the output directory does not exist; create it or choose another path")
    try:
        fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as err:
        raise OutputExistsError(what="the output path") from err
    except PermissionError as err:
        raise OperationFailedError("the output directory is not writable; choose another path") from err
    except OSError as err:
        raise OperationFailedError(f"cannot create the output file ({err.strerror})") from err
    os.close(fd)
    completed = False
    try:
        with map_sqlite_errors("write snapshot"):
            target = apsw.Connection(str(destination))
            try:
                with target.backup("main", source, "main") as job:
                    while not job.done:
                        job.step(pages_per_step)
                    pages = int(job.page_count)
            finally:
                target.close()
        completed = True
    finally:
        if not completed:
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{destination}{suffix}").unlink()
    return SnapshotReport(path=destination, pages=pages, bytes=destination.stat().st_size)


def restore_database_from_snapshot(target: apsw.Connection, snapshot: Path) -> None:
    """Replace the contents of ``target`` with the snapshot at ``snapshot`` (online restore)."""
    with map_sqlite_errors("restore from snapshot"):
        source = apsw.Connection(str(snapshot), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        with map_sqlite_errors("restore from snapshot"), target.backup("main", source, "main") as job:
            while not job.done:
                job.step(-1)
    finally:
        source.close()
