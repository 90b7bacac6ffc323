"""The per-session event journal: contiguous sequences, typed payloads, committed before publication.

Appending happens inside the caller's transaction (one user-visible outcome = aggregate change + its
events + idempotency record). The session counter is bumped first and the event carries the new value;
SQL triggers refuse any other sequence, so the journal can't have gaps or duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from codeflux.domain.errors import NotFoundError, UsageError
from codeflux.store.database import ReadView, Row, Transaction, now_us

__all__ = [
    "SYSTEM_SESSION_ID",
    "JournalEvent",
    "StoredEvent",
    "append_event",
    "find_journal_gaps",
    "read_events_after",
    "read_stored_events_after",
    "session_head",
]

SYSTEM_SESSION_ID = "ses_system"
MAX_PAGE = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEvent:
    session_id: str
    sequence: int
    kind: str
    payload: Mapping[str, object]
    created_at_us: int


def append_event(tx: Transaction, *, session_id: str, kind: str, payload: Mapping[str, object]) -> JournalEvent:
    """Append one event to ``session_id``'s journal in the open transaction and return it."""
    body = json.dumps(dict(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
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
    return JournalEvent(session_id=session_id, sequence=sequence, kind=kind, payload=payload, created_at_us=at)


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
    return [
        JournalEvent(session_id=r[0], sequence=int(r[1]), kind=r[2], payload=json.loads(r[3]), created_at_us=int(r[4]))
        for r in _rows_after(view, session_id, after_sequence, None, limit)
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredEvent:
    """A committed event with its payload as the stored JSON text (for transports that forward it)."""

    session_id: str
    sequence: int
    kind: str
    payload_json: str
    created_at_us: int


def session_head(view: ReadView, session_id: str) -> int | None:
    """The last committed sequence of ``session_id`` (0 before its first event); None if no such session."""
    row = view.query_one("SELECT current_sequence FROM sessions WHERE id = ?", (session_id,))
    return None if row is None else int(row[0])


def read_stored_events_after(
    view: ReadView, *, session_id: str, after_sequence: int, through_sequence: int | None = None, limit: int
) -> list[StoredEvent]:
    """Committed events in ``(after_sequence, through_sequence]`` (no upper bound when None), oldest first,
    at most ``limit``, with the payload left as its stored JSON text."""
    return [
        StoredEvent(session_id=r[0], sequence=int(r[1]), kind=r[2], payload_json=r[3], created_at_us=int(r[4]))
        for r in _rows_after(view, session_id, after_sequence, through_sequence, limit)
    ]


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
