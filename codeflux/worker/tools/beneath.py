"""File access strictly beneath the worktree: directory file descriptors and ``O_NOFOLLOW`` all the way.

:func:`~codeflux.worker.paths.resolve_worktree_path` refuses symlinks it sees; these functions make sure
nothing planted *after* that check is followed either. Each component is opened relative to its parent's
descriptor with ``O_NOFOLLOW`` (directories with ``O_DIRECTORY`` too), so a component swapped for a
symlink fails with ``ELOOP``/``ENOTDIR`` and is refused instead of followed.

Writes are atomic: a temporary file in the same directory, written, ``fsync``-ed, then ``os.link``-ed
into place (create: fails if the name exists) or ``os.replace``-d over the old file (update), and the
directory is ``fsync``-ed. A reader sees the old content or the new one, never a part.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.errors import PathNotFoundError, PathRefusedError, ToolFailedError
from codeflux.domain.execution import FailureKind

__all__ = [
    "FileRead",
    "delete_file_beneath",
    "open_directory_beneath",
    "read_file_beneath",
    "write_file_beneath",
]

_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRead:
    """The bytes of a regular file, its sha256 and its permission bits."""

    data: bytes
    sha256: str
    mode: int


@contextlib.contextmanager
def open_directory_beneath(root: Path, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``root/parts…`` opened one component at a time without following symlinks.

    With ``create``, missing directories are made (``mkdir`` relative to the parent descriptor).
    Closed when the ``with`` block ends.
    """
    try:
        descriptor = os.open(root, _DIRECTORY_FLAGS)
    except FileNotFoundError:
        raise PathNotFoundError(reason="the task worktree does not exist") from None
    try:
        for part in parts:
            child = _open_child_directory(descriptor, part, create=create)
            os.close(descriptor)
            descriptor = child
        yield descriptor
    finally:
        os.close(descriptor)


def _open_child_directory(parent: int, part: str, *, create: bool) -> int:
    try:
        try:
            return os.open(part, _DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise PathNotFoundError(reason="a parent directory does not exist") from None
            os.mkdir(part, 0o777, dir_fd=parent)
            return os.open(part, _DIRECTORY_FLAGS, dir_fd=parent)
    except OSError as error:
        raise _refusal(error, what="a parent component") from None


def _refusal(error: OSError, *, what: str) -> PathRefusedError:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return PathRefusedError(reason=f"{what} is a symbolic link or not a directory")
    if error.errno == errno.ENOENT:
        return PathNotFoundError()
    return PathRefusedError(reason=f"{what} cannot be opened ({errno.errorcode.get(error.errno or 0, 'error')})")


def read_file_beneath(root: Path, relative: Sequence[str], *, max_bytes: int) -> FileRead:
    """The content of the regular file ``root/relative…``; refused if it is a symlink, a directory,
    a device or larger than ``max_bytes``."""
    *parents, name = relative
    with open_directory_beneath(root, parents) as directory:
        try:
            descriptor = os.open(name, _READ_FLAGS, dir_fd=directory)
        except FileNotFoundError:
            raise PathNotFoundError() from None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PathRefusedError(reason="is a symbolic link") from None
            raise _io_failure(error) from None
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            os.close(descriptor)
            raise ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message="is not a regular file")
        with os.fdopen(descriptor, "rb") as handle:
            if info.st_size > max_bytes:
                raise ToolFailedError(
                    failure_kind=FailureKind.TOO_LARGE,
                    message=f"the file is {info.st_size} bytes; the limit is {max_bytes}",
                )
            data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ToolFailedError(failure_kind=FailureKind.TOO_LARGE, message=f"the file is over {max_bytes} bytes")
    return FileRead(data=data, sha256=hashlib.sha256(data).hexdigest(), mode=stat.S_IMODE(info.st_mode))


def write_file_beneath(root: Path, relative: Sequence[str], data: bytes, *, replace_mode: int | None) -> None:
    """Write ``data`` atomically to ``root/relative…``.

    ``replace_mode`` None creates a new file and fails with ``already-exists`` if the name is taken;
    otherwise the existing file is replaced and the new one gets ``replace_mode`` permission bits.
    Missing parent directories are created for a new file.
    """
    *parents, name = relative
    with open_directory_beneath(root, parents, create=replace_mode is None) as directory:
        temporary = f".cfw-{secrets.token_hex(8)}.tmp"
        try:
            descriptor = os.open(temporary, _TEMP_FLAGS, 0o666 if replace_mode is None else 0o600,
                                 dir_fd=directory)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                if replace_mode is not None:
                    os.fchmod(handle.fileno(), replace_mode)
                os.fsync(handle.fileno())
            if replace_mode is None:
                os.link(temporary, name, src_dir_fd=directory, dst_dir_fd=directory, follow_symlinks=False)
            else:
                _refuse_non_regular(directory, name)
                os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
            os.fsync(directory)
        except FileExistsError:
            raise ToolFailedError(
                failure_kind=FailureKind.ALREADY_EXISTS,
                message=("the file already exists and was not read (or changed since it was read): read it with "
                         "read_file first, then write it again; or change part of it with edit_file"),
            ) from None
        except OSError as error:
            raise _io_failure(error) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)


def delete_file_beneath(root: Path, relative: Sequence[str]) -> None:
    """Remove the regular file ``root/relative…``; a directory or a symlink is refused."""
    *parents, name = relative
    with open_directory_beneath(root, parents) as directory:
        _refuse_non_regular(directory, name)
        try:
            os.unlink(name, dir_fd=directory)
            os.fsync(directory)
        except FileNotFoundError:
            raise PathNotFoundError() from None
        except OSError as error:
            raise _io_failure(error) from None


def _refuse_non_regular(directory: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        raise PathNotFoundError() from None
    if stat.S_ISLNK(info.st_mode):
        raise PathRefusedError(reason="is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message="is not a regular file")


def _io_failure(error: OSError) -> ToolFailedError:
    name = errno.errorcode.get(error.errno or 0, "error")
    if error.errno == errno.EISDIR:
        return ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message="is a directory")
    if error.errno == errno.ENOSPC:
        return ToolFailedError(failure_kind=FailureKind.IO_ERROR, message="the disk is full; nothing was written")
    return ToolFailedError(failure_kind=FailureKind.IO_ERROR, message=f"the file system refused ({name})")
