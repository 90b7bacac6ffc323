"""Text from a tool request as a person is shown it: every character that hides or rearranges what is
there is written as an escape, so what a card shows is what would run.

The rule (the web client's ``escapeForDisplay`` in ``codeflux/server/static/format.js`` is the same):

* A backslash is shown as ``\\\\`` (two backslashes). Without this a real argument holding the six
  characters ``\\u202e`` would look exactly like one holding U+202E; with it the display is unambiguous
  (:func:`escape_for_display` is injective).
* Each of these code points is shown as ``\\u`` and four lowercase hex digits (``\\u202e``), or, above
  U+FFFF, ``\\U`` and eight (``\\U000e0041``):

  - every "other" character (general category C): controls (Cc: U+0000–U+001F, including tab and
    newline, and U+007F–U+009F), format characters (Cf: the bidi overrides and isolates U+202A–U+202E
    and U+2066–U+2069, the marks U+200E/U+200F and U+061C, the zero-width U+200B–U+200D, U+2060, U+FEFF,
    the tag characters U+E0001–U+E007F, …), surrogates (Cs), private use (Co) and unassigned code points
    (Cn, which a later Unicode version may make a format character);
  - line and paragraph separators (Zl, Zp) and every space separator except the ASCII space (Zs:
    U+00A0, U+2000–U+200A, U+3000, …), which look like a plain space or a line break.

  Tab and newline are escaped too: a card shows one argument per line, so a newline inside an argument
  would read as two arguments.
* Everything else is shown as it is.

Categories come from the running interpreter's :mod:`unicodedata` (the browser uses its own Unicode
tables; a code point assigned in one version and unassigned in the other is escaped by one side only).
"""

from __future__ import annotations

import json
import shlex
import unicodedata
from collections.abc import Sequence
from typing import Final

from codeflux.domain.tools import ArgumentValue

__all__ = ["SUMMARY_MAX_CHARS", "argument_display_text", "escape_for_display", "needs_display_escape",
           "operation_summary"]

SUMMARY_MAX_CHARS: Final = 160
"""How long :func:`operation_summary` may be (an ellipsis ends a longer one)."""

_ESCAPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})


def needs_display_escape(character: str) -> bool:
    """Whether ``character`` (one code point) is shown as an escape instead of as itself."""
    if character == " ":
        return False
    return unicodedata.category(character) in _ESCAPED_CATEGORIES


def _escaped(character: str) -> str:
    if character == "\\":
        return "\\\\"
    if not needs_display_escape(character):
        return character
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape_for_display(text: str) -> str:
    """``text`` with backslashes doubled and hidden or layout-changing characters escaped (module docstring)."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text  # the common case: plain ASCII, nothing to escape
    return "".join(_escaped(character) for character in text)


def argument_display_text(value: ArgumentValue) -> str:
    """One tool argument as text for people: text as is, an argv or a number as JSON (not yet escaped)."""
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    return json.dumps(value)


def operation_summary(arguments: Sequence[tuple[str, ArgumentValue]]) -> str:
    """A tool call in one line for a timeline row: a command's argv as a POSIX shell would read it, a file
    tool's path, else its first argument; escaped for display and cut at :data:`SUMMARY_MAX_CHARS`. The tool's
    name is shown beside it; the exact operation stays on the card (this is never what is approved)."""
    named = dict(arguments)
    argv, path = named.get("argv"), named.get("path")
    if isinstance(argv, tuple):
        text = shlex.join(str(item) for item in argv)
    elif isinstance(path, str):
        text = path
    elif arguments:
        text = argument_display_text(arguments[0][1])
    else:
        text = ""
    shown = escape_for_display(text)
    return shown if len(shown) <= SUMMARY_MAX_CHARS else shown[: SUMMARY_MAX_CHARS - 1] + "…"
