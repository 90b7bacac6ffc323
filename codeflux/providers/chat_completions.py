"""The OpenAI Chat Completions wire (``POST {base}/chat/completions``), shared by OpenAI and compatible servers.

Why Chat Completions rather than the Responses API: it is the one wire that OpenAI *and* the local
servers (Ollama, vLLM, llama.cpp's server) speak, so one parser, one set of wire-format tests and one
mapping of tool calls serve every provider here. Tools are sent as ``function`` tools; streaming uses
``stream_options.include_usage`` so the final chunk carries usage, and ``data: [DONE]`` ends it.

Usage: ``prompt_tokens`` includes cached tokens, so uncached input is ``prompt_tokens −
prompt_tokens_details.cached_tokens``. What a reply without ``prompt_tokens_details.cached_tokens``
means is a property of the endpoint (``reports_cache``), not a guess per call: OpenAI always reports it,
so there its absence leaves cache reads *unknown* (every prompt token is counted as input, and a price
with a non-zero cache-read rate gives an unknown cost). OpenAI-compatible servers (LiteLLM, vLLM,
Ollama, llama.cpp) usually do not report caching at all: there the absence means "this server does not
report caching", cache reads are 0 and the reply's ``usage_note`` says so (the call's record keeps it);
a count such a server does report is used as reported. This wire bills no cache writes, so they are 0
whenever usage is reported.
``completion_tokens`` includes ``completion_tokens_details.reasoning_tokens``. A reply without
``usage`` has every count unknown. A stream that ends before ``[DONE]`` or carries an ``error`` has an
unknown outcome.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final

from pydantic import Field

from codeflux.domain.errors import ProviderOutcomeUnknownError, ProviderReplyInvalidError, ProviderRequestInvalidError
from codeflux.domain.models import AssistantPart, Message, ModelReply, ModelRequest, StopReason, TextPart, ToolCall
from codeflux.domain.models import ToolResult as ToolResultPart
from codeflux.domain.pricing import TokenUsage
from codeflux.providers.capabilities import openai_reasoning_effort
from codeflux.providers.sse import iter_sse_events
from codeflux.providers.transport import ProviderResponse
from codeflux.providers.wire import StrictReply, TextSink, parse_reply

__all__ = ["NO_CACHE_REPORTED", "ChatWire"]

NO_CACHE_REPORTED: Final = ("this server does not report caching (no prompt_tokens_details.cached_tokens): "
                            "cache reads counted as 0, every prompt token as input")

_FINISH_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSED,
}


class _PromptDetails(StrictReply):
    cached_tokens: int | None = Field(default=None, ge=0)


class _CompletionDetails(StrictReply):
    reasoning_tokens: int | None = Field(default=None, ge=0)


class _Usage(StrictReply):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Function(StrictReply):
    name: str | None = None
    arguments: str | None = None


class _ToolCall(StrictReply):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Message(StrictReply):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(StrictReply):
    index: int = 0
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None


class _Error(StrictReply):
    type: str | None = None
    code: str | int | None = None


class _Completion(StrictReply):
    model: str | None = None
    choices: list[_Choice] = Field(default_factory=list)
    usage: _Usage | None = None
    error: _Error | None = None


@dataclass(slots=True)
class _OpenCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatWire:
    """Request building and reply parsing for one provider speaking Chat Completions.

    ``reports_cache`` is False for an endpoint that does not report cached tokens (see the module
    docstring). ``max_tokens_field`` is ``max_completion_tokens`` for OpenAI and ``max_tokens`` for servers that
    only know the older name; ``sends_reasoning_effort`` maps the effort to ``reasoning_effort`` for the
    reasoning models of OpenAI's capability table only (:func:`openai_reasoning_effort`; ``max`` is sent
    as ``high``): a non-reasoning model refuses a request carrying it. An assistant turn with nothing to
    send is refused before anything is sent (it would go out as ``content: null``).
    """

    provider: str
    max_tokens_field: str
    sends_reasoning_effort: bool
    reports_cache: bool = True

    def request_body(self, request: ModelRequest, *, stream: bool) -> bytes:
        messages: list[dict[str, object]] = [{"role": "system", "content": request.system}] if request.system else []
        for message in request.messages:
            if message.is_blank:
                raise ProviderRequestInvalidError(provider=self.provider,
                                                  problem="an empty assistant turn is never sent")
            messages.extend(_wire_messages(message))
        body: dict[str, object] = {
            "model": request.model,
            "messages": messages,
            self.max_tokens_field: request.max_output_tokens,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema()},
                }
                for t in request.tools
            ]
        effort = openai_reasoning_effort(request.model, request.effort) if self.sends_reasoning_effort else None
        if effort is not None:
            body["reasoning_effort"] = effort
        return json.dumps(body, ensure_ascii=False).encode()

    def reply_from_json(self, body: bytes, request: ModelRequest, request_id: str | None) -> ModelReply:
        completion = parse_reply(_Completion, body, provider=self.provider, what="the reply")
        if not completion.choices or completion.choices[0].message is None:
            raise ProviderReplyInvalidError(
                provider=self.provider, problem="malformed", detail="the reply has no choice",
                may_have_been_processed=True,
            )  # fmt: skip
        choice = completion.choices[0]
        message = choice.message or _Message()
        parts: list[AssistantPart] = []
        if message.content or message.refusal:
            parts.append(TextPart(text=message.content or message.refusal or ""))
        for call in message.tool_calls or ():
            if call.id and call.function and call.function.name:
                arguments = call.function.arguments or "{}"
                parts.append(ToolCall(call_id=call.id, name=call.function.name, arguments_json=arguments))
        return self._reply(
            request, parts, model=completion.model, finish=choice.finish_reason, usage=completion.usage,
            request_id=request_id,
        )  # fmt: skip

    def reply_from_stream(
        self, response: ProviderResponse, request: ModelRequest, request_id: str | None, on_text: TextSink, *,
        max_stream_bytes: int, max_event_bytes: int,
    ) -> ModelReply:  # fmt: skip
        text: list[str] = []
        calls: dict[int, _OpenCall] = {}
        model: str | None = None
        finish: str | None = None
        usage: _Usage | None = None
        chunks = response.chunks(limit=max_stream_bytes)
        for sse in iter_sse_events(chunks, provider=self.provider, max_event_bytes=max_event_bytes):
            if sse.data.strip() == "[DONE]":
                parts: list[AssistantPart] = [TextPart(text="".join(text))] if text else []
                parts.extend(
                    ToolCall(call_id=call.call_id, name=call.name, arguments_json="".join(call.arguments) or "{}")
                    for _, call in sorted(calls.items())
                    if call.call_id and call.name
                )
                return self._reply(request, parts, model=model, finish=finish, usage=usage, request_id=request_id)
            chunk = parse_reply(_Completion, sse.data, provider=self.provider, what="a stream chunk")
            if chunk.error is not None:
                kind = chunk.error.type or chunk.error.code or "an error"
                raise ProviderOutcomeUnknownError(provider=self.provider, reason=f"the stream reported {kind}")
            model = chunk.model or model
            usage = chunk.usage or usage
            for choice in chunk.choices[:1]:
                finish = choice.finish_reason or finish
                delta = choice.delta or _Message()
                if delta.content:
                    text.append(delta.content)
                    on_text(delta.content)
                for call in delta.tool_calls or ():
                    _merge_call(calls.setdefault(call.index or 0, _OpenCall()), call)
        raise ProviderOutcomeUnknownError(provider=self.provider, reason="the stream ended before [DONE]")

    def _reply(
        self,
        request: ModelRequest,
        parts: list[AssistantPart],
        *,
        model: str | None,
        finish: str | None,
        usage: _Usage | None,
        request_id: str | None,
    ) -> ModelReply:
        counted, note = self._usage(usage)
        return ModelReply(
            provider=self.provider,
            model=model or request.model,
            parts=tuple(parts),
            stop_reason=_FINISH_REASONS.get(finish or "", StopReason.OTHER),
            usage=counted,
            request_id=request_id,
            usage_note=note,
        )

    def _usage(self, usage: _Usage | None) -> tuple[TokenUsage, str | None]:
        if usage is None:
            return TokenUsage(), None
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else None
        note = None
        if cached is None and prompt is not None and not self.reports_cache:
            cached, note = 0, NO_CACHE_REPORTED
        reasoning = usage.completion_tokens_details.reasoning_tokens if usage.completion_tokens_details else None
        if prompt is not None and cached is not None and cached > prompt:
            raise ProviderReplyInvalidError(
                provider=self.provider, problem="malformed", detail="cached tokens exceed prompt tokens",
                may_have_been_processed=True,
            )  # fmt: skip
        if completion is not None and reasoning is not None and reasoning > completion:
            raise ProviderReplyInvalidError(
                provider=self.provider, problem="malformed", detail="reasoning tokens exceed completion tokens",
                may_have_been_processed=True,
            )  # fmt: skip
        return TokenUsage(
            input_tokens=prompt - cached if prompt is not None and cached is not None else prompt,
            output_tokens=completion,
            cache_read_tokens=cached,
            cache_write_tokens=0,
            reasoning_tokens=reasoning,
        ), note


def _merge_call(open_call: _OpenCall, delta: _ToolCall) -> None:
    if delta.id:
        open_call.call_id = delta.id
    if delta.function is not None:
        if delta.function.name:
            open_call.name += delta.function.name
        if delta.function.arguments:
            open_call.arguments.append(delta.function.arguments)


def _wire_messages(message: Message) -> list[dict[str, object]]:
    """One domain message as Chat Completions messages: tool results become ``tool`` messages first."""
    wired: list[dict[str, object]] = []
    text = "".join(part.text for part in message.parts if isinstance(part, TextPart))
    if message.role.value == "assistant":
        calls = [
            {"id": p.call_id, "type": "function", "function": {"name": p.name, "arguments": p.arguments_json}}
            for p in message.parts
            if isinstance(p, ToolCall)
        ]
        entry: dict[str, object] = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = calls
        return [entry]
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            content = f"error: {part.content}" if part.is_error else part.content
            wired.append({"role": "tool", "tool_call_id": part.call_id, "content": content})
    if text or not wired:
        wired.append({"role": "user", "content": text})
    return wired
