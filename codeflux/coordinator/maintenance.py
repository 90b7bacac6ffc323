"""Keeping the one database file healthy: what the maintenance commands and services ask of the store.

The CLI and the RPC services reach the store's maintenance code only through these functions (they import
nothing from ``codeflux.store`` but the ``Database`` type, the data location and ``open_store``):

- a consistent online **backup** to a new file (:func:`write_backup_snapshot`) or into the data directory's
  backups folder (:func:`write_backup_into_data_directory`), always from a read-only connection in one step;
- the **integrity check** (:func:`check_integrity`), read-only **inspection** of a closed set of entities
  (:func:`inspect_stored_rows`), the **storage diagnostics** of a bug-report bundle
  (:func:`collect_diagnostics_of_storage`);
- **migrations** (:func:`migrate_data_directory`, :func:`shipped_schema_version`);
- the **application log** (:func:`append_app_log_record`, :func:`purge_application_logs`);
- **provider credential references** — the rows naming a key kept in the OS credential store
  (:func:`record_provider_key_reference`, :func:`forget_provider_key_reference`,
  :func:`stored_provider_key_names`).

None of these creates or migrates a database unless its name says so.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TypeVar

from codeflux.coordinator.schema_version import shipped_schema_version
from codeflux.domain.errors import (
    DatabaseMissingError,
    OperationFailedError,
    OutputExistsError,
    StoreBusyError,
    StoreUnavailableError,
)
from codeflux.store.app_logs import append_app_log, purge_app_logs
from codeflux.store.backup import SnapshotReport, write_snapshot
from codeflux.store.database import Database
from codeflux.store.diagnostics import StorageDiagnostics, collect_storage_diagnostics
from codeflux.store.inspection import (
    INSPECTABLE_ENTITIES,
    MAX_INSPECT_LIMIT,
    InspectableEntity,
    InspectionResult,
    inspect_entity,
    readonly_database,
)
from codeflux.store.integrity import IntegrityCheck, IntegrityReport, check_database_integrity
from codeflux.store.location import DataLocation, ensure_data_directory
from codeflux.store.migrations import MigrationReport, migrate_database
from codeflux.store.opening import open_store
from codeflux.store.provider_credentials import (
    delete_provider_credential_reference,
    list_provider_credential_references,
    record_provider_credential_reference,
)

__all__ = [
    "BACKUP_PREFIX",
    "MAX_INSPECT_LIMIT",
    "InspectableEntity",
    "InspectionResult",
    "IntegrityCheck",
    "IntegrityReport",
    "MigrationReport",
    "SnapshotReport",
    "StorageDiagnostics",
    "append_app_log_record",
    "check_integrity",
    "collect_diagnostics_of_storage",
    "forget_provider_key_reference",
    "inspect_stored_rows",
    "inspectable_entities",
    "keep_app_log_record",
    "migrate_data_directory",
    "purge_application_logs",
    "record_provider_key_reference",
    "shipped_schema_version",
    "stored_provider_key_names",
    "write_backup_into_data_directory",
    "write_backup_snapshot",
]

BACKUP_PREFIX: Final = "codeflux-backup-"
_BACKUP_NAME_ATTEMPTS: Final = 3

T = TypeVar("T")


# ─── backup ──────────────────────────────────────────────────────────────────────────────────────────


def write_backup_snapshot(location: DataLocation, output: Path) -> SnapshotReport:
    """Copy the existing database into the new file ``output`` (0600, never overwriting), from a read-only
    connection in one step, so the copy is one consistent point in time even under a busy writer.

    A copy that fails after the output was created raises :class:`OperationFailedError` saying why (most
    often: the output's disk is full); the partial file is removed.
    """
    with readonly_database(location) as source:
        try:
            # One step (-1): the copy reads one snapshot and cannot be restarted by a concurrent writer.
            return write_snapshot(source, output)
        except StoreUnavailableError as err:
            raise _explain_write_failure(output, location.database) from err


def write_backup_into_data_directory(location: DataLocation) -> SnapshotReport:
    """A new snapshot in ``<data>/backups/codeflux-backup-<UTC time>.sqlite3`` (the folder is created 0700)."""
    try:
        location.backups.mkdir(mode=0o700, exist_ok=True)
    except OSError as err:
        raise OperationFailedError(f"the backups folder cannot be created ({err.strerror})") from err
    with readonly_database(location) as source:
        for _ in range(_BACKUP_NAME_ATTEMPTS):
            try:
                return write_snapshot(source, _backup_path(location))
            except OutputExistsError:
                continue  # another backup took this instant's name
    raise OperationFailedError("no free backup file name was found; try again")


def _backup_path(location: DataLocation) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 1_000_000_000:09d}Z"
    return location.backups / f"{BACKUP_PREFIX}{stamp}.sqlite3"


def _explain_write_failure(output: Path, database: Path) -> OperationFailedError:
    """Say why the copy failed: most often the output's disk filled up (the partial file is removed)."""
    try:
        free = shutil.disk_usage(output.parent).free
        needed = database.stat().st_size
    except OSError:
        free, needed = -1, 0
    if 0 <= free < needed:
        return OperationFailedError(
            f"the disk holding {output.parent} is full ({free:,} bytes free; the snapshot needs about "
            f"{needed:,}); nothing was left behind — free space or choose another disk"
        )
    return OperationFailedError(
        "the snapshot could not be written (the database could not be read or the output could not be "
        "written); nothing was left behind — run `codeflux integrity-check` and try another output disk"
    )


# ─── checks, inspection, diagnostics ─────────────────────────────────────────────────────────────────


def check_integrity(location: DataLocation) -> IntegrityReport:
    """Every integrity check on the existing database, read-only; findings are returned, not raised."""
    return check_database_integrity(location)


def inspectable_entities() -> Mapping[str, InspectableEntity]:
    """The closed set of entities :func:`inspect_stored_rows` can show, by name."""
    return INSPECTABLE_ENTITIES


def inspect_stored_rows(location: DataLocation, *, entity: str, entity_id: str | None, limit: int) -> InspectionResult:
    """Up to ``limit`` rows of one entity's fixed query (filtered by ``entity_id`` where meaningful),
    on a read-only connection."""
    return inspect_entity(location, entity=entity, entity_id=entity_id, limit=limit)


def collect_diagnostics_of_storage(location: DataLocation) -> StorageDiagnostics:
    """Counts and states of the database (never paths or contents), without changing it."""
    return collect_storage_diagnostics(location.database)


# ─── migrations ──────────────────────────────────────────────────────────────────────────────────────


def migrate_data_directory(location: DataLocation) -> MigrationReport:
    """Create the data directory and database if absent, or bring the database to this codeflux's schema
    (an online backup is taken first)."""
    ensure_data_directory(location)
    return migrate_database(location)


# ─── the application log ─────────────────────────────────────────────────────────────────────────────


APP_LOG_BUSY_TIMEOUT_MS = 100


def append_app_log_record(db: Database, *, level: str, event: str, fields_json: str, at_us: int) -> bool:
    """Keep one already-redacted application log record (an unknown level is kept as ``info``). While another
    process holds the write lock the record is dropped after a short wait (it was printed on stderr): a log
    line never adds a second busy wait to a command that already waited. Returns whether it was kept."""
    return keep_app_log_record(db, level=level, event=event, fields_json=fields_json, at_us=at_us) is not None


def keep_app_log_record(db: Database, *, level: str, event: str, fields_json: str, at_us: int) -> int | None:
    """:func:`append_app_log_record` that returns the kept record's id (what a message can name, e.g. an
    internal error's ``logged as N``), or None when the write lock was held and the record was dropped."""
    try:
        return append_app_log(db, level=level, event=event, fields_json=fields_json, at_us=at_us,
                              busy_timeout_ms=APP_LOG_BUSY_TIMEOUT_MS)
    except StoreBusyError:
        return None


def purge_application_logs(location: DataLocation, *, before_us: int | None) -> int:
    """Delete application log records (all, or those before ``before_us``) from the existing database and
    record the purge as an event; returns how many were deleted. Nothing else is touched."""
    with open_store(location, create=False, migrate=False) as db:
        return purge_app_logs(db, before_us=before_us)


# ─── provider credential references ──────────────────────────────────────────────────────────────────


def record_provider_key_reference(location: DataLocation, *, provider: str, credential_ref: str) -> bool:
    """Record (or rotate) the reference to a key kept in the OS credential store, creating or migrating the
    database as needed; True when a reference already existed (a rotation)."""
    db = open_store(location, create=True, migrate=True)
    try:
        return record_provider_credential_reference(db, provider=provider, credential_ref=credential_ref)
    finally:
        db.close()


def forget_provider_key_reference(location: DataLocation, *, provider: str) -> bool:
    """Delete the provider's key reference if a database exists (never creating one); True when one was
    deleted."""
    return _with_existing_store(
        location, lambda db: delete_provider_credential_reference(db, provider=provider), default=False
    )


def stored_provider_key_names(db: Database) -> frozenset[str]:
    """The providers whose key reference is recorded (their key is in the OS credential store)."""
    return frozenset(row.provider for row in list_provider_credential_references(db))


def _with_existing_store(location: DataLocation, work: Callable[[Database], T], *, default: T) -> T:
    """Run ``work`` on the database if one exists (never creating it); ``default`` when there is none."""
    try:
        db = open_store(location, create=False, migrate=False)
    except DatabaseMissingError:
        return default
    try:
        return work(db)
    finally:
        db.close()
