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
4. only then are refs and files touched (:func:`land_prepared`; the coordinator first commits the intent of
   the landing, :mod:`codeflux.coordinator.tasks.review`): uncommitted worktree content is first committed
   on the task branch (its message carries ``Codeflux-Reviewed-Identity: <identity>`` so an interrupted accept
   is recognised on retry), then the landing goes path by path under git's locks, every path old or new,
   never half, and the branch moves last (:mod:`codeflux.gitwork.landing`). Everything written is fsynced.

Everything goes through libgit2: no hook, no signing, no editor, no external merge or diff driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, FileStatus

from codeflux.domain.errors import (
    CheckoutNotCleanError,
    DetachedHeadError,
    DiffChangedError,
    GitOperationFailedError,
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
from codeflux.gitwork.landing import LandingFault, LandingPlan, enable_git_fsync, land, plan_paths
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree
from codeflux.gitwork.working_tree import WorkingTreeCapture, capture_working_tree

__all__ = [
    "REVIEWED_IDENTITY_TRAILER",
    "AcceptKind",
    "AcceptOutcome",
    "PreparedAccept",
    "RejectedPatch",
    "accept_task_diff",
    "land_prepared",
    "prepare_accept",
    "reject_task_diff",
]

REVIEWED_IDENTITY_TRAILER = "Codeflux-Reviewed-Identity"
FALLBACK_COMMITTER = CommitAuthor(name="codeflux", email="codeflux@localhost")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedAccept:
    """An accept computed and checked, with nothing referenced yet: the new commits exist only as objects.

    ``outcome`` is how it ends once landed; ``plan`` is the landing (None when nothing lands: conflict,
    already present, nothing to land); ``snapshot`` is the task branch's move ``(from, to, tree)`` when the
    worktree's uncommitted changes were committed for the landing."""

    outcome: AcceptOutcome
    plan: LandingPlan | None
    worktree: TaskWorktree
    snapshot: tuple[str, str, str] | None
    committer: pygit2.Signature
    message: str


def prepare_accept(
    repo_root: Path, worktree: TaskWorktree, *, reviewed_identity: str, committer: CommitAuthor | None = None
) -> PreparedAccept:
    """Steps 1–3 of the module docstring: every check, and the landing computed; no ref, index or file of the
    checkout is touched (objects written are fsynced and referenced by nothing yet)."""
    enable_git_fsync()
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
        plan = None
        if landing.commit is not None and landing.tree is not None:
            _require_nothing_in_the_way(user, user_root, user_head, landing)
            with map_git_errors("plan the landing"):
                previous_tree = user[user_head].peel(pygit2.Commit).tree_id
            plan = LandingPlan(
                work_tree=user_root, git_dir=Path(user.path).resolve(), common_dir=common_git_dir(user),
                branch_ref=branch_ref, previous_head=str(user_head), previous_tree=str(previous_tree),
                landed_head=str(landing.commit), landed_tree=str(landing.tree),
                paths=plan_paths(user, previous_tree, landing.tree), token="")
        outcome = AcceptOutcome(
            kind=landing.kind,
            branch=branch_ref.removeprefix("refs/heads/"),
            previous_head=str(user_head),
            landed_head=str(landing.commit or user_head),
            task_commit=str(task_commit),
            conflicting_paths=landing.conflicting_paths,
        )
        return PreparedAccept(
            outcome=outcome, plan=plan, worktree=worktree,
            snapshot=(capture.head, str(task_commit), capture.tree) if snapshot else None, committer=signature,
            message=f"codeflux: accept task {worktree.task_id} ({landing.kind})")


def land_prepared(prepared: PreparedAccept, *, token: str,
                  fault: Callable[[LandingFault], None] | None = None) -> AcceptOutcome:
    """Step 4: land the plan on the checkout (:func:`codeflux.gitwork.landing.land`), moving the task branch
    to the snapshot (if any) once the checkout's locks are held; ``token`` names this landing's temporary files."""
    if prepared.plan is None:
        return prepared.outcome
    enable_git_fsync()
    snapshot = prepared.snapshot

    def advance() -> None:
        if snapshot is not None:
            with opened_task_worktree(prepared.worktree) as task:
                _advance_task_branch(task, prepared.worktree, *snapshot)

    land(prepared.plan.with_token(token), committer=prepared.committer, message=prepared.message, first=advance,
         fault=fault)
    return prepared.outcome


def accept_task_diff(
    repo_root: Path, worktree: TaskWorktree, *, reviewed_identity: str, committer: CommitAuthor | None = None
) -> AcceptOutcome:
    """Land the reviewed diff of ``worktree`` on the current branch of the checkout at ``repo_root``
    (:func:`prepare_accept` then :func:`land_prepared`, without a journal; the coordinator records the intent
    between the two: :class:`codeflux.coordinator.tasks.review.ReviewService`).

    See the module docstring for the order of checks. ``committer`` names the author and committer of
    any commit made here; by default the repository's configured identity (else ``codeflux``).
    """
    prepared = prepare_accept(repo_root, worktree, reviewed_identity=reviewed_identity, committer=committer)
    return land_prepared(prepared, token=os.urandom(8).hex())


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


def _advance_task_branch(task: pygit2.Repository, worktree: TaskWorktree, head: str, snapshot: str, tree: str) -> None:
    """Move the task branch from the captured HEAD to the snapshot commit and sync the worktree index
    (already there when an interrupted accept moved it: then nothing changes)."""
    with map_git_errors("move the task branch"):
        reference = task.references[worktree.branch_ref]
        if str(reference.target) == snapshot:
            return
        if str(reference.target) != head:
            raise GitOperationFailedError(
                operation="move the task branch", problem="concurrent-update", detail="it moved during the accept"
            )
        reference.set_target(pygit2.Oid(hex=snapshot), f"codeflux: snapshot of task {worktree.task_id} for acceptance")
    reset_index_to_tree(task, tree)
