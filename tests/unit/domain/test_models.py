"""Model requests and replies in domain terms; tool specs are derived from the tool descriptors."""

from __future__ import annotations

import json

import pytest

from codeflux.domain.errors import InvalidValueError, ToolRequestInvalidError
from codeflux.domain.models import (
    Message,
    ModelReply,
    ModelRequest,
    ReasoningPart,
    Role,
    StopReason,
    TextPart,
    ToolCall,
    ToolResult,
    ToolSpec,
    tool_specs_for,
)
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.tools import TOOL_CATALOG, ToolName, bind_tool_request, tool_descriptor


def test_every_tool_spec_lists_exactly_the_descriptor_arguments_and_forbids_others() -> None:
    for spec, descriptor in zip(tool_specs_for(TOOL_CATALOG.values()), TOOL_CATALOG.values(), strict=True):
        schema = spec.input_schema()
        assert spec.name == descriptor.name.value and spec.description == descriptor.description
        assert schema["additionalProperties"] is False
        assert list(schema["properties"]) == [argument.name for argument in descriptor.arguments]  # type: ignore[call-overload]
        assert schema["required"] == [argument.name for argument in descriptor.arguments if argument.required]


def test_argument_types_and_bounds_reach_the_schema() -> None:
    read = ToolSpec.from_descriptor(tool_descriptor(ToolName.READ_FILE)).input_schema()
    assert read["properties"]["start_line"] == {  # type: ignore[index]
        "type": "integer", "minimum": 1, "maximum": 10_000_000,
        "description": "the first line to show, 1-based (default 1)",
    }  # fmt: skip
    run = ToolSpec.from_descriptor(tool_descriptor(ToolName.RUN_COMMAND)).input_schema()
    assert run["properties"]["argv"]["items"] == {"type": "string"}  # type: ignore[index]
    assert run["properties"]["argv"]["maxItems"] == 256  # type: ignore[index]
    write = ToolSpec.from_descriptor(tool_descriptor(ToolName.WRITE_FILE)).input_schema()
    assert write["properties"]["expected_sha256"]["pattern"] == "^[0-9a-f]{64}$"  # type: ignore[index]


def test_a_tool_call_keeps_the_raw_arguments_and_binds_through_the_catalog() -> None:
    call = ToolCall(call_id="c1", name="read_file", arguments_json=json.dumps({"path": "README.md"}))
    bound = bind_tool_request(call.name, call.arguments())
    assert bound.value("path") == "README.md"
    with pytest.raises(ToolRequestInvalidError, match="not a JSON object"):
        ToolCall(call_id="c2", name="read_file", arguments_json="[1, 2").arguments()


def test_messages_hold_only_the_parts_their_role_may_send() -> None:
    with pytest.raises(InvalidValueError):
        Message(role=Role.USER, parts=(ToolCall(call_id="c", name="t", arguments_json="{}"),))
    with pytest.raises(InvalidValueError):
        Message(role=Role.ASSISTANT, parts=(ToolResult(call_id="c", content="x"),))
    with pytest.raises(InvalidValueError):
        Message(role=Role.USER, parts=())


def test_a_request_starts_with_the_user_and_bounds_its_output() -> None:
    user = Message.user_text("hi")
    assistant = Message(role=Role.ASSISTANT, parts=(TextPart(text="hello"),))
    with pytest.raises(InvalidValueError):
        ModelRequest(model="m", system="", messages=(assistant, user))
    with pytest.raises(InvalidValueError):
        ModelRequest(model="", system="", messages=(user,))
    for bound in (0, 1_000_001, True):
        with pytest.raises(InvalidValueError):
            ModelRequest(model="m", system="", messages=(user,), max_output_tokens=bound)
    spec = ToolSpec.from_descriptor(tool_descriptor(ToolName.GLOB))
    with pytest.raises(InvalidValueError, match="twice"):
        ModelRequest(model="m", system="", messages=(user,), tools=(spec, spec))


def test_a_reply_becomes_the_next_assistant_turn() -> None:
    reply = ModelReply(
        provider="Anthropic", model="m", stop_reason=StopReason.TOOL_USE, usage=TokenUsage(),
        parts=(ReasoningPart(text="t", signature="s"), TextPart(text="a"), TextPart(text="b"),
               ToolCall(call_id="c", name="glob", arguments_json="{}")),
    )  # fmt: skip
    assert reply.text == "ab" and len(reply.tool_calls) == 1
    assert reply.as_message().role is Role.ASSISTANT and reply.as_message().parts == reply.parts
