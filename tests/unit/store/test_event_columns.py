"""The session stream's batch reader (issue 20 item 5): committed events as stored, column by column, bounded by a
count and by their payloads' UTF-8 bytes, the first event always, never past ``through_sequence``."""

from __future__ import annotations

import json

import pytest

from codeflux.domain.errors import UsageError
from codeflux.domain.events import AgentMessage
from codeflux.store.database import Database, Transaction
from codeflux.store.events import (
    MAX_COLUMN_PAGE,
    SYSTEM_SESSION_ID,
    append_event,
    read_stored_event_columns_after,
    read_stored_events_after,
)


def _message(text: str) -> AgentMessage:
    return AgentMessage(conversation_id=1, attempt=1, text=text, truncated=False, redacted=False)


def _commit(db: Database, texts: list[str]) -> None:
    def work(tx: Transaction) -> None:
        for text in texts:
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=_message(text))

    db.write(work)


def _columns(db: Database, after: int, *, through: int | None = None, max_events: int = 100,
             max_bytes: int = 1 << 20, overhead: int = 0):  # type: ignore[no-untyped-def]
    return db.read(lambda view: read_stored_event_columns_after(
        view, session_id=SYSTEM_SESSION_ID, after_sequence=after, through_sequence=through, max_events=max_events,
        max_bytes=max_bytes, event_overhead=overhead))


def test_columns_hold_the_stored_rows_as_the_decoding_reader_sees_them(db: Database) -> None:
    _commit(db, ["a", "b \"quoted\"", "é and 日本"])
    columns = _columns(db, 0)
    decoded = db.read(lambda view: read_stored_events_after(view, session_id=SYSTEM_SESSION_ID, after_sequence=0,
                                                            limit=10))
    assert columns.session_id == SYSTEM_SESSION_ID
    assert columns.sequences == (1, 2, 3)
    assert columns.kinds == tuple(event.kind for event in decoded) == ("agent-message",) * 3
    assert columns.payloads_json == tuple(event.payload_json for event in decoded)
    assert columns.created_at_us == tuple(event.created_at_us for event in decoded)
    assert json.loads(columns.payloads_json[2])["text"] == "é and 日本"


def test_the_count_and_the_through_bound_cut_a_page(db: Database) -> None:
    _commit(db, [str(n) for n in range(10)])
    assert _columns(db, 2, max_events=4).sequences == (3, 4, 5, 6)
    assert _columns(db, 2, through=4).sequences == (3, 4)
    assert _columns(db, 10).sequences == ()
    assert _columns(db, 4, through=4).kinds == ()


def test_the_byte_bound_counts_utf8_bytes_and_overhead_and_always_admits_the_first_event(db: Database) -> None:
    _commit(db, ["é" * 100, "x", "x", "y" * 5000, "z"])
    sizes = [len(text.encode()) for text in _columns(db, 0).payloads_json]
    # The first two events' UTF-8 bytes plus 10 each fit exactly; one byte less and only the first does.
    fit = sizes[0] + sizes[1] + 20
    assert _columns(db, 0, max_bytes=fit, overhead=10).sequences == (1, 2)
    assert _columns(db, 0, max_bytes=fit - 1, overhead=10).sequences == (1,)
    # An event larger than the bound comes alone, never not at all.
    assert _columns(db, 3, max_bytes=100).sequences == (4,)
    assert _columns(db, 4, max_bytes=100).sequences == (5,)


def test_an_unknown_kinds_stored_row_is_forwarded_as_stored(db: Database) -> None:
    def work(tx: Transaction) -> None:  # a row a newer codeflux wrote (as test_captured_journal.py stores one)
        tx.execute("UPDATE sessions SET current_sequence = current_sequence + 1 WHERE id = ?", (SYSTEM_SESSION_ID,))
        tx.execute("INSERT INTO events (session_id, sequence, kind, payload_version, payload_json, created_at_us)"
                   " VALUES (?, 1, 'from-the-future', 1, ?, 5)", (SYSTEM_SESSION_ID, '{"z":1,  "a":[2]}'))

    db.write(work)
    columns = _columns(db, 0)
    assert (columns.kinds, columns.payloads_json, columns.created_at_us) == (
        ("from-the-future",), ('{"z":1,  "a":[2]}',), (5,))


@pytest.mark.parametrize("max_events", [0, MAX_COLUMN_PAGE + 1])
def test_a_page_bound_outside_the_range_is_refused(db: Database, max_events: int) -> None:
    with pytest.raises(UsageError):
        _columns(db, 0, max_events=max_events)
