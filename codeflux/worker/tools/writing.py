"""``write_file``, ``edit_file`` and ``delete_file``: changing files of the task worktree, atomically.

Every path goes through the resolver, then ``beneath`` (``O_NOFOLLOW`` under directory descriptors).
``write_file`` creates a file (refusing an existing one) or, given ``expected_sha256``, replaces a file
whose current content has exactly that hash — a file changed since it was read is never overwritten.
``edit_file`` replaces ``old_text`` only when it occurs exactly once; otherwise it says what was nearby
(several matches with their lines, a match but for whitespace, the most similar region). Both write
through a temporary file, ``fsync`` and an atomic rename, keep the file's permission bits, and refuse
content over ``max_file_bytes``. ``delete_file`` removes one regular file (never a directory or a symlink).
"""

from __future__ import annotations

import hashlib
import hmac

from codeflux.domain.errors import PathNotFoundError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import required_text, text_argument
from codeflux.worker.tools.beneath import delete_file_beneath, read_file_beneath, write_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.edit_hints import ambiguous_match_hint, no_match_hint
from codeflux.worker.tools.reading import READ_SIZE_FACTOR
from codeflux.worker.tools.results import ToolResult, failed_result, succeeded_result

__all__ = ["delete_file", "edit_file", "write_file"]


def write_file(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Create the file, or replace it if its current sha256 is ``expected_sha256``."""
    data = _bounded_bytes(required_text(request, "content"), context)
    expected = text_argument(request, "expected_sha256")
    parts = _components(context, required_text(request, "path"), must_exist=expected is not None)
    if expected is None:
        write_file_beneath(context.worktree, parts, data, replace_mode=None)
        message = f"created the file ({len(data)} bytes)"
    else:
        try:
            current = read_file_beneath(context.worktree, parts,
                                        max_bytes=context.limits.max_file_bytes * READ_SIZE_FACTOR)
        except PathNotFoundError:
            raise ToolFailedError(failure_kind=FailureKind.NOT_FOUND,
                                  message="the file does not exist; omit expected_sha256 to create it") from None
        if not hmac.compare_digest(current.sha256, expected):
            raise ToolFailedError(
                failure_kind=FailureKind.CONTENT_MISMATCH,
                message="the file changed since it was read (its sha256 differs); read it again",
            )
        write_file_beneath(context.worktree, parts, data, replace_mode=current.mode)
        message = f"replaced the file ({len(data)} bytes)"
    return succeeded_result(message, max_bytes=context.limits.max_output_bytes,
                            content_sha256=hashlib.sha256(data).hexdigest())


def edit_file(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Replace the one occurrence of ``old_text`` with ``new_text``; no match or several → failed, with what
    was nearby as the result's content (:mod:`~codeflux.worker.tools.edit_hints`)."""
    parts = _components(context, required_text(request, "path"), must_exist=True)
    old_text = required_text(request, "old_text")
    new_text = required_text(request, "new_text")
    current = read_file_beneath(context.worktree, parts, max_bytes=context.limits.max_file_bytes)
    try:
        text = current.data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailedError(failure_kind=FailureKind.NOT_TEXT,
                              message="the file is not UTF-8 text; it cannot be edited by text") from None
    starts = _occurrences(text, old_text)
    if not starts:
        hint = no_match_hint(text, old_text)
        return failed_result(FailureKind.NO_MATCH, hint.summary, content=hint.detail,
                             max_bytes=context.limits.max_output_bytes)
    if len(starts) > 1:
        hint = ambiguous_match_hint(text, old_text, starts)
        return failed_result(FailureKind.AMBIGUOUS_MATCH, hint.summary, content=hint.detail,
                             max_bytes=context.limits.max_output_bytes)
    data = _bounded_bytes(text.replace(old_text, new_text, 1), context)
    write_file_beneath(context.worktree, parts, data, replace_mode=current.mode)
    return succeeded_result(f"replaced 1 occurrence ({len(data)} bytes now)",
                            max_bytes=context.limits.max_output_bytes,
                            content_sha256=hashlib.sha256(data).hexdigest())


def delete_file(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Remove one regular file."""
    parts = _components(context, required_text(request, "path"), must_exist=True)
    delete_file_beneath(context.worktree, parts)
    return succeeded_result("deleted the file", max_bytes=context.limits.max_output_bytes)


def _components(context: ToolContext, relative: str, *, must_exist: bool) -> tuple[str, ...]:
    resolved = resolve_worktree_path(context.worktree, relative, must_exist=must_exist)
    return resolved.relative_to(context.worktree).parts


def _bounded_bytes(text: str, context: ToolContext) -> bytes:
    data = text.encode("utf-8")
    if len(data) > context.limits.max_file_bytes:
        raise ToolFailedError(
            failure_kind=FailureKind.TOO_LARGE,
            message=f"the content is {len(data)} bytes; the limit is {context.limits.max_file_bytes}",
        )
    return data


def _occurrences(text: str, needle: str) -> list[int]:
    """Where ``needle`` starts in ``text``, overlapping occurrences included ("aa" occurs twice in "aaa");
    at most 1,001 are looked for."""
    starts: list[int] = []
    position = text.find(needle)
    while position != -1 and len(starts) <= 1_000:
        starts.append(position)
        position = text.find(needle, position + 1)
    return starts
