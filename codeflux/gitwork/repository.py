"""Opening a user's repository: read-only discovery, and the dirty-tree hash an acknowledgement binds to.

:func:`open_repository` reads and never writes: not the index (status is computed without refreshing
it), not a ref, not a file, and it runs no repository program (libgit2 has no hooks, fsmonitor or filter
drivers). A task may only start from a repository with a commit; when the tree has uncommitted changes
the user must acknowledge exactly the listed changes, bound by :func:`dirty_tree_hash`, and
:func:`acknowledge_dirty_tree` says whether that acknowledgement still holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileStatus, SortMode

from codeflux.domain.errors import RepositoryNotUsableError
from codeflux.domain.working_tree import ChangeStatus
from codeflux.gitwork.checkout import GitOperation, in_progress_operations, map_git_errors, opened_checkout

__all__ = [
    "ChangeStatus",
    "RepositorySnapshot",
    "WorkingTreeChange",
    "acknowledge_dirty_tree",
    "checkout_commits",
    "dirty_tree_hash",
    "open_repository",
    "repository_identity",
]

DIRTY_TREE_SCHEMA = "codeflux-dirty-tree-v1"
REPOSITORY_IDENTITY_SCHEMA = "codeflux-repository-v1"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkingTreeChange:
    """One uncommitted change: the path (relative, '/'-separated), its status and its content hash.

    ``content_sha256`` is the sha256 of the working-tree file's bytes (of the link target for a
    symbolic link); ``None`` when there is no content to hash: a deletion, a nested repository or
    submodule directory, or a special file.
    """

    path: str
    status: ChangeStatus
    content_sha256: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositorySnapshot:
    """What opening a repository found. ``changes`` is sorted by path; ``branch`` is None when detached."""

    root: Path
    git_dir: Path
    head: str
    branch: str | None
    identity: str
    root_commits: tuple[str, ...]
    operations: tuple[GitOperation, ...]
    changes: tuple[WorkingTreeChange, ...]

    @property
    def is_detached(self) -> bool:
        return self.branch is None

    @property
    def is_dirty(self) -> bool:
        return bool(self.changes)

    @property
    def dirty_hash(self) -> str:
        """:func:`dirty_tree_hash` of :attr:`changes`: what an acknowledgement of this tree binds to."""
        return dirty_tree_hash(self.changes)


def open_repository(path: Path) -> RepositorySnapshot:
    """Discover the repository holding ``path`` and describe it; read-only.

    ``path`` may be the top level of a working tree or anywhere inside it; the snapshot names the top
    level. Raises :class:`RepositoryNotUsableError` when it is missing, not a directory, in no
    repository, in a bare one, or when HEAD has no commit yet (``problem`` says which).
    """
    with opened_checkout(path) as (repository, root), map_git_errors("read the repository"):
        head = repository.head.peel(pygit2.Commit)
        branch = None if repository.head_is_detached else repository.head.shorthand
        roots = _root_commits(repository, head.id)
        status = repository.status(untracked_files="all", ignored=False)
        changes = tuple(
            WorkingTreeChange(path=p, status=_change_status(FileStatus(flags)), content_sha256=_content_sha256(root, p))
            for p, flags in sorted(status.items())
        )
        return RepositorySnapshot(
            root=root,
            git_dir=Path(repository.path).resolve(),
            head=str(head.id),
            branch=branch,
            identity=repository_identity(root=root, root_commits=roots),
            root_commits=roots,
            operations=in_progress_operations(repository),
            changes=changes,
        )


def checkout_commits(path: Path) -> tuple[str, tuple[str, ...]]:
    """HEAD's commit of the checkout holding ``path`` and the root commits reachable from it (sorted): the two facts
    memory binds an entry to, without the status walk :func:`open_repository` does. Raises as it does."""
    with opened_checkout(path) as (repository, _), map_git_errors("read the repository"):
        head = repository.head.peel(pygit2.Commit)
        return str(head.id), _root_commits(repository, head.id)


def repository_identity(*, root: Path, root_commits: Iterable[str]) -> str:
    """sha256 (hex) of the canonical JSON ``{"path": root, "roots": [sorted root commit ids], "schema": …}``.

    Stable while the repository stays where it is and its history keeps the same first commits; it
    changes when the checkout moves or HEAD's history is replaced by an unrelated one.
    """
    document = {"path": str(root), "roots": sorted(root_commits), "schema": REPOSITORY_IDENTITY_SCHEMA}
    return _sha256_of_json(document)


def dirty_tree_hash(changes: Iterable[WorkingTreeChange]) -> str:
    """sha256 (hex) of the canonical list of ``changes``: independent of the order they are given in.

    The hashed bytes are the compact, ASCII-only JSON of
    ``{"changes": [[path, status, content_sha256 or null], …] sorted, "schema": "codeflux-dirty-tree-v1"}``.
    A clean tree has a hash too (of the empty list).
    """
    rows = sorted((c.path, str(c.status), c.content_sha256 or "") for c in changes)
    listed = [[path, status, digest or None] for path, status, digest in rows]
    return _sha256_of_json({"changes": listed, "schema": DIRTY_TREE_SCHEMA})


def acknowledge_dirty_tree(snapshot_hash: str, current: RepositorySnapshot) -> bool:
    """True when the acknowledged ``snapshot_hash`` still describes ``current``'s uncommitted changes.

    Any change since (a file edited again, added, removed, staged differently enough to change its
    status) makes the acknowledgement void; the user must look at the new list.
    """
    return snapshot_hash == current.dirty_hash


def _sha256_of_json(document: object) -> str:
    encoded = json.dumps(document, ensure_ascii=True, separators=(",", ":"), sort_keys=True).encode("ascii")
    return hashlib.sha256(encoded).hexdigest()


def _root_commits(repository: pygit2.Repository, head: pygit2.Oid) -> tuple[str, ...]:
    """Every parentless commit reachable from HEAD (usually one), sorted."""
    roots = {str(commit.id) for commit in repository.walk(head, SortMode.NONE) if not commit.parent_ids}
    return tuple(sorted(roots))


_TYPE_CHANGES = FileStatus.INDEX_TYPECHANGE | FileStatus.WT_TYPECHANGE


def _change_status(flags: FileStatus) -> ChangeStatus:
    if flags & FileStatus.CONFLICTED:
        return ChangeStatus.CONFLICTED
    if flags & FileStatus.WT_DELETED or (flags & FileStatus.INDEX_DELETED and not flags & FileStatus.WT_NEW):
        return ChangeStatus.DELETED
    if flags & FileStatus.INDEX_NEW:
        return ChangeStatus.ADDED
    if flags & FileStatus.WT_NEW:
        return ChangeStatus.UNTRACKED
    if flags & _TYPE_CHANGES:
        return ChangeStatus.TYPE_CHANGED
    return ChangeStatus.MODIFIED


def _content_sha256(root: Path, path: str) -> str | None:
    """sha256 of the file's bytes (a link's target), or None: deleted, a directory or a special file."""
    if path.endswith("/"):
        return None
    full = root / path
    try:
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            return hashlib.sha256(os.fsencode(os.readlink(full))).hexdigest()
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = hashlib.sha256()
        with full.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RepositoryNotUsableError(
            path=str(root), problem="unreadable", detail=f"the changed file {path} cannot be read"
        ) from error
