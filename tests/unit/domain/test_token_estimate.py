"""The token estimate is a calibrated bound: on every text of the calibration sample it is at least the
highest count the measured tokenizers gave and at most 1.5× it; it never falls as text is appended; it
is never below a quarter of the ASCII bytes, and characters it cannot classify cost their bytes."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.token_estimate import estimate_text_tokens

CALIBRATION = Path(__file__).resolve().parents[2] / "fixtures" / "token_calibration.json"


@cache
def calibration() -> tuple[tuple[str, str, int], ...]:
    """(name, text, the highest measured count) for every calibration text."""
    document: dict[str, Any] = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    return tuple((entry["name"], entry["text"], max(entry["counts"].values())) for entry in document["texts"])


def test_the_sample_covers_the_kinds_of_text_a_run_sends() -> None:
    names = {name for name, _, _ in calibration()}
    assert {"system_prompt", "planner_system", "loop_tools", "planning_tools", "zh", "ru", "base64-400",
            "hex-400"} <= names
    assert sum(count for _, _, count in calibration()) > 25_000


def test_every_calibration_text_is_estimated_between_its_count_and_one_and_a_half_times_it() -> None:
    outside = []
    for name, text, count in calibration():
        estimate = estimate_text_tokens(text)
        if not count <= estimate <= count * 3 // 2:
            outside.append((name, estimate, count))
    assert outside == []


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=8))
def test_a_conversation_of_calibration_texts_is_bounded_by_their_counts(picks: list[int]) -> None:
    texts = calibration()
    chosen = [texts[pick % len(texts)] for pick in picks]
    estimate = sum(estimate_text_tokens(text) for _, text, _ in chosen)
    counted = sum(count for _, _, count in chosen)
    assert counted <= estimate <= counted * 3 // 2


@settings(max_examples=60, deadline=None)
@given(pick=st.integers(min_value=0, max_value=10**6), cuts=st.lists(st.integers(min_value=0), min_size=2,
                                                                     max_size=6))
def test_the_estimate_never_falls_along_a_real_text(pick: int, cuts: list[int]) -> None:
    _, text, _ = calibration()[pick % len(calibration())]
    prefixes = sorted(cut % (len(text) + 1) for cut in cuts)
    estimates = [estimate_text_tokens(text[:end]) for end in prefixes]
    assert estimates == sorted(estimates)


TEXT_PIECES = st.sampled_from(["a", "Z", "0", "7", " ", "  ", "\t", "\n", "_", "-", "+", "/", "=", "(", "é", "ж",
                               "中", "😀", "\x00", "def", "f00d", "ab12cd34"])


@given(head=st.lists(TEXT_PIECES, max_size=40).map("".join) | st.text(max_size=80),
       tail=st.lists(TEXT_PIECES, max_size=40).map("".join) | st.text(max_size=80))
def test_appending_text_never_lowers_the_estimate(head: str, tail: str) -> None:
    assert estimate_text_tokens(head + tail) >= estimate_text_tokens(head)


@given(text=st.text(max_size=400))
def test_the_estimate_is_never_below_a_quarter_of_the_ascii_bytes(text: str) -> None:
    ascii_bytes = len(text.encode("ascii", "ignore"))
    assert estimate_text_tokens(text) >= -(-ascii_bytes // 4)


def test_characters_outside_the_calibration_cost_their_bytes() -> None:
    emoji = "😀" * 10  # 4 bytes each, no calibrated script
    controls = "\x01" * 10
    assert estimate_text_tokens(emoji) == 40
    assert estimate_text_tokens(controls) == 10
    # The positive control: a calibrated script costs less than its bytes.
    assert estimate_text_tokens("中" * 10) < len(("中" * 10).encode())


def test_an_encoded_blob_costs_more_per_character_than_prose() -> None:
    blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwMTIzNDU2Nzg5MA" * 4
    prose = "the quick brown fox jumps over the lazy dog and " * 5
    assert estimate_text_tokens(blob) / len(blob) > 2 * estimate_text_tokens(prose) / len(prose)


def test_the_empty_text_costs_nothing() -> None:
    assert estimate_text_tokens("") == 0


def test_the_documented_tiktoken_examples_are_bounded() -> None:
    # OpenAI Cookbook, "How to count tokens with tiktoken": both texts are 6 tokens in cl100k_base and
    # o200k_base (the Claude tokenizer gives 6 and 7).
    for text, documented in (("tiktoken is great!", 6), ("antidisestablishmentarianism", 7)):
        assert documented <= estimate_text_tokens(text) <= documented * 3 // 2
