"""The loopback server's local security, probed from outside (plain HTTP and WebSocket clients) and from
inside the real page: Host, Origin, launch token, GET-only, no foreign requests, no inline script."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin, Subprotocol

from codeflux.server.client import connect_address, redeem_launch
from tests.fixtures.browser import WAIT_S, AppPage, chromium_browser, failure_screenshot, open_app, thread_coordinator

pytestmark = [pytest.mark.browser, pytest.mark.security]
MS = WAIT_S * 1000
SUBPROTOCOL = "codeflux.v1+json"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser() as browser:
        yield browser


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with thread_coordinator(tmp_path / "data", monkeypatch) as running:
        yield running


def _request(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(connect_address(parts.hostname), parts.port, timeout=30)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    connection.request(method, target or "/", headers={"Host": parts.netloc, **(headers or {})})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def _session_cookie(server: Any) -> str:
    response = _request(server.launch_url())
    assert response.status == 200
    cookie = response.getheader("Set-Cookie") or ""
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Domain" not in cookie
    return cookie.split(";", 1)[0]


def _origin(server: Any) -> str:
    parts = urlsplit(server.launch_url())
    return f"http://{parts.netloc}"


def test_a_forged_host_is_misdirected(server: Any) -> None:
    origin = _origin(server)
    for host in ("evil.example", "localhost.attacker.invalid", "127.0.0.1.attacker.invalid:80", "0.0.0.0"):  # noqa: S104
        response = _request(origin + "/", headers={"Host": host})
        assert response.status == 421, host
        assert response.getheader("Set-Cookie") is None


def test_the_launch_token_works_once_and_a_plain_get_has_no_session(server: Any) -> None:
    url = server.launch_url()
    first = _request(url)
    assert first.status == 200
    assert first.getheader("Set-Cookie")
    second = _request(url)
    assert second.status in (403, 404, 410)
    assert second.getheader("Set-Cookie") is None
    plain = _request(_origin(server) + "/")
    assert plain.status == 200
    assert plain.getheader("Set-Cookie") is None


def test_only_get_is_answered(server: Any) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert _request(_origin(server) + "/", method=method).status == 405, method


def _dial(ws_url: str, *, origin: str | None, cookie: str | None, page_key: str | None) -> str | None:
    """Open and close a WebSocket; returns the agreed subprotocol (raises InvalidStatus when refused)."""
    headers = {"Cookie": cookie} if cookie else {}
    offered = [Subprotocol(SUBPROTOCOL)] + ([Subprotocol(f"codeflux.page.{page_key}")] if page_key else [])
    sock = socket.create_connection(("127.0.0.1", urlsplit(ws_url).port or 80), timeout=30)
    with connect(ws_url, sock=sock, origin=None if origin is None else Origin(origin), additional_headers=headers,
                 subprotocols=offered, open_timeout=30) as connection:
        return connection.subprotocol


def test_the_websocket_needs_the_exact_origin_the_cookie_and_the_page_key(server: Any) -> None:
    origin = _origin(server)
    ws_url = origin.replace("http://", "ws://") + "/ws"
    signed_in = redeem_launch(server.launch_url())
    cookie, key = signed_in.cookie, signed_in.page_key
    assert _dial(ws_url, origin=origin, cookie=cookie, page_key=key) == SUBPROTOCOL
    for bad_origin in ("http://evil.example", "null", "http://127.0.0.1.attacker.invalid", "http://127.0.0.1:1",
                       f"http://127.0.0.1:{server.port}", None):
        with pytest.raises(InvalidStatus):
            _dial(ws_url, origin=bad_origin, cookie=cookie, page_key=key)
    with pytest.raises(InvalidStatus):
        _dial(ws_url, origin=origin, cookie=None, page_key=key)
    with pytest.raises(InvalidStatus):
        _dial(ws_url, origin=origin, cookie=cookie.replace("=", "=x", 1), page_key=key)
    with pytest.raises(InvalidStatus):  # a copied cookie without the tab's page key
        _dial(ws_url, origin=origin, cookie=cookie, page_key=None)


def test_the_page_requests_nothing_outside_its_origin_and_runs_no_inline_script(
    chromium: Any, server: Any, request: pytest.FixtureRequest
) -> None:
    app: AppPage = open_app(chromium, server.launch_url())
    try:
        with failure_screenshot(request, lambda: [app.page]):
            expect(app.testid("first-run")).to_be_visible(timeout=MS)
            headers = _request(app.origin + "/", headers={"Cookie": _session_cookie(server)})
            csp = headers.getheader("Content-Security-Policy") or ""
            host = urlsplit(app.origin).netloc
            assert f"connect-src ws://{host}" in csp and "'unsafe-inline'" not in csp
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
            outcome = app.page.evaluate("""() => new Promise((resolve) => {
              document.addEventListener("securitypolicyviolation",
                (e) => resolve({ ran: window.__inlineRan === true, directive: e.violatedDirective }), { once: true });
              const script = document.createElement("script");
              script.textContent = "window.__inlineRan = true;";
              document.head.append(script);
            })""")
            assert outcome["ran"] is False
            assert outcome["directive"].startswith("script-src"), outcome
            blocked = app.page.evaluate("""() => new Promise((resolve) => {
              document.addEventListener("securitypolicyviolation", (e) => resolve(e.violatedDirective), { once: true });
              const image = new Image();
              image.src = "http://example.invalid/x.png";
              document.body.append(image);
            })""")
            assert blocked.startswith(("img-src", "default-src"))
            assert app.foreign_requests == []
    finally:
        app.context.close()


def test_the_favicon_loads_under_the_csp_with_no_console_error(
    chromium: Any, server: Any, request: pytest.FixtureRequest
) -> None:
    load = """(src) => new Promise((resolve) => {
      const image = new Image();
      image.onload = () => resolve(image.naturalWidth > 0 ? "loaded" : "empty");
      image.onerror = () => resolve("error");
      image.src = src;
    })"""
    app: AppPage = open_app(chromium, server.launch_url())
    try:
        with failure_screenshot(request, lambda: [app.page]):
            expect(app.testid("first-run")).to_be_visible(timeout=MS)
            icon = app.page.locator('link[rel="icon"]').get_attribute("href")
            assert icon == "/static/favicon.svg"
            assert app.page.evaluate(load, icon) == "loaded"
            # positive control: a missing image does fail to load here
            assert app.page.evaluate(load, "/static/no-such-icon.svg") == "error"
            app.console_errors.clear()
            app.page.reload()
            expect(app.testid("first-run")).to_be_visible(timeout=MS)
            assert app.page.evaluate(load, icon) == "loaded"
            assert app.console_errors == []
    finally:
        app.context.close()
    # what a browser asks any page of the origin for, the sign-in explanations included: no session needed
    plain = _request(_origin(server) + "/favicon.ico")
    assert plain.status == 200 and plain.getheader("Content-Type") == "image/svg+xml"
