"""How the CLI writes for a person or for a program.

- **Colour** only on a terminal, never when ``NO_COLOR`` is set (any non-empty value, https://no-color.org)
  or ``TERM=dumb``: :func:`colour_allowed`. A pipe, a file or a test's stream gets plain text.
- **``--json``**: one JSON document on standard output (:func:`print_json`): keys sorted, ASCII only (so no
  escape sequence from a task title can reach a terminal); the documents are :mod:`codeflux.cli.documents`.
- **A reader that went away** (``codeflux task list | head -1``): :func:`stdout_reader_gone` tells a closed
  pipe on standard output from a broken pipe to anything else (a child process), which stays a bug.

Light on purpose (the standard library and the CLI context): :mod:`codeflux.cli.main` imports it at every start.
"""

from __future__ import annotations

import json
import os
import select
import stat
from collections.abc import Mapping
from typing import TextIO

from codeflux.cli.context import CliContext

__all__ = ["colour_allowed", "print_json", "stdout_reader_gone"]


def colour_allowed(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether text written to ``stream`` may carry ANSI colour: a terminal, no ``NO_COLOR``, not ``TERM=dumb``."""
    if environ.get("NO_COLOR", "") != "" or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or the stream is closed
        return False


def print_json(ctx: CliContext, document: Mapping[str, object]) -> None:
    """One JSON document on standard output, keys sorted and non-ASCII escaped (stable, and never a control
    sequence for the terminal)."""
    ctx.say(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True))


def stdout_reader_gone(stream: TextIO) -> bool:
    """Whether ``stream`` is a pipe (or socket) whose reading end has been closed.

    Linux reports such a write end as ``POLLERR`` at once; a terminal, a file or a pipe still read never does.
    A stream without a descriptor (a test's) is not one.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except OSError:
        return False
    return any(revents & (select.POLLERR | select.POLLHUP) for _, revents in events) and _is_pipe_or_socket(fd)


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
