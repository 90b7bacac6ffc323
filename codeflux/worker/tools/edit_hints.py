"""What ``edit_file`` says when ``old_text`` does not occur exactly once: what was nearby.

* **Several matches**: each one's line numbers (and the line it starts on), so more context can be added.
* **Whitespace only**: ``old_text`` occurs once the whitespace is ignored — the lines it matches, shown
  numbered, and which kind of whitespace differs (indentation width, tabs versus spaces, trailing
  blanks, CRLF line endings, spacing inside lines).
* **Did you mean**: otherwise the most similar region of the file (same number of lines, give or take
  one; ``difflib`` similarity of at least :data:`_SIMILAR_ENOUGH`), numbered, with its first differing
  line. The search is bounded: candidate regions are anchored on lines ``old_text`` shares with the file,
  or every region of a small file.

Each hint is a :class:`EditHint`: one safe summary line for the failure message (no file text), and
the detail (numbered file lines) that goes to the model as the result's content.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Final

from codeflux.worker.tools.lines import cut_line, line_at, numbered, split_lines

__all__ = ["EditHint", "ambiguous_match_hint", "no_match_hint"]

_SIMILAR_ENOUGH: Final = 0.6
_MAX_CANDIDATES: Final = 400
_FULL_SCAN: Final = 30_000
"""A file whose lines × old_text's lines stay under this has every region compared; a larger one only the
regions anchored on a line old_text shares with it (at most :data:`_MAX_CANDIDATES`)."""
_MAX_LISTED: Final = 20
_SHOWN_LINE: Final = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class EditHint:
    summary: str
    """One line for the failure message: no file text."""
    detail: str
    """Numbered file lines and explanations, for the model."""


def ambiguous_match_hint(text: str, old_text: str, starts: list[int]) -> EditHint:
    """``old_text`` starts at each offset in ``starts``: list where, so the model can add context."""
    lines = split_lines(text)
    numbers = [line_at(text, start) for start in starts]
    span = old_text.count("\n") - (1 if old_text.endswith("\n") else 0)
    listed = ", ".join(str(number) if not span else f"{number}–{number + span}" for number in numbers[:_MAX_LISTED])
    more = f" and {len(numbers) - _MAX_LISTED} more" if len(numbers) > _MAX_LISTED else ""
    detail = [f"old_text occurs {len(numbers)} times; each match begins on the line shown:"]
    for number in numbers[:_MAX_LISTED]:
        detail.append(numbered(number, cut_line(lines[number - 1], _SHOWN_LINE)).rstrip("\n"))
    detail.append("Include lines before or after the change in old_text so that it occurs exactly once.")
    return EditHint(summary=f"old_text occurs {len(numbers)} times (lines {listed}{more}); include more "
                            "surrounding lines so it occurs once",
                    detail="\n".join(detail) + "\n")


def no_match_hint(text: str, old_text: str) -> EditHint:
    """``old_text`` does not occur in ``text``: the region it matches but for whitespace, or the closest one."""
    lines = split_lines(text)
    spaced = _whitespace_match(text, old_text)
    if spaced is not None:
        first, last, count = spaced
        kinds = _whitespace_differences(lines[first - 1 : last], split_lines(old_text))
        region = "".join(numbered(number, lines[number - 1]) for number in range(first, last + 1))
        again = f" (it does so {count} times; this is the first)" if count > 1 else ""
        return EditHint(
            summary=f"old_text does not occur exactly, but matches {_span(first, last)} except for whitespace "
                    f"({kinds})",
            detail=(f"old_text matches {_span(first, last)} if whitespace is ignored{again}; it differs in: {kinds}.\n"
                    f"The file has (line number, a tab, then the line exactly):\n{region}"
                    "Copy these lines exactly (the text after each tab) into old_text.\n"),
        )
    closest = _closest_region(lines, split_lines(old_text))
    if closest is None:
        return EditHint(summary="old_text does not occur in the file and nothing similar was found",
                        detail="old_text does not occur in the file and no similar region was found. "
                               "Read the file (read_file) or search it (grep) and copy the text exactly.\n")
    first, last, ratio = closest
    region = "".join(numbered(number, lines[number - 1]) for number in range(first, last + 1))
    difference = _first_difference(lines[first - 1 : last], split_lines(old_text), first)
    return EditHint(
        summary=f"old_text does not occur in the file; the most similar text is {_span(first, last)} "
                f"({round(ratio * 100)}% similar)",
        detail=(f"old_text does not occur in the file. Did you mean {_span(first, last)} "
                f"({round(ratio * 100)}% similar)?\n{region}{difference}"
                "Copy the text exactly as the file has it (the text after each tab) into old_text.\n"),
    )


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}–{last}"


def _whitespace_match(text: str, old_text: str) -> tuple[int, int, int] | None:
    """(first line, last line, matches) of ``old_text`` in ``text`` with all whitespace ignored; None if none."""
    wanted = "".join(old_text.split())
    if not wanted:
        return None
    kept: list[str] = []
    offsets: list[int] = []
    for offset, character in enumerate(text):
        if not character.isspace():
            kept.append(character)
            offsets.append(offset)
    squeezed = "".join(kept)
    found = squeezed.find(wanted)
    if found == -1:
        return None
    count = squeezed.count(wanted)
    return line_at(text, offsets[found]), line_at(text, offsets[found + len(wanted) - 1]), count


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _whitespace_differences(found: list[str], wanted: list[str]) -> str:
    """Which kinds of whitespace differ between the file's lines and ``old_text``'s (in words)."""
    kinds: list[str] = []
    if any(line.endswith("\r") for line in found) and not any(line.endswith("\r") for line in wanted):
        kinds.append("line endings (the file has CRLF)")
    have = [line.removesuffix("\r") for line in found]
    want = [line.removesuffix("\r") for line in wanted]
    have_text = [line for line in have if line.strip()]
    want_text = [line for line in want if line.strip()]
    if len(have_text) != len(want_text):
        kinds.append("where the lines break")
    else:
        pairs = list(zip(have_text, want_text, strict=True))
        whole = [(a, b) for a, b in pairs if "".join(a.split()) == "".join(b.split())]  # not a fragment of a line
        if any(("\t" in _indent(a)) != ("\t" in _indent(b)) for a, b in whole):
            kinds.append("tabs versus spaces in the indentation")
        elif any(_indent(a) != _indent(b) for a, b in whole):
            a, b = next((a, b) for a, b in whole if _indent(a) != _indent(b))
            kinds.append(f"indentation (a line the file indents by {len(_indent(a))} characters is indented by "
                         f"{len(_indent(b))} in old_text)")
        if any(a[len(a.rstrip()):] != b[len(b.rstrip()):] for a, b in whole):
            kinds.append("trailing whitespace")
        if any(a.strip() != b.strip() for a, b in pairs):
            kinds.append("spacing inside lines")
    if len(have) - len(have_text) != len(want) - len(want_text) and "where the lines break" not in kinds:
        kinds.append("blank lines")
    return ", ".join(kinds) or "whitespace"


def _closest_region(lines: list[str], wanted: list[str]) -> tuple[int, int, float] | None:
    """(first line, last line, similarity) of the region most like ``wanted``; None below the threshold."""
    if not lines or not wanted:
        return None
    target = "\n".join(line.strip() for line in wanted)
    best: tuple[float, int, int] | None = None
    for start, size in _candidates(lines, wanted):
        block = "\n".join(line.strip() for line in lines[start : start + size])
        matcher = difflib.SequenceMatcher(None, target, block, autojunk=False)
        if matcher.real_quick_ratio() < _SIMILAR_ENOUGH or matcher.quick_ratio() < _SIMILAR_ENOUGH:
            continue
        ratio = matcher.ratio()
        if ratio >= _SIMILAR_ENOUGH and (best is None or ratio > best[0]):
            best = (ratio, start, size)
    if best is None:
        return None
    ratio, start, size = best
    return start + 1, start + size, ratio


def _candidates(lines: list[str], wanted: list[str]) -> list[tuple[int, int]]:
    """(0-based start, line count) of the regions worth comparing with ``wanted``."""
    sizes = sorted({max(len(wanted) + delta, 1) for delta in (0, -1, 1)}, key=lambda size: abs(size - len(wanted)))
    starts: list[int]
    if len(lines) * len(wanted) <= _FULL_SCAN:
        starts = list(range(len(lines)))
    else:
        anchors = {line.strip(): index for index, line in enumerate(wanted) if len(line.strip()) >= 4}
        found: dict[int, None] = {}
        for number, line in enumerate(lines):
            index = anchors.get(line.strip())
            if index is not None:
                found[max(number - index, 0)] = None
        starts = list(found)[:_MAX_CANDIDATES]
    return [(start, size) for start in starts for size in sizes if start + size <= len(lines)]


def _first_difference(found: list[str], wanted: list[str], first: int) -> str:
    """The first line where the region and ``old_text`` differ, both shown (cut to a readable length)."""
    for offset, (have, want) in enumerate(zip(found, wanted, strict=False)):
        if have != want:
            return (f"First difference, at line {first + offset}:\n  the file has: {cut_line(have, _SHOWN_LINE)!r}\n"
                    f"  old_text has: {cut_line(want, _SHOWN_LINE)!r}\n")
    if len(found) != len(wanted):
        return f"The region has {len(found)} lines; old_text has {len(wanted)}.\n"
    return ""
