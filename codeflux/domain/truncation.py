"""Cutting text visibly: what a cut removed is always said, in one note format, with how to get the rest.

Two shapes, used wherever a tool result is bounded (the worker, the stored copy, the model's view):

* **head** (:func:`keep_head`) for what is read top-down — file content, listings, search results, diffs:
  the beginning is kept and a note at the end says how many characters (and lines) are not shown and,
  when the caller knows one, how to get them (``call read_file with start_line=413``);
* **head and tail** (:func:`keep_head_and_tail`) for process output, whose end (the summary, the error) matters
  as much as its beginning: a note in the middle says how many characters (and lines) were elided.

Lines are counted as newline characters, so a cut at a line boundary elides exactly that many whole
lines. A text cut again (the stored copy of a worker's already cut output, then the model's view of it)
never loses count: a note found inside the removed part has its counts added to the new note, so the
number a model reads is the total over every cut. (A program that prints text looking like a note
inflates that count; it cannot hide anything.)
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "elided_note",
    "keep_head",
    "keep_head_and_tail",
    "line_count",
    "more_note",
    "removed_counts",
]

_NOTE_ROOM: Final = 160
"""Characters set aside for a note (its fixed text and two large numbers)."""

_AFTER_CUT_LINE: Final = "; the line above was cut short"
_NOTE: Final = re.compile(
    r"\[codeflux: ([\d,]+) (?:more )?characters \(([\d,]+) lines?\) (?:elided|not shown)[^\]\n]*\]\n?"
)


def line_count(text: str) -> int:
    """Lines in ``text``: its newlines, plus one for a last line without one."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def elided_note(characters: int, lines: int, *, after_cut_line: bool = False) -> str:
    """The note that stands where the middle of a text was cut out (no newline). ``after_cut_line``: the
    text before it ends mid-line, so a newline was put before the note (the note says so, and a later cut
    that removes the note does not count that newline as the text's)."""
    cut = _AFTER_CUT_LINE if after_cut_line else ""
    return f"[codeflux: {characters:,} characters ({_plural(lines, 'line')}) elided{cut}]"



def more_note(characters: int, lines: int, hint: str = "", *, after_cut_line: bool = False) -> str:
    """The note that ends a text whose rest is not shown, with ``hint`` saying how to get it (no newline);
    ``after_cut_line`` as for :func:`elided_note`."""
    tail = (_AFTER_CUT_LINE if after_cut_line else "") + (f"; {hint}" if hint else "")
    return f"[codeflux: {characters:,} more characters ({_plural(lines, 'line')}) not shown{tail}]"


def removed_counts(removed: str, *, lines: int) -> tuple[int, int]:
    """(characters, lines) of the original text that ``removed`` stands for: its own, with every earlier
    note inside it replaced by the counts it carries. ``lines`` is how many lines ``removed`` itself counts
    as (the caller knows whether it ends mid-line)."""
    characters = len(removed)
    for found in _NOTE.finditer(removed):
        characters += int(found.group(1).replace(",", "")) - len(found.group(0))
        lines += int(found.group(2).replace(",", "")) - found.group(0).count("\n")
        if _AFTER_CUT_LINE in found.group(0) and removed[found.start() - 1 : found.start()] == "\n":
            characters -= 1  # the newline put before the note is not the text's
            lines -= 1
    return characters, lines


def keep_head(text: str, limit: int, *, hint: str = "") -> tuple[str, bool]:
    """``text`` if it has at most ``limit`` characters; else its head, cut after a whole line when one ends
    in the second half of the room, then a :func:`more_note` — at most ``limit`` characters in all (for a
    ``limit`` above the note's size). Returns the text and whether it was cut."""
    if len(text) <= limit:
        return text, False
    room = max(limit - _NOTE_ROOM - len(hint), 0)
    head = text[:room]
    newline = head.rfind("\n")
    if newline >= room // 2:
        head = head[: newline + 1]
    removed = text[len(head):]
    characters, lines = removed_counts(removed, lines=line_count(removed))
    separator = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{separator}{more_note(characters, lines, hint, after_cut_line=bool(separator))}\n", True


def keep_head_and_tail(text: str, limit: int) -> tuple[str, bool]:
    """``text`` if it has at most ``limit`` characters; else about two fifths of the room from its head and
    three fifths from its tail (each cut at a line boundary when one is near) around an :func:`elided_note`
    — at most ``limit`` characters in all. Returns the text and whether it was cut."""
    if len(text) <= limit:
        return text, False
    room = max(limit - _NOTE_ROOM, 0)
    head_room = room * 2 // 5
    tail_room = room - head_room
    head = text[:head_room]
    newline = head.rfind("\n")
    if newline >= head_room // 2:
        head = head[: newline + 1]
    tail_start = len(text) - tail_room
    newline = text.find("\n", tail_start)
    if newline != -1 and newline - tail_start < tail_room // 2:
        tail_start = newline + 1
    middle = text[len(head):tail_start]
    # The middle ends at a line start (or mid-line, when no newline was near): it holds its newlines' lines.
    characters, lines = removed_counts(middle, lines=middle.count("\n"))
    separator = "" if not head or head.endswith("\n") else "\n"
    note = elided_note(characters, lines, after_cut_line=bool(separator))
    return f"{head}{separator}{note}\n{text[tail_start:]}", True
