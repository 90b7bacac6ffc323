"""Frame encoding in both subprotocols, the upgrade-rate window and the transport limits' validation."""

from __future__ import annotations

import pytest
from google.protobuf import any_pb2

from codeflux.api.v1 import envelope_pb2, product_pb2
from codeflux.server.envelope import (
    JSON_SUBPROTOCOL,
    PROTO_SUBPROTOCOL,
    FrameError,
    decode_frame,
    encode_frame,
    reply_frame_bytes,
)
from codeflux.server.limits import TransportLimits, UpgradeRate


def a_frame() -> envelope_pb2.Frame:
    packed = any_pb2.Any()
    packed.Pack(product_pb2.SessionHead(session_id="ses_system", through_sequence=2**40))
    return envelope_pb2.Frame(stream_id=7, message=packed)


@pytest.mark.parametrize("subprotocol", [PROTO_SUBPROTOCOL, JSON_SUBPROTOCOL])
def test_frames_round_trip(subprotocol: str) -> None:
    assert decode_frame(encode_frame(a_frame(), subprotocol), subprotocol) == a_frame()


@pytest.mark.parametrize("reply", [
    product_pb2.SessionHead(session_id="ses_system", through_sequence=2**40),
    product_pb2.SessionHead(),  # empty: the Any's value is left out, as the encoder leaves out an empty field
    product_pb2.SessionFrame(batch={  # lengths of two and three varint bytes
        "session_id": "ses_x", "first_sequence": 1, "kinds": ["agent-message"] * 300, "created_at_us": [2**52] * 300,
        "payloads_json": ['{"text":"é' + "x" * 500 + '"}'] * 300, "event_kinds": [1] * 300}),
])
@pytest.mark.parametrize("stream_id", [1, 200, 2**31])
def test_a_reply_frame_built_around_the_serialized_reply_is_the_encoders_frame(reply: product_pb2.SessionHead,
                                                                               stream_id: int) -> None:
    packed = any_pb2.Any()
    packed.Pack(reply)
    expected = envelope_pb2.Frame(stream_id=stream_id, message=packed)
    assert reply_frame_bytes(stream_id, reply) == expected.SerializeToString()
    assert decode_frame(reply_frame_bytes(stream_id, reply), PROTO_SUBPROTOCOL) == expected


def test_json_keeps_int64_as_a_string() -> None:
    encoded = encode_frame(a_frame(), JSON_SUBPROTOCOL)
    assert isinstance(encoded, str)
    assert '"throughSequence": "1099511627776"' in encoded


@pytest.mark.parametrize(
    ("data", "subprotocol", "code"),
    [
        ("{}", PROTO_SUBPROTOCOL, 1003),
        (b"{}", JSON_SUBPROTOCOL, 1003),
        (b"\x08", PROTO_SUBPROTOCOL, 1002),
        ("not json", JSON_SUBPROTOCOL, 1002),
        ('{"streamId": 1, "unknown": 2}', JSON_SUBPROTOCOL, 1002),
        ('{"streamId": 1, "message": {"@type": "type.googleapis.com/no.Such", "x": 1}}', JSON_SUBPROTOCOL, 1002),
        ('{"streamId": -1}', JSON_SUBPROTOCOL, 1002),
        ("[" * 5000 + "]" * 5000, JSON_SUBPROTOCOL, 1002),
    ],
)
def test_undecodable_frames_name_their_close_code(data: str | bytes, subprotocol: str, code: int) -> None:
    with pytest.raises(FrameError) as raised:
        decode_frame(data, subprotocol)
    assert raised.value.code == code


def test_the_upgrade_rate_is_a_sliding_minute() -> None:
    now = [0.0]
    rate = UpgradeRate(2, clock=lambda: now[0])
    assert [rate.admit(), rate.admit(), rate.admit()] == [True, True, False]
    now[0] = 59.9
    assert not rate.admit()
    now[0] = 60.0
    assert rate.admit()


@pytest.mark.parametrize("bad", [{"max_streams": 0}, {"stall_seconds": 0}, {"upgrades_per_minute": -1}])
def test_limits_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        TransportLimits(**bad)  # type: ignore[arg-type]
