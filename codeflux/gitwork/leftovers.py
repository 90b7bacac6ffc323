"""codeflux's leftovers in a user's repository: task worktrees, ``codeflux/task/<id>`` branches and
``refs/codeflux/…`` refs — found, saved as a bundle when they hold commits no other branch has, and removed.

Only names codeflux makes are ever considered: a registered worktree counts when its name is a task id and
it is on that task's branch; a branch when it is ``codeflux/task/<task id>``; a ref when it lies under
``refs/codeflux/`` and names a task id. The user's own branches, worktrees and refs are never touched.
Which of them a database still knows is the caller's business (:mod:`codeflux.coordinator.tasks.leftovers`).

A worktree directory with uncommitted changes is never removed (nothing could save it). A branch or ref
whose commit is on no other branch (codeflux's own task branches do not count) is *unique*: it goes into a
git bundle, verified with ``git bundle verify``, before anything of that task is removed. ``git`` runs with
hooks off (``core.hooksPath=/dev/null``), no fsmonitor, and none of the caller's ``GIT_*`` variables.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2

from codeflux.domain.errors import GitOperationFailedError
from codeflux.domain.git_options import SAFE_GIT_OPTIONS
from codeflux.gitwork.checkout import map_git_errors, opened_checkout, same_file

__all__ = ["Leftover", "LeftoverKind", "bundle_leftovers", "find_leftovers", "remove_leftovers", "repository_here"]

TASK_BRANCH_PREFIX = "codeflux/task/"
CODEFLUX_REFS = "refs/codeflux/"
_TASK_ID = re.compile(r"tsk_[0-9a-z]{8,64}")
_GIT_TIMEOUT_S = 120


class LeftoverKind(StrEnum):
    WORKTREE = "worktree"
    BRANCH = "branch"
    REF = "ref"


@dataclass(frozen=True, slots=True, kw_only=True)
class Leftover:
    """One thing codeflux made in the repository: ``name`` is the worktree's name or the full ref name."""

    kind: LeftoverKind
    task_id: str
    name: str
    commit: str | None = None
    path: Path | None = None
    """The worktree's directory (it may be gone)."""
    unique: bool = False
    """A branch or ref whose commit is on no other branch: removing it would lose commits."""
    dirty: bool = False
    """A worktree directory with uncommitted changes: never removed."""

    def describe(self) -> str:
        if self.kind is LeftoverKind.WORKTREE:
            where = "directory missing" if self.path is None or not self.path.exists() else "directory present"
            state = "; holds uncommitted changes, left alone" if self.dirty else ""
            return f"worktree {self.name} at {self.path} ({where}{state})"
        shown = self.name.removeprefix("refs/heads/")
        unique = "; holds commits on no other branch: saved as a bundle first" if self.unique else ""
        return f"{self.kind.value} {shown} at {(self.commit or '?')[:12]}{unique}"


def _task_of_ref(name: str) -> str | None:
    if name.startswith(f"refs/heads/{TASK_BRANCH_PREFIX}"):
        tail = name.removeprefix(f"refs/heads/{TASK_BRANCH_PREFIX}")
        return tail if _TASK_ID.fullmatch(tail) else None
    if name.startswith(CODEFLUX_REFS):
        found = [part for part in name.removeprefix(CODEFLUX_REFS).split("/") if _TASK_ID.fullmatch(part)]
        return found[0] if found else None
    return None


def find_leftovers(repo: Path) -> tuple[Path, list[Leftover]]:
    """The repository's top level and every codeflux leftover in it (worktrees first, then refs)."""
    with opened_checkout(repo) as (repository, root), map_git_errors("list the repository's refs and worktrees"):
        found = _worktrees(repository)
        others = [repository.references[name].peel(pygit2.Commit).id for name in repository.references
                  if name.startswith("refs/heads/") and _task_of_ref(name) is None]
        for name in sorted(repository.references):
            task = _task_of_ref(name)
            if task is None:
                continue
            target = repository.references[name].peel(pygit2.Commit).id
            unique = not any(o == target or repository.descendant_of(o, target) for o in others)
            kind = LeftoverKind.BRANCH if name.startswith("refs/heads/") else LeftoverKind.REF
            found.append(Leftover(kind=kind, task_id=task, name=name, commit=str(target), unique=unique))
    return root, found


def _worktrees(repository: pygit2.Repository) -> list[Leftover]:
    found = []
    for name in repository.list_worktrees():
        if _TASK_ID.fullmatch(name) is None:
            continue
        head = _common_dir(repository) / "worktrees" / name / "HEAD"
        try:
            on = head.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if on != f"ref: refs/heads/{TASK_BRANCH_PREFIX}{name}":
            continue  # not on its task branch: not ours to judge
        path = Path(repository.lookup_worktree(name).path)
        found.append(Leftover(kind=LeftoverKind.WORKTREE, task_id=name, name=name, path=path,
                              dirty=_has_uncommitted_changes(path)))
    return found


def _common_dir(repository: pygit2.Repository) -> Path:
    git_dir = Path(repository.path)
    pointer = git_dir / "commondir"
    if pointer.is_file():
        return (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def _has_uncommitted_changes(path: Path) -> bool:
    if not path.is_dir() or path.is_symlink():
        return False
    try:
        status = pygit2.Repository(str(path)).status()
    except pygit2.GitError:
        return True  # unreadable: what removal would lose is unknown
    return any(flags != pygit2.enums.FileStatus.IGNORED for flags in status.values())


def bundle_leftovers(repo: Path, leftovers: Iterable[Leftover], destination: Path) -> Path:
    """Save the unique branches and refs among ``leftovers`` in the git bundle ``destination`` (a new file)
    and verify it; :class:`GitOperationFailedError` when git cannot (nothing is written then)."""
    refs = [item.name for item in leftovers if item.kind is not LeftoverKind.WORKTREE and item.unique]
    if not refs:
        raise GitOperationFailedError(operation="bundle the task's commits", problem="nothing-unique",
                                      detail="no unique branch or ref was given")
    destination.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        _git(repo, "bundle", "create", str(destination), *refs)
        _git(repo, "bundle", "verify", "--quiet", str(destination))
    except GitOperationFailedError:
        destination.unlink(missing_ok=True)
        raise
    return destination


def _git(repo: Path, *args: str) -> None:
    """``git`` in ``repo`` with the options every codeflux git carries (hooks, fsmonitor, transports off) and no
    ``GIT_*`` variable of the caller."""
    executable = shutil.which("git")
    if executable is None:
        raise GitOperationFailedError(operation=f"run git {args[0]}", problem="git-missing", detail="no git on PATH")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    argv = [executable, *SAFE_GIT_OPTIONS, "-C", str(repo), *args]
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitOperationFailedError(operation=f"run git {args[0]} {args[1]}", problem="failed",
                                      detail=str(error)) from error
    if done.returncode != 0:
        raise GitOperationFailedError(operation=f"run git {args[0]} {args[1]}", problem="failed",
                                      detail=done.stderr.strip()[:500])


def remove_leftovers(repo: Path, leftovers: Iterable[Leftover]) -> list[Leftover]:
    """Remove ``leftovers`` (worktrees first, then refs); returns what was removed. A dirty worktree — and the
    branch it has checked out — stays. Each is checked again right before it goes."""
    items = list(leftovers)
    kept_tasks = {item.task_id for item in items if item.kind is LeftoverKind.WORKTREE and item.dirty}
    removed = []
    with opened_checkout(repo) as (repository, _):
        for item in items:
            if item.kind is LeftoverKind.WORKTREE and item.task_id not in kept_tasks and _remove_worktree(
                    repository, item):
                removed.append(item)
        for item in items:
            if item.kind is LeftoverKind.WORKTREE or (item.kind is LeftoverKind.BRANCH and item.task_id in kept_tasks):
                continue
            with map_git_errors("delete a codeflux ref"):
                reference = repository.references.get(item.name)
                if reference is None:
                    continue
                if item.commit is not None and str(reference.peel(pygit2.Commit).id) != item.commit:
                    continue  # it moved since it was listed: not the thing the person saw
                reference.delete()
            removed.append(item)
    return removed


def _remove_worktree(repository: pygit2.Repository, item: Leftover) -> bool:
    path = item.path
    with map_git_errors("read the repository's worktrees"):
        if item.name not in repository.list_worktrees():
            return False
        registered = Path(repository.lookup_worktree(item.name).path)
    if path is not None and path.is_dir() and not path.is_symlink() and same_file(registered, path):
        if _has_uncommitted_changes(path):
            return False
        try:
            shutil.rmtree(path)
        except OSError as error:
            raise GitOperationFailedError(operation="remove a codeflux worktree directory", problem="filesystem",
                                          detail=str(error)) from error
    with map_git_errors("prune a codeflux worktree"):
        repository.lookup_worktree(item.name).prune(True)
    return True


def repository_here() -> Path | None:
    """The top level of the (non-bare) git repository the current directory is in, or None."""
    try:
        found = pygit2.discover_repository(os.getcwd())
        repository = None if found is None else pygit2.Repository(found)
    except (pygit2.GitError, OSError):
        return None
    if repository is None or repository.is_bare or repository.workdir is None:
        return None
    return Path(repository.workdir)
