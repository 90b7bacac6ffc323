"""`codeflux integrity-check`: every problem in a real file is found and printed; a pass says only
"structurally sound". Damaged databases are real files, tampered with in a copy of a real database."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.money import USD, Money
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DATABASE_FILENAME, DataLocation
from codeflux.store.migrations import supported_schema_version
from tests.fixtures.journal import note_event
from tests.fixtures.tasks import a_draft, a_repository

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent
SOUND = "integrity-check: ok — structurally sound; this does not mean the contents are correct"

# A schema version one past what this codeflux ships: "from the future".
FUTURE = supported_schema_version() + 1


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def check(capsys: pytest.CaptureFixture[str], data_dir: Path) -> tuple[int, str, str]:
    return run_cli(capsys, "--data-dir", str(data_dir), "integrity-check")


def seed_events(db: Database, *, count: int, payload_bytes: int) -> None:
    def work(tx: Transaction) -> None:
        for number in range(count):
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(number, pad=payload_bytes))

    db.write(work)


def copy_database(db: Database, tmp_path: Path, name: str) -> Path:
    """Close ``db`` (checkpointing its WAL) and copy the file into a fresh data directory."""
    db.close()
    directory = tmp_path / name
    directory.mkdir()
    shutil.copyfile(db.path, directory / DATABASE_FILENAME)
    return directory


Statement = str | tuple[str, tuple[object, ...]]


def tamper(database: Path, *statements: Statement) -> None:
    """Run raw SQL against a copy, as someone editing the file outside codeflux would."""
    conn = apsw.Connection(str(database))
    try:
        for statement in statements:
            sql, params = (statement, ()) if isinstance(statement, str) else statement
            conn.execute(sql, params)
    finally:
        conn.close()


HISTORY_ROW = ("INSERT INTO migration_history (version, name, sha256, result, at_us, codeflux_version)"
               " VALUES (?, ?, ?, ?, 1, ?)")


def test_a_freshly_migrated_database_passes_and_the_pass_is_worded_carefully(
    db: Database, data_location: DataLocation
) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))

    result = subprocess.run(
        [sys.executable, "-m", "codeflux", "--data-dir", str(data_location.directory), "integrity-check"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )

    assert result.returncode == 0, result.stderr
    assert SOUND in result.stdout
    assert "sqlite-integrity, foreign-keys, migration-history, event-journal" in result.stdout
    assert result.stderr == ""


def test_a_file_damaged_in_the_middle_of_a_page_fails_with_every_finding_printed(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_events(db, count=400, payload_bytes=300)  # dozens of pages
    directory = copy_database(db, tmp_path, "damaged")
    database = directory / DATABASE_FILENAME
    probe = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        page_size = int(probe.execute("PRAGMA page_size").fetchall()[0][0])
        leaves = [int(r[0]) for r in probe.execute(
            "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno")]
    finally:
        probe.close()
    assert len(leaves) > 10
    victim = leaves[len(leaves) // 2]
    with database.open("r+b") as handle:
        handle.seek((victim - 1) * page_size + page_size // 2)
        handle.write(bytes((i * 37 + 11) % 256 for i in range(512)))

    code, out, err = check(capsys, directory)

    assert code == 1
    findings = [line for line in out.splitlines() if line.startswith("integrity-check: [")]
    assert any("[sqlite-integrity]" in line for line in findings), out
    assert f"page {victim}" in out
    assert "*** in database" not in out, "multi-line SQLite rows are split into one finding per problem"
    assert f"found {len(findings)} problem" in err
    assert "missing" not in err
    assert SOUND not in out


def test_a_file_that_is_not_a_database_is_reported_as_unreadable_never_as_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "garbage"
    directory.mkdir()
    (directory / DATABASE_FILENAME).write_bytes(b"this is not an SQLite file " * 400)

    code, out, err = check(capsys, directory)

    assert code == 1
    assert "[file] the file is not a readable SQLite database" in out
    assert "no codeflux database" not in err
    assert "found 1 problem" in err


def test_a_migration_applied_from_other_content_is_a_finding(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = copy_database(db, tmp_path, "tampered-sha")
    forged = hashlib.sha256(b"some other migration").hexdigest()
    tamper(
        directory / DATABASE_FILENAME,
        "DROP TRIGGER migration_history_is_immutable",
        ("UPDATE migration_history SET sha256 = ? WHERE version = 1", (forged,)),
    )

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert "[migration-history] migration 000001 was applied from different content" in out


def test_a_journal_gap_left_after_dropping_the_sequence_trigger_is_a_finding(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_events(db, count=3, payload_bytes=10)
    directory = copy_database(db, tmp_path, "gap")
    tamper(
        directory / DATABASE_FILENAME,
        "DROP TRIGGER events_sequence_equals_session_counter",
        "INSERT INTO events (session_id, sequence, kind, payload_json, created_at_us)"
        " VALUES ('ses_system', 7, 'forged', '{}', 1)",
    )

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert "[event-journal] journal of session ses_system: counter at 3 but 4 events spanning 1..7" in out


def test_a_row_pointing_at_a_missing_parent_is_a_foreign_key_finding(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = copy_database(db, tmp_path, "orphan")
    tamper(
        directory / DATABASE_FILENAME,
        "PRAGMA foreign_keys = OFF",
        "DROP TRIGGER events_sequence_equals_session_counter",
        "INSERT INTO events (session_id, sequence, kind, payload_json, created_at_us)"
        " VALUES ('ses_nobody', 1, 'orphan', '{}', 1)",
    )

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert "[foreign-keys]" in out and "refers to a missing row of sessions" in out


def test_a_migration_started_and_never_finished_is_a_finding(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = copy_database(db, tmp_path, "interrupted")
    tamper(
        directory / DATABASE_FILENAME,
        (HISTORY_ROW, (FUTURE, "next", "a" * 64, "started", "0.0.0")),
    )

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert f"migration {FUTURE:06d} was started and never finished" in out


def test_a_database_newer_than_this_codeflux_is_still_checked_and_refused_with_exit_3(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = copy_database(db, tmp_path, "newer")
    tamper(
        directory / DATABASE_FILENAME,
        (HISTORY_ROW, (FUTURE, "from_the_future", "b" * 64, "succeeded", "9.0.0")),
        f"PRAGMA user_version = {FUTURE}",
    )

    code, out, err = check(capsys, directory)

    assert code == 3
    assert "ran write-ahead-log, sqlite-integrity, foreign-keys, migration-history, event-journal" in out
    assert f"[schema-version] the database has schema version {FUTURE}, newer than this codeflux" in out
    assert "needs a newer codeflux" in err


def test_a_damaged_newer_database_still_fails_with_exit_1(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = copy_database(db, tmp_path, "newer-and-orphaned")
    tamper(
        directory / DATABASE_FILENAME,
        "PRAGMA foreign_keys = OFF",
        "DROP TRIGGER events_sequence_equals_session_counter",
        "INSERT INTO events (session_id, sequence, kind, payload_json, created_at_us)"
        " VALUES ('ses_nobody', 1, 'orphan', '{}', 1)",
        f"PRAGMA user_version = {FUTURE}",
    )

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert "[schema-version]" in out and "[foreign-keys]" in out


def test_integrity_check_without_a_database_exits_3_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "empty"

    code, out, err = check(capsys, data_dir)

    assert code == 3
    assert out == ""
    assert "no codeflux database exists" in err
    assert not data_dir.exists()


def test_integrity_check_does_not_change_the_database_file(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_events(db, count=20, payload_bytes=50)
    db.close()
    before = data_location.database.read_bytes(), data_location.database.stat().st_mtime_ns

    code, _, _ = check(capsys, data_location.directory)

    assert code == 0
    assert (data_location.database.read_bytes(), data_location.database.stat().st_mtime_ns) == before


def test_a_budget_running_total_that_differs_from_its_ledger_is_a_finding(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The running totals (migration 000019) are kept by triggers; one edited outside codeflux would make the budget
    decide on figures its immutable ledger does not hold: the check sums the ledger afresh and compares."""
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees")
    task_id = a_draft(tasks, a_repository(tmp_path / "repo")).task_id
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=500, currency=USD), expected_revision=None,
                                 idempotency_key="budget")
    sound = copy_database(db, tmp_path, "sound")
    assert check(capsys, sound)[0] == 0
    directory = tmp_path / "edited"
    shutil.copytree(sound, directory)
    tamper(directory / DATABASE_FILENAME, ("UPDATE budget_totals SET spent_minor = 40 WHERE task_id = ?",
                                           (task_id.value,)))

    code, out, _ = check(capsys, directory)

    assert code == 1
    assert (f"[budget-totals] the running total of task {task_id.value}'s budget differs from its ledger"
            " (spent_minor)") in out
