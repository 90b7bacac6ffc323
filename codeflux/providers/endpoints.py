"""Endpoint rules for provider base URLs: pure checks, no I/O.

A base URL is accepted only if:

- it is ASCII with no whitespace or control characters anywhere (an internationalized host is written
  in punycode), and its scheme is ``https`` — or ``http`` for a loopback host only (``127.0.0.0/8``,
  ``::1``, ``localhost``), since plain http anywhere else exposes the key and the prompts;
- it has a host, a valid port, and no userinfo (``user:pass@``), query (``?``) or fragment (``#``):
  a credential belongs in the OS credential store, and a query or fragment has no meaning for a base
  that paths are appended to;
- its path has no ``.`` or ``..`` segment and no empty segment.

:func:`normalize_base_url` returns the canonical form (lowercase scheme and host, default port
dropped, no trailing slash), which is what an approval is recorded against: the gateway uses a
non-default endpoint only after the user approved that exact normalized URL.
:func:`is_default_endpoint` says whether a URL is the provider's shipped default. Refusals are
:class:`EndpointRefusedError` and never echo the URL (its userinfo or query may hold a secret).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final
from urllib.parse import urlsplit

from codeflux.domain.errors import EndpointRefusedError
from codeflux.domain.providers import ProviderName

__all__ = ["DEFAULT_BASE_URLS", "is_default_endpoint", "is_loopback_host", "normalize_base_url"]

DEFAULT_BASE_URLS: Final[Mapping[ProviderName, str]] = MappingProxyType(
    {
        ProviderName.ANTHROPIC: "https://api.anthropic.com",
        ProviderName.OPENAI: "https://api.openai.com/v1",
    }
)
"""The shipped endpoint of each provider that has one; ``openai-compatible`` always needs a base URL."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?")
_MAX_URL_LENGTH: Final = 2048


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is ``localhost``, an address in ``127.0.0.0/8`` or ``::1`` (also IPv4-mapped)."""
    host = host.lower().removeprefix("[").removesuffix("]")
    if host in ("localhost", "localhost."):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def normalize_base_url(provider: ProviderName, text: str) -> str:
    """The canonical form of base URL ``text`` for ``provider``, or :class:`EndpointRefusedError`.

    A pure function of its arguments, so an accepted URL's form is remembered (the gateway normalizes its route's
    endpoint on every model call); a refusal is raised again each time, never remembered."""
    if type(text) is str and type(provider) is ProviderName:
        return _normalized(provider, text)
    return _normalize(provider, text)


@functools.lru_cache(maxsize=64)
def _normalized(provider: ProviderName, text: str) -> str:
    return _normalize(provider, text)


def _normalize(provider: ProviderName, text: str) -> str:
    problem = _text_problem(text)
    if problem is None:
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            problem = "the base URL has an invalid host or port"
    if problem is not None:
        raise EndpointRefusedError(provider=provider.value, reason=problem)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/")
    problem = _parts_problem(text, scheme=scheme, netloc=parts.netloc, host=host, port=port, path=path)
    if problem is not None:
        raise EndpointRefusedError(provider=provider.value, reason=problem)
    shown_host = f"[{host}]" if ":" in host else host
    shown_port = f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else ""
    return f"{scheme}://{shown_host}{shown_port}{path}"


def _text_problem(text: object) -> str | None:
    if not isinstance(text, str) or not text:
        return "the base URL is empty"
    if len(text) > _MAX_URL_LENGTH:
        return f"the base URL is longer than {_MAX_URL_LENGTH} characters"
    if not text.isascii() or any(ch.isspace() or not ch.isprintable() for ch in text):
        return "the base URL must be ASCII without spaces or control characters (write a host in punycode)"
    return None


def _parts_problem(text: str, *, scheme: str, netloc: str, host: str, port: int | None, path: str) -> str | None:
    checks = (
        (scheme not in _DEFAULT_PORTS, "the scheme must be https (or http for a loopback host)"),
        (not text[len(scheme) :].startswith("://"), "write the base URL as scheme://host[:port][/path]"),
        ("@" in netloc, "a user name or password in the URL is refused; keep keys in the OS credential store"),
        ("?" in text, "a query string is refused"),
        ("#" in text, "a fragment is refused"),
        (not host, "the base URL has no host"),
        (port == 0, "port 0 is not a port"),
        (
            bool(host) and not _is_ip(host) and _HOST_NAME.fullmatch(host) is None,
            "the host is not a valid host name or IP address",
        ),
        (
            scheme == "http" and not is_loopback_host(host),
            "http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost); use https",
        ),
        (
            any(segment in ("", ".", "..") for segment in path.split("/")[1:]),
            "the path has an empty, '.' or '..' segment",
        ),
    )
    return next((reason for failed, reason in checks if failed), None)


def is_default_endpoint(provider: ProviderName, url: str) -> bool:
    """Whether ``url`` normalizes to ``provider``'s shipped default (False for a refused URL)."""
    default = DEFAULT_BASE_URLS.get(provider)
    if default is None:
        return False
    try:
        return normalize_base_url(provider, url) == default
    except EndpointRefusedError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
