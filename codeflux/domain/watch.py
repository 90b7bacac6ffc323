"""``codeflux watch``: the interval between ticks, and what one tick did (issue 22 item 1).

A watch runs one approved check command on a schedule, each tick in a fresh scratch copy of the branch's HEAD
(never the person's uncommitted changes). :func:`parse_watch_interval` reads ``--every``: a whole number with
one unit, ``s``, ``m`` or ``h`` (``30s``, ``5m``, ``1h``), from :data:`MIN_WATCH_INTERVAL_S` to
:data:`MAX_WATCH_INTERVAL_S`. :class:`WatchTickOutcome` names what one tick found.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import UsageError

__all__ = ["MAX_WATCH_INTERVAL_S", "MIN_WATCH_INTERVAL_S", "WatchTickOutcome", "parse_watch_interval"]

MIN_WATCH_INTERVAL_S: Final = 1
MAX_WATCH_INTERVAL_S: Final = 24 * 60 * 60
_UNITS: Final = {"s": 1, "m": 60, "h": 3600}
_INTERVAL: Final = re.compile(r"([0-9]{1,6})([smh])")


def parse_watch_interval(text: str) -> int:
    """``--every`` in seconds; :class:`UsageError` naming the accepted forms otherwise."""
    match = _INTERVAL.fullmatch(text.strip())
    if match is None:
        raise UsageError("--every must be a whole number with a unit: s, m or h (e.g. 30s, 5m, 1h)")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if not MIN_WATCH_INTERVAL_S <= seconds <= MAX_WATCH_INTERVAL_S:
        raise UsageError(f"--every must be between {MIN_WATCH_INTERVAL_S}s and 24h")
    return seconds


class WatchTickOutcome(StrEnum):
    """What one tick found: the command passed, or it failed (an incident was recorded), or it could not run."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not-run"
