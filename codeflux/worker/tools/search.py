"""``glob`` and ``grep``: finding files and text in the worktree, in pure Python, bounded.

Both walk with :class:`~codeflux.worker.tools.walk.Walk` (no symlink is followed, ``.git`` is skipped)
and stop at their result bounds, saying so. ``grep`` skips binary files (a NUL byte in the first 8 KiB)
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
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import flag_argument, integer_argument, required_text, text_argument
from codeflux.worker.tools.beneath import read_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.globbing import compile_glob
from codeflux.worker.tools.reading import directory_components
from codeflux.worker.tools.results import ToolResult, succeeded_result
from codeflux.worker.tools.walk import EntryKind, Walk, WalkEntry

__all__ = ["glob_files", "grep_files"]

_MAX_WALKED: Final = 100_000
_MAX_GLOB_RESULTS: Final = 5_000
_DEFAULT_GREP_RESULTS: Final = 200
_MAX_LINE_SHOWN: Final = 500
_BINARY_PROBE: Final = 8 * 1024
_GREP_FILE_FACTOR: Final = 4


def glob_files(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Worktree-relative paths under ``path`` (default: the root) whose path below it matches ``pattern``."""
    matcher = compile_glob(required_text(request, "pattern"))
    base = directory_components(context, text_argument(request, "path"))
    walk = Walk(context.worktree, base, recursive=True, max_entries=_MAX_WALKED)
    found: list[str] = []
    for walked, entry in enumerate(walk):
        if walked % 1000 == 999:
            context.check_still_running()
        if matcher.match(_below(entry, base)):
            found.append(f"{entry.relative}/" if entry.kind is EntryKind.DIRECTORY else entry.relative)
            if len(found) >= _MAX_GLOB_RESULTS:
                break
    message = f"{len(found)} paths match"
    if len(found) >= _MAX_GLOB_RESULTS or walk.stopped_early:
        message += " (stopped early; narrow the pattern or the path)"
    return succeeded_result(message, content="".join(f"{line}\n" for line in found),
                            max_bytes=context.limits.max_output_bytes)


def grep_files(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Lines matching a regular expression (or literal text), as ``path:line:text``."""
    regex = _compile_pattern(request)
    limit = integer_argument(request, "max_results") or _DEFAULT_GREP_RESULTS
    only = text_argument(request, "glob")
    matcher = compile_glob(only) if only is not None else None
    matches: list[str] = []
    searched = 0
    for relative in _candidate_files(request, context):
        context.check_still_running()
        if matcher is not None and not matcher.match(relative[1]):
            continue
        text = _searchable_text(context, relative[0])
        if text is None:
            continue
        searched += 1
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                matches.append(f"{relative[0]}:{number}:{line[:_MAX_LINE_SHOWN]}")
                if len(matches) >= limit:
                    break
        if len(matches) >= limit:
            break
    message = f"{len(matches)} matches in {searched} files searched"
    if len(matches) >= limit:
        message += f" (stopped at {limit})"
    return succeeded_result(message, content="".join(f"{line}\n" for line in matches),
                            max_bytes=context.limits.max_output_bytes)


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


def _candidate_files(request: BoundToolRequest, context: ToolContext) -> list[tuple[str, str]]:
    """(worktree-relative path, path below the searched directory) of every regular file to search."""
    path = text_argument(request, "path")
    if path is not None:
        resolved = resolve_worktree_path(context.worktree, path, must_exist=True)
        if not stat.S_ISDIR(os.lstat(resolved).st_mode):
            relative = "/".join(resolved.relative_to(context.worktree).parts)
            return [(relative, resolved.name)]
    base = directory_components(context, path)
    walk = Walk(context.worktree, base, recursive=True, max_entries=_MAX_WALKED)
    return [(entry.relative, _below(entry, base)) for entry in walk if entry.kind is EntryKind.FILE]


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
