"""A session stream batch in the browser's subprotocol (issue 20 item 5): the fast proto3 JSON of a batch frame
says exactly what ``json_format`` says, parses back into the same frame, and only batch frames take the fast path;
a Python client reads a batch's columns back as events, and refuses columns of different lengths."""

from __future__ import annotations

import json

import pytest
from google.protobuf import any_pb2

from codeflux.api.v1 import envelope_pb2, product_pb2
from codeflux.domain.errors import OperationFailedError
from codeflux.server.client import StreamedEvent, frame_events
from codeflux.server.envelope import JSON_SUBPROTOCOL, decode_frame, encode_frame
from codeflux.server.frame_json import reply_json

PAYLOADS = ['{"text":"plain"}', '{"text":"quote \\" backslash \\\\ tab \\t"}', '{"text":"é 日本 \U0001f600"}', "{}"]


def a_batch() -> product_pb2.SessionFrame:
    return product_pb2.SessionFrame(batch=product_pb2.SessionEventBatch(
        session_id="ses_x", first_sequence=2**40, kinds=["agent-message", "task-created", "from-the-future", "x"],
        created_at_us=[1, 2**62, 0, 7], payloads_json=PAYLOADS,
        event_kinds=[product_pb2.EVENT_KIND_AGENT_MESSAGE, product_pb2.EVENT_KIND_TASK_CREATED,
                     product_pb2.EVENT_KIND_UNSPECIFIED, 999]))  # 999: a number this codeflux has no name for


def _envelope_text(reply: product_pb2.SessionFrame) -> str:
    packed = any_pb2.Any()
    packed.Pack(reply)
    fast = reply_json(reply)
    assert fast is not None
    return json.dumps({"streamId": 3, "message": {"@type": packed.type_url, **fast}}, ensure_ascii=False)


def test_a_batch_frames_fast_json_is_what_json_format_writes() -> None:
    packed = any_pb2.Any()
    packed.Pack(a_batch())
    generic = encode_frame(envelope_pb2.Frame(stream_id=3, message=packed), JSON_SUBPROTOCOL)
    assert json.loads(_envelope_text(a_batch())) == json.loads(generic)
    assert json.loads(_envelope_text(a_batch()))["message"]["batch"]["firstSequence"] == str(2**40)


def test_the_fast_json_parses_back_into_the_same_frame() -> None:
    frame = decode_frame(_envelope_text(a_batch()), JSON_SUBPROTOCOL)
    reply = product_pb2.SessionFrame()
    assert frame.message.Unpack(reply)
    assert reply == a_batch()


@pytest.mark.parametrize("reply", [
    product_pb2.SessionFrame(event=product_pb2.SessionEvent(session_id="ses_x", sequence=1)),
    product_pb2.SessionFrame(replay_boundary=product_pb2.ReplayBoundary(through_sequence=4)),
    product_pb2.SessionHead(session_id="ses_x", through_sequence=4),
])
def test_other_replies_keep_the_generic_path(reply: product_pb2.SessionFrame) -> None:
    assert reply_json(reply) is None


def test_a_client_reads_a_batchs_columns_as_events() -> None:
    events = frame_events(a_batch())
    assert events[1] == StreamedEvent("ses_x", 2**40 + 1, "task-created", 2**62, PAYLOADS[1],
                                      product_pb2.EVENT_KIND_TASK_CREATED)
    assert [event.sequence for event in events] == [2**40 + n for n in range(4)]
    assert [event.payload_json for event in events] == PAYLOADS
    single = product_pb2.SessionEvent(session_id="ses_x", sequence=9, kind="k", payload_json="{}")
    assert frame_events(product_pb2.SessionFrame(event=single)) == [StreamedEvent("ses_x", 9, "k", 0, "{}", 0)]
    assert frame_events(product_pb2.SessionFrame(replay_boundary=product_pb2.ReplayBoundary())) == []


def test_a_batch_whose_columns_differ_in_length_is_refused() -> None:
    frame = a_batch()
    frame.batch.payloads_json.append("{}")
    with pytest.raises(OperationFailedError, match="columns differ"):
        frame_events(frame)
