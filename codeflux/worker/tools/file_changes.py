"""A set of file writes and deletions beneath the worktree that lands whole or not at all.

Used by ``apply_patch``: every file's new content is computed first (reading through this class), then
:meth:`FileChanges.commit` makes the changes. Nothing is opened by a path below the worktree root (itself
opened by ``beneath.open_directory_beneath``): each directory is opened once, relative to its parent's
descriptor with ``O_DIRECTORY | O_NOFOLLOW``, and kept open for the whole change set; files are read,
created, replaced and removed relative to those descriptors, never following a symbolic link. A
directory swapped for a symbolic link at any moment is therefore either refused (``ELOOP``/``ENOTDIR``
while opening) or was opened before the swap and is still the real directory inside the worktree — no
write or removal can land outside it.

Writes are atomic per file, as in ``beneath``: a temporary file in the same directory, ``fsync``-ed, then
linked into place (a new file: fails if the name is taken) or renamed over the old one. If any step of
:meth:`commit` fails, every step already made is undone in reverse order (old content and permission
bits put back, new files and directories removed) before the error is raised; if undoing fails too, the
error says the worktree may be partly changed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from codeflux.domain.errors import CodefluxError, PathNotFoundError, PathRefusedError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.worker.tools.beneath import open_directory_beneath

__all__ = ["FileChanges", "FileState"]

_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

Parts = tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileState:
    """A regular file's bytes and permission bits."""

    data: bytes
    mode: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _Planned:
    state: FileState | None  # None: the file is removed
    new_file_mode: bool  # a new file: ``mode`` is passed to open(2), so the umask applies


class FileChanges:
    """Reads of the worktree as the staged changes leave it, then one all-or-nothing :meth:`commit`.

    Use as a context manager: the directory descriptors it opens are closed when the block ends.
    """

    def __init__(self, root: Path, *, max_bytes: int) -> None:
        self._root = root
        self._max_bytes = max_bytes
        self._stack = contextlib.ExitStack()
        self._directories: dict[Parts, int] = {}
        self._initial: dict[Parts, FileState | None] = {}
        self._planned: dict[Parts, _Planned] = {}
        self._undo: list[Callable[[], object]] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stack.close()

    # ------------------------------------------------------------------------------------------ reading

    def read(self, parts: Parts) -> FileState | None:
        """The file at ``parts`` as the staged changes leave it; None when there is none."""
        if parts in self._planned:
            return self._planned[parts].state
        return self._read_initial(parts)

    def stage(self, parts: Parts, state: FileState | None, *, new_file_mode: bool = False) -> None:
        """Plan ``parts`` to hold ``state`` (None: removed). ``new_file_mode``: create it with ``state.mode``
        through the umask (0o666 or 0o777), as any new file is; otherwise the bits are set exactly."""
        initial = self._read_initial(parts)
        earlier = self._planned.get(parts)
        if initial is None and earlier is not None and earlier.new_file_mode:
            new_file_mode = True  # still a new file: edited again by a later section of the same patch
        self._planned[parts] = _Planned(state=state, new_file_mode=new_file_mode)

    def _read_initial(self, parts: Parts) -> FileState | None:
        if parts not in self._initial:
            directory = self._directory(parts[:-1], create=False)
            self._initial[parts] = None if directory is None else _read_file(directory, parts[-1], self._max_bytes)
        return self._initial[parts]

    # ------------------------------------------------------------------------------------------ writing

    def commit(self) -> None:
        """Make every staged change, removals first; on any failure undo them all, then raise."""
        removals = [parts for parts, planned in self._planned.items()
                    if planned.state is None and self._initial[parts] is not None]
        writes = [(parts, planned) for parts, planned in self._planned.items()
                  if planned.state is not None and planned.state != self._initial[parts]]
        try:
            for parts in removals:
                self._remove(parts)
            self._prune_emptied(removals, keep={parts[:-1] for parts, _ in writes})
            for parts, planned in writes:
                self._write(parts, planned)
            for descriptor in self._directories.values():
                os.fsync(descriptor)
        except (OSError, CodefluxError) as error:
            failed = self._roll_back()
            raise _commit_failure(error, undone=not failed) from None
        self._undo.clear()

    def _remove(self, parts: Parts) -> None:
        before = self._initial[parts]
        directory = self._directory(parts[:-1], create=False)
        if directory is None or before is None:
            raise ToolFailedError(failure_kind=FailureKind.NOT_FOUND, message="a file to remove is gone")
        _require_regular(directory, parts[-1])
        os.unlink(parts[-1], dir_fd=directory)
        # The directory is looked up again when undoing: undoing a prune may have made it anew.
        self._undo.append(lambda: _place(self._open(parts[:-1]), parts[-1], before, create=True, exact_mode=True))

    def _prune_emptied(self, removals: list[Parts], *, keep: set[Parts]) -> None:
        """Remove directories a removal left empty, as git does (never one a write still needs)."""
        needed = {parts[:depth] for parts in keep for depth in range(len(parts) + 1)}
        candidates = {parts[:depth] for parts in removals for depth in range(1, len(parts))} - needed
        for directory in sorted(candidates, key=len, reverse=True):
            parent = self._directory(directory[:-1], create=False)
            if parent is None:
                continue
            try:
                os.rmdir(directory[-1], dir_fd=parent)
            except OSError:
                continue  # not empty (or not ours to remove): it stays
            self._directories.pop(directory, None)
            self._undo.append(functools.partial(self._make_directory, directory, undoable=False))

    def _write(self, parts: Parts, planned: _Planned) -> None:
        state = planned.state
        if state is None:
            return
        before = self._initial[parts]
        directory = self._directory(parts[:-1], create=True)
        if directory is None:  # create=True always opens one; kept for the type checker
            raise PathRefusedError(reason="a parent directory cannot be created")
        name = parts[-1]
        if before is None:
            _place(directory, name, state, create=True, exact_mode=not planned.new_file_mode)
            self._undo.append(lambda: _remove_if_regular(directory, name))
        else:
            _require_regular(directory, name)
            _place(directory, name, state, create=False, exact_mode=True)
            self._undo.append(lambda: _place(directory, name, before, create=False, exact_mode=True))

    def _roll_back(self) -> list[BaseException]:
        failures: list[BaseException] = []
        while self._undo:
            step = self._undo.pop()
            try:
                step()
            except (OSError, CodefluxError) as error:
                failures.append(error)
        return failures

    # -------------------------------------------------------------------------------------- directories

    def _directory(self, parts: Parts, *, create: bool) -> int | None:
        """The descriptor of directory ``parts``, opened once; None if it is missing and not ``create``.

        Each directory is opened relative to its parent's descriptor with ``O_NOFOLLOW``; one created
        here is removed again (if still empty) when the change set is undone.
        """
        if parts in self._directories:
            return self._directories[parts]
        if not parts:
            descriptor = self._stack.enter_context(open_directory_beneath(self._root, ()))
            self._directories[parts] = descriptor
            return descriptor
        parent = self._directory(parts[:-1], create=create)
        if parent is None:
            return None
        try:
            os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            if not create:
                return None
            return self._make_directory(parts)
        return self._open(parts)

    def _make_directory(self, parts: Parts, *, undoable: bool = True) -> int:
        parent = self._open(parts[:-1])
        os.mkdir(parts[-1], 0o777, dir_fd=parent)
        if undoable:
            self._undo.append(lambda: _remove_empty_directory(parent, parts[-1]))
        self._directories.pop(parts, None)
        return self._open(parts)

    def _open(self, parts: Parts) -> int:
        """The cached descriptor of an existing directory, else opened now beneath its parent's."""
        if parts in self._directories:
            return self._directories[parts]
        if not parts:
            found = self._directory(parts, create=False)
            if found is None:
                raise PathRefusedError(reason="the worktree cannot be opened")
            return found
        parent = self._open(parts[:-1])
        try:
            descriptor = os.open(parts[-1], _DIRECTORY_FLAGS, dir_fd=parent)
        except OSError as error:
            raise _refused(error, "a parent directory") from None
        self._stack.callback(os.close, descriptor)
        self._directories[parts] = descriptor
        return descriptor


# ------------------------------------------------------------------------------------ file operations


def _read_file(directory: int, name: str, max_bytes: int) -> FileState | None:
    try:
        descriptor = os.open(name, _READ_FLAGS, dir_fd=directory)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _refused(error, name) from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message=f"{name} is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ToolFailedError(failure_kind=FailureKind.TOO_LARGE, message=f"{name} is over {max_bytes} bytes")
    return FileState(data=data, mode=stat.S_IMODE(info.st_mode))


def _place(directory: int, name: str, state: FileState, *, create: bool, exact_mode: bool) -> None:
    """Write ``state`` to ``name`` through a temporary file: linked in (``create``) or renamed over."""
    temporary = f".cfw-{secrets.token_hex(8)}.tmp"
    try:
        descriptor = os.open(temporary, _TEMP_FLAGS, state.mode if not exact_mode else 0o600, dir_fd=directory)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(state.data)
            handle.flush()
            if exact_mode:
                os.fchmod(handle.fileno(), state.mode)
            os.fsync(handle.fileno())
        if create:
            os.link(temporary, name, src_dir_fd=directory, dst_dir_fd=directory, follow_symlinks=False)
        else:
            os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=directory)


def _require_regular(directory: int, name: str) -> None:
    info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise PathRefusedError(reason="is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message=f"{name} is not a regular file")


def _remove_if_regular(directory: int, name: str) -> None:
    _require_regular(directory, name)
    os.unlink(name, dir_fd=directory)


def _remove_empty_directory(parent: int, name: str) -> None:
    with contextlib.suppress(OSError):  # not empty any more: someone else's now
        os.rmdir(name, dir_fd=parent)


def _refused(error: OSError, name: str) -> CodefluxError:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return PathRefusedError(reason=f"{name} is a symbolic link or not a directory")
    if error.errno == errno.EISDIR:
        return ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message=f"{name} is a directory")
    return ToolFailedError(failure_kind=FailureKind.IO_ERROR,
                           message=f"the file system refused ({errno.errorcode.get(error.errno or 0, 'error')})")


def _commit_failure(error: BaseException, *, undone: bool) -> CodefluxError:
    if isinstance(error, PathNotFoundError):
        kind, reason = FailureKind.NOT_FOUND, f"a path is gone ({error.reason})"
    elif isinstance(error, PathRefusedError):
        kind, reason = FailureKind.PATCH_REFUSED, f"a path was refused ({error.reason})"
    elif isinstance(error, ToolFailedError):
        kind, reason = FailureKind(error.failure_kind), error.message
    elif isinstance(error, FileExistsError):
        kind, reason = FailureKind.ALREADY_EXISTS, "a file appeared where the patch creates one"
    elif isinstance(error, OSError):
        refusal = _refused(error, "a path")
        kind = FailureKind.PATCH_REFUSED if isinstance(refusal, PathRefusedError) else FailureKind.IO_ERROR
        reason = str(refusal)
    else:
        kind, reason = FailureKind.IO_ERROR, "an unexpected failure"
    if undone:
        return ToolFailedError(failure_kind=kind, message=f"nothing was changed: {reason}")
    return ToolFailedError(failure_kind=FailureKind.IO_ERROR,
                           message=f"the patch was applied in part and could not be undone: {reason}")
