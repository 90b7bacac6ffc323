"""The scripted provider: replays a fixed script of model turns, for offline use and tests.

It is not a model, and says so: its display name is ``scripted (not a model)`` everywhere a user sees a
provider. Each call takes the next :class:`ScriptedTurn` (reasoning, text and tool calls, and the stop
reason a real provider would give: a turn can be cut at the output bound, or be empty) and records the
request it received, so a test can assert exactly what the gateway sent. Each turn's usage is
configurable, unknown included (the default, since a script has no tokenizer). A call after the last
turn raises :class:`ScriptExhaustedError` — and is still recorded. Like the real adapters, it refuses a
request carrying an empty assistant turn (:class:`ProviderRequestInvalidError`). No network, no key.

**A small context window** (issue 15 item 8). A script may declare ``context_window`` (tokens): the
adapter then says so (:attr:`ScriptedAdapter.context_window`, which the gateway reports to the loop
instead of a model's row in the capability table), and refuses — as a provider does, with
:class:`ContextTooLongError`, recorded, no turn used — any request whose estimated size
(:func:`codeflux.domain.context_window.fits_window`) does not fit it. A turn written
``ScriptedTurn(too_long=True)`` answers its request with that refusal whatever its size, as a provider
whose own count exceeds codeflux's estimate would (the turn is used). Without ``context_window`` no window
is declared or checked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from codeflux.domain.context_window import estimate_request_tokens, fits_window
from codeflux.domain.errors import (
    ContextTooLongError,
    InvalidValueError,
    ProviderRequestInvalidError,
    ScriptExhaustedError,
)
from codeflux.domain.models import (
    AssistantPart,
    ModelReply,
    ModelRequest,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCall,
)
from codeflux.domain.pricing import TokenUsage
from codeflux.providers.wire import TextSink

__all__ = ["SCRIPTED_DISPLAY_NAME", "ScriptedAdapter", "ScriptedTurn"]

SCRIPTED_DISPLAY_NAME = "scripted (not a model)"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedTurn:
    """One reply of the script. ``stop_reason`` defaults to tool-use when there are tool calls, else
    end-turn; ``model`` to the requested model; ``usage`` to unknown. ``reasoning`` comes first in the
    reply, as a provider's thinking blocks do. ``too_long``: the turn refuses its request as too long for
    the context window instead of answering (see the module docstring)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[ReasoningPart, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    stop_reason: StopReason | None = None
    model: str | None = None
    too_long: bool = False

    @classmethod
    def calling(
        cls,
        name: str,
        arguments: Mapping[str, object],
        *,
        call_id: str,
        text: str = "",
        usage: TokenUsage | None = None,
    ) -> ScriptedTurn:
        """A turn that calls tool ``name`` with ``arguments`` (written as JSON, as a model would)."""
        call = ToolCall(call_id=call_id, name=name, arguments_json=json.dumps(dict(arguments), ensure_ascii=False))
        return cls(text=text, tool_calls=(call,), usage=usage or TokenUsage())


class ScriptedAdapter:
    """Replays ``turns`` in order and records every request. Thread-safe."""

    def __init__(self, turns: Iterable[ScriptedTurn], *, stream_chunk_chars: int = 16,
                 context_window: int | None = None) -> None:
        if stream_chunk_chars < 1:
            raise InvalidValueError(kind="scripted provider", reason="stream chunks need at least one character")
        if context_window is not None and context_window < 1:
            raise InvalidValueError(kind="scripted provider", reason="a context window is a positive token count")
        self._window = context_window
        self._turns = tuple(turns)
        self._chunk = stream_chunk_chars
        self._lock = threading.Lock()
        self._requests: list[ModelRequest] = []
        self._refused = 0  # requests refused for the window before taking a turn

    @property
    def display_name(self) -> str:
        return SCRIPTED_DISPLAY_NAME

    @property
    def context_window(self) -> int | None:
        """The window the script declares (tokens), or None: no window is declared or checked."""
        return self._window

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request received, in order (including one that found the script exhausted)."""
        with self._lock:
            return tuple(self._requests)

    @property
    def remaining_turns(self) -> int:
        with self._lock:
            return max(0, len(self._turns) - len(self._requests) + self._refused)

    def _too_long(self, request: ModelRequest) -> ContextTooLongError:
        window = f"{self._window:,}" if self._window is not None else "the scripted"
        return ContextTooLongError(
            provider=SCRIPTED_DISPLAY_NAME, status=400, error_type="invalid_request_error",
            detail=f"prompt is too long: {estimate_request_tokens(request):,} tokens (estimated) + "
                   f"{request.max_output_tokens:,} output > {window} maximum")

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply:
        """The next scripted turn as a reply; its text is streamed to ``on_text`` in small pieces."""
        if any(message.is_blank for message in request.messages):  # refused before it is sent: no turn used
            raise ProviderRequestInvalidError(provider=SCRIPTED_DISPLAY_NAME,
                                              problem="an empty assistant turn is never sent")
        if self._window is not None and not fits_window(request, self._window):
            with self._lock:
                self._requests.append(request)
                self._refused += 1
            raise self._too_long(request)
        with self._lock:
            index = len(self._requests) - self._refused
            self._requests.append(request)
        if index >= len(self._turns):
            raise ScriptExhaustedError(turns=len(self._turns))
        turn = self._turns[index]
        if turn.too_long:
            raise self._too_long(request)
        if on_text is not None:
            for start in range(0, len(turn.text), self._chunk):
                on_text(turn.text[start : start + self._chunk])
        text: tuple[AssistantPart, ...] = (TextPart(text=turn.text),) if turn.text else ()
        parts: tuple[AssistantPart, ...] = (*turn.reasoning, *text, *turn.tool_calls)
        default_stop = StopReason.TOOL_USE if turn.tool_calls else StopReason.END_TURN
        return ModelReply(
            provider=SCRIPTED_DISPLAY_NAME,
            model=turn.model or request.model,
            parts=parts,
            stop_reason=turn.stop_reason or default_stop,
            usage=turn.usage,
            request_id=f"scripted-{index + 1}",
        )
