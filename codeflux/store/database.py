"""The database handle: one serialized writer connection, one reader, and the transaction runner.

All work is done as functions given a :class:`Transaction` (the datasette pattern): the runner begins
with ``BEGIN IMMEDIATE`` so write intent is declared up front, commits only if the function returns,
rolls back on any exception, and runs post-commit callbacks (live publication) only after the commit
succeeded. One call of :meth:`Database.write` is one user-visible outcome.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import apsw

from codeflux.domain.errors import StoreClosedError
from codeflux.store.connection import (
    BUSY_TIMEOUT_MS,
    map_sqlite_errors,
    open_connection,
    restrict_database_file_modes,
)

__all__ = ["Database", "ReadView", "Row", "Transaction", "now_us"]

T = TypeVar("T")
Row = tuple[Any, ...]
SqlValue = str | int | bytes | None


def now_us() -> int:
    """Wall-clock time as integer UTC microseconds since the epoch (the storage time unit)."""
    return time.time_ns() // 1000


class ReadView:
    """Read access to one connection. Only store modules use it; SQL never leaves the store."""

    __slots__ = ("_conn",)

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def query_all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        with map_sqlite_errors("read"):
            return list(self._conn.execute(sql, tuple(params)))

    def query_one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None:
        rows = self.query_all(sql, params)
        return rows[0] if rows else None


class Transaction(ReadView):
    """An open IMMEDIATE transaction on the writer connection."""

    __slots__ = ("_after_commit",)

    def __init__(self, conn: apsw.Connection) -> None:
        super().__init__(conn)
        self._after_commit: list[Callable[[], None]] = []

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        with map_sqlite_errors("write"):
            return list(self._conn.execute(sql, tuple(params)))

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        with map_sqlite_errors("write"):
            self._conn.executemany(sql, [tuple(r) for r in rows])

    def changes(self) -> int:
        return int(self._conn.changes())

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after this transaction commits (never if it rolls back)."""
        self._after_commit.append(callback)


class Database:
    """An open codeflux database. ``close()`` is idempotent; use after close raises StoreClosedError."""

    def __init__(self, path: Path, writer: apsw.Connection) -> None:
        self.path = path
        self._writer: apsw.Connection | None = writer
        self._reader: apsw.Connection | None = None
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        # The -wal/-shm files appear with the first write and stay while a connection is open, so
        # their modes are narrowed once, after the first commit (not on every commit).
        self._side_files_restricted = False
        self._commit_listeners: list[Callable[[], None]] = []

    @classmethod
    def open(cls, path: Path, *, create: bool = False) -> Database:
        return cls(path, open_connection(path, create=create))

    @property
    def closed(self) -> bool:
        return self._writer is None

    def _require_writer(self) -> apsw.Connection:
        if self._writer is None:
            raise StoreClosedError("the database was used after it was closed")
        return self._writer

    def write(self, work: Callable[[Transaction], T], *, busy_timeout_ms: int | None = None) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction; commit, then run post-commit callbacks.

        ``busy_timeout_ms`` replaces the connection's busy timeout (5 s) for taking this transaction's write
        lock: a record that may be dropped (an application log line) waits briefly instead of 5 s more."""
        with self._write_lock:
            conn = self._require_writer()
            tx = Transaction(conn)
            if busy_timeout_ms is not None:
                conn.set_busy_timeout(busy_timeout_ms)
            try:
                with map_sqlite_errors("begin transaction"):
                    conn.execute("BEGIN IMMEDIATE")
            finally:
                if busy_timeout_ms is not None:
                    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            try:
                result = work(tx)
            except BaseException:
                with map_sqlite_errors("roll back"):
                    if not conn.get_autocommit():
                        conn.execute("ROLLBACK")
                raise
            with map_sqlite_errors("commit"):
                try:
                    conn.execute("COMMIT")
                except apsw.Error:
                    if not conn.get_autocommit():
                        conn.execute("ROLLBACK")
                    raise
            if not self._side_files_restricted:
                restrict_database_file_modes(self.path)
                self._side_files_restricted = True
        for callback in tx._after_commit:
            callback()
        for listener in tuple(self._commit_listeners):
            listener()
        return result

    def add_commit_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every commit on this database (after the transaction's own callbacks).

        Listeners run on the committing thread and must not block or write; the session stream uses one
        to wake its subscribers, which then read the committed rows themselves. Returns the remover."""
        self._commit_listeners.append(listener)

        def remove() -> None:
            if listener in self._commit_listeners:
                self._commit_listeners.remove(listener)

        return remove

    def read(self, work: Callable[[ReadView], T]) -> T:
        """Run ``work`` against a consistent snapshot on the reader connection."""
        with self._read_lock:
            self._require_writer()
            if self._reader is None:
                self._reader = open_connection(self.path)
            conn = self._reader
            with map_sqlite_errors("begin read"):
                conn.execute("BEGIN")
            try:
                return work(ReadView(conn))
            finally:
                with map_sqlite_errors("end read"):
                    if not conn.get_autocommit():
                        conn.execute("COMMIT")

    def checkpoint_wal(self) -> bool:
        """Try a TRUNCATE checkpoint; returns False (never raises) when readers keep the WAL busy."""
        conn = self._require_writer()
        with self._write_lock:
            try:
                busy: Any = next(iter(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")))[0]
            except apsw.Error:
                return False
            return int(busy) == 0

    def close(self) -> None:
        with self._write_lock, self._read_lock:
            for conn in (self._reader, self._writer):
                if conn is not None:
                    conn.close()
            self._reader = None
            self._writer = None

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
