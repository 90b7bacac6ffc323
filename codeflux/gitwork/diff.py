"""A task's diff against its base, the diff identity review and accept bind to, and checkpoint commits.

:func:`diff_against_base` verifies the worktree, captures its working tree (committed, uncommitted and
untracked-not-ignored files; see :mod:`codeflux.gitwork.working_tree`) and renders a git-style unified
diff from the base commit's tree to it. The bytes are deterministic for the same base and content:
libgit2 orders files by path, uses three lines of context and no rename detection, and binary files
carry a full ``GIT binary patch`` (so the patch applies with ``git apply``) and ``binary=True``. The
``index`` lines abbreviate blob ids as the repository's ``core.abbrev`` says, so the same content can
render differently under another configuration — identities are compared within one repository.

:func:`diff_identity` is what an approval of the diff binds to; its exact byte layout is documented
there. :func:`commit_worktree_changes` turns the current worktree content into a commit on the task
branch (a checkpoint) through libgit2: no hooks, no signing, no editor.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, DiffOption

from codeflux.domain.errors import InvalidValueError, NotFoundError
from codeflux.gitwork.checkout import map_git_errors, opened_checkout
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree, parse_commit_id
from codeflux.gitwork.working_tree import WorkingTreeCapture, capture_working_tree

__all__ = [
    "DIFF_IDENTITY_SCHEMA",
    "CommitAuthor",
    "FileChangeKind",
    "FileDiff",
    "TaskDiff",
    "commit_worktree_changes",
    "committed_diff",
    "diff_against_base",
    "diff_identity",
    "patch_files",
    "render_task_diff",
    "reset_index_to_tree",
]

DIFF_IDENTITY_SCHEMA = b"codeflux-diff-identity-v1"
_UNSAFE_IN_SIGNATURE = re.compile(r"[<>\x00-\x1f\x7f]")


class FileChangeKind(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    TYPE_CHANGED = "type-changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class FileDiff:
    """One file in a task diff: its path, what happened to it, and line counts (0 for binary files)."""

    path: str
    kind: FileChangeKind
    binary: bool
    additions: int
    deletions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskDiff:
    """The diff of a worktree against its base. ``head`` is the task branch commit it was taken at.

    ``unified_diff`` is the exact bytes (file contents are not necessarily UTF-8); ``skipped_paths``
    lists what could not be part of a diff (nested repositories, special files) so a reviewer sees it.
    """

    base: str
    head: str
    unified_diff: bytes
    files: tuple[FileDiff, ...]
    skipped_paths: tuple[str, ...]
    identity: str

    @property
    def is_empty(self) -> bool:
        return not self.unified_diff

    @property
    def text(self) -> str:
        """The diff for display; bytes that are not UTF-8 show as U+FFFD (the identity uses the bytes)."""
        return self.unified_diff.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitAuthor:
    """Who a commit names as author and committer; ``time`` (Unix seconds) None means now."""

    name: str
    email: str
    time: int | None = None
    offset_minutes: int = 0

    def __post_init__(self) -> None:
        for field, value in (("name", self.name), ("email", self.email)):
            if not value.strip() or _UNSAFE_IN_SIGNATURE.search(value):
                raise InvalidValueError(kind=f"commit author {field}", reason="empty, or holds '<', '>' or a control")

    def signature(self) -> pygit2.Signature:
        if self.time is None:
            return pygit2.Signature(self.name, self.email)
        return pygit2.Signature(self.name, self.email, self.time, self.offset_minutes)


def diff_identity(base: str, head: str, unified_diff: bytes) -> str:
    """sha256 (lowercase hex) over the base commit, the head commit and the diff bytes.

    The hashed bytes are exactly::

        b"codeflux-diff-identity-v1\\n"
        b"base " + base + b"\\n"            # 40 or 64 lowercase hex digits, ASCII
        b"head " + head + b"\\n"            # same
        b"diff " + str(len(unified_diff)) + b"\\n"   # the byte length, decimal ASCII
        + unified_diff                     # the diff bytes, unchanged

    Fixed-width ids and a length prefix make the layout unambiguous: two different (base, head, diff)
    triples never hash the same bytes. A malformed id raises :class:`InvalidValueError`.
    """
    parse_commit_id(base, kind="base commit id")
    parse_commit_id(head, kind="head commit id")
    if not isinstance(unified_diff, bytes):
        raise InvalidValueError(kind="unified diff", reason="must be bytes")
    digest = hashlib.sha256()
    digest.update(DIFF_IDENTITY_SCHEMA + b"\n")
    digest.update(b"base " + base.encode("ascii") + b"\n")
    digest.update(b"head " + head.encode("ascii") + b"\n")
    digest.update(b"diff " + str(len(unified_diff)).encode("ascii") + b"\n")
    digest.update(unified_diff)
    return digest.hexdigest()


def diff_against_base(worktree: TaskWorktree) -> TaskDiff:
    """Verify ``worktree`` and diff its current content (untracked files included) against its base."""
    with opened_task_worktree(worktree) as repository:
        capture = capture_working_tree(repository)
        return render_task_diff(repository, base=worktree.base, capture=capture)


def render_task_diff(repository: pygit2.Repository, *, base: str, capture: WorkingTreeCapture) -> TaskDiff:
    """The diff from ``base``'s tree to a captured working tree (see the module docstring for the format)."""
    with map_git_errors("diff the worktree against its base"):
        base_tree = repository[pygit2.Oid(hex=base)].peel(pygit2.Tree)
        tree = repository[pygit2.Oid(hex=capture.tree)].peel(pygit2.Tree)
        unified, files = _tree_diff(base_tree, tree)
    return TaskDiff(
        base=base,
        head=capture.head,
        unified_diff=unified,
        files=files,
        skipped_paths=capture.skipped_paths,
        identity=diff_identity(base, capture.head, unified),
    )


def committed_diff(repository_root: Path, *, base: str, commit: str) -> TaskDiff:
    """The diff from ``base``'s tree to ``commit``'s tree in the checkout at ``repository_root``, rendered as
    :func:`render_task_diff` renders a worktree's (an accepted task's change once its worktree is gone: its base
    to the task commit it landed). A commit the repository no longer has is :class:`NotFoundError`."""
    parse_commit_id(base, kind="base commit id")
    parse_commit_id(commit, kind="commit id")
    with opened_checkout(repository_root) as (repository, _top), map_git_errors("diff a landed task commit"):
        for wanted in (base, commit):
            if pygit2.Oid(hex=wanted) not in repository:
                raise NotFoundError(kind="commit in the task's repository", entity_id=wanted)
        base_tree = repository[pygit2.Oid(hex=base)].peel(pygit2.Tree)
        tree = repository[pygit2.Oid(hex=commit)].peel(pygit2.Tree)
        unified, files = _tree_diff(base_tree, tree)
    return TaskDiff(base=base, head=commit, unified_diff=unified, files=files, skipped_paths=(),
                    identity=diff_identity(base, commit, unified))


def _tree_diff(base_tree: pygit2.Tree, tree: pygit2.Tree) -> tuple[bytes, tuple[FileDiff, ...]]:
    patches = [patch for patch in base_tree.diff_to_tree(tree, DiffOption.SHOW_BINARY) if patch is not None]
    return b"".join(patch.data for patch in patches), tuple(_file_diff(patch) for patch in patches)


def patch_files(patch: bytes) -> tuple[FileDiff, ...]:
    """The files of a stored patch (bytes this module rendered), as :class:`FileDiff` values."""
    if not patch:
        return ()
    with map_git_errors("read a stored patch"):
        return tuple(_file_diff(item) for item in pygit2.Diff.parse_diff(patch) if item is not None)


_KIND_BY_STATUS = {
    DeltaStatus.ADDED: FileChangeKind.ADDED,
    DeltaStatus.DELETED: FileChangeKind.DELETED,
    DeltaStatus.TYPECHANGE: FileChangeKind.TYPE_CHANGED,
}


def _file_diff(patch: pygit2.Patch) -> FileDiff:
    delta = patch.delta
    kind = _KIND_BY_STATUS.get(delta.status, FileChangeKind.MODIFIED)
    path = delta.old_file.path if kind is FileChangeKind.DELETED else delta.new_file.path
    _, additions, deletions = patch.line_stats
    return FileDiff(path=path, kind=kind, binary=bool(delta.is_binary), additions=additions, deletions=deletions)


def commit_worktree_changes(worktree: TaskWorktree, message: str, *, author: CommitAuthor) -> str | None:
    """Commit everything the worktree holds beyond its HEAD onto the task branch; return the new commit id.

    Untracked, not-ignored files are included. Returns None (and changes nothing) when the worktree has
    nothing uncommitted. The branch moves only if it still points at the HEAD that was captured, and the
    worktree's index is reset to the new commit so ``git status`` there reads clean. No hook runs.
    """
    if not message.strip():
        raise InvalidValueError(kind="commit message", reason="must not be empty")
    with opened_task_worktree(worktree) as repository:
        capture = capture_working_tree(repository)
        if not capture.has_uncommitted_changes:
            return None
        signature = author.signature()
        with map_git_errors("commit the worktree changes"):
            commit = repository.create_commit(
                worktree.branch_ref,
                signature,
                signature,
                message if message.endswith("\n") else message + "\n",
                pygit2.Oid(hex=capture.tree),
                [pygit2.Oid(hex=capture.head)],
            )
            reset_index_to_tree(repository, capture.tree)
        return str(commit)


def reset_index_to_tree(repository: pygit2.Repository, tree: str) -> None:
    """Make ``repository``'s index hold exactly ``tree`` (the files already match it)."""
    with map_git_errors("update the worktree index"):
        index = repository.index
        index.read_tree(repository[pygit2.Oid(hex=tree)].peel(pygit2.Tree))
        index.write()
