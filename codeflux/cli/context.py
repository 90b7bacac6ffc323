"""What every command receives: the parsed arguments' shared parts and the process streams."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from codeflux.store.location import DataLocation

__all__ = ["CliContext"]


class CliContext:
    """Streams and environment for one command run (tests pass their own).

    A plain class, not a dataclass: every command builds one, and :mod:`dataclasses` (with the :mod:`inspect`
    it imports) would be a tenth of ``codeflux --help``'s start (docs/benchmarks.md, "bench cli").
    """

    __slots__ = ("command", "data_dir", "environ", "error_class", "records_app_log", "stderr", "stdin", "stdout",
                 "stop_requested")

    def __init__(
        self,
        *,
        data_dir: str | None = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.command: str | None = None
        """The command being run, once parsed (for the application log)."""
        self.error_class: str | None = None
        """The class name of the error that ended the command, if one did."""
        self.records_app_log = False
        """Whether this command changes state and so leaves an application log record."""
        self.stdin: TextIO = sys.stdin if stdin is None else stdin
        self.stdout: TextIO = sys.stdout if stdout is None else stdout
        self.stderr: TextIO = sys.stderr if stderr is None else stderr
        self.environ: Mapping[str, str] = dict(os.environ) if environ is None else environ
        self.stop_requested: Callable[[], str | None] = lambda: None
        """The signal that asked this command to stop at the next boundary (set while a plan is drafted)."""

    def writing_to(self, stdout: TextIO) -> CliContext:
        """This context with its standard output sent to ``stdout`` (``run --json`` shows the transcript on
        stderr: its stdout is the document's); everything else, what was set since construction too, is kept."""
        copy = CliContext.__new__(CliContext)
        for name in CliContext.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.stdout = stdout
        return copy

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
