"""`codeflux start`'s address parsing and browser hand-off: loopback only, nothing else passed on."""

from __future__ import annotations

import asyncio
import io

import pytest

from codeflux.cli.context import CliContext
from codeflux.cli.start import open_url, parse_loopback_address, remind_if_unopened
from codeflux.domain.errors import UsageError
from codeflux.server.launch import LaunchTokens


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:47311", ("127.0.0.1", 47311)),
    ("localhost:0", ("127.0.0.1", 0)),
    ("[::1]:8080", ("::1", 8080)),
])
def test_loopback_addresses_are_accepted(text: str, expected: tuple[str, int]) -> None:
    assert parse_loopback_address(text) == expected


@pytest.mark.parametrize("text", ["0.0.0.0:1", "10.0.0.1:80", "[::]:1", "[::ffff:127.0.0.1]:1", "localhost.evil:1",
                                  "127.0.0.2:1", "127.1:1", "example.com:80", "127.0.0.1", "127.0.0.1:65536",
                                  "127.0.0.1:-1", ":1",
                                  "127.0.0.1:８０"])
def test_anything_else_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_loopback_address(text)


@pytest.mark.parametrize("url", ["http://example.com/launch?token=x", "http://127.0.0.1.evil:1/",
                                 "http://user@127.0.0.1:1/", "file:///etc/passwd", "http://127.0.0.1:1/#x"])
def test_only_loopback_http_urls_reach_the_browser(url: str) -> None:
    assert open_url(url, {"DISPLAY": ":0"}) is False


def test_no_graphical_session_means_no_browser_is_started() -> None:
    assert open_url("http://127.0.0.1:47311/launch?token=abc", {}) is False


def test_the_ui_host_name_reaches_the_browser_and_look_alikes_do_not() -> None:
    # Without a graphical session nothing is opened; what matters here is which URLs pass the first gate.
    assert open_url("http://cf-abcdefghijklmnopqrst.localhost:47311/launch?token=abc", {}) is False
    for url in ("http://cf-abc.localhost:1/", "http://cf-abcdefghijklmnopqrst.localhost.evil:1/",
                "http://x.cf-abcdefghijklmnopqrst.localhost:1/", "https://cf-abcdefghijklmnopqrst.localhost:1/"):
        assert open_url(url, {"DISPLAY": ":0"}) is False, url


def _reminded(tokens: LaunchTokens) -> str:
    out = io.StringIO()
    asyncio.run(remind_if_unopened(CliContext(stdout=out), tokens, "cf-abcdefghijklmnopqrst.localhost", delay=0.01))
    return out.getvalue()


def test_a_link_no_tab_opened_is_followed_by_how_to_fall_back() -> None:
    tokens = LaunchTokens()
    tokens.issue()
    said = _reminded(tokens)
    assert "cf-abcdefghijklmnopqrst.localhost" in said and "codeflux start --ip-host" in said
    assert "docs/security.md" in said


def test_an_opened_link_needs_no_reminder() -> None:
    tokens = LaunchTokens()
    assert tokens.redeem(tokens.issue()) is not None
    assert _reminded(tokens) == ""
