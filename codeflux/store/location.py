"""Where codeflux keeps its data: one directory (0700) holding one SQLite file (0600)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import platformdirs

from codeflux.domain.errors import DataDirectoryError, UsageError

__all__ = [
    "DATABASE_FILENAME",
    "DataDirectorySource",
    "DataLocation",
    "ensure_data_directory",
    "refuse_a_file",
    "resolve_data_location",
]

DATABASE_FILENAME = "codeflux.sqlite3"
DATA_DIR_ENV = "CODEFLUX_HOME"


class DataDirectorySource(StrEnum):
    """Where the data directory's path came from (what messages about it name)."""

    OPTION = "--data-dir"
    ENVIRONMENT = DATA_DIR_ENV
    PLATFORM_DEFAULT = "the platform default"
    GIVEN = "the data directory path"  # built by a caller, not resolved from the command line


@dataclass(frozen=True, slots=True, kw_only=True)
class DataLocation:
    """The data directory and the fixed paths inside it."""

    directory: Path
    source: DataDirectorySource = DataDirectorySource.GIVEN
    """Where the path came from, for messages."""

    @property
    def database(self) -> Path:
        return self.directory / DATABASE_FILENAME

    @property
    def backups(self) -> Path:
        return self.directory / "backups"

    @property
    def worktrees(self) -> Path:
        return self.directory / "worktrees"

    @property
    def migration_lock(self) -> Path:
        return self.directory / f"{DATABASE_FILENAME}.migration.lock"


def resolve_data_location(explicit: str | None, environ: Mapping[str, str]) -> DataLocation:
    """`--data-dir` wins, then ``CODEFLUX_HOME``, then the platform's user data directory."""
    if explicit is not None:
        chosen, source = explicit, DataDirectorySource.OPTION
    elif DATA_DIR_ENV in environ:
        chosen, source = environ[DATA_DIR_ENV], DataDirectorySource.ENVIRONMENT
    else:
        chosen, source = platformdirs.user_data_dir("codeflux", appauthor=False), DataDirectorySource.PLATFORM_DEFAULT
    if not chosen.strip():
        raise UsageError(f"{source} is empty; give a directory path")
    if "\x00" in chosen:
        raise UsageError(f"{source} contains a NUL byte")
    return DataLocation(directory=Path(os.path.abspath(os.path.expanduser(chosen))), source=source)


def refuse_a_file(location: DataLocation) -> None:
    """Refuse a data directory path that names something other than a directory (a file, say), saying so."""
    directory = location.directory
    if directory.exists() and not directory.is_dir():
        raise DataDirectoryError(f"{location.source} names {directory}, which is not a directory; give "
                                 "the path of a directory (it is created when missing)")


def ensure_data_directory(location: DataLocation) -> None:
    """Create the data directory 0700 if absent; refuse a path that is a file or not writable.

    An existing directory's mode is left alone: it may be one the user chose on purpose.
    """
    path = location.directory
    try:
        st = path.lstat()
    except FileNotFoundError:
        try:
            path.mkdir(mode=0o700, parents=True)
        except OSError as err:
            raise DataDirectoryError(
                f"cannot create the data directory ({err.strerror}); pass --data-dir with a writable path"
            ) from err
        path.chmod(0o700)
        return
    if not stat.S_ISDIR(st.st_mode):
        raise DataDirectoryError(f"{location.source} names {path}, which is not a directory; give the path of a "
                                 "directory (it is created when missing)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise DataDirectoryError(
            "the data directory is not writable; fix its permissions or pass --data-dir"
        )
