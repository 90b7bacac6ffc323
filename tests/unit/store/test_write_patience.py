"""Write patience (issue 16 item 6): a run's writes wait out another connection's write lock up to a bound, retrying
only ``BEGIN IMMEDIATE`` (the transaction's function never runs twice), then a clear ``WriteLockHeldError``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import apsw
import pytest

from codeflux.domain.errors import InvalidValueError, StoreBusyError, WriteLockHeldError
from codeflux.store.connection import open_connection
from codeflux.store.database import WRITE_PATIENCE_S, WRITE_PATIENCE_VARIABLE, Database, Transaction, write_patience_s


@pytest.fixture
def other(db: Database) -> Iterator[apsw.Connection]:
    """Another connection to the same file (SQLite locks it exactly as another process's would)."""
    conn = open_connection(db.path)
    yield conn
    if not conn.get_autocommit():
        conn.execute("ROLLBACK")
    conn.close()


def hold_for(conn: apsw.Connection, seconds: float) -> threading.Timer:
    conn.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(seconds, lambda: conn.execute("COMMIT"))
    timer.start()
    return timer


class Counting:
    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, tx: Transaction) -> int:
        self.runs += 1
        tx.execute("INSERT INTO settings VALUES ('a', '1', 0, 1, 1)")
        return self.runs


def test_a_patient_write_outlasts_the_busy_timeout_and_runs_its_function_once(
    db: Database, other: apsw.Connection
) -> None:
    hold_for(other, 6.0).join(0)
    work = Counting()
    started = time.monotonic()
    with db.patient_writes(20):
        assert db.write(work) == 1
    assert time.monotonic() - started >= 5.9  # past the 5 s busy timeout, which alone would have failed
    assert work.runs == 1


def test_past_the_patience_a_clear_error_and_nothing_ran(db: Database, other: apsw.Connection) -> None:
    hold_for(other, 30.0).cancel()  # held until the fixture rolls it back
    work = Counting()
    started = time.monotonic()
    with db.patient_writes(0.4), pytest.raises(WriteLockHeldError) as held:
        db.write(work)
    assert 0.35 <= time.monotonic() - started < 2.0  # its own bound, not the 5 s busy timeout
    assert work.runs == 0
    assert str(held.value) == ("another process held the database's write lock for over 0.4 s: nothing of this step "
                               "was written; let it finish, then try again")
    assert isinstance(held.value, StoreBusyError) and held.value.waited_seconds == 0.4


def test_a_write_with_its_own_short_timeout_is_never_patient(db: Database, other: apsw.Connection) -> None:
    """An application log record (``busy_timeout_ms``) waits its short time once, even inside a patient run."""
    hold_for(other, 30.0).cancel()
    started = time.monotonic()
    with db.patient_writes(20), pytest.raises(StoreBusyError) as busy:
        db.write(Counting(), busy_timeout_ms=100)
    assert not isinstance(busy.value, WriteLockHeldError)
    assert time.monotonic() - started < 1.0


def test_patience_belongs_to_the_thread_that_asked_and_nests(db: Database) -> None:
    seen: list[float | None] = []
    with db.patient_writes(60):
        with db.patient_writes(2):
            assert db.write_patience == 2
        assert db.write_patience == 60
        worker = threading.Thread(target=lambda: seen.append(db.write_patience))
        worker.start()
        worker.join()
    assert seen == [None]  # another thread (an interactive request) keeps the busy timeout
    assert db.write_patience is None


def test_the_patience_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WRITE_PATIENCE_VARIABLE, raising=False)
    assert write_patience_s() == WRITE_PATIENCE_S == 60.0
    assert write_patience_s({WRITE_PATIENCE_VARIABLE: " 2.5 "}) == 2.5
    for bad in ("abc", "0", "-1", "inf", "nan", "3601"):
        with pytest.raises(InvalidValueError) as refused:
            write_patience_s({WRITE_PATIENCE_VARIABLE: bad})
        assert str(refused.value) == "invalid CODEFLUX_WRITE_PATIENCE_S: must be a number of seconds from 0.1 to 3600"
