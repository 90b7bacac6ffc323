"""Files of a checkout's repository as they are in one commit (memory judging an entry at a task's base revision).

Read from git's object store in process (pygit2): nothing is checked out and no program of the repository runs.
:func:`blob_ids_at` gives each path's blob id in the commit — what git would store for the file, so it equals the
hash of an unchanged file on disk (:func:`codeflux.memory.checkout.blob_hash_of_file`); a symbolic link's blob is its
target text, as on disk. :func:`small_files_at` gives the text of the regular files of a few folders (not
recursive) that a caller's predicate accepts — the dependency declarations at that commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pygit2

from codeflux.domain.errors import GitOperationFailedError
from codeflux.gitwork.checkout import map_git_errors, opened_checkout

__all__ = ["blob_ids_at", "small_files_at"]

_FILES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
_LINK = pygit2.enums.FileMode.LINK


def _tree_of(repository: pygit2.Repository, commit: str) -> pygit2.Tree:
    try:
        found = repository.revparse_single(commit)
        peeled = found.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as error:
        raise GitOperationFailedError(operation="read a commit's files", problem="not-found",
                                      detail=f"commit {commit[:12]} is not in the repository") from error
    return peeled.tree


def blob_ids_at(root: Path, commit: str, paths: Iterable[str]) -> dict[str, str | None]:
    """Each repository-relative path's blob id in ``commit`` (a regular file, an executable or a symbolic link);
    None when the commit has no such entry there (absent, a folder, a submodule)."""
    found: dict[str, str | None] = {}
    with opened_checkout(root) as (repository, _), map_git_errors("read a commit's files"):
        tree = _tree_of(repository, commit)
        for path in sorted(set(paths)):
            found[path] = None
            try:
                entry = tree[path]
            except (KeyError, ValueError):
                continue
            if entry.filemode in _FILES or entry.filemode == _LINK:
                found[path] = str(entry.id)
    return found


def small_files_at(root: Path, commit: str, *, folders: Sequence[str], accept: Callable[[str], bool],
                   max_bytes: int) -> dict[str, str]:
    """The text (UTF-8, undecodable bytes replaced) of each regular file directly inside ``folders`` of ``commit``
    (``""`` is the top level) whose repository-relative path ``accept`` takes and whose size is at most
    ``max_bytes`` — links are never read, as on disk."""
    texts: dict[str, str] = {}
    with opened_checkout(root) as (repository, _), map_git_errors("read a commit's files"):
        tree = _tree_of(repository, commit)
        for folder in folders:
            try:
                where = tree if not folder else repository[tree[folder].id]
            except (KeyError, ValueError):
                continue
            if not isinstance(where, pygit2.Tree):
                continue
            for entry in where:
                path = f"{folder}/{entry.name}" if folder else str(entry.name)
                if entry.filemode not in _FILES or not accept(path):
                    continue
                blob = repository[entry.id]
                if isinstance(blob, pygit2.Blob) and blob.size <= max_bytes:
                    texts[path] = blob.data.decode("utf-8", errors="replace")
    return texts
