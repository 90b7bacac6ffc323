"""The database handle: one serialized writer connection, one reader, and the transaction runner.

All work is done as functions given a :class:`Transaction` (the datasette pattern): the runner begins
with ``BEGIN IMMEDIATE`` so write intent is declared up front, commits only if the function returns,
rolls back on any exception, and runs post-commit callbacks (live publication) only after the commit
succeeded. One call of :meth:`Database.write` is one user-visible outcome.

**Write patience.** A write waits the connection's busy timeout (5 s) for another process's write lock. A thread
doing work nobody watches second by second — a run — can ask for more with :meth:`Database.patient_writes`: its
writes are then retried while ``BEGIN IMMEDIATE`` finds the lock held, in slices of at most 1 s (between them the
process's own lock is released, so a short interactive write of another thread is not held up behind it), for
up to the patience (:data:`WRITE_PATIENCE_S`, 60 s, or ``$CODEFLUX_WRITE_PATIENCE_S``:
:func:`write_patience_s`), then :class:`~codeflux.domain.errors.WriteLockHeldError`. Only the begin is retried:
the transaction's function has not run yet, so nothing is ever run twice and nothing was written by a failed
attempt. A write with its own ``busy_timeout_ms`` (an application log record) is never patient.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import apsw

from codeflux.domain.errors import InvalidValueError, StoreBusyError, StoreClosedError, WriteLockHeldError
from codeflux.store.connection import (
    BUSY_TIMEOUT_MS,
    map_sqlite_errors,
    open_connection,
    restrict_database_file_modes,
    sqlite_store_error,
)

__all__ = ["WRITE_PATIENCE_S", "WRITE_PATIENCE_VARIABLE", "Database", "ReadView", "Row", "Transaction", "now_us",
           "write_patience_s"]

T = TypeVar("T")
Row = tuple[Any, ...]
SqlValue = str | int | bytes | None

WRITE_PATIENCE_S: Final = 60.0
"""How long a run's write waits for another process's write lock before it gives up (see the module docstring)."""
WRITE_PATIENCE_VARIABLE: Final = "CODEFLUX_WRITE_PATIENCE_S"
_PATIENCE_RANGE: Final = (0.1, 3600.0)
_PATIENT_SLICE_MS: Final = 1000


class _BusyAtBegin(Exception):
    """``BEGIN IMMEDIATE`` found the write lock held: nothing began, the transaction's function has not run."""


def write_patience_s(environ: Mapping[str, str] | None = None) -> float:
    """The write patience in seconds: ``$CODEFLUX_WRITE_PATIENCE_S`` (0.1–3600) when set, else 60."""
    raw = (os.environ if environ is None else environ).get(WRITE_PATIENCE_VARIABLE, "").strip()
    if not raw:
        return WRITE_PATIENCE_S
    low, high = _PATIENCE_RANGE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not low <= value <= high:
        raise InvalidValueError(kind=WRITE_PATIENCE_VARIABLE, reason=f"must be a number of seconds from {low:g} "
                                                                     f"to {high:g}")
    return value


def now_us() -> int:
    """Wall-clock time as integer UTC microseconds since the epoch (the storage time unit)."""
    return time.time_ns() // 1000


class ReadView:
    """Read access to one connection. Only store modules use it; SQL never leaves the store."""

    __slots__ = ("_conn", "_cursor")

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        # One cursor for the view's statements, which run one after another, each read to its end: a cursor per
        # statement (``Connection.execute``) costs ≈ 2 µs more each, and a model call runs ≈ 25 statements.
        self._cursor = conn.cursor()

    def query_all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        # try/except rather than ``with map_sqlite_errors(...)``: the same mapping, and no context manager entered
        # on every statement (each model call runs ≈ 25)
        try:
            return list(self._cursor.execute(sql, tuple(params)))
        except apsw.Error as err:
            raise sqlite_store_error("read", err) from err

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
        try:
            return list(self._cursor.execute(sql, tuple(params)))
        except apsw.Error as err:
            raise sqlite_store_error("write", err) from err

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        with map_sqlite_errors("write"):
            self._cursor.executemany(sql, [tuple(r) for r in rows])

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
        self._patience = threading.local()

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

    @contextlib.contextmanager
    def patient_writes(self, seconds: float) -> Iterator[None]:
        """While the block runs, this thread's writes wait up to ``seconds`` for another process's write lock
        (see the module docstring); other threads keep the busy timeout. Nests (the inner patience counts)."""
        previous = self.write_patience
        self._patience.seconds = seconds
        try:
            yield
        finally:
            self._patience.seconds = previous

    @property
    def write_patience(self) -> float | None:
        """The current thread's write patience in seconds, None outside :meth:`patient_writes`."""
        seconds: float | None = getattr(self._patience, "seconds", None)
        return seconds

    def write(self, work: Callable[[Transaction], T], *, busy_timeout_ms: int | None = None) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction; commit, then run post-commit callbacks.

        ``busy_timeout_ms`` replaces the connection's busy timeout (5 s) for taking this transaction's write
        lock: a record that may be dropped (an application log line) waits briefly instead of 5 s more, and
        never patiently. Inside :meth:`patient_writes` a held lock is waited for up to the patience, then
        :class:`WriteLockHeldError`."""
        patience = self.write_patience if busy_timeout_ms is None else None
        if patience is None:
            return self._write_once(work, busy_timeout_ms=busy_timeout_ms, patient=False)
        deadline = time.monotonic() + patience
        while True:
            slice_ms = min(_PATIENT_SLICE_MS, max(1, int((deadline - time.monotonic()) * 1000)))
            try:
                return self._write_once(work, busy_timeout_ms=slice_ms, patient=True)
            except _BusyAtBegin as busy:
                if time.monotonic() >= deadline:
                    raise WriteLockHeldError(waited_seconds=patience) from busy.__cause__
            time.sleep(0.01)  # the process's own lock is free for a moment: another thread's write may go first

    def _write_once(self, work: Callable[[Transaction], T], *, busy_timeout_ms: int | None, patient: bool) -> T:
        with self._write_lock:
            conn = self._require_writer()
            tx = Transaction(conn)
            if busy_timeout_ms is not None:
                conn.set_busy_timeout(busy_timeout_ms)
            try:
                with map_sqlite_errors("begin transaction"):
                    tx._cursor.execute("BEGIN IMMEDIATE")
            except StoreBusyError as busy:
                if patient and conn.get_autocommit():
                    raise _BusyAtBegin() from busy  # nothing began and ``work`` has not run: try again
                raise
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
                    tx._cursor.execute("COMMIT")
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
            view = ReadView(conn)
            with map_sqlite_errors("begin read"):
                view._cursor.execute("BEGIN")
            try:
                return work(view)
            finally:
                with map_sqlite_errors("end read"):
                    if not conn.get_autocommit():
                        view._cursor.execute("COMMIT")

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
