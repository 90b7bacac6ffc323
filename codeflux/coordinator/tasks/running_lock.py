"""The data directory's running-tasks lock: shared by every process that runs tasks or lands an accept,
exclusive for startup recovery (:mod:`.recovery`), so a startup never mistakes live work for interrupted work
(the kernel drops the lock of a killed process)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from codeflux.store.location import DataLocation

__all__ = ["exclusive_startup_lock", "shared_running_lock"]

_LOCK_NAME = "running-tasks.lock"


@contextlib.contextmanager
def _flock(location: DataLocation, operation: int) -> Iterator[bool]:
    descriptor = os.open(location.directory / _LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, operation)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)  # closing releases the lock


def exclusive_startup_lock(location: DataLocation) -> contextlib.AbstractContextManager[bool]:
    """True while no other process runs tasks (then startup recovery may run); False otherwise."""
    return _flock(location, fcntl.LOCK_EX | fcntl.LOCK_NB)


def shared_running_lock(location: DataLocation) -> contextlib.AbstractContextManager[bool]:
    """Held (blocking) by every process while it runs tasks, so no startup elsewhere marks them interrupted."""
    return _flock(location, fcntl.LOCK_SH)
