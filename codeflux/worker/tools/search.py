"""``glob`` and ``grep``: finding files and text in the worktree, in pure Python, bounded.

Both walk with :class:`~codeflux.worker.tools.walk.Walk` (no symlink is followed, ``.git`` is skipped)
and stop at their result bounds, saying so: a result shows its head (from ``offset``) and says which of
how many it shows and the ``offset`` that continues. ``grep`` skips binary files (a NUL byte in the first 8 KiB)
and files over its size bound, reads every file through ``beneath`` (``O_NOFOLLOW``), and checks the
deadline and the cancel signal between files. A pathological regular expression inside one line cannot
be interrupted in-process; the coordinator's own deadline then kills the worker (``worker-unresponsive``).
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from typing import Final

from codeflux.domain.errors import PathRefusedError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import GREP_DEFAULT_RESULTS, GREP_MAX_LINE_CHARS, BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import flag_argument, integer_argument, required_text, text_argument
from codeflux.worker.tools.beneath import read_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.globbing import compile_glob
from codeflux.worker.tools.lines import cut_line, split_lines
from codeflux.worker.tools.reading import directory_components, listed_result
from codeflux.worker.tools.results import ToolResult, succeeded_result
from codeflux.worker.tools.walk import EntryKind, Walk, WalkEntry

__all__ = ["glob_files", "grep_files"]

_MAX_WALKED: Final = 100_000
_MAX_GLOB_RESULTS: Final = 5_000
_DEFAULT_GREP_RESULTS: Final = GREP_DEFAULT_RESULTS
_MAX_LINE_SHOWN: Final = GREP_MAX_LINE_CHARS
_BINARY_PROBE: Final = 8 * 1024
_NOTE_ROOM: Final = 400  # bytes of the output cap kept for the note that ends a cut result
_GREP_FILE_FACTOR: Final = 4


def glob_files(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Worktree-relative paths under ``path`` (default: the root) whose path below it matches ``pattern``,
    from ``offset`` (default 0) while they fit the output cap; the message says which of how many."""
    matcher = compile_glob(required_text(request, "pattern"))
    base = directory_components(context, text_argument(request, "path"))
    offset = integer_argument(request, "offset") or 0
    walk = Walk(context.worktree, base, recursive=True, max_entries=_MAX_WALKED)
    found: list[str] = []
    for walked, entry in enumerate(walk):
        if walked % 1000 == 999:
            context.check_still_running()
        if matcher.match(_below(entry, base)):
            found.append(f"{entry.relative}/\n" if entry.kind is EntryKind.DIRECTORY else f"{entry.relative}\n")
            if len(found) >= offset + _MAX_GLOB_RESULTS:
                break
    complete = len(found) < offset + _MAX_GLOB_RESULTS and not walk.stopped_early
    return listed_result(found, offset=offset, complete=complete, tool="glob", noun="matching paths",
                         narrow="narrow the pattern or the path", context=context)


def grep_files(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Lines matching a regular expression (or literal text), as ``path:line:text``.

    Matches are counted in walk order (files sorted by path, lines in order); the first ``offset`` are
    skipped, then up to ``max_results`` are shown while they fit the output cap. A line over
    :data:`_MAX_LINE_SHOWN` characters is cut visibly. The message says which matches are shown and, when
    more exist, the ``offset`` that continues.
    """
    regex = _compile_pattern(request)
    limit = integer_argument(request, "max_results") or _DEFAULT_GREP_RESULTS
    offset = integer_argument(request, "offset") or 0
    only = text_argument(request, "glob")
    matcher = compile_glob(only) if only is not None else None
    found = _Matches(offset=offset, limit=limit, budget=max(context.limits.max_output_bytes - _NOTE_ROOM, 1))
    candidates, walk_complete = _candidate_files(request, context)
    for relative in candidates:
        context.check_still_running()
        if matcher is not None and not matcher.match(relative[1]):
            continue
        text = _searchable_text(context, relative[0])
        if text is None:
            continue
        found.searched += 1
        for number, raw in enumerate(split_lines(text), start=1):
            line = raw.removesuffix("\r")
            if regex.search(line) and not found.add(f"{relative[0]}:{number}:{cut_line(line, _MAX_LINE_SHOWN)}\n"):
                break
        if found.more:
            break
    message = found.message(walk_complete=walk_complete, cap=context.limits.max_output_bytes)
    content = "".join(found.shown)
    if found.shown and (found.more or not walk_complete):
        content += f"[codeflux: {message}]\n"
    return succeeded_result(message, content=content, max_bytes=context.limits.max_output_bytes)


class _Matches:
    """grep's matches: the ones skipped, the ones shown, and whether more exist past them."""

    def __init__(self, *, offset: int, limit: int, budget: int) -> None:
        self.offset, self.limit, self.budget = offset, limit, budget
        self.seen = 0
        self.shown: list[str] = []
        self.used = 0
        self.searched = 0
        self.more = False
        self.full = False

    def add(self, line: str) -> bool:
        """Count one match; False once a match was found past what can be shown (stop searching)."""
        self.seen += 1
        if self.seen <= self.offset:
            return True
        size = len(line.encode("utf-8"))
        if len(self.shown) >= self.limit or (self.shown and self.used + size > self.budget):
            self.full = len(self.shown) < self.limit
            self.more = True
            return False
        self.shown.append(line)
        self.used += size
        return True

    def message(self, *, walk_complete: bool, cap: int) -> str:
        searched = f"{self.searched:,} files searched"
        if not self.shown:
            message = (f"no matches past the first {self.offset:,} ({self.seen:,} in all; {searched})" if self.offset
                       else f"no matches ({searched})")
        elif not self.more and self.offset == 0:
            message = f"{len(self.shown):,} matches ({searched})"
        else:
            end = self.offset + len(self.shown)
            message = f"showing matches {self.offset + 1:,}–{end:,}"
            if self.more:
                why = f"no more fit the {cap:,}-byte output limit" if self.full else f"max_results={self.limit}"
                message += (f"; more matches exist ({why}): call grep with offset={end} for the next ones, or narrow"
                            " the path or glob")
            else:
                message += f" of {self.seen:,} ({searched})"
        if not walk_complete:
            message += f"; the search stopped after {_MAX_WALKED:,} entries: narrow the path"
        return message


def _compile_pattern(request: BoundToolRequest) -> re.Pattern[str]:
    pattern = required_text(request, "pattern")
    if flag_argument(request, "fixed_string"):
        pattern = re.escape(pattern)
    flags = re.IGNORECASE if flag_argument(request, "ignore_case") else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        raise ToolFailedError(failure_kind=FailureKind.INVALID_PATTERN,
                              message="the pattern is not a valid regular expression") from None


def _candidate_files(request: BoundToolRequest, context: ToolContext) -> tuple[list[tuple[str, str]], bool]:
    """(worktree-relative path, path below the searched directory) of every regular file to search, and
    whether the walk saw every entry."""
    path = text_argument(request, "path")
    if path is not None:
        resolved = resolve_worktree_path(context.worktree, path, must_exist=True)
        if not stat.S_ISDIR(os.lstat(resolved).st_mode):
            relative = "/".join(resolved.relative_to(context.worktree).parts)
            return [(relative, resolved.name)], True
    base = directory_components(context, path)
    walk = Walk(context.worktree, base, recursive=True, max_entries=_MAX_WALKED)
    files = [(entry.relative, _below(entry, base)) for entry in walk if entry.kind is EntryKind.FILE]
    return files, not walk.stopped_early


def _searchable_text(context: ToolContext, relative: str) -> str | None:
    try:
        file = read_file_beneath(context.worktree, relative.split("/"),
                                 max_bytes=context.limits.max_file_bytes * _GREP_FILE_FACTOR)
    except (ToolFailedError, PathRefusedError):
        return None  # too large, vanished, or swapped for a symlink since the walk: not searched
    if b"\x00" in file.data[:_BINARY_PROBE]:
        return None
    return file.data.decode("utf-8", errors="replace")


def _below(entry: WalkEntry, base: tuple[str, ...]) -> str:
    return entry.relative.split("/", len(base))[-1] if base else entry.relative
