"""A client that stops reading is cut off (RESOURCE_EXHAUSTED) instead of holding the server up, and
resumes from its last sequence with no gap and no duplicate (issue 6 item 4).

The client keeps a tiny receive buffer and lets websockets stop reading (max_queue=1) while another
thread commits large events; the test waits for the server's call log to record the cut-off, then
reads everything that was delivered and resubscribes on the same connection.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import pytest
from google.protobuf import any_pb2
from websockets.asyncio.client import connect

from codeflux.api.v1 import envelope_pb2, product_pb2
from codeflux.server.envelope import CALL_LOGGER, PROTO_SUBPROTOCOL, SLOW_CLIENT_MESSAGE
from codeflux.server.limits import TransportLimits
from codeflux.store.events import SYSTEM_SESSION_ID
from tests.fixtures.transport_servers import SUBSCRIBE, commit_events, transport_harness

pytestmark = pytest.mark.security

_MAX_EVENTS = 4000


def call_frame(stream_id: int, after: int) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, after_sequence=after))
    call = envelope_pb2.Call(method=SUBSCRIBE, request=packed)
    return envelope_pb2.Frame(stream_id=stream_id, call=call).SerializeToString()


def test_a_stalled_subscriber_is_cut_off_and_resumes_from_its_last_sequence(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=CALL_LOGGER)
    limits = TransportLimits(stall_seconds=0.5, write_buffer_bytes=16 * 1024)

    def cut_off() -> bool:
        return any(f"method={SUBSCRIBE} code=8 " in record.getMessage() for record in caplog.records)

    with transport_harness(tmp_path / "data", limits=limits) as harness:
        commit_events(harness.db, 3)
        session = harness.session()

        async def scenario() -> tuple[list[int], envelope_pb2.Status, list[int], int]:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", harness.server.port))
            async with connect(harness.server.ws_url, sock=sock, additional_headers={"Cookie": session.cookie},
                               origin=harness.server.origin,  # type: ignore[arg-type]
                               subprotocols=session.subprotocols(PROTO_SUBPROTOCOL),  # type: ignore[arg-type]
                               max_queue=1, max_size=None) as ws:
                await ws.send(call_frame(1, after=0))
                committed = 3
                while not cut_off():  # the client reads nothing while the journal grows
                    if committed >= _MAX_EVENTS:
                        raise AssertionError("the server never cut the stalled subscriber off")
                    await asyncio.to_thread(commit_events, harness.db, 20, pad=16 * 1024)
                    committed += 20
                    await asyncio.sleep(0.05)
                delivered: list[int] = []
                while True:
                    frame = envelope_pb2.Frame.FromString(await ws.recv())  # type: ignore[arg-type]
                    if frame.HasField("status"):
                        status = frame.status
                        break
                    reply = product_pb2.SessionFrame()
                    assert frame.message.Unpack(reply)
                    if reply.HasField("event"):
                        delivered.append(reply.event.sequence)
                last = delivered[-1]
                await ws.send(call_frame(2, after=last))
                resumed: list[int] = []
                while True:
                    frame = envelope_pb2.Frame.FromString(await ws.recv())  # type: ignore[arg-type]
                    reply = product_pb2.SessionFrame()
                    assert frame.message.Unpack(reply)
                    if reply.HasField("replay_boundary"):
                        return delivered, status, resumed, reply.replay_boundary.through_sequence
                    resumed.append(reply.event.sequence)

        delivered, status, resumed, boundary = asyncio.run(scenario())

    assert status.code == 8
    assert status.safe_message == SLOW_CLIENT_MESSAGE
    assert delivered == list(range(1, len(delivered) + 1))
    assert delivered + resumed == list(range(1, boundary + 1))
    assert len(resumed) > 0
