"""Pinning ``run_command``'s program: where ``argv[0]`` resolves and the sha256 of what is there.

The driver pins the program when a request is submitted (it is part of the operation's identity); the
worker re-hashes the pinned file before it runs it, so a program swapped in between is refused there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.operations import ExecutablePin
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.executables import ExecutableDigests

__all__ = ["resolve_executable_pin"]


def resolve_executable_pin(
    program: str, *, worktree: Path, search_path: str, digests: ExecutableDigests | None = None
) -> ExecutablePin:
    """``argv[0]`` as the worker would run it: looked up on ``search_path`` (a bare name) or inside the
    worktree (a relative path, through the symlink-safe resolver) or taken as written (absolute); then
    its real path and content sha256. The worker re-hashes before exec, so a swap is refused there.
    ``digests`` keeps hashes of unchanged files between calls (see :class:`ExecutableDigests`).

    Raises :class:`ToolFailedError` (``command-not-found``, ``not-executable``) or
    :class:`PathRefusedError` (a relative program path that is not plainly inside the worktree).
    """
    if "/" not in program:
        found = _which(program, search_path)
        if found is None:
            raise ToolFailedError(failure_kind=FailureKind.COMMAND_NOT_FOUND.value,
                                  message="the program is not on the worker's PATH")
        candidate = Path(found)
    elif program.startswith("/"):
        candidate = Path(program)
    else:
        relative = "/".join(part for part in program.split("/") if part not in {"", "."})
        candidate = resolve_worktree_path(worktree, relative, must_exist=True)
    try:
        real = os.path.realpath(candidate, strict=True)
        info = os.stat(real)
    except OSError:
        raise ToolFailedError(failure_kind=FailureKind.COMMAND_NOT_FOUND.value,
                              message="the program does not exist") from None
    if not stat.S_ISREG(info.st_mode) or not os.access(real, os.X_OK):
        raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE.value,
                              message="the program is not an executable file")
    if digests is None:
        digests = ExecutableDigests(capacity=0)
    return ExecutablePin(path=real, sha256=_sha256_of_program(real, digests))


def _which(program: str, search_path: str) -> str | None:
    """``shutil.which(program, path=search_path)`` for a bare name on POSIX, cheaper: the first
    ``directory/program`` in ``search_path`` order (repeated directories tried once) that is executable
    (``access(X_OK)``, which also fails fast for a missing file), exists and is not a directory."""
    if not search_path:
        return None
    seen: set[str] = set()
    for directory in search_path.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, program)
        try:
            if not os.access(candidate, os.X_OK):
                continue
            info = os.stat(candidate)
        except (OSError, ValueError):
            continue
        if not stat.S_ISDIR(info.st_mode):
            return candidate
    return None


def _sha256_of_program(path: str, digests: ExecutableDigests) -> str:
    # O_NONBLOCK: a file swapped for a FIFO after the check above must not block the coordinator.
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        raise ToolFailedError(failure_kind=FailureKind.COMMAND_NOT_FOUND.value,
                              message="the program does not exist") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE.value,
                                  message="the program is not an executable file")
        # The digest of an unchanged file (same path, device, inode, size, mtime, ctime on this fstat)
        # is kept; a file object is built only to hash.
        known = digests.cached(path, info)
        if known is not None:
            return known
        with open(descriptor, "rb", closefd=False) as handle:
            try:
                return digests.sha256_of(path, handle, info)
            except OSError:
                raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE.value,
                                      message="the program cannot be read") from None
    finally:
        os.close(descriptor)
