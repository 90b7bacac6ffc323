"""The one redaction pipeline: exact loaded secrets plus known key patterns, whole or streamed.

Every boundary that lets text out of the coordinator (logs, UI delivery, stored tool output, prompts,
diagnostics) passes it through a :class:`Redactor`; text that arrives in pieces goes through a
:class:`StreamRedactor` so that a secret split across chunks is still caught.

A hidden span becomes the constant ``[REDACTED]``, which tells nothing about the value's length.
Overlapping matches (two loaded secrets that share characters, a key inside an ``api_key=`` value) are
merged and hidden as one span, so no fragment of either survives.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import regex

from codeflux.redact.patterns import KEY_PATTERNS, PATTERN_LOOKBACK, SecretKind

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "StreamRedactor",
    "default_redactor",
    "redact",
    "scan_for_secrets",
]

REDACTED = "[REDACTED]"

MIN_SECRET_LENGTH = 8
"""Loaded values shorter than this are not matched exactly.

A short value (a PIN, ``true``, a 3-letter password) occurs by chance in ordinary text: hiding every
occurrence would garble output, and the pattern of what disappeared would itself point at the value.
Provider keys are far longer; short values are still caught by the ``password=…`` style patterns.
"""

# Enough passes for any real text; it bounds the work if a loaded value overlaps the marker itself.
_MAX_PASSES = 8


@dataclass(frozen=True, slots=True)
class _Span:
    """A match: ``start``/``end`` is what gets hidden, ``hold_start``/``hold_end`` the whole match."""

    hold_start: int
    hold_end: int
    start: int
    end: int


class _SecretSet:
    """An immutable snapshot of the loaded secrets, compiled once per change."""

    __slots__ = ("longest", "partial", "regex")

    def __init__(self, values: frozenset[str]) -> None:
        ordered = sorted(values, key=lambda value: (-len(value), value))
        self.longest = len(ordered[0]) if ordered else 0
        # A zero-width look-ahead finds every occurrence, overlapping ones included; with the
        # alternatives longest first, each position reports the longest secret that starts there.
        self.regex = re.compile("(?=(" + "|".join(re.escape(value) for value in ordered) + "))") if ordered else None
        # Where one of them could begin in text that is still arriving (see StreamRedactor).
        self.partial = regex.compile("|".join(regex.escape(value) for value in ordered)) if ordered else None

    def spans(self, text: str) -> list[_Span]:
        if self.regex is None:
            return []
        found = []
        for match in self.regex.finditer(text):
            start, end = match.span(1)
            found.append(_Span(start, end, start, end))
        return found


class Redactor:
    """Hides loaded secrets (exactly, longest first) and known key shapes in text.

    Thread-safe: secrets may be added while other threads redact; each call sees a consistent set.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._secrets = _SecretSet(self._values)

    def add_secret(self, value: str) -> None:
        """Hide every later occurrence of ``value``; values shorter than :data:`MIN_SECRET_LENGTH`,
        blank values and values that occur inside the marker ``[REDACTED]`` are ignored (see there)."""
        if len(value) < MIN_SECRET_LENGTH or not value.strip() or value in REDACTED:
            return
        with self._lock:
            if value in self._values:
                return
            self._values = self._values | {value}
            self._secrets = _SecretSet(self._values)

    @property
    def longest_secret_length(self) -> int:
        """Length of the longest loaded secret (0 if none); the streamer holds back one less."""
        return self._secrets.longest

    def redact(self, text: str) -> str:
        """``text`` with every loaded secret and every known key shape replaced by ``[REDACTED]``.

        Idempotent: redacting the result again changes nothing.
        """
        secrets = self._secrets
        for _ in range(_MAX_PASSES):
            redacted = _replace(text, _merge(_find_spans(text, secrets, guarded=True)))
            if redacted == text:
                break
            text = redacted
        return text

    def scan(self, text: str) -> list[SecretKind]:
        """The kinds of secret present in ``text``, sorted, each once; never the values."""
        kinds: set[SecretKind] = set()
        if self._secrets.spans(text):
            kinds.add(SecretKind.LOADED_SECRET)
        kinds.update(pattern.kind for pattern in KEY_PATTERNS if pattern.regex.search(text))
        return sorted(kinds)

    def _hold_spans(self, text: str) -> list[_Span]:
        return _find_spans(text, self._secrets, guarded=False)

    def _undecided_from(self, text: str) -> int:
        """Where the part of ``text`` begins that could still become a secret once more text arrives (a loaded
        secret's or a pattern's match begun but not complete); ``len(text)`` when no part could."""
        secrets = self._secrets
        base = max(0, len(text) - max(secrets.longest - 1, PATTERN_LOOKBACK))
        tail = text[base:]
        earliest = len(tail)
        partials = [pattern.partial for pattern in KEY_PATTERNS]
        if secrets.partial is not None:
            partials.append(secrets.partial)
        for pattern in partials:
            for match in pattern.finditer(tail, partial=True, overlapped=True):
                if match.start() >= earliest:
                    break
                if match.partial:
                    earliest = match.start()
                    break
        return base + earliest


class StreamRedactor:
    """Redacts text that arrives in chunks, so a secret split across chunks is still caught.

    :meth:`feed` returns the part of the stream that is safe to release. It holds back only what could still
    become a secret: from where a loaded secret or a key pattern could begin a match that more text would
    complete (``regex``'s partial matching over the unguarded bodies, within the last
    ``max(longest loaded secret - 1, PATTERN_LOOKBACK)`` characters — an undecided match is never longer), and
    any match still open at the end (a key still arriving, a private key block whose END line has not come
    yet). Ordinary output is released as it arrives, so a running command's tail is visible at once; text
    that could begin a secret waits for the next chunk or :meth:`flush`.
    Call :meth:`flush` once at the end of the stream; text fed after it starts a new stream.
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor if redactor is not None else default_redactor()
        self._pending = ""

    def feed(self, chunk: str) -> str:
        """Add ``chunk``; return the redacted text that can now be released (possibly empty)."""
        self._pending += chunk
        cut = self._safe_cut()
        if cut <= 0:
            return ""
        released, self._pending = self._pending[:cut], self._pending[cut:]
        return self._redactor.redact(released)

    def flush(self) -> str:
        """End the stream: return the rest of the text, redacted."""
        released, self._pending = self._pending, ""
        return self._redactor.redact(released)

    def _safe_cut(self) -> int:
        text = self._pending
        cut = self._redactor._undecided_from(text)
        if cut <= 0:
            return 0
        whole = self._redactor._hold_spans(text)
        while cut > 0:
            moved = _cut_before_spans(cut, whole)
            # Cutting can itself create a match at the end of the released part (a value truncated
            # just before the `[REDACTED]` it was, a key prefix that was too short in full); back off.
            moved = _cut_before_spans(moved, self._redactor._hold_spans(text[:moved]), touching_only=True)
            if moved == cut:
                break
            cut = moved
        return max(cut, 0)


def _cut_before_spans(cut: int, spans: list[_Span], *, touching_only: bool = False) -> int:
    """Move ``cut`` to just before every match it would split, start at, or (``touching_only``) end at.

    Stopping one character before a match keeps the character its look-behind guard needs in the
    part still to come, so the later part is judged in context. Matches do not overlap much, so
    sweeping until nothing moves settles quickly; the cut only ever moves left.
    """
    moved = True
    while moved and cut > 0:
        moved = False
        for span in spans:
            hit = span.hold_end == cut if touching_only else span.hold_start <= cut < span.hold_end
            if hit and span.hold_start - 1 < cut:
                cut = span.hold_start - 1
                moved = True
    return cut


def _find_spans(text: str, secrets: _SecretSet, *, guarded: bool) -> list[_Span]:
    spans = secrets.spans(text)
    for pattern in KEY_PATTERNS:
        regex = pattern.regex if guarded else pattern.unguarded
        for match in regex.finditer(text):
            start, end = match.span("secret")
            if end > start:
                spans.append(_Span(match.start(), match.end(), start, end))
    return spans


def _merge(spans: list[_Span]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and span.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], span.end))
        else:
            merged.append((span.start, span.end))
    return merged


def _replace(text: str, intervals: list[tuple[int, int]]) -> str:
    if not intervals:
        return text
    parts: list[str] = []
    position = 0
    for start, end in intervals:
        parts.append(text[position:start])
        parts.append(REDACTED)
        position = end
    parts.append(text[position:])
    return "".join(parts)


_DEFAULT_REDACTOR = Redactor()


def default_redactor() -> Redactor:
    """The process-wide redactor: every loaded credential is registered here and every boundary uses it."""
    return _DEFAULT_REDACTOR


def redact(text: str) -> str:
    """``text`` redacted by the process-wide redactor."""
    return _DEFAULT_REDACTOR.redact(text)


def scan_for_secrets(text: str, *, redactor: Redactor | None = None) -> list[str]:
    """The kinds of secret found in ``text`` (e.g. ``["anthropic-api-key"]``), never the values.

    Uses the process-wide redactor unless one is given, so keys loaded in this process count too.
    """
    chosen = redactor if redactor is not None else _DEFAULT_REDACTOR
    return [kind.value for kind in chosen.scan(text)]
