"""A bounded, deterministic walk of a worktree directory that never follows a symlink and skips ``.git``.

Used by ``list_directory``, ``glob`` and ``grep``. Directories are entered through descriptors opened
with ``O_NOFOLLOW`` beneath their parent (see ``beneath``); entries come sorted by name, depth first.
A symbolic link is reported as such and never entered or read. Any ``.git`` entry (any letter case) is
skipped with everything under it. The walk stops after ``max_entries`` entries or ``MAX_DEPTH`` levels.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from codeflux.worker.tools.beneath import open_directory_beneath

__all__ = ["MAX_DEPTH", "EntryKind", "Walk", "WalkEntry"]

MAX_DEPTH: Final = 64
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class EntryKind(StrEnum):
    DIRECTORY = "directory"
    FILE = "file"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class WalkEntry:
    """One entry: its worktree-relative path (``/``-separated), kind and size in bytes."""

    relative: str
    kind: EntryKind
    size: int


class Walk:
    """Iterate the entries under ``start`` (worktree-relative components; empty for the root).

    ``stopped_early`` tells, after iterating, whether ``max_entries`` or the depth bound cut it short.
    """

    def __init__(self, root: Path, start: Sequence[str], *, recursive: bool, max_entries: int) -> None:
        self._root = root
        self._start = tuple(start)
        self._recursive = recursive
        self._max_entries = max_entries
        self._count = 0
        self.stopped_early = False

    def __iter__(self) -> Iterator[WalkEntry]:
        with open_directory_beneath(self._root, self._start) as descriptor:
            yield from self._directory(descriptor, "/".join(self._start), depth=0)

    def _directory(self, descriptor: int, prefix: str, *, depth: int) -> Iterator[WalkEntry]:
        with os.scandir(descriptor) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        for entry in entries:
            if entry.name.rstrip(". ").lower() == ".git":
                continue
            if self._count >= self._max_entries:
                self.stopped_early = True
                return
            self._count += 1
            relative = f"{prefix}/{entry.name}" if prefix else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = _kind(info.st_mode)
            yield WalkEntry(relative=relative, kind=kind, size=info.st_size)
            if kind is EntryKind.DIRECTORY and self._recursive:
                if depth + 1 >= MAX_DEPTH:
                    self.stopped_early = True
                    continue
                yield from self._child(descriptor, entry.name, relative, depth=depth + 1)

    def _child(self, parent: int, name: str, relative: str, *, depth: int) -> Iterator[WalkEntry]:
        try:
            child = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
        except OSError:
            return  # replaced by a symlink or removed since it was listed: not entered
        try:
            yield from self._directory(child, relative, depth=depth)
        finally:
            os.close(child)


def _kind(mode: int) -> EntryKind:
    if stat.S_ISLNK(mode):
        return EntryKind.SYMLINK
    if stat.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    if stat.S_ISREG(mode):
        return EntryKind.FILE
    return EntryKind.OTHER
