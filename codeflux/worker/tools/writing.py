"""``write_file``, ``edit_file`` and ``delete_file``: changing files of the task worktree, atomically.

Every path goes through the resolver, then ``beneath`` (``O_NOFOLLOW`` under directory descriptors).
``write_file`` creates a file (refusing an existing one) or, given ``expected_sha256``, replaces a file
whose current content has exactly that hash — a file changed since it was read is never overwritten.
``edit_file`` replaces ``old_text`` only when it occurs exactly once. Both write through a temporary file,
``fsync`` and an atomic rename, keep the file's permission bits, and refuse content over
``max_file_bytes``. ``delete_file`` removes one regular file (never a directory or a symlink).
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
from codeflux.worker.tools.reading import READ_SIZE_FACTOR
from codeflux.worker.tools.results import ToolResult, succeeded_result

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
    """Replace the one occurrence of ``old_text`` with ``new_text``; no match or several → failed."""
    parts = _components(context, required_text(request, "path"), must_exist=True)
    old_text = required_text(request, "old_text")
    new_text = required_text(request, "new_text")
    current = read_file_beneath(context.worktree, parts, max_bytes=context.limits.max_file_bytes)
    try:
        text = current.data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailedError(failure_kind=FailureKind.NOT_TEXT,
                              message="the file is not UTF-8 text; it cannot be edited by text") from None
    occurrences = _count_occurrences(text, old_text)
    if occurrences == 0:
        raise ToolFailedError(failure_kind=FailureKind.NO_MATCH, message="old_text does not occur in the file")
    if occurrences > 1:
        raise ToolFailedError(
            failure_kind=FailureKind.AMBIGUOUS_MATCH,
            message=f"old_text occurs {occurrences} times; include more context so it occurs once",
        )
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


def _count_occurrences(text: str, needle: str) -> int:
    """Occurrences of ``needle`` in ``text``, overlapping ones included ("aa" occurs twice in "aaa")."""
    count = 0
    position = text.find(needle)
    while position != -1:
        count += 1
        if count > 1_000:
            break
        position = text.find(needle, position + 1)
    return count
