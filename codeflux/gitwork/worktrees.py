"""Creating and removing task worktrees: ``<worktrees_root>/<repo_key>/<task id>`` on ``codeflux/task/<task id>``.

Creation goes through libgit2 (``Repository.add_worktree`` with an explicit branch reference made at
the base commit), so no repository hook, fsmonitor or filter program ever runs; anything created is
removed again if a later step fails. Removal is refused — with a reason, not an error — when the
outcome is ambiguous or when it would lose work stored nowhere else; it deletes the directory, prunes
git's worktree metadata and keeps the task branch unless asked to delete it. The binding type and the
verification run before every edit and diff live in :mod:`codeflux.gitwork.task_worktree` and are
re-exported here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2

from codeflux.domain.errors import GitOperationFailedError, InvalidValueError, WorktreeNotUsableError
from codeflux.domain.ids import TaskId
from codeflux.gitwork.checkout import map_git_errors, opened_checkout, same_file
from codeflux.gitwork.diff import render_task_diff
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree, parse_commit_id, verify_task_worktree
from codeflux.gitwork.working_tree import capture_working_tree

__all__ = [
    "CleanupFault",
    "RemovalRefusal",
    "TaskWorktree",
    "WorktreeRemoval",
    "create_task_worktree",
    "remove_task_worktree",
    "verify_task_worktree",
]

_REPO_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


class RemovalRefusal(StrEnum):
    """Why a worktree was kept."""

    OUTCOME_AMBIGUOUS = "outcome-ambiguous"  # the caller does not know how the task ended
    UNSAVED_WORK = "unsaved-work"  # changes (or an unmerged branch being deleted) not captured in a patch
    UNVERIFIABLE = "unverifiable"  # the worktree fails verification, so what removal would lose is unknown


class CleanupFault(StrEnum):
    """Named points of a cleanup where tests inject a failure (``fault`` of :func:`remove_task_worktree`)."""

    WORKTREE_REMOVED = "worktree-removed"  # the directory and git's metadata are gone; the branch is not yet
    BRANCH_DELETED = "branch-deleted"  # the branch is gone (when asked); the checkpoint refs are not yet


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeRemoval:
    """The result of :func:`remove_task_worktree`: removed, or kept with a refusal and its reason in words."""

    removed: bool
    refusal: RemovalRefusal | None
    detail: str
    branch_deleted: bool


def create_task_worktree(
    repo_root: Path, *, worktrees_root: Path, repo_key: str, task_id: TaskId, base_commit: str
) -> TaskWorktree:
    """Create the task's branch at ``base_commit`` and check it out at ``<worktrees_root>/<repo_key>/<task>``.

    Refuses (:class:`WorktreeNotUsableError`) when the path, the branch or the worktree name exists
    already, the base commit is not in the repository, or the worktrees root overlaps the repository.
    ``repo_key`` is one path component (letters, digits, ``_ . -``); ``worktrees_root`` is absolute and
    created 0700 when missing. Returns the verified binding.
    """
    parse_commit_id(base_commit, kind="base commit id")
    if _REPO_KEY.fullmatch(repo_key) is None:
        raise InvalidValueError(kind="repository key", reason="one path component of letters, digits, '_', '.', '-'")
    if not worktrees_root.is_absolute():
        raise InvalidValueError(kind="worktrees root", reason="must be an absolute path")
    with opened_checkout(repo_root) as (repository, root):
        binding = TaskWorktree(
            repo_root=root, path=worktrees_root.resolve() / repo_key / str(task_id), task_id=task_id, base=base_commit
        )
        _refuse_conflicts(repository, binding, worktrees_root.resolve())
        _make_parent_folder(binding)
        _add_worktree(repository, binding)
    verify_task_worktree(binding)
    return binding


def _refuse_conflicts(repository: pygit2.Repository, binding: TaskWorktree, worktrees_root: Path) -> None:
    def refuse(problem: str, detail: str) -> WorktreeNotUsableError:
        return WorktreeNotUsableError(task_id=binding.name, problem=problem, detail=detail)

    if worktrees_root.is_relative_to(binding.repo_root) or binding.repo_root.is_relative_to(worktrees_root):
        raise refuse("overlaps-repository", "the worktrees root and the repository must not contain each other")
    if binding.path.exists() or binding.path.is_symlink():
        raise refuse("path-exists", f"{binding.path} already exists")
    with map_git_errors("read the repository's branches and worktrees"):
        if repository.branches.local.get(binding.branch) is not None:
            raise refuse("branch-exists", f"branch {binding.branch} already exists")
        if binding.name in repository.list_worktrees():
            raise refuse("name-taken", f"a worktree named {binding.name} is already registered")
        base = repository.get(binding.base)
    if not isinstance(base, pygit2.Commit):
        raise refuse("base-missing", f"the base commit {binding.base[:12]} is not in the repository")


def _make_parent_folder(binding: TaskWorktree) -> None:
    """``<worktrees_root>/<repo_key>``, created 0700 (with the root) when missing."""
    try:
        for folder in (binding.path.parent.parent, binding.path.parent):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise WorktreeNotUsableError(
            task_id=binding.name, problem="path-exists", detail=f"{binding.path.parent} cannot be a folder"
        ) from error


def _add_worktree(repository: pygit2.Repository, binding: TaskWorktree) -> None:
    """Branch at the base, then the worktree on that branch; on failure remove exactly what was made."""
    branch: pygit2.Branch | None = None
    try:
        with map_git_errors("create the task worktree"):
            branch = repository.branches.local.create(
                binding.branch, repository[pygit2.Oid(hex=binding.base)].peel(pygit2.Commit)
            )
            repository.add_worktree(binding.name, str(binding.path), branch)
    except BaseException:
        _undo_creation(repository, binding, branch_created=branch is not None)
        raise


def _undo_creation(repository: pygit2.Repository, binding: TaskWorktree, *, branch_created: bool) -> None:
    if binding.path.is_dir() and not binding.path.is_symlink():
        shutil.rmtree(binding.path, ignore_errors=True)
    try:
        if binding.name in repository.list_worktrees():
            repository.lookup_worktree(binding.name).prune(True)
        if branch_created:
            repository.branches.local.delete(binding.branch)
    except pygit2.GitError:
        pass  # best effort: the original failure is what the caller needs to see


def remove_task_worktree(
    worktree: TaskWorktree,
    *,
    keep_if_unsaved: bool,
    outcome_ambiguous: bool,
    saved_patch_identity: str | None = None,
    delete_branch: bool = False,
    fault: Callable[[CleanupFault], None] | None = None,
) -> WorktreeRemoval:
    """Remove the task's worktree unless that would lose something; say why when it is kept.

    Kept when ``outcome_ambiguous`` (the caller cannot tell how the task ended), and — with
    ``keep_if_unsaved`` — when the worktree holds uncommitted changes (or uncapturable content such as a
    nested repository), or ``delete_branch`` would drop commits the user's HEAD does not contain, unless
    the current diff's identity equals ``saved_patch_identity`` (that exact patch is stored elsewhere).
    A worktree that fails verification is kept with ``keep_if_unsaved``. Otherwise the directory is
    deleted, git's metadata for it pruned, and the branch deleted only when ``delete_branch``. An
    already-missing directory only has its metadata pruned. A path that is not this repository's
    worktree is never deleted (:class:`WorktreeNotUsableError`). Every step can be run again: a removal
    interrupted part-way (``fault`` is called between the steps, tests only) is finished by running it again.
    """
    if outcome_ambiguous:
        return _kept(RemovalRefusal.OUTCOME_AMBIGUOUS, "the task's outcome is ambiguous; resolve it first")
    if keep_if_unsaved:
        refusal = _unsaved_work(worktree, saved_patch_identity=saved_patch_identity, delete_branch=delete_branch)
        if refusal is not None:
            return refusal
    with opened_checkout(worktree.repo_root) as (repository, _):
        _delete_directory(repository, worktree)
        with map_git_errors("prune the worktree metadata"):
            if worktree.name in repository.list_worktrees():
                repository.lookup_worktree(worktree.name).prune(True)
        if fault is not None:
            fault(CleanupFault.WORKTREE_REMOVED)
        with map_git_errors("delete the task branch"):
            branch_deleted = delete_branch and repository.branches.local.get(worktree.branch) is not None
            if branch_deleted:
                repository.branches.local.delete(worktree.branch)
    return WorktreeRemoval(removed=True, refusal=None, detail="removed", branch_deleted=branch_deleted)


def _kept(refusal: RemovalRefusal, detail: str) -> WorktreeRemoval:
    return WorktreeRemoval(removed=False, refusal=refusal, detail=detail, branch_deleted=False)


def _unsaved_work(
    worktree: TaskWorktree, *, saved_patch_identity: str | None, delete_branch: bool
) -> WorktreeRemoval | None:
    if not worktree.path.exists():
        # Nothing is left in the directory to lose; only deleting an unmerged branch could lose work.
        if delete_branch and not _branch_is_merged(worktree):
            return _kept(RemovalRefusal.UNSAVED_WORK, f"{worktree.branch} has commits HEAD does not contain")
        return None
    try:
        with opened_task_worktree(worktree) as repository:
            capture = capture_working_tree(repository)
            branch_at_risk = delete_branch and not _branch_is_merged(worktree)
            at_risk = capture.has_uncommitted_changes or bool(capture.skipped_paths) or branch_at_risk
            if not at_risk:
                return None
            if capture.skipped_paths:
                return _kept(RemovalRefusal.UNSAVED_WORK, "the worktree holds content no patch can carry")
            identity = render_task_diff(repository, base=worktree.base, capture=capture).identity
    except WorktreeNotUsableError as error:
        return _kept(RemovalRefusal.UNVERIFIABLE, f"the worktree failed verification ({error.problem})")
    if saved_patch_identity is not None and identity == saved_patch_identity:
        return None
    return _kept(RemovalRefusal.UNSAVED_WORK, "the worktree holds work that is not saved as a patch")


def _branch_is_merged(worktree: TaskWorktree) -> bool:
    """True when the task branch is gone or HEAD of the user's checkout contains its commit."""
    with opened_checkout(worktree.repo_root) as (repository, _), map_git_errors("read the task branch"):
        branch = repository.branches.local.get(worktree.branch)
        if branch is None:
            return True
        head, tip = repository.head.target, branch.target
        return bool(head == tip or repository.descendant_of(head, tip))


def removal_directory(worktree: TaskWorktree) -> Path:
    """Where a worktree being deleted lies: a hidden sibling its directory is renamed to before deletion."""
    return worktree.path.with_name(f".{worktree.path.name}.removing")


def _delete_directory(repository: pygit2.Repository, worktree: TaskWorktree) -> None:
    """Delete the worktree directory, but only when git has it registered as this task's worktree.

    The directory is first renamed to :func:`removal_directory` (one step), then deleted there. So a removal
    cut off part-way (a kill, a full disk) leaves either the whole, verifiable worktree at its path or a
    directory that is only ever being deleted — never a half-deleted worktree that verification refuses and
    whose deleted files would look like unsaved work. Running it again finishes the deletion."""
    path, removing = worktree.path, removal_directory(worktree)
    if path.exists() or path.is_symlink():
        with map_git_errors("read the repository's worktrees"):
            registered = worktree.name in repository.list_worktrees() and same_file(
                Path(repository.lookup_worktree(worktree.name).path), path
            )
        if path.is_symlink() or not registered:
            raise WorktreeNotUsableError(
                task_id=worktree.name, problem="not-a-worktree",
                detail=f"{path} is not this task's worktree; left alone",
            )
        _filesystem("remove the worktree directory", lambda: shutil.rmtree(removing) if removing.exists() else None)
        _filesystem("remove the worktree directory", lambda: path.rename(removing))
    if removing.exists() and not removing.is_symlink():
        _filesystem("remove the worktree directory", lambda: shutil.rmtree(removing))


def _filesystem(operation: str, step: Callable[[], object]) -> None:
    try:
        step()
    except OSError as error:
        raise GitOperationFailedError(operation=operation, problem="filesystem", detail=str(error)) from error
