"""One-time launch tokens redeemed for an in-memory session cookie (ARCHITECTURE §11).

`codeflux start` prints (and opens) a URL carrying a launch token. The token can be redeemed once,
within a short window, for the session cookie. The session secret lives only in this object: it is
never printed, logged, stored or put in page content, and every comparison is constant time.
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


class LaunchTokens:
    """Issues one-time launch tokens and checks session cookies. Thread-safe."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, window: float = LAUNCH_WINDOW_SECONDS) -> None:
        if window <= 0:
            raise ValueError("the launch window must be positive")
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        self._pending: list[tuple[str, float]] = []  # (token, expires_at)
        self._session_secret = secrets.token_urlsafe(_TOKEN_BYTES)

    def __repr__(self) -> str:
        return f"LaunchTokens(window={self._window}, pending={len(self._pending)})"

    def issue(self) -> str:
        """A fresh launch token (32 random bytes, URL-safe), redeemable once within the window."""
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        with self._lock:
            self._pending.append((token, self._clock() + self._window))
        return token

    def redeem(self, token: str) -> SessionCookie | None:
        """The session cookie if `token` was issued, not yet redeemed and not expired; else None.

        A matching token is consumed even when it has expired, so it can never work later.
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
        return SessionCookie(self._session_secret)

    def is_session(self, value: str) -> bool:
        """Whether a cookie value is this process's session secret (constant time)."""
        return _same(self._session_secret, value)
