"""The result a tool hands back: a state, a stable failure kind, one safe message and capped content."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.domain.truncation import line_count, more_note
from codeflux.redact import redact

__all__ = ["ToolResult", "failed_result", "head_within", "succeeded_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """How one tool execution ended, before it is put on the wire.

    ``content`` is what the model reads (file text, a listing, a diff), already capped and
    pattern-redacted; ``content_sha256`` is the sha256 of the file read or written, when there is one.
    """

    state: ExecutionState
    message: str
    failure_kind: str = ""
    exit_code: int = 0
    content: str = ""
    content_truncated: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    content_sha256: str = ""


def head_within(text: str, max_bytes: int, *, hint: str | Callable[[str], str], hint_room: int = 0) -> tuple[str, bool]:
    """``text`` when its UTF-8 fits ``max_bytes``; otherwise its head (cut after a whole line when one ends
    in the second half of the room) and a note saying how much is not shown and the hint (how to get
    it), all within ``max_bytes``. Returns the text and whether it was cut.

    ``hint`` may be a function of the head kept; it must then return at most ``hint_room`` bytes."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    reserve = len(hint.encode("utf-8")) if isinstance(hint, str) else hint_room
    room = max(max_bytes - reserve - _NOTE_BYTES, 0)
    head = data[:room].decode("utf-8", errors="ignore")
    newline = head.rfind("\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    rest = text[len(head):]
    said = hint if isinstance(hint, str) else hint(head)
    separator = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{separator}{more_note(len(rest), line_count(rest), said, after_cut_line=bool(separator))}\n", True


_NOTE_BYTES = 150  # the note's fixed text, two numbers, a cut line's words and its newlines
_OVER_CAP = "the result is longer than the tool's output limit"


def succeeded_result(message: str, *, content: str = "", max_bytes: int, content_sha256: str = "") -> ToolResult:
    """A SUCCEEDED result whose content is pattern-redacted, then capped to ``max_bytes`` (its head, with a
    note saying what was not shown; the tools fit their content themselves, so this is a backstop)."""
    capped, truncated = head_within(redact(content), max_bytes, hint=_OVER_CAP)
    return ToolResult(
        state=ExecutionState.SUCCEEDED,
        message=message,
        content=capped,
        content_truncated=truncated,
        content_sha256=content_sha256,
    )


def failed_result(kind: FailureKind | str, message: str, *, content: str = "", max_bytes: int = 0) -> ToolResult:
    """A FAILED result (or CANCELLED, for the ``cancelled`` kind) with one safe message; ``content`` (what
    was nearby, for the model) is pattern-redacted, then capped to ``max_bytes``."""
    state = ExecutionState.CANCELLED if kind == FailureKind.CANCELLED else ExecutionState.FAILED
    capped, truncated = head_within(redact(content), max_bytes, hint=_OVER_CAP) if content else ("", False)
    return ToolResult(state=state, failure_kind=str(kind), message=message, content=capped,
                      content_truncated=truncated)
