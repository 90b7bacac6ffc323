"""Command output on its way out of the worker: capped bytes, UTF-8 with replacement, redacted as a stream."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.redact import redact
from codeflux.worker.tools.pump import OutputCapture

SECRET = "sk-ant-api03-" + "Qz7xK2pLm9Vb4Nc8" * 3


def released(capture: OutputCapture, pieces: list[bytes]) -> str:
    return "".join(capture.feed(piece) for piece in pieces) + capture.finish()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[start:end] for start, end in itertools.pairwise(points)]


@settings(deadline=None)
@given(prefix=st.text(max_size=300), suffix=st.text(max_size=300), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_a_secret_split_at_any_byte_offset_never_leaves_the_worker(prefix: str, suffix: str, cuts: list[int]) -> None:
    data = (prefix + " " + SECRET + "\n" + suffix).encode("utf-8")
    text = released(OutputCapture(limit=1 << 20, redact=True), split(data, cuts))
    assert SECRET not in text
    assert text == redact(data.decode("utf-8"))


@settings(deadline=None)
@given(text=st.text(max_size=200), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_splitting_inside_a_multibyte_character_loses_nothing(text: str, cuts: list[int]) -> None:
    data = text.encode("utf-8")
    assert released(OutputCapture(limit=1 << 20, redact=False), split(data, cuts)) == text


def test_undecodable_bytes_become_replacement_characters() -> None:
    assert released(OutputCapture(limit=100, redact=False), [b"ok \xff\xfe", b" end"]) == "ok \ufffd\ufffd end"


def test_bytes_past_the_cap_are_dropped_and_flagged() -> None:
    capture = OutputCapture(limit=10, redact=False)
    assert released(capture, [b"0123456", b"789abc", b"def"]) == "0123456789"
    assert capture.truncated and capture.captured_bytes == 10
