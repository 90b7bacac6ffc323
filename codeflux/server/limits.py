"""The transport's bounds: message size, streams per connection, connections, upgrade rate, stalls.

:class:`TransportLimits` holds the numbers (tests shrink them); :class:`UpgradeRate` is the sliding
one-minute window of accepted WebSocket upgrades for one server.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_MESSAGE_BYTES", "TransportLimits", "UpgradeRate"]

MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class TransportLimits:
    """Bounds of the WebSocket transport (and of the gRPC socket where they apply).

    - ``max_message_bytes``: one WebSocket message / one gRPC message, either direction (4 MiB); a larger
      incoming message closes the connection (1009), a larger reply ends its call RESOURCE_EXHAUSTED.
    - ``max_streams``: concurrent calls on one connection; one more is answered RESOURCE_EXHAUSTED.
    - ``max_connections``: authenticated WebSocket connections at once; one more is refused 429.
    - ``upgrades_per_minute``: accepted upgrades per server in any 60 s window; one more is refused 429.
    - ``stall_seconds``: how long a send may wait for the client to drain the connection's bounded
      write buffer (``write_buffer_bytes`` plus the socket's). A stream that waits longer ends
      RESOURCE_EXHAUSTED ("slow client"); the client resumes from its last sequence.
    - ``ping_interval``/``ping_timeout``: keepalive; a peer that stops answering is disconnected.
    """

    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_streams: int = 32
    max_connections: int = 16
    upgrades_per_minute: int = 60
    stall_seconds: float = 10.0
    write_buffer_bytes: int = 256 * 1024
    ping_interval: float = 30.0
    ping_timeout: float = 30.0
    close_timeout: float = 5.0

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_streams", "max_connections", "upgrades_per_minute",
                     "write_buffer_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("stall_seconds", "ping_interval", "ping_timeout", "close_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


class UpgradeRate:
    """Admits at most ``per_minute`` events in any sliding 60-second window. Not thread-safe: one event
    loop owns it."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._per_minute = per_minute
        self._clock = clock
        self._admitted: collections.deque[float] = collections.deque()

    def admit(self) -> bool:
        now = self._clock()
        while self._admitted and now - self._admitted[0] >= 60.0:
            self._admitted.popleft()
        if len(self._admitted) >= self._per_minute:
            return False
        self._admitted.append(now)
        return True
