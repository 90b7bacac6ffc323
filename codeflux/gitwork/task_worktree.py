"""A task's worktree binding and its verification, which runs before every edit, diff and accept.

A :class:`TaskWorktree` is what the task service records when a worktree is created: the user's
repository, the worktree path, the task, its branch ``codeflux/task/<task id>`` and the base commit.
:func:`verify_task_worktree` checks that the binding still holds — the directory exists, is a
registered worktree of *that* repository, has the task branch checked out, and its HEAD is the base
or descends from it — and raises :class:`WorktreeNotUsableError` naming the first check that failed.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from codeflux.domain.errors import InvalidValueError, WorktreeNotUsableError
from codeflux.domain.ids import TaskId
from codeflux.gitwork.checkout import common_git_dir, map_git_errors, opened_checkout, same_file

__all__ = [
    "TASK_BRANCH_PREFIX",
    "TaskWorktree",
    "opened_task_worktree",
    "parse_commit_id",
    "verify_task_worktree",
]

TASK_BRANCH_PREFIX = "codeflux/task/"
_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def parse_commit_id(text: str, *, kind: str = "commit id") -> str:
    """A full lowercase commit id (40 hex for SHA-1, 64 for SHA-256); names and short ids are refused."""
    if not isinstance(text, str) or _COMMIT_ID.fullmatch(text) is None:
        raise InvalidValueError(kind=kind, reason="expected a full 40- or 64-digit lowercase hex commit id")
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskWorktree:
    """The binding of a task to its worktree (paths are absolute and resolved)."""

    repo_root: Path
    path: Path
    task_id: TaskId
    base: str

    @property
    def name(self) -> str:
        """The worktree's name inside git (``.git/worktrees/<name>``): the task id."""
        return str(self.task_id)

    @property
    def branch(self) -> str:
        return f"{TASK_BRANCH_PREFIX}{self.task_id}"

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"


def verify_task_worktree(worktree: TaskWorktree) -> str:
    """Check the binding (see the module docstring) and return the worktree's HEAD commit id."""
    with opened_task_worktree(worktree) as repository, map_git_errors("read the worktree HEAD"):
        return str(repository.head.target)


@contextlib.contextmanager
def opened_task_worktree(worktree: TaskWorktree) -> Iterator[pygit2.Repository]:
    """The verified worktree as an open repository (freed on exit); :class:`WorktreeNotUsableError` if not."""
    path = worktree.path
    if path.is_symlink() or not path.is_dir():
        raise _unusable(worktree, "missing", f"{path} does not exist or is not a directory")
    try:
        repository = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError as error:
        raise _unusable(worktree, "not-a-worktree", f"{path} holds no git checkout") from error
    try:
        _verify_ownership(worktree, repository)
        _verify_branch_and_base(worktree, repository)
        yield repository
    finally:
        repository.free()


def _verify_ownership(worktree: TaskWorktree, repository: pygit2.Repository) -> None:
    if repository.is_bare or repository.workdir is None or not same_file(Path(repository.workdir), worktree.path):
        raise _unusable(worktree, "not-a-worktree", f"{worktree.path} is not the top of a git checkout")
    with opened_checkout(worktree.repo_root) as (user, _), map_git_errors("read the repository's worktrees"):
        common = common_git_dir(user)
        if common_git_dir(repository) != common:
            raise _unusable(worktree, "foreign-repository", "it belongs to another repository")
        own_git_dir = Path(repository.path).resolve()
        registered = worktree.name in user.list_worktrees() and same_file(
            Path(user.lookup_worktree(worktree.name).path), worktree.path
        )
        if not registered or own_git_dir != common / "worktrees" / worktree.name:
            raise _unusable(worktree, "not-a-worktree", f"it is not registered as worktree {worktree.name}")


def _verify_branch_and_base(worktree: TaskWorktree, repository: pygit2.Repository) -> None:
    with map_git_errors("read the worktree HEAD"):
        if repository.head_is_detached or repository.head_is_unborn or repository.head.name != worktree.branch_ref:
            raise _unusable(worktree, "wrong-branch", f"it does not have {worktree.branch} checked out")
        head = repository.head.target
        base = pygit2.Oid(hex=worktree.base)
        if base not in repository:
            raise _unusable(worktree, "base-missing", f"the base commit {worktree.base[:12]} is not in the repository")
        if head != base and not repository.descendant_of(head, base):
            raise _unusable(
                worktree, "not-descended-from-base", f"its HEAD does not descend from the base {worktree.base[:12]}"
            )


def _unusable(worktree: TaskWorktree, problem: str, detail: str) -> WorktreeNotUsableError:
    return WorktreeNotUsableError(task_id=str(worktree.task_id), problem=problem, detail=detail)
