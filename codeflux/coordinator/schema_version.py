"""The schema version this codeflux's migrations bring a database to, named without loading SQLite.

``codeflux version`` prints it and must start fast, so this reads the shipped migration files' names
(:mod:`codeflux.store.migration_files`) and imports neither the SQLite driver nor the rest of
:mod:`codeflux.coordinator.maintenance` (which re-exports it for the other maintenance callers).
"""

from __future__ import annotations

from codeflux.store.migration_files import supported_schema_version

__all__ = ["shipped_schema_version"]


def shipped_schema_version() -> int:
    """The schema version this codeflux's migrations bring a database to."""
    return supported_schema_version()
