"""How much of a model's context window a request takes: an estimate, and the room it must leave.

codeflux has no provider tokenizer (counting through a provider's endpoint is a call of its own), so the
size of a request is **estimated** from its UTF-8 bytes: :func:`estimate_request_tokens` counts one token
per :data:`BYTES_PER_TOKEN` bytes of every text the request carries — the system text, each tool's name,
description and JSON schema, every message part (text, thinking and its signature, tool-call arguments,
tool results) — plus a fixed overhead per message and per request for the role and formatting tokens.
Three bytes a token is on the safe side of what code and English text take with the providers'
tokenizers (about four bytes a token for English prose, fewer for code and JSON): the estimate is meant
to run high rather than low. It is an estimate, not a count; the provider's answer is the fact, and a
provider that still says "too long" is handled as such (the loop compacts and asks once more).

A request fits a window of ``window`` tokens when its estimated input plus its output bound (the
output counts against the same window) is at most ``window`` (:func:`fits_window`).
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.models import ModelRequest, ReasoningPart, TextPart, ToolCall, ToolResult

__all__ = ["BYTES_PER_TOKEN", "estimate_request_tokens", "estimate_text_tokens", "fits_window"]

BYTES_PER_TOKEN: Final = 3
_MESSAGE_OVERHEAD: Final = 8
_REQUEST_OVERHEAD: Final = 32


def estimate_text_tokens(text: str) -> int:
    """The estimated tokens of ``text``: its UTF-8 bytes over :data:`BYTES_PER_TOKEN`, rounded up."""
    return -(-len(text.encode("utf-8", "replace")) // BYTES_PER_TOKEN)


def estimate_request_tokens(request: ModelRequest) -> int:
    """The estimated input tokens of ``request`` (see the module docstring)."""
    size = len(request.system.encode("utf-8", "replace"))
    for tool in request.tools:
        size += sum(len(text.encode("utf-8", "replace"))
                    for text in (tool.name, tool.description, tool.input_schema_json))
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                size += len(part.text.encode("utf-8", "replace"))
            elif isinstance(part, ReasoningPart):
                size += len(part.text.encode("utf-8", "replace")) + len(part.signature.encode("utf-8", "replace"))
            elif isinstance(part, ToolCall):
                size += sum(len(text.encode("utf-8", "replace"))
                            for text in (part.call_id, part.name, part.arguments_json))
            elif isinstance(part, ToolResult):
                size += len(part.call_id.encode("utf-8", "replace")) + len(part.content.encode("utf-8", "replace"))
    return -(-size // BYTES_PER_TOKEN) + _REQUEST_OVERHEAD + _MESSAGE_OVERHEAD * len(request.messages)


def fits_window(request: ModelRequest, window: int) -> bool:
    """Whether ``request`` (estimated input plus its output bound) fits a window of ``window`` tokens."""
    return estimate_request_tokens(request) + request.max_output_tokens <= window
