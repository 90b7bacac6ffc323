"""The envelope protocol on one WebSocket connection (api/codeflux/v1/envelope.proto).

One WebSocket message is one ``Frame``. ``codeflux.v1+proto`` carries binary protobuf frames (a text
frame closes the connection 1003); ``codeflux.v1+json`` carries canonical proto3 JSON text frames
(unknown fields rejected; a binary frame closes 1003). A frame that does not decode closes 1002.

Streams: the client opens one with ``call`` on a stream id it chooses; ids start at 1 and each call's
id is greater than every earlier one on the connection (so an id is never reused and the server keeps
no growing set). A ``call`` on an id not above the last one, a ``cancel`` for an id never opened, or a
``message``/``status`` frame from the client is a protocol violation: close 1002. A ``cancel`` for a
stream that already ended is ignored (the status and the cancel crossed on the wire).

Per call: unknown method → UNIMPLEMENTED; a request whose ``Any`` type is not the method's request
type (or does not decode) → INVALID_ARGUMENT; more than ``max_streams`` open → RESOURCE_EXHAUSTED.
Unary handlers run in a worker thread, stream handlers as tasks on the loop; ``cancel`` cancels the
task and answers CANCELLED (a unary handler already running in its thread finishes, its reply is
dropped); ``deadline_ms`` → DEADLINE_EXCEEDED; any exception → :func:`status_of`. Every call ends with
exactly one status and logs only its method, code and duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Final

from google.protobuf import any_pb2, json_format
from google.protobuf.message import DecodeError, Message
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from codeflux.api.v1 import common_pb2, envelope_pb2
from codeflux.server.frame_json import reply_json
from codeflux.server.limits import TransportLimits
from codeflux.services.registry import (
    CallContext,
    Code,
    MethodTable,
    StreamMethod,
    UnaryMethod,
    plain_status,
    status_of,
)

__all__ = [
    "JSON_SUBPROTOCOL",
    "PROTO_SUBPROTOCOL",
    "SLOW_CLIENT_MESSAGE",
    "SUBPROTOCOLS",
    "EnvelopeConnection",
    "FrameError",
    "decode_frame",
    "encode_frame",
    "reply_frame_bytes",
]

JSON_SUBPROTOCOL: Final = "codeflux.v1+json"
PROTO_SUBPROTOCOL: Final = "codeflux.v1+proto"
SUBPROTOCOLS: Final = (JSON_SUBPROTOCOL, PROTO_SUBPROTOCOL)
SLOW_CLIENT_MESSAGE: Final = "slow client; resume from your last sequence"

CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_UNSUPPORTED_DATA: Final = 1003

CALL_LOGGER: Final = "codeflux.server.calls"


class FrameError(Exception):
    """A frame the connection cannot continue after; ``code`` is the WebSocket close code."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def decode_frame(data: str | bytes, subprotocol: str) -> envelope_pb2.Frame:
    frame = envelope_pb2.Frame()
    if subprotocol == PROTO_SUBPROTOCOL:
        if isinstance(data, str):
            raise FrameError(CLOSE_UNSUPPORTED_DATA, "text frame on codeflux.v1+proto")
        try:
            frame.ParseFromString(data)
        except DecodeError:
            raise FrameError(CLOSE_PROTOCOL_ERROR, "malformed frame") from None
        return frame
    if not isinstance(data, str):
        raise FrameError(CLOSE_UNSUPPORTED_DATA, "binary frame on codeflux.v1+json")
    try:
        json_format.Parse(data, frame, ignore_unknown_fields=False)
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        raise FrameError(CLOSE_PROTOCOL_ERROR, "malformed frame") from None
    return frame


def encode_frame(frame: envelope_pb2.Frame, subprotocol: str) -> str | bytes:
    if subprotocol == PROTO_SUBPROTOCOL:
        return bytes(frame.SerializeToString())
    return str(json_format.MessageToJson(frame, indent=None, preserving_proto_field_name=False))


Method = UnaryMethod[Message, Message] | StreamMethod[Message, Message]


def _packed(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


_TYPE_URL_PREFIX: Final = "type.googleapis.com/"


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def reply_frame_bytes(stream_id: int, reply: Message) -> bytes:
    """``Frame(stream_id=stream_id, message=Any.Pack(reply)).SerializeToString()``, with ``reply`` serialized once
    and nothing copied after that but the one concatenation: the frame and its ``Any`` are just a few bytes of
    field tags and lengths in front of it (building them as messages copies the reply's bytes in and out again —
    ~1 ms per MiB). Field order and proto3's omission of empty fields are what the protobuf encoder writes
    (tests/unit/server/test_transport_codec.py compares the bytes)."""
    value = reply.SerializeToString()
    type_url = (_TYPE_URL_PREFIX + reply.DESCRIPTOR.full_name).encode()
    any_head = b"\x0a" + _varint(len(type_url)) + type_url
    if value:
        any_head += b"\x12" + _varint(len(value))
    frame_head = (b"\x08" + _varint(stream_id) if stream_id else b"") + b"\x1a" + _varint(
        len(any_head) + len(value))
    return b"".join((frame_head, any_head, value))


class EnvelopeConnection:
    """Serves the envelope on one authenticated connection until it closes."""

    def __init__(
        self,
        websocket: ServerConnection,
        table: MethodTable,
        *,
        subprotocol: str,
        limits: TransportLimits,
        context: CallContext,
    ) -> None:
        self._ws = websocket
        self._table = table
        self._subprotocol = subprotocol
        self._limits = limits
        self._context = context
        self._highest_id = 0
        self._active: dict[int, asyncio.Task[None]] = {}
        self._cancelled: set[int] = set()
        self._chores: set[asyncio.Task[None]] = set()
        self._log = logging.getLogger(CALL_LOGGER)

    async def run(self) -> None:
        try:
            async for data in self._ws:
                try:
                    self._dispatch(decode_frame(data, self._subprotocol))
                except FrameError as error:
                    await self._ws.close(error.code, error.reason)
                    break
        except ConnectionClosed:
            pass
        finally:
            tasks = [*self._active.values(), *self._chores]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- incoming frames ----------------------------------------------------------------------------

    def _dispatch(self, frame: envelope_pb2.Frame) -> None:
        body = frame.WhichOneof("body")
        stream_id = frame.stream_id
        if body == "call":
            if stream_id <= self._highest_id:
                raise FrameError(CLOSE_PROTOCOL_ERROR, "stream id reused or out of order")
            self._highest_id = stream_id
            self._open(stream_id, frame.call)
        elif body == "cancel":
            if stream_id == 0 or stream_id > self._highest_id:
                raise FrameError(CLOSE_PROTOCOL_ERROR, "cancel for a stream that was never opened")
            task = self._active.get(stream_id)
            if task is not None and stream_id not in self._cancelled:
                self._cancelled.add(stream_id)
                task.cancel()
        else:
            raise FrameError(CLOSE_PROTOCOL_ERROR, "clients send only call and cancel frames")

    def _open(self, stream_id: int, call: envelope_pb2.Call) -> None:
        method = self._table.get(call.method)
        if method is None:
            self._refuse(stream_id, call.method, Code.UNIMPLEMENTED, common_pb2.UNIMPLEMENTED, "unknown method")
            return
        if len(self._active) >= self._limits.max_streams:
            self._refuse(stream_id, method.name, Code.RESOURCE_EXHAUSTED, common_pb2.RESOURCE_EXHAUSTED,
                         f"too many open calls on this connection (at most {self._limits.max_streams})")
            return
        expected = method.request_type.DESCRIPTOR.full_name
        request = method.request_type()
        try:
            matches = call.HasField("request") and call.request.TypeName() == expected
            decoded = matches and call.request.Unpack(request)
        except DecodeError:
            decoded = False
        if not decoded:
            self._refuse(stream_id, method.name, Code.INVALID_ARGUMENT, common_pb2.INVALID_ARGUMENT,
                         f"the request must be a {expected}")
            return
        task = asyncio.create_task(self._serve_call(stream_id, method, request, call.deadline_ms))
        self._active[stream_id] = task

    def _refuse(self, stream_id: int, method: str, code: int, error_code: common_pb2.ErrorCode, message: str) -> None:
        status = plain_status(code, error_code, message)
        self._log_call(method if self._table.get(method) is not None else "(unknown)", code, 0.0)
        chore = asyncio.create_task(self._send_quietly(envelope_pb2.Frame(stream_id=stream_id, status=status)))
        self._chores.add(chore)
        chore.add_done_callback(self._chores.discard)

    # --- outgoing frames ----------------------------------------------------------------------------

    async def _send(self, data: str | bytes) -> bool:
        """Send one encoded frame; False when the client did not drain the connection within the stall bound.

        The frame itself is already in the connection's write buffer then (websockets writes before it
        waits for the buffer to drain), so it still arrives, in order, if the client reads again."""
        try:
            async with asyncio.timeout(self._limits.stall_seconds):
                await self._ws.send(data)
        except TimeoutError:
            return False
        return True

    async def _send_reply(self, stream_id: int, reply: Message) -> bool:
        if self._subprotocol == PROTO_SUBPROTOCOL:
            data = reply_frame_bytes(stream_id, reply)
            if len(data) > self._limits.max_message_bytes - 1024:
                raise _ReplyTooLarge
            return await self._send(data)
        packed = _packed(reply)
        frame = envelope_pb2.Frame(stream_id=stream_id, message=packed)
        if frame.ByteSize() > self._limits.max_message_bytes - 1024:
            raise _ReplyTooLarge
        fast = reply_json(reply)
        if fast is None:
            return await self._send(encode_frame(frame, self._subprotocol))
        # a bulk reply's proto3 JSON, built at C speed (frame_json.py)
        return await self._send(json.dumps({"streamId": stream_id, "message": {"@type": packed.type_url, **fast}},
                                           ensure_ascii=False, separators=(",", ":")))

    # --- one call -----------------------------------------------------------------------------------

    async def _serve_call(self, stream_id: int, method: Method, request: Message, deadline_ms: int) -> None:
        started = time.monotonic()
        status = envelope_pb2.Status(code=Code.OK)
        try:
            async with asyncio.timeout(deadline_ms / 1000 if deadline_ms else None):
                if isinstance(method, StreamMethod):
                    status = await self._run_stream(stream_id, method.handler(self._context, request))
                else:
                    reply = await asyncio.to_thread(method.handler, self._context, request)
                    await self._send_reply(stream_id, reply)
        except asyncio.CancelledError:
            if stream_id not in self._cancelled:
                raise  # the connection is closing: no status can be sent
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            status = plain_status(Code.CANCELLED, common_pb2.CANCELLED, "cancelled by the client")
        except TimeoutError:
            status = plain_status(Code.DEADLINE_EXCEEDED, common_pb2.DEADLINE_EXCEEDED, "the call's deadline passed")
        except _ReplyTooLarge:
            status = plain_status(Code.RESOURCE_EXHAUSTED, common_pb2.RESOURCE_EXHAUSTED,
                                  "the reply is larger than the transport allows")
        except ConnectionClosed:
            return
        except Exception as error:  # every other failure becomes a status, never a traceback
            status = status_of(error)
            if status.code == Code.INTERNAL:
                self._log.error("internal error in %s (%s)", method.name, type(error).__name__, exc_info=error)
        finally:
            self._active.pop(stream_id, None)
            self._cancelled.discard(stream_id)
        self._log_call(method.name, status.code, time.monotonic() - started)
        await self._send_quietly(envelope_pb2.Frame(stream_id=stream_id, status=status))

    async def _send_quietly(self, frame: envelope_pb2.Frame) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._send(encode_frame(frame, self._subprotocol))

    async def _run_stream(self, stream_id: int, replies: AsyncIterator[Message]) -> envelope_pb2.Status:
        try:
            async for reply in replies:
                if not await self._send_reply(stream_id, reply):
                    return plain_status(Code.RESOURCE_EXHAUSTED, common_pb2.RESOURCE_EXHAUSTED, SLOW_CLIENT_MESSAGE)
        finally:
            aclose = getattr(replies, "aclose", None)
            if aclose is not None:
                await aclose()
        return envelope_pb2.Status(code=Code.OK)

    def _log_call(self, method: str, code: int, seconds: float) -> None:
        self._log.info(
            "rpc method=%s code=%d duration_ms=%.1f", method, code, seconds * 1000,
            extra={"rpc_method": method, "rpc_code": code, "rpc_duration_ms": round(seconds * 1000, 1)},
        )


class _ReplyTooLarge(Exception):
    pass
