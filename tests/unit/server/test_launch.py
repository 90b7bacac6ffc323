"""Launch tokens, page keys and the HTTP request policy of the loopback server (issue 6 item 2, issue 13)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.server.assets import StaticFiles
from codeflux.server.http import respond_to_http
from codeflux.server.launch import COOKIE_NAME, MAX_PAGE_KEYS, LaunchTokens

UI_NAME = "cf-abcdefghijklmnopqrst.localhost"
ORIGIN = f"{UI_NAME}:47311"
NO_WEB_CLIENT = Path("/nonexistent-codeflux-static")  # a static directory without the web client
HOST = [("Host", ORIGIN)]
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    f"connect-src ws://{ORIGIN}",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def request(
    tokens: LaunchTokens,
    path: str = "/",
    *,
    method: str = "GET",
    headers: list[tuple[str, str]] | None = None,
    static: StaticFiles | None = None,
) -> tuple[int, dict[str, str], str]:
    status, response_headers, body = respond_to_http(
        method, path, HOST if headers is None else headers, ui_host=ORIGIN, tokens=tokens,
        static=static or StaticFiles(NO_WEB_CLIENT),
    )
    names = [name for name, _ in response_headers]
    assert len(names) == len(set(names))
    return status, dict(response_headers), body.decode()


def session_secret(set_cookie: str) -> str:
    first = set_cookie.split(";", maxsplit=1)[0]
    name, _, secret = first.partition("=")
    assert name == COOKIE_NAME
    return secret


# --- LaunchTokens --------------------------------------------------------------------------------------


def test_a_token_is_long_random_and_url_safe() -> None:
    tokens = LaunchTokens()
    first, second = tokens.issue(), tokens.issue()
    assert first != second
    assert len(first) >= 43
    assert set(first) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_a_token_redeems_once_for_the_session_cookie_and_a_page_key() -> None:
    tokens = LaunchTokens()
    token = tokens.issue()
    redeemed = tokens.redeem(token)
    assert redeemed is not None
    header = redeemed.cookie.set_cookie_header()
    assert header.endswith("; Path=/; HttpOnly; SameSite=Strict")  # host-only: no Domain attribute
    assert tokens.is_session(session_secret(header))
    assert tokens.is_page_key(redeemed.page_key)
    assert not tokens.is_session(redeemed.page_key) and not tokens.is_page_key(session_secret(header))
    assert tokens.redeem(token) is None


def test_each_redemption_gets_its_own_page_key_and_only_the_newest_are_kept() -> None:
    tokens = LaunchTokens()
    keys = []
    for _ in range(MAX_PAGE_KEYS + 1):
        redeemed = tokens.redeem(tokens.issue())
        assert redeemed is not None
        keys.append(redeemed.page_key)
    assert len(set(keys)) == len(keys)
    assert tokens.page_keys_issued == MAX_PAGE_KEYS
    assert not tokens.is_page_key(keys[0])
    assert all(tokens.is_page_key(key) for key in keys[1:])
    assert not tokens.is_page_key("") and not tokens.is_page_key(keys[-1][:-1]) and not tokens.is_page_key("é")


def test_a_late_token_fails_and_stays_used() -> None:
    clock = FakeClock()
    tokens = LaunchTokens(clock=clock, window=120.0)
    token = tokens.issue()
    clock.now += 120.0
    assert tokens.redeem(token) is None
    clock.now -= 60.0
    assert tokens.redeem(token) is None


def test_a_token_just_inside_the_window_works() -> None:
    clock = FakeClock()
    tokens = LaunchTokens(clock=clock, window=120.0)
    token = tokens.issue()
    clock.now += 119.9
    assert tokens.redeem(token) is not None


def test_unknown_tokens_and_foreign_cookies_fail() -> None:
    tokens = LaunchTokens()
    tokens.issue()
    assert tokens.redeem("") is None
    assert tokens.redeem("not-a-token-é") is None
    assert not tokens.is_session("")
    assert not tokens.is_session("forged-é")


def test_the_secrets_never_show_in_a_repr() -> None:
    tokens = LaunchTokens()
    redeemed = tokens.redeem(tokens.issue())
    assert redeemed is not None
    secret = session_secret(redeemed.cookie.set_cookie_header())
    for text in (repr(redeemed), repr(redeemed.cookie), str(redeemed.cookie), repr(tokens), f"{redeemed}"):
        assert secret not in text
        assert redeemed.page_key not in text


@given(st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=20))
def test_each_token_works_exactly_once_in_any_order(order: list[int]) -> None:
    tokens = LaunchTokens()
    issued = [tokens.issue() for _ in range(5)]
    redeemed: set[int] = set()
    for index in order:
        cookie = tokens.redeem(issued[index])
        assert (cookie is not None) == (index not in redeemed)
        redeemed.add(index)


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        LaunchTokens(window=0)


# --- respond_to_http ----------------------------------------------------------------------------------


def test_launch_sets_the_cookie_and_hands_the_page_its_key_then_refuses_the_second_time() -> None:
    tokens = LaunchTokens()
    token = tokens.issue()
    status, headers, body = request(tokens, f"/launch?token={token}")
    assert status == 200
    secret = session_secret(headers["Set-Cookie"])
    assert headers["Set-Cookie"] == f"{COOKIE_NAME}={secret}; Path=/; HttpOnly; SameSite=Strict"
    assert headers["Cache-Control"] == "no-store"
    assert secret not in body
    key = re.search(r'<meta name="codeflux-page-key" content="([A-Za-z0-9_-]+)">', body)
    assert key is not None and tokens.is_page_key(key.group(1))
    assert '<script type="module" src="/static/launch.js"></script>' in body
    status, headers, body = request(tokens, f"/launch?token={token}")
    assert status == 403
    assert "Set-Cookie" not in headers
    assert "codeflux start" in body


def test_a_link_made_for_a_task_names_its_page_and_nothing_else_is_followed() -> None:
    tokens = LaunchTokens()
    status, _, body = request(tokens, f"/launch?token={tokens.issue()}&to=%2Ftasks%2Ftsk_0123456789abcdef")
    assert status == 200
    assert '<meta name="codeflux-task-page" content="/tasks/tsk_0123456789abcdef">' in body
    _, _, plain = request(tokens, f"/launch?token={tokens.issue()}")  # the control: no `to`, no task page
    assert "codeflux-task-page" not in plain
    for elsewhere in ("//evil.example/", "https://evil.example/tasks/x", "/tasks/../settings", "/tasks/a%22b",
                      "/settings", "/tasks/", "/tasks/x/y", "javascript:alert(1)"):
        status, headers, body = request(tokens, f"/launch?token={tokens.issue()}&to={quote(elsewhere, safe='')}")
        assert status == 200 and "Set-Cookie" in headers  # the link still signs in …
        assert "codeflux-task-page" not in body  # … but leads only to "/"
    twice = f"/launch?token={tokens.issue()}&to=%2Ftasks%2Fa&to=%2Ftasks%2Fb"
    assert "codeflux-task-page" not in request(tokens, twice)[2]


@pytest.mark.parametrize("path", ["/launch", "/launch?token=", "/launch?token=nope", "/launch?token=a&token=b"])
def test_a_bad_launch_is_forbidden_and_explains(path: str) -> None:
    tokens = LaunchTokens()
    tokens.issue()
    status, headers, body = request(tokens, path)
    assert status == 403
    assert "Set-Cookie" not in headers
    assert "codeflux start" in body


def test_an_expired_launch_is_forbidden() -> None:
    clock = FakeClock()
    tokens = LaunchTokens(clock=clock)
    token = tokens.issue()
    clock.now += 3600
    assert request(tokens, f"/launch?token={token}")[0] == 403


def test_home_without_the_cookie_explains_and_gives_no_session() -> None:
    status, headers, body = request(LaunchTokens())
    assert status == 200
    assert "Set-Cookie" not in headers
    assert "codeflux start" in body
    assert "<script" not in body


def test_home_with_the_cookie_is_the_honest_placeholder() -> None:
    tokens = LaunchTokens()
    _, headers, _ = request(tokens, f"/launch?token={tokens.issue()}")
    secret = session_secret(headers["Set-Cookie"])
    cookie_header = ("Cookie", f"theme=dark; {COOKIE_NAME}={secret}")
    status, headers, body = request(tokens, headers=[*HOST, cookie_header])
    assert status == 200
    assert "Set-Cookie" not in headers
    assert "not built yet" in body
    assert "<script" not in body
    assert secret not in body


def test_a_forged_cookie_gets_the_explanation() -> None:
    tokens = LaunchTokens()
    status, _, body = request(tokens, headers=[*HOST, ("Cookie", f"{COOKIE_NAME}=forged")])
    assert status == 200
    assert "not built yet" not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"])
def test_only_get_is_allowed(method: str) -> None:
    tokens = LaunchTokens()
    token = tokens.issue()
    status, headers, _ = request(tokens, f"/launch?token={token}", method=method)
    assert status == 405
    assert headers["Allow"] == "GET"
    assert tokens.redeem(token) is not None  # a refused method does not spend the token


@pytest.mark.parametrize("path", ["/favicon.ico", "/launch/", "/ws", "/../etc/passwd"])
def test_unknown_paths_are_not_found(path: str) -> None:
    assert request(LaunchTokens(), path)[0] == 404


def test_the_favicon_is_served_without_a_session_but_only_on_the_ui_host() -> None:
    status, headers, body = request(LaunchTokens(), "/favicon.ico", static=StaticFiles())
    assert status == 200
    assert headers["Content-Type"] == "image/svg+xml"
    assert body.startswith("<svg ") and "<script" not in body
    assert "Set-Cookie" not in headers
    assert request(LaunchTokens(), "/favicon.ico", headers=[("Host", "evil.example")], static=StaticFiles())[0] == 421
    assert request(LaunchTokens(), "/favicon.ico", method="POST", static=StaticFiles())[0] == 405
    # the web client links it (the page's CSP, img-src 'self', allows it)
    index = StaticFiles().index()
    assert index is not None and b'<link rel="icon" href="/static/favicon.svg"' in index.body


@pytest.mark.parametrize("host", [ORIGIN, ORIGIN.upper(), f" {ORIGIN} "])
def test_the_ui_host_is_served_and_the_csp_names_that_origin(host: str) -> None:
    status, headers, _ = request(LaunchTokens(), headers=[("Host", host)])
    assert status == 200
    assert headers["Content-Security-Policy"].endswith(f"; connect-src ws://{ORIGIN}")


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [("Host", "evil.example:47311")],
        [("Host", "127.0.0.1:47311")],
        [("Host", "localhost:47311")],
        [("Host", "[::1]:47311")],
        [("Host", "other.localhost:47311")],
        [("Host", UI_NAME)],
        [("Host", f"{UI_NAME}:1")],
        [("Host", f"{UI_NAME}.:47311")],
        [("Host", ORIGIN), ("Host", "evil.example")],
    ],
)
def test_a_missing_wrong_or_doubled_host_is_misdirected_without_naming_the_ui_host(
    headers: list[tuple[str, str]],
) -> None:
    status, response_headers, body = request(LaunchTokens(), headers=headers)
    assert status == 421
    assert response_headers["Content-Security-Policy"].endswith("; connect-src 'none'")
    assert not any("abcdefghijklmnopqrst" in value for value in [body, *response_headers.values()])
    assert "codeflux start --ip-host" in body


@pytest.mark.parametrize("path", [f"http://{ORIGIN}/", "//evil.example/", "*"])
def test_a_request_target_that_is_not_a_local_path_is_misdirected(path: str) -> None:
    assert request(LaunchTokens(), path)[0] == 421


@pytest.mark.security
@given(st.text(max_size=40))
def test_any_host_but_the_ui_host_gets_421(host: str) -> None:
    if host.strip().lower() == ORIGIN:
        return
    tokens = LaunchTokens()
    token = tokens.issue()
    status, headers, _ = request(tokens, f"/launch?token={token}", headers=[("Host", host)])
    assert status == 421
    assert "Set-Cookie" not in headers
    assert tokens.redeem(token) is not None


@pytest.mark.security
def test_every_response_carries_the_security_headers() -> None:
    tokens = LaunchTokens()
    cases = [
        ("GET", "/", HOST),
        ("GET", f"/launch?token={tokens.issue()}", HOST),
        ("GET", "/launch?token=bad", HOST),
        ("GET", "/nowhere", HOST),
        ("POST", "/", HOST),
        ("GET", "/", [("Host", "evil.example")]),
    ]
    statuses = set()
    for method, path, headers in cases:
        status, response_headers, _ = request(tokens, path, method=method, headers=headers)
        statuses.add(status)
        for name, value in SECURITY_HEADERS.items():
            expected = value.replace(f"ws://{ORIGIN}", "'none'") if status == 421 else value
            assert response_headers[name] == expected
    assert statuses == {200, 403, 404, 405, 421}


# --- the web client's files -----------------------------------------------------------------------------


def signed_in(tokens: LaunchTokens) -> list[tuple[str, str]]:
    _, headers, _ = request(tokens, f"/launch?token={tokens.issue()}")
    return [*HOST, ("Cookie", headers["Set-Cookie"].split(";")[0])]


def web_client(tmp_path: Path) -> StaticFiles:
    (tmp_path / "index.html").write_text("<!DOCTYPE html><title>app</title><script type=module src=/static/app.js>"
                                         "</script>")
    (tmp_path / "app.js").write_text("export const x = 1;\n")
    (tmp_path / "app.css").write_text("body{}\n")
    (tmp_path / "views").mkdir()
    (tmp_path / "views" / "task.js").write_text("export {};\n")
    return StaticFiles(tmp_path)


@pytest.mark.parametrize("path", ["/", "/tasks/tsk_1", "/settings", "/workspace/repo/thread/t1", "/first-run"])
def test_app_routes_serve_the_web_client_only_with_the_cookie(tmp_path: Path, path: str) -> None:
    tokens, static = LaunchTokens(), web_client(tmp_path)
    status, headers, body = request(tokens, path, headers=signed_in(tokens), static=static)
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert "<title>app</title>" in body
    status, headers, body = request(tokens, path, static=static)
    assert status == 200
    assert "app.js" not in body
    assert "Set-Cookie" not in headers


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/static/app.js", "text/javascript; charset=utf-8"), ("/static/app.css", "text/css; charset=utf-8"),
     ("/static/views/task.js", "text/javascript; charset=utf-8"), ("/static/index.html", "text/html; charset=utf-8")],
)
def test_static_files_have_their_exact_type(tmp_path: Path, path: str, content_type: str) -> None:
    tokens, static = LaunchTokens(), web_client(tmp_path)
    status, headers, _ = request(tokens, path, headers=signed_in(tokens), static=static)
    assert (status, headers["Content-Type"]) == (200, content_type)
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert request(tokens, path, static=static)[0] == 403  # no cookie, no file


@pytest.mark.parametrize(
    "path",
    ["/static/../index.html", "/static/views/../app.js", "/static/.env.js", "/static/app.py", "/static/",
     "/static/views", "/static/link.js", "/static/app.js/", "/static/APP.JS"],
)
def test_static_names_outside_the_strict_pattern_or_links_are_not_found(tmp_path: Path, path: str) -> None:
    tokens, static = LaunchTokens(), web_client(tmp_path)
    (tmp_path / "link.js").symlink_to(tmp_path / "app.js")
    assert request(tokens, path, headers=signed_in(tokens), static=static)[0] == 404
