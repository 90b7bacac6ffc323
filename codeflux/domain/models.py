"""What a model call sends and what comes back, in domain words; adapters map these to each wire format.

A :class:`ModelRequest` carries the system text, the conversation (:class:`Message` values made of
parts), the tools the model may call (:class:`ToolSpec`, built from our tool descriptors, so the model
sees exactly the arguments :func:`~codeflux.domain.tools.bind_tool_request` will accept) and the effort
of the ladder rung. A :class:`ModelReply` carries the assistant's parts (text, reasoning the provider
wants echoed back, tool calls), why it stopped, and the :class:`~codeflux.domain.pricing.TokenUsage`
the provider reported — each count possibly unknown.

Tool-call arguments stay the raw JSON text the model produced: a model that writes malformed
arguments made a mistake the loop reports back to it, not a broken reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, TypeAlias, assert_never

from codeflux.domain.errors import InvalidValueError, ToolRequestInvalidError
from codeflux.domain.ladder import Effort
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.tools import ArgumentSpec, ArgumentType, ToolDescriptor, ToolRequestProblem

__all__ = [
    "MAX_OUTPUT_TOKENS_LIMIT",
    "AssistantPart",
    "Message",
    "MessagePart",
    "ModelReply",
    "ModelRequest",
    "ReasoningPart",
    "Role",
    "StopReason",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "tool_specs_for",
]

MAX_OUTPUT_TOKENS_LIMIT: Final = 1_000_000


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningPart:
    """Reasoning the provider returned and wants sent back unchanged in the next request (Anthropic's
    thinking blocks and their signatures). ``redacted`` blocks carry only opaque ``signature`` data.

    An OpenAI Responses reasoning item has its id in ``item_id`` (never empty for one), its summary texts in
    ``text`` and its ``encrypted_content`` in ``signature``; each adapter sends back only its own provider's
    reasoning (an Anthropic thinking block has no ``item_id``)."""

    text: str
    signature: str
    redacted: bool = False
    item_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call as the model wrote it: its id, the tool name and the raw JSON arguments."""

    call_id: str
    name: str
    arguments_json: str

    def __post_init__(self) -> None:
        if not self.call_id or not self.name:
            raise InvalidValueError(kind="tool call", reason="a tool call needs an id and a tool name")

    def arguments(self) -> dict[str, object]:
        """The arguments as a JSON object, or :class:`ToolRequestInvalidError` if they are not one."""
        try:
            value = json.loads(self.arguments_json or "{}")
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise ToolRequestInvalidError(
                tool=self.name[:64],
                argument=None,
                problem=ToolRequestProblem.INVALID_VALUE,
                detail="the arguments are not a JSON object",
            )
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """What running a tool call gave, sent back to the model under the call's id."""

    call_id: str
    content: str
    is_error: bool = False


AssistantPart: TypeAlias = TextPart | ReasoningPart | ToolCall
MessagePart: TypeAlias = TextPart | ReasoningPart | ToolCall | ToolResult

_ALLOWED_PARTS: Final = {
    Role.USER: (TextPart, ToolResult),
    Role.ASSISTANT: (TextPart, ReasoningPart, ToolCall),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One turn of the conversation. User turns hold text and tool results; assistant turns hold text,
    reasoning and tool calls."""

    role: Role
    parts: tuple[MessagePart, ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise InvalidValueError(kind="message", reason="a message needs at least one part")
        allowed = _ALLOWED_PARTS[self.role]
        for part in self.parts:
            if not isinstance(part, allowed):
                kind = type(part).__name__
                raise InvalidValueError(kind="message", reason=f"a {self.role} message cannot hold a {kind}")

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(role=Role.USER, parts=(TextPart(text=text),))

    @property
    def text(self) -> str:
        """The text parts joined."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @property
    def is_blank(self) -> bool:
        """An assistant turn that says nothing a provider would accept back: no tool call and no text
        but whitespace (reasoning alone does not count). Such a turn is never stored or sent: Anthropic
        refuses ``content: []`` and whitespace-only text, Chat Completions gets ``content: null``."""
        return self.role is Role.ASSISTANT and _says_nothing(self.parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON Schema of its arguments (compact JSON)."""

    name: str
    description: str
    input_schema_json: str

    @classmethod
    def from_descriptor(cls, descriptor: ToolDescriptor) -> ToolSpec:
        """The spec of ``descriptor``: every argument with its type and bounds, no others allowed."""
        schema = {
            "type": "object",
            "properties": {spec.name: _argument_schema(spec) for spec in descriptor.arguments},
            "required": [spec.name for spec in descriptor.arguments if spec.required],
            "additionalProperties": False,
        }
        return cls(
            name=descriptor.name.value,
            description=descriptor.description,
            # Properties keep the descriptor's order, the order a model reads them in.
            input_schema_json=json.dumps(schema, separators=(",", ":"), ensure_ascii=False),
        )

    def input_schema(self) -> dict[str, object]:
        """The JSON Schema as an object, ready to embed in a provider request."""
        schema: dict[str, object] = json.loads(self.input_schema_json)
        return schema


def tool_specs_for(descriptors: Iterable[ToolDescriptor]) -> tuple[ToolSpec, ...]:
    """One :class:`ToolSpec` per descriptor, in the given order."""
    return tuple(ToolSpec.from_descriptor(descriptor) for descriptor in descriptors)


def _argument_schema(spec: ArgumentSpec) -> dict[str, object]:
    schema: dict[str, object] = {"description": spec.description}
    match spec.type:
        case ArgumentType.PATH | ArgumentType.GLOB | ArgumentType.TEXT:
            schema["type"] = "string"
            if spec.min_bytes > 0:
                schema["minLength"] = 1
        case ArgumentType.SHA256:
            schema.update(type="string", pattern="^[0-9a-f]{64}$")
        case ArgumentType.INTEGER:
            schema.update(type="integer", minimum=spec.min_value, maximum=spec.max_value)
        case ArgumentType.BOOLEAN:
            schema["type"] = "boolean"
        case ArgumentType.ARGV:
            schema.update(type="array", items={"type": "string"}, minItems=1, maxItems=spec.max_items)
        case _:
            assert_never(spec.type)
    return schema


class StopReason(StrEnum):
    """Why the model stopped, in one vocabulary for every provider."""

    END_TURN = "end-turn"
    TOOL_USE = "tool-use"
    MAX_TOKENS = "max-tokens"
    REFUSED = "refused"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One call: the model id (as the provider names it), the system text, the conversation, the tools,
    an output bound and the effort (None: the provider's default)."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int = 8192
    effort: Effort | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise InvalidValueError(kind="model request", reason="the model must be named")
        if not self.messages or self.messages[0].role is not Role.USER:
            raise InvalidValueError(kind="model request", reason="the conversation must start with a user message")
        limit = self.max_output_tokens
        if type(limit) is not int or not 0 < limit <= MAX_OUTPUT_TOKENS_LIMIT:
            raise InvalidValueError(kind="model request", reason="max_output_tokens must be 1 to 1,000,000")
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise InvalidValueError(kind="model request", reason="a tool is offered twice")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """What the model answered. ``provider`` is the name a user sees (``scripted (not a model)`` for
    the scripted provider); ``request_id`` is the provider's id for the call, when it sent one;
    ``usage_note`` says how a count the provider did not report was read (such as a server that does not
    report caching: cache reads 0), and is kept with the call's record."""

    provider: str
    model: str
    parts: tuple[AssistantPart, ...]
    stop_reason: StopReason
    usage: TokenUsage
    request_id: str | None = None
    usage_note: str | None = None

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(part for part in self.parts if isinstance(part, ToolCall))

    @property
    def is_blank(self) -> bool:
        """No tool call and no text but whitespace (see :attr:`Message.is_blank`)."""
        return _says_nothing(self.parts)

    @property
    def cut_at_output_bound(self) -> bool:
        """The provider stopped because the output bound was reached: any tool call in it may be partial."""
        return self.stop_reason is StopReason.MAX_TOKENS

    def as_message(self) -> Message:
        """The reply as the assistant turn to append to the conversation; a blank reply has none
        (:class:`InvalidValueError`): it is never stored or sent back."""
        if self.is_blank:
            raise InvalidValueError(kind="model reply", reason="an empty assistant turn is never kept")
        return Message(role=Role.ASSISTANT, parts=self.parts)


def _says_nothing(parts: Iterable[MessagePart]) -> bool:
    return not any(isinstance(part, ToolCall) or (isinstance(part, TextPart) and part.text.strip())
                   for part in parts)
