"""Server-sent events: the framing both providers stream in, parsed incrementally with a size bound.

Lines end in LF, CRLF or CR; ``event:`` names the event, ``data:`` lines are joined with LF, a blank
line dispatches, ``:`` starts a comment, ``id:`` and ``retry:`` are ignored. An event still open when
the stream ends is dropped, as the SSE specification says: a cut stream never yields half an event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from codeflux.domain.errors import ProviderReplyInvalidError

__all__ = ["SseEvent", "iter_sse_events"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SseEvent:
    """One dispatched event: its name (``message`` when unnamed) and its data."""

    event: str
    data: str


def iter_sse_events(chunks: Iterable[bytes], *, provider: str, max_event_bytes: int) -> Iterator[SseEvent]:
    """The events in ``chunks``; an event or line above ``max_event_bytes`` is refused as too large."""
    parser = _EventParser(provider=provider, max_event_bytes=max_event_bytes)
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while True:
            line, buffer = _next_line(buffer)
            if line is None:
                break
            if (event := parser.take_line(line)) is not None:
                yield event
        if len(buffer) > max_event_bytes:
            raise _too_large(provider, max_event_bytes)
    if buffer.endswith(b"\r"):  # a final CR ends its line even with no byte after it
        event = parser.take_line(bytes(buffer[:-1]))
        if event is not None:
            yield event


class _EventParser:
    def __init__(self, *, provider: str, max_event_bytes: int) -> None:
        self._provider = provider
        self._limit = max_event_bytes
        self._name = ""
        self._data: list[str] = []
        self._size = 0

    def take_line(self, line: bytes) -> SseEvent | None:
        """Consume one line; the event it completes, if any."""
        if not line:
            event = SseEvent(event=self._name or "message", data="\n".join(self._data)) if self._data else None
            self._name, self._data, self._size = "", [], 0
            return event
        if line.startswith(b":"):
            return None
        field, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if field == b"event":
            self._name = _text(value, self._provider)
        elif field == b"data":
            self._data.append(_text(value, self._provider))
            self._size += len(value) + 1
            if self._size > self._limit:
                raise _too_large(self._provider, self._limit)
        return None


def _next_line(buffer: bytearray) -> tuple[bytes | None, bytearray]:
    for index, byte in enumerate(buffer):
        if byte == 0x0A:
            return bytes(buffer[:index]), buffer[index + 1 :]
        if byte == 0x0D:
            if index + 1 == len(buffer):
                return None, buffer  # wait: the next byte may be the LF of a CRLF
            skip = 2 if buffer[index + 1] == 0x0A else 1
            return bytes(buffer[:index]), buffer[index + skip :]
    return None, buffer


def _text(value: bytes, provider: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProviderReplyInvalidError(
            provider=provider, problem="malformed", detail="a stream event is not UTF-8", may_have_been_processed=True
        ) from None


def _too_large(provider: str, limit: int) -> ProviderReplyInvalidError:
    return ProviderReplyInvalidError(
        provider=provider,
        problem="too-large",
        detail=f"a stream event is larger than {limit} bytes",
        may_have_been_processed=True,
    )
