"""Opening the store the way each kind of command needs it.

Commands that record something call :func:`open_store` with ``create=True, migrate=True``; read-only
maintenance never creates or migrates anything and says what to do instead.

Before any connection opens an existing database, its write-ahead log is validated
(:func:`~codeflux.store.wal_damage.check_wal_before_open`, one read of the ``-wal`` file): a log whose replay
drops committed transactions is copied aside first, and once the database is open the loss is recorded as a
``store-damage-detected`` event (once per damaged log), which recovery reads.
"""

from __future__ import annotations

from codeflux.domain.errors import DatabaseMissingError, DatabaseNeedsMigrationError, DatabaseNewerError
from codeflux.store.connection import open_connection
from codeflux.store.database import Database
from codeflux.store.location import DataLocation, ensure_data_directory, refuse_a_file
from codeflux.store.migrations import migrate_database, read_schema_version, supported_schema_version
from codeflux.store.wal_damage import WalDamage, check_wal_before_open, record_wal_damage

__all__ = ["inspect_schema_version", "open_store", "require_current_schema"]

_NO_DATABASE = (
    "no codeflux database exists in the data directory yet; it is created by the first command that "
    "records something (for example `codeflux migrate` or `codeflux provider set`)"
)


def open_store(location: DataLocation, *, create: bool, migrate: bool) -> Database:
    """Open the database, creating and migrating it when asked; refuse a schema this codeflux can't use."""
    refuse_a_file(location)
    if not location.database.exists():
        if not create:
            raise DatabaseMissingError(_NO_DATABASE)
        ensure_data_directory(location)
    damage = _check_wal(location)
    if migrate:
        migrate_database(location)
    db = Database.open(location.database, create=False)
    try:
        require_current_schema(db)
        if damage is not None:
            db.write(lambda tx: record_wal_damage(tx, damage))
    except BaseException:
        db.close()
        raise
    return db


def _check_wal(location: DataLocation) -> WalDamage | None:
    """The WAL's damage, copied aside, before anything opens the database (a copy that fails refuses the
    open: opening would discard the only evidence)."""
    if not location.database.exists():
        return None
    return check_wal_before_open(location)


def require_current_schema(db: Database) -> None:
    version = db.read(lambda view: int(view.query_all("PRAGMA user_version")[0][0]))
    supported = supported_schema_version()
    if version > supported:
        raise DatabaseNewerError(database_version=version, supported_version=supported)
    if version < supported:
        raise DatabaseNeedsMigrationError(database_version=version, supported_version=supported)


def inspect_schema_version(location: DataLocation) -> int:
    """The schema version of an existing database, read on a read-only connection."""
    refuse_a_file(location)
    if not location.database.exists():
        raise DatabaseMissingError(_NO_DATABASE)
    conn = open_connection(location.database, readonly=True)
    try:
        return read_schema_version(conn)
    finally:
        conn.close()
