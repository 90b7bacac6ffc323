"""Connection policy: every connection is opened, configured and verified the same way.

Every connection runs WAL with ``synchronous=FULL``, foreign keys on, a 5 s busy timeout (set before
WAL), ``trusted_schema=OFF`` and double-quoted string literals disabled; the settings are read back and
a mismatch refuses the connection. Database files are 0600. apsw exceptions are mapped to the codeflux
error tree here and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import apsw

from codeflux.domain.errors import (
    DatabaseMissingError,
    DataDirectoryError,
    StoreBusyError,
    StoreCorruptError,
    StoreError,
    StorePolicyError,
    StoreUnavailableError,
)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "map_sqlite_errors",
    "open_connection",
    "restrict_database_file_modes",
    "sqlite_store_error",
]

BUSY_TIMEOUT_MS = 5000
_SIDE_FILES = ("", "-wal", "-shm")


def map_sqlite_errors(operation: str) -> _SqliteErrorMap:
    """A context manager that translates apsw exceptions raised inside its block into codeflux store errors.

    Messages name the operation and the kind of failure only: never SQL, paths or row contents. (A class, not a
    generator: every statement runs inside one, and entering a generator-based manager costs ≈ 4× as much.)
    """
    return _SqliteErrorMap(operation)


class _SqliteErrorMap:
    __slots__ = ("_operation",)

    def __init__(self, operation: str) -> None:
        self._operation = operation

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, err: BaseException | None, traceback: object) -> None:
        if isinstance(err, apsw.Error):
            raise sqlite_store_error(self._operation, err) from err


def sqlite_store_error(operation: str, err: apsw.Error) -> StoreError:
    """The codeflux store error for the apsw error ``err`` raised by ``operation`` (what :func:`map_sqlite_errors`
    raises; for a hot path that catches ``apsw.Error`` itself)."""
    if isinstance(err, apsw.BusyError | apsw.LockedError):
        return StoreBusyError(f"{operation}: the database is busy (another writer held it too long)")
    if isinstance(err, apsw.CorruptError | apsw.NotADBError):
        return StoreCorruptError(f"{operation}: the database file is corrupt or not a database")
    if isinstance(err, apsw.FullError):
        return StoreUnavailableError(f"{operation}: the disk is full; free some space and try again")
    if isinstance(err, apsw.CantOpenError | apsw.IOError | apsw.ReadOnlyError | apsw.PermissionsError | apsw.AuthError):
        return StoreUnavailableError(f"{operation}: the database cannot be opened, read or written")
    return StoreError(f"{operation}: the database refused the operation ({type(err).__name__})")


def restrict_database_file_modes(path: Path) -> None:
    """chmod the database and its WAL/SHM side files to 0600 (umask can only narrow, never widen)."""
    for suffix in _SIDE_FILES:
        side = Path(f"{path}{suffix}")
        with contextlib.suppress(FileNotFoundError):
            if side.stat().st_mode & 0o777 != 0o600:
                side.chmod(0o600)


def open_connection(path: Path, *, create: bool = False, readonly: bool = False) -> apsw.Connection:
    """Open one connection under the policy; refuses to return a connection that does not comply."""
    if readonly and create:
        raise ValueError("a read-only connection cannot create the database")
    if not create and not path.exists():
        raise DatabaseMissingError("no database exists yet in the data directory")
    if readonly:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    if create and not path.exists():
        # Create the empty file 0600 ourselves so it never exists with a wider mode.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    try:
        with map_sqlite_errors("open database"):
            conn = apsw.Connection(str(path), flags=flags)
            try:
                _apply_policy(conn, readonly=readonly)
            except BaseException:
                conn.close()
                raise
    except StoreUnavailableError as err:
        if (why := _unwritable(path.parent)) is not None:
            raise DataDirectoryError(
                f"the data directory {why}: SQLite writes the database's -wal and -shm files beside it, even "
                "to read it; make it writable or pass --data-dir"
            ) from err
        raise
    if not readonly:
        restrict_database_file_modes(path)
    return conn


def _unwritable(directory: Path) -> str | None:
    """Why ``directory`` cannot be written (a read-only mount, its permissions), or None when it can."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "is on a read-only file system"
    except OSError:
        return None
    return None if os.access(directory, os.W_OK | os.X_OK) else "is not writable"


def _apply_policy(conn: apsw.Connection, *, readonly: bool) -> None:
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
        # Reading the journal mode of an empty or corrupt file fails here, which is what we want.
        mode = _pragma(conn, "journal_mode")
        if mode not in ("wal", "delete"):
            raise StorePolicyError(f"open database: unexpected journal mode {mode}")
    else:
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchall()[0][0])
        if mode != "wal":
            raise StorePolicyError(f"open database: journal mode reads back as {mode}, not wal")
    conn.execute("PRAGMA synchronous = FULL")
    expected = {"foreign_keys": 1, "synchronous": 2, "trusted_schema": 0, "busy_timeout": BUSY_TIMEOUT_MS}
    if readonly:
        expected["query_only"] = 1
    for name, value in expected.items():
        actual = _pragma(conn, name)
        if actual != value:
            raise StorePolicyError(f"open database: PRAGMA {name} reads back as {actual}, not {value}")
    if conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, -1) != 0 or conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, -1) != 0:
        raise StorePolicyError("open database: double-quoted string literals could not be disabled")


def _pragma(conn: apsw.Connection, name: str) -> object:
    rows = conn.execute(f"PRAGMA {name}").fetchall()
    return rows[0][0] if rows else None
