"""A commit's tracked files written into a fresh directory: what the planner reads before any worktree exists.

:func:`write_commit_view` writes the tree of one commit (the task's base revision once it has one, else the
checkout's HEAD — the commit a task worktree is created from) into an empty directory the caller owns. It is
written by the walker the pipeline's scratch copies use (:mod:`codeflux.gitwork.tree_files`): the raw blobs
from git's object store (nothing is checked out, so no filter, hook, attribute or other program of the
repository runs), folders created there, files opened ``O_EXCL | O_NOFOLLOW``, a symbolic link of the tree
written as a link after every file (so no write passes through one) — the reading tools refuse it as the
worker refuses a link in a worktree. Submodules have no content here and are left out; there is no ``.git``.
A tree entry whose name could leave the directory (``..``, a slash, ``.git`` in any case) is never written.
The view is private: folders ``0700``, files ``0600`` (``0700`` executable).

It also lists every tracked path (files, links, submodules) with its size: the repository map and the
forecast read that listing, never a walk of the working tree (so ignored and untracked files do not count).

Bounded: the listing holds at most :data:`MAX_LISTED` paths; a file over :data:`MAX_VIEW_FILE_BYTES` (the
largest file the reading tools read) is not written, and writing stops after :data:`MAX_VIEW_FILES` files or
:data:`MAX_VIEW_BYTES` bytes. :attr:`CommitView.left_out` and :attr:`CommitView.stopped` say what the view
lacks, so a caller can tell the reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pygit2

from codeflux.domain.errors import GitOperationFailedError
from codeflux.gitwork.checkout import map_git_errors, opened_checkout
from codeflux.gitwork.tree_files import EntryKind, TrackedEntry, TreeWriter, tracked_entries, write_entries

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
_KEPT_LEFT_OUT: Final = 50


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


class _ViewWriter(TreeWriter):
    """Leaves out a file over :data:`MAX_VIEW_FILE_BYTES`, and every file once the view's bound is reached."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, private=True)
        self.left_out: list[str] = []
        self.stopped: str | None = None

    def _leave_out(self, path: str) -> None:
        if len(self.left_out) < _KEPT_LEFT_OUT:
            self.left_out.append(path)

    def admit(self, entry: TrackedEntry) -> bool:
        if entry.size > MAX_VIEW_FILE_BYTES:
            self._leave_out(entry.path)
            return False
        if self.stopped is None and (self.written >= MAX_VIEW_FILES or self.bytes + entry.size > MAX_VIEW_BYTES):
            self.stopped = (f"the view holds the first {self.written:,} files ({self.bytes:,} bytes); the bound is "
                            f"{MAX_VIEW_FILES:,} files or {MAX_VIEW_BYTES // (1024 * 1024)} MiB")
        if self.stopped is not None:
            self._leave_out(entry.path)
            return False
        return True


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
        listed, listed_all = tracked_entries(repository, found.tree, limit=MAX_LISTED)
        listed.sort(key=lambda pair: pair[0].path)
        writer = _ViewWriter(target)
        write_entries(repository, listed, writer)
        writer.write_links()
        regular = [entry for entry, _ in listed if entry.kind in (EntryKind.FILE, EntryKind.EXECUTABLE)]
        return CommitView(commit=str(found.id), root=target, entries=tuple(entry for entry, _ in listed),
                          listed_all=listed_all, files=len(regular), bytes=sum(entry.size for entry in regular),
                          written=writer.written, left_out=tuple(writer.left_out), stopped=writer.stopped)
