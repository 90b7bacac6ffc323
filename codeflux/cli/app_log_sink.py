"""Persisting the CLI's application log records into ``app_logs`` of an existing, current database.

The sink never creates or migrates a database: a command run before the first database exists (or
against a database of another schema) simply keeps its records on stderr only.
"""

from __future__ import annotations

from codeflux.coordinator.maintenance import append_app_log_record
from codeflux.domain.errors import CodefluxError
from codeflux.logs import LogRecord
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

__all__ = ["AppLogSink"]


class AppLogSink:
    """A ``persist`` callback for :func:`codeflux.logs.configure_logging`; ``close()`` is idempotent."""

    def __init__(self, location: DataLocation) -> None:
        self._location = location
        self._db: Database | None = None
        self._unavailable = False

    def __call__(self, record: LogRecord) -> None:
        db = self._open()
        if db is not None:
            append_app_log_record(db, level=record.level, event=record.event, fields_json=record.fields_json,
                                  at_us=record.at_us)

    def _open(self) -> Database | None:
        if self._db is None and not self._unavailable:
            try:
                self._db = open_store(self._location, create=False, migrate=False)
            except CodefluxError:
                self._unavailable = True
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
