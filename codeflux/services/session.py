"""SessionService: the session stream over the SQLite journal (ARCHITECTURE §11, issue 6 item 4).

``Subscribe(session_id, after_sequence)``: one read takes the committed head ``B``; an ``after_sequence``
beyond ``B`` is refused (INVALID_ARGUMENT, "ahead of committed history"); committed events
``(after, B]`` are replayed in pages, then exactly one ``ReplayBoundary{through_sequence=B}`` is sent
(immediately when ``after == B``), then live events as they commit. The journal is the source: a
commit listener on the database (run on the committing thread) only wakes the subscriber, which
reads ``> last`` from SQLite itself; a periodic re-read (every :data:`RECHECK_SECONDS`) covers writers
in other processes. A subscriber that asks for ``batched`` gets each page read at once as
``SessionEventBatch`` frames (at most :data:`BATCH_EVENTS` events and :data:`BATCH_PAYLOAD_BYTES` of payload
each, an event larger than that alone), each built column by column from one snapshot's stored rows — no message,
decode or re-encode per event — so the replay of a long session costs a few messages, not one per event (issue 20
item 5). Sequences are strictly contiguous — nothing is coalesced or skipped. Bounding what
a slow client may hold up is the transport's job: it ends the stream RESOURCE_EXHAUSTED and the client
resumes with ``after_sequence`` = its last sequence.

``GetHead(session_id)``: the committed head, for a client deciding whether it is behind.

``IssueLaunchLink``: a fresh one-time launch link for the browser UI the coordinator serves (``codeflux open``,
and ``codeflux start`` when a coordinator already serves the data directory). Only a call over the
coordinator's own 0600 Unix socket gets one; a browser connection or an in-process channel is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator, Sequence
from typing import Final
from urllib.parse import urlencode

from codeflux.api.v1 import product_pb2
from codeflux.coordinator.journal import (
    MAX_COLUMN_PAGE,
    JournalEvent,
    StoredEventColumns,
    read_session_event_columns,
    read_session_events,
    read_session_head,
)
from codeflux.domain.errors import NotFoundError, PrerequisiteError, StoreCorruptError, UsageError
from codeflux.domain.events import EventKind, EventPayload
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import parse_task_id
from codeflux.services.registry import UNIX_SOCKET, CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import task_service

__all__ = ["BATCH_EVENTS", "BATCH_PAYLOAD_BYTES", "PAGE_SIZE", "RECHECK_SECONDS", "methods", "session_event"]

PAGE_SIZE: Final = 256
# Events one batch frame carries at most (a page of stored rows, read with one snapshot, is one frame).
BATCH_EVENTS: Final = min(4096, MAX_COLUMN_PAGE)
# Payload bytes one batch frame carries at most (an event larger than this travels in a batch of its own); well
# under the transport's 4 MiB message bound, so a batch is never refused as too large where its events fit.
BATCH_PAYLOAD_BYTES: Final = 1024 * 1024
_EVENT_OVERHEAD: Final = 64  # an event's kind, numbers and framing, counted against the bound beside its payload
RECHECK_SECONDS: Final = 1.0
_SESSION_ID: Final = re.compile(r"ses_[A-Za-z0-9_-]{1,80}")


def _checked_session_id(value: str) -> str:
    if not _SESSION_ID.fullmatch(value):
        raise UsageError("session_id is not a session id (ses_…)")
    return value


def _head(app: CoordinatorApp, session_id: str) -> int:
    head = read_session_head(app.db, session_id)
    if head is None:
        raise NotFoundError(kind="session", entity_id=session_id)
    return head


def _page(app: CoordinatorApp, session_id: str, after: int, through: int | None,
          batched: bool) -> list[JournalEvent] | StoredEventColumns:
    if batched:  # forwarded as stored: the registry encodes every stored shape back unchanged
        return read_session_event_columns(app.db, session_id=session_id, after_sequence=after,
                                          through_sequence=through, max_events=BATCH_EVENTS,
                                          max_bytes=BATCH_PAYLOAD_BYTES, event_overhead=_EVENT_OVERHEAD)
    return read_session_events(app.db, session_id=session_id, after_sequence=after, through_sequence=through,
                               limit=PAGE_SIZE)


# The proto's closed set by kind text (a kind this codeflux does not know: EVENT_KIND_UNSPECIFIED).
_WIRE_KINDS: Final = {kind.value: product_pb2.EventKind.Value(f"EVENT_KIND_{kind.name}") for kind in EventKind}


def session_event(event: JournalEvent) -> product_pb2.SessionEvent:
    """The wire form of a committed event: its kind both as text and in the proto's closed set, and its
    payload as the registry encodes it (an event of a kind this codeflux does not know keeps its stored
    payload and ``EVENT_KIND_UNSPECIFIED``)."""
    known = event.event.KIND if isinstance(event.event, EventPayload) else None
    return product_pb2.SessionEvent(
        session_id=event.session_id,
        sequence=event.sequence,
        kind=event.kind,
        created_at_us=event.created_at_us,
        payload_json=event.payload_json,
        event_kind=product_pb2.EVENT_KIND_UNSPECIFIED if known is None else product_pb2.EventKind.Value(
            f"EVENT_KIND_{known.name}"),
    )


def _event_frame(event: JournalEvent) -> product_pb2.SessionFrame:
    return product_pb2.SessionFrame(event=session_event(event))


def _batch_frame(columns: StoredEventColumns) -> product_pb2.SessionFrame:
    """One batch frame for a page of stored rows, built column by column (no message per event). The batch is
    given as a mapping, so it is built in place inside the frame: a ``SessionEventBatch`` passed as a message would
    be copied into the frame string by string (for a 1 MiB page, ~7× the cost of building it)."""
    kinds = columns.kinds
    return product_pb2.SessionFrame(batch={
        "session_id": columns.session_id, "first_sequence": columns.sequences[0], "kinds": kinds,
        "created_at_us": columns.created_at_us, "payloads_json": columns.payloads_json,
        "event_kinds": list(map(_WIRE_KINDS.get, kinds, itertools.repeat(product_pb2.EVENT_KIND_UNSPECIFIED)))})


def _frames(page: list[JournalEvent] | StoredEventColumns) -> list[product_pb2.SessionFrame]:
    if isinstance(page, StoredEventColumns):
        return [_batch_frame(page)] if page.sequences else []
    return [_event_frame(event) for event in page]


def _built_page(app: CoordinatorApp, session_id: str, after: int, through: int | None,
                batched: bool) -> tuple[Sequence[int], list[product_pb2.SessionFrame]]:
    page = _page(app, session_id, after, through, batched)
    return _sequences(page), _frames(page)


def _read_ahead(app: CoordinatorApp, session_id: str, after: int, through: int,
                batched: bool) -> asyncio.Future[tuple[Sequence[int], list[product_pb2.SessionFrame]]]:
    """The replay page after ``after`` (its sequences and frames), read and built in a worker thread, started now."""
    return asyncio.ensure_future(asyncio.to_thread(_built_page, app, session_id, after, through, batched))


def _sequences(page: list[JournalEvent] | StoredEventColumns) -> Sequence[int]:
    return page.sequences if isinstance(page, StoredEventColumns) else [event.sequence for event in page]


def _contiguous(sequences: Sequence[int], last: int) -> None:
    if tuple(sequences) != tuple(range(last + 1, last + 1 + len(sequences))):
        raise StoreCorruptError("the session journal has a gap; run `codeflux integrity-check`")


async def _subscribe(
    app: CoordinatorApp, request: product_pb2.SubscribeRequest
) -> AsyncIterator[product_pb2.SessionFrame]:
    session_id = _checked_session_id(request.session_id)
    if request.after_sequence < 0:
        raise UsageError("after_sequence must not be negative")
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def on_commit() -> None:  # runs on the committing thread
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting any more
            loop.call_soon_threadsafe(wake.set)

    # Listen before the head is read, so a commit between the read and the first wait is not missed.
    remove = app.db.add_commit_listener(on_commit)
    try:
        head = await asyncio.to_thread(_head, app, session_id)
        if request.after_sequence > head:
            raise UsageError(
                f"after_sequence {request.after_sequence} is ahead of committed history "
                f"(the session is at {head}); subscribe from your last sequence"
            )
        last = request.after_sequence
        # Replay reads one page ahead: the next page is read (and its frames built) in a worker thread while this
        # page's frames go out — SQLite and the socket both work without the interpreter lock, so reading overlaps
        # sending and the client's reading instead of waiting for the send to drain.
        ahead = _read_ahead(app, session_id, last, head, request.batched) if last < head else None
        try:
            while ahead is not None:
                sequences, frames = await ahead
                if not sequences:
                    raise StoreCorruptError("the session journal has a gap; run `codeflux integrity-check`")
                _contiguous(sequences, last)
                last = sequences[-1]
                ahead = _read_ahead(app, session_id, last, head, request.batched) if last < head else None
                for frame in frames:
                    yield frame
        finally:
            if ahead is not None:  # the stream ended mid-replay: the page read ahead is not sent
                ahead.cancel()
        yield product_pb2.SessionFrame(replay_boundary=product_pb2.ReplayBoundary(through_sequence=head))
        while True:
            wake.clear()
            page = await asyncio.to_thread(_page, app, session_id, last, None, request.batched)
            sequences = _sequences(page)
            if sequences:
                _contiguous(sequences, last)
                for frame in _frames(page):
                    yield frame
                last = sequences[-1]
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), RECHECK_SECONDS)
    finally:
        remove()


def _task_page(app: CoordinatorApp, text: str) -> str:
    """``/tasks/<id>`` for a task that exists (INVALID_ARGUMENT for a malformed id, NOT_FOUND for an unknown one)."""
    task_id = parse_task_id(text)
    task_service(app).show(task_id)
    return f"/tasks/{task_id.value}"


def methods(app: CoordinatorApp) -> list[UnaryMethod | StreamMethod]:  # type: ignore[type-arg]
    def subscribe(ctx: CallContext, request: product_pb2.SubscribeRequest) -> AsyncIterator[product_pb2.SessionFrame]:
        return _subscribe(app, request)

    def get_head(ctx: CallContext, request: product_pb2.GetHeadRequest) -> product_pb2.SessionHead:
        session_id = _checked_session_id(request.session_id)
        return product_pb2.SessionHead(session_id=session_id, through_sequence=_head(app, session_id))

    def issue_launch_link(ctx: CallContext, request: product_pb2.IssueLaunchLinkRequest) -> product_pb2.LaunchLink:
        # A launch link signs a browser in: only the coordinator's own 0600 socket may ask for one (never a
        # browser connection, never a command that opened the database itself).
        if ctx.transport != UNIX_SOCKET:
            raise PrerequisiteError("a launch link is issued only to `codeflux open` over the running coordinator's "
                                    "socket")
        if app.launch_link is None:
            raise PrerequisiteError("no codeflux coordinator serves the browser UI for this data directory: run "
                                    "`codeflux start`")
        task_page = _task_page(app, request.task_id) if request.task_id else ""  # checked before a token is issued
        link = app.launch_link()
        url = f"{link.url}&{urlencode({'to': task_page})}" if task_page else link.url
        return product_pb2.LaunchLink(url=url, origin=link.origin, valid_seconds=link.valid_seconds)

    return [
        UnaryMethod(
            name=method_name("SessionService", "IssueLaunchLink"),
            request_type=product_pb2.IssueLaunchLinkRequest,
            response_type=product_pb2.LaunchLink,
            handler=issue_launch_link,
        ),
        StreamMethod(
            name=method_name("SessionService", "Subscribe"),
            request_type=product_pb2.SubscribeRequest,
            response_type=product_pb2.SessionFrame,
            handler=subscribe,
        ),
        UnaryMethod(
            name=method_name("SessionService", "GetHead"),
            request_type=product_pb2.GetHeadRequest,
            response_type=product_pb2.SessionHead,
            handler=get_head,
        ),
    ]
