"""Counts and states of the store for a diagnostics bundle — never contents.

What is collected: the storage status, the database and supported schema versions, how many migrations
succeeded / failed / were interrupted, the number of rows per table, the number of sessions, which
providers have a stored credential reference (yes/no), and the size of the database files in bytes.
What is never collected: paths, row contents (settings values, event payloads, log fields, requirement
text, file contents, model output) and anything from the credential store.

Everything is read on a read-only connection; a missing, damaged or newer database is a *status*, not
an error, because a bundle is most wanted exactly when something is wrong.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from codeflux.domain.errors import DatabaseMissingError, StoreCorruptError, StoreError, StoreUnavailableError
from codeflux.domain.providers import ProviderName
from codeflux.store.connection import open_connection
from codeflux.store.database import ReadView
from codeflux.store.migrations import supported_schema_version

__all__ = ["StorageDiagnostics", "StorageStatus", "collect_storage_diagnostics"]


class StorageStatus(StrEnum):
    """The state of the database as a diagnostics bundle reports it."""

    OK = "ok"
    MISSING = "missing"
    EMPTY = "empty"
    OLDER = "older"
    NEWER = "newer"
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageDiagnostics:
    """Counts and states only; ``None`` means "could not be read" (the status says why)."""

    status: StorageStatus
    supported_schema_version: int
    schema_version: int | None = None
    migrations_succeeded: int | None = None
    migrations_failed: int | None = None
    migrations_interrupted: int | None = None
    table_rows: dict[str, int] = field(default_factory=dict)
    sessions: int | None = None
    providers_stored: dict[str, bool] = field(default_factory=dict)
    database_bytes: int = 0
    total_bytes: int = 0


def collect_storage_diagnostics(path: Path) -> StorageDiagnostics:
    """Collect what a bundle may say about the database at ``path`` without changing it."""
    supported = supported_schema_version()
    database_bytes, total_bytes = _file_sizes(path)

    def failed(status: StorageStatus) -> StorageDiagnostics:
        return StorageDiagnostics(status=status, supported_schema_version=supported,
                                  database_bytes=database_bytes, total_bytes=total_bytes)

    try:
        conn = open_connection(path, readonly=True)
    except DatabaseMissingError:
        return StorageDiagnostics(status=StorageStatus.MISSING, supported_schema_version=supported)
    except StoreCorruptError:
        return failed(StorageStatus.CORRUPT)
    except StoreError:
        return failed(StorageStatus.UNREADABLE)
    try:
        return _collect(ReadView(conn), supported, database_bytes, total_bytes)
    except StoreCorruptError:
        return failed(StorageStatus.CORRUPT)
    except StoreUnavailableError:
        return failed(StorageStatus.UNREADABLE)
    finally:
        conn.close()


def _collect(view: ReadView, supported: int, database_bytes: int, total_bytes: int) -> StorageDiagnostics:
    version = int(view.query_all("PRAGMA user_version")[0][0])
    tables = _user_tables(view)
    if version == 0:
        status = StorageStatus.EMPTY
    elif version > supported:
        status = StorageStatus.NEWER
    elif version < supported:
        status = StorageStatus.OLDER
    else:
        status = StorageStatus.OK
    results = _migration_results(view) if "migration_history" in tables else {}
    return StorageDiagnostics(
        status=status,
        supported_schema_version=supported,
        schema_version=version,
        migrations_succeeded=results.get("succeeded", 0),
        migrations_failed=results.get("failed", 0),
        migrations_interrupted=results.get("interrupted", 0),
        table_rows={table: _count_rows(view, table) for table in tables},
        sessions=_count_rows(view, "sessions") if "sessions" in tables else None,
        providers_stored=_providers_stored(view) if "provider_credentials" in tables else {},
        database_bytes=database_bytes,
        total_bytes=total_bytes,
    )


def _user_tables(view: ReadView) -> list[str]:
    rows = view.query_all(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        " ORDER BY name"
    )
    return [str(row[0]) for row in rows]


def _count_rows(view: ReadView, table: str) -> int:
    # The name comes from sqlite_schema, never from input; quoting keeps any name a single identifier.
    quoted = '"' + table.replace('"', '""') + '"'
    return int(view.query_all(f"SELECT count(*) FROM {quoted}")[0][0])  # noqa: S608


def _migration_results(view: ReadView) -> dict[str, int]:
    rows = view.query_all("SELECT result, count(*) FROM migration_history GROUP BY result")
    return {str(result): int(count) for result, count in rows}


def _providers_stored(view: ReadView) -> dict[str, bool]:
    stored = {str(row[0]) for row in view.query_all("SELECT provider FROM provider_credentials")}
    known = {name.value: name.value in stored for name in ProviderName}
    # A reference this codeflux has no name for (written by a newer one) is still counted, by name.
    known.update({name: True for name in stored if name not in known})
    return dict(sorted(known.items()))


def _file_sizes(path: Path) -> tuple[int, int]:
    """Bytes of the database file, and of it together with its -wal and -shm files."""
    sizes = [0, 0, 0]
    for index, suffix in enumerate(("", "-wal", "-shm")):
        with contextlib.suppress(OSError):
            sizes[index] = Path(f"{path}{suffix}").stat().st_size
    return sizes[0], sum(sizes)
