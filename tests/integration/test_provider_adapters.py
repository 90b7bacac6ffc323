"""The Anthropic adapter against a loopback server speaking the real Messages API wire (JSON and SSE).

Keys come from the real Secret Service (``secret_service`` + ``store_provider_key``). The Chat
Completions adapters are in ``test_provider_adapters_chat.py``; retries, timeouts and proxies in
``test_provider_retries.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.errors import (
    ProviderOutcomeUnknownError,
    ProviderRejectedError,
    ProviderReplyInvalidError,
)
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
    tool_specs_for,
)
from codeflux.domain.money import Money, UnknownCost
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tools import ToolName, tool_descriptor
from codeflux.providers.anthropic import ANTHROPIC_VERSION, AnthropicAdapter
from codeflux.providers.prices import default_price_snapshot
from codeflux.providers.transport import HttpPolicy, ProviderHttp
from codeflux.redact import REDACTED, Redactor
from tests.fixtures.provider_servers import (
    ProviderServer,
    Reply,
    SleepRecorder,
    a_test_key,
    anthropic_message,
    anthropic_stream,
    json_reply,
    sse_reply,
)

FAST = HttpPolicy(backoff_base_s=0.25, backoff_cap_s=1.0, retry_after_cap_s=30.0, max_attempts=4)
FULL_USAGE = {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 100,
              "cache_read_input_tokens": 2000}  # fmt: skip
TOOLS = tool_specs_for([tool_descriptor(ToolName.READ_FILE), tool_descriptor(ToolName.RUN_COMMAND)])
REQUEST = ModelRequest(
    model="claude-sonnet-4-5",
    system="You are terse.",
    messages=(Message.user_text("What does README.md say?"),),
    tools=TOOLS,
    max_output_tokens=1024,
)


@pytest.fixture
def adapter(server: ProviderServer, anthropic_key: str, waits: SleepRecorder) -> Iterator[AnthropicAdapter]:
    redactor = Redactor()
    http = ProviderHttp(provider="Anthropic", redactor=redactor, policy=FAST, sleep=waits, jitter=lambda: 1.0)
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor, http=http) as opened:
        yield opened


# ---------------------------------------------------------------------------------------- the wire


@pytest.mark.keyring
def test_a_json_reply_with_text_and_a_tool_call_maps_to_domain_parts_and_usage(
    server: ProviderServer, adapter: AnthropicAdapter, anthropic_key: str
) -> None:
    server.enqueue(json_reply(anthropic_message(
        content=[{"type": "text", "text": "Let me read it."},
                 {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "README.md"}}],
        stop_reason="tool_use", usage=FULL_USAGE,
    ), headers=[("request-id", "req_011CQ")]))  # fmt: skip

    reply = adapter.complete(REQUEST)

    assert reply.provider == "Anthropic" and reply.model == "claude-sonnet-4-5-20250929"
    assert reply.text == "Let me read it."
    assert reply.tool_calls == (ToolCall(call_id="toolu_01A", name="read_file", arguments_json='{"path":"README.md"}'),)
    assert reply.tool_calls[0].arguments() == {"path": "README.md"}
    assert reply.stop_reason is StopReason.TOOL_USE and reply.request_id == "req_011CQ"
    assert reply.usage == TokenUsage(input_tokens=2095, output_tokens=503, cache_read_tokens=2000,
                                     cache_write_tokens=100, cache_write_1h_tokens=0,  # no breakdown: 5-minute
                                     reasoning_tokens=None)  # fmt: skip
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == anthropic_key
    assert sent.headers["anthropic-version"] == ANTHROPIC_VERSION
    body = sent.json()
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 1024 and body["stream"] is False
    # Prompt caching: the system prompt, the last tool and the newest message carry the breakpoints.
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What does README.md say?",
                                                              "cache_control": {"type": "ephemeral"}}]}]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    read_file = body["tools"][0]
    assert read_file["name"] == "read_file"
    assert read_file["input_schema"]["required"] == ["path"]
    assert read_file["input_schema"]["additionalProperties"] is False
    assert body["tools"][1]["input_schema"]["properties"]["argv"]["type"] == "array"
    assert "thinking" not in body


@pytest.mark.keyring
def test_a_streamed_reply_delivers_text_as_it_arrives_and_assembles_tool_input_and_thinking(
    server: ProviderServer, adapter: AnthropicAdapter
) -> None:
    server.enqueue(sse_reply(anthropic_stream(
        thinking=("The user wants the README.", "EqQBCgIYAhIM"),
        text_pieces=["Reading ", "the file", "."],
        tool_use=("toolu_02B", "read_file", ['{"pa', 'th": "REA', 'DME.md"}']),
        start_usage={"input_tokens": 472, "output_tokens": 2, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0},
        final_usage={"output_tokens": 89}, stop_reason="tool_use",
    )))  # fmt: skip
    pieces: list[str] = []

    reply = adapter.complete(
        ModelRequest(model="claude-sonnet-4-5", system="", messages=REQUEST.messages, effort=Effort.HIGH,
                     max_output_tokens=20_000), on_text=pieces.append,
    )  # fmt: skip

    assert pieces == ["Reading ", "the file", "."]
    assert reply.parts == (
        ReasoningPart(text="The user wants the README.", signature="EqQBCgIYAhIM"),
        TextPart(text="Reading the file."),
        ToolCall(call_id="toolu_02B", name="read_file", arguments_json='{"path": "README.md"}'),
    )
    assert reply.usage == TokenUsage(input_tokens=472, output_tokens=89, cache_read_tokens=0, cache_write_tokens=0,
                                     cache_write_1h_tokens=0)
    body = server.requests[0].json()
    assert body["stream"] is True and "system" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}  # half of 20,000 stays for the answer


@pytest.mark.keyring
def test_a_conversation_with_reasoning_tool_calls_and_results_goes_out_in_messages_api_shape(
    server: ProviderServer, adapter: AnthropicAdapter
) -> None:
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "Done."}], usage=FULL_USAGE)))
    conversation = (
        Message.user_text("Run the tests"),
        Message(role=Role.ASSISTANT, parts=(ReasoningPart(text="pytest it is", signature="sig"),
                                            # an OpenAI reasoning item (after a switch of provider): not Anthropic's
                                            ReasoningPart(text="", signature="gAAAAB", item_id="rs_1"),
                                            ToolCall(call_id="toolu_1", name="run_command",
                                                     arguments_json='{"argv": ["pytest", "-q"]}'))),
        Message(role=Role.USER, parts=(ToolResult(call_id="toolu_1", content="1 failed", is_error=True),)),
    )  # fmt: skip

    adapter.complete(ModelRequest(model="claude-sonnet-4-5", system="s", messages=conversation))

    # The first turn (what the previous request sent) and the newest one carry cache breakpoints; a thinking
    # block never does.
    assert server.requests[0].json()["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Run the tests", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "pytest it is", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {"argv": ["pytest", "-q"]}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed", "is_error": True,
             "cache_control": {"type": "ephemeral"}}]},
    ]  # fmt: skip


@pytest.mark.keyring
def test_a_reply_without_usage_has_unknown_usage_and_an_unknown_cost_never_zero(
    server: ProviderServer, adapter: AnthropicAdapter
) -> None:
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "hi"}], usage=None)))

    reply = adapter.complete(REQUEST)

    assert reply.usage == TokenUsage()
    snapshot = default_price_snapshot(ProviderName.ANTHROPIC, reply.model)
    assert snapshot is not None
    cost = snapshot.price.cost_of(reply.usage, model=reply.model)
    assert isinstance(cost, UnknownCost)
    assert str(cost).startswith("unknown (input tokens not reported")
    assert "$0" not in str(cost)


@pytest.mark.keyring
def test_a_stream_without_final_usage_leaves_output_unknown(server: ProviderServer, adapter: AnthropicAdapter) -> None:
    server.enqueue(sse_reply(anthropic_stream(text_pieces=["ok"], start_usage={"input_tokens": 10}, final_usage=None)))

    reply = adapter.complete(REQUEST, on_text=lambda _: None)

    assert reply.usage.input_tokens == 10
    assert reply.usage.output_tokens is None  # message_start's placeholder output count is never used


@pytest.mark.keyring
def test_a_known_usage_is_priced_exactly(server: ProviderServer, adapter: AnthropicAdapter) -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}  # fmt: skip
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "x"}], usage=usage)))

    reply = adapter.complete(REQUEST)

    snapshot = default_price_snapshot(ProviderName.ANTHROPIC, reply.model)
    assert snapshot is not None
    assert snapshot.price.cost_of(reply.usage, model=reply.model) == Money.parse("$3.00")


# ------------------------------------------------------------------------------ broken and odd replies


@pytest.mark.keyring
@pytest.mark.parametrize("cut_after", [3, 7])
def test_a_stream_cut_mid_way_is_an_unknown_outcome_and_is_not_retried(
    server: ProviderServer, adapter: AnthropicAdapter, cut_after: int
) -> None:
    server.enqueue(sse_reply(anthropic_stream(text_pieces=["a", "b", "c", "d"], final_usage={"output_tokens": 4}),
                             cut_after=cut_after))  # fmt: skip

    with pytest.raises(ProviderOutcomeUnknownError) as raised:
        adapter.complete(REQUEST, on_text=lambda _: None)

    assert raised.value.may_have_been_processed
    assert len(server.requests) == 1


@pytest.mark.keyring
def test_a_stream_that_ends_before_message_stop_is_an_unknown_outcome(
    server: ProviderServer, adapter: AnthropicAdapter
) -> None:
    server.enqueue(sse_reply(anthropic_stream(text_pieces=["a"], final_usage={"output_tokens": 1}, finish=False)))

    with pytest.raises(ProviderOutcomeUnknownError, match="before message_stop"):
        adapter.complete(REQUEST, on_text=lambda _: None)


@pytest.mark.keyring
def test_an_error_event_mid_stream_is_an_unknown_outcome(server: ProviderServer, adapter: AnthropicAdapter) -> None:
    events = anthropic_stream(text_pieces=["a"], finish=False)[:4]
    events.append(b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}\n\n')
    server.enqueue(sse_reply(events))

    with pytest.raises(ProviderOutcomeUnknownError, match="overloaded_error"):
        adapter.complete(REQUEST, on_text=lambda _: None)


@pytest.mark.keyring
@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"content": "not a list"}', json.dumps(anthropic_message(
        content=[{"type": "text", "text": "x"}], usage={"input_tokens": 12.0, "output_tokens": 1})).encode()],
    ids=["not-json", "wrong-shape", "float-token-count"],
)  # fmt: skip
def test_a_malformed_reply_is_refused_as_invalid_and_possibly_billed(
    server: ProviderServer, adapter: AnthropicAdapter, body: bytes
) -> None:
    server.enqueue(Reply(headers=[("content-type", "application/json")], chunks=[body]))

    with pytest.raises(ProviderReplyInvalidError) as raised:
        adapter.complete(REQUEST)

    assert raised.value.problem == "malformed" and raised.value.may_have_been_processed
    assert len(server.requests) == 1


@pytest.mark.keyring
def test_a_redirect_is_refused_and_never_followed(server: ProviderServer, adapter: AnthropicAdapter) -> None:
    with ProviderServer() as elsewhere:
        server.enqueue(Reply(status=307, headers=[("location", f"{elsewhere.base_url}/v1/messages?token=abc")]))

        with pytest.raises(ProviderReplyInvalidError) as raised:
            adapter.complete(REQUEST)

        assert raised.value.problem == "redirect"
        assert "token=abc" not in str(raised.value) and elsewhere.base_url not in str(raised.value)
        assert elsewhere.requests == []


@pytest.mark.keyring
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversize_body_is_refused(server: ProviderServer, anthropic_key: str, chunked: bool) -> None:
    small = HttpPolicy(max_response_bytes=64 * 1024)
    big = json.dumps(anthropic_message(content=[{"type": "text", "text": "x" * 200_000}], usage=FULL_USAGE)).encode()
    server.enqueue(Reply(headers=[("content-type", "application/json")], chunks=[big[i : i + 8192] for i in
                                                                                 range(0, len(big), 8192)],
                         chunked=chunked))  # fmt: skip

    with AnthropicAdapter(base_url=server.base_url, policy=small) as adapter, pytest.raises(
        ProviderReplyInvalidError
    ) as raised:  # fmt: skip
        adapter.complete(REQUEST)

    assert raised.value.problem == "too-large"


@pytest.mark.keyring
def test_an_oversize_stream_event_is_refused(server: ProviderServer, anthropic_key: str) -> None:
    small = HttpPolicy(max_event_bytes=4096)
    server.enqueue(sse_reply(anthropic_stream(text_pieces=["y" * 10_000], final_usage={"output_tokens": 1})))

    with AnthropicAdapter(base_url=server.base_url, policy=small) as adapter, pytest.raises(
        ProviderReplyInvalidError, match="too-large"
    ):  # fmt: skip
        adapter.complete(REQUEST, on_text=lambda _: None)


# ------------------------------------------------------------------------------------------------ keys


@pytest.mark.keyring
def test_the_key_is_fetched_from_the_credential_store_at_every_call(
    server: ProviderServer, adapter: AnthropicAdapter, anthropic_key: str
) -> None:
    reply = json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage=FULL_USAGE))
    server.enqueue(reply, reply)
    adapter.complete(REQUEST)
    rotated = a_test_key()
    store_provider_key(ProviderName.ANTHROPIC, Secret(rotated))

    adapter.complete(REQUEST)

    assert [r.headers["x-api-key"] for r in server.requests] == [anthropic_key, rotated]


@pytest.mark.security
@pytest.mark.keyring
def test_a_key_echoed_back_in_an_error_body_is_redacted_from_the_error(
    server: ProviderServer, adapter: AnthropicAdapter, anthropic_key: str
) -> None:
    echo = b'{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key {echo}"}}'
    server.enqueue(Reply(status=401, headers=[("content-type", "application/json")], chunks=[echo],
                         echo_header="x-api-key"))  # fmt: skip

    with pytest.raises(ProviderRejectedError) as raised:
        adapter.complete(REQUEST)

    error = raised.value
    assert error.status == 401 and error.error_type == "authentication_error"
    assert anthropic_key not in str(error) and anthropic_key not in error.detail
    assert anthropic_key not in repr(error.args)
    assert f"invalid x-api-key {REDACTED}" in str(error)
    assert len(server.requests) == 1
