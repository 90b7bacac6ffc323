"""Serving the coordinator: HTTP + WebSocket on loopback and the gRPC Unix socket, until told to stop.

:func:`serve_coordinator` is what ``codeflux start`` awaits. :func:`start_in_thread` runs the same
thing on its own event loop in a thread and returns a :class:`RunningServer` — for tests, Playwright
tests and benchmarks (Playwright's sync API cannot run inside a running loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codeflux.coordinator.browser_host import browser_host_name, fresh_browser_host_name
from codeflux.coordinator.instance import coordinator_socket_path
from codeflux.domain.errors import UsageError
from codeflux.domain.ids import TaskId
from codeflux.server.assets import StaticFiles
from codeflux.server.confirmations import CardConfirmations
from codeflux.server.grpc_socket import start_unix_server
from codeflux.server.launch import LAUNCH_WINDOW_SECONDS, LaunchTokens
from codeflux.server.limits import TransportLimits
from codeflux.server.websocket import WebSocketTransport, bound_port
from codeflux.services.app import CoordinatorApp, LaunchLink
from codeflux.services.registry import MethodTable
from codeflux.services.views import task_service

__all__ = ["LOOPBACK_HOSTS", "RunningServer", "ServingInfo", "serve_coordinator", "start_in_thread"]

LOOPBACK_HOSTS: Final = ("127.0.0.1", "::1", "localhost")
_CLOSE_GOING_AWAY: Final = 1001
_READY_TIMEOUT_S: Final = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingInfo:
    """Where the coordinator is serving. ``host``/``port``: the bound loopback address; ``ui_name``: the host
    name the UI is served on (every request must name it); ``url``: the UI's origin (no token)."""

    host: str
    port: int
    ui_name: str
    url: str
    socket_path: Path
    transport: WebSocketTransport = field(repr=False)


def url_host(host: str) -> str:
    """``host`` as it is written in a URL (an IPv6 literal in brackets)."""
    return f"[{host}]" if ":" in host else host


def refusal_recorder(app: CoordinatorApp) -> Callable[[str, str, str, str], None]:
    """Journal a browser decision refused for want of its card's confirmation (on the task's session)."""

    def record(task_id: str, decision: str, subject: str, reason: str) -> None:
        task_service(app).record_browser_decision_refused(TaskId.parse(task_id), decision=decision, subject=subject,
                                                          reason=reason)

    return record


async def serve_coordinator(
    app: CoordinatorApp | None,
    table: MethodTable,
    *,
    host: str,
    port: int,
    tokens: LaunchTokens,
    socket_path: Path,
    ready: Callable[[ServingInfo], None],
    stop: asyncio.Event,
    ui_name: str,
    limits: TransportLimits | None = None,
    static: StaticFiles | None = None,
) -> None:
    """Serve ``table`` over HTTP+WebSocket on ``host:port`` (0 = a free port) and gRPC on ``socket_path``;
    call ``ready`` once both listen; return after ``stop`` is set and every connection is closed.

    ``host`` must be a loopback literal or ``localhost``; ``ui_name`` is the host name the UI answers to
    (``cf-<label>.localhost``, or the address itself for ``--ip-host``). ``app`` is the composition root the
    table was built from; decisions refused on the browser connection are journaled through it."""
    if host not in LOOPBACK_HOSTS:
        raise UsageError("codeflux serves only on a loopback address (127.0.0.1, ::1 or localhost)")
    confirmations = CardConfirmations(record=None if app is None else refusal_recorder(app))
    transport = WebSocketTransport(table, tokens, ui_name=ui_name, confirmations=confirmations, limits=limits,
                                   static=static)
    grpc_server = await start_unix_server(table, socket_path, limits=limits)
    try:
        async with transport.serve(host, port) as ws_server:
            actual = bound_port(ws_server)
            origin = f"http://{ui_name}:{actual}"
            if app is not None:  # `codeflux open` asks for links over the socket (SessionService/IssueLaunchLink)
                app.launch_link = lambda: LaunchLink(url=f"{origin}/launch?token={tokens.issue()}", origin=origin,
                                                     valid_seconds=int(LAUNCH_WINDOW_SECONDS))
            ready(ServingInfo(host=host, port=actual, ui_name=ui_name, url=f"http://{ui_name}:{actual}",
                              socket_path=socket_path, transport=transport))
            await stop.wait()
            await transport.drop_connections(code=_CLOSE_GOING_AWAY)
    finally:
        if app is not None:
            app.launch_link = None
        await grpc_server.stop(grace=2.0)
        with contextlib.suppress(FileNotFoundError):
            socket_path.unlink()


class RunningServer:
    """A coordinator served on its own event loop thread. Use as a context manager or call :meth:`stop`."""

    def __init__(self, info: ServingInfo, tokens: LaunchTokens, *, loop: asyncio.AbstractEventLoop,
                 stop_event: asyncio.Event, thread: threading.Thread, scratch: Path | None = None) -> None:
        self.info = info
        self.tokens = tokens
        self._loop = loop
        self._stop_event = stop_event
        self._thread = thread
        self._scratch = scratch

    @property
    def url(self) -> str:
        return self.info.url

    @property
    def port(self) -> int:
        return self.info.port

    @property
    def host(self) -> str:
        return self.info.host

    @property
    def socket_path(self) -> Path:
        return self.info.socket_path

    @property
    def origin(self) -> str:
        """``http://cf-<label>.localhost:port`` — the page's origin (the WebSocket upgrade's required ``Origin``)."""
        return self.info.url

    @property
    def ui_name(self) -> str:
        return self.info.ui_name

    @property
    def ws_url(self) -> str:
        return f"ws://{self.info.ui_name}:{self.info.port}/ws"

    def launch_url(self) -> str:
        """A fresh one-time launch URL (what ``codeflux start`` prints and opens)."""
        return f"{self.info.url}/launch?token={self.tokens.issue()}"

    def drop_connections(self) -> int:
        """Close every open WebSocket from the server side (the reconnect test hook); returns how many."""
        future = asyncio.run_coroutine_threadsafe(self.info.transport.drop_connections(), self._loop)
        return future.result(_READY_TIMEOUT_S)

    def stop(self) -> None:
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(_READY_TIMEOUT_S)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(
    table: MethodTable,
    *,
    app: CoordinatorApp | None = None,
    tokens: LaunchTokens | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    socket_path: Path | None = None,
    limits: TransportLimits | None = None,
    static: StaticFiles | None = None,
    ui_name: str | None = None,
) -> RunningServer:
    """Start :func:`serve_coordinator` in a new thread; return once it serves (raise if it could not).

    The gRPC socket goes to ``socket_path``, else the app's data directory, else a fresh private
    temporary directory removed by :meth:`RunningServer.stop`. The UI's host name is ``ui_name``, else the
    app's data directory's (as ``codeflux start`` uses), else a fresh one."""
    launch = tokens or LaunchTokens()
    name = ui_name or (browser_host_name(app.db) if app is not None else fresh_browser_host_name())
    scratch: Path | None = None
    if socket_path is not None:
        path = socket_path
    elif app is not None:
        path = coordinator_socket_path(app.location)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="codeflux-"))
        path = scratch / "coordinator" / "coordinator.sock"
    started = threading.Event()
    state: dict[str, object] = {}

    async def main() -> None:
        stop_event = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop_event

        def ready(info: ServingInfo) -> None:
            state["info"] = info
            started.set()

        await serve_coordinator(app, table, host=host, port=port, tokens=launch, socket_path=path,
                                ready=ready, stop=stop_event, ui_name=name, limits=limits, static=static)

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:  # reported to the starting thread below
            state["error"] = error
        finally:
            started.set()

    thread = threading.Thread(target=run, name="codeflux-server", daemon=True)
    thread.start()
    started.wait(_READY_TIMEOUT_S)
    info = state.get("info")
    if not isinstance(info, ServingInfo):
        thread.join(_READY_TIMEOUT_S)
        error = state.get("error")
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if isinstance(error, BaseException):
            raise error
        raise RuntimeError("the coordinator did not start serving")
    loop, stop_event = state["loop"], state["stop"]
    if not isinstance(loop, asyncio.AbstractEventLoop) or not isinstance(stop_event, asyncio.Event):
        raise RuntimeError("the coordinator did not start serving")
    return RunningServer(info, launch, loop=loop, stop_event=stop_event, thread=thread, scratch=scratch)
