"""``--every``: a whole number with one unit (s, m, h), 1 s to 24 h; anything else is a usage error naming the forms."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import UsageError
from codeflux.domain.watch import parse_watch_interval


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), (" 1s ", 1), ("24h", 86400),
                                               ("90m", 5400)])
def test_an_interval_is_a_number_with_a_unit(text: str, seconds: int) -> None:
    assert parse_watch_interval(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "s", "5 m", "1.5m", "-5m", "5d", "5M", "1h30m", "٣s", "0s", "25h",
                                  "1441m"])
def test_anything_else_is_refused_with_the_forms(text: str) -> None:
    with pytest.raises(UsageError, match=r"--every must be"):
        parse_watch_interval(text)
