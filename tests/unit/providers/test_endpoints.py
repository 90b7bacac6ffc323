"""Base URL rules: https everywhere, http only on loopback, no userinfo, query or fragment; one normal form."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import EndpointRefusedError, UsageError
from codeflux.domain.providers import ProviderName
from codeflux.providers.endpoints import (
    DEFAULT_BASE_URLS,
    is_default_endpoint,
    is_loopback_host,
    normalize_base_url,
)

COMPATIBLE = ProviderName.OPENAI_COMPATIBLE


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("https://api.anthropic.com", "https://api.anthropic.com"),
        ("HTTPS://API.Anthropic.COM:443/", "https://api.anthropic.com"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1"),
        ("https://gateway.example.com:8443/openai/v1", "https://gateway.example.com:8443/openai/v1"),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
        ("http://127.9.8.7:8000", "http://127.9.8.7:8000"),
        ("http://localhost:8080/v1", "http://localhost:8080/v1"),
        ("http://LOCALHOST:80/", "http://localhost"),
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("http://[::ffff:127.0.0.1]:8000", "http://[::ffff:127.0.0.1]:8000"),
        ("https://[2001:db8::1]/v1", "https://[2001:db8::1]/v1"),
        ("https://10.0.0.5/v1", "https://10.0.0.5/v1"),
    ],
)
def test_an_acceptable_base_url_has_one_normal_form(url: str, normalized: str) -> None:
    assert normalize_base_url(COMPATIBLE, url) == normalized


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://api.example.com/v1", "http is allowed only for a loopback host"),
        ("http://10.0.0.5:8000", "http is allowed only for a loopback host"),
        ("http://0.0.0.0:8000", "http is allowed only for a loopback host"),
        ("http://localhost.example.com", "http is allowed only for a loopback host"),
        ("http://127.0.0.1.nip.io", "http is allowed only for a loopback host"),
        ("ftp://127.0.0.1/", "the scheme must be https"),
        ("file:///etc/passwd", "the scheme must be https"),
        ("api.openai.com/v1", "the scheme must be https"),
        ("https:api.openai.com", "scheme://host"),
        ("https://user:secret@api.example.com", "user name or password"),
        ("https://token@api.example.com", "user name or password"),
        ("https://api.example.com/v1?key=abc", "query string"),
        ("https://api.example.com/v1?", "query string"),
        ("https://api.example.com/v1#frag", "fragment"),
        ("https:///v1", "no host"),
        ("https://api.example.com:99999", "invalid host or port"),
        ("https://api.example.com:0", "port 0"),
        ("https://[::1", "invalid host or port"),
        ("https://exa mple.com", "without spaces"),
        (" https://api.example.com", "without spaces"),
        ("https://api.example.com\n", "without spaces"),
        ("https://bücher.example", "ASCII"),
        ("https://api.example.com/v1/../admin", "segment"),
        ("https://api.example.com//v1", "segment"),
        ("https://exa%6dple.com", "not a valid host name"),
        ("", "empty"),
    ],
)
def test_a_base_url_breaking_a_rule_is_refused_with_the_rule(url: str, reason: str) -> None:
    with pytest.raises(EndpointRefusedError, match=reason) as raised:
        normalize_base_url(COMPATIBLE, url)
    assert isinstance(raised.value, UsageError)


@pytest.mark.parametrize(
    "url", ["https://alice:hunter2secret@api.example.com", "https://api.example.com/?api_key=sk-live-123456789"]
)
def test_a_refusal_never_echoes_the_url(url: str) -> None:
    with pytest.raises(EndpointRefusedError) as raised:
        normalize_base_url(COMPATIBLE, url)
    for secret in ("hunter2secret", "sk-live-123456789", "api.example.com"):
        assert secret not in str(raised.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("127.255.255.254", True), ("::1", True), ("[::1]", True),
     ("::ffff:127.0.0.1", True), ("::", False), ("10.0.0.1", False),
     ("0.0.0.0", False),  # noqa: S104 - a host string under test; nothing binds it
     ("localhost.localdomain", False), ("128.0.0.1", False)],
)  # fmt: skip
def test_loopback_means_127_slash_8_ipv6_one_or_localhost(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_the_shipped_defaults_are_recognised_in_any_spelling_of_their_normal_form() -> None:
    assert is_default_endpoint(ProviderName.ANTHROPIC, "https://API.anthropic.com:443/")
    assert is_default_endpoint(ProviderName.OPENAI, "https://api.openai.com/v1/")
    assert not is_default_endpoint(ProviderName.OPENAI, "https://api.openai.com")
    assert not is_default_endpoint(ProviderName.ANTHROPIC, "https://api.openai.com/v1")
    assert not is_default_endpoint(ProviderName.ANTHROPIC, "http://api.anthropic.com")
    assert not is_default_endpoint(COMPATIBLE, "http://127.0.0.1:11434/v1")
    assert COMPATIBLE not in DEFAULT_BASE_URLS
    for provider, url in DEFAULT_BASE_URLS.items():
        assert normalize_base_url(provider, url) == url
