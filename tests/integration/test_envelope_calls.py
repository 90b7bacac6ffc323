"""The WebSocket envelope over real loopback sockets against the real session service and SQLite.

Happy paths (unary + stream multiplexed on one socket; replay → one boundary → live with events
committed by another thread; cancel → CANCELLED) and bad input (unknown method, wrong request type,
after_sequence ahead of history, unknown session, stream cap, malformed frames, text on +proto,
duplicate ids, oversized messages, JSON mode's unknown fields) — with safe messages and a connection
that stays usable after every recoverable error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import any_pb2
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from codeflux.api.v1 import envelope_pb2, product_pb2
from codeflux.server.client import BrowserSession, EnvelopeClient
from codeflux.server.envelope import JSON_SUBPROTOCOL, PROTO_SUBPROTOCOL
from codeflux.server.limits import TransportLimits
from codeflux.store.events import SYSTEM_SESSION_ID
from tests.fixtures.transport_servers import GET_HEAD, SUBSCRIBE, TransportHarness, commit_events, transport_harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[TransportHarness]:
    with transport_harness(tmp_path / "data") as running:
        yield running


def head_request(session_id: str = SYSTEM_SESSION_ID) -> product_pb2.GetHeadRequest:
    return product_pb2.GetHeadRequest(session_id=session_id)


def subscribe(after: int, session_id: str = SYSTEM_SESSION_ID) -> product_pb2.SubscribeRequest:
    return product_pb2.SubscribeRequest(session_id=session_id, after_sequence=after)


async def raw(harness: TransportHarness, session: BrowserSession,
              subprotocol: str = PROTO_SUBPROTOCOL) -> ClientConnection:
    return await connect(harness.server.ws_url, additional_headers={"Cookie": session.cookie},
                         origin=harness.server.origin,  # type: ignore[arg-type]
                         host="127.0.0.1", proxy=None,
                         subprotocols=session.subprotocols(subprotocol), max_size=None)  # type: ignore[arg-type]


def call_frame(stream_id: int, method: str, request: object) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(request)  # type: ignore[arg-type]
    call = envelope_pb2.Call(method=method, request=packed)
    return envelope_pb2.Frame(stream_id=stream_id, call=call).SerializeToString()


async def frames_until_status(ws: ClientConnection, stream_id: int) -> list[envelope_pb2.Frame]:
    received = []
    while True:
        frame = envelope_pb2.Frame.FromString(await ws.recv())  # type: ignore[arg-type]
        if frame.stream_id == stream_id:
            received.append(frame)
            if frame.HasField("status"):
                return received


async def close_code(ws: ClientConnection) -> int | None:
    with contextlib.suppress(ConnectionClosed):
        while True:
            await ws.recv()
    return ws.close_code


# --- happy paths --------------------------------------------------------------------------------------


def test_replay_boundary_then_live_alongside_unary_calls_on_one_socket(harness: TransportHarness) -> None:
    commit_events(harness.db, 30)
    session = harness.session()

    async def scenario() -> tuple[list[int], int, list[int], list[int]]:
        async with await EnvelopeClient.connect(harness.server.ws_url, session=session) as client:
            stream = await client.open(SUBSCRIBE, subscribe(after=10), product_pb2.SessionFrame)
            replayed: list[int] = []
            live: list[int] = []
            heads: list[int] = []
            boundary = -1
            writer: threading.Thread | None = None
            async for frame in stream:
                if frame.HasField("replay_boundary"):
                    boundary = frame.replay_boundary.through_sequence
                    # Unary calls interleave with the open stream on the same connection.
                    head = await client.call(GET_HEAD, head_request(), product_pb2.SessionHead)
                    heads.append(head.through_sequence)
                    writer = threading.Thread(target=commit_events, args=(harness.db, 5))
                    writer.start()
                elif boundary < 0:
                    replayed.append(frame.event.sequence)
                else:
                    live.append(frame.event.sequence)
                    if len(live) == 5:
                        await stream.cancel()
            assert writer is not None
            writer.join()
            heads.append((await client.call(GET_HEAD, head_request(), product_pb2.SessionHead)).through_sequence)
            return replayed, boundary, live, heads

    replayed, boundary, live, heads = asyncio.run(scenario())
    assert replayed == list(range(11, 31))
    assert boundary == 30
    assert live == list(range(31, 36))
    assert heads == [30, 35]


def test_subscribing_at_the_head_sends_the_boundary_at_once(harness: TransportHarness) -> None:
    commit_events(harness.db, 3)
    session = harness.session()

    async def first_frame() -> product_pb2.SessionFrame:
        async with await EnvelopeClient.connect(harness.server.ws_url, session=session) as client:
            stream = await client.open(SUBSCRIBE, subscribe(after=3), product_pb2.SessionFrame)
            frame = await anext(stream)
            await stream.cancel()
            return frame

    assert asyncio.run(first_frame()).replay_boundary.through_sequence == 3


def test_cancel_ends_the_stream_with_status_cancelled(harness: TransportHarness) -> None:
    session = harness.session()

    async def scenario() -> list[envelope_pb2.Frame]:
        async with await raw(harness, session) as ws:
            await ws.send(call_frame(1, SUBSCRIBE, subscribe(after=0)))
            first = envelope_pb2.Frame.FromString(await ws.recv())  # type: ignore[arg-type]
            await ws.send(envelope_pb2.Frame(stream_id=1, cancel=envelope_pb2.Cancel()).SerializeToString())
            rest = await frames_until_status(ws, 1)
            # A cancel that crosses the status on the wire is ignored; the connection stays usable.
            await ws.send(envelope_pb2.Frame(stream_id=1, cancel=envelope_pb2.Cancel()).SerializeToString())
            await ws.send(call_frame(2, GET_HEAD, head_request()))
            return [first, *rest, *await frames_until_status(ws, 2)]

    frames = asyncio.run(scenario())
    assert frames[0].message.Is(product_pb2.SessionFrame.DESCRIPTOR)
    cancelled = [f.status for f in frames if f.stream_id == 1 and f.HasField("status")]
    assert [s.code for s in cancelled] == [1]
    assert frames[-1].status.code == 0


# --- recoverable errors: a status on the stream id, the connection goes on ---------------------------


@pytest.mark.parametrize(
    ("method", "request_message", "code", "words"),
    [
        ("/codeflux.v1.NoSuchService/Nothing", head_request(), 12, "unknown method"),
        (GET_HEAD, subscribe(after=0), 3, "codeflux.v1.GetHeadRequest"),
        (SUBSCRIBE, subscribe(after=99), 3, "ahead of committed history"),
        (SUBSCRIBE, subscribe(after=-1), 3, "negative"),
        (GET_HEAD, head_request("ses_missing"), 5, "no session with id ses_missing"),
        (GET_HEAD, head_request("/etc/passwd"), 3, "not a session id"),
    ],
)
def test_bad_calls_get_a_safe_status_and_the_connection_goes_on(
    harness: TransportHarness, method: str, request_message: object, code: int, words: str
) -> None:
    commit_events(harness.db, 2)
    session = harness.session()

    async def scenario() -> tuple[envelope_pb2.Status, envelope_pb2.Frame]:
        async with await raw(harness, session) as ws:
            await ws.send(call_frame(1, method, request_message))
            status = (await frames_until_status(ws, 1))[-1].status
            await ws.send(call_frame(2, GET_HEAD, head_request()))
            return status, (await frames_until_status(ws, 2))[0]

    status, after = asyncio.run(scenario())
    assert status.code == code
    assert words in status.safe_message
    assert status.detail.safe_message == status.safe_message
    for leak in ("SELECT", "sqlite", "Traceback", str(harness.app.location.directory)):
        assert leak not in status.safe_message
    reply = product_pb2.SessionHead()
    assert after.message.Unpack(reply)
    assert reply.through_sequence == 2


def test_a_request_that_is_not_a_message_of_its_type_is_invalid(harness: TransportHarness) -> None:
    session = harness.session()
    garbage = any_pb2.Any(type_url="type.googleapis.com/codeflux.v1.GetHeadRequest", value=b"\xff\xff\xff")

    async def scenario() -> envelope_pb2.Status:
        async with await raw(harness, session) as ws:
            call = envelope_pb2.Call(method=GET_HEAD, request=garbage)
            await ws.send(envelope_pb2.Frame(stream_id=1, call=call).SerializeToString())
            return (await frames_until_status(ws, 1))[-1].status

    assert asyncio.run(scenario()).code == 3


def test_more_streams_than_the_cap_are_resource_exhausted(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data", limits=TransportLimits(max_streams=2)) as harness:
        session = harness.session()

        async def scenario() -> tuple[int, int]:
            async with await raw(harness, session) as ws:
                for stream_id in (1, 2):
                    await ws.send(call_frame(stream_id, SUBSCRIBE, subscribe(after=0)))
                    await ws.recv()  # the boundary: the stream is open and live
                await ws.send(call_frame(3, SUBSCRIBE, subscribe(after=0)))
                refused = (await frames_until_status(ws, 3))[-1].status.code
                await ws.send(envelope_pb2.Frame(stream_id=1, cancel=envelope_pb2.Cancel()).SerializeToString())
                await frames_until_status(ws, 1)
                await ws.send(call_frame(4, GET_HEAD, head_request()))
                return refused, (await frames_until_status(ws, 4))[-1].status.code

        assert asyncio.run(scenario()) == (8, 0)


# --- protocol violations close the connection ---------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"\xff\xff\xff\xff", 1002),  # not a Frame
        ("a text frame", 1003),  # text on +proto
        (envelope_pb2.Frame(stream_id=1, status=envelope_pb2.Status(code=0)).SerializeToString(), 1002),
        (envelope_pb2.Frame(stream_id=7, cancel=envelope_pb2.Cancel()).SerializeToString(), 1002),
        (call_frame(0, GET_HEAD, head_request()), 1002),
    ],
    ids=["malformed", "text-on-proto", "client-status", "cancel-unknown-id", "stream-id-zero"],
)
def test_protocol_violations_close_the_connection(harness: TransportHarness, payload: bytes | str,
                                                  expected: int) -> None:
    session = harness.session()

    async def scenario() -> int | None:
        async with await raw(harness, session) as ws:
            await ws.send(payload)
            return await close_code(ws)

    assert asyncio.run(scenario()) == expected


def test_a_message_over_4_mib_closes_the_connection(harness: TransportHarness) -> None:
    session = harness.session()

    async def scenario() -> tuple[int | None, bool, int]:
        ws = await raw(harness, session)
        try:
            with contextlib.suppress(ConnectionClosed):  # the server may close while the client still writes
                await ws.send(b"\x00" * (4 * 1024 * 1024 + 1))
            await close_code(ws)
            received = ws.protocol.close_rcvd
            await asyncio.wait_for(ws.wait_closed(), timeout=30)
            closed = ws.state.name == "CLOSED"
        finally:
            # The server dropped the connection while megabytes were still queued to send: websockets' close() then
            # aborts a transport asyncio has already detached from its loop ("'NoneType' object has no attribute
            # 'call_soon'", about 1 run in 15 here) — the client library's teardown, not the server's behaviour.
            with contextlib.suppress(AttributeError):
                await ws.close()
        async with await raw(harness, session) as ws:  # the server itself is unaffected
            await ws.send(call_frame(1, GET_HEAD, head_request()))
            after = (await frames_until_status(ws, 1))[-1].status.code
        return (received.code if received is not None else None), closed, after

    server_code, closed, after = asyncio.run(scenario())
    assert closed
    # The server's close frame says 1009 whenever it reached the client before the socket went down.
    assert server_code in (1009, None)
    assert after == 0


def test_a_reused_stream_id_closes_the_connection(harness: TransportHarness) -> None:
    session = harness.session()

    async def scenario() -> int | None:
        async with await raw(harness, session) as ws:
            await ws.send(call_frame(5, GET_HEAD, head_request()))
            await frames_until_status(ws, 5)
            await ws.send(call_frame(5, GET_HEAD, head_request()))
            return await close_code(ws)

    assert asyncio.run(scenario()) == 1002


# --- JSON mode (the browser's) ------------------------------------------------------------------------


def test_json_mode_speaks_canonical_proto3_json_with_int64_as_strings(harness: TransportHarness) -> None:
    commit_events(harness.db, 4)
    session = harness.session()
    call = {"streamId": 1, "call": {"method": GET_HEAD, "request": {
        "@type": "type.googleapis.com/codeflux.v1.GetHeadRequest", "sessionId": SYSTEM_SESSION_ID}}}

    async def scenario() -> tuple[list[dict[str, object]], int | None, int | None]:
        async with await raw(harness, session, JSON_SUBPROTOCOL) as ws:
            await ws.send(json.dumps(call))
            replies = [json.loads(await ws.recv()), json.loads(await ws.recv())]
        async with await raw(harness, session, JSON_SUBPROTOCOL) as ws:
            await ws.send(json.dumps({"streamId": 1, "call": {"method": GET_HEAD}, "surprise": 1}))
            unknown_field = await close_code(ws)
        async with await raw(harness, session, JSON_SUBPROTOCOL) as ws:
            await ws.send(call_frame(1, GET_HEAD, head_request()))
            binary_on_json = await close_code(ws)
        return replies, unknown_field, binary_on_json

    replies, unknown_field, binary_on_json = asyncio.run(scenario())
    assert replies[0] == {"streamId": 1, "message": {
        "@type": "type.googleapis.com/codeflux.v1.SessionHead", "sessionId": SYSTEM_SESSION_ID, "throughSequence": "4"}}
    assert replies[1]["streamId"] == 1
    assert replies[1]["status"] == {}  # code 0 (OK) is the proto3 default
    assert unknown_field == 1002
    assert binary_on_json == 1003
