"""The OpenAI Responses API wire (``POST {base}/responses``): request building and reply parsing.

Used for the models whose row in the capability table says ``wire = responses``
(:mod:`codeflux.providers.capabilities`; e.g. ``gpt-5-codex``, which OpenAI serves only there); every
other OpenAI model keeps Chat Completions. Stateless: ``store: false`` and no ``previous_response_id``,
so every request carries the whole conversation like the other adapters. The system prompt is sent as
``instructions``; user text as ``input_text`` messages, assistant text as ``output_text`` messages, tool
calls as ``function_call`` items and tool results as ``function_call_output`` items (an error result is
prefixed ``error:`` as on Chat Completions). ``reasoning.effort`` goes only to reasoning models, as
``reasoning_effort`` does on Chat Completions.

Reasoning across turns, statelessly: requests to a reasoning model ask for ``include:
["reasoning.encrypted_content"]`` (stateless responses carry it anyway on newer models; the API keeps accepting
the value), and each ``reasoning`` output item that has ``encrypted_content`` becomes a
:class:`~codeflux.domain.models.ReasoningPart` (``item_id`` the item's id, ``text`` its summary texts joined by a
blank line, ``signature`` the encrypted content). The next request sends it back in its place among the turn's
items as ``{"type": "reasoning", "id", "summary", "encrypted_content"}`` — OpenAI's reasoning guide: pass back
the reasoning items with the function calls they led to. Anthropic thinking blocks (no ``item_id``) are never
sent here, nor OpenAI's reasoning to Anthropic; a reasoning item without encrypted content cannot be sent
back without stored state and is dropped.

Replies: ``output`` items of type ``message`` (``output_text`` and ``refusal`` parts) become text,
``function_call`` items tool calls, ``reasoning`` items reasoning parts (above); other items (server tools) are
not parts. The stop reason
is ``tool-use`` when a function call came back, ``max-tokens`` for an ``incomplete`` response cut at
``max_output_tokens``, ``end-turn`` for ``completed``, else ``other``.

Usage: ``input_tokens`` includes ``input_tokens_details.cached_tokens`` (cache reads) and
``input_tokens_details.cache_write_tokens`` (cache writes, billed by newer models); uncached input is the
rest. As on Chat Completions for OpenAI's own endpoint, a reply without ``cached_tokens`` leaves cache
reads *unknown* (every input token counted as input); a missing ``cache_write_tokens`` is unknown too, which
costs nothing where the price's cache-write rate is 0. ``output_tokens`` includes
``output_tokens_details.reasoning_tokens``.

Streaming: ``response.output_text.delta`` events are passed on as they arrive, and the reply is read from
the final ``response.completed`` (or ``response.incomplete``) event's response object, so a streamed
reply is parsed exactly as a JSON one. ``response.failed`` or ``error`` events, or a stream that ends
without a final response, have an unknown outcome.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from pydantic import Field

from codeflux.domain.errors import ProviderOutcomeUnknownError, ProviderReplyInvalidError, ProviderRequestInvalidError
from codeflux.domain.models import (
    AssistantPart,
    Message,
    ModelReply,
    ModelRequest,
    ReasoningPart,
    Role,
    StopReason,
    TextPart,
    ToolCall,
    ToolResult,
)
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import capabilities_of, openai_reasoning_effort
from codeflux.providers.sse import iter_sse_events
from codeflux.providers.transport import ProviderResponse
from codeflux.providers.wire import StrictReply, TextSink, parse_reply

__all__ = ["ENCRYPTED_REASONING", "ResponsesWire"]

ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
"""The ``include`` value asking for reasoning items' encrypted content (how they go back without stored state)."""

_FINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete"})
_FAILED_EVENTS: Final = frozenset({"response.failed", "error"})


class _InputDetails(StrictReply):
    cached_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)


class _OutputDetails(StrictReply):
    reasoning_tokens: int | None = Field(default=None, ge=0)


class _Usage(StrictReply):
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


class _Content(StrictReply):
    type: str
    text: str | None = None
    refusal: str | None = None


class _Summary(StrictReply):
    type: str
    text: str | None = None


class _Item(StrictReply):
    type: str
    id: str | None = None
    content: list[_Content] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None


class _Incomplete(StrictReply):
    reason: str | None = None


class _Response(StrictReply):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    output: list[_Item] = Field(default_factory=list)
    incomplete_details: _Incomplete | None = None
    usage: _Usage | None = None


class _Event(StrictReply):
    type: str
    delta: str | None = None
    response: _Response | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesWire:
    """Request building and reply parsing for OpenAI's Responses API."""

    provider: str

    def request_body(self, request: ModelRequest, *, stream: bool) -> bytes:
        items: list[dict[str, object]] = []
        for message in request.messages:
            if message.is_blank:
                raise ProviderRequestInvalidError(provider=self.provider,
                                                  problem="an empty assistant turn is never sent")
            items.extend(_input_items(message))
        body: dict[str, object] = {
            "model": request.model,
            "input": items,
            "max_output_tokens": request.max_output_tokens,
            "store": False,
            "stream": stream,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [
                {"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema()}
                for t in request.tools
            ]
        effort = openai_reasoning_effort(request.model, request.effort)
        if effort is not None:
            body["reasoning"] = {"effort": effort}
        if _reasons(request.model):
            body["include"] = [ENCRYPTED_REASONING]
        return json.dumps(body, ensure_ascii=False).encode()

    def reply_from_json(self, body: bytes, request: ModelRequest, request_id: str | None) -> ModelReply:
        response = parse_reply(_Response, body, provider=self.provider, what="the reply")
        return self._reply(response, request, request_id)

    def reply_from_stream(
        self, response: ProviderResponse, request: ModelRequest, request_id: str | None, on_text: TextSink, *,
        max_stream_bytes: int, max_event_bytes: int,
    ) -> ModelReply:  # fmt: skip
        chunks = response.chunks(limit=max_stream_bytes)
        for sse in iter_sse_events(chunks, provider=self.provider, max_event_bytes=max_event_bytes):
            event = parse_reply(_Event, sse.data, provider=self.provider, what="a stream event")
            if event.type == "response.output_text.delta" and event.delta:
                on_text(event.delta)
            elif event.type in _FINAL_EVENTS and event.response is not None:
                return self._reply(event.response, request, request_id)
            elif event.type in _FAILED_EVENTS:
                raise ProviderOutcomeUnknownError(provider=self.provider, reason=f"the stream reported {event.type}")
        raise ProviderOutcomeUnknownError(provider=self.provider, reason="the stream ended before the final response")

    def _reply(self, response: _Response, request: ModelRequest, request_id: str | None) -> ModelReply:
        parts: list[AssistantPart] = []
        for item in response.output:
            if item.type == "message":
                text = "".join(c.text or c.refusal or "" for c in item.content or () if c.type in ("output_text",
                                                                                                   "refusal"))
                if text:
                    parts.append(TextPart(text=text))
            elif item.type == "function_call" and item.call_id and item.name:
                parts.append(ToolCall(call_id=item.call_id, name=item.name, arguments_json=item.arguments or "{}"))
            elif item.type == "reasoning" and item.id and item.encrypted_content:
                summary = "\n\n".join(s.text for s in item.summary or () if s.type == "summary_text" and s.text)
                parts.append(ReasoningPart(text=summary, signature=item.encrypted_content, item_id=item.id))
        return ModelReply(
            provider=self.provider,
            model=response.model or request.model,
            parts=tuple(parts),
            stop_reason=_stop_reason(response, parts),
            usage=self._usage(response.usage),
            request_id=request_id or response.id,
        )

    def _usage(self, usage: _Usage | None) -> TokenUsage:
        if usage is None:
            return TokenUsage()
        details = usage.input_tokens_details
        total, output = usage.input_tokens, usage.output_tokens
        cached = details.cached_tokens if details else None
        written = details.cache_write_tokens if details else None
        reasoning = usage.output_tokens_details.reasoning_tokens if usage.output_tokens_details else None
        if total is not None and (cached or 0) + (written or 0) > total:
            raise ProviderReplyInvalidError(
                provider=self.provider, problem="malformed", detail="cached tokens exceed input tokens",
                may_have_been_processed=True,
            )  # fmt: skip
        if output is not None and reasoning is not None and reasoning > output:
            raise ProviderReplyInvalidError(
                provider=self.provider, problem="malformed", detail="reasoning tokens exceed output tokens",
                may_have_been_processed=True,
            )  # fmt: skip
        uncached = total - (cached or 0) - (written or 0) if total is not None else None
        return TokenUsage(input_tokens=uncached, output_tokens=output, cache_read_tokens=cached,
                          cache_write_tokens=written, reasoning_tokens=reasoning)


def _stop_reason(response: _Response, parts: list[AssistantPart]) -> StopReason:
    if any(isinstance(part, ToolCall) for part in parts):
        return StopReason.TOOL_USE
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return StopReason.MAX_TOKENS if reason == "max_output_tokens" else StopReason.OTHER
    return StopReason.END_TURN if response.status == "completed" else StopReason.OTHER


def _input_items(message: Message) -> list[dict[str, object]]:
    """One domain message as Responses input items, in the order of its parts."""
    items: list[dict[str, object]] = []
    assistant = message.role is Role.ASSISTANT
    for part in message.parts:
        if isinstance(part, TextPart) and part.text.strip():
            kind = "output_text" if assistant else "input_text"
            items.append({"role": message.role.value, "content": [{"type": kind, "text": part.text}]})
        elif isinstance(part, ToolCall):
            items.append({"type": "function_call", "call_id": part.call_id, "name": part.name,
                          "arguments": part.arguments_json or "{}"})
        elif isinstance(part, ToolResult):
            output = f"error: {part.content}" if part.is_error else part.content
            items.append({"type": "function_call_output", "call_id": part.call_id, "output": output})
        elif isinstance(part, ReasoningPart) and part.item_id and assistant:
            summary = [{"type": "summary_text", "text": part.text}] if part.text else []
            items.append({"type": "reasoning", "id": part.item_id, "summary": summary,
                          "encrypted_content": part.signature})
    return items


def _reasons(model: str) -> bool:
    """Whether ``model`` is a reasoning model of the capability table (its reasoning items are asked for)."""
    row = capabilities_of(ProviderName.OPENAI, model)
    return row is not None and row.reasoning_effort
