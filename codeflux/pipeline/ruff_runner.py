"""Run codeflux's own ruff on one source text, with a rule set codeflux fixes (phase B's static checks).

The binary is the one installed with codeflux (``ruff.__main__.find_ruff_bin()``, never ``PATH``); a caller may
name another (:func:`locate_ruff`'s ``ruff``), which is how a missing ruff is shown. Each run:

* ``--isolated``: no configuration file is read, so a repository's ``[tool.ruff]`` (or a ``ruff.toml``) cannot
  switch a rule off; ``--ignore-noqa``: neither can a ``# noqa`` comment, nor a file-wide ``# ruff: noqa``;
* the source arrives on standard input (a temporary file, never a pipe that could block), named by
  ``--stdin-filename`` with its repository-relative path, and ruff starts in an empty temporary directory: it
  never opens a path of the worktree;
* no shell, an environment of nothing but a private ``HOME``, no cache, a timeout of :data:`TIMEOUT_SECONDS`
  and at most :data:`MAX_OUTPUT_BYTES` of output read. ruff makes no network request.

A ruff that is missing, does not start, times out, or answers something that is not its JSON report is a
:class:`RuffUnavailable` naming what happened — the stage using it is then ``blocked``, never satisfied.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "MAX_OUTPUT_BYTES",
    "TIMEOUT_SECONDS",
    "RuffFinding",
    "RuffTool",
    "RuffUnavailable",
    "codeflux_ruff",
    "locate_ruff",
]

TIMEOUT_SECONDS: Final = 30.0
MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffFinding:
    """One diagnostic: its rule code (``invalid-syntax`` when ruff could not parse), message and line span."""

    rule: str
    message: str
    line: int
    end_line: int


class RuffUnavailable(Exception):
    """ruff could not be run or did not answer; ``str()`` is one line naming why."""


def codeflux_ruff() -> Path:
    """The ruff binary installed with codeflux; raises :class:`RuffUnavailable` when there is none."""
    try:
        from ruff.__main__ import find_ruff_bin  # noqa: PLC0415 (a missing ruff blocks the stage, not the import)
    except ImportError as error:
        raise RuffUnavailable("the ruff package is not installed with codeflux") from error
    try:
        return Path(find_ruff_bin())
    except FileNotFoundError as error:
        raise RuffUnavailable("the ruff package is installed but its binary was not found") from error


def _execute(argv: Sequence[str], *, stdin_text: str | None) -> bytes:
    with tempfile.TemporaryDirectory(prefix="codeflux-ruff-") as scratch, \
            tempfile.TemporaryFile() as source, tempfile.TemporaryFile() as output:
        if stdin_text is not None:
            source.write(stdin_text.encode("utf-8"))
            source.seek(0)
        try:
            completed = subprocess.run(  # a fixed argv, no shell, codeflux's own binary
                list(argv), stdin=source, stdout=output, stderr=subprocess.DEVNULL, cwd=scratch,
                env={"HOME": scratch, "NO_COLOR": "1"}, timeout=TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired as error:
            raise RuffUnavailable(f"ruff did not answer within {TIMEOUT_SECONDS:g} s") from error
        except OSError as error:
            raise RuffUnavailable(f"ruff at {argv[0]} could not be started ({error.strerror or 'error'})") from error
        if completed.returncode not in (0, 1):
            raise RuffUnavailable(f"ruff exited {completed.returncode} without a report")
        size = output.tell()
        if size > MAX_OUTPUT_BYTES:
            raise RuffUnavailable(f"ruff's report is larger than {MAX_OUTPUT_BYTES // (1024 * 1024)} MiB")
        output.seek(0)
        return output.read(MAX_OUTPUT_BYTES)


def _version(binary: Path) -> str:
    answer = _execute([str(binary), "--version"], stdin_text=None).decode("utf-8", "replace").strip()
    return answer.removeprefix("ruff ").strip() or "unknown"


def _findings(report: bytes) -> tuple[RuffFinding, ...]:
    try:
        items = json.loads(report)
    except ValueError as error:
        raise RuffUnavailable("ruff's report is not JSON") from error
    if not isinstance(items, list):
        raise RuffUnavailable("ruff's report is not a list of diagnostics")
    found: list[RuffFinding] = []
    for item in items:
        location = item.get("location") if isinstance(item, dict) else None
        end = item.get("end_location") if isinstance(item, dict) else None
        if not isinstance(location, dict) or not isinstance(location.get("row"), int):
            raise RuffUnavailable("ruff's report has a diagnostic without a line")
        line = int(location["row"])
        end_line = int(end["row"]) if isinstance(end, dict) and isinstance(end.get("row"), int) else line
        code = item.get("code")
        found.append(RuffFinding(rule=str(code) if code else "invalid-syntax",
                                 message=" ".join(str(item.get("message", "")).split())[:300],
                                 line=line, end_line=max(line, end_line)))
    return tuple(found)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuffTool:
    """A ruff binary that answered ``--version``: what :meth:`check` runs."""

    binary: Path
    version: str

    def check(self, source: str, *, filename: str, rules: Sequence[str], config: Sequence[str] = ()
              ) -> tuple[RuffFinding, ...]:
        """ruff's findings for ``source`` (named ``filename``, repository-relative) under exactly ``rules``
        (codes for ``--select``) and ``config`` (``--config`` overrides such as ``lint.mccabe.max-complexity =
        10``); see the module docstring."""
        argv = [str(self.binary), "check", "--isolated", "--no-cache", "--ignore-noqa", "--no-fix",
                "--output-format", "json", "--select", ",".join(rules)]
        for override in config:
            argv += ["--config", override]
        argv += ["--stdin-filename", filename, "-"]
        return _findings(_execute(argv, stdin_text=source))


def locate_ruff(ruff: Path | None = None) -> RuffTool:
    """The ruff to run: ``ruff`` when given, else :func:`codeflux_ruff`; raises :class:`RuffUnavailable` when it
    is missing or does not answer ``--version``."""
    binary = ruff if ruff is not None else codeflux_ruff()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise RuffUnavailable(f"ruff is missing: {binary} is not an executable file")
    return RuffTool(binary=binary, version=_version(binary))
