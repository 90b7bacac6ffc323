"""``read_file`` and ``list_directory``: looking at the worktree without changing it."""

from __future__ import annotations

import os
import stat
from typing import Final, assert_never

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import READ_DEFAULT_LINES, BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path, resolve_worktree_root
from codeflux.worker.tools.arguments import flag_argument, integer_argument, required_text, text_argument
from codeflux.worker.tools.beneath import read_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.lines import MAX_LINE_CHARS, numbered, split_lines
from codeflux.worker.tools.results import ToolResult, succeeded_result
from codeflux.worker.tools.walk import EntryKind, Walk

__all__ = ["DEFAULT_READ_LINES", "READ_SIZE_FACTOR", "directory_components", "list_directory", "read_file"]

READ_SIZE_FACTOR: Final = 8
"""A file up to ``max_file_bytes × READ_SIZE_FACTOR`` can be read (a line range of a large file)."""

DEFAULT_READ_LINES: Final = READ_DEFAULT_LINES
"""Lines ``read_file`` shows when ``line_count`` is omitted (fewer when they do not fit the output cap)."""

_MAX_LISTED: Final = 10_000
_NOTE_ROOM: Final = 400  # bytes of the output cap kept for the note that ends a cut result


def read_file(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """A window of the file's lines, numbered ``cat -n`` style, and the whole file's sha256.

    The window starts at ``start_line`` (default 1) and holds ``line_count`` lines (default
    :data:`DEFAULT_READ_LINES`) — fewer when they would not fit the output cap, never a partial line (a
    line over :data:`~codeflux.worker.tools.lines.MAX_LINE_CHARS` characters is cut visibly). The message
    says which lines are shown of how many and, when lines follow, the ``start_line`` that continues; the
    content ends with the same note. The sha256 is what ``write_file`` needs as ``expected_sha256`` to
    replace the file. A file with a NUL byte is binary and refused (``not-text``); other undecodable
    bytes read as U+FFFD.
    """
    resolved = resolve_worktree_path(context.worktree, required_text(request, "path"), must_exist=True)
    parts = resolved.relative_to(context.worktree).parts
    file = read_file_beneath(context.worktree, parts, max_bytes=context.limits.max_file_bytes * READ_SIZE_FACTOR)
    if b"\x00" in file.data:
        raise ToolFailedError(failure_kind=FailureKind.NOT_TEXT, message="the file is binary (it holds NUL bytes)")
    lines = split_lines(file.data.decode("utf-8", errors="replace"))
    start = integer_argument(request, "start_line") or 1
    count = integer_argument(request, "line_count") or DEFAULT_READ_LINES
    window = _Window(budget=max(context.limits.max_output_bytes - _NOTE_ROOM, 1))
    for number in range(start, min(len(lines), start + count - 1) + 1):
        if not window.add(number, lines[number - 1]):
            break
    message = _read_message(window, start=start, total=len(lines), cap=context.limits.max_output_bytes)
    if any(line.endswith("\r") for line in lines[start - 1 : window.last]):
        message += "; the file has CRLF line endings (the \\r is not shown)"
    content = "".join(window.shown)
    if window.last < len(lines) and window.shown:
        content += f"[codeflux: {message}]\n"
    return succeeded_result(message, content=content, max_bytes=context.limits.max_output_bytes,
                            content_sha256=file.sha256)


class _Window:
    """Numbered lines taken while they fit ``budget`` bytes (the first one always)."""

    def __init__(self, *, budget: int) -> None:
        self.budget = budget
        self.shown: list[str] = []
        self.used = 0
        self.last = 0
        self.full = False
        self.long_lines = 0

    def add(self, number: int, line: str) -> bool:
        rendered = numbered(number, line)
        size = len(rendered.encode("utf-8"))
        if self.shown and self.used + size > self.budget:
            self.full = True
            return False
        self.shown.append(rendered)
        self.used += size
        self.last = number
        self.long_lines += len(line.removesuffix("\r")) > MAX_LINE_CHARS
        return True


def _read_message(window: _Window, *, start: int, total: int, cap: int) -> str:
    if total == 0:
        return "the file is empty (0 lines)"
    if not window.shown:
        return f"start_line={start} is past the end of the file: it has {total} lines"
    if start == 1 and window.last == total:
        message = f"lines 1–{total} of {total} (the whole file)"
    else:
        message = f"showing lines {start}–{window.last} of {total}"
        if window.last < total:
            message += f"; call read_file with start_line={window.last + 1} to continue"
            if window.full:
                message += f" (no more lines fit the {cap:,}-byte output limit)"
    if window.long_lines:
        message += (f"; {window.long_lines} of these lines are longer than {MAX_LINE_CHARS} characters and are cut"
                    " (grep can find text in them)")
    return message


def list_directory(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """The entries of a directory (recursively on request): ``dir/``, ``file``, ``link@`` (never followed).

    ``.git`` is never listed. Paths are relative to the worktree root. Entries from ``offset`` (default 0)
    are shown while they fit the output cap; the message says which of how many and the ``offset`` that
    continues.
    """
    parts = directory_components(context, text_argument(request, "path"))
    offset = integer_argument(request, "offset") or 0
    walk = Walk(context.worktree, parts, recursive=flag_argument(request, "recursive"),
                max_entries=offset + _MAX_LISTED)
    lines = [f"{_listing_line(entry.relative, entry.kind)}\n" for entry in walk]
    return listed_result(lines, offset=offset, complete=not walk.stopped_early, tool="list_directory",
                         noun="entries", narrow="list a sub-directory, or use glob", context=context)


def listed_result(lines: list[str], *, offset: int, complete: bool, tool: str, noun: str, narrow: str,
                  context: ToolContext) -> ToolResult:
    """The ``lines`` from ``offset`` that fit the output cap, and a message saying which of how many were
    shown (``at least`` when the walk stopped early) and how to see the rest."""
    budget = max(context.limits.max_output_bytes - _NOTE_ROOM, 1)
    shown: list[str] = []
    used = 0
    for line in lines[offset:]:
        size = len(line.encode("utf-8"))
        if shown and used + size > budget:
            break
        shown.append(line)
        used += size
    total = f"{len(lines):,}" if complete else f"at least {len(lines):,}"
    end = offset + len(shown)
    if offset == 0 and end == len(lines):
        message = f"{total} {noun}"
    elif not shown:
        message = f"offset={offset} is past the end: there are {total} {noun}"
    else:
        message = f"showing {noun} {offset + 1}–{end} of {total}"
    if end < len(lines):
        message += f"; call {tool} with offset={end} for the next ones, or {narrow}"
    elif not complete:
        message += f" (the walk stopped there; {narrow})"
    content = "".join(shown)
    if shown and (end < len(lines) or not complete):
        content += f"[codeflux: {message}]\n"
    return succeeded_result(message, content=content, max_bytes=context.limits.max_output_bytes)


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
