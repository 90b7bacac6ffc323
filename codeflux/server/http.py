"""The HTTP request policy of the loopback server (ARCHITECTURE §11, issues 6 and 13).

`respond_to_http` is pure: method, path and headers in; status, headers and body out. The websockets
server calls it from `process_request` (see `make_process_request`), so every plain HTTP request is
answered here. Every request must carry exactly one ``Host`` equal to the UI's own origin host —
``cf-<label>.localhost:PORT`` (see :mod:`codeflux.coordinator.browser_host`), or the loopback address
itself when ``codeflux start --ip-host`` chose the fallback — else 421, without naming that host. A
WebSocket upgrade (``GET /ws`` with ``Upgrade: websocket``) goes through `upgrade_refusal` first: that
Host (421), GET (405), exactly one ``Origin`` equal to ``http://<that Host>``, the session cookie and a
page key offered as a ``codeflux.page.<key>`` subprotocol (else 403) — all before the handshake. The
caller (the websocket transport) then applies its rate and connection caps and binds the authentication
to the connection object; nothing downstream trusts a header.

Routes: ``/launch?token=…[&to=/tasks/<id>]`` (redeem once → a page that sets the cookie, hands the tab its
page key and moves on to ``/``, or to the task's page the link names), ``/`` and the app routes
(:data:`APP_ROUTE`; the web client's ``index.html`` with the cookie, a page explaining how to open codeflux
without it), ``/static/<file>`` (the web client's files; cookie required), ``/favicon.ico`` (the icon,
``static/favicon.svg``; no cookie needed: the browser asks for it on every page, the sign-in explanations
included), everything else 404.

Requests carry no body: one that announces a body is answered 405 (400 for GET) — websockets' own parser
would close the connection without a reply, so the server's connection class (`RequestHeadConnection`)
hands such a request on and drops its body, bounded.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable, Generator, Iterable
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.server import ServerProtocol

from codeflux.server.assets import StaticFiles
from codeflux.server.launch import COOKIE_NAME, PAGE_KEY_PROTOCOL_PREFIX, LaunchTokens

WEBSOCKET_PATH: Final = "/ws"
# What a browser asks every page's origin for; the answer is the web client's icon (no cookie needed).
FAVICON_PATH: Final = "/favicon.ico"
FAVICON_ASSET: Final = "favicon.svg"
# A request that announces a body (Content-Length other than 0, or Transfer-Encoding) reaches the policy with
# this header in place of the announcement (see `RequestHeadConnection`); its body is never parsed.
BODY_MARKER: Final = "X-Codeflux-Request-Body"
# How many bytes of a refused request's body are read (and dropped) after the refusal before the connection
# is cut: enough for a small form to be drained so the client reads the reply rather than a reset.
MAX_DISCARDED_BODY_BYTES: Final = 64 * 1024
# The client-side routes of the web client: each serves index.html (with the cookie).
APP_ROUTE: Final = re.compile(
    r"/(?:(?:app|first-run|repositories|workspace|tasks|settings|diagnostics|review|ledger|recovery|incidents)"
    r"(?:/[A-Za-z0-9_.~-]{1,128}){0,6}/?)?"
)

# A task's page: where a launch link made by `codeflux open --task` leads once redeemed.
TASK_PAGE: Final = re.compile(r"/tasks/[A-Za-z0-9_-]{1,128}")

HttpResult = tuple[int, list[tuple[str, str]], bytes]


def security_headers(host: str | None) -> list[tuple[str, str]]:
    """The headers every response carries; `host` is this origin's host:port (None for a request that did not
    name it: the page may then connect nowhere, and the UI's host name is not given away)."""
    connect = "'none'" if host is None else f"ws://{host}"
    return [
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; connect-src {connect}",
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]


def _exact_host(headers: list[tuple[str, str]], ui_host: str) -> str | None:
    """The request's Host if it is exactly one Host header naming the UI's origin host, else None."""
    hosts = [value for name, value in headers if name.lower() == "host"]
    if len(hosts) != 1:
        return None
    host = hosts[0].strip().lower()
    return host if host == ui_host.lower() else None


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
    "<p>To open codeflux, run <code>codeflux open</code> in a terminal while codeflux runs (also after it was "
    "restarted: a restart ends every page's session), or <code>codeflux start</code> if it does not run: "
    "either prints a one-time link and opens it in your browser (unless you pass <code>--no-browser</code>). "
    "A link works once, within two minutes; run <code>codeflux open</code> again for a new one.</p>"
)


def _page(title: str, body_html: str) -> bytes:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title></head>\n<body><h1>{html.escape(title)}</h1>\n{body_html}\n</body></html>\n"
    ).encode()


def _result(
    status: HTTPStatus,
    host: str | None,
    body: bytes,
    extra: Iterable[tuple[str, str]] = (),
    *,
    content_type: str = "text/html; charset=utf-8",
) -> HttpResult:
    headers = [*security_headers(host), ("Content-Type", content_type), *extra]
    return int(status), headers, body


_MISDIRECTED = (
    "<p>codeflux answers only at the address <code>codeflux start</code> printed (its own host name under "
    "<code>localhost</code>, so that the browser never sends its session to any other local server). Open "
    "that link, or run <code>codeflux start</code> again for a new one.</p>"
    "<p>If your browser cannot open that address, stop codeflux and run <code>codeflux start --ip-host</code>: "
    "it serves on the loopback address instead, which is less safe — every other server on that address "
    "then receives the session (see <code>docs/security.md</code>).</p>"
)


def _misdirected() -> HttpResult:
    # Neither the page nor its headers name the UI's host: knowing it is what another local server would need.
    return _result(HTTPStatus.MISDIRECTED_REQUEST, None, _page("Misdirected request", _MISDIRECTED))


def _not_allowed(host: str) -> HttpResult:
    return _result(
        HTTPStatus.METHOD_NOT_ALLOWED,
        host,
        _page("Method not allowed", "<p>codeflux only answers GET requests over HTTP.</p>"),
        [("Allow", "GET")],
    )


def _bad_request(host: str) -> HttpResult:
    return _result(
        HTTPStatus.BAD_REQUEST,
        host,
        _page("Bad request", "<p>codeflux's requests carry no body.</p>"),
    )


def _admitted_host(method: str, path: str, headers: list[tuple[str, str]], ui_host: str) -> str | HttpResult:
    """The request's Host when it may be answered at all; else the refusal (421, then 405, then 400 for a
    GET that announces a body)."""
    host = _exact_host(headers, ui_host)
    if host is None or not path.startswith("/") or path.startswith("//"):
        return _misdirected()
    if method != "GET":
        return _not_allowed(host)
    if any(name.lower() == BODY_MARKER.lower() for name, _ in headers):
        return _bad_request(host)
    return host


def _has_session(headers: list[tuple[str, str]], tokens: LaunchTokens) -> bool:
    # Every value is compared (no early exit), each in constant time.
    results = [tokens.is_session(value) for value in _session_cookie_values(headers)]
    return any(results)


def _task_page(query: str) -> str:
    """The launch link's ``to``: a task's page (``codeflux open --task``), or "" — nothing else is followed."""
    given = parse_qs(query).get("to", [])
    return given[0] if len(given) == 1 and TASK_PAGE.fullmatch(given[0]) else ""


def _launch_page(page_key: str, task_page: str) -> bytes:
    """The redemption response: it hands this tab its page key (kept in sessionStorage by launch.js, which
    then replaces the page with ``/``, or with ``task_page`` when the link named a task). The key is URL-safe
    base64 and the task page matches :data:`TASK_PAGE`, so neither needs escaping (both are escaped anyway)."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Opening codeflux</title>\n"
        f"<meta name=\"codeflux-page-key\" content=\"{html.escape(page_key)}\">\n"
        + (f"<meta name=\"codeflux-task-page\" content=\"{html.escape(task_page)}\">\n" if task_page else "")
        + "<script type=\"module\" src=\"/static/launch.js\"></script></head>\n"
        "<body><h1>Opening codeflux</h1><noscript><p>codeflux's page needs JavaScript.</p></noscript></body></html>\n"
    ).encode()


def _placeholder() -> bytes:
    return _page("codeflux", "<p>You are signed in to this codeflux session. The browser interface is not "
                 "built yet: this page is a placeholder and does nothing.</p>")


def respond_to_http(
    method: str,
    path: str,
    headers: Iterable[tuple[str, str]],
    *,
    ui_host: str,
    tokens: LaunchTokens,
    static: StaticFiles | None = None,
) -> HttpResult:
    """Answer one plain HTTP request. `ui_host` is the UI's origin host (``cf-<label>.localhost:PORT``);
    `static` is where the web client's files are read from (the package's ``static/`` directory by default)."""
    header_list = list(headers)
    host = _admitted_host(method, path, header_list, ui_host)
    if not isinstance(host, str):
        return host
    target = urlsplit(path)
    if target.path == "/launch":
        tokens_given = parse_qs(target.query).get("token", [])
        redeemed = tokens.redeem(tokens_given[0]) if len(tokens_given) == 1 else None
        if redeemed is None:
            return _result(
                HTTPStatus.FORBIDDEN,
                host,
                _page("This launch link cannot be used", "<p>It was already used, has expired or is not valid.</p>"
                      + _HOW_TO_OPEN),
            )
        return _result(HTTPStatus.OK, host, _launch_page(redeemed.page_key, _task_page(target.query)),
                       [("Set-Cookie", redeemed.cookie.set_cookie_header())])
    files = static if static is not None else StaticFiles()
    if target.path == FAVICON_PATH:
        icon = files.get(FAVICON_ASSET)
        if icon is not None:
            return _result(HTTPStatus.OK, host, icon.body, content_type=icon.content_type)
    if APP_ROUTE.fullmatch(target.path):
        if _has_session(header_list, tokens):
            index = files.index()
            return _result(HTTPStatus.OK, host, index.body if index is not None else _placeholder())
        return _result(HTTPStatus.OK, host, _page("Open codeflux from your terminal", _HOW_TO_OPEN))
    if target.path.startswith("/static/"):
        if not _has_session(header_list, tokens):
            return _result(HTTPStatus.FORBIDDEN, host, _page("Open codeflux from your terminal", _HOW_TO_OPEN))
        asset = files.get(target.path.removeprefix("/static/"))
        if asset is not None:
            return _result(HTTPStatus.OK, host, asset.body, content_type=asset.content_type)
    return _result(HTTPStatus.NOT_FOUND, host, _page("Not found", "<p>There is nothing at this address.</p>"))


def is_upgrade_request(path: str, headers: Iterable[tuple[str, str]]) -> bool:
    """Whether the request asks for the WebSocket (``/ws`` with an ``Upgrade: websocket`` header)."""
    if urlsplit(path).path != WEBSOCKET_PATH:
        return False
    return any(name.lower() == "upgrade" and value.strip().lower() == "websocket" for name, value in headers)


def upgrade_refusal(
    method: str,
    path: str,
    headers: Iterable[tuple[str, str]],
    *,
    ui_host: str,
    tokens: LaunchTokens,
) -> HttpResult | None:
    """None if this WebSocket upgrade may proceed; else the response refusing it before the handshake.

    The upgrade needs the UI's Host (421), GET (405), the exact path ``/ws`` without a query, exactly one
    ``Origin`` equal to ``http://<Host>`` (a foreign site, another loopback port or name, ``null`` or no
    Origin at all are refused: 403), the session cookie and a page key offered as a subprotocol, each
    compared in constant time (403).
    """
    header_list = list(headers)
    host = _admitted_host(method, path, header_list, ui_host)
    if not isinstance(host, str):
        return host
    origins = [value for name, value in header_list if name.lower() == "origin"]
    refused = _result(
        HTTPStatus.FORBIDDEN,
        host,
        _page("Not allowed", "<p>This connection needs the codeflux page opened from <code>codeflux start</code>."
              "</p>"),
    )
    same_origin = len(origins) == 1 and origins[0] == f"http://{host}"
    signed_in = _has_session(header_list, tokens)
    page_bound = _has_page_key(header_list, tokens)
    if path != WEBSOCKET_PATH or not same_origin or not signed_in or not page_bound:
        return refused
    return None


def _has_page_key(headers: list[tuple[str, str]], tokens: LaunchTokens) -> bool:
    offered = [
        protocol.strip().removeprefix(PAGE_KEY_PROTOCOL_PREFIX)
        for name, value in headers
        if name.lower() == "sec-websocket-protocol"
        for protocol in value.split(",")
        if protocol.strip().startswith(PAGE_KEY_PROTOCOL_PREFIX)
    ]
    results = [tokens.is_page_key(key) for key in offered]
    return any(results)


def too_many(host: str, what: str) -> HttpResult:
    """429 for an upgrade over the server's rate or connection cap (`what` says which, safely)."""
    return _result(
        HTTPStatus.TOO_MANY_REQUESTS,
        host,
        _page("Too many connections", f"<p>{html.escape(what)} Wait a moment and reload the page.</p>"),
        [("Retry-After", "5")],
    )


def transport_logger() -> logging.Logger:
    """The logger to hand to websockets `serve`. It is pinned at INFO: at DEBUG websockets writes every
    request and response header to the log, Cookie and Set-Cookie (the session secret) included."""
    logger = logging.getLogger("codeflux.server.transport")
    logger.setLevel(logging.INFO)
    return logger


def ui_origin_host(ui_name: str, connection: ServerConnection) -> str:
    """``ui_name:PORT`` for the port this connection arrived on (the exact Host every request must carry)."""
    return f"{ui_name}:{connection.local_address[1]}"


def to_response(result: HttpResult) -> Response:
    status, headers, body = result
    response_headers = Headers(headers)
    response_headers["Content-Length"] = str(len(body))
    response_headers["Connection"] = "close"
    return Response(status, HTTPStatus(status).phrase, response_headers, body)


UpgradeGate = Callable[[ServerConnection, Request, str], Response | None]


def make_process_request(
    tokens: LaunchTokens,
    *,
    ui_name: str,
    upgrade: UpgradeGate | None = None,
    static: StaticFiles | None = None,
) -> Callable[[ServerConnection, Request], Response | None]:
    """A websockets `process_request` hook: plain HTTP is answered with `respond_to_http`; a WebSocket
    upgrade is handed to `upgrade` (connection, request, the UI's origin host) — None lets the handshake
    proceed. Without an `upgrade` gate every request, upgrades included, is answered as plain HTTP.
    ``ui_name`` is the UI's host name without the port (``cf-<label>.localhost``, or ``127.0.0.1``)."""

    def process_request(connection: ServerConnection, request: Request) -> Response | None:
        ui_host = ui_origin_host(ui_name, connection)
        raw = list(request.headers.raw_items())
        if upgrade is not None and is_upgrade_request(request.path, raw):
            return upgrade(connection, request, ui_host)
        return to_response(
            respond_to_http(request.method, request.path, raw, ui_host=ui_host, tokens=tokens, static=static)
        )

    return process_request


class _HeadReader:
    """The protocol's stream reader, except that while the request head is read a header announcing a body
    (``Content-Length`` other than 0, ``Transfer-Encoding``) is handed on as :data:`BODY_MARKER` instead.
    websockets refuses such a request inside its parser and closes the connection without any reply; with
    the announcement renamed the request reaches `respond_to_http`, which refuses it (405, or 400 for GET).
    The body itself is never parsed: once a head announced one, everything after it is dropped as it arrives
    (``at_eof`` only returns at the end of the stream, so no byte is ever read as a WebSocket frame)."""

    _ANNOUNCING: Final = (b"content-length", b"transfer-encoding")

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._in_head = True
        self.body_announced = False

    def read_line(self, m: int, exc_type: Any = None) -> Generator[None, None, bytes]:
        line: bytes = yield from self._reader.read_line(m, exc_type)
        if not self._in_head:
            return line
        if line == b"\r\n":
            self._in_head = False
            return line
        name, sep, value = line.partition(b":")
        name = name.strip().lower()
        if sep and name in self._ANNOUNCING and not (name == b"content-length" and value.strip() == b"0"):
            self.body_announced = True
            return f"{BODY_MARKER}: {name.decode('ascii', 'replace')}\r\n".encode("ascii")
        return line

    def at_eof(self) -> Generator[None, None, bool]:
        if not self.body_announced:
            at_eof: bool = yield from self._reader.at_eof()
            return at_eof
        while not (yield from self._reader.at_eof()):
            self._reader.discard()
        return True

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._reader, attribute)


class RequestHeadConnection(ServerConnection):
    """The server's connection class (websockets ``create_connection``): a request that announces a body gets
    a reply instead of a silently closed connection (see `_HeadReader`). At most
    :data:`MAX_DISCARDED_BODY_BYTES` of such a request are received (and dropped) before the connection is
    cut, so that a small body is drained and its sender reads the refusal rather than a reset."""

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        # The protocol's parser started on the plain reader; nothing has been received yet, so it is restarted.
        self._head_reader = _HeadReader(protocol.reader)
        protocol.reader = self._head_reader  # type: ignore[assignment]
        protocol.parser = protocol.parse()
        next(protocol.parser)
        super().__init__(protocol, *args, **kwargs)
        self._received_with_body = 0

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_reader.body_announced:
            self._received_with_body += len(data)
            if self._received_with_body > MAX_DISCARDED_BODY_BYTES:
                self.transport.abort()
