"""The server drops every WebSocket (the reconnect test hook) mid-stream; the client reconnects and
resumes from its last sequence with no gap and no duplicate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2
from codeflux.domain.errors import OperationFailedError
from codeflux.server.client import EnvelopeClient
from codeflux.store.events import SYSTEM_SESSION_ID
from tests.fixtures.transport_servers import SUBSCRIBE, commit_events, transport_harness


def test_a_dropped_connection_resumes_from_the_last_sequence(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data") as harness:
        commit_events(harness.db, 12)
        session = harness.session()

        async def scenario() -> tuple[list[int], int | None, list[int], int, int]:
            seen: list[int] = []
            async with await EnvelopeClient.connect(harness.server.ws_url, session=session) as client:
                stream = await client.open(SUBSCRIBE, product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID),
                                           product_pb2.SessionFrame)
                with pytest.raises(OperationFailedError, match="connection to the coordinator closed"):
                    async for frame in stream:
                        if frame.HasField("event"):
                            seen.append(frame.event.sequence)
                        else:
                            dropped = await asyncio.to_thread(harness.server.drop_connections)
                            await asyncio.to_thread(commit_events, harness.db, 4)  # while disconnected
                close_code = client.connection.close_code
            after: list[int] = []
            async with await EnvelopeClient.connect(harness.server.ws_url, session=session) as client:
                request = product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, after_sequence=seen[-1])
                stream = await client.open(SUBSCRIBE, request, product_pb2.SessionFrame)
                async for frame in stream:
                    if frame.HasField("replay_boundary"):
                        boundary = frame.replay_boundary.through_sequence
                        await stream.cancel()
                    else:
                        after.append(frame.event.sequence)
            return seen, close_code, after, boundary, dropped

        seen, close_code, after, boundary, dropped = asyncio.run(scenario())
    assert dropped == 1
    assert close_code == 1012
    assert seen == list(range(1, 13))
    assert after == [13, 14, 15, 16]
    assert boundary == 16
