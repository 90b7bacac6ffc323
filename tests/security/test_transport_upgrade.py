"""The loopback server's HTTP and WebSocket-upgrade security over real sockets (issue 6 items 2 and 3, issue 13).

Every refusal happens before the handshake (the status line is not 101). The client is a raw socket
so that each header is exactly what a hostile local page or process could send.
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.server.client import PAGE_KEY_META
from codeflux.server.launch import COOKIE_NAME, PAGE_KEY_PROTOCOL_PREFIX
from codeflux.server.limits import TransportLimits
from codeflux.server.serve import RunningServer
from tests.fixtures.transport_servers import TransportHarness, transport_harness

pytestmark = pytest.mark.security


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[TransportHarness]:
    with transport_harness(tmp_path / "data") as running:
        yield running


def upgrade(server: RunningServer, *, host: str | None = None, origin: str | None = None, cookie: str | None = None,
            page_key: str | None = None, extra: str = "", path: str = "/ws") -> int:
    """Send an upgrade request to ``server`` (Host: its UI host unless given); return the response's status."""
    protocols = "codeflux.v1+proto" + ("" if page_key is None else f", {PAGE_KEY_PROTOCOL_PREFIX}{page_key}")
    lines = [f"GET {path} HTTP/1.1", f"Host: {host or ui_host(server)}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
             "Sec-WebSocket-Version: 13", f"Sec-WebSocket-Protocol: {protocols}"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if cookie is not None:
        lines.append(f"Cookie: {cookie}")
    request = "\r\n".join(lines) + "\r\n" + extra + "\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(request.encode())
        received = b""
        while b"\r\n" not in received:
            chunk = raw.recv(4096)
            if not chunk:
                break
            received += chunk
    return int(received.split(b" ", 2)[1])


def ui_host(server: RunningServer) -> str:
    return f"{server.ui_name}:{server.port}"


def signed_in(harness: TransportHarness, **overrides: str | None) -> int:
    """An upgrade as the signed-in tab sends it (its origin, cookie and page key), with ``overrides``."""
    session = harness.session()
    fields: dict[str, str | None] = {"origin": harness.server.origin, "cookie": session.cookie,
                                     "page_key": session.page_key, **overrides}
    return upgrade(harness.server, **fields)  # type: ignore[arg-type]


def get(server: RunningServer, path: str, *, method: str = "GET",
        headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """A plain request to ``server`` over 127.0.0.1 (Host: its UI host unless ``headers`` say otherwise)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, headers={"Host": ui_host(server), **(headers or {})})
        response = connection.getresponse()
        response.body = response.read()  # type: ignore[attr-defined]
        return response
    finally:
        connection.close()


def test_the_ui_host_name_is_a_random_label_under_localhost(harness: TransportHarness) -> None:
    assert re.fullmatch(r"cf-[a-z2-7]{20}\.localhost", harness.server.ui_name)
    assert harness.server.origin == f"http://{harness.server.ui_name}:{harness.server.port}"


def test_the_same_origin_upgrade_with_the_cookie_and_the_page_key_is_accepted(harness: TransportHarness) -> None:
    assert signed_in(harness) == 101


@pytest.mark.parametrize(
    "origin",
    [None, "null", "http://evil.example", "http://127.0.0.1:1", "http://127.0.0.1:{port}", "http://localhost:{port}",
     "https://{ui}:{port}", "http://{ui}:1", "http://{ui}.attacker.invalid:{port}", "http://{ui}:{port}/",
     "http://other.localhost:{port}"],
)
def test_an_upgrade_from_any_other_origin_is_refused_before_the_handshake(
    harness: TransportHarness, origin: str | None
) -> None:
    forged = None if origin is None else origin.format(port=harness.server.port, ui=harness.server.ui_name)
    assert signed_in(harness, origin=forged) == 403


def test_two_origin_headers_are_refused(harness: TransportHarness) -> None:
    assert signed_in(harness, extra=f"Origin: {harness.server.origin}\r\n") == 403


@pytest.mark.parametrize("cookie", [None, f"{COOKIE_NAME}=forged", "other=1", f"{COOKIE_NAME}="])
def test_an_upgrade_without_the_session_cookie_is_refused(harness: TransportHarness, cookie: str | None) -> None:
    assert signed_in(harness, cookie=cookie) == 403


def test_a_cookie_one_character_off_is_refused(harness: TransportHarness) -> None:
    cookie = harness.session().cookie
    flipped = cookie[:-1] + ("A" if cookie[-1] != "A" else "B")
    assert signed_in(harness, cookie=flipped) == 403
    assert signed_in(harness, cookie=cookie + "A") == 403


@pytest.mark.parametrize("page_key", [None, "", "forged", "{key}A", "{key_head}"])
def test_a_copied_cookie_without_the_page_key_opens_nothing(harness: TransportHarness, page_key: str | None) -> None:
    key = harness.session().page_key
    offered = None if page_key is None else page_key.format(key=key, key_head=key[:-1])
    assert signed_in(harness, page_key=offered) == 403


def test_a_copied_cookie_never_obtains_a_page_key_from_any_page(harness: TransportHarness) -> None:
    """Only redeeming a fresh launch token hands out a page key: a holder of the cookie who GETs every page
    path with forged Host and Origin headers gets none (and no key is issued for them)."""
    server, cookie = harness.server, harness.session().cookie
    issued = server.tokens.page_keys_issued
    port, ui = server.port, server.ui_name
    paths = ["/", "/app", "/first-run", "/workspace", "/tasks/tsk_0123456789abcdef", "/review/x", "/settings",
             "/recovery", "/ws", "/launch", "/launch?token=", "/launch?token=forged", "/launch/", "/static/index.html",
             "/static/app.js", "/static/launch.js", "/static/rpc.js", "/favicon.ico", "/nothing"]
    hosts = [ui_host(server), f"127.0.0.1:{port}", f"localhost:{port}", f"{ui}:1", "evil.example"]
    origins = [None, server.origin, "http://evil.example", "null", f"http://127.0.0.1:{port}"]
    answered = set()
    for path in paths:
        for host in hosts:
            for origin in origins:
                headers = {"Host": host, "Cookie": cookie, **({} if origin is None else {"Origin": origin})}
                response = get(server, path, headers=headers)
                answered.add(response.status)
                assert PAGE_KEY_META.search(response.body.decode("utf-8", "replace")) is None, (path, host)  # type: ignore[attr-defined]
                assert response.getheader("Set-Cookie") is None
    assert answered == {200, 403, 404, 421}
    assert server.tokens.page_keys_issued == issued


def test_an_upgrade_with_a_forged_host_is_misdirected(harness: TransportHarness) -> None:
    port, ui = harness.server.port, harness.server.ui_name
    for host in (f"evil.example:{port}", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}",
                 f"other.localhost:{port}", f"{ui}:1", f"{ui}.:{port}", ui):
        assert signed_in(harness, host=host, origin=f"http://{host}") == 421, host


def test_the_upgrade_rate_is_bounded(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data", limits=TransportLimits(upgrades_per_minute=3)) as harness:
        session = harness.session()
        codes = [upgrade(harness.server, origin=harness.server.origin, cookie=session.cookie,
                         page_key=session.page_key) for _ in range(4)]
    assert codes == [101, 101, 101, 429]


def raw_exchange(server: RunningServer, head: str, body: bytes = b"") -> bytes:
    """Send ``head`` (CRLF lines, Host added) and ``body`` over a raw socket; return all bytes received until
    the server closes (a reset after a reply counts as the close)."""
    request = f"{head}\r\nHost: {ui_host(server)}\r\n\r\n".encode() + body
    received = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        try:
            raw.sendall(request)
            while chunk := raw.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
    return received


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_request_with_a_body_is_answered_405(harness: TransportHarness, method: str) -> None:
    body = b'{"x": 1}'
    received = raw_exchange(harness.server, f"{method} / HTTP/1.1\r\nContent-Length: {len(body)}", body)
    assert received.startswith(b"HTTP/1.1 405 "), received[:80]
    assert b"\r\nAllow: GET\r\n" in received
    chunked = raw_exchange(harness.server, f"{method} /launch HTTP/1.1\r\nTransfer-Encoding: chunked",
                           b"5\r\nhello\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 405 "), chunked[:80]
    # a GET that announces a body is refused too (400), before any upgrade
    assert raw_exchange(harness.server, "GET / HTTP/1.1\r\nContent-Length: 3", b"abc").startswith(b"HTTP/1.1 400 ")
    # positive control: the same raw exchange without a body gets the page
    assert raw_exchange(harness.server, "GET / HTTP/1.1").startswith(b"HTTP/1.1 200 ")


def test_a_large_body_is_not_read_past_the_cap(harness: TransportHarness) -> None:
    """The reply comes before the body is read; a body past the cap gets the connection cut, not read."""
    server = harness.server
    head = f"POST / HTTP/1.1\r\nHost: {ui_host(server)}\r\nContent-Length: {64 * 1024 * 1024}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(head.encode())
        reply = raw.recv(4096)
        assert reply.startswith(b"HTTP/1.1 405 "), reply[:80]
        sent = 0
        with pytest.raises(OSError):  # reset (or broken pipe) long before 64 MiB
            for _ in range(1024):
                sent += raw.send(b"x" * 65536)
        assert sent < 32 * 1024 * 1024


def test_plain_http_policy(harness: TransportHarness) -> None:
    server = harness.server
    for host in ("evil.example", f"127.0.0.1:{server.port}", f"localhost:{server.port}", server.ui_name):
        misdirected = get(server, "/", headers={"Host": host})
        assert misdirected.status == 421, host
        assert server.ui_name.encode() not in misdirected.body  # type: ignore[attr-defined]
        assert b"--ip-host" in misdirected.body  # type: ignore[attr-defined]
    post = get(server, "/", method="POST")
    assert post.status == 405
    assert post.getheader("Set-Cookie") is None
    plain = get(server, "/")
    assert plain.status == 200
    assert plain.getheader("Set-Cookie") is None
    assert get(server, "/nothing-here").status == 404

    token = server.tokens.issue()
    first = get(server, f"/launch?token={token}")
    assert first.status == 200
    cookie = first.getheader("Set-Cookie", "")
    assert cookie.startswith(f"{COOKIE_NAME}=")
    assert cookie.endswith("; Path=/; HttpOnly; SameSite=Strict")  # host-only: no Domain attribute
    assert b'<meta name="codeflux-page-key" content="' in first.body  # type: ignore[attr-defined]
    second = get(server, f"/launch?token={token}")
    assert second.status == 403
    assert second.getheader("Set-Cookie") is None


def test_every_response_carries_the_exact_security_headers(harness: TransportHarness) -> None:
    server = harness.server
    for response in (get(server, "/"), get(server, "/nothing"), get(server, "/", method="PUT"),
                     get(server, f"/launch?token={server.tokens.issue()}")):
        assert response.getheader("Content-Security-Policy") == (
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; connect-src ws://{ui_host(server)}"
        )
        assert response.getheader("X-Content-Type-Options") == "nosniff"
        assert response.getheader("Referrer-Policy") == "no-referrer"
        assert response.getheader("Cross-Origin-Opener-Policy") == "same-origin"
        assert response.getheader("Cross-Origin-Resource-Policy") == "same-origin"
        assert response.getheader("Cache-Control") == "no-store"
        assert response.getheader("Access-Control-Allow-Origin") is None


def test_static_files_need_the_cookie_and_never_escape_their_directory(harness: TransportHarness) -> None:
    server = harness.server
    cookie = {"Cookie": harness.session().cookie}
    assert get(server, "/static/index.html").status == 403
    for path in ("/static/../launch.py", "/static/%2e%2e/launch.py", "/static/.hidden.js", "/static/x.py",
                 "/static//etc/passwd", "/static/a/../../http.py"):
        assert get(server, path, headers=cookie).status == 404, path


def test_the_grpc_socket_is_0600_in_a_0700_directory(harness: TransportHarness) -> None:
    path = harness.server.socket_path
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    assert os.lstat(path).st_uid == os.getuid()
