"""Python clients of a running coordinator: the binary WebSocket envelope, and gRPC on the Unix socket.

- :class:`EnvelopeClient` speaks ``codeflux.v1+proto`` over one WebSocket (tests, benchmarks); it
  multiplexes calls on one connection like the browser does. Sign in first with :func:`redeem_launch`,
  which does what the browser does with a launch link: it gets the session cookie and the tab's page key.
  Like a browser, it connects ``*.localhost`` names to 127.0.0.1 itself (no system resolver involved).
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
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, NamedTuple, TypeVar, cast
from urllib.parse import urlsplit

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from codeflux.api.v1 import common_pb2, envelope_pb2, product_pb2
from codeflux.domain import errors
from codeflux.server.envelope import PROTO_SUBPROTOCOL
from codeflux.server.grpc_socket import ERROR_DETAIL_METADATA
from codeflux.server.launch import COOKIE_NAME, PAGE_KEY_PROTOCOL_PREFIX
from codeflux.server.limits import MAX_MESSAGE_BYTES
from codeflux.services.registry import Code

__all__ = [
    "PAGE_KEY_META",
    "BrowserSession",
    "EnvelopeClient",
    "EnvelopeStream",
    "StreamedEvent",
    "call_stream",
    "call_unary",
    "connect_address",
    "coordinator_running",
    "error_from_status",
    "frame_events",
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


class StreamedEvent(NamedTuple):
    """One committed event as the session stream delivered it (the fields of a ``SessionEvent``)."""

    session_id: str
    sequence: int
    kind: str
    created_at_us: int
    payload_json: str
    event_kind: int


def frame_events(frame: product_pb2.SessionFrame) -> list[StreamedEvent]:
    """The events a session frame carries, in order: its one event, a batch's columns event by event, or none (the
    replay boundary). A batch whose columns differ in length is refused (OperationFailedError)."""
    body = frame.WhichOneof("body")
    if body == "event":
        e = frame.event
        return [StreamedEvent(e.session_id, e.sequence, e.kind, e.created_at_us, e.payload_json, e.event_kind)]
    if body != "batch":
        return []
    batch = frame.batch
    count = len(batch.kinds)
    if not len(batch.created_at_us) == len(batch.payloads_json) == len(batch.event_kinds) == count:
        raise errors.OperationFailedError("the coordinator sent a batch whose columns differ in length")
    first = batch.first_sequence
    rows = zip(itertools.repeat(batch.session_id, count), range(first, first + count), batch.kinds,
               batch.created_at_us, batch.payloads_json, batch.event_kinds, strict=True)
    # tuple.__new__ makes each StreamedEvent from its row in C (what StreamedEvent._make does one Python call each).
    return cast(list[StreamedEvent], list(map(tuple.__new__, itertools.repeat(StreamedEvent), rows)))


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


@dataclass(frozen=True, slots=True)
class BrowserSession:
    """What a redeemed launch link grants a client: the ``Cookie`` header value and the page key."""

    cookie: str = field(repr=False)
    page_key: str = field(repr=False)

    def __repr__(self) -> str:
        return "BrowserSession(<redacted>)"

    def subprotocols(self, subprotocol: str = PROTO_SUBPROTOCOL) -> list[str]:
        """What the upgrade offers: the envelope's subprotocol, then the page key's."""
        return [subprotocol, f"{PAGE_KEY_PROTOCOL_PREFIX}{self.page_key}"]


def connect_address(hostname: str | None) -> str:
    """Where a client connects for a URL's host: ``*.localhost`` (and ``localhost``) are loopback by
    definition (RFC 6761), so they go to 127.0.0.1 without asking a resolver; anything else as given."""
    name = (hostname or "127.0.0.1").lower()
    return "127.0.0.1" if name == "localhost" or name.endswith(".localhost") else name


PAGE_KEY_META: Final = re.compile(r'<meta name="codeflux-page-key" content="([A-Za-z0-9_-]{16,128})">')


def redeem_launch(launch_url: str) -> BrowserSession:
    """Open a launch URL once and return the session it grants (the cookie and the page key)."""
    parts = urlsplit(launch_url)
    connection = http.client.HTTPConnection(connect_address(parts.hostname), parts.port, timeout=30)
    try:
        connection.putrequest("GET", f"{parts.path}?{parts.query}", skip_host=True)
        connection.putheader("Host", parts.netloc)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read().decode("utf-8", "replace")
        set_cookie = response.getheader("Set-Cookie") or ""
    finally:
        connection.close()
    cookie = set_cookie.split(";", 1)[0]
    page_key = PAGE_KEY_META.search(body)
    if response.status != 200 or not cookie.startswith(f"{COOKIE_NAME}=") or page_key is None:
        raise errors.PrerequisiteError("the launch URL did not grant a session (already used or expired)")
    return BrowserSession(cookie, page_key.group(1))


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
    async def connect(cls, ws_url: str, *, session: BrowserSession, origin: str | None = None,
                      max_queue: int | None = 16, sock: socket.socket | None = None) -> EnvelopeClient:
        parts = urlsplit(ws_url)
        where: dict[str, Any] = {"sock": sock} if sock is not None else {"host": connect_address(parts.hostname)}
        connection = await connect(
            ws_url,
            additional_headers={"Cookie": session.cookie},
            origin=origin or f"http://{parts.netloc}",  # type: ignore[arg-type]
            subprotocols=session.subprotocols(),  # type: ignore[arg-type]
            max_size=MAX_MESSAGE_BYTES,
            max_queue=max_queue,
            compression=None,
            proxy=None,
            **where,
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
