"""Network destinations: the host a URL, ``user@host:path``, ``host:port`` or bare host word names.

Hosts are normalized (lower case, IDNA, IPv6 in brackets) so that a host-scoped denial matches however
the argv spelled the host; a word whose host cannot be read gives None, which callers turn into an
unscoped ``network`` need.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from codeflux.authority.classify.findings import Findings, shown
from codeflux.domain.capabilities import Capability

_C = Capability

_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_DOTTED_HOST: Final = re.compile(rf"(?:{_LABEL}\.)+[a-z](?:[a-z0-9-]{{0,61}}[a-z0-9])?")
_IPV4: Final = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_SIMPLE_HOST: Final = re.compile(_LABEL)
_BARE_DESTINATION: Final = re.compile(r"(?:[^@/\s]+@)?(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+)(?::[^/\s]*)?(?:[/?#].*)?")
_URL_IN_TEXT: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")
LOCAL_SCHEMES: Final = frozenset({"file"})
REMOTE_SPEC: Final = re.compile(r"(?:[^@/\s:]+@)?([^@/\s:]+)::?(?!//).*", flags=re.DOTALL)


def normalize_host(raw: str, *, bare_names: bool) -> str | None:
    host = raw.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]") and len(host) > 2:
        return host
    if _IPV4.fullmatch(host) or _DOTTED_HOST.fullmatch(host) or host == "localhost":
        return host
    if bare_names and _SIMPLE_HOST.fullmatch(host) and not host.isdigit():
        return host
    return None


def url_host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a malformed port raises ValueError
    except ValueError:
        return None
    if host is None:
        return None
    if ":" in host:
        return f"[{host}]"
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return normalize_host(ascii_host, bare_names=True)


def host_of(word: str, *, bare_names: bool) -> str | None:
    """The host a destination word names (URL, ``user@host:path``, ``host:port``, ``host/path``)."""
    if "://" in word:
        return url_host(word)
    match = _BARE_DESTINATION.fullmatch(word)
    return None if match is None else normalize_host(match.group(1), bare_names=bare_names)


def urls_in(args: Iterable[str]) -> list[str]:
    return [url for arg in args for url in _URL_IN_TEXT.findall(arg)]


def _has_password_in_url(url: str) -> bool:
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    return "@" in netloc and ":" in netloc.rsplit("@", 1)[0]


def url_destinations(urls: Iterable[str], out: Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for url in urls:
        if url.split("://", 1)[0].lower() in LOCAL_SCHEMES:
            continue
        hosts.append(url_host(url))
        if _has_password_in_url(url):
            out.add(_C.CREDENTIAL, f"URL {shown(url)} carries a password")
    return hosts
