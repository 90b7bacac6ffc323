"""The method table as a grpc.aio server on a Unix socket (``<data>/coordinator/coordinator.sock``).

The headless CLI talks to a running coordinator here. Authentication is the socket's file
permissions: the directory is created 0700 (and must be a directory owned by this user, not a
symlink, with no group/other bits), the socket is created under umask 077 and ``chmod``-ed 0600 before
the server is reported ready, so only this user's processes can connect. grpcio does not expose the
peer's credentials (``SO_PEERCRED``) to a Python handler, so the permissions are the boundary; no
header or metadata is trusted for identity.

Every method is registered with a generic handler whose request deserializer is the method's request
type. Errors become a gRPC status (the same numeric code the WebSocket envelope sends) with a safe
details string, and the :class:`ApiErrorDetail` serialized in trailing metadata under
:data:`ERROR_DETAIL_METADATA`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import stat
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import grpc
from google.protobuf.message import Message

from codeflux.api.v1 import envelope_pb2
from codeflux.domain.errors import CoordinatorRunningError, DataDirectoryError
from codeflux.server.envelope import CALL_LOGGER
from codeflux.server.limits import TransportLimits
from codeflux.services.registry import UNIX_SOCKET, CallContext, MethodTable, StreamMethod, UnaryMethod, status_of

__all__ = [
    "ERROR_DETAIL_METADATA",
    "GRPC_STATUS",
    "prepare_socket_directory",
    "start_unix_server",
]

ERROR_DETAIL_METADATA: Final = "codeflux-error-detail-bin"
GRPC_STATUS: Final = {code.value[0]: code for code in grpc.StatusCode}
_MAX_SOCKET_PATH: Final = 100  # sun_path is 108 bytes on Linux, 104 on BSDs


def prepare_socket_directory(socket_path: Path) -> None:
    """Create the socket's directory 0700 (or check an existing one) and clear a stale socket.

    Refuses a path too long for a Unix socket, a directory that is a symlink, not ours or open to others,
    and a socket another live coordinator still answers on."""
    if len(os.fsencode(socket_path)) > _MAX_SOCKET_PATH:
        raise DataDirectoryError("the data directory path is too long for the coordinator's Unix socket; "
                                 "use a shorter --data-dir")
    directory = socket_path.parent
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise DataDirectoryError("the coordinator socket directory must be a 0700 directory owned by this user")
    try:
        existing = os.lstat(socket_path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(existing.st_mode):
        raise DataDirectoryError("the coordinator socket path holds something that is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(os.fspath(socket_path))
    except OSError:
        socket_path.unlink()  # stale: left by a coordinator that did not exit cleanly
        return
    finally:
        probe.close()
    raise CoordinatorRunningError(holder="its Unix socket answers")


def _log_call(method: str, code: int, started: float) -> None:
    duration_ms = (time.monotonic() - started) * 1000
    logging.getLogger(CALL_LOGGER).info(
        "rpc method=%s code=%d duration_ms=%.1f", method, code, duration_ms,
        extra={"rpc_method": method, "rpc_code": code, "rpc_duration_ms": round(duration_ms, 1)},
    )


async def _abort(context: grpc.aio.ServicerContext[Any, Any], status: envelope_pb2.Status) -> None:
    await context.abort(
        GRPC_STATUS.get(status.code, grpc.StatusCode.INTERNAL),
        status.safe_message,
        trailing_metadata=((ERROR_DETAIL_METADATA, status.detail.SerializeToString()),),
    )


def _failure(method: str, error: Exception) -> envelope_pb2.Status:
    status = status_of(error)
    if status.code == 13:
        logging.getLogger(CALL_LOGGER).error("internal error in %s (%s)", method, type(error).__name__, exc_info=error)
    return status


def _unary(method: UnaryMethod[Message, Message], context_of: Callable[[], CallContext]) -> grpc.RpcMethodHandler:
    async def handle(request: Message, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        started = time.monotonic()
        try:
            reply = await asyncio.to_thread(method.handler, context_of(), request)
        except Exception as error:
            status = _failure(method.name, error)
            _log_call(method.name, status.code, started)
            await _abort(context, status)
            raise  # not reached: abort raises
        _log_call(method.name, 0, started)
        return reply

    return grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=method.request_type.FromString,
        response_serializer=method.response_type.SerializeToString,
    )


def _stream(method: StreamMethod[Message, Message], context_of: Callable[[], CallContext]) -> grpc.RpcMethodHandler:
    async def handle(request: Message, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Message]:
        started = time.monotonic()
        replies = method.handler(context_of(), request)
        try:
            async for reply in replies:
                yield reply
        except asyncio.CancelledError:
            _log_call(method.name, 1, started)
            raise
        except Exception as error:
            status = _failure(method.name, error)
            _log_call(method.name, status.code, started)
            await _abort(context, status)
        else:
            _log_call(method.name, 0, started)
        finally:
            aclose = getattr(replies, "aclose", None)
            if aclose is not None:
                await aclose()

    return grpc.unary_stream_rpc_method_handler(
        handle,
        request_deserializer=method.request_type.FromString,
        response_serializer=method.response_type.SerializeToString,
    )


async def start_unix_server(
    table: MethodTable, socket_path: Path, *, limits: TransportLimits | None = None
) -> grpc.aio.Server:
    """Bind ``socket_path`` (see :func:`prepare_socket_directory`), start serving, return the server."""
    bounds = limits or TransportLimits()
    prepare_socket_directory(socket_path)
    scope = CallContext(transport=UNIX_SOCKET, connection_id=f"unix-{secrets.token_hex(8)}")
    handlers = []
    for service, service_methods in table.services().items():
        by_name: dict[str, grpc.RpcMethodHandler] = {}
        for method in service_methods:
            short = method.name.rsplit("/", 1)[1]
            if isinstance(method, StreamMethod):
                by_name[short] = _stream(method, lambda: scope)
            else:
                by_name[short] = _unary(method, lambda: scope)
        handlers.append(grpc.method_handlers_generic_handler(service, by_name))
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", bounds.max_message_bytes),
            ("grpc.max_send_message_length", bounds.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=bounds.max_connections * bounds.max_streams,
    )
    server.add_generic_rpc_handlers(handlers)
    previous = os.umask(0o077)
    try:
        if server.add_insecure_port(f"unix:{socket_path}") == 0:
            raise DataDirectoryError("could not bind the coordinator's Unix socket")
        await server.start()
    finally:
        os.umask(previous)
    os.chmod(socket_path, 0o600)
    return server
