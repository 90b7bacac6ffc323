"""The scripted provider replays turns, records every request, and never pretends to be a model."""

from __future__ import annotations

import pytest

from codeflux.domain.context_window import estimate_request_tokens
from codeflux.domain.errors import ContextTooLongError, ProviderRequestInvalidError, ScriptExhaustedError
from codeflux.domain.models import Message, ModelRequest, ReasoningPart, Role, StopReason, TextPart, ToolCall
from codeflux.domain.pricing import TokenUsage
from codeflux.providers.scripted import SCRIPTED_DISPLAY_NAME, ScriptedAdapter, ScriptedTurn
from codeflux.providers.wire import ModelAdapter


def request(text: str) -> ModelRequest:
    return ModelRequest(model="cheap", system="", messages=(Message.user_text(text),))


def test_turns_are_replayed_in_order_and_every_request_is_recorded() -> None:
    used = TokenUsage(input_tokens=10, output_tokens=5, cache_read_tokens=0, cache_write_tokens=0)
    scripted = ScriptedAdapter([
        ScriptedTurn.calling("read_file", {"path": "README.md"}, call_id="call_1", usage=used),
        ScriptedTurn(text="All done."),
    ])  # fmt: skip

    first = scripted.complete(request("one"))
    second = scripted.complete(request("two"))

    assert first.stop_reason is StopReason.TOOL_USE and first.usage == used
    assert first.tool_calls[0].arguments() == {"path": "README.md"}
    assert second.parts == (TextPart(text="All done."),) and second.stop_reason is StopReason.END_TURN
    assert second.usage == TokenUsage()  # unknown unless the script says otherwise
    assert [r.messages[0].text for r in scripted.requests] == ["one", "two"]
    assert scripted.remaining_turns == 0


def test_it_is_labelled_as_not_a_model_wherever_a_name_shows() -> None:
    scripted: ModelAdapter = ScriptedAdapter([ScriptedTurn(text="hi")])
    assert scripted.display_name == SCRIPTED_DISPLAY_NAME == "scripted (not a model)"
    assert scripted.complete(request("x")).provider == "scripted (not a model)"


def test_streaming_delivers_the_text_in_pieces() -> None:
    pieces: list[str] = []
    scripted = ScriptedAdapter([ScriptedTurn(text="abcdefghij")], stream_chunk_chars=4)
    scripted.complete(request("x"), on_text=pieces.append)
    assert pieces == ["abcd", "efgh", "ij"]


def test_a_call_past_the_script_fails_and_is_still_recorded() -> None:
    scripted = ScriptedAdapter([ScriptedTurn(text="only")])
    scripted.complete(request("1"))
    with pytest.raises(ScriptExhaustedError, match="scripted \\(not a model\\)") as raised:
        scripted.complete(request("2"))
    assert not raised.value.may_have_been_processed
    assert len(scripted.requests) == 2


def test_a_turn_can_think_and_be_cut_at_the_output_bound() -> None:
    cut = ToolCall(call_id="c1", name="write_file", arguments_json='{"path": "a.py", "con')
    thought = ReasoningPart(text="write it", signature="sig")
    scripted = ScriptedAdapter([ScriptedTurn(tool_calls=(cut,), reasoning=(thought,),
                                             stop_reason=StopReason.MAX_TOKENS)])

    reply = scripted.complete(request("x"))

    assert reply.parts == (thought, cut) and reply.cut_at_output_bound


def test_like_a_real_provider_it_refuses_an_empty_assistant_turn_before_using_a_turn() -> None:
    scripted = ScriptedAdapter([ScriptedTurn(text="ok")])
    blank = ModelRequest(model="cheap", system="", messages=(
        Message.user_text("a"), Message(role=Role.ASSISTANT, parts=(TextPart(text=" "),)), Message.user_text("b")))

    with pytest.raises(ProviderRequestInvalidError, match="empty assistant turn"):
        scripted.complete(blank)

    assert scripted.requests == () and scripted.remaining_turns == 1


def test_a_script_may_declare_a_small_window_and_refuses_what_does_not_fit_without_using_a_turn() -> None:
    small = request("hi")
    window = estimate_request_tokens(small) + small.max_output_tokens
    adapter = ScriptedAdapter([ScriptedTurn(text="ok")], context_window=window)
    assert adapter.context_window == window
    with pytest.raises(ContextTooLongError, match="prompt is too long"):
        adapter.complete(request("hi" * 100))
    assert adapter.remaining_turns == 1  # the refusal used no turn
    assert adapter.complete(small).text == "ok"
    assert len(adapter.requests) == 2 and ScriptedAdapter([]).context_window is None


def test_a_too_long_turn_answers_its_request_with_the_refusal() -> None:
    adapter = ScriptedAdapter([ScriptedTurn(too_long=True), ScriptedTurn(text="after")])
    with pytest.raises(ContextTooLongError) as raised:
        adapter.complete(request("hi"))
    assert raised.value.status == 400 and not raised.value.may_have_been_processed
    assert adapter.complete(request("hi")).text == "after"
