"""``read_file`` and ``list_directory``: looking at the worktree without changing it."""

from __future__ import annotations

import os
import stat
from typing import Final, assert_never

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path, resolve_worktree_root
from codeflux.worker.tools.arguments import flag_argument, integer_argument, required_text, text_argument
from codeflux.worker.tools.beneath import read_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.results import ToolResult, succeeded_result
from codeflux.worker.tools.walk import EntryKind, Walk

__all__ = ["READ_SIZE_FACTOR", "directory_components", "list_directory", "read_file"]

READ_SIZE_FACTOR: Final = 8
"""A file up to ``max_file_bytes × READ_SIZE_FACTOR`` can be read (a line range of a large file)."""

_MAX_LISTED: Final = 10_000


def read_file(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """The text of a file (or of ``line_count`` lines from ``start_line``) and the file's sha256.

    The sha256 is what ``write_file`` needs as ``expected_sha256`` to replace the file. A file with a
    NUL byte is binary and refused (``not-text``); other undecodable bytes read as U+FFFD.
    """
    resolved = resolve_worktree_path(context.worktree, required_text(request, "path"), must_exist=True)
    parts = resolved.relative_to(context.worktree).parts
    file = read_file_beneath(context.worktree, parts, max_bytes=context.limits.max_file_bytes * READ_SIZE_FACTOR)
    if b"\x00" in file.data:
        raise ToolFailedError(failure_kind=FailureKind.NOT_TEXT, message="the file is binary (it holds NUL bytes)")
    lines = file.data.decode("utf-8", errors="replace").splitlines(keepends=True)
    start = integer_argument(request, "start_line") or 1
    count = integer_argument(request, "line_count")
    selected = lines[start - 1 : None if count is None else start - 1 + count]
    if selected:
        message = f"lines {start}-{start + len(selected) - 1} of {len(lines)}"
    else:
        message = f"no lines from line {start}; the file has {len(lines)}"
    return succeeded_result(message, content="".join(selected), max_bytes=context.limits.max_output_bytes,
                            content_sha256=file.sha256)


def list_directory(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """The entries of a directory (recursively on request): ``dir/``, ``file``, ``link@`` (never followed).

    ``.git`` is never listed. Paths are relative to the worktree root.
    """
    parts = directory_components(context, text_argument(request, "path"))
    walk = Walk(context.worktree, parts, recursive=flag_argument(request, "recursive"), max_entries=_MAX_LISTED)
    lines = [_listing_line(entry.relative, entry.kind) for entry in walk]
    message = f"{len(lines)} entries" + (f" (stopped after {_MAX_LISTED})" if walk.stopped_early else "")
    return succeeded_result(message, content="".join(f"{line}\n" for line in lines),
                            max_bytes=context.limits.max_output_bytes)


def directory_components(context: ToolContext, relative: str | None) -> tuple[str, ...]:
    """The components of an optional directory argument (``()`` for the worktree root)."""
    if relative is None:
        resolve_worktree_root(context.worktree)  # the worktree must still exist
        return ()
    resolved = resolve_worktree_path(context.worktree, relative, must_exist=True)
    if not stat.S_ISDIR(os.lstat(resolved).st_mode):
        raise ToolFailedError(failure_kind=FailureKind.WRONG_FILE_TYPE, message="the path is not a directory")
    return resolved.relative_to(context.worktree).parts


def _listing_line(relative: str, kind: EntryKind) -> str:
    match kind:
        case EntryKind.DIRECTORY:
            return f"{relative}/"
        case EntryKind.SYMLINK:
            return f"{relative}@"
        case EntryKind.FILE:
            return relative
        case EntryKind.OTHER:
            return f"{relative}?"
        case _:
            assert_never(kind)
