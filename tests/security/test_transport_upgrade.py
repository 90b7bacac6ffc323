"""The loopback server's HTTP and WebSocket-upgrade security over real sockets (issue 6 items 2 and 3).

Every refusal happens before the handshake (the status line is not 101). The client is a raw socket
so that each header is exactly what a hostile local page or process could send.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.server.launch import COOKIE_NAME
from codeflux.server.limits import TransportLimits
from tests.fixtures.transport_servers import TransportHarness, transport_harness

pytestmark = pytest.mark.security


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[TransportHarness]:
    with transport_harness(tmp_path / "data") as running:
        yield running


def upgrade(port: int, *, host: str | None = None, origin: str | None = None, cookie: str | None = None,
            extra: str = "", path: str = "/ws") -> int:
    """Send an upgrade request; return the response's status code."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
             "Sec-WebSocket-Version: 13", "Sec-WebSocket-Protocol: codeflux.v1+proto"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if cookie is not None:
        lines.append(f"Cookie: {cookie}")
    request = "\r\n".join(lines) + "\r\n" + extra + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(request.encode())
        received = b""
        while b"\r\n" not in received:
            chunk = raw.recv(4096)
            if not chunk:
                break
            received += chunk
    return int(received.split(b" ", 2)[1])


def get(
    port: int, path: str, *, method: str = "GET", headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        response.body = response.read()  # type: ignore[attr-defined]
        return response
    finally:
        connection.close()


def test_the_same_origin_upgrade_with_the_cookie_is_accepted(harness: TransportHarness) -> None:
    port = harness.server.port
    assert upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=harness.cookie()) == 101


@pytest.mark.parametrize(
    "origin",
    [None, "null", "http://evil.example", "http://127.0.0.1:1", "https://127.0.0.1:{port}",
     "http://127.0.0.1.attacker.invalid:{port}", "http://localhost:{port}", "http://127.0.0.1:{port}/"],
)
def test_an_upgrade_from_any_other_origin_is_refused_before_the_handshake(
    harness: TransportHarness, origin: str | None
) -> None:
    port = harness.server.port
    cookie = harness.cookie()
    assert upgrade(port, origin=None if origin is None else origin.format(port=port), cookie=cookie) == 403


def test_two_origin_headers_are_refused(harness: TransportHarness) -> None:
    port = harness.server.port
    assert upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=harness.cookie(),
                   extra=f"Origin: http://127.0.0.1:{port}\r\n") == 403


@pytest.mark.parametrize("cookie", [None, f"{COOKIE_NAME}=forged", "other=1", f"{COOKIE_NAME}="])
def test_an_upgrade_without_the_session_cookie_is_refused(harness: TransportHarness, cookie: str | None) -> None:
    port = harness.server.port
    assert upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=cookie) == 403


def test_a_cookie_one_character_off_is_refused(harness: TransportHarness) -> None:
    port = harness.server.port
    cookie = harness.cookie()
    flipped = cookie[:-1] + ("A" if cookie[-1] != "A" else "B")
    assert upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=flipped) == 403
    assert upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=cookie + "A") == 403


def test_an_upgrade_with_a_forged_host_is_misdirected(harness: TransportHarness) -> None:
    port = harness.server.port
    assert upgrade(port, host=f"evil.example:{port}", origin=f"http://evil.example:{port}",
                   cookie=harness.cookie()) == 421


def test_the_upgrade_rate_is_bounded(tmp_path: Path) -> None:
    with transport_harness(tmp_path / "data", limits=TransportLimits(upgrades_per_minute=3)) as harness:
        port = harness.server.port
        cookie = harness.cookie()
        codes = [upgrade(port, origin=f"http://127.0.0.1:{port}", cookie=cookie) for _ in range(4)]
    assert codes == [101, 101, 101, 429]


def test_plain_http_policy(harness: TransportHarness) -> None:
    port = harness.server.port
    assert get(port, "/", headers={"Host": "evil.example"}).status == 421
    post = get(port, "/", method="POST")
    assert post.status == 405
    assert post.getheader("Set-Cookie") is None
    plain = get(port, "/")
    assert plain.status == 200
    assert plain.getheader("Set-Cookie") is None
    assert get(port, "/nothing-here").status == 404

    token = harness.server.tokens.issue()
    first = get(port, f"/launch?token={token}")
    assert first.status == 303
    assert first.getheader("Set-Cookie", "").startswith(f"{COOKIE_NAME}=")
    second = get(port, f"/launch?token={token}")
    assert second.status == 403
    assert second.getheader("Set-Cookie") is None


def test_every_response_carries_the_exact_security_headers(harness: TransportHarness) -> None:
    port = harness.server.port
    for response in (get(port, "/"), get(port, "/nothing"), get(port, "/", method="PUT")):
        assert response.getheader("Content-Security-Policy") == (
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; connect-src ws://127.0.0.1:{port}"
        )
        assert response.getheader("X-Content-Type-Options") == "nosniff"
        assert response.getheader("Referrer-Policy") == "no-referrer"
        assert response.getheader("Cross-Origin-Opener-Policy") == "same-origin"
        assert response.getheader("Cache-Control") == "no-store"


def test_static_files_need_the_cookie_and_never_escape_their_directory(harness: TransportHarness) -> None:
    port = harness.server.port
    cookie = {"Cookie": harness.cookie()}
    assert get(port, "/static/index.html").status == 403
    for path in ("/static/../launch.py", "/static/%2e%2e/launch.py", "/static/.hidden.js", "/static/x.py",
                 "/static//etc/passwd", "/static/a/../../http.py"):
        assert get(port, path, headers=cookie).status == 404, path


def test_the_grpc_socket_is_0600_in_a_0700_directory(harness: TransportHarness) -> None:
    path = harness.server.socket_path
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    assert os.lstat(path).st_uid == os.getuid()
