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

A provider key the person gives explicitly in the environment (:func:`is_provider_key_variable`:
``CODEFLUX_<PROVIDER>_API_KEY``, ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``) is meant for codeflux, so it must
survive the re-execution without being in the re-executed process's environment, argv or a file: the first
process writes the names and values into a pipe, closes the writing end and re-executes with only the reading
end inherited and its number (with the pid, which ``execve`` keeps) in ``CODEFLUX_KEY_HANDOFF``. The
re-executed process reads the pipe to its end, closes it, drops that variable and registers each value with
the redactor before anything else runs; :func:`take_handed_off_keys` gives the values to
:func:`codeflux.coordinator.provider_keys.process_keys` once. Workers never see them: a worker's environment is
built from an allow-list (:mod:`codeflux.worker.environment`) and no descriptor but its own pipes is inherited.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import stat
import sys
from collections.abc import Mapping

from codeflux.worker.environment import is_sensitive_environment_name

# `typing` costs every command's start ~6 ms (this module is imported by the entry); the annotations
# below are never evaluated (`from __future__ import annotations`), so it is imported for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "HANDOFF_VARIABLE",
    "environment_without_secrets",
    "harden_process",
    "is_provider_key_variable",
    "make_undumpable",
    "take_handed_off_keys",
]

HANDOFF_VARIABLE: Final = "CODEFLUX_KEY_HANDOFF"
"""``<fd>:<pid>`` of the pipe holding the provider keys a re-executed process was handed (never the keys)."""
_PROVIDER_KEY_NAMES: Final = frozenset({"ANTHROPIC_API_KEY", "OPENAI_API_KEY"})
_MAX_HANDED_OFF_BYTES: Final = 32 * 1024  # provider keys are at most 4096 characters each
_handed_off: dict[str, str] = {}

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


def is_provider_key_variable(name: str) -> bool:
    """Whether ``name`` is one of the variables that give codeflux a provider key explicitly:
    ``CODEFLUX_<PROVIDER>_API_KEY``, ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` (exact case)."""
    return name in _PROVIDER_KEY_NAMES or (name.startswith("CODEFLUX_") and name.endswith("_API_KEY")
                                          and len(name) > len("CODEFLUX__API_KEY"))


def environment_without_secrets(environment: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment without names that could carry a credential (the coordinator's own configuration,
    ``CODEFLUX_*`` except the provider keys, and what it needs to reach the credential store and the browser
    are kept), and the names removed. A stale :data:`HANDOFF_VARIABLE` is removed too."""
    kept: dict[str, str] = {}
    removed: list[str] = []
    for name, value in environment.items():
        if name == HANDOFF_VARIABLE or is_provider_key_variable(name) or (
                is_sensitive_environment_name(name) and name not in _KEPT_FOR_THE_COORDINATOR
                and not name.startswith("CODEFLUX_")):
            removed.append(name)
        else:
            kept[name] = value
    return kept, sorted(removed)


def take_handed_off_keys() -> dict[str, str]:
    """The provider keys (variable name → value) this process was handed at its re-execution, once: a second
    call returns nothing. Each value was registered with the redactor when it was read."""
    taken = dict(_handed_off)
    _handed_off.clear()
    return taken


def harden_process() -> None:
    """Re-execute this ``codeflux`` CLI process without credential variables (``/proc/<pid>/environ`` keeps
    the environment a process started with), then make it undumpable. Both are silent: nothing is printed or
    logged.

    The re-executed process runs ``python -m codeflux`` with the same arguments and interpreter flags (``-I``,
    ``-E``, ``-B``) and the environment :func:`environment_without_secrets` keeps; it comes here again and finds
    nothing to remove (a frozen single-file build re-executes the binary itself with the same arguments).
    ``execve`` keeps the pid, so a parent waiting on it sees one process. ``-m`` would put
    the current directory first on ``sys.path``, where a repository's own ``codeflux.py`` would be run instead
    of codeflux: unless this process already had it there (it was itself started as ``python -m codeflux``),
    the re-execution gets ``-P``, which leaves it out.
    """
    _receive_handed_off_keys()
    kept, removed = environment_without_secrets(os.environ)
    if removed:
        sys.stdout.flush()
        sys.stderr.flush()
        flags = [flag for flag, on in (("-I", sys.flags.isolated), ("-E", sys.flags.ignore_environment),
                                       ("-B", sys.flags.dont_write_bytecode),
                                       ("-P", not sys.flags.isolated and not _current_directory_first())) if on]
        keys = {name: value for name, value in os.environ.items() if is_provider_key_variable(name) and value}
        if keys:
            with contextlib.suppress(OSError):  # no pipe to be had (descriptors exhausted): the keys stay behind
                kept[HANDOFF_VARIABLE] = f"{_hand_off(keys)}:{os.getpid()}"
        # A frozen single-file build is its own program (no interpreter flags, no -m); the PyInstaller variables
        # are kept, so it runs from the directory already unpacked.
        again = [*flags, "-m", "codeflux"] if not getattr(sys, "frozen", False) else []
        os.execve(sys.executable, [sys.executable, *again, *sys.argv[1:]], kept)  # noqa: S606
    make_undumpable()


def _hand_off(keys: Mapping[str, str]) -> int:
    """A pipe holding ``keys`` (``name NUL value NUL`` …) whose reading end the re-executed process inherits;
    its writing end is closed before the ``execve``. Nothing here can block (no one reads until after the
    ``execve``): the writing end is non-blocking, and keys beyond the size bound or the pipe's capacity (a user
    over ``pipe-user-pages-soft`` gets one page) are left behind — a record cut short is never read as a key."""
    read_end, write_end = os.pipe()
    try:
        with contextlib.suppress(OSError, AttributeError):  # F_SETPIPE_SZ: Linux only
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 2 * _MAX_HANDED_OFF_BYTES)
        os.set_blocking(write_end, False)
        payload, size = [], 0
        for name, value in sorted(keys.items()):
            record = f"{name}\x00{value}\x00".encode("utf-8", "surrogateescape")
            if size + len(record) > _MAX_HANDED_OFF_BYTES:
                continue
            payload.append(record)
            size += len(record)
        data = b"".join(payload)
        with contextlib.suppress(BlockingIOError):
            while data:
                data = data[os.write(write_end, data):]
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


def _receive_handed_off_keys() -> None:
    """Read the keys the process that re-executed into this one handed off (see the module docstring), register
    each with the redactor and drop :data:`HANDOFF_VARIABLE`. A value not made for this pid (set by hand, or
    inherited by another program) is ignored: no descriptor is read unless this process was handed it."""
    handoff = os.environ.pop(HANDOFF_VARIABLE, None)
    if handoff is None:
        return
    fd_text, _, pid_text = handoff.partition(":")
    if not (fd_text.isdigit() and pid_text == str(os.getpid())):
        return
    fd = int(fd_text)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    fields = b"".join(chunks).split(b"\x00")[:-1]  # what follows the last NUL is a record cut short
    fields = fields[:len(fields) - len(fields) % 2]  # so is a name without its value
    received = {name.decode("utf-8", "surrogateescape"): value.decode("utf-8", "surrogateescape")
                for name, value in zip(fields[0::2], fields[1::2], strict=True)}
    received = {name: value for name, value in received.items() if is_provider_key_variable(name) and value}
    if received:
        from codeflux.redact import default_redactor  # noqa: PLC0415 (only a process that was handed keys)

        for value in received.values():
            default_redactor().add_secret(value)
        _handed_off.update(received)


def _current_directory_first() -> bool:
    """Whether this interpreter put the current directory first on ``sys.path`` (``python -m …``, ``-c``); a
    console script has its own directory there instead, and ``-P``/``-I`` nothing."""
    if sys.flags.safe_path or not sys.path:
        return False
    try:
        return sys.path[0] in ("", os.getcwd())
    except OSError:  # the current directory was removed
        return False
