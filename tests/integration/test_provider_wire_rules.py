"""Issue 15 item 7, at the wire: per-model request parameters, no empty assistant turn, stop reasons in one
vocabulary — both providers' adapters against the loopback server speaking their real wire formats.

The reproduction of the issue's "Why": the loop's default output bound (8,192) at ``high`` effort used to
send Anthropic ``thinking: {type: enabled, budget_tokens: 8191}`` — no room left for the answer, and the
deprecated form on models that have adaptive thinking; OpenAI got ``reasoning_effort`` for every model,
``gpt-4o`` of codeflux's own price table included (HTTP 400); an empty assistant turn went out as
``content: []`` / ``content: null``.
"""

from __future__ import annotations

from collections.abc import Iterator

import keyring.backend
import pytest

from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.errors import ProviderRequestInvalidError
from codeflux.domain.ladder import Effort
from codeflux.domain.models import Message, ModelRequest, Role, StopReason, TextPart, ToolCall, ToolResult
from codeflux.domain.providers import ProviderName
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.capabilities import MIN_THINKING_BUDGET
from codeflux.providers.openai import OpenAIAdapter
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.redact import Redactor
from tests.fixtures.provider_servers import (
    ProviderServer,
    a_test_key,
    anthropic_message,
    anthropic_stream,
    json_reply,
    openai_completion,
    openai_stream,
    sse_reply,
)

LOOP_OUTPUT_BOUND = 8192  # LoopLimits().max_output_tokens
HELLO = (Message.user_text("Fix add() for negative numbers."),)
A_TOOL_CYCLE = (
    Message.user_text("Fix add()."),
    Message(role=Role.ASSISTANT, parts=(ToolCall(call_id="c1", name="read_file", arguments_json='{"path": "a.py"}'),)),
    Message(role=Role.USER, parts=(ToolResult(call_id="c1", content="def add(a, b): ..."),)),
)
ANTHROPIC_OK = json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}]))
OPENAI_OK = json_reply(openai_completion(content="ok"))


@pytest.fixture
def anthropic(server: ProviderServer, anthropic_key: str) -> Iterator[AnthropicAdapter]:
    with AnthropicAdapter(base_url=server.base_url, redactor=Redactor()) as adapter:
        yield adapter


@pytest.fixture
def openai(server: ProviderServer, secret_service: keyring.backend.KeyringBackend) -> Iterator[OpenAIAdapter]:
    store_provider_key(ProviderName.OPENAI, Secret(a_test_key()))
    with OpenAIAdapter(base_url=server.base_url, redactor=Redactor()) as adapter:
        yield adapter


def sent_by(adapter: AnthropicAdapter | OpenAIAdapter, server: ProviderServer, *, model: str, effort: Effort | None,
            max_output_tokens: int = LOOP_OUTPUT_BOUND,
            messages: tuple[Message, ...] = HELLO) -> dict[str, object]:
    """The body ``adapter`` sent for one request (the server answers a plain reply in the adapter's format)."""
    server.enqueue(ANTHROPIC_OK if isinstance(adapter, AnthropicAdapter) else OPENAI_OK)
    adapter.complete(ModelRequest(model=model, system="s", messages=messages, effort=effort,
                                  max_output_tokens=max_output_tokens))
    body: dict[str, object] = server.requests[-1].json()
    return body


# ──────────────────────────────────────────────────────────────────────────────── Anthropic thinking


@pytest.mark.keyring
def test_the_loop_bound_at_high_effort_leaves_room_for_the_answer(
    server: ProviderServer, anthropic: AnthropicAdapter
) -> None:
    """Before: ``{"type": "enabled", "budget_tokens": 8191}`` with ``max_tokens`` 8192 — one token to answer."""
    body = sent_by(anthropic, server, model="claude-sonnet-4-5", effort=Effort.HIGH)

    assert body["max_tokens"] == 8192
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}  # half stays for the answer
    assert "output_config" not in body


@pytest.mark.keyring
@pytest.mark.parametrize("effort", list(Effort))
@pytest.mark.parametrize("bound", [1024, 2047, 2048, 8192, 20_000, 64_000])
def test_a_thinking_budget_is_at_least_1024_and_at_most_half_the_output_bound(
    server: ProviderServer, anthropic: AnthropicAdapter, effort: Effort, bound: int
) -> None:
    body = sent_by(anthropic, server, model="claude-opus-4-5-20251101", effort=effort, max_output_tokens=bound)

    thinking = body.get("thinking")
    if thinking is None:  # low effort, or no room for 1,024 thinking tokens beside the answer
        assert effort is Effort.LOW or bound // 2 < MIN_THINKING_BUDGET
        return
    assert isinstance(thinking, dict) and thinking["type"] == "enabled"
    assert MIN_THINKING_BUDGET <= thinking["budget_tokens"] <= bound // 2 < body["max_tokens"]  # type: ignore[operator]


@pytest.mark.keyring
@pytest.mark.parametrize(("model", "effort", "sent_effort"), [
    ("claude-opus-4-6", Effort.HIGH, "high"), ("claude-opus-4-6", Effort.MAX, "max"),
    ("claude-opus-4-7", Effort.LOW, "low"), ("claude-opus-4-7", Effort.MEDIUM, "medium"),
    ("claude-sonnet-4-6", Effort.MAX, "high"),  # no `max` on Sonnet 4.6
])  # fmt: skip
def test_models_with_adaptive_thinking_get_the_adaptive_form_and_an_effort_never_a_budget(
    server: ProviderServer, anthropic: AnthropicAdapter, model: str, effort: Effort, sent_effort: str
) -> None:
    body = sent_by(anthropic, server, model=model, effort=effort)

    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": sent_effort}
    assert body["max_tokens"] == LOOP_OUTPUT_BOUND


@pytest.mark.keyring
@pytest.mark.parametrize("model", ["claude-3-haiku-20240307", "claude-future-9"])
def test_a_model_not_in_the_table_gets_no_thinking_parameter(
    server: ProviderServer, anthropic: AnthropicAdapter, model: str
) -> None:
    body = sent_by(anthropic, server, model=model, effort=Effort.MAX)

    assert "thinking" not in body and "output_config" not in body


# ─────────────────────────────────────────────────────────────────────────────── OpenAI reasoning_effort


@pytest.mark.keyring
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano",
                                   "some-new-model"])
def test_reasoning_effort_never_goes_to_a_model_that_does_not_reason(
    server: ProviderServer, openai: OpenAIAdapter, model: str
) -> None:
    """Before: ``reasoning_effort`` for every model — a 400 from gpt-4o and gpt-4.1, in codeflux's own prices."""
    body = sent_by(openai, server, model=model, effort=Effort.HIGH)

    assert "reasoning_effort" not in body
    assert body["max_completion_tokens"] == LOOP_OUTPUT_BOUND


@pytest.mark.keyring
@pytest.mark.parametrize(("model", "effort", "sent"), [
    ("gpt-5", Effort.LOW, "low"), ("gpt-5-mini", Effort.MEDIUM, "medium"),
    ("gpt-5-nano-2025-08-07", Effort.HIGH, "high"), ("o3", Effort.MAX, "high"), ("o4-mini", Effort.HIGH, "high"),
])  # fmt: skip
def test_reasoning_models_get_their_reasoning_effort(
    server: ProviderServer, openai: OpenAIAdapter, model: str, effort: Effort, sent: str
) -> None:
    assert sent_by(openai, server, model=model, effort=effort)["reasoning_effort"] == sent


@pytest.mark.keyring
def test_no_effort_asked_sends_no_reasoning_effort(server: ProviderServer, openai: OpenAIAdapter) -> None:
    assert "reasoning_effort" not in sent_by(openai, server, model="gpt-5", effort=None)


def test_an_openai_compatible_server_never_gets_reasoning_effort(server: ProviderServer) -> None:
    with OpenAICompatibleAdapter(base_url=server.base_url, uses_key=False) as adapter:
        server.enqueue(OPENAI_OK)
        adapter.complete(ModelRequest(model="gpt-5", system="", messages=HELLO, effort=Effort.HIGH))

    body = server.requests[0].json()
    assert "reasoning_effort" not in body and body["max_tokens"] == 8192


# ──────────────────────────────────────────────────────────────────────────────────── empty turns


def an_empty_turn(text: str) -> tuple[Message, ...]:
    """A conversation with an empty assistant turn in it, as an older codeflux stored after an empty reply."""
    return (Message.user_text("Fix add()."), Message(role=Role.ASSISTANT, parts=(TextPart(text=text),)),
            Message.user_text("These plan steps are not done yet"))


@pytest.mark.keyring
@pytest.mark.parametrize("text", ["", "  \n"])
def test_anthropic_refuses_to_send_an_empty_assistant_turn_and_nothing_is_sent(
    server: ProviderServer, anthropic: AnthropicAdapter, text: str
) -> None:
    """Before: ``{"role": "assistant", "content": []}`` went out (HTTP 400), on every resume."""
    with pytest.raises(ProviderRequestInvalidError, match="empty assistant turn") as raised:
        anthropic.complete(ModelRequest(model="claude-sonnet-4-5", system="", messages=an_empty_turn(text)))

    assert not raised.value.may_have_been_processed
    assert server.requests == []


@pytest.mark.keyring
@pytest.mark.parametrize("text", ["", "  \n"])
def test_openai_refuses_to_send_an_empty_assistant_turn_and_nothing_is_sent(
    server: ProviderServer, openai: OpenAIAdapter, text: str
) -> None:
    """Before: ``{"role": "assistant", "content": null}`` went out, on every resume."""
    with pytest.raises(ProviderRequestInvalidError, match="empty assistant turn") as raised:
        openai.complete(ModelRequest(model="gpt-5", system="", messages=an_empty_turn(text)))

    assert not raised.value.may_have_been_processed
    assert server.requests == []


@pytest.mark.keyring
def test_whitespace_beside_a_tool_call_is_left_out_and_the_turn_still_goes(
    server: ProviderServer, anthropic: AnthropicAdapter
) -> None:
    call = ToolCall(call_id="c1", name="read_file", arguments_json='{"path": "a.py"}')
    conversation = (Message.user_text("Fix add()."),
                    Message(role=Role.ASSISTANT, parts=(TextPart(text="\n\n"), call)),
                    Message(role=Role.USER, parts=(ToolResult(call_id="c1", content="x"),)))

    body = sent_by(anthropic, server, model="claude-sonnet-4-5", effort=None, messages=conversation)

    messages = body["messages"]
    assert isinstance(messages, list)
    assert messages[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}]}
    assert all(message["content"] for message in messages)


# ──────────────────────────────────────────────────────────────────────────── stop reasons, provider-neutral


@pytest.mark.keyring
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_max_tokens_mid_tool_call_comes_back_as_cut_at_the_output_bound(
    server: ProviderServer, anthropic: AnthropicAdapter, stream: bool
) -> None:
    if stream:
        server.enqueue(sse_reply(anthropic_stream(
            tool_use=("toolu_9", "write_file", ['{"path": "a.py", "con', 'tent": "def add(a, b):\\n    ret']),
            final_usage={"output_tokens": 8192}, stop_reason="max_tokens")))  # fmt: skip
    else:
        server.enqueue(json_reply(anthropic_message(content=[
            {"type": "tool_use", "id": "toolu_9", "name": "write_file", "input": {"path": "a.py"}}],
            stop_reason="max_tokens")))  # fmt: skip

    reply = anthropic.complete(ModelRequest(model="claude-sonnet-4-5", system="", messages=A_TOOL_CYCLE),
                               on_text=(lambda _: None) if stream else None)

    assert reply.stop_reason is StopReason.MAX_TOKENS and reply.cut_at_output_bound
    assert [call.name for call in reply.tool_calls] == ["write_file"]  # there, but partial: the loop never runs it


@pytest.mark.keyring
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_openai_length_mid_tool_call_comes_back_as_cut_at_the_output_bound(
    server: ProviderServer, openai: OpenAIAdapter, stream: bool
) -> None:
    if stream:
        server.enqueue(sse_reply(openai_stream(tool_call=("call_9", "write_file", ['{"path": "a.py", "con']),
                                               finish_reason="length")))
    else:
        server.enqueue(json_reply(openai_completion(content=None, finish_reason="length",
                                                    tool_calls=[("call_9", "write_file", '{"path": "a.py", "con')])))

    reply = openai.complete(ModelRequest(model="gpt-5", system="", messages=A_TOOL_CYCLE),
                            on_text=(lambda _: None) if stream else None)

    assert reply.stop_reason is StopReason.MAX_TOKENS and reply.cut_at_output_bound
    assert reply.tool_calls[0].arguments_json == '{"path": "a.py", "con'


@pytest.mark.keyring
def test_a_reply_that_only_thought_is_blank(server: ProviderServer, anthropic: AnthropicAdapter) -> None:
    """Thinking that used the whole bound leaves a reply with nothing to act on or to send back."""
    server.enqueue(json_reply(anthropic_message(
        content=[{"type": "thinking", "thinking": "Let me consider", "signature": "EqQB"}], stop_reason="max_tokens")))

    reply = anthropic.complete(ModelRequest(model="claude-sonnet-4-5", system="", messages=HELLO))

    assert reply.is_blank and reply.cut_at_output_bound
