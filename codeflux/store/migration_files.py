"""The migrations this codeflux ships: the numbered SQL files, read and checked, and the schema version they
bring a database to.

Kept apart from :mod:`codeflux.store.migrations` (which applies them) so that naming the shipped schema
version — ``codeflux version`` does — reads a directory and imports no SQLite driver.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import codeflux
from codeflux.domain.errors import OperationFailedError

__all__ = ["MIGRATION_NAME_PATTERN", "Migration", "load_shipped_migrations", "supported_schema_version"]

MIGRATION_NAME_PATTERN = re.compile(r"^(?P<version>[0-9]{6})_(?P<name>[a-z0-9]+(?:_[a-z0-9]+)*)\.sql$")


class Migration(NamedTuple):
    """One shipped migration file (a named tuple: naming the schema version must not import dataclasses)."""

    version: int
    name: str
    sql: str
    sha256: str


def _migration_directory() -> Path:
    # The files are read from disk wherever codeflux is installed (a wheel, a PyInstaller bundle's unpacked
    # tree): the package's own folder, as importlib.resources.files() gives it for a package on disk — without
    # importing importlib.resources.
    shipped = Path(codeflux.__file__).parent / "_migrations"
    if shipped.is_dir():
        return shipped
    # Editable installs and source checkouts: the repository's own migrations/ directory.
    return Path(codeflux.__file__).resolve().parent.parent / "migrations"


def _shipped_migration_files(folder: Path) -> list[tuple[int, str, Path]]:
    """(version, name, path) of every migration file in ``folder``, verified named and contiguous from 000001."""
    found: list[tuple[int, str, Path]] = []
    for path in sorted(folder.glob("*.sql")):
        match = MIGRATION_NAME_PATTERN.match(path.name)
        if match is None:
            raise OperationFailedError(f"shipped migration {path.name} has an invalid name")
        found.append((int(match["version"]), match["name"], path))
    for expected, (version, _, _) in enumerate(found, start=1):
        if version != expected:
            raise OperationFailedError(f"shipped migrations are not contiguous at {expected:06d}")
    return found


def load_shipped_migrations(directory: Path | None = None) -> tuple[Migration, ...]:
    """The migrations this codeflux ships, verified contiguous from 000001."""
    import hashlib  # noqa: PLC0415 (only where the files are read: naming the schema version hashes nothing)

    migrations: list[Migration] = []
    for version, name, path in _shipped_migration_files(directory or _migration_directory()):
        data = path.read_bytes()
        migrations.append(Migration(version=version, name=name, sql=data.decode("utf-8"),
                                    sha256=hashlib.sha256(data).hexdigest()))
    return tuple(migrations)


def supported_schema_version() -> int:
    """The schema version this codeflux's migrations bring a database to: the number of shipped files (their
    names verified; their content is read where a database is migrated or checked)."""
    return len(_shipped_migration_files(_migration_directory()))
