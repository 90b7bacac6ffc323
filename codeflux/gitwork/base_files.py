"""Files as they are at a task's base revision (what phase B compares the worktree's files with)."""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from codeflux.gitwork.checkout import map_git_errors
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree

__all__ = ["base_file_contents"]


def base_file_contents(worktree: TaskWorktree, paths: Iterable[str], *, max_bytes: int) -> dict[str, bytes | None]:
    """Each repository-relative path's bytes at the worktree's base commit; None when the base has no regular
    file there (added by the diff, a link, a submodule) or it is larger than ``max_bytes``."""
    found: dict[str, bytes | None] = {}
    with opened_task_worktree(worktree) as repository, map_git_errors("read the base revision's files"):
        commit = repository[worktree.base]
        tree = commit.tree if isinstance(commit, pygit2.Commit) else None
        for path in paths:
            found[path] = None
            if tree is None:
                continue
            try:
                entry = tree[path]
            except KeyError:
                continue
            if entry.filemode not in (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE):
                continue
            blob = repository[entry.id]
            if isinstance(blob, pygit2.Blob) and blob.size <= max_bytes:
                found[path] = blob.data
    return found
