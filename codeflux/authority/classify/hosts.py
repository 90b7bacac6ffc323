"""Network destinations: the host a URL, ``user@host:path``, ``host:port`` or bare host word names.

Hosts are normalized (lower case, IDNA, IPv6 in brackets) so that a host-scoped denial matches however
the argv spelled the host; a word whose host cannot be read gives None, which callers turn into an
unscoped ``network`` need. Also here: the shell's socket paths (``/dev/tcp/HOST/PORT``, see
:func:`network_device`) and the guess for programs codeflux does not know (:func:`names_a_destination`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.options import table_words
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


# ─── the shell's socket paths ─────────────────────────────────────────────────────────────────────

_DEVICE_PREFIXES: Final = ("/dev/tcp/", "/dev/udp/")
_DEVICE: Final = re.compile(r"/dev/(?:tcp|udp)/([^/]+)/[^/]+")
_EXPANSION_START: Final = re.compile(r"\$|`")
_PLAIN_TAIL: Final = re.compile(r"[\w.+/-]*")


def network_device(target: str) -> tuple[bool, str | None]:
    """(may open a socket, its host) for a shell redirection target.

    bash and ksh open a TCP or UDP socket for ``/dev/tcp/HOST/PORT`` and ``/dev/udp/HOST/PORT``. A
    target decided at run time (``$X``, ``/dev/$P/h/80``, ``$(cat f)``) may spell one, and then the host
    is unknown — unless the literal text after its last expansion puts a dot in the last path
    component (``"$f.log"``): that component would be the port, and no port or service name has a dot.
    """
    path = re.sub("/+", "/", target)
    if any(prefix in path for prefix in _DEVICE_PREFIXES):
        match = _DEVICE.fullmatch(path)
        return True, None if match is None else normalize_host(match.group(1), bare_names=True)
    start = _EXPANSION_START.search(path)
    if start is None:
        return False, None
    literal_prefix = path[: start.start()]
    if not any(prefix.startswith(literal_prefix) for prefix in _DEVICE_PREFIXES):
        return False, None  # `out/$f`: a relative or other path, whatever the variable holds
    tail = _literal_tail(path)
    if tail is not None and _PLAIN_TAIL.fullmatch(tail) and "." in tail.rsplit("/", 1)[-1]:
        return False, None
    return True, None


def _literal_tail(word: str) -> str | None:
    """The text after the last expansion (``$NAME``, ``${…}``, ``$(…)``, backticks); None if unbalanced."""
    index, tail_start = 0, 0
    while index < len(word):
        if word[index] == "`":
            end = word.find("`", index + 1)
        elif word[index] == "$" and word[index + 1 : index + 2] in {"(", "{"}:
            end = _closing(word, index + 1)
        elif word[index] == "$":
            name = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]", word[index + 1 :])
            end = index + (len(name.group(0)) if name else 0)
        else:
            index += 1
            continue
        if end < 0:
            return None
        index = tail_start = end + 1
    return word[tail_start:]


def _closing(word: str, opening: int) -> int:
    """The index of the bracket that closes the one at ``opening`` (nesting counted), or -1."""
    pairs = {"(": ")", "{": "}"}
    open_char, close_char, depth = word[opening], pairs[word[opening]], 0
    for index in range(opening, len(word)):
        depth += {open_char: 1, close_char: -1}.get(word[index], 0)
        if depth == 0:
            return index
    return -1


# ─── destinations named by programs codeflux does not know ───────────────────────────────────────

_HOST_PORT: Final = re.compile(r"(?:[^@/\s:]+@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([1-9][0-9]{0,4})")
_SINGLE_LABEL: Final = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")
_FILE_EXTENSIONS: Final = frozenset(
    table_words("py pyi js mjs cjs ts tsx jsx c h cc cpp cxx hpp go rs rb java kt swift php pl pm sh bash md rst "
                "txt json yaml yml toml ini cfg conf html css scss vue lua ex exs erl hs ml scala cs sql log csv xml "
                "lock ipynb")
)  # `file.py:10` is a file and a line, even though .py, .sh and .md are also top-level domains


def names_a_destination(word: str) -> bool:
    """Whether an argument of a program codeflux does not know names a network destination.

    A URL with a host (not ``file:``; one-letter schemes are drive letters), or ``HOST:PORT`` where the
    port is 1–65535 and the host is an IP address, ``localhost``, a dotted name whose last label is not a
    source-file extension, or a single label of two or more characters starting with a letter (a compose
    service such as ``db:5432``). ``a:b``, ``C:1``, ``HEAD:path``, ``12:30`` and ``main.py:10`` are not
    destinations. ``--opt=VALUE`` is judged by its value.
    """
    for text in {word, word.rsplit("=", 1)[-1]}:
        for url in _URL_IN_TEXT.findall(text):
            scheme = url.split("://", 1)[0].lower()
            if scheme not in LOCAL_SCHEMES and len(scheme) > 1 and url_host(url) is not None:
                return True
        match = _HOST_PORT.fullmatch(text)
        if match is not None and int(match.group(2)) <= 65535 and _is_host_like(match.group(1)):
            return True
    return False


def _is_host_like(raw: str) -> bool:
    host = raw.lower()
    if host.startswith("["):
        return len(host) > 2
    if _IPV4.fullmatch(host):
        return all(int(octet) <= 255 for octet in host.split("."))
    if host == "localhost" or _SINGLE_LABEL.fullmatch(host):
        return True
    return _DOTTED_HOST.fullmatch(host) is not None and host.rsplit(".", 1)[-1] not in _FILE_EXTENSIONS
