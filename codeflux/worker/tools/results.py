"""The result a tool hands back: a state, a stable failure kind, one safe message and capped content."""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.redact import redact

__all__ = ["ToolResult", "cap_text", "failed_result", "succeeded_result"]


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


def cap_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` cut to at most ``max_bytes`` of UTF-8 (on a character boundary), and whether it was cut."""
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= max_bytes:
        return text, False
    return encoded[:max_bytes].decode("utf-8", errors="ignore"), True


def succeeded_result(message: str, *, content: str = "", max_bytes: int, content_sha256: str = "") -> ToolResult:
    """A SUCCEEDED result whose content is pattern-redacted, then capped to ``max_bytes``."""
    capped, truncated = cap_text(redact(content), max_bytes)
    return ToolResult(
        state=ExecutionState.SUCCEEDED,
        message=message,
        content=capped,
        content_truncated=truncated,
        content_sha256=content_sha256,
    )


def failed_result(kind: FailureKind | str, message: str) -> ToolResult:
    """A FAILED result (or CANCELLED, for the ``cancelled`` kind) with one safe message."""
    state = ExecutionState.CANCELLED if kind == FailureKind.CANCELLED else ExecutionState.FAILED
    return ToolResult(state=state, failure_kind=str(kind), message=message)
