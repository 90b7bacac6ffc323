"""The same session service over the grpc.aio server on the coordinator's Unix socket (the CLI's path)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from codeflux.api.v1 import common_pb2, product_pb2
from codeflux.domain.errors import CoordinatorRunningError, NotFoundError, UsageError
from codeflux.server.client import call_stream, call_unary, coordinator_running, unix_channel
from codeflux.server.grpc_socket import ERROR_DETAIL_METADATA, prepare_socket_directory
from codeflux.server.serve import start_in_thread
from codeflux.services.registry import MethodTable
from codeflux.store.events import SYSTEM_SESSION_ID
from tests.fixtures.transport_servers import GET_HEAD, SUBSCRIBE, TransportHarness, commit_events, transport_harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[TransportHarness]:
    with transport_harness(tmp_path / "data") as running:
        commit_events(running.db, 6)
        yield running


def test_unary_and_stream_calls_over_the_unix_socket(harness: TransportHarness) -> None:
    assert coordinator_running(harness.server.socket_path)
    with unix_channel(harness.server.socket_path) as channel:
        head = call_unary(channel, GET_HEAD, product_pb2.GetHeadRequest(session_id=SYSTEM_SESSION_ID),
                          product_pb2.SessionHead)
        frames = call_stream(channel, SUBSCRIBE,
                             product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, after_sequence=3),
                             product_pb2.SessionFrame)
        sequences = []
        for frame in frames:
            if frame.HasField("replay_boundary"):
                boundary = frame.replay_boundary.through_sequence
                break
            sequences.append(frame.event.sequence)
        frames.close()
    assert head.through_sequence == 6
    assert sequences == [4, 5, 6]
    assert boundary == 6


def test_errors_carry_the_code_and_the_detail_in_trailing_metadata(harness: TransportHarness) -> None:
    with unix_channel(harness.server.socket_path) as channel:
        stub = channel.unary_unary(GET_HEAD, request_serializer=product_pb2.GetHeadRequest.SerializeToString,
                                   response_deserializer=product_pb2.SessionHead.FromString)
        with pytest.raises(grpc.RpcError) as raised:
            stub(product_pb2.GetHeadRequest(session_id="ses_missing"), timeout=30)
        error = raised.value
        assert isinstance(error, grpc.Call)
        assert error.code() == grpc.StatusCode.NOT_FOUND
        detail = common_pb2.ApiErrorDetail.FromString(dict(error.trailing_metadata())[ERROR_DETAIL_METADATA])
        assert detail.code == common_pb2.NOT_FOUND
        assert detail.safe_message == "no session with id ses_missing"
        assert detail.error_type == "NotFoundError"

        with pytest.raises(NotFoundError, match="no session with id ses_missing"):
            call_unary(channel, GET_HEAD, product_pb2.GetHeadRequest(session_id="ses_missing"), product_pb2.SessionHead)
        with pytest.raises(UsageError, match="ahead of committed history"):
            list(call_stream(channel, SUBSCRIBE,
                             product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, after_sequence=7),
                             product_pb2.SessionFrame))
        unknown = channel.unary_unary("/codeflux.v1.NoSuchService/Nothing",
                                      request_serializer=product_pb2.GetHeadRequest.SerializeToString,
                                      response_deserializer=product_pb2.SessionHead.FromString)
        with pytest.raises(grpc.RpcError) as raised:
            unknown(product_pb2.GetHeadRequest(), timeout=30)
        assert isinstance(raised.value, grpc.Call)
        assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_second_server_on_a_live_socket_is_refused_and_a_stale_one_is_replaced(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data") as harness:
        path = harness.server.socket_path
        with pytest.raises(CoordinatorRunningError):
            prepare_socket_directory(path)
    stale = Path(tmp_path / "s")
    stale.mkdir(mode=0o700)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(stale / "c.sock"))
    leftover.close()  # a socket file nobody listens on: what a killed coordinator leaves behind
    server = start_in_thread(MethodTable.of([]), socket_path=stale / "c.sock")
    try:
        assert coordinator_running(stale / "c.sock")
    finally:
        server.stop()
    assert not (stale / "c.sock").exists()
