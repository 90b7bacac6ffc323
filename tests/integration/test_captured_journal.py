"""Journals written by earlier codeflux stay readable.

``tests/fixtures/journal_captured.json`` holds every event row a real earlier main wrote (demo run accepted,
a denied headless run, budget and price changes, logs purged, a run rejected; its ``how`` says exactly
what). Event rows are immutable, so each must still decode to its registered payload, through the
registry, the store and the session stream alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeflux.api.v1 import product_pb2
from codeflux.domain.errors import UsageError
from codeflux.domain.events import EventPayload, UnknownEvent, decode_event
from codeflux.services.session import session_event
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event, read_events_after

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "journal_captured.json"


def captured_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(CAPTURED.read_text(encoding="utf-8"))["events"]
    return rows


def insert_rows(db: Database, rows: list[dict[str, Any]]) -> None:
    """Store ``rows`` as they were written (raw SQL: the journal's own writer only appends registered payloads)."""

    def work(tx: Transaction) -> None:
        sessions = {row["session_id"] for row in rows} - {SYSTEM_SESSION_ID}
        for session_id in sorted(sessions):
            tx.execute("INSERT INTO sessions (id, kind, created_at_us) VALUES (?, 'thread', 1)", (session_id,))
        for row in rows:
            tx.execute("UPDATE sessions SET current_sequence = current_sequence + 1 WHERE id = ?",
                       (row["session_id"],))
            tx.execute("INSERT INTO events (session_id, sequence, kind, payload_version, payload_json, created_at_us)"
                       " VALUES (?, ?, ?, ?, ?, 1)",
                       (row["session_id"], row["sequence"], row["kind"], row["payload_version"], row["payload_json"]))

    db.write(work)


def test_the_captured_journal_is_a_real_run_with_many_kinds() -> None:
    rows = captured_rows()
    assert len(rows) >= 100
    assert len({row["kind"] for row in rows}) >= 25


def test_every_captured_row_decodes_to_its_registered_payload_and_encodes_back_unchanged() -> None:
    for row in captured_rows():
        stored = json.loads(row["payload_json"])
        decoded = decode_event(row["kind"], stored)
        assert isinstance(decoded, EventPayload), (row["kind"], getattr(decoded, "problem", ""))
        assert row["kind"] == decoded.KIND
        assert decoded.to_payload() == stored, row["kind"]


def test_a_database_holding_the_captured_rows_replays_them_typed_and_unchanged_on_the_wire(db: Database) -> None:
    rows = captured_rows()
    insert_rows(db, rows)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    for session_id, written in by_session.items():
        events = db.read(lambda view, s=session_id: read_events_after(view, session_id=s, after_sequence=0,
                                                                      limit=1000))
        assert [event.sequence for event in events] == [row["sequence"] for row in written]
        for event, row in zip(events, written, strict=True):
            assert isinstance(event.event, EventPayload), (row["kind"], getattr(event.event, "problem", ""))
            wire = session_event(event)
            assert wire.payload_json == row["payload_json"]
            assert wire.event_kind != product_pb2.EVENT_KIND_UNSPECIFIED
            assert product_pb2.EventKind.Name(wire.event_kind) == "EVENT_KIND_" + row["kind"].upper().replace("-", "_")


def test_a_kind_from_a_newer_codeflux_replays_as_an_unknown_event_with_its_payload(db: Database) -> None:
    newer = {"session_id": SYSTEM_SESSION_ID, "sequence": 1, "kind": "widget-spun", "payload_version": 1,
             "payload_json": '{"n":3,"widget":"spun"}'}
    insert_rows(db, [newer])
    (event,) = db.read(lambda view: read_events_after(view, session_id=SYSTEM_SESSION_ID, after_sequence=0,
                                                      limit=10))
    assert isinstance(event.event, UnknownEvent) and "not an event kind" in event.event.problem
    wire = session_event(event)
    assert (wire.kind, wire.event_kind, wire.payload_json) == ("widget-spun", product_pb2.EVENT_KIND_UNSPECIFIED,
                                                               newer["payload_json"])


def test_only_registered_payloads_are_appended(db: Database) -> None:
    unknown = UnknownEvent(kind="widget-spun", payload={}, problem="not known")
    with pytest.raises(UsageError, match="only registered event payloads"):
        db.write(lambda tx: append_event(tx, session_id=SYSTEM_SESSION_ID, event=unknown))  # type: ignore[arg-type]
    assert db.read(lambda view: read_events_after(view, session_id=SYSTEM_SESSION_ID, after_sequence=0,
                                                  limit=10)) == []
