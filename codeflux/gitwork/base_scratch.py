"""The base revision with the attempt's test files, written into a scratch directory of the task worktree.

The pipeline runs the tests once more on the code the task started from, with the test files as the
attempt left them: a test that fails there as well was not broken by this change (it is listed, never sent
back), and an acceptance example that already holds there does not show that the change was needed.

:func:`write_base_scratch` writes the base commit's tree into ``<worktree>/<directory>`` (a fresh
directory, removed first) and then lays the overlay over it: each named file's content as it is in the
worktree now, or its removal when the attempt deleted it. It never follows a symbolic link: directories are
created by this function, files are opened ``O_NOFOLLOW | O_EXCL``, a symbolic link of the tree is written
as a link (after every file, so no write can pass through it), and overlay files are read only when they are
regular files plainly inside the worktree. Submodules are left out. The scratch is bounded
(:data:`MAX_SCRATCH_FILES`, :data:`MAX_SCRATCH_BYTES`); past a bound, or when the disk refuses a write, the
scratch is removed and the refusal says why — the caller then reports the base run as not measured.

:func:`remove_base_scratch` removes it again (the diff never sees it: it is removed before the diff
identity is taken again, and the next validation removes a scratch a crash left behind).
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

__all__ = [
    "MAX_SCRATCH_BYTES",
    "MAX_SCRATCH_FILES",
    "BaseScratch",
    "make_folders",
    "remove_base_scratch",
    "write_base_scratch",
]

MAX_SCRATCH_FILES: Final = 50_000
MAX_SCRATCH_BYTES: Final = 512 * 1024 * 1024
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


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


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = 0
        self.bytes = 0
        self.links: list[tuple[Path, bytes]] = []

    def directory(self, relative: PurePosixPath) -> Path:
        return make_folders(self.root, relative, mode=0o755)

    def file(self, relative: PurePosixPath, content: bytes, *, executable: bool) -> None:
        self.files += 1
        self.bytes += len(content)
        if self.files > MAX_SCRATCH_FILES or self.bytes > MAX_SCRATCH_BYTES:
            raise _TooLarge
        target = self.directory(relative.parent) / relative.name
        with os.fdopen(os.open(target, _CREATE, 0o755 if executable else 0o644), "wb") as handle:
            handle.write(content)

    def remove(self, relative: PurePosixPath) -> bool:
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


def _write_tree(repository: pygit2.Repository, tree: pygit2.Tree, prefix: PurePosixPath, writer: _Writer) -> None:
    for entry in tree:
        if entry.name is None:
            continue
        relative = prefix / entry.name
        if entry.filemode == pygit2.enums.FileMode.TREE:
            writer.directory(relative)
            subtree = repository[entry.id]
            if isinstance(subtree, pygit2.Tree):
                _write_tree(repository, subtree, relative, writer)
        elif entry.filemode == pygit2.enums.FileMode.LINK:
            blob = repository[entry.id]
            if isinstance(blob, pygit2.Blob):
                writer.links.append((writer.root / relative, blob.data))
        elif entry.filemode in (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE):
            blob = repository[entry.id]
            if isinstance(blob, pygit2.Blob):
                writer.file(relative, blob.data, executable=entry.filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE)
        # a submodule (a commit entry) has no content here: left out


def remove_base_scratch(worktree: TaskWorktree, directory: str) -> None:
    """Remove the scratch directory if it is there, and the folders above it that it leaves empty."""
    relative = _safe_relative(directory)
    if relative is None:
        return
    parent = worktree.path
    for part in relative.parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or not parent.is_dir():
            return  # never through a link the worktree's content planted
    target = parent / relative.name
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    while parent != worktree.path:  # folders made only to hold it go too (a folder with content stays)
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def write_base_scratch(worktree: TaskWorktree, *, directory: str, overlay: Iterable[str]) -> BaseScratch:
    """Write the base tree into ``directory`` (worktree-relative) and lay the overlay over it (see the module
    docstring). ``overlay`` names worktree-relative files: present in the worktree → copied over the base
    version; absent → the base version is removed."""
    relative = _safe_relative(directory)
    if relative is None:
        return BaseScratch(path=None, refusal=f"the scratch directory {directory!r} is not a plain relative path")
    remove_base_scratch(worktree, directory)
    writer = _Writer(worktree.path / relative)
    overlaid: list[str] = []
    removed: list[str] = []
    try:
        for part in range(1, len(relative.parts) + 1):
            _Writer(worktree.path).directory(PurePosixPath(*relative.parts[:part]))
        with opened_task_worktree(worktree) as repository, map_git_errors("read the base tree"):
            commit = repository[worktree.base]
            if not isinstance(commit, pygit2.Commit):
                return BaseScratch(path=None, refusal="the base revision is not a commit")
            _write_tree(repository, commit.tree, PurePosixPath(), writer)
        for name in sorted(set(overlay)):
            path = _safe_relative(name)
            if path is None:
                continue
            content = _read_worktree_file(worktree.path, path)
            if content is None:
                if writer.remove(path):
                    removed.append(name)
                continue
            writer.remove(path)
            writer.file(path, content, executable=os.access(worktree.path / path, os.X_OK))
            overlaid.append(name)
        for link, target in writer.links:
            if not link.exists() and not link.is_symlink():
                os.symlink(os.fsdecode(target), link)
    except _TooLarge:
        remove_base_scratch(worktree, directory)
        bound = f"{MAX_SCRATCH_FILES} files, {MAX_SCRATCH_BYTES // (1024 * 1024)} MiB"
        return BaseScratch(path=None, refusal=f"the base revision is larger than the scratch bound ({bound})")
    except (OSError, CodefluxError) as error:
        remove_base_scratch(worktree, directory)
        return BaseScratch(path=None, refusal=f"the base revision could not be written ({type(error).__name__})")
    return BaseScratch(path=writer.root, files=writer.files, overlaid=tuple(overlaid), removed=tuple(removed))
