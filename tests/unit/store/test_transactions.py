from __future__ import annotations

import pytest

from codeflux.domain.errors import IdempotencyConflictError, StaleRevisionError, StoreError
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event, read_events_after
from codeflux.store.idempotency import run_idempotent
from codeflux.store.revisions import compare_and_set_revision
from tests.fixtures.journal import note_event


def _refused_because(db: Database, sql: str) -> str:
    """The database's own reason (from the chained apsw error) for refusing ``sql``."""
    with pytest.raises(StoreError) as caught:
        db.write(lambda tx: tx.execute(sql))
    assert "INSERT" not in str(caught.value) and "UPDATE" not in str(caught.value)
    return str(caught.value.__cause__)


def _count(db: Database, table: str) -> int:
    return db.read(lambda view: int(view.query_all(f"SELECT count(*) FROM {table}")[0][0]))  # noqa: S608


def test_a_failing_unit_of_work_leaves_nothing_behind(db: Database) -> None:
    def half_done(tx: Transaction) -> None:
        tx.execute("INSERT INTO settings VALUES ('a', '1', 0, 1, 1)")
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(1))
        raise RuntimeError("boom halfway")

    with pytest.raises(RuntimeError):
        db.write(half_done)
    assert _count(db, "settings") == 0
    assert _count(db, "events") == 0


def test_publication_happens_only_after_commit(db: Database) -> None:
    published: list[int] = []
    committed_when_published: list[int] = []

    def work(tx: Transaction) -> None:
        event = append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(0))
        tx.after_commit(lambda: published.append(event.sequence))
        tx.after_commit(lambda: committed_when_published.append(_count(db, "events")))

    db.write(work)
    assert published == [1]
    assert committed_when_published == [1]

    def failing(tx: Transaction) -> None:
        tx.after_commit(lambda: published.append(99))
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        db.write(failing)
    assert published == [1]


def test_journal_sequences_are_contiguous_per_session(db: Database) -> None:
    for n in range(5):
        db.write(lambda tx, n=n: append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(n)))
    events = db.read(lambda view: read_events_after(view, session_id=SYSTEM_SESSION_ID, after_sequence=2, limit=10))
    assert [e.sequence for e in events] == [3, 4, 5]
    assert [e.payload["conversation_id"] for e in events] == [2, 3, 4]


def test_the_journal_refuses_gaps_updates_and_deletes(db: Database) -> None:
    db.write(lambda tx: append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(0)))
    gap = "INSERT INTO events VALUES ('ses_system', 7, 'probe', 1, '{}', 1)"
    assert "session counter" in _refused_because(db, gap)
    assert "immutable" in _refused_because(db, "UPDATE events SET kind = 'other'")
    assert "never deleted" in _refused_because(db, "DELETE FROM events")
    assert "exactly one" in _refused_because(db, "UPDATE sessions SET current_sequence = 5")


def test_an_identical_retry_returns_the_original_result_and_runs_once(db: Database) -> None:
    runs: list[int] = []

    def work() -> dict[str, object]:
        runs.append(1)
        return {"value": len(runs)}

    first = db.write(lambda tx: run_idempotent(tx, scope="test", key="k1", request={"a": 1}, work=work))
    again = db.write(lambda tx: run_idempotent(tx, scope="test", key="k1", request={"a": 1}, work=work))
    assert first == again == {"value": 1}
    assert runs == [1]


def test_the_same_key_with_another_request_is_a_conflict(db: Database) -> None:
    db.write(lambda tx: run_idempotent(tx, scope="test", key="k1", request={"a": 1}, work=lambda: {}))
    with pytest.raises(IdempotencyConflictError):
        db.write(lambda tx: run_idempotent(tx, scope="test", key="k1", request={"a": 2}, work=lambda: {}))


def test_compare_and_set_refuses_a_stale_revision(db: Database) -> None:
    db.write(lambda tx: tx.execute("INSERT INTO settings VALUES ('theme', '\"dark\"', 0, 1, 1)"))
    assert db.write(lambda tx: compare_and_set_revision(tx, table="settings", key="theme", expected=0)) == 1
    with pytest.raises(StaleRevisionError) as caught:
        db.write(lambda tx: compare_and_set_revision(tx, table="settings", key="theme", expected=0))
    assert caught.value.actual == 1
    with pytest.raises(StaleRevisionError) as missing:
        db.write(lambda tx: compare_and_set_revision(tx, table="settings", key="nope", expected=0))
    assert missing.value.actual is None
