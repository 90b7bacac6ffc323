"""Compaction keeps every tool call paired with its result (only the content shrinks) and says what it removed."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from codeflux.coordinator.runs.context_window import (
    COMPACTED_NOTE,
    MIN_COMPACTED_CHARS,
    _candidates,
    _rewritten,
    compacted_content,
)
from codeflux.domain.context_window import BYTES_PER_TOKEN, estimate_request_tokens, fits_window
from codeflux.domain.models import Message, ModelRequest, Role, TextPart, ToolCall, ToolResult

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3_000)


def conversation(results: list[list[str]]) -> tuple[Message, ...]:
    """The first prompt, then per turn an assistant message calling a tool per result and the user message
    answering each call."""
    messages = [Message.user_text("requirement and plan")]
    for turn, contents in enumerate(results):
        ids = [f"c{turn}-{n}" for n in range(len(contents))]
        messages.append(Message(role=Role.ASSISTANT, parts=(TextPart(text="next"), *(
            ToolCall(call_id=call_id, name="read_file", arguments_json='{"path": "a.py"}') for call_id in ids))))
        messages.append(Message(role=Role.USER, parts=tuple(
            ToolResult(call_id=call_id, content=content) for call_id, content in zip(ids, contents, strict=True))))
    return tuple(messages)


@given(results=st.lists(st.lists(_TEXT, min_size=1, max_size=3), min_size=1, max_size=6),
       keep=st.integers(1, 6), everything=st.booleans(), summary=st.one_of(st.none(), st.text(max_size=50)))
def test_compaction_keeps_each_call_paired_with_its_result_and_the_first_and_recent_messages_whole(
        results: list[list[str]], keep: int, everything: bool, summary: str | None) -> None:
    messages = conversation(results)
    chosen = _candidates(messages, keep_recent=keep, everything=everything)
    note = None if summary is None else f"[summary] {summary}"
    after = tuple(_rewritten(message, note if index == (chosen or (0,))[0] else None) if index in chosen
                  else message for index, message in enumerate(messages))

    assert [m.role for m in after] == [m.role for m in messages]
    for before, now in zip(messages, after, strict=True):  # the same parts, the same ids, in the same order
        assert [(type(p), getattr(p, "call_id", None)) for p in before.parts] == [
            (type(p), getattr(p, "call_id", None)) for p in now.parts]
    assert after[0] == messages[0] and after[-1] == messages[-1]
    if not everything:
        assert after[len(after) - keep:] == messages[len(messages) - keep:]
    for index in chosen:
        assert messages[index].role is Role.USER
        for old, new in zip(messages[index].parts, after[index].parts, strict=True):
            assert isinstance(old, ToolResult) and isinstance(new, ToolResult)
            if len(old.content) > MIN_COMPACTED_CHARS:
                assert "[codeflux: compacted;" in new.content and len(new.content) < len(old.content)
            else:
                assert new == old


@given(content=st.text(min_size=MIN_COMPACTED_CHARS + 1, max_size=20_000))
def test_a_compacted_result_keeps_its_head_and_says_exactly_how_much_it_removed(content: str) -> None:
    compacted = compacted_content(content)
    head, note = compacted.rsplit("\n", 1)
    assert content.startswith(head) and len(head) <= 500
    removed = int(re.fullmatch(r"\[codeflux: compacted; ([\d,]+) characters removed\]", note)[1].replace(",", ""))
    assert removed == len(content) - len(head)
    assert note == COMPACTED_NOTE.format(removed=removed)


def test_the_estimate_counts_three_bytes_a_token_of_everything_sent_and_the_output_bound() -> None:
    small = ModelRequest(model="m", system="", messages=(Message.user_text("x"),), max_output_tokens=100)
    large = ModelRequest(model="m", system="", messages=(Message.user_text("x" * 3_001),), max_output_tokens=100)
    assert estimate_request_tokens(large) - estimate_request_tokens(small) == 3_000 // BYTES_PER_TOKEN
    unicode = ModelRequest(model="m", system="", messages=(Message.user_text("é" * 3_000),), max_output_tokens=100)
    assert estimate_request_tokens(unicode) > estimate_request_tokens(large)  # two bytes each
    window = estimate_request_tokens(large) + 100
    assert fits_window(large, window) and not fits_window(large, window - 1)
