"""Text from a tool request as a person is shown it: hidden and layout-changing characters escaped, a backslash
doubled, and nothing else touched — so the display is free of such characters and tells any two texts apart."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codeflux.domain.display import escape_for_display, needs_display_escape

HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}
_ESCAPE = re.compile(r"\\(?:\\|u([0-9a-f]{4})|U([0-9a-f]{8}))")

# Every code point, surrogates included (a Python str may hold a lone surrogate from surrogateescape).
any_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


def read_display(shown: str) -> str:
    """The inverse of the display rule, as a reader applies it: ``\\\\`` is a backslash, ``\\uXXXX`` and
    ``\\UXXXXXXXX`` a code point, any other backslash is malformed."""
    out, at = [], 0
    for found in _ESCAPE.finditer(shown):
        plain = shown[at:found.start()]
        if "\\" in plain:
            raise ValueError(f"a backslash that starts no escape at {at}")
        out.append(plain)
        code = found.group(1) or found.group(2)
        out.append("\\" if code is None else chr(int(code, 16)))
        at = found.end()
    if "\\" in shown[at:]:
        raise ValueError("a backslash that starts no escape at the end")
    out.append(shown[at:])
    return "".join(out)


@pytest.mark.parametrize(("text", "shown"), [
    ("invoice\u202etxt.exe", "invoice\\u202etxt.exe"),  # RIGHT-TO-LEFT OVERRIDE
    ("a\u2066b\u2069", "a\\u2066b\\u2069"),  # LEFT-TO-RIGHT ISOLATE … POP DIRECTIONAL ISOLATE
    ("rm\u200b-rf", "rm\\u200b-rf"),  # ZERO WIDTH SPACE
    ("\ufeffx\u2060", "\\ufeffx\\u2060"),  # BOM, WORD JOINER
    ("tab\there\nnext\r", "tab\\u0009here\\u000anext\\u000d"),
    ("\x00\x1b[2J\x7f\x85\x9f", "\\u0000\\u001b[2J\\u007f\\u0085\\u009f"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("no\u00a0break ok", "no\\u00a0break ok"),  # NO-BREAK SPACE escaped, the ASCII space kept
    ("tag\U000e0041", "tag\\U000e0041"),  # TAG LATIN CAPITAL LETTER A (Cf, above U+FFFF)
    ("lone\udc80", "lone\\udc80"),
    ("C:\\temp\\u202e", "C:\\\\temp\\\\u202e"),  # a real backslash-u is not an escape
    ("python3 -m pytest -q", "python3 -m pytest -q"),
    ("naïve 日本語 émoji 🙂", "naïve 日本語 émoji 🙂"),
])
def test_hidden_characters_are_escaped_and_visible_text_is_kept(text: str, shown: str) -> None:
    assert escape_for_display(text) == shown


@given(any_text)
@example("\u202e")
@example("\\u202e")
def test_the_display_holds_no_control_format_or_separator_character_but_the_space(text: str) -> None:
    shown = escape_for_display(text)

    assert all(unicodedata.category(c) not in HIDDEN_CATEGORIES or c == " " for c in shown)
    assert not any(needs_display_escape(c) for c in shown)


@given(any_text)
@example("\\u202e")
@example("\\\\u202e")
@example("\\")
def test_reading_the_display_gives_back_the_text_so_two_texts_never_look_alike(text: str) -> None:
    assert read_display(escape_for_display(text)) == text


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="\\")))
def test_printable_ascii_without_a_backslash_is_shown_as_it_is(text: str) -> None:
    assert escape_for_display(text) == text


@given(any_text.filter(lambda t: "\\" not in t and not any(needs_display_escape(c) for c in t)))
def test_text_with_nothing_to_escape_is_shown_as_it_is(text: str) -> None:
    assert escape_for_display(text) == text
