"""A subscriber that asks for ``batched`` gets the replay in batch frames (issue 20 item 5): every event once, in
order, in far fewer messages than events, each batch within the payload bound; the same journal unbatched is one
frame per event (the control); live events keep coming after the boundary."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2
from codeflux.server.client import EnvelopeClient, frame_events
from codeflux.services import session as session_service
from codeflux.services.app import CoordinatorApp
from codeflux.services.session import BATCH_EVENTS, BATCH_PAYLOAD_BYTES, PAGE_SIZE
from codeflux.store.events import SYSTEM_SESSION_ID
from tests.fixtures.transport_servers import SUBSCRIBE, commit_events, transport_harness


def test_replay_comes_in_bounded_batches_then_live(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data") as harness:
        commit_events(harness.db, 600)
        commit_events(harness.db, 12, pad=200_000)  # 12 events of ~200 kB: the byte bound splits them
        session = harness.session()

        async def subscribe(batched: bool) -> tuple[list[list[int]], list[int], int, list[int]]:
            frames: list[list[int]] = []
            sizes: list[int] = []
            live: list[int] = []
            boundary = -1
            async with await EnvelopeClient.connect(harness.server.ws_url, session=session) as client:
                request = product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, batched=batched)
                stream = await client.open(SUBSCRIBE, request, product_pb2.SessionFrame)
                async for frame in stream:
                    body = frame.WhichOneof("body")
                    if body == "replay_boundary":
                        boundary = frame.replay_boundary.through_sequence
                        if batched:
                            await asyncio.to_thread(commit_events, harness.db, 3)
                            continue
                        await stream.cancel()
                        continue
                    events = frame_events(frame)
                    if boundary >= 0:
                        live.extend(e.sequence for e in events)
                        if len(live) >= 3:
                            await stream.cancel()
                        continue
                    frames.append([e.sequence for e in events])
                    sizes.append(sum(len(e.payload_json) for e in events))
            return frames, sizes, boundary, live

        batched, sizes, boundary, live = asyncio.run(subscribe(True))
        single, _, single_boundary, _ = asyncio.run(subscribe(False))
    replayed = [sequence for frame in batched for sequence in frame]
    assert replayed == list(range(1, 613))
    assert boundary == 612
    # The 600 small events travel together (more than one page of the unbatched path), the large ones a few a frame.
    assert len(batched[0]) > PAGE_SIZE
    assert max(len(frame) for frame in batched) <= BATCH_EVENTS
    assert len(batched) < 10
    assert all(size <= BATCH_PAYLOAD_BYTES or len(frame) == 1 for size, frame in zip(sizes, batched, strict=True))
    assert any(len(frame) < 10 and size > BATCH_PAYLOAD_BYTES // 2 for size, frame in zip(sizes, batched, strict=True))
    assert live == [613, 614, 615]
    # The control, after the three live events: unbatched is one event per frame.
    assert single == [[sequence] for sequence in range(1, 616)]
    assert single_boundary == 615


def test_replay_reads_the_next_page_while_this_one_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page after a batch is being read (in a worker thread) by the time the batch is handed to the transport;
    a stream closed mid-replay drops the page it read ahead, and the journal serves the next subscriber as before."""
    reads: list[int] = []
    real_page = session_service._page

    def recorded_page(app: CoordinatorApp, session_id: str, after: int, through: int | None,
                      batched: bool) -> object:
        reads.append(after)
        return real_page(app, session_id, after, through, batched)

    monkeypatch.setattr(session_service, "_page", recorded_page)
    with transport_harness(tmp_path / "data") as harness:
        commit_events(harness.db, 8, pad=400_000)  # ~3.2 MB: more than three batches' worth of payload
        subscribe = next(m for m in session_service.methods(harness.app) if m.name.endswith("/Subscribe"))
        request = product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, batched=True)

        async def first_batch_then_close() -> tuple[list[int], list[int]]:
            stream = subscribe.handler(None, request)  # type: ignore[arg-type]
            first = frame_events(await anext(stream))
            for _ in range(500):  # the read ahead runs in a worker thread; it starts before the batch is handed over
                if len(reads) >= 2:
                    break
                await asyncio.sleep(0.01)
            seen = list(reads)
            await stream.aclose()  # the client left mid-replay
            return [e.sequence for e in first], seen

        first, seen = asyncio.run(first_batch_then_close())
        again = asyncio.run(first_batch_then_close())
    assert first[0] == 1
    assert seen[:2] == [0, first[-1]]  # the second page was asked for while the first was still being sent
    assert again[0] == first  # the next subscriber is served the same first page
