"""Serving one lease: the Unix socket, the token check on every call, and every way the worker ends.

The socket lives in a directory the coordinator created for it (``mkdtemp``: 0700, ours — checked
here); it is created under umask 077 and ``chmod``-ed 0600 before readiness is announced. A server
interceptor compares the ``x-codeflux-lease-token`` metadata with ``hmac.compare_digest`` on every call
and answers UNAUTHENTICATED otherwise (a missing, repeated or wrong token alike); on the long-lived
``Execute`` stream the service compares the token each request repeats as well.

The worker ends — killing every process group it started first — on ``Shutdown``, on ``SIGTERM``/
``SIGINT``/``SIGHUP``, when its stdin reaches end-of-file (the coordinator that holds the other end died),
or when no heartbeat renewed the lease for :data:`LEASE_MISSES_ALLOWED` intervals, so an orphaned worker
never lingers.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, Final, TextIO

import grpc

from codeflux.domain.errors import InvalidValueError
from codeflux.worker.confinement import worker_confinement
from codeflux.worker.processes import ProcessGroups, become_child_subreaper
from codeflux.worker.rpc import HANDLER_FACTORIES, worker_handler
from codeflux.worker.service import LeaseClock, WorkerService
from codeflux.worker.startup import StartupConfig

__all__ = ["LEASE_MISSES_ALLOWED", "LEASE_TOKEN_METADATA", "LeaseTokenInterceptor", "serve"]

LEASE_TOKEN_METADATA: Final = "x-codeflux-lease-token"  # noqa: S105 (a metadata key, not a secret)
LEASE_MISSES_ALLOWED: Final = 3
_RPC_THREADS: Final = 16
_MAX_MESSAGE_BYTES: Final = 8 * 1024 * 1024
_STOP_GRACE_S: Final = 2.0


class LeaseTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuse every call whose metadata does not carry exactly the lease token (constant-time compare)."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode("ascii")

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        presented = [value for key, value in handler_call_details.invocation_metadata or ()
                     if key == LEASE_TOKEN_METADATA]
        if len(presented) == 1 and isinstance(presented[0], str) and presented[0].isascii() \
                and hmac.compare_digest(presented[0].encode("ascii"), self._expected):
            return handler
        if handler is None:
            return None
        factory = HANDLER_FACTORIES[(handler.request_streaming, handler.response_streaming)]
        return factory(_refuse_stream if handler.response_streaming else _refuse,
                       request_deserializer=handler.request_deserializer,
                       response_serializer=handler.response_serializer)


def _refuse(request: object, context: grpc.ServicerContext) -> None:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "lease token refused")


def _refuse_stream(request: object, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "lease token refused")
    yield from ()


def serve(config: StartupConfig, *, environment: Mapping[str, str], stdin: BinaryIO, stdout: TextIO) -> int:
    """Serve until told to stop; return the process exit code."""
    _check_socket_directory(config.socket_path.parent)
    confinement = worker_confinement(config, environment)
    processes = ProcessGroups(sweep_strays=become_child_subreaper())
    stop = threading.Event()
    lease = LeaseClock(interval_s=config.lease_interval_ms / 1000)
    service = WorkerService(lease_id=config.lease_id, task_id=config.task_id, worktree=config.worktree.resolve(),
                            base_commit=config.base_commit, environment=environment, processes=processes,
                            lease=lease, stop=stop, lease_token=config.lease_token, confinement=confinement)
    server = grpc.server(
        ThreadPoolExecutor(max_workers=_RPC_THREADS, thread_name_prefix="cfw-rpc"),
        interceptors=[LeaseTokenInterceptor(config.lease_token)],
        options=[("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES)],
        maximum_concurrent_rpcs=_RPC_THREADS,
    )
    server.add_generic_rpc_handlers((worker_handler(service),))
    _listen(server, config.socket_path)
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda *_: stop.set())
        threading.Thread(target=_watch_stdin, args=(stdin, stop), name="cfw-lifeline", daemon=True).start()
        threading.Thread(target=_watch_lease, args=(lease, stop, processes), name="cfw-lease", daemon=True).start()
        stdout.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
        stdout.flush()
        while not stop.wait(0.5):
            pass
    finally:
        service.cancel_all()  # a lapsed lease or a signal: what was running is reported cancelled
        server.stop(grace=_STOP_GRACE_S).wait()
        processes.kill_all()
        with contextlib.suppress(FileNotFoundError):
            config.socket_path.unlink()
        # The directory was made for this worker alone; remove it too, so a coordinator that was killed
        # before it could clean up leaves nothing behind.
        with contextlib.suppress(OSError):
            config.socket_path.parent.rmdir()
    return 0


def _check_socket_directory(directory: Path) -> None:
    try:
        info = os.lstat(directory)
    except OSError:
        raise InvalidValueError(kind="worker socket directory", reason="does not exist") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise InvalidValueError(kind="worker socket directory", reason="must be a 0700 directory owned by this user")


def _listen(server: grpc.Server, socket_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        if server.add_insecure_port(f"unix:{socket_path}") == 0:
            raise InvalidValueError(kind="worker socket", reason="could not bind the Unix socket")
        server.start()
    finally:
        os.umask(previous)
    os.chmod(socket_path, 0o600)


def _watch_stdin(stdin: BinaryIO, stop: threading.Event) -> None:
    """The coordinator keeps our stdin open for our whole life; end-of-file means it is gone."""
    # os.read on the descriptor, not the buffered object: a daemon thread blocked inside a buffered
    # read would hold its lock while the interpreter shuts down.
    with contextlib.suppress(OSError, ValueError):
        while os.read(stdin.fileno(), 4096):
            pass
    print("codeflux worker: the coordinator closed stdin; stopping", file=sys.stderr, flush=True)
    stop.set()


def _watch_lease(lease: LeaseClock, stop: threading.Event, processes: ProcessGroups) -> None:
    """Stop the worker when the lease lapses; sweep escaped descendants on each tick (a full sweep, every
    thread's children), and right after a program when ``finish`` hands its sweep over (no cheap listing)."""
    tick = min(lease.interval_s, 1.0)
    while not stop.is_set():
        processes.sweep_requested.wait(tick)
        processes.sweep_requested.clear()
        if stop.is_set():
            return
        if lease.silent_for() > LEASE_MISSES_ALLOWED * lease.interval_s:
            print("codeflux worker: the lease expired without a heartbeat; stopping", file=sys.stderr, flush=True)
            stop.set()
            return
        processes.sweep_strays()
