"""SSE framing: events split anywhere across chunks, CRLF or LF, bounded size, half events dropped."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import ProviderReplyInvalidError
from codeflux.providers.sse import SseEvent, iter_sse_events

STREAM = (
    b": keep-alive comment\r\n"
    b"event: message_start\r\ndata: {\"a\": 1}\r\n\r\n"
    b"data: first line\ndata: second line\nid: 7\nretry: 100\n\n"
    b"event: ping\rdata:{}\r\r"
)
EXPECTED = [
    SseEvent(event="message_start", data='{"a": 1}'),
    SseEvent(event="message", data="first line\nsecond line"),
    SseEvent(event="ping", data="{}"),
]


def events(chunks: list[bytes], limit: int = 1024) -> list[SseEvent]:
    return list(iter_sse_events(chunks, provider="OpenAI", max_event_bytes=limit))


def test_events_are_parsed_with_any_line_ending() -> None:
    assert events([STREAM]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_events_are_the_same_however_the_stream_is_chunked(cuts: list[int]) -> None:
    points = sorted({0, len(STREAM), *cuts})
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert events(chunks) == EXPECTED


def test_an_event_left_open_at_the_end_is_dropped() -> None:
    assert events([b"data: complete\n\ndata: half"]) == [SseEvent(event="message", data="complete")]


def test_an_oversize_event_or_line_is_refused() -> None:
    with pytest.raises(ProviderReplyInvalidError, match="too-large"):
        events([b"data: " + b"x" * 2000 + b"\n\n"])
    with pytest.raises(ProviderReplyInvalidError, match="too-large"):
        events([b"data: x" * 100 + b"\n" for _ in range(1)] * 30)
    with pytest.raises(ProviderReplyInvalidError, match="too-large"):
        events([b"y" * 600, b"y" * 600])


def test_an_event_that_is_not_utf8_is_malformed() -> None:
    with pytest.raises(ProviderReplyInvalidError, match="malformed"):
        events([b"data: \xff\xfe\n\n"])
