"""What every command receives: the parsed arguments' shared parts and the process streams."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from codeflux.store.location import DataLocation

__all__ = ["CliContext"]


@dataclass(slots=True, kw_only=True)
class CliContext:
    """Streams and environment for one command run (tests pass their own)."""

    data_dir: str | None = None
    command: str | None = None
    """The command being run, once parsed (for the application log)."""
    error_class: str | None = None
    """The class name of the error that ended the command, if one did."""
    records_app_log: bool = False
    """Whether this command changes state and so leaves an application log record."""
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stop_requested: Callable[[], str | None] = lambda: None
    """The signal that asked this command to stop at the next boundary (set while a plan is drafted)."""

    def location(self) -> DataLocation:
        # Imported here: `codeflux version` and `--help` never need a data directory (platformdirs and the
        # store stay unloaded; codeflux/cli/main.py's docstring).
        from codeflux.store.location import resolve_data_location  # noqa: PLC0415

        return resolve_data_location(self.data_dir, self.environ)

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def warn(self, text: str) -> None:
        self.stderr.write(text + "\n")
        self.stderr.flush()
