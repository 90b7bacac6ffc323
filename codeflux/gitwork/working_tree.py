"""The state of a working tree, captured as a git tree object without touching the index or any ref.

A task's diff, checkpoint commits and accept all need "what the worktree holds right now" — tracked
changes, staged or not, *and* untracked files that are not ignored. :func:`capture_working_tree` builds
that in a scratch in-memory index seeded from HEAD's tree: every path git reports as changed is taken
from the working tree (removed when it is gone), blobs go through libgit2's built-in filters only (line
endings, ``ident``; never a configured filter program), and the tree is written to the object database.
The real index, the refs and the files are left exactly as they were.

Not captured (listed in ``skipped_paths``): nested repositories (libgit2 reports them as one
``dir/`` entry and does not descend), submodule checkouts, and special files such as FIFOs or sockets.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from codeflux.gitwork.checkout import map_git_errors

__all__ = ["WorkingTreeCapture", "capture_working_tree"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkingTreeCapture:
    """``tree`` holds the working tree's content; ``head`` is the commit HEAD named when it was taken."""

    head: str
    head_tree: str
    tree: str
    skipped_paths: tuple[str, ...]

    @property
    def has_uncommitted_changes(self) -> bool:
        """True when the working tree differs from HEAD's tree (untracked, not-ignored files count)."""
        return self.tree != self.head_tree


def capture_working_tree(repository: pygit2.Repository) -> WorkingTreeCapture:
    """The working tree of ``repository`` as a tree object (see the module docstring for what counts)."""
    with map_git_errors("capture the working tree"):
        head = repository.head.peel(pygit2.Commit)
        scratch = pygit2.Index()
        scratch.read_tree(head.tree)
        changed = sorted(repository.status(untracked_files="all", ignored=False))
        keeps_file_modes = _config_flag(repository, "core.filemode", default=True)
        workdir = Path(repository.workdir)
        additions: list[tuple[str, FileMode]] = []
        skipped: list[str] = []
        for path in changed:
            mode = _mode_in_working_tree(workdir, path, scratch, keeps_file_modes=keeps_file_modes)
            if isinstance(mode, FileMode):
                additions.append((path, mode))
            elif mode == _SKIP:
                skipped.append(path)
            elif path in scratch:
                scratch.remove(path)
        # Removals first, so a file that replaced a directory (or the reverse) never meets its old entries.
        for path, mode in additions:
            blob = repository.create_blob_fromworkdir(path)
            scratch.add(pygit2.IndexEntry(path, blob, mode))
        tree = scratch.write_tree(repository)
    return WorkingTreeCapture(
        head=str(head.id), head_tree=str(head.tree.id), tree=str(tree), skipped_paths=tuple(skipped)
    )


_SKIP = "skip"
_GONE = "gone"


def _mode_in_working_tree(
    workdir: Path, path: str, scratch: pygit2.Index, *, keeps_file_modes: bool
) -> FileMode | str:
    """The git file mode ``path`` should carry, or ``_GONE`` (delete it) or ``_SKIP`` (not capturable)."""
    if path.endswith("/"):
        return _SKIP  # a nested repository: its content is not this repository's to capture
    try:
        info = (workdir / path).lstat()
    except FileNotFoundError:
        return _GONE
    tracked = scratch[path].mode if path in scratch else None
    if stat.S_ISLNK(info.st_mode):
        return FileMode.LINK
    if stat.S_ISREG(info.st_mode):
        if not keeps_file_modes and tracked in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
            return FileMode(tracked)
        return FileMode.BLOB_EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.BLOB
    if stat.S_ISDIR(info.st_mode) and tracked is not None and tracked != FileMode.COMMIT:
        return _GONE  # a tracked file became a directory; its files are reported on their own
    return _SKIP


def _config_flag(repository: pygit2.Repository, name: str, *, default: bool) -> bool:
    config = repository.config
    if name not in config:
        return default
    return config.get_bool(name)
