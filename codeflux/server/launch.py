"""One-time launch tokens redeemed for an in-memory session cookie and a page key (ARCHITECTURE §11).

`codeflux start` prints (and opens) a URL carrying a launch token. The token can be redeemed once,
within a short window, for

- the **session cookie**: host-only (no ``Domain``), ``HttpOnly; SameSite=Strict``, one secret per
  coordinator process. The UI is served on its own host name (``cf-<label>.localhost``), so the browser
  sends it to nothing else;
- a **page key**: a fresh value per redemption, delivered only in the redemption response (a page that is
  never cacheable and never readable cross-origin) and kept by the tab in ``sessionStorage``. The WebSocket
  upgrade must offer it (as a ``codeflux.page.<key>`` subprotocol) next to the cookie, so a copied cookie
  alone opens nothing.

The secrets live only in this object: they are never printed, logged or stored, and every comparison is
constant time.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

COOKIE_NAME = "codeflux_session"
LAUNCH_WINDOW_SECONDS = 120.0
# The WebSocket subprotocol that carries a tab's page key (never selected by the server: only offered).
PAGE_KEY_PROTOCOL_PREFIX = "codeflux.page."
# Page keys kept valid at once (one per redeemed launch link, i.e. per tab opened that way); the oldest goes.
MAX_PAGE_KEYS = 64
_TOKEN_BYTES = 32


def _same(left: str, right: str) -> bool:
    """Constant-time equality; works for any text a client may send (compare_digest on str is ASCII-only)."""
    return hmac.compare_digest(left.encode("utf-8", "surrogatepass"), right.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class SessionCookie:
    """The session cookie to hand to the browser. Its repr never shows the secret."""

    _secret: str = field(repr=False)

    def set_cookie_header(self) -> str:
        return f"{COOKIE_NAME}={self._secret}; Path=/; HttpOnly; SameSite=Strict"

    def __repr__(self) -> str:
        return "SessionCookie(<redacted>)"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class Redemption:
    """What a redeemed launch token grants: the session cookie and this tab's page key."""

    cookie: SessionCookie
    _page_key: str = field(repr=False)

    @property
    def page_key(self) -> str:
        return self._page_key


class LaunchTokens:
    """Issues one-time launch tokens and checks session cookies and page keys. Thread-safe."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, window: float = LAUNCH_WINDOW_SECONDS) -> None:
        if window <= 0:
            raise ValueError("the launch window must be positive")
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        self._pending: list[tuple[str, float]] = []  # (token, expires_at)
        self._session_secret = secrets.token_urlsafe(_TOKEN_BYTES)
        self._page_keys: list[str] = []

    def __repr__(self) -> str:
        return f"LaunchTokens(window={self._window}, pending={len(self._pending)})"

    def issue(self) -> str:
        """A fresh launch token (32 random bytes, URL-safe), redeemable once within the window."""
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        with self._lock:
            self._pending.append((token, self._clock() + self._window))
        return token

    def redeem(self, token: str) -> Redemption | None:
        """The session cookie and a fresh page key if `token` was issued, not yet redeemed and not expired;
        else None. A matching token is consumed even when it has expired, so it can never work later.
        """
        now = self._clock()
        with self._lock:
            matched: tuple[str, float] | None = None
            for entry in self._pending:  # scan every entry: no early exit on a match
                if _same(entry[0], token):
                    matched = entry
            if matched is not None:
                self._pending.remove(matched)
            self._pending = [entry for entry in self._pending if entry[1] > now]
        if matched is None or now >= matched[1]:
            return None
        page_key = secrets.token_urlsafe(_TOKEN_BYTES)
        with self._lock:
            self._page_keys = [*self._page_keys[-(MAX_PAGE_KEYS - 1):], page_key]
        return Redemption(SessionCookie(self._session_secret), page_key)

    @property
    def page_keys_issued(self) -> int:
        """How many page keys are valid now (tests check that no request but a redemption adds one)."""
        with self._lock:
            return len(self._page_keys)

    def is_page_key(self, value: str) -> bool:
        """Whether ``value`` is a page key this process issued and still holds (each compared in constant time)."""
        with self._lock:
            keys = list(self._page_keys)
        results = [_same(key, value) for key in keys]  # no early exit on a match
        return any(results)

    def is_session(self, value: str) -> bool:
        """Whether a cookie value is this process's session secret (constant time)."""
        return _same(self._session_secret, value)
