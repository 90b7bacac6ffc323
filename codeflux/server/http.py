"""The HTTP request policy of the loopback server (ARCHITECTURE §11, issue 6 item 2).

`respond_to_http` is pure: method, path and headers in; status, headers and body out. The websockets
server calls it from `process_request` (see `make_process_request`), so every plain HTTP request —
including any attempted WebSocket upgrade, until the envelope transport exists — is answered here.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterable
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from codeflux.server.launch import COOKIE_NAME, LaunchTokens

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

HttpResult = tuple[int, list[tuple[str, str]], bytes]


def security_headers(host: str) -> list[tuple[str, str]]:
    """The headers every response carries; `host` is this origin's host:port."""
    return [
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; "
            f"connect-src ws://{host}",
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]


def _port_of(origin_host: str) -> str:
    return origin_host.rpartition(":")[2]


def _loopback_host(headers: list[tuple[str, str]], origin_host: str) -> str | None:
    """The request's Host if it is exactly one loopback name on this server's port, else None."""
    hosts = [value for name, value in headers if name.lower() == "host"]
    if len(hosts) != 1:
        return None
    host = hosts[0].strip().lower()
    allowed = {f"{name}:{_port_of(origin_host)}" for name in LOOPBACK_NAMES}
    return host if host in allowed else None


def _session_cookie_values(headers: list[tuple[str, str]]) -> list[str]:
    values = []
    for name, value in headers:
        if name.lower() != "cookie":
            continue
        for part in value.split(";"):
            key, sep, cookie = part.strip().partition("=")
            if sep and key == COOKIE_NAME:
                values.append(cookie)
    return values


_HOW_TO_OPEN = (
    "<p>To open codeflux, run <code>codeflux start</code> in a terminal and open the URL it prints "
    "(it opens in your browser by itself unless you pass <code>--no-browser</code>). That URL works once; "
    "run <code>codeflux start</code> again if it has already been used or is more than two minutes old.</p>"
)


def _page(title: str, body_html: str) -> bytes:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title></head>\n<body><h1>{html.escape(title)}</h1>\n{body_html}\n</body></html>\n"
    ).encode()


def _result(status: HTTPStatus, host: str, body: bytes, extra: Iterable[tuple[str, str]] = ()) -> HttpResult:
    headers = [*security_headers(host), ("Content-Type", "text/html; charset=utf-8"), *extra]
    return int(status), headers, body


def respond_to_http(
    method: str,
    path: str,
    headers: Iterable[tuple[str, str]],
    *,
    origin_host: str,
    tokens: LaunchTokens,
) -> HttpResult:
    """Answer one plain HTTP request. `origin_host` is the host:port the server listens on."""
    header_list = list(headers)
    host = _loopback_host(header_list, origin_host)
    if host is None or not path.startswith("/") or path.startswith("//"):
        return _result(
            HTTPStatus.MISDIRECTED_REQUEST,
            origin_host,
            _page("Misdirected request", "<p>codeflux only answers requests addressed to the loopback host.</p>"),
        )
    if method != "GET":
        return _result(
            HTTPStatus.METHOD_NOT_ALLOWED,
            host,
            _page("Method not allowed", "<p>codeflux only answers GET requests over HTTP.</p>"),
            [("Allow", "GET")],
        )
    target = urlsplit(path)
    if target.path == "/launch":
        tokens_given = parse_qs(target.query).get("token", [])
        cookie = tokens.redeem(tokens_given[0]) if len(tokens_given) == 1 else None
        if cookie is None:
            return _result(
                HTTPStatus.FORBIDDEN,
                host,
                _page("This launch link cannot be used", "<p>It was already used, has expired or is not valid.</p>"
                      + _HOW_TO_OPEN),
            )
        return _result(
            HTTPStatus.SEE_OTHER,
            host,
            _page("Opening codeflux", '<p><a href="/">Continue</a></p>'),
            [("Location", "/"), ("Set-Cookie", cookie.set_cookie_header())],
        )
    if target.path == "/":
        if any(tokens.is_session(value) for value in _session_cookie_values(header_list)):
            return _result(
                HTTPStatus.OK,
                host,
                _page("codeflux", "<p>You are signed in to this codeflux session. The browser interface is not "
                      "built yet: this page is a placeholder and does nothing.</p>"),
            )
        return _result(HTTPStatus.OK, host, _page("Open codeflux from your terminal", _HOW_TO_OPEN))
    return _result(HTTPStatus.NOT_FOUND, host, _page("Not found", "<p>There is nothing at this address.</p>"))


def transport_logger() -> logging.Logger:
    """The logger to hand to websockets `serve`. It is pinned at INFO: at DEBUG websockets writes every
    request and response header to the log, Cookie and Set-Cookie (the session secret) included."""
    logger = logging.getLogger("codeflux.server.transport")
    logger.setLevel(logging.INFO)
    return logger


def _origin_host_of(connection: ServerConnection) -> str:
    address, port = connection.local_address[:2]
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def make_process_request(tokens: LaunchTokens) -> Callable[[ServerConnection, Request], Response]:
    """A websockets `process_request` hook answering every request with `respond_to_http`."""

    def process_request(connection: ServerConnection, request: Request) -> Response:
        status, headers, body = respond_to_http(
            request.method,
            request.path,
            request.headers.raw_items(),
            origin_host=_origin_host_of(connection),
            tokens=tokens,
        )
        response_headers = Headers(headers)
        response_headers["Content-Length"] = str(len(body))
        response_headers["Connection"] = "close"
        return Response(status, HTTPStatus(status).phrase, response_headers, body)

    return process_request
