"""Issue 21 item 7: the OpenAI adapter speaks the Responses API for the models the capability table puts
there (``gpt-5-codex``), and Chat Completions for the others — against a loopback server answering with
the API reference's own examples (``tests/data/provider_wire/openai_responses.json``, "from documentation,
not recorded", with URL and date); the request bodies are checked against the documented requests.
Keys come from the real Secret Service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import keyring.backend
import pytest

from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.errors import ProviderOutcomeUnknownError
from codeflux.domain.ladder import Effort
from codeflux.domain.models import (
    Message,
    ModelRequest,
    ReasoningPart,
    Role,
    StopReason,
    TextPart,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import OpenAIWire, openai_wire
from codeflux.providers.openai import OpenAIAdapter
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.redact import Redactor
from tests.fixtures.provider_servers import ProviderServer, a_test_key, json_reply, openai_completion, sse_reply

pytestmark = pytest.mark.keyring

SAMPLES_FILE = Path(__file__).resolve().parents[1] / "data" / "provider_wire" / "openai_responses.json"
CODEX = "gpt-5-codex"


def sample(name: str) -> dict[str, Any]:
    data = json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))
    assert data["label"] == "from documentation, not recorded" and data["transcribed_on"] == "2026-12-03"
    chosen: dict[str, Any] = data["samples"][name]
    assert chosen["source"].startswith("https://platform.openai.com/docs/api-reference/responses/create")
    return chosen


def guide_sample(name: str) -> dict[str, Any]:
    """A sample transcribed from OpenAI's reasoning guide (same file, same label)."""
    chosen = json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))["samples"][name]
    assert chosen["source"].startswith("https://developers.openai.com/api/docs/guides/reasoning")
    return cast(dict[str, Any], chosen)


ENCRYPTED = "gAAAAABo-opaque-to-codeflux=="  # the value of the encrypted_content property stateless responses carry


def reasoning_reply(*after: dict[str, Any]) -> dict[str, Any]:
    """The documented reasoning response, stateless, its output the guide's reasoning item (with the
    ``encrypted_content`` the guide says a stateless response's reasoning items include) followed by ``after``."""
    documented = guide_sample("reasoning_summary_output")["output"][0]
    assert "encrypted_content" in guide_sample("stateless_reasoning_request")["text"]
    return {**sample("reasoning_response")["body"], "store": False,
            "output": [{**documented, "encrypted_content": ENCRYPTED}, *after]}


def weather_tool() -> ToolSpec:
    """The documented example's function, as a codeflux tool spec."""
    documented = sample("functions_request")["body"]["tools"][0]
    return ToolSpec(name=documented["name"], description=documented["description"],
                    input_schema_json=json.dumps(documented["parameters"]))


@pytest.fixture
def openai(server: ProviderServer, secret_service: keyring.backend.KeyringBackend) -> Iterator[OpenAIAdapter]:
    store_provider_key(ProviderName.OPENAI, Secret(a_test_key()))
    with OpenAIAdapter(base_url=server.base_url, redactor=Redactor()) as adapter:
        yield adapter


def test_the_model_table_puts_codex_on_the_responses_api_and_the_others_on_chat_completions() -> None:
    assert openai_wire(CODEX) is OpenAIWire.RESPONSES
    assert openai_wire("gpt-5") is OpenAIWire.CHAT_COMPLETIONS
    assert openai_wire("some-unknown-model") is OpenAIWire.CHAT_COMPLETIONS


def test_a_function_call_request_goes_to_responses_in_the_documented_shape_and_its_reply_maps(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    documented = sample("functions_request")["body"]
    server.enqueue(json_reply(sample("functions_response")["body"], headers=[("x-request-id", "req_123")]))
    question = documented["input"]

    reply = openai.complete(ModelRequest(model=CODEX, system="You are terse.", tools=(weather_tool(),),
                                         messages=(Message.user_text(question),), max_output_tokens=2048))

    sent = server.requests[0]
    assert sent.path == "/responses"
    body = sent.json()
    # The documented tool shape exactly (a flat function: type, name, description, parameters).
    assert body["tools"] == [{key: documented["tools"][0][key] for key in ("type", "name", "description",
                                                                            "parameters")}]
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": question}]}]
    assert body["model"] == CODEX and body["instructions"] == "You are terse."
    assert body["max_output_tokens"] == 2048 and body["store"] is False and body["stream"] is False
    # and what a stateless reasoning model needs besides: its reasoning items' encrypted content (see below)
    assert body["include"] == ["reasoning.encrypted_content"]
    assert set(body) - set(documented) <= {"instructions", "max_output_tokens", "store", "stream", "include"}
    # The documented reply: one function call, usage without input details (cache reads unknown).
    assert reply.tool_calls == (ToolCall(call_id="call_unLAR8MvFNptuiZK6K6HCy5k", name="get_current_weather",
                                         arguments_json='{"location":"Boston, MA","unit":"celsius"}'),)
    assert reply.stop_reason is StopReason.TOOL_USE and reply.model == "gpt-5.6-sol"
    assert reply.request_id == "req_123"
    assert reply.usage == TokenUsage(input_tokens=291, output_tokens=23, cache_read_tokens=None,
                                     cache_write_tokens=None, reasoning_tokens=0)


def test_reasoning_effort_and_the_documented_reasoning_usage(server: ProviderServer, openai: OpenAIAdapter) -> None:
    documented = sample("reasoning_request")["body"]
    server.enqueue(json_reply(sample("reasoning_response")["body"]))

    reply = openai.complete(ModelRequest(model=CODEX, system="", effort=Effort.HIGH,
                                         messages=(Message.user_text(documented["input"]),)))

    body = server.requests[0].json()
    assert body["reasoning"] == documented["reasoning"] == {"effort": "high"}
    assert "instructions" not in body
    assert reply.text == "The classic tongue twister..." and reply.stop_reason is StopReason.END_TURN
    assert reply.usage == TokenUsage(input_tokens=81, output_tokens=1035, cache_read_tokens=0, cache_write_tokens=0,
                                     reasoning_tokens=832)


def test_a_conversation_with_tool_calls_and_results_goes_out_as_input_items(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    server.enqueue(json_reply(sample("reasoning_response")["body"]))
    conversation = (
        Message.user_text("What is the weather like in Boston today?"),
        Message(role=Role.ASSISTANT, parts=(TextPart(text="Checking."), ToolCall(
            call_id="call_1", name="get_current_weather", arguments_json='{"location":"Boston, MA"}'))),
        Message(role=Role.USER, parts=(ToolResult(call_id="call_1", content="no such unit", is_error=True),)),
    )  # fmt: skip

    openai.complete(ModelRequest(model=CODEX, system="s", messages=conversation, tools=(weather_tool(),)))

    assert server.requests[0].json()["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "What is the weather like in Boston today?"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_current_weather",
         "arguments": '{"location":"Boston, MA"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "error: no such unit"},
    ]  # fmt: skip


def test_the_documented_stream_delivers_text_and_the_final_response(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    stream = sample("streaming_response")["sse"]
    server.enqueue(sse_reply([chunk.encode() + b"\n\n" for chunk in stream.strip().split("\n\n")]))
    pieces: list[str] = []

    reply = openai.complete(ModelRequest(model=CODEX, system="You are a helpful assistant.",
                                         messages=(Message.user_text("Hello!"),)), on_text=pieces.append)

    assert server.requests[0].json()["stream"] is True
    assert pieces == ["Hi"]  # the documented stream elides the other deltas ("...")
    assert reply.text == "Hi there! How can I assist you today?" and reply.stop_reason is StopReason.END_TURN
    assert reply.usage == TokenUsage(input_tokens=37, output_tokens=11, reasoning_tokens=0)


def test_a_stream_without_its_final_response_has_an_unknown_outcome(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    stream = sample("streaming_response")["sse"]
    events = [chunk.encode() + b"\n\n" for chunk in stream.strip().split("\n\n")]
    server.enqueue(sse_reply(events[:-1]))  # response.completed never comes

    with pytest.raises(ProviderOutcomeUnknownError):
        openai.complete(ModelRequest(model=CODEX, system="", messages=(Message.user_text("Hello!"),)),
                        on_text=lambda _: None)


def test_cached_and_written_tokens_come_off_the_input(server: ProviderServer, openai: OpenAIAdapter) -> None:
    reply_body = sample("reasoning_response")["body"]
    reply_body["usage"]["input_tokens_details"] = {"cached_tokens": 50, "cache_write_tokens": 20}
    server.enqueue(json_reply(reply_body))

    reply = openai.complete(ModelRequest(model=CODEX, system="", messages=(Message.user_text("hi"),)))

    assert reply.usage == TokenUsage(input_tokens=11, output_tokens=1035, cache_read_tokens=50, cache_write_tokens=20,
                                     reasoning_tokens=832)


def test_other_models_and_openai_compatible_servers_stay_on_chat_completions(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    # The positive control for the route above.
    server.enqueue(json_reply(openai_completion(content="ok", usage={"prompt_tokens": 5, "completion_tokens": 1})),
                   json_reply(openai_completion(content="ok", usage={"prompt_tokens": 5, "completion_tokens": 1})))
    openai.complete(ModelRequest(model="gpt-5", system="", messages=(Message.user_text("hi"),)))
    with OpenAICompatibleAdapter(base_url=server.base_url, uses_key=False) as local:
        local.complete(ModelRequest(model=CODEX, system="", messages=(Message.user_text("hi"),)))

    assert [request.path for request in server.requests] == ["/chat/completions", "/chat/completions"]


def test_reasoning_items_come_back_with_their_encrypted_content_on_the_next_turn(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    documented = guide_sample("reasoning_summary_output")["output"]
    server.enqueue(json_reply(reasoning_reply(documented[1])))
    server.enqueue(json_reply(sample("reasoning_response")["body"]))
    question = Message.user_text("What is the capital of France?")

    first = openai.complete(ModelRequest(model=CODEX, system="", effort=Effort.LOW, messages=(question,)))

    sent = server.requests[0].json()
    stateless = guide_sample("stateless_reasoning_request")["body"]
    assert sent["store"] is stateless["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]  # the value the guide says the API accepts
    summary = documented[0]["summary"][0]["text"]
    assert first.parts == (ReasoningPart(text=summary, signature=ENCRYPTED, item_id=documented[0]["id"]),
                           TextPart(text="The capital of France is Paris."))

    follow_up = (question, Message(role=Role.ASSISTANT, parts=first.parts), Message.user_text("And of Italy?"))
    openai.complete(ModelRequest(model=CODEX, system="", effort=Effort.LOW, messages=follow_up))

    assert server.requests[1].json()["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "What is the capital of France?"}]},
        {"type": "reasoning", "id": documented[0]["id"], "summary": documented[0]["summary"],
         "encrypted_content": ENCRYPTED},
        {"role": "assistant", "content": [{"type": "output_text", "text": "The capital of France is Paris."}]},
        {"role": "user", "content": [{"type": "input_text", "text": "And of Italy?"}]},
    ]  # fmt: skip


def test_the_reasoning_before_a_function_call_goes_back_before_the_call_and_its_output(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    call = sample("functions_response")["body"]["output"][0]
    server.enqueue(json_reply(reasoning_reply(call)))
    server.enqueue(json_reply(sample("reasoning_response")["body"]))
    question = Message.user_text(sample("functions_request")["body"]["input"])

    first = openai.complete(ModelRequest(model=CODEX, system="", tools=(weather_tool(),), messages=(question,)))
    assert first.stop_reason is StopReason.TOOL_USE
    anthropic_thinking = ReasoningPart(text="Anthropic's", signature="EqQBCgIYAhIM")  # never sent to OpenAI
    turn = Message(role=Role.ASSISTANT, parts=(anthropic_thinking, *first.parts))
    result = Message(role=Role.USER, parts=(ToolResult(call_id=call["call_id"], content="12 C"),))
    openai.complete(ModelRequest(model=CODEX, system="", tools=(weather_tool(),), messages=(question, turn, result)))

    items = server.requests[1].json()["input"]
    assert [item.get("type") for item in items[1:]] == ["reasoning", "function_call", "function_call_output"]
    assert items[1]["encrypted_content"] == ENCRYPTED and items[2]["call_id"] == items[3]["call_id"] == call["call_id"]
    assert server.requests[1].json()["include"] == ["reasoning.encrypted_content"]


def test_a_reasoning_item_without_encrypted_content_is_not_kept(server: ProviderServer, openai: OpenAIAdapter) -> None:
    documented = guide_sample("reasoning_summary_output")["output"]  # as a stored response returns it
    server.enqueue(json_reply({**sample("reasoning_response")["body"], "output": documented}))

    reply = openai.complete(ModelRequest(model=CODEX, system="", messages=(Message.user_text("Capital?"),)))

    assert reply.parts == (TextPart(text="The capital of France is Paris."),)
