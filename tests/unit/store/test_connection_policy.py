from __future__ import annotations

import stat
from pathlib import Path

import apsw
import pytest

from codeflux.domain.errors import DatabaseMissingError, StoreClosedError, StoreCorruptError, StoreError
from codeflux.store.connection import BUSY_TIMEOUT_MS, open_connection
from codeflux.store.database import Database


def _pragma(conn: apsw.Connection, name: str) -> object:
    return conn.execute(f"PRAGMA {name}").fetchall()[0][0]


def test_every_connection_reads_back_the_required_policy(db: Database) -> None:
    conn = open_connection(db.path)
    try:
        assert _pragma(conn, "journal_mode") == "wal"
        assert _pragma(conn, "synchronous") == 2
        assert _pragma(conn, "foreign_keys") == 1
        assert _pragma(conn, "trusted_schema") == 0
        assert _pragma(conn, "busy_timeout") == BUSY_TIMEOUT_MS
    finally:
        conn.close()


def test_double_quoted_strings_are_identifiers_not_literals(db: Database) -> None:
    with pytest.raises(StoreError) as caught:
        db.read(lambda view: view.query_all('SELECT "not a column"'))
    assert "no such column" in str(caught.value.__cause__)


def test_database_and_side_files_are_private_to_the_user(db: Database) -> None:
    db.write(lambda tx: tx.execute("INSERT INTO settings VALUES ('k', '1', 0, 1, 1)"))
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db.path}{suffix}")
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, suffix
    assert stat.S_IMODE(db.path.parent.stat().st_mode) == 0o700


def test_tables_are_strict_and_reject_the_wrong_type(db: Database) -> None:
    with pytest.raises(StoreError) as caught:
        db.write(lambda tx: tx.execute("INSERT INTO settings VALUES ('k', '1', 'one', 1, 1)"))
    assert "cannot store TEXT value in INTEGER column" in str(caught.value.__cause__)


def test_a_read_only_connection_refuses_writes(db: Database) -> None:
    conn = open_connection(db.path, readonly=True)
    try:
        with pytest.raises(apsw.Error):
            conn.execute("INSERT INTO settings VALUES ('k', '1', 0, 1, 1)")
    finally:
        conn.close()


def test_opening_a_missing_database_without_create_says_it_is_missing(tmp_path: Path) -> None:
    with pytest.raises(DatabaseMissingError):
        open_connection(tmp_path / "absent.sqlite3")
    assert not (tmp_path / "absent.sqlite3").exists()


def test_a_file_that_is_not_sqlite_is_reported_corrupt_not_missing(tmp_path: Path) -> None:
    bogus = tmp_path / "codeflux.sqlite3"
    bogus.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(StoreCorruptError):
        open_connection(bogus)


def test_close_is_idempotent_and_use_after_close_is_a_clear_error(db: Database) -> None:
    db.close()
    db.close()
    with pytest.raises(StoreClosedError):
        db.write(lambda tx: None)
