"""An upper estimate of the input tokens a text costs, without a tokenizer.

The budget reserves before each paid call (ARCHITECTURE §9), so it needs a bound on the call's input
tokens before the provider counts them. Real tokenizers are not available offline (tiktoken downloads
its vocabulary at first use; Anthropic publishes no tokenizer for its current models), so this is a
*calibrated bound*: the text is cut into pieces the way byte-pair tokenizers pre-split it (runs of ASCII
letters, digits, punctuation, spaces, line breaks; long base64/hex-looking runs; characters of other
scripts), and each kind of piece is charged a cost that, summed, stays at or above the token count of the
tokenizers measured and within 1.5× of it on the calibration set.

Where the constants come from: token counts of OpenAI's ``o200k_base`` and ``cl100k_base`` encodings
(npm ``gpt-tokenizer`` 4.0.0) and of Anthropic's published Claude tokenizer (npm
``@anthropic-ai/tokenizer`` 0.0.4), run offline on 2026-12-03 over this repository's own model inputs —
the loop's and the planner's system prompts and tool schemas, every source, test and docs file in
24 000-character slices (what a coding run reads into its conversation) — plus prose in eleven other
languages, emoji, and random base64, hex and digits: 532 texts, 4.8 MB. The larger of the three counts
is the target; the costs were fitted by linear programming so that every text is estimated at 1.1× its
target or more (headroom for tokenizers that count more than the ones measured: current Claude models
do) and as little above as can be: at most 1.45× on prose, code, schemas and the other scripts, 1.34×
over the whole set. Escaped binary (protobuf descriptors, JSON with escaped characters) comes out up to
1.65×. ``tests/fixtures/token_calibration.json`` keeps a sample of the set with its measured counts,
and ``tests/unit/domain/test_token_estimate.py`` holds the estimate to 1.0×–1.5× on it.

A provider that reports more than the bound is still charged in full (the excess is recorded as an
overrun): the estimate sizes the reservation, the provider's count is the charge.

Characters of a script outside the calibration (emoji, control characters, other planes) are charged
their UTF-8 bytes: no tokenizer spends more than one token per byte. The estimate is monotone (appending
text never lowers it: every piece's cost grows as the piece grows, and a long run is classified by its
head alone) and is never below a quarter of the text's ASCII bytes — both providers' rule of thumb of
about four characters per token of English (on the calibration set the pieces' costs are above it).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["estimate_text_tokens"]

# Costs in sixtieths of a token (integers: the estimate is exact and the same on every machine), fitted
# by linear programming to the calibration set: every text at least 1.1× its highest measured count
# (headroom for tokenizers that count more than the ones measured), as little above that as can be.
_UNIT: Final = 60
_WORD: Final = 84  # a run of ASCII letters (a leading single space joins it for free) …
_LONG_LETTER: Final = 16  # … plus this per letter past the tenth (long identifiers split)
_DIGIT_RUN: Final = 166
_DIGIT: Final = 16  # tokenizers group at most three digits
_PUNCT_RUN: Final = 15
_PUNCT: Final = 35  # ASCII punctuation: many pairs merge ("):", "==", "()")
_SPACE_RUN: Final = 151  # two or more spaces/tabs (indentation) …
_SPACE: Final = 11  # … plus this per space in such a run
_NEWLINE_RUN: Final = 18
_ENCODED: Final = 50  # per character of a long run mixing letters and digits (base64, hex, keys) …
_HEX: Final = 40  # … or this when they are hex digits only (digests, ids)
_ENCODED_HEAD: Final = 16  # … past its first 16 characters
_SCRIPT_COSTS: Final = (  # (first code point, end, cost per character) for the scripts calibrated
    (0x80, 0x370, 159),  # Latin-1 and Latin Extended (accents split the word they sit in)
    (0x370, 0x400, 90),  # Greek
    (0x400, 0x530, 36),  # Cyrillic
    (0x590, 0x800, 79),  # Hebrew, Arabic, Syriac, Thaana
    (0x900, 0xE00, 90),  # Indic scripts
    (0x2000, 0x2C00, 47),  # general punctuation, arrows, math and other symbols (— → ≤ ×)
    (0x3000, 0xA000, 71),  # CJK, kana, CJK punctuation
    (0xAC00, 0xD7B0, 79),  # Hangul syllables
)
_FLOOR_DIVISOR: Final = 4  # never below one token per 4 bytes of ASCII text

_PIECE: Final = re.compile(
    r"(?P<encoded>[A-Za-z0-9+/_-]{17,})"
    r"|(?P<word>[A-Za-z]+)"
    r"|(?P<digits>[0-9]+)"
    r"|(?P<spaces>[ \t]{2,})"  # a single space or tab costs nothing: it joins the next piece
    r"|(?P<newlines>[\r\n]+)"
    r"|(?P<punct>[!-/:-@\[-`{-~]+)"
    r"|(?P<other>[^\x00-\x7f]+|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+)"
)
_PARTS: Final = re.compile(r"(?P<word>[A-Za-z]+)|(?P<digits>[0-9]+)|(?P<punct>[^A-Za-z0-9]+)")
_HAS_DIGIT: Final = re.compile(r"[0-9]")
_HAS_LETTER: Final = re.compile(r"[A-Za-z]")
_HEX_RUN: Final = re.compile(r"[0-9a-f]+|[0-9A-F]+")


def estimate_text_tokens(text: str) -> int:
    """An upper estimate of the tokens ``text`` costs as model input (see the module docstring)."""
    if not text:
        return 0
    cost = 0
    beyond_ascii = 0
    for match in _PIECE.finditer(text):
        kind = match.lastgroup
        size = match.end() - match.start()
        if kind == "word":
            cost += _WORD + _LONG_LETTER * max(0, size - 10)
        elif kind == "punct":
            cost += _PUNCT_RUN + _PUNCT * size
        elif kind == "newlines":
            cost += _NEWLINE_RUN
        elif kind == "spaces":
            cost += _SPACE_RUN + _SPACE * size
        elif kind == "digits":
            cost += _DIGIT_RUN + _DIGIT * size
        elif kind == "encoded":
            cost += _encoded_cost(match.group())
        else:
            piece = match.group()
            cost += _other_cost(piece)
            if not piece.isascii():
                beyond_ascii += size
    estimate = -(-cost // _UNIT)
    return max(estimate, -(-(len(text) - beyond_ascii) // _FLOOR_DIVISOR))


def _ordinary_cost(kind: str | None, size: int) -> int:
    if kind == "word":
        return _WORD + _LONG_LETTER * max(0, size - 10)
    if kind == "digits":
        return _DIGIT_RUN + _DIGIT * size
    return _PUNCT_RUN + _PUNCT * size


def _encoded_cost(piece: str) -> int:
    """A run of more than 16 base64/hex/identifier characters: its first 16 as the words, digits and
    punctuation they are; the rest at the encoded rate when those 16 mix letters and digits (a hash, a
    key, a blob), else as ordinary text. Decided by the head alone, so a growing run never costs less."""
    head = piece[:_ENCODED_HEAD]
    cost = _parts_cost(head)
    if _HAS_DIGIT.search(head) and _HAS_LETTER.search(head):
        rate = _HEX if _HEX_RUN.fullmatch(head) else _ENCODED
        return cost + rate * (len(piece) - _ENCODED_HEAD)
    return _parts_cost(piece)


def _parts_cost(run: str) -> int:
    return sum(_ordinary_cost(part.lastgroup, part.end() - part.start()) for part in _PARTS.finditer(run))


def _other_cost(piece: str) -> int:
    """Characters beyond ASCII: the calibrated cost of their script, else their UTF-8 bytes."""
    cost = 0
    for char in piece:
        point = ord(char)
        for first, end, each in _SCRIPT_COSTS:
            if first <= point < end:
                cost += each
                break
        else:
            cost += _UNIT * len(char.encode("utf-8", "surrogatepass"))
    return cost
