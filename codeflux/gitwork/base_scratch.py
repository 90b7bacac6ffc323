"""The base revision with the attempt's test files, written into a scratch directory the caller owns.

The pipeline runs the tests once more on the code the task started from, with the test files as the
attempt left them: a test that fails there as well was not broken by this change (it is listed, never sent
back), and an acceptance example that already holds there does not show that the change was needed.

The scratch lives under ``root``, an absolute directory of the caller's — the pipeline passes the task's
TMPDIR (its worker's per-task temporary directory, writable in the box), never the worktree, so nothing of it
can reach the diff. ``root`` is created when missing (``0700``, as the worker's launch makes it); a ``root``
that is a symbolic link or no directory is refused.

:func:`write_base_scratch` writes the base commit's tree into ``<root>/<directory>`` (a fresh directory,
removed first) and then lays the overlay over it: each named file's content as it is in the worktree now, or
its removal when the attempt deleted it. It writes through the one tree walker
(:mod:`codeflux.gitwork.tree_files`) and never follows a symbolic link: directories are created by it,
files are opened ``O_NOFOLLOW | O_EXCL``, a symbolic link of the tree is written as a link (after every
file and the overlay, so no write can pass through it), and overlay files are read only when they are regular
files plainly inside the worktree. Submodules are left out, and so is a tree entry whose name could leave the
scratch. The scratch is bounded (:data:`MAX_SCRATCH_FILES`, :data:`MAX_SCRATCH_BYTES`); past a bound, or when
the disk refuses a write, the scratch is removed and the refusal says why — the caller then reports the base
run as not measured.

:func:`remove_base_scratch` removes it again, and the folders above it (below ``root``) that it leaves empty.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

import pygit2

from codeflux.domain.errors import CodefluxError
from codeflux.gitwork.checkout import map_git_errors
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree
from codeflux.gitwork.tree_files import TrackedEntry, TreeWriter, tracked_entries, write_entries

__all__ = [
    "MAX_SCRATCH_BYTES",
    "MAX_SCRATCH_FILES",
    "BaseScratch",
    "remove_base_scratch",
    "write_base_scratch",
]

MAX_SCRATCH_FILES: Final = 50_000
MAX_SCRATCH_BYTES: Final = 512 * 1024 * 1024
_MAX_LISTED: Final = 2 * MAX_SCRATCH_FILES  # files, links and submodules of the base tree


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseScratch:
    """What was written: the scratch's absolute path, or why there is none (``refusal``)."""

    path: Path | None
    files: int = 0
    overlaid: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    refusal: str | None = None


class _TooLarge(Exception):
    pass


def _safe_relative(path: str) -> PurePosixPath | None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("", ".", "..", ".git") for part in pure.parts):
        return None
    return pure


def _read_worktree_file(worktree: Path, relative: PurePosixPath) -> bytes | None:
    """The content of a regular file plainly inside the worktree; None for anything else."""
    current = worktree
    for part in relative.parts[:-1]:
        current = current / part
        if current.is_symlink() or not current.is_dir():
            return None
    try:
        descriptor = os.open(current / relative.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_SCRATCH_BYTES + 1)


class _ScratchWriter(TreeWriter):
    """Counts every file written (the base tree's and the overlay's); past a bound the whole copy is refused."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, private=False)

    def admit(self, entry: TrackedEntry) -> bool:
        if self.written + 1 > MAX_SCRATCH_FILES or self.bytes + entry.size > MAX_SCRATCH_BYTES:
            raise _TooLarge
        return True

    def overlay(self, relative: PurePosixPath, content: bytes, *, executable: bool) -> None:
        if self.written + 1 > MAX_SCRATCH_FILES or self.bytes + len(content) > MAX_SCRATCH_BYTES:
            raise _TooLarge
        self.remove(relative)
        self.file(relative, content, executable=executable)


def _usable_root(root: Path) -> Path | None:
    """``root`` once it is a directory (missing folders made ``0700``); None when it is relative, a symbolic
    link or something else than a directory."""
    if not root.is_absolute():
        return None
    missing: list[Path] = []
    current = root
    while not current.exists() and not current.is_symlink() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    if root.is_symlink() or not root.is_dir():
        return None
    return root


def remove_base_scratch(root: Path, directory: str) -> None:
    """Remove ``<root>/<directory>`` if it is there, and the folders above it (below ``root``) that it leaves
    empty; nothing is ever removed through a symbolic link."""
    relative = _safe_relative(directory)
    if relative is None or not root.is_absolute() or root.is_symlink() or not root.is_dir():
        return
    parent = root
    for part in relative.parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or not parent.is_dir():
            return  # never through a link a confined command planted there
    target = parent / relative.name
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    while parent != root:  # folders made only to hold it go too (a folder with content stays)
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def write_base_scratch(worktree: TaskWorktree, *, root: Path, directory: str, overlay: Iterable[str]) -> BaseScratch:
    """Write the base tree into ``<root>/<directory>`` (``root`` absolute, the caller's; ``directory`` a plain
    relative path) and lay the overlay over it (see the module docstring). ``overlay`` names worktree-relative
    files: present in the worktree → copied over the base version; absent → the base version is removed."""
    relative = _safe_relative(directory)
    if relative is None:
        return BaseScratch(path=None, refusal=f"the scratch directory {directory!r} is not a plain relative path")
    if _usable_root(root) is None:
        return BaseScratch(path=None, refusal="the scratch root is not a directory of its own (a link, a file, "
                                              "or it could not be made)")
    remove_base_scratch(root, directory)
    writer = _ScratchWriter(root / relative)
    overlaid: list[str] = []
    removed: list[str] = []
    try:
        TreeWriter(root, private=False).folder(relative)
        with opened_task_worktree(worktree) as repository, map_git_errors("read the base tree"):
            commit = repository[worktree.base]
            if not isinstance(commit, pygit2.Commit):
                return BaseScratch(path=None, refusal="the base revision is not a commit")
            entries, complete = tracked_entries(repository, commit.tree, limit=_MAX_LISTED)
            if not complete:
                raise _TooLarge
            write_entries(repository, entries, writer)
        for name in sorted(set(overlay)):
            path = _safe_relative(name)
            if path is None:
                continue
            content = _read_worktree_file(worktree.path, path)
            if content is None:
                if writer.remove(path):
                    removed.append(name)
                continue
            writer.overlay(path, content, executable=os.access(worktree.path / path, os.X_OK))
            overlaid.append(name)
        writer.write_links()
    except _TooLarge:
        remove_base_scratch(root, directory)
        bound = f"{MAX_SCRATCH_FILES} files, {MAX_SCRATCH_BYTES // (1024 * 1024)} MiB"
        return BaseScratch(path=None, refusal=f"the base revision is larger than the scratch bound ({bound})")
    except (OSError, CodefluxError) as error:
        remove_base_scratch(root, directory)
        return BaseScratch(path=None, refusal=f"the base revision could not be written ({type(error).__name__})")
    return BaseScratch(path=writer.root, files=writer.written, overlaid=tuple(overlaid), removed=tuple(removed))
