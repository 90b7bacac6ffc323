"""The one walker that writes a git tree to disk: the planner's view of a commit and the pipeline's scratch copies.

:func:`tracked_entries` lists every tracked path of a tree (files, executables, symbolic links, submodules)
with its size and object id, straight from git's object store: nothing is checked out, so no filter, hook,
attribute or other program of the repository runs. A tree entry whose name could leave the directory it is
written into (``..``, ``.``, a slash, a NUL byte, ``.git`` in any letter case or with trailing dots) is never
listed. The listing is bounded (``limit`` paths; ``complete`` says whether it holds them all).

:class:`TreeWriter` writes entries beneath a root it never leaves: folders are created by
:func:`make_folders` (a symbolic link or a file on the way is refused, never followed), files are opened
``O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW``, and symbolic links of the tree are only *collected* by
:func:`write_entries` and written by :meth:`TreeWriter.write_links` — after every file, so no write passes
through one — and only where nothing is there yet. Submodules have no content here and are left out; there
is no ``.git``. A subclass decides, before a blob is read, whether an entry is written
(:meth:`TreeWriter.admit`): the commit view leaves out files past its bounds, the base scratch refuses the
whole copy. ``private`` writers make folders ``0700`` and files ``0600``/``0700`` (what only codeflux reads);
the others ``0755`` and ``0644``/``0755`` (what a confined program reads as the repository's files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Final

import pygit2

__all__ = [
    "MAX_LINK_TARGET_BYTES",
    "EntryKind",
    "TrackedEntry",
    "TreeWriter",
    "make_folders",
    "safe_tree_name",
    "tracked_entries",
    "write_entries",
]

MAX_LINK_TARGET_BYTES: Final = 4095
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class EntryKind(StrEnum):
    FILE = "file"
    EXECUTABLE = "executable"
    LINK = "link"
    SUBMODULE = "submodule"


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedEntry:
    """One tracked path of a tree: its kind and its size in bytes (0 for a submodule)."""

    path: str
    kind: EntryKind
    size: int


def safe_tree_name(name: str | None) -> bool:
    """Whether a tree entry's name stays in its folder (see the module docstring)."""
    return bool(name) and name not in (".", "..") and "/" not in (name or "") and "\x00" not in (name or "") \
        and (name or "").rstrip(". ").lower() != ".git"


def tracked_entries(repository: pygit2.Repository, tree: pygit2.Tree, *, limit: int
                    ) -> tuple[list[tuple[TrackedEntry, pygit2.Oid]], bool]:
    """Every tracked path of ``tree`` (at most ``limit``) with its blob's id, and whether that is all of them."""
    found: list[tuple[TrackedEntry, pygit2.Oid]] = []
    stack: list[tuple[PurePosixPath, pygit2.Tree]] = [(PurePosixPath(), tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            if not safe_tree_name(entry.name):
                continue
            relative = prefix / str(entry.name)
            mode = entry.filemode
            if mode == pygit2.enums.FileMode.TREE:
                subtree = repository[entry.id]
                if isinstance(subtree, pygit2.Tree):
                    stack.append((relative, subtree))
                continue
            if mode == pygit2.enums.FileMode.COMMIT:
                kind, size = EntryKind.SUBMODULE, 0
            else:
                blob = repository[entry.id]
                if not isinstance(blob, pygit2.Blob):
                    continue
                kind = {pygit2.enums.FileMode.LINK: EntryKind.LINK,
                        pygit2.enums.FileMode.BLOB_EXECUTABLE: EntryKind.EXECUTABLE}.get(mode, EntryKind.FILE)
                size = blob.size
            found.append((TrackedEntry(path=relative.as_posix(), kind=kind, size=size), entry.id))
            if len(found) >= limit:
                return found, False
    return found, True


def make_folders(root: Path, relative: PurePosixPath, *, mode: int) -> Path:
    """``root/relative``, creating each missing folder with ``mode``; a symlink or a file on the way is refused
    (:class:`FileExistsError`), so writing a tree never follows a link out of ``root``."""
    current = root
    for part in relative.parts:
        current = current / part
        try:
            os.mkdir(current, mode)
        except FileExistsError:
            if current.is_symlink() or not current.is_dir():
                raise
    return current


class TreeWriter:
    """Writes files and links beneath ``root`` (see the module docstring); counts what it wrote."""

    def __init__(self, root: Path, *, private: bool) -> None:
        self.root = root
        self.written = 0
        self.bytes = 0
        self._folder_mode = 0o700 if private else 0o755
        self._file_modes = (0o600, 0o700) if private else (0o644, 0o755)
        self._links: list[tuple[PurePosixPath, bytes]] = []

    def admit(self, entry: TrackedEntry) -> bool:
        """Whether ``entry`` (a file) is written; called before its blob is read. Every file, here."""
        return True

    def folder(self, relative: PurePosixPath) -> Path:
        return make_folders(self.root, relative, mode=self._folder_mode)

    def file(self, relative: PurePosixPath, content: bytes, *, executable: bool) -> None:
        target = self.folder(relative.parent) / relative.name
        with os.fdopen(os.open(target, _CREATE, self._file_modes[executable]), "wb") as handle:
            handle.write(content)
        self.written += 1
        self.bytes += len(content)

    def link(self, relative: PurePosixPath, target: bytes) -> None:
        """Collect a symbolic link; it is written by :meth:`write_links`."""
        self._links.append((relative, target))

    def remove(self, relative: PurePosixPath) -> bool:
        """Remove the file or link at ``relative`` (never through a link on the way); whether one was there."""
        parent = self.root
        for part in relative.parts[:-1]:
            parent = parent / part
            if parent.is_symlink() or not parent.is_dir():
                return False
        target = parent / relative.name
        if target.is_symlink() or target.is_file():
            target.unlink()
            return True
        return False

    def write_links(self) -> None:
        """Write the collected links, last (no file was written through one), only where nothing is yet."""
        for relative, destination in self._links:
            place = self.folder(relative.parent) / relative.name
            if not place.exists() and not place.is_symlink():
                os.symlink(os.fsdecode(destination), place)
        self._links.clear()


def write_entries(repository: pygit2.Repository, entries: Sequence[tuple[TrackedEntry, pygit2.Oid]],
                  writer: TreeWriter) -> None:
    """Write the files ``writer`` admits and collect the links (a link whose target could name no path is left
    out); submodules are left out. Call :meth:`TreeWriter.write_links` once nothing else is written."""
    for entry, oid in entries:
        if entry.kind is EntryKind.SUBMODULE:
            continue
        if entry.kind is EntryKind.LINK:
            blob = repository[oid]
            if isinstance(blob, pygit2.Blob) and 0 < entry.size <= MAX_LINK_TARGET_BYTES \
                    and b"\x00" not in blob.data:
                writer.link(PurePosixPath(entry.path), blob.data)
            continue
        if not writer.admit(entry):
            continue
        blob = repository[oid]
        if isinstance(blob, pygit2.Blob):
            writer.file(PurePosixPath(entry.path), blob.data, executable=entry.kind is EntryKind.EXECUTABLE)
