"""Checkpoint commits on private refs: the worktree's content preserved without touching the task branch.

:func:`preserve_worktree` verifies the task worktree, captures what it holds right now (committed,
uncommitted and untracked-not-ignored files; :mod:`codeflux.gitwork.working_tree`), writes a commit of
that tree whose parent is the worktree's HEAD, and points a NEW ref (``refs/codeflux/...``, never a
branch) at it. The task branch, the index and the files stay exactly as they were; no hook runs (libgit2).
An existing ref of that name is refused unless ``replace_orphan`` says the caller knows no record names
it (a ref left by a process that died before its database commit).

:func:`delete_checkpoint_ref` removes such a ref only while it still names the commit the caller made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from codeflux.domain.errors import ConflictError, InvalidValueError
from codeflux.gitwork.checkout import map_git_errors, opened_checkout
from codeflux.gitwork.diff import CommitAuthor, render_task_diff
from codeflux.gitwork.task_worktree import TaskWorktree, opened_task_worktree
from codeflux.gitwork.working_tree import capture_working_tree

__all__ = ["PRIVATE_REF_PREFIX", "PreservedWorktree", "delete_checkpoint_ref", "preserve_worktree",
           "read_private_ref"]

PRIVATE_REF_PREFIX = "refs/codeflux/"


@dataclass(frozen=True, slots=True, kw_only=True)
class PreservedWorktree:
    """The checkpoint commit, the worktree HEAD it descends from and the diff identity it preserves."""

    ref_name: str
    commit: str
    head: str
    diff_identity: str


def _check_ref(ref_name: str) -> str:
    if not ref_name.startswith(PRIVATE_REF_PREFIX) or not pygit2.reference_is_valid_name(ref_name):
        raise InvalidValueError(kind="checkpoint ref", reason=f"must be a valid ref under {PRIVATE_REF_PREFIX}")
    return ref_name


def preserve_worktree(worktree: TaskWorktree, ref_name: str, message: str, *, author: CommitAuthor,
                      replace_orphan: bool = False) -> PreservedWorktree:
    """Commit the worktree's current content onto the new private ref ``ref_name`` (see the module docstring)."""
    _check_ref(ref_name)
    if not message.strip():
        raise InvalidValueError(kind="commit message", reason="must not be empty")
    with opened_task_worktree(worktree) as repository:
        capture = capture_working_tree(repository)
        diff = render_task_diff(repository, base=worktree.base, capture=capture)
        signature = author.signature()
        with map_git_errors("preserve the worktree on a checkpoint ref"):
            if ref_name in repository.references and not replace_orphan:
                raise ConflictError(f"the checkpoint ref {ref_name} already exists")
            commit = repository.create_commit(
                None, signature, signature, message if message.endswith("\n") else message + "\n",
                pygit2.Oid(hex=capture.tree), [pygit2.Oid(hex=capture.head)])
            repository.references.create(ref_name, commit, force=replace_orphan)
    return PreservedWorktree(ref_name=ref_name, commit=str(commit), head=capture.head, diff_identity=diff.identity)


def read_private_ref(repo_root: Path, ref_name: str) -> str | None:
    """The commit id ``ref_name`` names in the repository at ``repo_root``, or None when it does not exist."""
    _check_ref(ref_name)
    with opened_checkout(repo_root) as (repository, _), map_git_errors("read a checkpoint ref"):
        reference = repository.references.get(ref_name)
        return None if reference is None else str(reference.target)


def delete_checkpoint_ref(repo_root: Path, ref_name: str, *, commit: str) -> bool:
    """Delete ``ref_name`` if it still names ``commit``; True when it was deleted."""
    _check_ref(ref_name)
    with opened_checkout(repo_root) as (repository, _), map_git_errors("delete a checkpoint ref"):
        reference = repository.references.get(ref_name)
        if reference is None or str(reference.target) != commit:
            return False
        reference.delete()
        return True
