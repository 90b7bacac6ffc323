"""One coordinator per database: the instance lock of ``codeflux start``.

The lock is ``flock`` on ``<data>/codeflux.sqlite3.instance.lock`` (released by the kernel when the process
dies, so a crash never leaves it stuck). The holder writes one line into the file — its pid and the URL it
serves (never a token) — so a second ``start`` can say which coordinator holds it. ``codeflux doctor``
reads the same lock to tell "port in use by this data directory's coordinator" from "by another program".
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.errors import CoordinatorRunningError
from codeflux.store.location import DataLocation

__all__ = ["INSTANCE_LOCK_NAME", "InstanceLock", "coordinator_socket_path", "hold_instance_lock", "running_coordinator"]

INSTANCE_LOCK_NAME: Final = "codeflux.sqlite3.instance.lock"
_MAX_NOTE: Final = 512


def _lock_path(location: DataLocation) -> Path:
    return location.directory / INSTANCE_LOCK_NAME


def coordinator_socket_path(location: DataLocation) -> Path:
    """Where a running coordinator serves gRPC for the CLI (a 0600 socket in a 0700 directory)."""
    return location.directory / "coordinator" / "coordinator.sock"


@dataclass(slots=True)
class InstanceLock:
    """The held lock; :meth:`announce` records what the holder serves."""

    descriptor: int

    def announce(self, url: str) -> None:
        note = f"pid {os.getpid()}, {url}"[:_MAX_NOTE] + "\n"
        os.ftruncate(self.descriptor, 0)
        os.pwrite(self.descriptor, note.encode("utf-8"), 0)


def _holder_note(path: Path) -> str:
    try:
        text = path.read_text("utf-8", errors="replace").strip()
    except OSError:
        text = ""
    return text[:_MAX_NOTE] or "a process that has not said which URL it serves yet"


@contextlib.contextmanager
def hold_instance_lock(location: DataLocation) -> Iterator[InstanceLock]:
    """Hold the instance lock for the block; :class:`CoordinatorRunningError` names the holder."""
    path = _lock_path(location)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CoordinatorRunningError(holder=_holder_note(path)) from None
        lock = InstanceLock(descriptor)
        lock.announce("starting")
        try:
            yield lock
        finally:
            os.ftruncate(descriptor, 0)
    finally:
        os.close(descriptor)  # closing releases the lock


def running_coordinator(location: DataLocation) -> str | None:
    """The holder's note when a coordinator runs for this data directory, else None (never blocks)."""
    path = _lock_path(location)
    if not path.exists():
        return None
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_note(path)
        return None
    finally:
        os.close(descriptor)
