"""The launch security of the loopback server over real sockets (issue 6 item 2, issue 13).

A real websockets 17 server on 127.0.0.1:0, in its own asyncio loop on a thread, answering through
`make_process_request`; the client is `http.client` or a raw socket.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from websockets.asyncio.server import ServerConnection, serve

from codeflux.server.http import make_process_request, transport_logger
from codeflux.server.launch import COOKIE_NAME, LaunchTokens

pytestmark = pytest.mark.security


async def _never_upgraded(connection: ServerConnection) -> None:  # pragma: no cover - process_request answers all
    await connection.close()


UI_NAME = "cf-abcdefghijklmnopqrst.localhost"


@dataclass
class RunningServer:
    port: int
    tokens: LaunchTokens

    @property
    def ui_host(self) -> str:
        return f"{UI_NAME}:{self.port}"

    def get(self, path: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        """A request over 127.0.0.1 naming the UI's host (unless ``headers`` give another Host)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, headers={"Host": self.ui_host, **(headers or {})})
            response = connection.getresponse()
            response.read()
            return response
        finally:
            connection.close()


@pytest.fixture
def server() -> Iterator[RunningServer]:
    tokens = LaunchTokens()
    ready = threading.Event()
    state: dict[str, object] = {}

    async def run() -> None:
        stop = asyncio.Event()
        state["stop"] = stop
        state["loop"] = asyncio.get_running_loop()
        async with serve(
            _never_upgraded,
            "127.0.0.1",
            0,
            process_request=make_process_request(tokens, ui_name=UI_NAME),
            server_header=None,
            logger=transport_logger(),
        ) as ws_server:
            state["port"] = ws_server.sockets[0].getsockname()[1]
            ready.set()
            await stop.wait()

    threads_before = set(threading.enumerate())
    thread = threading.Thread(target=asyncio.run, args=(run(),), name="test-http-server")
    thread.start()
    assert ready.wait(10)
    port = state["port"]
    assert isinstance(port, int)
    try:
        yield RunningServer(port=port, tokens=tokens)
    finally:
        loop = state["loop"]
        stop = state["stop"]
        assert isinstance(loop, asyncio.AbstractEventLoop)
        assert isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
    assert not thread.is_alive()
    # nothing the server started is left (a thread of an earlier test may have ended meanwhile)
    assert set(threading.enumerate()) <= threads_before


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1:{port}", "localhost:{port}", "{ui}:1"])
def test_a_spoofed_host_is_misdirected_without_learning_the_ui_host(server: RunningServer, host: str) -> None:
    response = server.get("/", headers={"Host": host.format(port=server.port, ui=UI_NAME)})
    assert response.status == 421
    assert response.getheader("Content-Security-Policy").endswith("connect-src 'none'")
    assert "abcdefghijklmnopqrst" not in str(response.getheaders())


def test_a_raw_request_with_a_rebinding_host_is_misdirected(server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(f"GET / HTTP/1.1\r\nHost: attacker.example:{server.port}\r\n\r\n".encode())
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
    assert received.startswith(b"HTTP/1.1 421 ")


def test_post_is_not_allowed(server: RunningServer) -> None:
    token = server.tokens.issue()
    response = server.get(f"/launch?token={token}", method="POST")
    assert response.status == 405
    assert response.getheader("Allow") == "GET"
    assert response.getheader("Set-Cookie") is None


def test_launch_gives_the_cookie_once_and_home_needs_it(server: RunningServer) -> None:
    plain = server.get("/")
    assert plain.status == 200
    assert plain.getheader("Set-Cookie") is None
    for name in ("X-Content-Type-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy", "Cache-Control"):
        assert plain.getheader(name)

    token = server.tokens.issue()
    launched = server.get(f"/launch?token={token}")
    assert launched.status == 200
    set_cookie = launched.getheader("Set-Cookie")
    assert set_cookie.startswith(f"{COOKIE_NAME}=")
    assert set_cookie.endswith("; Path=/; HttpOnly; SameSite=Strict")
    assert launched.getheader("Content-Security-Policy") == (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
        f"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; connect-src ws://{server.ui_host}"
    )

    again = server.get(f"/launch?token={token}")
    assert again.status == 403
    assert again.getheader("Set-Cookie") is None

    cookie = set_cookie.split(";")[0]
    signed_in = server.get("/", headers={"Cookie": cookie})
    assert signed_in.status == 200
    assert signed_in.getheader("Set-Cookie") is None


def test_unknown_paths_are_not_found(server: RunningServer) -> None:
    assert server.get("/api").status == 404


def test_the_session_secret_and_the_page_key_are_never_logged(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", f"/launch?token={server.tokens.issue()}", headers={"Host": server.ui_host})
    launched = connection.getresponse()
    page = launched.read().decode()
    connection.close()
    cookie = launched.getheader("Set-Cookie").split(";")[0]
    secret = cookie.partition("=")[2]
    page_key = page.split('name="codeflux-page-key" content="', 1)[1].split('"', 1)[0]
    assert len(page_key) >= 32 and page_key not in caplog.text
    assert server.get("/", headers={"Cookie": cookie}).status == 200
    assert server.get("/", method="POST", headers={"Cookie": cookie}).status == 405
    assert any(record.name == "codeflux.server.transport" for record in caplog.records)  # the log was seen
    assert secret not in caplog.text
