"""The Anthropic Messages API adapter (``POST {base}/v1/messages``), JSON or SSE streaming, with tool use.

Effort maps to thinking as the model's row of the capability table says
(:func:`codeflux.providers.capabilities.anthropic_thinking`): adaptive thinking with
``output_config.effort`` where the model has it, else an explicit budget that leaves half of
``max_tokens`` for the answer, else none. Thinking blocks come back as :class:`ReasoningPart` values
with their signatures, to be sent back unchanged on the next request. An assistant turn with nothing to
send (no tool call, no text but whitespace) is refused before anything is sent
(:class:`ProviderRequestInvalidError`): the API answers ``content: []`` with HTTP 400. The stop reason
comes back provider-neutral (:class:`StopReason`): ``max_tokens`` is ``max-tokens``.

Prompt caching (``prompt_cache``, on unless the adapter is built without it): the request marks
``cache_control: {"type": "ephemeral"}`` (5-minute) breakpoints on the stable prefix, in the API's order
``tools`` → ``system`` → ``messages`` and within its limit of 4 per request: the last tool (every tool
schema), the system prompt (sent as one text block to carry the mark), the end of the conversation the
previous request sent (the user turn before the newest assistant turn: this request reads what that one
wrote, however many blocks the newest turn added — the API looks back only 20 blocks from a breakpoint)
and the end of this conversation (written for the next request). A breakpoint goes on the last block of
its message that can carry one (text, tool use, tool result; never a thinking block). A prompt shorter
than the model's minimum is simply not cached (the API reports no reads or writes, and no error).

Usage: ``input_tokens`` is uncached input, ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` are the cache reads and writes; Anthropic reports no separate
reasoning count (thinking is billed as output). Cache writes are split by lifetime as the reply's
``cache_creation`` reports them: the 1-hour part (``ephemeral_1h_input_tokens``) is
``TokenUsage.cache_write_1h_tokens``, priced at the 1-hour write rate (a price without one leaves the charge
unknown, never the 5-minute rate). This adapter marks only 5-minute breakpoints, so a reply without the
breakdown wrote no 1-hour entries (0); one that reports 1-hour writes anyway carries a ``usage_note`` saying so.
When streaming, the output
count is taken only from ``message_delta`` (``message_start`` carries a placeholder); a stream without
it has unknown output.
A stream that ends before ``message_stop``, or reports an ``error`` event, has an unknown outcome.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Self

from pydantic import Field

from codeflux.credentials import load_provider_key
from codeflux.domain.errors import ProviderOutcomeUnknownError, ProviderRequestInvalidError
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
from codeflux.providers.capabilities import anthropic_thinking
from codeflux.providers.endpoints import DEFAULT_BASE_URLS, normalize_base_url
from codeflux.providers.sse import iter_sse_events
from codeflux.providers.transport import HttpPolicy, ProviderHttp, ProviderResponse
from codeflux.providers.wire import KeyLoader, StrictReply, TextSink, load_key_for_call, parse_reply
from codeflux.redact import Redactor, default_redactor

__all__ = ["ANTHROPIC_VERSION", "CACHE_BREAKPOINT_LIMIT", "ONE_HOUR_CACHE_WRITES", "AnthropicAdapter"]

ANTHROPIC_VERSION = "2023-06-01"
CACHE_BREAKPOINT_LIMIT = 4  # the API refuses a request with more cache_control marks
ONE_HOUR_CACHE_WRITES = ("the provider reported 1-hour cache writes, which codeflux never asks for: they are priced "
                         "at the 1-hour cache-write rate")
_EPHEMERAL = {"type": "ephemeral"}
_MARKABLE = frozenset({"text", "tool_use", "tool_result"})
_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSED,
}


class _CacheCreation(StrictReply):
    ephemeral_5m_input_tokens: int | None = Field(default=None, ge=0)
    ephemeral_1h_input_tokens: int | None = Field(default=None, ge=0)


class _Usage(StrictReply):
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_creation_input_tokens: int | None = Field(default=None, ge=0)
    cache_read_input_tokens: int | None = Field(default=None, ge=0)
    cache_creation: _CacheCreation | None = None


class _Block(StrictReply):
    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, object] | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None


class _Message(StrictReply):
    id: str | None = None
    model: str | None = None
    content: list[_Block]
    stop_reason: str | None = None
    usage: _Usage | None = None


class _StartMessage(StrictReply):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None


class _Delta(StrictReply):
    type: str | None = None
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    stop_reason: str | None = None


class _Error(StrictReply):
    type: str | None = None


class _Event(StrictReply):
    type: str
    message: _StartMessage | None = None
    index: int | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _Error | None = None


@dataclass(slots=True)
class _OpenBlock:
    kind: str
    text: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    signature: str = ""


class AnthropicAdapter:
    """Claude models through the Messages API. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URLS[ProviderName.ANTHROPIC],
        key_loader: KeyLoader = load_provider_key,
        redactor: Redactor | None = None,
        http: ProviderHttp | None = None,
        policy: HttpPolicy | None = None,
        prompt_cache: bool = True,
    ) -> None:
        self.base_url = normalize_base_url(ProviderName.ANTHROPIC, base_url)
        self.prompt_cache = prompt_cache
        self._key_loader = key_loader
        self._redactor = redactor or default_redactor()
        self._http = http or ProviderHttp(provider=self.display_name, redactor=self._redactor, policy=policy)

    @property
    def display_name(self) -> str:
        return "Anthropic"

    @property
    def writes_prompt_cache(self) -> bool:
        """Whether its calls ask the provider to write a prompt cache (so the gateway reserves their input
        at the cache-write rate)."""
        return self.prompt_cache

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply:
        """Send ``request`` to ``/v1/messages``; stream it when ``on_text`` is given."""
        key = load_key_for_call(ProviderName.ANTHROPIC, loader=self._key_loader, redactor=self._redactor)
        headers = {
            "x-api-key": key.reveal(),
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream" if on_text is not None else "application/json",
        }
        wire = _request_body(request, stream=on_text is not None, cache=self.prompt_cache)
        body = json.dumps(wire, ensure_ascii=False).encode()

        def read(response: ProviderResponse) -> ModelReply:
            request_id = response.request_id("request-id")
            if on_text is None:
                return self._reply_from_json(response.read_body(), request, request_id)
            return self._reply_from_stream(response, request, request_id, on_text)

        return self._http.post(f"{self.base_url}/v1/messages", headers=headers, body=body, read=read)

    def _reply_from_json(self, body: bytes, request: ModelRequest, request_id: str | None) -> ModelReply:
        message = parse_reply(_Message, body, provider=self.display_name, what="the reply")
        parts = tuple(part for block in message.content if (part := _part_from_block(block)) is not None)
        return ModelReply(
            provider=self.display_name,
            model=message.model or request.model,
            parts=parts,
            stop_reason=_STOP_REASONS.get(message.stop_reason or "", StopReason.OTHER),
            usage=_usage(message.usage, message.usage),
            request_id=request_id,
            usage_note=_usage_note(message.usage, message.usage),
        )

    def _reply_from_stream(
        self, response: ProviderResponse, request: ModelRequest, request_id: str | None, on_text: TextSink
    ) -> ModelReply:
        policy = self._http.policy
        blocks: dict[int, _OpenBlock] = {}
        start: _StartMessage | None = None
        final_usage: _Usage | None = None
        stop_reason: str | None = None
        chunks = response.chunks(limit=policy.max_stream_bytes)
        for sse in iter_sse_events(chunks, provider=self.display_name, max_event_bytes=policy.max_event_bytes):
            event = parse_reply(_Event, sse.data, provider=self.display_name, what="a stream event")
            if event.type == "message_start":
                start = event.message
            elif event.type == "content_block_start" and event.index is not None and event.content_block:
                blocks[event.index] = _open_block(event.content_block)
            elif event.type == "content_block_delta" and event.index in blocks and event.delta:
                _apply_delta(blocks[event.index], event.delta, on_text)
            elif event.type == "message_delta":
                stop_reason = event.delta.stop_reason if event.delta else None
                final_usage = event.usage
            elif event.type == "error":
                kind = event.error.type if event.error and event.error.type else "an error"
                raise ProviderOutcomeUnknownError(provider=self.display_name, reason=f"the stream reported {kind}")
            elif event.type == "message_stop":
                parts = tuple(part for _, block in sorted(blocks.items()) if (part := _close_block(block)))
                return ModelReply(
                    provider=self.display_name,
                    model=(start.model if start else None) or request.model,
                    parts=parts,
                    stop_reason=_STOP_REASONS.get(stop_reason or "", StopReason.OTHER),
                    usage=_usage(start.usage if start else None, final_usage),
                    request_id=request_id,
                    usage_note=_usage_note(start.usage if start else None, final_usage),
                )
        raise ProviderOutcomeUnknownError(provider=self.display_name, reason="the stream ended before message_stop")


def _request_body(request: ModelRequest, *, stream: bool, cache: bool) -> dict[str, object]:
    messages = [_wire_message(message) for message in request.messages]
    body: dict[str, object] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "messages": messages,
        "stream": stream,
    }
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}] if cache \
            else request.system
    if request.tools:
        tools: list[dict[str, object]] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema()}
            for tool in request.tools
        ]
        if cache:
            tools[-1]["cache_control"] = dict(_EPHEMERAL)
        body["tools"] = tools
    if cache:
        for index in _conversation_breakpoints(request.messages):
            _mark_last_block(messages[index])
    body.update(anthropic_thinking(request.model, request.effort, max_output_tokens=request.max_output_tokens))
    return body


def _conversation_breakpoints(messages: tuple[Message, ...]) -> tuple[int, ...]:
    """Where the conversation's breakpoints go (at most 2, so that with the tools' and the system's the
    request stays within :data:`CACHE_BREAKPOINT_LIMIT`): the newest message, and the user message before
    the newest assistant turn — the end of what the previous request sent."""
    newest = len(messages) - 1
    earlier = [i for i in range(newest) if messages[i].role is Role.ASSISTANT]
    if not earlier or earlier[-1] == 0:
        return (newest,)
    return (earlier[-1] - 1, newest)


def _mark_last_block(message: dict[str, object]) -> None:
    content = message["content"]
    if not isinstance(content, list):
        return
    for block in reversed(content):
        if isinstance(block, dict) and block.get("type") in _MARKABLE:
            block["cache_control"] = dict(_EPHEMERAL)
            return


def _wire_message(message: Message) -> dict[str, object]:
    if message.is_blank:
        raise ProviderRequestInvalidError(provider="Anthropic", problem="an empty assistant turn is never sent")
    content: list[dict[str, object]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API refuses text blocks of whitespace only
                content.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart) and not part.item_id:  # OpenAI's reasoning items are not Anthropic's
            content.append(
                {"type": "redacted_thinking", "data": part.signature}
                if part.redacted
                else {"type": "thinking", "thinking": part.text, "signature": part.signature}
            )
        elif isinstance(part, ToolCall):
            try:
                arguments = json.loads(part.arguments_json or "{}")
            except ValueError:
                arguments = {}
            content.append({"type": "tool_use", "id": part.call_id, "name": part.name, "input": arguments})
        elif isinstance(part, ToolResult):
            content.append(
                {"type": "tool_result", "tool_use_id": part.call_id, "content": part.content, "is_error": part.is_error}
            )
    return {"role": message.role.value, "content": content}


def _part_from_block(block: _Block) -> AssistantPart | None:
    if block.type == "text":
        return TextPart(text=block.text or "")
    if block.type == "tool_use" and block.id and block.name:
        arguments = json.dumps(block.input or {}, ensure_ascii=False, separators=(",", ":"))
        return ToolCall(call_id=block.id, name=block.name, arguments_json=arguments)
    if block.type == "thinking":
        return ReasoningPart(text=block.thinking or "", signature=block.signature or "")
    if block.type == "redacted_thinking":
        return ReasoningPart(text="", signature=block.data or "", redacted=True)
    return None


def _open_block(block: _Block) -> _OpenBlock:
    opened = _OpenBlock(kind=block.type, call_id=block.id or "", name=block.name or "")
    if block.type == "redacted_thinking":
        opened.signature = block.data or ""
    elif block.type == "text" and block.text:
        opened.text.append(block.text)
    return opened


def _apply_delta(block: _OpenBlock, delta: _Delta, on_text: TextSink) -> None:
    if delta.type == "text_delta" and delta.text:
        block.text.append(delta.text)
        on_text(delta.text)
    elif delta.type == "input_json_delta" and delta.partial_json:
        block.text.append(delta.partial_json)
    elif delta.type == "thinking_delta" and delta.thinking:
        block.text.append(delta.thinking)
    elif delta.type == "signature_delta" and delta.signature:
        block.signature += delta.signature


def _close_block(block: _OpenBlock) -> AssistantPart | None:
    text = "".join(block.text)
    if block.kind == "text":
        return TextPart(text=text)
    if block.kind == "tool_use" and block.call_id and block.name:
        return ToolCall(call_id=block.call_id, name=block.name, arguments_json=text or "{}")
    if block.kind == "thinking":
        return ReasoningPart(text=text, signature=block.signature)
    if block.kind == "redacted_thinking":
        return ReasoningPart(text="", signature=block.signature, redacted=True)
    return None


def _usage(start: _Usage | None, final: _Usage | None) -> TokenUsage:
    """Usage from the start and final reports: later values win; output only from the final one."""

    def pick(name: str) -> int | None:
        for report in (final, start):
            value = getattr(report, name, None) if report is not None else None
            if value is not None:
                return int(value)
        return None

    writes = pick("cache_creation_input_tokens")
    one_hour = _one_hour_writes(start, final, writes=writes)
    if one_hour is not None and writes is not None and one_hour > writes:  # a breakdown larger than its total
        writes = one_hour = None
    return TokenUsage(
        input_tokens=pick("input_tokens"),
        output_tokens=final.output_tokens if final is not None else None,
        cache_read_tokens=pick("cache_read_input_tokens"),
        cache_write_tokens=writes,
        cache_write_1h_tokens=one_hour,
        reasoning_tokens=None,
    )


def _one_hour_writes(start: _Usage | None, final: _Usage | None, *, writes: int | None) -> int | None:
    """The 1-hour part of the cache writes: as the newest breakdown reports it; 0 without one (only 5-minute
    breakpoints are marked); None when the writes themselves are unknown."""
    if writes is None:
        return None
    for report in (final, start):
        breakdown = None if report is None else report.cache_creation
        if breakdown is not None and breakdown.ephemeral_1h_input_tokens is not None:
            return int(breakdown.ephemeral_1h_input_tokens)
    return 0


def _usage_note(start: _Usage | None, final: _Usage | None) -> str | None:
    return ONE_HOUR_CACHE_WRITES if _usage(start, final).cache_write_1h_tokens else None
