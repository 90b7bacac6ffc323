"""Lines as the file tools show them: split on ``\\n`` only, numbered from 1, long lines cut visibly.

``read_file``, ``grep`` and ``edit_file``'s hints number lines the same way (as ``sed -n``, editors and
``grep -n`` do), so a line number one of them shows is the line another one means.
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.tools import READ_MAX_LINE_CHARS

__all__ = ["MAX_LINE_CHARS", "cut_line", "line_at", "numbered", "split_lines"]

MAX_LINE_CHARS: Final = READ_MAX_LINE_CHARS
"""Characters of one line ``read_file`` shows; the rest of a longer line is replaced by a note."""


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their ``\\n``; a final newline ends the last line (it starts none)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def cut_line(line: str, limit: int) -> str:
    """``line`` itself, or its first ``limit`` characters and a note saying how many more there are."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [codeflux: line cut, {len(line) - limit:,} more characters]"


def numbered(number: int, line: str) -> str:
    """One shown line, ``cat -n`` style: the number right-aligned in six columns, a tab, the text."""
    return f"{number:>6}\t{cut_line(line.removesuffix(chr(13)), MAX_LINE_CHARS)}\n"


def line_at(text: str, offset: int) -> int:
    """The 1-based number of the line holding character ``offset`` of ``text``."""
    return text.count("\n", 0, offset) + 1
