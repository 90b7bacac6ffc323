"""Python clients of a running coordinator: the binary WebSocket envelope, and gRPC on the Unix socket.

- :class:`EnvelopeClient` speaks ``codeflux.v1+proto`` over one WebSocket (tests, benchmarks); it
  multiplexes calls on one connection like the browser does. Sign in first with :func:`redeem_launch`.
- :func:`unix_channel` + :func:`call_unary` (and :func:`call_stream`) are what the CLI uses when a
  coordinator is running (:func:`coordinator_running`).

A non-OK status becomes a codeflux error carrying the server's safe message: the class named by the
status detail's ``error_type`` when it is a codeflux error class (so exit codes match a local run),
else the family of the status code. Such an error is rebuilt from its message alone; only ``str()``,
its class and ``entity_id`` are meaningful.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import itertools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from codeflux.api.v1 import common_pb2, envelope_pb2
from codeflux.domain import errors
from codeflux.server.envelope import PROTO_SUBPROTOCOL
from codeflux.server.grpc_socket import ERROR_DETAIL_METADATA
from codeflux.server.launch import COOKIE_NAME
from codeflux.server.limits import MAX_MESSAGE_BYTES
from codeflux.services.registry import Code

__all__ = [
    "EnvelopeClient",
    "EnvelopeStream",
    "call_stream",
    "call_unary",
    "coordinator_running",
    "error_from_status",
    "redeem_launch",
    "unix_channel",
]

Rep = TypeVar("Rep", bound=Message)

_FAMILY: Final[dict[int, type[errors.CodefluxError]]] = {
    Code.INVALID_ARGUMENT: errors.UsageError,
    Code.NOT_FOUND: errors.NotFoundError,
    Code.FAILED_PRECONDITION: errors.PrerequisiteError,
    Code.ABORTED: errors.ConflictError,
    Code.PERMISSION_DENIED: errors.AuthorityRefusedError,
    Code.UNAVAILABLE: errors.PrerequisiteError,
}


def error_from_status(code: int, message: str, detail: common_pb2.ApiErrorDetail | None = None) -> errors.CodefluxError:
    """The codeflux error a client raises for a non-OK status (see the module docstring)."""
    chosen: type[errors.CodefluxError] = _FAMILY.get(code, errors.OperationFailedError)
    if detail is not None and detail.error_type in errors.__all__:
        named = getattr(errors, detail.error_type)
        if isinstance(named, type) and issubclass(named, errors.CodefluxError):
            chosen = named
    error = chosen.__new__(chosen)
    Exception.__init__(error, message or "the coordinator refused the call")
    if detail is not None and detail.entity_id:
        error.entity_id = detail.entity_id  # type: ignore[attr-defined]
    return error


# --- gRPC on the Unix socket ---------------------------------------------------------------------------


def coordinator_running(socket_path: Path) -> bool:
    """Whether something accepts connections on the coordinator's socket (the CLI then uses it)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(os.fspath(socket_path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def unix_channel(socket_path: Path) -> grpc.Channel:
    return grpc.insecure_channel(
        f"unix:{socket_path}",
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )


def _rpc_error(error: grpc.RpcError) -> errors.CodefluxError:
    code = error.code().value[0] if isinstance(error, grpc.Call) else Code.UNKNOWN
    detail = None
    if isinstance(error, grpc.Call):
        for key, value in error.trailing_metadata() or ():
            if key == ERROR_DETAIL_METADATA and isinstance(value, bytes):
                with contextlib.suppress(Exception):
                    detail = common_pb2.ApiErrorDetail.FromString(value)
    if detail is None:
        if code == Code.UNAVAILABLE:
            return errors.PrerequisiteError("the codeflux coordinator is not answering on its socket")
        return error_from_status(code, "the call to the coordinator failed", None)
    return error_from_status(code, detail.safe_message, detail)


def call_unary(channel: grpc.Channel, method: str, request: Message, response_type: type[Rep],
               *, timeout: float = 60.0) -> Rep:
    """Call ``method`` ("/codeflux.v1.TaskService/ListTasks"); raise a codeflux error on a non-OK status."""
    stub = channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                               response_deserializer=response_type.FromString)
    try:
        return stub(request, timeout=timeout)  # type: ignore[no-any-return]
    except grpc.RpcError as error:
        raise _rpc_error(error) from None


def call_stream(channel: grpc.Channel, method: str, request: Message, response_type: type[Rep]) -> Iterator[Rep]:
    """Iterate a server stream; a non-OK end raises a codeflux error. Closing the iterator cancels the call."""
    stub = channel.unary_stream(method, request_serializer=type(request).SerializeToString,
                                response_deserializer=response_type.FromString)
    call = stub(request)
    try:
        yield from call
    except grpc.RpcError as error:
        raise _rpc_error(error) from None
    finally:
        call.cancel()


# --- the WebSocket envelope -----------------------------------------------------------------------------


def redeem_launch(launch_url: str) -> str:
    """Open a launch URL once and return the ``Cookie`` header value it grants (``codeflux_session=…``)."""
    parts = urlsplit(launch_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        set_cookie = response.getheader("Set-Cookie") or ""
    finally:
        connection.close()
    cookie = set_cookie.split(";", 1)[0]
    if response.status != 303 or not cookie.startswith(f"{COOKIE_NAME}="):
        raise errors.PrerequisiteError("the launch URL did not grant a session (already used or expired)")
    return cookie


class EnvelopeStream(Generic[Rep]):
    """One open call's replies; iterate it (async). Ends at the OK status; a non-OK status raises."""

    def __init__(self, client: EnvelopeClient, stream_id: int, response_type: type[Rep]) -> None:
        self._client = client
        self.stream_id = stream_id
        self._response_type = response_type
        self.queue: asyncio.Queue[envelope_pb2.Frame | None] = asyncio.Queue()
        self.status: envelope_pb2.Status | None = None
        self.cancelled = False

    def __aiter__(self) -> EnvelopeStream[Rep]:
        return self

    async def __anext__(self) -> Rep:
        if self.status is not None:
            raise StopAsyncIteration
        frame = await self.queue.get()
        if frame is None:
            raise errors.OperationFailedError("the connection to the coordinator closed")
        if frame.HasField("status"):
            self.status = frame.status
            if frame.status.code == Code.CANCELLED and self.cancelled:
                raise StopAsyncIteration
            if frame.status.code != Code.OK:
                raise error_from_status(frame.status.code, frame.status.safe_message, frame.status.detail)
            raise StopAsyncIteration
        reply: Rep = self._response_type()
        if not frame.message.Unpack(reply):
            raise errors.OperationFailedError("the coordinator sent a reply of an unexpected type")
        return reply

    async def cancel(self) -> None:
        """Ask the server to end the call; iteration then ends quietly at its CANCELLED status."""
        self.cancelled = True
        await self._client.send_frame(envelope_pb2.Frame(stream_id=self.stream_id, cancel=envelope_pb2.Cancel()))


class EnvelopeClient:
    """A binary-envelope client on one WebSocket. Use ``async with await EnvelopeClient.connect(...)``."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self._ids = itertools.count(1)
        self._streams: dict[int, EnvelopeStream[Any]] = {}
        self.closed_reason = ""
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, ws_url: str, *, cookie: str, origin: str | None = None,
                      max_queue: int | None = 16, sock: socket.socket | None = None) -> EnvelopeClient:
        parts = urlsplit(ws_url)
        connection = await connect(
            ws_url,
            additional_headers={"Cookie": cookie},
            origin=origin or f"http://{parts.netloc}",  # type: ignore[arg-type]
            subprotocols=[PROTO_SUBPROTOCOL],  # type: ignore[list-item]
            max_size=MAX_MESSAGE_BYTES,
            max_queue=max_queue,
            compression=None,
            sock=sock,
        )
        return cls(connection)

    async def __aenter__(self) -> EnvelopeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.connection.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def send_frame(self, frame: envelope_pb2.Frame) -> None:
        await self.connection.send(frame.SerializeToString())

    async def _read(self) -> None:
        try:
            async for data in self.connection:
                if not isinstance(data, bytes):
                    continue
                frame = envelope_pb2.Frame.FromString(data)
                stream = self._streams.get(frame.stream_id)
                if stream is None:
                    continue
                if frame.HasField("status"):
                    del self._streams[frame.stream_id]
                stream.queue.put_nowait(frame)
        except (ConnectionClosed, DecodeError):  # the connection ended; every open stream learns it below
            self.closed_reason = "closed"
        finally:
            for stream in self._streams.values():
                stream.queue.put_nowait(None)
            self._streams.clear()

    async def open(self, method: str, request: Message, response_type: type[Rep], *,
                   deadline_ms: int = 0) -> EnvelopeStream[Rep]:
        """Open a call (the request is packed into an ``Any`` unless it already is one); iterate the result."""
        stream_id = next(self._ids)
        packed = request if isinstance(request, any_pb2.Any) else any_pb2.Any()
        if not isinstance(request, any_pb2.Any):
            packed.Pack(request)
        opened = EnvelopeStream(self, stream_id, response_type)
        self._streams[stream_id] = opened
        call = envelope_pb2.Call(method=method, request=packed, deadline_ms=deadline_ms)
        await self.send_frame(envelope_pb2.Frame(stream_id=stream_id, call=call))
        return opened

    stream = open

    async def call(self, method: str, request: Message, response_type: type[Rep], *, deadline_ms: int = 0) -> Rep:
        """A unary call: its one reply, or the codeflux error of its status."""
        replies = await self.open(method, request, response_type, deadline_ms=deadline_ms)
        result: Rep | None = None
        async for reply in replies:
            result = reply
        if result is None:
            raise errors.OperationFailedError("the coordinator ended the call without a reply")
        return result
