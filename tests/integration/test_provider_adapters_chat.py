"""The OpenAI and OpenAI-compatible adapters (Chat Completions) against a loopback server speaking the wire.

Keys come from the real Secret Service; the shared HTTP behaviour (retries, redirects, size limits,
timeouts) is covered once, through the Anthropic adapter, in ``test_provider_adapters.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import keyring.backend
import pytest

from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.errors import ProviderOutcomeUnknownError, ProviderRejectedError, ProviderReplyInvalidError
from codeflux.domain.ladder import Effort
from codeflux.domain.models import (
    Message,
    ModelRequest,
    Role,
    StopReason,
    TextPart,
    ToolCall,
    ToolResult,
    tool_specs_for,
)
from codeflux.domain.money import Money, UnknownCost
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tools import ToolName, tool_descriptor
from codeflux.providers.openai import OpenAIAdapter
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.providers.prices import default_price_snapshot
from codeflux.redact import REDACTED, Redactor
from tests.fixtures.provider_servers import (
    ProviderServer,
    Reply,
    a_test_key,
    json_reply,
    openai_completion,
    openai_stream,
    sse_reply,
)

USAGE = {
    "prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
    "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 256, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                  "rejected_prediction_tokens": 0},
}  # fmt: skip
REQUEST = ModelRequest(
    model="gpt-5",
    system="You are terse.",
    messages=(Message.user_text("Run the tests"),),
    tools=tool_specs_for([tool_descriptor(ToolName.RUN_COMMAND)]),
    max_output_tokens=2048,
    effort=Effort.MAX,
)


@pytest.fixture
def openai_key(secret_service: keyring.backend.KeyringBackend) -> str:
    key = a_test_key()
    store_provider_key(ProviderName.OPENAI, Secret(key))
    return key


@pytest.fixture
def openai(server: ProviderServer, openai_key: str) -> Iterator[OpenAIAdapter]:
    with OpenAIAdapter(base_url=server.base_url, redactor=Redactor()) as adapter:
        yield adapter


@pytest.mark.keyring
def test_a_json_reply_with_a_tool_call_maps_usage_with_cached_and_reasoning_tokens(
    server: ProviderServer, openai: OpenAIAdapter, openai_key: str
) -> None:
    server.enqueue(json_reply(openai_completion(
        content=None, tool_calls=[("call_abc", "run_command", '{"argv": ["pytest", "-q"]}')],
        finish_reason="tool_calls", usage=USAGE,
    ), headers=[("x-request-id", "req_123")]))  # fmt: skip

    reply = openai.complete(REQUEST)

    assert reply.provider == "OpenAI" and reply.model == "gpt-5-2025-08-07" and reply.request_id == "req_123"
    assert reply.tool_calls == (
        ToolCall(call_id="call_abc", name="run_command", arguments_json='{"argv": ["pytest", "-q"]}'),
    )
    assert reply.parts == reply.tool_calls
    assert reply.stop_reason is StopReason.TOOL_USE
    assert reply.usage == TokenUsage(input_tokens=200, output_tokens=300, cache_read_tokens=1000,
                                     cache_write_tokens=0, reasoning_tokens=256)  # fmt: skip
    snapshot = default_price_snapshot(ProviderName.OPENAI, reply.model)
    assert snapshot is not None
    # 200 × $1.25/M + 1000 × $0.125/M + 300 × $10/M = $0.003375 → rounded up to the cent.
    assert snapshot.price.cost_of(reply.usage, model=reply.model) == Money.parse("$0.01")
    sent = server.requests[0]
    assert sent.path == "/chat/completions" and sent.headers["authorization"] == f"Bearer {openai_key}"
    body = sent.json()
    assert body["messages"] == [{"role": "system", "content": "You are terse."},
                                {"role": "user", "content": "Run the tests"}]  # fmt: skip
    assert body["max_completion_tokens"] == 2048 and body["reasoning_effort"] == "high"
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "run_command"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["argv"]
    assert body["stream"] is False and "stream_options" not in body


@pytest.mark.keyring
def test_a_stream_with_include_usage_assembles_text_tool_arguments_and_usage(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    server.enqueue(sse_reply(openai_stream(
        text_pieces=["Running", " pytest"], tool_call=("call_9", "run_command", ['{"argv": ["py', 'test"]}']),
        finish_reason="tool_calls", usage=USAGE,
    )))  # fmt: skip
    pieces: list[str] = []

    reply = openai.complete(REQUEST, on_text=pieces.append)

    assert pieces == ["Running", " pytest"]
    assert reply.parts == (
        TextPart(text="Running pytest"),
        ToolCall(call_id="call_9", name="run_command", arguments_json='{"argv": ["pytest"]}'),
    )
    assert reply.usage.cache_read_tokens == 1000 and reply.usage.output_tokens == 300
    body = server.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.keyring
def test_a_stream_without_a_usage_chunk_has_unknown_usage_and_cost(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    server.enqueue(sse_reply(openai_stream(text_pieces=["hi"], usage=None)))

    reply = openai.complete(REQUEST, on_text=lambda _: None)

    assert reply.usage == TokenUsage()
    snapshot = default_price_snapshot(ProviderName.OPENAI, "gpt-5")
    assert snapshot is not None
    assert isinstance(snapshot.price.cost_of(reply.usage, model="gpt-5"), UnknownCost)


@pytest.mark.keyring
@pytest.mark.parametrize("cut_after", [None, 2], ids=["no-done", "cut-inside-a-chunk"])
def test_a_stream_cut_before_done_is_an_unknown_outcome(
    server: ProviderServer, openai: OpenAIAdapter, cut_after: int | None
) -> None:
    server.enqueue(sse_reply(openai_stream(text_pieces=["a", "b"], usage=USAGE, done=False), cut_after=cut_after))

    with pytest.raises(ProviderOutcomeUnknownError):
        openai.complete(REQUEST, on_text=lambda _: None)

    assert len(server.requests) == 1


@pytest.mark.keyring
def test_tool_results_become_tool_messages_after_the_assistant_tool_calls(
    server: ProviderServer, openai: OpenAIAdapter
) -> None:
    server.enqueue(json_reply(openai_completion(content="Fixed.", usage=USAGE)))
    conversation = (
        Message.user_text("Run the tests"),
        Message(role=Role.ASSISTANT, parts=(ToolCall(call_id="call_1", name="run_command",
                                                     arguments_json='{"argv":["pytest"]}'),)),
        Message(role=Role.USER, parts=(ToolResult(call_id="call_1", content="1 failed", is_error=True),
                                       TextPart(text="Fix it"))),
    )  # fmt: skip

    openai.complete(ModelRequest(model="gpt-5", system="", messages=conversation))

    assert server.requests[0].json()["messages"] == [
        {"role": "user", "content": "Run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "run_command", "arguments": '{"argv":["pytest"]}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "error: 1 failed"},
        {"role": "user", "content": "Fix it"},
    ]  # fmt: skip


@pytest.mark.keyring
def test_cached_tokens_above_prompt_tokens_are_a_malformed_reply(server: ProviderServer, openai: OpenAIAdapter) -> None:
    server.enqueue(json_reply(openai_completion(content="x", usage={
        "prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 11}})))  # fmt: skip

    with pytest.raises(ProviderReplyInvalidError, match="malformed"):
        openai.complete(REQUEST)


@pytest.mark.security
@pytest.mark.keyring
def test_a_key_echoed_in_an_openai_error_body_is_redacted(
    server: ProviderServer, openai: OpenAIAdapter, openai_key: str
) -> None:
    body = (b'{"error": {"message": "Incorrect API key provided: {echo}. You can find your API key at '
            b'https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, '
            b'"code": "invalid_api_key"}}')  # fmt: skip
    server.enqueue(Reply(status=401, headers=[("content-type", "application/json")], chunks=[body],
                         echo_header="authorization"))  # fmt: skip

    with pytest.raises(ProviderRejectedError) as raised:
        openai.complete(REQUEST)

    assert openai_key not in str(raised.value)
    assert f"Incorrect API key provided: Bearer {REDACTED}" in str(raised.value)
    assert raised.value.error_type == "invalid_request_error"


# ------------------------------------------------------------------------------- OpenAI-compatible


def test_a_compatible_server_without_a_key_gets_no_authorization_and_the_older_token_field(
    server: ProviderServer,
) -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}
    server.enqueue(json_reply(openai_completion(content="hello", usage=usage, model="qwen2.5-coder:7b")))

    with OpenAICompatibleAdapter(base_url=f"{server.base_url}/v1/", uses_key=False) as adapter:
        reply = adapter.complete(ModelRequest(model="qwen2.5-coder:7b", system="", messages=REQUEST.messages,
                                              effort=Effort.HIGH))  # fmt: skip

    host = server.base_url.removeprefix("http://")
    assert adapter.display_name == reply.provider == f"OpenAI-compatible ({host})"
    # No cached-token report from a server that does not report caching: cache reads are 0 (said in the
    # reply's note) and every prompt token counts as input (issue 21 item 10).
    assert reply.usage == TokenUsage(input_tokens=50, output_tokens=7, cache_read_tokens=0, cache_write_tokens=0)
    assert reply.usage_note is not None and "does not report caching" in reply.usage_note
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions" and "authorization" not in sent.headers
    body = sent.json()
    assert body["max_tokens"] == 8192 and "max_completion_tokens" not in body and "reasoning_effort" not in body


@pytest.mark.keyring
def test_a_compatible_server_that_needs_a_key_gets_the_openai_compatible_entry(
    server: ProviderServer, secret_service: keyring.backend.KeyringBackend
) -> None:
    key = a_test_key()
    store_provider_key(ProviderName.OPENAI_COMPATIBLE, Secret(key))
    server.enqueue(sse_reply(openai_stream(text_pieces=["ok"], usage={"prompt_tokens": 3, "completion_tokens": 1})))

    with OpenAICompatibleAdapter(base_url=f"{server.base_url}/v1", uses_key=True) as adapter:
        reply = adapter.complete(REQUEST, on_text=lambda _: None)

    assert reply.text == "ok"
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
