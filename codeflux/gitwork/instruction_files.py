"""Reading a repository's instruction files from a checkout (or any directory holding its files), safely.

Each configured path is resolved inside ``root``: a symbolic link may point elsewhere *inside* the
repository, never out of it (nor into ``.git``); only a regular file is read; at most
:data:`~codeflux.domain.instructions.MAX_INSTRUCTION_FILE_BYTES` bytes; content that is not UTF-8 is
reported as such with its sha256 (it can be neither approved nor sent). Nothing here writes or runs anything.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from codeflux.domain.instructions import MAX_INSTRUCTION_FILE_BYTES, InstructionFile, ReadProblem

__all__ = ["read_instruction_file", "read_instruction_files"]


def _problem(path: str, problem: ReadProblem, *, data: bytes | None = None, size: int | None = None) -> InstructionFile:
    digest = None if data is None else hashlib.sha256(data).hexdigest()
    return InstructionFile(path=path, sha256=digest, size=size, text=None, problem=problem)


def read_instruction_file(root: Path, path: str) -> InstructionFile:
    """``path`` (repository-relative, already validated) as found under ``root``; never raises for what
    the file is (missing, a directory, a link out of the repository, too large, not UTF-8)."""
    top = Path(os.path.realpath(root))
    target = Path(os.path.realpath(top.joinpath(*path.split("/"))))
    if not target.is_relative_to(top) or ".git" in target.relative_to(top).parts:
        return _problem(path, ReadProblem.OUTSIDE)
    try:
        descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return _problem(path, ReadProblem.MISSING)
    except OSError:
        return _problem(path, ReadProblem.UNREADABLE)
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        return _problem(path, ReadProblem.NOT_A_FILE)
    with os.fdopen(descriptor, "rb") as handle:
        if status.st_size > MAX_INSTRUCTION_FILE_BYTES:
            return _problem(path, ReadProblem.TOO_LARGE, size=status.st_size)
        try:
            data = handle.read(MAX_INSTRUCTION_FILE_BYTES + 1)
        except OSError:
            return _problem(path, ReadProblem.UNREADABLE)
    if len(data) > MAX_INSTRUCTION_FILE_BYTES:
        return _problem(path, ReadProblem.TOO_LARGE, size=len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _problem(path, ReadProblem.NOT_UTF8, data=data, size=len(data))
    return InstructionFile(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data), text=text,
                           problem=None)


def read_instruction_files(root: Path, paths: Iterable[str]) -> list[InstructionFile]:
    """Every configured path that exists under ``root`` in some form (missing ones are left out)."""
    found = [read_instruction_file(root, path) for path in paths]
    return [file for file in found if file.problem is not ReadProblem.MISSING]
