"""A commit's tracked files written into a fresh directory: what the planner reads before any worktree exists.

:func:`write_commit_view` writes the tree of one commit (the task's base revision once it has one, else the
checkout's HEAD — the commit a task worktree is created from) into an empty directory the caller owns. The
bytes are the raw blobs from git's object store: nothing is checked out, so no filter, hook, attribute or
other program of the repository runs. Directories are created here; files are opened ``O_EXCL |
O_NOFOLLOW``; a symbolic link of the tree is written as a link after every file (so no write passes through
one), where the reading tools refuse it as the worker refuses a link in a worktree. Submodules have no
content here and are left out; there is no ``.git``. A tree entry whose name could leave the directory
(``..``, a slash, ``.git`` in any case) is never written.

It also lists every tracked path (files, links, submodules) with its size: the repository map and the
forecast read that listing, never a walk of the working tree (so ignored and untracked files do not count).

Bounded: the listing holds at most :data:`MAX_LISTED` paths; a file over :data:`MAX_VIEW_FILE_BYTES` (the
largest file the reading tools read) is not written, and writing stops after :data:`MAX_VIEW_FILES` files or
:data:`MAX_VIEW_BYTES` bytes. :attr:`CommitView.left_out` and :attr:`CommitView.stopped` say what the view
lacks, so a caller can tell the reader.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Final

import pygit2

from codeflux.domain.errors import GitOperationFailedError
from codeflux.gitwork.base_scratch import make_folders
from codeflux.gitwork.checkout import map_git_errors, opened_checkout

__all__ = [
    "MAX_LISTED",
    "MAX_VIEW_BYTES",
    "MAX_VIEW_FILES",
    "MAX_VIEW_FILE_BYTES",
    "CommitView",
    "EntryKind",
    "TrackedEntry",
    "write_commit_view",
]

MAX_LISTED: Final = 50_000
MAX_VIEW_FILES: Final = 20_000
MAX_VIEW_BYTES: Final = 128 * 1024 * 1024
MAX_VIEW_FILE_BYTES: Final = 4 * 1024 * 1024
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_KEPT_LEFT_OUT: Final = 50


class EntryKind(StrEnum):
    FILE = "file"
    EXECUTABLE = "executable"
    LINK = "link"
    SUBMODULE = "submodule"


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedEntry:
    """One tracked path of the commit: its kind and its size in bytes (0 for a submodule)."""

    path: str
    kind: EntryKind
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitView:
    """What :func:`write_commit_view` wrote and listed.

    ``entries`` are the tracked paths, sorted (at most :data:`MAX_LISTED`; ``listed_all`` False past it);
    ``files``/``bytes`` count the regular files listed; ``written`` how many files are in ``root``;
    ``left_out`` names (some of) the files not written and ``stopped`` says why writing stopped early.
    """

    commit: str
    root: Path
    entries: tuple[TrackedEntry, ...]
    listed_all: bool
    files: int
    bytes: int
    written: int
    left_out: tuple[str, ...] = ()
    stopped: str | None = None

    def has_file(self, path: str) -> bool:
        return any(entry.path == path and entry.kind in (EntryKind.FILE, EntryKind.EXECUTABLE)
                   for entry in self.entries)


def _safe_name(name: str | None) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in (name or "") and "\x00" not in (name or "") \
        and (name or "").rstrip(". ").lower() != ".git"


def _listing(repository: pygit2.Repository, tree: pygit2.Tree) -> tuple[list[tuple[TrackedEntry, pygit2.Oid]], bool]:
    found: list[tuple[TrackedEntry, pygit2.Oid]] = []
    stack: list[tuple[PurePosixPath, pygit2.Tree]] = [(PurePosixPath(), tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            if not _safe_name(entry.name):
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
            if len(found) >= MAX_LISTED:
                return found, False
    return found, True


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.written = 0
        self.bytes = 0
        self.left_out: list[str] = []
        self.stopped: str | None = None

    def _leave_out(self, path: str) -> None:
        if len(self.left_out) < _KEPT_LEFT_OUT:
            self.left_out.append(path)

    def folder(self, relative: PurePosixPath) -> Path:
        return make_folders(self.root, relative, mode=0o700)

    def file(self, entry: TrackedEntry, data: bytes) -> None:
        if entry.size > MAX_VIEW_FILE_BYTES:
            self._leave_out(entry.path)
            return
        if self.stopped is None and (self.written >= MAX_VIEW_FILES or self.bytes + entry.size > MAX_VIEW_BYTES):
            self.stopped = (f"the view holds the first {self.written:,} files ({self.bytes:,} bytes); the bound is "
                            f"{MAX_VIEW_FILES:,} files or {MAX_VIEW_BYTES // (1024 * 1024)} MiB")
        if self.stopped is not None:
            self._leave_out(entry.path)
            return
        relative = PurePosixPath(entry.path)
        target = self.folder(relative.parent) / relative.name
        with os.fdopen(os.open(target, _CREATE, 0o700 if entry.kind is EntryKind.EXECUTABLE else 0o600), "wb") as out:
            out.write(data)
        self.written += 1
        self.bytes += len(data)


def write_commit_view(repository_root: Path, target: Path, *, commit: str | None = None) -> CommitView:
    """Write ``commit`` (default: the checkout's HEAD) of the repository at ``repository_root`` into the empty
    directory ``target`` (see the module docstring). Raises :class:`GitOperationFailedError` when the commit
    cannot be read, :class:`OSError` when the disk refuses a write."""
    if any(target.iterdir()):
        raise OSError(f"{target} is not empty")
    with opened_checkout(repository_root) as (repository, _), map_git_errors("read the base tree"):
        found = repository.head.peel(pygit2.Commit) if commit is None else repository.get(commit)
        if not isinstance(found, pygit2.Commit):
            raise GitOperationFailedError(operation="read the base tree", problem="not-found",
                                          detail="the base revision is not a commit")
        listed, listed_all = _listing(repository, found.tree)
        listed.sort(key=lambda pair: pair[0].path)
        writer = _Writer(target)
        links: list[tuple[TrackedEntry, bytes]] = []
        for entry, oid in listed:
            if entry.kind is EntryKind.SUBMODULE:
                continue
            blob = repository[oid]
            data = blob.data if isinstance(blob, pygit2.Blob) and entry.size <= MAX_VIEW_FILE_BYTES else b""
            if entry.kind is EntryKind.LINK:
                links.append((entry, data))
            else:
                writer.file(entry, data)
        for entry, destination in links:  # last: no file was written through a link
            relative = PurePosixPath(entry.path)
            os.symlink(os.fsdecode(destination), writer.folder(relative.parent) / relative.name)
        regular = [entry for entry, _ in listed if entry.kind in (EntryKind.FILE, EntryKind.EXECUTABLE)]
        return CommitView(commit=str(found.id), root=target, entries=tuple(entry for entry, _ in listed),
                          listed_all=listed_all, files=len(regular), bytes=sum(entry.size for entry in regular),
                          written=writer.written, left_out=tuple(writer.left_out), stopped=writer.stopped)
