"""Cutting text visibly: the head (and tail) kept, the note's counts equal what was removed, over every cut."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.truncation import keep_head, keep_head_and_tail, line_count

NOTE = re.compile(r"\[codeflux: ([\d,]+) (?:more )?characters \(([\d,]+) lines?\) (elided|not shown)([^\]\n]*)\]\n")


def before(shown: str, note: re.Match[str]) -> str:
    """What a cut kept before its note (without the newline it put there after a line cut short)."""
    head = shown[: note.start()]
    return head.removesuffix("\n") if note.group(4).startswith("; the line above was cut short") else head
lines_of_text = st.lists(st.text(alphabet="ab \t", max_size=700), max_size=300).map(
    lambda lines: "".join(f"{line}\n" for line in lines))


def counts(note: re.Match[str]) -> tuple[int, int]:
    return int(note.group(1).replace(",", "")), int(note.group(2).replace(",", ""))


@settings(deadline=None, max_examples=200)
@given(text=lines_of_text, limit=st.integers(300, 20_000))
def test_a_head_cut_keeps_a_prefix_and_counts_exactly_what_it_dropped(text: str, limit: int) -> None:
    shown, cut = keep_head(text, limit, hint="call again with start_line=9")
    if not cut:
        assert shown == text and len(text) <= limit
        return
    assert len(shown) <= limit
    note = NOTE.search(shown)
    assert note is not None and note.end() == len(shown) and note.group(3) == "not shown"
    assert "call again with start_line=9" in note.group(0)
    head = before(shown, note)
    assert text.startswith(head)
    assert counts(note) == (len(text) - len(head), line_count(text[len(head):]))


@settings(deadline=None, max_examples=200)
@given(text=lines_of_text, limit=st.integers(300, 20_000))
def test_a_head_and_tail_cut_keeps_both_ends_and_counts_the_middle(text: str, limit: int) -> None:
    shown, cut = keep_head_and_tail(text, limit)
    if not cut:
        assert shown == text
        return
    assert len(shown) <= limit
    note = NOTE.search(shown)
    assert note is not None and note.group(3) == "elided"
    head, tail = before(shown, note), shown[note.end():]
    assert text.startswith(head) and text.endswith(tail)
    middle = text[len(head) : len(text) - len(tail)]
    assert counts(note) == (len(middle), middle.count("\n"))


@settings(deadline=None, max_examples=100)
@given(text=lines_of_text, first=st.integers(6_000, 20_000), second=st.integers(300, 2_000))
def test_cutting_an_already_cut_text_reports_the_total_removed(text: str, first: int, second: int) -> None:
    once, _ = keep_head_and_tail(text, first)
    twice, cut = keep_head_and_tail(once, second)
    if not cut:
        return
    notes = list(NOTE.finditer(twice))
    assert len(notes) == 1  # the earlier note, in the middle, was removed with it
    head, tail = before(twice, notes[0]), twice[notes[0].end():]
    assert text.startswith(head) and text.endswith(tail)
    middle = text[len(head) : len(text) - len(tail)]
    assert counts(notes[0]) == (len(middle), middle.count("\n"))


def test_a_cut_line_counts_as_one_line_not_shown() -> None:
    shown, cut = keep_head("a\n" * 10 + "b" * 400, 200, hint="ask for less")
    assert cut
    assert shown == "a\n" * 10 + "[codeflux: 400 more characters (1 line) not shown; ask for less]\n"
