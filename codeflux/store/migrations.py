"""Schema migrations: contiguous numbered SQL files applied in order, one transaction each.

The schema version lives in ``PRAGMA user_version``; ``migration_history`` records every attempt with
the file's sha256. Before migrating a database that already has a schema, an online snapshot is written
to ``<data>/backups/``. A failed migration is rolled back, the whole run is undone from that snapshot,
and the failure is recorded; the same (version, sha256) is then refused until a codeflux with different
migration content runs. A process that died mid-run leaves a ``started`` row: the next run restores the
snapshot, records ``interrupted`` and reports it; the run after that retries.

A migration that rebuilds a table other tables reference (SQLite changes a ``CHECK`` constraint only by
rebuilding the table: create the new shape, copy, drop, rename) declares it on a line of its own,
:data:`REBUILDS_TABLES_DIRECTIVE`. It then runs the way SQLite's documented 12-step procedure asks:
``PRAGMA foreign_keys`` is turned off *before* its transaction (dropping a referenced table would
otherwise count every referencing row as a violation), ``PRAGMA foreign_key_check`` must find nothing
before the commit (a violation rolls the migration back like any other failure), and foreign keys are
turned on again afterwards, whatever happened.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

import codeflux
from codeflux.domain.errors import (
    DatabaseNewerError,
    MigrationChecksumError,
    MigrationFailedError,
    MigrationLockedError,
    OperationFailedError,
)
from codeflux.store.backup import restore_database_from_snapshot, write_snapshot
from codeflux.store.connection import map_sqlite_errors, open_connection
from codeflux.store.database import now_us
from codeflux.store.location import DataLocation, ensure_data_directory
from codeflux.store.migration_files import (
    MIGRATION_NAME_PATTERN,
    Migration,
    load_shipped_migrations,
    supported_schema_version,
)

__all__ = [
    "MIGRATION_NAME_PATTERN",
    "REBUILDS_TABLES_DIRECTIVE",
    "Migration",
    "MigrationFault",
    "MigrationReport",
    "load_shipped_migrations",
    "migrate_database",
    "read_schema_version",
    "rebuilds_tables",
    "supported_schema_version",
]

LOCK_WAIT_SECONDS = 10.0
REBUILDS_TABLES_DIRECTIVE = "-- codeflux-migration: rebuilds-tables"
"""A line of a migration that rebuilds referenced tables (see the module docstring)."""

_HISTORY_DDL = """
CREATE TABLE IF NOT EXISTS migration_history (
    id INTEGER PRIMARY KEY,
    version INTEGER NOT NULL CHECK (version >= 1),
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    result TEXT NOT NULL CHECK (result IN ('started', 'succeeded', 'failed', 'interrupted')),
    at_us INTEGER NOT NULL,
    codeflux_version TEXT NOT NULL,
    backup_path TEXT,
    error TEXT CHECK (error IS NULL OR length(error) <= 1024)
) STRICT;
CREATE TRIGGER IF NOT EXISTS migration_history_is_immutable
BEFORE UPDATE ON migration_history
BEGIN
    SELECT RAISE(ABORT, 'migration history is immutable');
END;
"""


class MigrationFault(enum.StrEnum):
    """Named points where tests inject a crash (a real process kill) into a migration run."""

    AFTER_STARTED_ROW = "after-started-row"
    BEFORE_COMMIT = "before-commit"


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationReport:
    from_version: int
    to_version: int
    applied: tuple[int, ...]
    backup_path: Path | None


def _rows(conn: apsw.Connection, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    return list(conn.execute(sql, params))


def read_schema_version(conn: apsw.Connection) -> int:
    with map_sqlite_errors("read schema version"):
        return int(_rows(conn, "PRAGMA user_version")[0][0])


@contextlib.contextmanager
def _migration_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise MigrationLockedError(
                        "another codeflux process is migrating this database; try again when it finishes"
                    ) from None
                time.sleep(0.025)
        yield
    finally:
        os.close(fd)


def migrate_database(
    location: DataLocation,
    *,
    migrations: tuple[Migration, ...] | None = None,
    fault: Callable[[MigrationFault], None] | None = None,
) -> MigrationReport:
    """Bring the database at ``location`` to the newest shipped schema, creating it if absent."""
    shipped = migrations if migrations is not None else load_shipped_migrations()
    ensure_data_directory(location)
    with _migration_lock(location.migration_lock):
        conn = open_connection(location.database, create=True)
        try:
            return _migrate_locked(conn, location, shipped, fault)
        finally:
            conn.close()


def _migrate_locked(
    conn: apsw.Connection,
    location: DataLocation,
    shipped: tuple[Migration, ...],
    fault: Callable[[MigrationFault], None] | None,
) -> MigrationReport:
    with map_sqlite_errors("prepare migration history"):
        conn.execute(_HISTORY_DDL)
    current = read_schema_version(conn)
    latest = len(shipped)
    if current > latest:
        raise DatabaseNewerError(database_version=current, supported_version=latest)
    _recover_interrupted_run(conn)
    _verify_applied_checksums(conn, shipped, current)
    pending = [m for m in shipped if m.version > current]
    if not pending:
        return MigrationReport(from_version=current, to_version=current, applied=(), backup_path=None)
    _refuse_known_failure(conn, pending[0])
    backup_path = _take_pre_migration_backup(conn, location, current, latest)
    applied: list[int] = []
    for migration in pending:
        _insert_history(conn, migration, "started", backup_path=backup_path)
        if fault is not None:
            fault(MigrationFault.AFTER_STARTED_ROW)
        try:
            _apply_one(conn, migration, backup_path, fault)
        except apsw.Error as err:
            reason = f"{type(err).__name__}: {err}"[:1024]
            _undo_run(conn, backup_path)
            _insert_history(conn, migration, "failed", backup_path=backup_path, error=reason)
            raise MigrationFailedError(
                version=migration.version,
                reason=reason,
                backup_path=str(backup_path) if backup_path else None,
            ) from err
        applied.append(migration.version)
    with map_sqlite_errors("verify migrated database"):
        verdict = _rows(conn, "PRAGMA integrity_check")
    if verdict != [("ok",)]:
        raise OperationFailedError("the migrated database failed its integrity check; run `codeflux integrity-check`")
    return MigrationReport(from_version=current, to_version=latest, applied=tuple(applied), backup_path=backup_path)


def _apply_one(
    conn: apsw.Connection,
    migration: Migration,
    backup_path: Path | None,
    fault: Callable[[MigrationFault], None] | None,
) -> None:
    rebuilds = rebuilds_tables(migration)
    if rebuilds:
        conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: set before BEGIN
    try:
        _apply_in_transaction(conn, migration, backup_path, fault, check_foreign_keys=rebuilds)
    finally:
        if rebuilds:
            conn.execute("PRAGMA legacy_alter_table = OFF")  # in case the migration failed before resetting it
            conn.execute("PRAGMA foreign_keys = ON")
            if _rows(conn, "PRAGMA foreign_keys") != [(1,)]:
                raise OperationFailedError("foreign keys could not be turned on again after a table rebuild")


def rebuilds_tables(migration: Migration) -> bool:
    """True when ``migration`` declares :data:`REBUILDS_TABLES_DIRECTIVE` on a line of its own."""
    return any(line.strip() == REBUILDS_TABLES_DIRECTIVE for line in migration.sql.splitlines())


def _apply_in_transaction(
    conn: apsw.Connection,
    migration: Migration,
    backup_path: Path | None,
    fault: Callable[[MigrationFault], None] | None,
    *,
    check_foreign_keys: bool,
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(migration.sql)
        if check_foreign_keys and _rows(conn, "PRAGMA foreign_key_check"):
            raise apsw.ConstraintError("the rebuilt tables break a foreign key")
        conn.execute(f"PRAGMA user_version = {int(migration.version)}")
        conn.execute(
            "INSERT INTO migration_history (version, name, sha256, result, at_us, codeflux_version, backup_path)"
            " VALUES (?, ?, ?, 'succeeded', ?, ?, ?)",
            (migration.version, migration.name, migration.sha256, now_us(), codeflux.__version__,
             str(backup_path) if backup_path else None),
        )
        if fault is not None:
            fault(MigrationFault.BEFORE_COMMIT)
        conn.execute("COMMIT")
    except BaseException:
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        raise


def _insert_history(
    conn: apsw.Connection,
    migration: Migration,
    result: str,
    *,
    backup_path: Path | None,
    error: str | None = None,
) -> None:
    with map_sqlite_errors("record migration history"):
        conn.execute(
            "INSERT INTO migration_history (version, name, sha256, result, at_us, codeflux_version, backup_path, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (migration.version, migration.name, migration.sha256, result, now_us(), codeflux.__version__,
             str(backup_path) if backup_path else None, error),
        )


def _recover_interrupted_run(conn: apsw.Connection) -> None:
    with map_sqlite_errors("read migration history"):
        rows = _rows(
            conn, "SELECT version, name, sha256, result, backup_path FROM migration_history ORDER BY id DESC LIMIT 1"
        )
    if not rows or rows[0][3] != "started":
        return
    version, name, sha256, _, backup = rows[0]
    backup_path = Path(backup) if backup else None
    if backup_path is not None and not backup_path.exists():
        raise MigrationFailedError(
            version=version,
            reason=f"it was interrupted and its backup {backup_path} is gone; restore a backup by hand",
            backup_path=None,
        )
    _undo_run(conn, backup_path)
    interrupted = Migration(version=version, name=name, sql="", sha256=sha256)
    _insert_history(conn, interrupted, "interrupted", backup_path=backup_path, error="the process stopped mid-run")
    raise MigrationFailedError(
        version=version,
        reason="it was interrupted; run the command again to retry",
        backup_path=str(backup_path) if backup_path else None,
    )


def _undo_run(conn: apsw.Connection, backup_path: Path | None) -> None:
    """Return the database to its state before this run: the snapshot, or empty for a new database."""
    if backup_path is not None:
        restore_database_from_snapshot(conn, backup_path)
        return
    with map_sqlite_errors("reset new database"):
        empty = apsw.Connection(":memory:")
        try:
            with conn.backup("main", empty, "main") as job:
                job.step(-1)
        finally:
            empty.close()
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(_HISTORY_DDL)


def _verify_applied_checksums(conn: apsw.Connection, shipped: tuple[Migration, ...], current: int) -> None:
    with map_sqlite_errors("read migration history"):
        rows = _rows(
            conn,
            "SELECT version, sha256 FROM migration_history WHERE result = 'succeeded' AND version <= ?",
            (current,),
        )
    by_version = {m.version: m.sha256 for m in shipped}
    for version, sha256 in rows:
        if by_version.get(version) != sha256:
            raise MigrationChecksumError(version=version)


def _refuse_known_failure(conn: apsw.Connection, next_migration: Migration) -> None:
    with map_sqlite_errors("read migration history"):
        row = _rows(
            conn,
            "SELECT error, backup_path FROM migration_history WHERE version = ? AND sha256 = ? AND result = 'failed'"
            " ORDER BY id DESC LIMIT 1",
            (next_migration.version, next_migration.sha256),
        )
    if row:
        raise MigrationFailedError(
            version=next_migration.version,
            reason=f"it failed before and would fail again: {row[0][0]}; a newer codeflux is needed",
            backup_path=row[0][1],
        )


def _take_pre_migration_backup(
    conn: apsw.Connection, location: DataLocation, current: int, latest: int
) -> Path | None:
    if current == 0:
        return None  # nothing to preserve yet: undoing a run on a new database empties it
    location.backups.mkdir(mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 1_000_000_000:09d}Z"
    target = location.backups / f"codeflux-v{current}-to-v{latest}-{stamp}.sqlite3"
    return write_snapshot(conn, target).path
