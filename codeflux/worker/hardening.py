"""Keeping a codeflux process's secrets away from other processes of the same user.

:func:`make_undumpable` sets ``PR_SET_DUMPABLE`` to 0: the kernel then refuses other processes of the same
user (root excepted) ``/proc/<pid>/environ``, ``mem``, ``maps`` and ``fd``, and ``ptrace``; no core file is
written. The coordinator and every worker call it first thing. It is reset by ``execve`` of an ordinary
program, so the programs a worker starts are not affected (their box keeps them from the coordinator).

:func:`environment_without_secrets` is the coordinator's half of the other promise: ``/proc/<pid>/environ``
shows the environment a process was *started* with, whatever it removes from ``os.environ`` later, so
a coordinator started with credentials in its environment re-executes itself without them.
:func:`harden_process` does both for a ``codeflux`` CLI process: :mod:`codeflux.cli.entry` calls it before the
CLI is imported, and ``codeflux.cli.main.main`` again for a process that entered another way.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from typing import Final

from codeflux.worker.environment import is_sensitive_environment_name

__all__ = ["environment_without_secrets", "harden_process", "make_undumpable"]

_PR_SET_DUMPABLE: Final = 4
_KEPT_FOR_THE_COORDINATOR: Final = frozenset({
    "DBUS_SESSION_BUS_ADDRESS",  # the OS credential store is reached over the session bus
    "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",  # opening the browser
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",  # reaching a provider the way the user does
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
})


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` for this process; False where the call is unavailable."""
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def environment_without_secrets(environment: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment without names that could carry a credential (the coordinator's own configuration,
    ``CODEFLUX_*``, and what it needs to reach the credential store and the browser are kept), and the
    names removed."""
    kept: dict[str, str] = {}
    removed: list[str] = []
    for name, value in environment.items():
        if (is_sensitive_environment_name(name) and name not in _KEPT_FOR_THE_COORDINATOR
                and not name.startswith("CODEFLUX_")):
            removed.append(name)
        else:
            kept[name] = value
    return kept, sorted(removed)


def harden_process() -> None:
    """Re-execute this ``codeflux`` CLI process without credential variables (``/proc/<pid>/environ`` keeps
    the environment a process started with), then make it undumpable. Both are silent: nothing is printed or
    logged.

    The re-executed process runs ``python -m codeflux`` with the same arguments and interpreter flags (``-I``,
    ``-E``, ``-B``) and the environment :func:`environment_without_secrets` keeps; it comes here again and finds
    nothing to remove. ``execve`` keeps the pid, so a parent waiting on it sees one process. ``-m`` would put
    the current directory first on ``sys.path``, where a repository's own ``codeflux.py`` would be run instead
    of codeflux: unless this process already had it there (it was itself started as ``python -m codeflux``),
    the re-execution gets ``-P``, which leaves it out.
    """
    kept, removed = environment_without_secrets(os.environ)
    if removed:
        sys.stdout.flush()
        sys.stderr.flush()
        flags = [flag for flag, on in (("-I", sys.flags.isolated), ("-E", sys.flags.ignore_environment),
                                       ("-B", sys.flags.dont_write_bytecode),
                                       ("-P", not sys.flags.isolated and not _current_directory_first())) if on]
        os.execve(sys.executable, [sys.executable, *flags, "-m", "codeflux", *sys.argv[1:]], kept)  # noqa: S606
    make_undumpable()


def _current_directory_first() -> bool:
    """Whether this interpreter put the current directory first on ``sys.path`` (``python -m …``, ``-c``); a
    console script has its own directory there instead, and ``-P``/``-I`` nothing."""
    if sys.flags.safe_path or not sys.path:
        return False
    try:
        return sys.path[0] in ("", os.getcwd())
    except OSError:  # the current directory was removed
        return False
