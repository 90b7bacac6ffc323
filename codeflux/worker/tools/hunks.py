"""Applying the hunks of one file section to that file's bytes, in memory.

A hunk is placed where its preimage (context and removed lines) matches the file exactly, byte for
byte — the header's line counts are never needed. The search starts at the header's new line number
and moves outward (one line after, one before, two after, …), so the nearest match wins and a stale
line number only costs a search. As in ``git apply``: a hunk whose old start is line 0 or 1 must match
at the beginning of the file, and one with no trailing context must match at its end (that is how a
diff says "here the file ends"). Hunks apply in order, each to the result of the ones before it.
Nothing is fuzzy: no whitespace is ignored and no context line is dropped — except empty lines that
end a recounted hunk, tried as blank context first and, if that finds no place, as a separator.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.worker.tools.unified_diff import Hunk

__all__ = ["apply_hunks", "split_lines"]


def apply_hunks(data: bytes, hunks: Sequence[Hunk], *, path: str) -> bytes:
    """``data`` with every hunk applied; ``patch-does-not-apply`` naming the first hunk that finds no place."""
    image = split_lines(data)
    after_previous = 0
    for number, hunk in enumerate(hunks, start=1):
        # A header without numbers is searched for from where the hunk before it ended.
        guess = hunk.new_start - 1 if hunk.new_start else (0 if hunk.new_start == 0 else after_previous)
        placed = _placed(image, hunk, guess=guess)
        if placed is None:
            where = f" (near line {hunk.old_start})" if hunk.old_start is not None else ""
            raise ToolFailedError(
                failure_kind=FailureKind.PATCH_DOES_NOT_APPLY,
                message=f"{path}: hunk {number}{where} does not match the file; read it again and rebuild the hunk",
            )
        position, fitting = placed
        image[position : position + len(fitting.preimage)] = fitting.postimage
        after_previous = position + len(fitting.postimage)
    return b"".join(image)


def _placed(image: Sequence[bytes], hunk: Hunk, *, guess: int) -> tuple[int, Hunk] | None:
    """Where ``hunk`` goes and the form of it that fits there (its trailing empty lines may be a separator)."""
    for form in (hunk, hunk.without_trailing_blanks):
        if form is None:
            continue
        position = _position(image, form, guess=guess)
        if position is not None:
            return position, form
    return None


def split_lines(data: bytes) -> list[bytes]:
    """``data`` cut after every ``\\n`` (only there: a ``\\r`` stays part of its line)."""
    lines = [line + b"\n" for line in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    if lines[-1] == b"":
        lines.pop()
    return lines


def _position(image: Sequence[bytes], hunk: Hunk, *, guess: int) -> int | None:
    preimage = hunk.preimage
    for candidate in _candidates(image_size=len(image), hunk=hunk, guess=guess):
        if not preimage or (image[candidate] == preimage[0]
                            and tuple(image[candidate : candidate + len(preimage)]) == preimage):
            return candidate
    return None


def _candidates(*, image_size: int, hunk: Hunk, guess: int) -> Iterator[int]:
    """Where the hunk may go: only an end of the file when it is anchored there, else nearest to ``guess``."""
    last = image_size - len(hunk.preimage)
    if last < 0:
        return
    at_beginning = hunk.old_start is not None and hunk.old_start <= 1
    at_end = hunk.trailing == 0
    if at_beginning and at_end:
        if last == 0:
            yield 0
        return
    if at_beginning or at_end:
        yield 0 if at_beginning else last
        return
    start = min(max(guess, 0), last)
    yield start
    for distance in range(1, max(start, last - start) + 1):
        if start + distance <= last:
            yield start + distance
        if start - distance >= 0:
            yield start - distance
