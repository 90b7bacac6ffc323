"""Accept: land a reviewed task diff on the user's current branch. Reject: hand back the patch to keep.

:func:`accept_task_diff` lands exactly what was reviewed, or nothing:

1. the worktree is verified and its diff identity must equal the reviewed one (else
   :class:`DiffChangedError`);
2. the user's checkout must be on a branch (else :class:`DetachedHeadError`), have no operation in
   progress and no uncommitted change to a tracked file (else :class:`CheckoutNotCleanError` listing
   them); untracked files are fine unless the change would write where one lies;
3. the landing is computed in memory: a fast-forward when the branch still is (or descends to) an
   ancestor of the task commit, else a three-way merge; a conflict is returned as a value with the
   conflicting paths and *nothing* changed — no ref, no index entry, no file;
4. only then are refs and files touched: uncommitted worktree content is first committed on the task
   branch (its message carries ``Codeflux-Reviewed-Identity: <identity>`` so an interrupted accept is
   recognised on retry), then the user's working tree and index are checked out to the result
   (libgit2's safe checkout, which plans every write before making one) and the branch is moved.

Everything goes through libgit2: no hook, no signing, no editor, no external merge or diff driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2
from pygit2.enums import CheckoutStrategy, DeltaStatus, FileStatus

from codeflux.domain.errors import (
    CheckoutNotCleanError,
    DetachedHeadError,
    DiffChangedError,
    GitOperationFailedError,
    InvalidValueError,
    WorktreeNotUsableError,
)
from codeflux.gitwork.checkout import common_git_dir, in_progress_operations, map_git_errors, opened_checkout
from codeflux.gitwork.diff import (
    CommitAuthor,
    FileDiff,
    TaskDiff,
    diff_against_base,
    diff_identity,
    render_task_diff,
    reset_index_to_tree,
)
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree
from codeflux.gitwork.working_tree import WorkingTreeCapture, capture_working_tree

__all__ = [
    "REVIEWED_IDENTITY_TRAILER",
    "AcceptKind",
    "AcceptOutcome",
    "RejectedPatch",
    "accept_task_diff",
    "reject_task_diff",
]

REVIEWED_IDENTITY_TRAILER = "Codeflux-Reviewed-Identity"
FALLBACK_COMMITTER = CommitAuthor(name="codeflux", email="codeflux@localhost")
_SAFE_CHECKOUT = CheckoutStrategy.SAFE | CheckoutStrategy.DONT_OVERWRITE_IGNORED


class AcceptKind(StrEnum):
    """How an accept ended."""

    FAST_FORWARD = "fast-forward"  # the branch moved to the task commit
    MERGE_COMMIT = "merge-commit"  # the branch had moved on; a merge commit joins both
    ALREADY_PRESENT = "already-present"  # the branch already contains the task commit; nothing changed
    NOTHING_TO_LAND = "nothing-to-land"  # the reviewed diff is empty; nothing changed
    CONFLICT = "conflict"  # the merge conflicts in ``conflicting_paths``; nothing changed


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptOutcome:
    """``branch`` went from ``previous_head`` to ``landed_head`` (equal when nothing changed)."""

    kind: AcceptKind
    branch: str
    previous_head: str
    landed_head: str
    task_commit: str
    conflicting_paths: tuple[str, ...]

    @property
    def landed(self) -> bool:
        return self.kind in (AcceptKind.FAST_FORWARD, AcceptKind.MERGE_COMMIT)


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedPatch:
    """The patch a rejection keeps: the exact diff bytes and identity, for the caller to store."""

    patch: bytes
    identity: str
    base: str
    head: str
    files: tuple[FileDiff, ...]
    skipped_paths: tuple[str, ...]
    matches_review: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class _Landing:
    kind: AcceptKind
    commit: pygit2.Oid | None = None
    tree: pygit2.Oid | None = None
    conflicting_paths: tuple[str, ...] = ()


def accept_task_diff(
    repo_root: Path, worktree: TaskWorktree, *, reviewed_identity: str, committer: CommitAuthor | None = None
) -> AcceptOutcome:
    """Land the reviewed diff of ``worktree`` on the current branch of the checkout at ``repo_root``.

    See the module docstring for the order of checks. ``committer`` names the author and committer of
    any commit made here; by default the repository's configured identity (else ``codeflux``).
    """
    with opened_checkout(repo_root) as (user, user_root), opened_task_worktree(worktree) as task:
        if common_git_dir(user) != common_git_dir(task):
            raise WorktreeNotUsableError(
                task_id=worktree.name, problem="foreign-repository", detail=f"it does not belong to {user_root}"
            )
        capture = capture_working_tree(task)
        current = render_task_diff(task, base=worktree.base, capture=capture)
        signature = (committer or _configured_committer(user)).signature()
        task_commit, snapshot = _commit_to_land(
            task, worktree, capture=capture, current=current, reviewed=reviewed_identity, signature=signature
        )
        branch_ref, user_head = _require_landable_checkout(user)
        if current.is_empty:
            landing = _Landing(kind=AcceptKind.NOTHING_TO_LAND)
        else:
            landing = _plan_landing(
                user, user_head, task_commit=task_commit, worktree=worktree, reviewed=reviewed_identity,
                signature=signature,
            )
        if landing.commit is not None:
            _require_nothing_in_the_way(user, user_root, user_head, landing)
            if snapshot:
                _advance_task_branch(task, worktree, capture, task_commit)
            _land(user, branch_ref, user_head, landing, worktree)
        return AcceptOutcome(
            kind=landing.kind,
            branch=branch_ref.removeprefix("refs/heads/"),
            previous_head=str(user_head),
            landed_head=str(landing.commit or user_head),
            task_commit=str(task_commit),
            conflicting_paths=landing.conflicting_paths,
        )


def reject_task_diff(worktree: TaskWorktree, *, reviewed_identity: str) -> RejectedPatch:
    """The worktree's current patch and identity, to store on rejection; nothing is changed.

    A rejection always keeps what the worktree holds now; ``matches_review`` tells the caller whether
    that is the diff the user reviewed.
    """
    diff = diff_against_base(worktree)
    return RejectedPatch(
        patch=diff.unified_diff,
        identity=diff.identity,
        base=diff.base,
        head=diff.head,
        files=diff.files,
        skipped_paths=diff.skipped_paths,
        matches_review=diff.identity == reviewed_identity,
    )


def _configured_committer(user: pygit2.Repository) -> CommitAuthor:
    try:
        signature = user.default_signature
    except (pygit2.GitError, KeyError):
        return FALLBACK_COMMITTER
    return CommitAuthor(name=signature.name, email=signature.email)


def _commit_to_land(
    task: pygit2.Repository,
    worktree: TaskWorktree,
    *,
    capture: WorkingTreeCapture,
    current: TaskDiff,
    reviewed: str,
    signature: pygit2.Signature,
) -> tuple[pygit2.Oid, bool]:
    """The task commit to land and whether it is a new snapshot (not yet on the task branch)."""
    head = pygit2.Oid(hex=capture.head)
    if current.identity == reviewed:
        if not capture.has_uncommitted_changes:
            return head, False
        message = f"codeflux: changes of task {worktree.task_id}\n\n{REVIEWED_IDENTITY_TRAILER}: {reviewed}\n"
        with map_git_errors("commit the reviewed changes"):
            snapshot = task.create_commit(None, signature, signature, message, pygit2.Oid(hex=capture.tree), [head])
        return snapshot, True
    if not capture.has_uncommitted_changes and _is_snapshot_of(task, head, reviewed, worktree, current):
        return head, False  # an interrupted accept already committed exactly the reviewed diff
    raise DiffChangedError(reviewed=reviewed, current=current.identity)


def _is_snapshot_of(
    task: pygit2.Repository, head: pygit2.Oid, reviewed: str, worktree: TaskWorktree, current: TaskDiff
) -> bool:
    with map_git_errors("read the task branch"):
        commit = task[head].peel(pygit2.Commit)
        trailer = f"\n{REVIEWED_IDENTITY_TRAILER}: {reviewed}\n"
        if trailer not in commit.message or len(commit.parent_ids) != 1:
            return False
        parent = str(commit.parent_ids[0])
    return diff_identity(worktree.base, parent, current.unified_diff) == reviewed


def _require_landable_checkout(user: pygit2.Repository) -> tuple[str, pygit2.Oid]:
    """The user's branch ref and HEAD commit; refuses a detached HEAD, an operation, tracked changes."""
    with map_git_errors("read the checkout"):
        head = user.head.peel(pygit2.Commit).id
        if user.head_is_detached:
            raise DetachedHeadError(head=str(head))
        branch_ref = user.head.name
        status = user.status(untracked_files="no")
    operations = tuple(str(operation) for operation in in_progress_operations(user))
    unchanged = (FileStatus.CURRENT, FileStatus.IGNORED)
    changed = tuple(sorted(path for path, flags in status.items() if flags not in unchanged))
    if operations or changed:
        raise CheckoutNotCleanError(paths=changed, operations=operations)
    return branch_ref, head


def _plan_landing(
    user: pygit2.Repository,
    user_head: pygit2.Oid,
    *,
    task_commit: pygit2.Oid,
    worktree: TaskWorktree,
    reviewed: str,
    signature: pygit2.Signature,
) -> _Landing:
    """Fast-forward, merge commit, already present or conflict — computed without touching anything."""
    with map_git_errors("merge the task branch"):
        if task_commit == user_head or user.descendant_of(user_head, task_commit):
            return _Landing(kind=AcceptKind.ALREADY_PRESENT)
        if user.descendant_of(task_commit, user_head):
            tree = user[task_commit].peel(pygit2.Commit).tree_id
            return _Landing(kind=AcceptKind.FAST_FORWARD, commit=task_commit, tree=tree)
        merged = user.merge_commits(user_head, task_commit)
        if merged.conflicts is not None:
            paths = {entry.path for triple in merged.conflicts for entry in triple if entry is not None}
            return _Landing(kind=AcceptKind.CONFLICT, conflicting_paths=tuple(sorted(paths)))
        tree = merged.write_tree(user)
        message = (
            f"Merge task {worktree.task_id} ({worktree.branch}), accepted in codeflux\n\n"
            f"{REVIEWED_IDENTITY_TRAILER}: {reviewed}\n"
        )
        commit = user.create_commit(None, signature, signature, message, tree, [user_head, task_commit])
    return _Landing(kind=AcceptKind.MERGE_COMMIT, commit=commit, tree=tree)


def _require_nothing_in_the_way(
    user: pygit2.Repository, user_root: Path, user_head: pygit2.Oid, landing: _Landing
) -> None:
    """Refuse when the landing would create a path where an untracked or ignored file already lies."""
    if landing.tree is None:
        return
    with map_git_errors("compare the landing with the checkout"):
        old_tree = user[user_head].peel(pygit2.Commit).tree
        new_tree = user[landing.tree].peel(pygit2.Tree)
        added = [d.new_file.path for d in old_tree.diff_to_tree(new_tree).deltas if d.status == DeltaStatus.ADDED]
    in_the_way = sorted(path for path in added if _occupied(user_root, path))
    if in_the_way:
        raise CheckoutNotCleanError(paths=tuple(in_the_way))


def _occupied(root: Path, relative: str) -> bool:
    """True when the path, or one of its parent folders as something other than a folder, exists."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        parent = root.joinpath(*parts[:depth])
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            return True
    target = root.joinpath(*parts)
    return target.exists() or target.is_symlink()


def _advance_task_branch(
    task: pygit2.Repository, worktree: TaskWorktree, capture: WorkingTreeCapture, snapshot: pygit2.Oid
) -> None:
    """Move the task branch from the captured HEAD to the snapshot commit and sync the worktree index."""
    with map_git_errors("move the task branch"):
        reference = task.references[worktree.branch_ref]
        if str(reference.target) != capture.head:
            raise GitOperationFailedError(
                operation="move the task branch", problem="concurrent-update", detail="it moved during the accept"
            )
        reference.set_target(snapshot, f"codeflux: snapshot of task {worktree.task_id} for acceptance")
    reset_index_to_tree(task, capture.tree)


def _land(
    user: pygit2.Repository, branch_ref: str, user_head: pygit2.Oid, landing: _Landing, worktree: TaskWorktree
) -> None:
    """Check the landing tree out into the user's checkout, then move the branch to the landing commit."""
    if landing.commit is None or landing.tree is None:
        raise InvalidValueError(kind="landing", reason="has no commit to land")
    with map_git_errors("update the checkout"):
        reference = user.references[branch_ref]
        if reference.target != user_head:
            raise GitOperationFailedError(
                operation="move the branch", problem="concurrent-update", detail=f"{branch_ref} moved during the accept"
            )
        user.checkout_tree(user[landing.tree], strategy=_SAFE_CHECKOUT)  # type: ignore[no-untyped-call]
        reference.set_target(landing.commit, f"codeflux: accept task {worktree.task_id} ({landing.kind})")
