"""The sha256 of an executable, re-computed only when the file may have changed.

A pinned program is hashed twice per run: by the coordinator when it derives the operation identity and
by the worker right before exec. A real program is large (``python3`` ≈ 6 MiB, ``node`` ≈ 90 MiB), so
:class:`ExecutableDigests` keeps the digest of a file it has hashed under the file's *change facts* as
``fstat`` reports them for the open descriptor — device, inode, size, ``mtime_ns`` and ``ctime_ns`` —
and hashes again when any of them differs.

Why that is honest: every way of changing a file's bytes through the file system (``write``,
``truncate``, ``rename`` over it, a copy onto it) moves its ``ctime`` to "now", and no unprivileged call
can set ``ctime`` back (``utime`` sets ``mtime`` and moves ``ctime`` forward). One gap is timestamp
granularity: the kernel stamps ``ctime`` from a coarse clock (a few milliseconds), so two writes inside
one tick leave equal facts. A digest is therefore cached only when the file's ``ctime`` lies at least
:data:`SETTLE_NS` before the hash began — a file changed that recently is hashed on every use (the
"racy git" rule). What stays unprotected, and is documented in ``docs/security.md`` ("Worker isolation"):
a process holding a *shared writable mapping* of the file can change its pages without a new ``ctime``
stamp; the worker kills every process a command started when it ends, so only a process outside the
worker's reach could do it — and such a process could equally swap the file between the hash and the
exec, which no cache makes worse or better.

The facts come from the descriptor that is then read, never from a separate ``stat`` of the path, so a
file swapped between looking and reading is keyed by what was actually hashed; they are read again after
hashing, and a file that changed while it was read is not cached.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from typing import BinaryIO, Final

__all__ = ["SETTLE_NS", "ExecutableDigests"]

SETTLE_NS: Final = 2_000_000_000
"""A file whose ``ctime`` is younger than this when hashing starts is not cached (coarse timestamps)."""

_CHUNK: Final = 1024 * 1024
_CAPACITY: Final = 256

_Facts = tuple[str, int, int, int, int, int]


class ExecutableDigests:
    """Content sha256 of open regular files, cached by (path, device, inode, size, mtime, ctime).

    Thread-safe. ``capacity`` 0 caches nothing. ``clock`` returns wall-clock nanoseconds (the clock file
    timestamps are stamped with).
    """

    def __init__(self, *, capacity: int = _CAPACITY, clock: Callable[[], int] = time.time_ns) -> None:
        self._capacity = capacity
        self._clock = clock
        self._lock = threading.Lock()
        self._digests: dict[_Facts, str] = {}

    def sha256_of(self, path: str, handle: BinaryIO, info: os.stat_result) -> str:
        """The sha256 (lowercase hex) of the open regular file ``handle``, whose ``fstat`` is ``info``."""
        facts = _facts(path, info)
        with self._lock:
            known = self._digests.get(facts)
        if known is not None:
            return known
        began = self._clock()
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
        text = digest.hexdigest()
        if self._capacity and info.st_ctime_ns <= began - SETTLE_NS \
                and _facts(path, os.fstat(handle.fileno())) == facts:
            with self._lock:
                if len(self._digests) >= self._capacity:
                    self._digests.clear()  # rare: a worker runs few distinct programs
                self._digests[facts] = text
        return text

    def cached(self, path: str, info: os.stat_result) -> str | None:
        """The digest kept for the file ``path`` whose ``fstat`` is ``info``, or None (hash it then)."""
        facts = _facts(path, info)
        with self._lock:
            return self._digests.get(facts)

    def is_cached(self, path: str, info: os.stat_result) -> bool:
        """True if a digest is kept for the file ``path`` whose ``fstat`` is ``info``."""
        with self._lock:
            return _facts(path, info) in self._digests


def _facts(path: str, info: os.stat_result) -> _Facts:
    return (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
