"""Opening checkouts with pygit2, and the one place pygit2 exceptions become codeflux errors.

Every pygit2 call in :mod:`codeflux.gitwork` runs inside :func:`map_git_errors`; a pygit2 exception
leaving the package is a bug (a unit test maps every exception type pygit2 exports). A repository is
opened through :func:`opened_checkout`, which frees libgit2's handles (pack files, index) on exit, so
nothing stays open between calls.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

import pygit2

from codeflux.domain.errors import GitLockHeldError, GitOperationFailedError, RepositoryNotUsableError

__all__ = [
    "GitOperation",
    "common_git_dir",
    "git_failure",
    "held_lock",
    "in_progress_operations",
    "map_git_errors",
    "opened_checkout",
    "opened_repository_at",
    "same_file",
]

# Most specific first: pygit2's exception classes form a hierarchy under GitError.
_PROBLEM_BY_EXCEPTION: tuple[tuple[type[Exception], str], ...] = (
    (pygit2.AlreadyExistsError, "already-exists"),
    (pygit2.AmbiguousError, "ambiguous"),
    (pygit2.InvalidSpecError, "invalid-spec"),
    (pygit2.InvalidError, "invalid"),
    (pygit2.NotFoundError, "not-found"),
    (pygit2.AuthError, "authentication"),
    (pygit2.CertificateError, "certificate"),
    (pygit2.GitError, "failed"),
)


class GitOperation(StrEnum):
    """An operation git has started in a checkout and not finished (read from its git directory)."""

    MERGE = "merge"
    REBASE = "rebase"
    CHERRY_PICK = "cherry-pick"
    REVERT = "revert"
    BISECT = "bisect"
    APPLY_MAILBOX = "apply-mailbox"


def git_failure(operation: str, error: Exception) -> GitOperationFailedError:
    """The codeflux error for a pygit2 exception met while trying to ``operation``."""
    problem = next((name for kind, name in _PROBLEM_BY_EXCEPTION if isinstance(error, kind)), "failed")
    return GitOperationFailedError(operation=operation, problem=problem, detail=str(error))


_LOCK_FILE = re.compile(r"'([^']*\.lock)'")


def held_lock(error: Exception) -> str | None:
    """The lock file named by a libgit2 failure to create it (another process holds it), else None.

    libgit2 reports this as ``OSError`` or ``GitError`` ("failed to create locked file '…/index.lock': File
    exists"); it is shown from ``.git/`` on when the path has one."""
    match = _LOCK_FILE.search(str(error))
    if match is None or "lock" not in str(error).lower():
        return None
    path = match.group(1)
    marker = path.rfind("/.git/")
    return path[marker + 1:] if marker >= 0 else path


@contextlib.contextmanager
def map_git_errors(operation: str) -> Iterator[None]:
    """Translate pygit2 exceptions raised inside the block into :class:`GitOperationFailedError`, and a lock
    another git process holds (libgit2 raises ``OSError`` or ``GitError`` for it) into
    :class:`GitLockHeldError`."""
    try:
        yield
    except (pygit2.GitError, OSError) as error:
        lock = held_lock(error)
        if lock is not None:
            raise GitLockHeldError(lock=lock, waited_seconds=0) from error
        if isinstance(error, pygit2.GitError):
            raise git_failure(operation, error) from error
        raise


@contextlib.contextmanager
def opened_checkout(path: Path) -> Iterator[tuple[pygit2.Repository, Path]]:
    """The repository whose working tree holds ``path`` (its top level or anywhere inside), and that top level.

    Refuses with :class:`RepositoryNotUsableError` a path that does not exist or is not a directory, is in
    no repository, is in a bare one, or whose HEAD has no commit yet (``problem`` says which).
    """
    shown = str(path)
    try:
        resolved = path.resolve(strict=True)
    except OSError as error:
        raise RepositoryNotUsableError(path=shown, problem="not-a-directory", detail="it does not exist") from error
    if not resolved.is_dir():
        raise RepositoryNotUsableError(path=shown, problem="not-a-directory", detail="it is not a directory")
    try:
        git_dir = pygit2.discover_repository(str(resolved))
        repository = None if git_dir is None else pygit2.Repository(git_dir)
    except pygit2.GitError as error:
        raise RepositoryNotUsableError(
            path=shown, problem="unreadable", detail="git could not open it (broken .git, or not owned by you)"
        ) from error
    if repository is None:
        raise RepositoryNotUsableError(
            path=shown, problem="not-a-repository", detail="it is not inside a git repository"
        )
    try:
        _refuse_unusable(repository, shown)
        root = Path(repository.workdir).resolve()
        yield repository, root
    finally:
        repository.free()


def _refuse_unusable(repository: pygit2.Repository, shown: str) -> None:
    if repository.is_bare or repository.workdir is None:
        raise RepositoryNotUsableError(
            path=shown, problem="bare", detail="a bare repository has no checkout to work from"
        )
    try:
        unborn = repository.head_is_unborn
        if not unborn:
            repository.head.peel(pygit2.Commit)
    except pygit2.GitError as error:
        raise RepositoryNotUsableError(path=shown, problem="unreadable", detail="its HEAD cannot be read") from error
    if unborn:
        raise RepositoryNotUsableError(
            path=shown, problem="no-commits", detail="it has no commit yet; commit something first"
        )


@contextlib.contextmanager
def opened_repository_at(path: Path) -> Iterator[pygit2.Repository]:
    """The repository at exactly ``path`` (no search upward); libgit2 handles are freed on exit."""
    with map_git_errors("open the repository"):
        repository = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    try:
        yield repository
    finally:
        repository.free()


def common_git_dir(repository: pygit2.Repository) -> Path:
    """The git directory shared by every worktree of ``repository`` (objects, refs, ``worktrees/``)."""
    own = Path(repository.path)
    pointer = own / "commondir"
    if pointer.is_file():
        target = Path(pointer.read_text().strip())
        return (target if target.is_absolute() else own / target).resolve()
    return own.resolve()


def in_progress_operations(repository: pygit2.Repository) -> tuple[GitOperation, ...]:
    """Every operation git left unfinished in this checkout, in a fixed order (several can coexist).

    Read from the checkout's own git directory, the way git itself tells: ``MERGE_HEAD``,
    ``rebase-merge/`` or ``rebase-apply/`` (``applying`` marks ``git am``), ``CHERRY_PICK_HEAD``,
    ``REVERT_HEAD``, a ``sequencer/todo`` between picks, and ``BISECT_LOG``.
    """
    git_dir = Path(repository.path)
    found: set[GitOperation] = set()
    if (git_dir / "MERGE_HEAD").exists():
        found.add(GitOperation.MERGE)
    if (git_dir / "rebase-merge").is_dir():
        found.add(GitOperation.REBASE)
    if (git_dir / "rebase-apply").is_dir():
        applying = (git_dir / "rebase-apply" / "applying").exists()
        found.add(GitOperation.APPLY_MAILBOX if applying else GitOperation.REBASE)
    if (git_dir / "CHERRY_PICK_HEAD").exists():
        found.add(GitOperation.CHERRY_PICK)
    if (git_dir / "REVERT_HEAD").exists():
        found.add(GitOperation.REVERT)
    sequenced = _sequencer_operation(git_dir / "sequencer" / "todo")
    if sequenced is not None:
        found.add(sequenced)
    if (git_dir / "BISECT_LOG").exists():
        found.add(GitOperation.BISECT)
    return tuple(operation for operation in GitOperation if operation in found)


def _sequencer_operation(todo: Path) -> GitOperation | None:
    try:
        with todo.open("rb") as handle:
            first = handle.readline(256).split(maxsplit=1)
    except OSError:
        return None
    word = first[0].decode("ascii", "replace") if first else ""
    if word == "revert":
        return GitOperation.REVERT
    return GitOperation.CHERRY_PICK if word in {"pick", "p"} else None


def same_file(left: Path, right: Path) -> bool:
    """True when both paths name the same existing directory entry (after resolving links)."""
    try:
        return os.path.samefile(left, right)
    except OSError:
        return False
