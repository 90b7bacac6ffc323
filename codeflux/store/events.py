"""The per-session event journal: contiguous sequences, typed payloads, committed before publication.

Appending happens inside the caller's transaction (one user-visible outcome = aggregate change + its
events + idempotency record). The session counter is bumped first and the event carries the new value;
SQL triggers refuse any other sequence, so the journal can't have gaps or duplicates.

Only registered payloads (:mod:`codeflux.domain.events`) are appended; the kind comes from the payload's
class. Reading decodes every row once through the registry, so callers get typed payloads (or, for a kind
this codeflux does not know, an :class:`~codeflux.domain.events.UnknownEvent` kept for display), never
JSON text.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Final

from codeflux.domain.errors import NotFoundError, UsageError
from codeflux.domain.events import DecodedEvent, EventPayload, UnknownEvent, decode_event
from codeflux.store.database import ReadView, Row, Transaction, now_us

__all__ = [
    "SYSTEM_SESSION_ID",
    "JournalEvent",
    "StoredEventColumns",
    "append_event",
    "events_of_kind",
    "find_journal_gaps",
    "latest_event",
    "read_events_after",
    "read_stored_event_columns_after",
    "read_stored_events_after",
    "session_head",
]

SYSTEM_SESSION_ID = "ses_system"
MAX_PAGE = 1000
MAX_COLUMN_PAGE = 8192


# what ``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` builds on every call, built once
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json_text(payload: Mapping[str, object]) -> str:
    return _CANONICAL.encode(dict(payload))


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEvent:
    """A committed event: its place in the session's journal and its decoded payload."""

    session_id: str
    sequence: int
    kind: str
    event: DecodedEvent
    created_at_us: int

    @property
    def payload(self) -> Mapping[str, object]:
        """The payload as the registry encodes it (as stored, for an :class:`UnknownEvent`)."""
        return self.event.to_payload()

    @property
    def payload_json(self) -> str:
        """The payload as canonical JSON text (sorted keys), for transports that forward it."""
        return _json_text(self.payload)


@dataclass(frozen=True, slots=True)
class StoredEventColumns:
    """A run of committed events of one session exactly as stored, column by column, payload texts not decoded (for
    a transport that forwards them: the registry encodes every stored shape back unchanged,
    tests/integration/test_captured_journal.py). Entry ``i`` of every column is the same event; empty when there
    was nothing to read."""

    session_id: str
    sequences: tuple[int, ...]
    kinds: tuple[str, ...]
    payloads_json: tuple[str, ...]
    created_at_us: tuple[int, ...]


def append_event(tx: Transaction, *, session_id: str, event: EventPayload) -> JournalEvent:
    """Append ``event`` to ``session_id``'s journal in the open transaction and return it."""
    if not isinstance(event, EventPayload):  # UnknownEvent and raw mappings are read-only
        raise UsageError(f"only registered event payloads are appended, not {type(event).__name__}")
    kind = event.KIND.value
    body = _json_text(event.to_payload())
    rows = tx.execute(
        "UPDATE sessions SET current_sequence = current_sequence + 1 WHERE id = ? RETURNING current_sequence",
        (session_id,),
    )
    if not rows:
        raise NotFoundError(kind="session", entity_id=session_id)
    sequence = int(rows[0][0])
    at = now_us()
    tx.execute(
        "INSERT INTO events (session_id, sequence, kind, payload_version, payload_json, created_at_us)"
        " VALUES (?, ?, ?, 1, ?, ?)",
        (session_id, sequence, kind, body, at),
    )
    return JournalEvent(session_id=session_id, sequence=sequence, kind=kind, event=event, created_at_us=at)


def _decoded(kind: str, payload_json: str) -> DecodedEvent:
    try:
        payload = json.loads(payload_json)
    except ValueError:
        return UnknownEvent(kind=kind, payload={"unparsed": payload_json[:4096]},
                            problem="the stored payload is not JSON")
    return decode_event(kind, payload)


def _journal_event(row: Row) -> JournalEvent:
    kind = str(row[2])
    return JournalEvent(session_id=str(row[0]), sequence=int(row[1]), kind=kind, event=_decoded(kind, str(row[3])),
                        created_at_us=int(row[4]))


def _rows_after(view: ReadView, session_id: str, after: int, through: int | None, limit: int) -> list[Row]:
    """Rows (session_id, sequence, kind, payload_json, created_at_us) in ``(after, through]``, oldest first."""
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"limit must be between 1 and {MAX_PAGE}")
    upper = through if through is not None else (1 << 62)
    return view.query_all(
        "SELECT session_id, sequence, kind, payload_json, created_at_us FROM events"
        " WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence LIMIT ?",
        (session_id, after, upper, limit),
    )


def read_events_after(view: ReadView, *, session_id: str, after_sequence: int, limit: int) -> list[JournalEvent]:
    """Committed events with ``sequence > after_sequence``, oldest first, at most ``limit``."""
    return [_journal_event(r) for r in _rows_after(view, session_id, after_sequence, None, limit)]


def session_head(view: ReadView, session_id: str) -> int | None:
    """The last committed sequence of ``session_id`` (0 before its first event); None if no such session."""
    row = view.query_one("SELECT current_sequence FROM sessions WHERE id = ?", (session_id,))
    return None if row is None else int(row[0])


def read_stored_events_after(
    view: ReadView, *, session_id: str, after_sequence: int, through_sequence: int | None = None, limit: int
) -> list[JournalEvent]:
    """Committed events in ``(after_sequence, through_sequence]`` (no upper bound when None), oldest first,
    at most ``limit``."""
    return [_journal_event(r) for r in _rows_after(view, session_id, after_sequence, through_sequence, limit)]


def read_stored_event_columns_after(
    view: ReadView, *, session_id: str, after_sequence: int, through_sequence: int | None = None, max_events: int,
    max_bytes: int, event_overhead: int = 0,
) -> StoredEventColumns:
    """Committed events in ``(after_sequence, through_sequence]`` (no upper bound when None), oldest first, as
    stored: at most ``max_events`` (1..:data:`MAX_COLUMN_PAGE`), and only as many as keep the sum of their payloads'
    UTF-8 bytes (plus ``event_overhead`` each) within ``max_bytes`` — the first event always, however large. Two
    statements in the caller's snapshot: the payloads' sizes, then as many rows as the bounds admit (no row beyond
    them is materialised)."""
    if not 1 <= max_events <= MAX_COLUMN_PAGE:
        raise UsageError(f"max_events must be between 1 and {MAX_COLUMN_PAGE}")
    upper = through_sequence if through_sequence is not None else (1 << 62)
    weights = view.query_all(
        "SELECT octet_length(payload_json) + ? FROM events"
        " WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence LIMIT ?",
        (event_overhead, session_id, after_sequence, upper, max_events),
    )
    if not weights:
        return StoredEventColumns(session_id, (), (), (), ())
    count = max(1, bisect_right(list(accumulate(chain.from_iterable(weights))), max_bytes))
    rows = view.query_all(
        "SELECT sequence, kind, payload_json, created_at_us FROM events"
        " WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
        (session_id, after_sequence, count),
    )
    read_sequences, kinds, payloads, created = zip(*rows, strict=True) if rows else ((), (), (), ())
    return StoredEventColumns(session_id, read_sequences, kinds, payloads, created)


def latest_event(view: ReadView, *, session_id: str, kinds: Sequence[str]) -> JournalEvent | None:
    """The newest committed event of ``session_id`` whose kind is one of ``kinds``; None when there is none."""
    rows = [view.query_one(
        "SELECT session_id, sequence, kind, payload_json, created_at_us FROM events"
        " WHERE session_id = ? AND kind = ? ORDER BY sequence DESC LIMIT 1", (session_id, kind)) for kind in kinds]
    found = [row for row in rows if row is not None]
    return _journal_event(max(found, key=lambda row: int(row[1]))) if found else None


def events_of_kind(view: ReadView, *, session_id: str, kind: str, limit: int) -> list[JournalEvent]:
    """The newest ``limit`` committed events of ``session_id`` with ``kind``, oldest first."""
    rows = view.query_all(
        "SELECT session_id, sequence, kind, payload_json, created_at_us FROM events"
        " WHERE session_id = ? AND kind = ? ORDER BY sequence DESC LIMIT ?", (session_id, kind, limit))
    return [_journal_event(row) for row in reversed(rows)]


def find_journal_gaps(view: ReadView) -> list[str]:
    """Findings for any session whose events are not exactly 1..current_sequence."""
    rows = view.query_all(
        "SELECT s.id, s.current_sequence, count(e.sequence), coalesce(min(e.sequence), 0),"
        " coalesce(max(e.sequence), 0)"
        " FROM sessions s LEFT JOIN events e ON e.session_id = s.id GROUP BY s.id ORDER BY s.id"
    )
    findings = []
    for session_id, current, count, low, high in rows:
        if count != current or (count and (low != 1 or high != current)):
            findings.append(
                f"journal of session {session_id}: counter at {current} but {count} events"
                f" spanning {low}..{high}"
            )
    return findings
