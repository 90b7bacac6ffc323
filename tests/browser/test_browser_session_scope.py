"""The browser session stays with codeflux (issue 13): the UI is served on its own ``cf-<label>.localhost``
name, so the host-only session cookie never reaches another server on loopback — the reproduction of the
issue's "Why": a dev server on ``127.0.0.1:<other port>`` used to receive ``codeflux_session``.

The other server records the headers it got. Every "not sent" check has its positive control: the very
same server does receive the cookie when the browser visits it under the UI's host name (cookies ignore
ports), which also proves the browser was signed in when the negative checks ran.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.server.launch import COOKIE_NAME
from tests.fixtures.browser import WAIT_S, failure_screenshot, thread_coordinator

pytestmark = [pytest.mark.browser, pytest.mark.security]
MS = WAIT_S * 1000


class DevServer:
    """Another local server (say, the dev server of the repository the agent changes): it answers every
    GET with a page and records the Host and Cookie headers it received."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        recorded = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorded.append((self.headers.get("Host", ""), self.headers.get("Cookie", "")))
                body = b"<!DOCTYPE html><title>dev server</title><p>the repository's own dev server</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def cookies_sent_to(self, host: str) -> list[str]:
        return [cookie for got_host, cookie in self.received if got_host == host]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def dev_server() -> Iterator[DevServer]:
    running = DevServer()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with thread_coordinator(tmp_path / "data", monkeypatch) as running:
        yield running


@pytest.fixture
def context(chromium: Any) -> Iterator[Any]:
    opened = chromium.new_context(viewport={"width": 1280, "height": 800})
    try:
        yield opened
    finally:
        opened.close()


def _signed_in_page(context: Any, server: Any) -> Any:
    page = context.new_page()
    page.goto(server.launch_url())
    expect(page.get_by_test_id("first-run")).to_be_visible(timeout=MS)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-connected", "1", timeout=MS)
    return page


def test_the_session_cookie_never_reaches_another_server_on_loopback(
    context: Any, server: Any, dev_server: DevServer, request: pytest.FixtureRequest
) -> None:
    page = _signed_in_page(context, server)
    with failure_screenshot(request, lambda: [page]):
        assert re.fullmatch(r"cf-[a-z2-7]{20}\.localhost", server.ui_name)
        assert page.url == f"{server.origin}/"  # the app itself runs on the UI's host name
        cookies = [c for c in context.cookies() if c["name"] == COOKIE_NAME]
        assert [(c["domain"], c["httpOnly"], c["sameSite"]) for c in cookies] == [(server.ui_name, True, "Strict")]

        other = context.new_page()
        port = dev_server.port
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"other.localhost:{port}"):
            other.goto(f"http://{host}/")
            expect(other.locator("p")).to_have_text("the repository's own dev server")
            sent = dev_server.cookies_sent_to(host)
            assert sent, host  # the browser did visit it
            assert not any(COOKIE_NAME in cookie for cookie in sent), (host, sent)

        # Positive control: the same server, visited under the UI's host name, does get the cookie.
        control = f"{server.ui_name}:{port}"
        other.goto(f"http://{control}/")
        expect(other.locator("p")).to_have_text("the repository's own dev server")
        assert any(COOKIE_NAME in cookie for cookie in dev_server.cookies_sent_to(control))


def test_a_tab_without_the_launch_link_cannot_connect_and_a_reload_keeps_working(
    context: Any, server: Any, request: pytest.FixtureRequest
) -> None:
    first = _signed_in_page(context, server)
    second = context.new_page()  # same browser profile: it has the cookie, not the first tab's page key
    sockets: list[str] = []
    second.on("websocket", lambda ws: sockets.append(ws.url))
    with failure_screenshot(request, lambda: [first, second]):
        second.goto(f"{server.origin}/")
        expect(second.get_by_test_id("needs-launch-link")).to_be_visible(timeout=MS)
        expect(second.get_by_test_id("needs-launch-link")).to_contain_text("codeflux open")
        expect(second.get_by_test_id("needs-launch-link")).to_contain_text("codeflux start")
        assert sockets == []

        first.reload()  # the page key stays in the tab (sessionStorage)
        expect(first.get_by_test_id("first-run")).to_be_visible(timeout=MS)
        expect(first.get_by_test_id("connection")).to_have_attribute("data-connected", "1", timeout=MS)

        second.goto(server.launch_url())  # a new launch link brings the new tab in
        expect(second.get_by_test_id("first-run")).to_be_visible(timeout=MS)
        expect(second.get_by_test_id("connection")).to_have_attribute("data-connected", "1", timeout=MS)
        assert second.url == f"{server.origin}/"  # the spent launch URL left the address bar
