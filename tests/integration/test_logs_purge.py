"""`codeflux logs purge [--before YYYY-MM-DD]`: application log records go; events, provider references and
everything else stay exactly as they were."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.store.app_logs import append_app_log, count_app_logs
from codeflux.store.database import Database, Row, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DataLocation
from codeflux.store.provider_credentials import (
    list_provider_credential_references,
    record_provider_credential_reference,
)
from tests.fixtures.journal import note_event

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def purge(capsys: pytest.CaptureFixture[str], location: DataLocation, *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, "--data-dir", str(location.directory), "logs", "purge", *argv)


def utc_us(year: int, month: int, day: int, *, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    moment = dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
    return int(moment.timestamp()) * 1_000_000


def all_events(db: Database) -> list[Row]:
    return db.read(lambda view: view.query_all(
        "SELECT session_id, sequence, kind, payload_json, created_at_us FROM events ORDER BY session_id, sequence"
    ))


def log_events(db: Database) -> list[str]:
    return db.read(lambda view: [str(r[0]) for r in view.query_all("SELECT event FROM app_logs ORDER BY at_us")])


@pytest.fixture
def populated(db: Database) -> Database:
    """Logs on both sides of 2025-01-01 00:00 UTC, journal events, and a provider reference."""
    last_microsecond_of_2024 = utc_us(2024, 12, 31, hour=23, minute=59, second=59) + 999_999
    for name, at in (("old-1", utc_us(2024, 6, 1)), ("old-2", last_microsecond_of_2024),
                     ("new-1", utc_us(2025, 1, 1)), ("new-2", utc_us(2025, 3, 1))):
        append_app_log(db, level="info", event=name, fields_json="{}", at_us=at)

    def journal(tx: Transaction) -> None:
        for number in range(5):
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(number))

    db.write(journal)
    record_provider_credential_reference(db, provider="anthropic", credential_ref="os://codeflux-provider/anthropic")
    return db


def test_purge_deletes_every_log_record_and_leaves_events_and_provider_references_untouched(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    events_before = all_events(populated)
    providers_before = list_provider_credential_references(populated)

    code, out, err = purge(capsys, data_location)

    assert code == 0, err
    assert "logs purge: deleted 4 application log records" in out
    assert "events, evidence and provider references were not touched" in out
    assert count_app_logs(populated) == 0
    events_after = all_events(populated)
    assert events_after[: len(events_before)] == events_before
    assert list_provider_credential_references(populated) == providers_before


def test_purge_is_recorded_as_one_event_carrying_counts_only(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    events_before = all_events(populated)

    purge(capsys, data_location, "--before", "2025-01-01")

    added = all_events(populated)[len(events_before):]
    assert [(row[0], row[2]) for row in added] == [(SYSTEM_SESSION_ID, "logs-purged")]
    assert json.loads(added[0][3]) == {"deleted": 2, "before_us": utc_us(2025, 1, 1)}


def test_before_deletes_only_records_written_before_midnight_utc_of_that_date(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = purge(capsys, data_location, "--before", "2025-01-01")

    assert code == 0
    assert "deleted 2 application log records written before 2025-01-01 00:00 UTC" in out
    assert log_events(populated) == ["new-1", "new-2"]


def test_before_a_date_older_than_every_record_deletes_nothing(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = purge(capsys, data_location, "--before", "2000-01-01")

    assert code == 0
    assert "deleted 0 application log records" in out
    assert log_events(populated) == ["old-1", "old-2", "new-1", "new-2"]


@pytest.mark.parametrize("value", ["2025-02-30", "2025-1-1", "01/02/2025", "20250101", "2025-01-01T00:00",
                                   "yesterday", "", "0000-01-01"])
def test_a_malformed_or_impossible_date_is_a_usage_error_and_nothing_is_deleted(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    events_before = all_events(populated)

    code, out, err = purge(capsys, data_location, "--before", value)

    assert code == 2
    assert "--before" in err and "YYYY-MM-DD" in err
    assert out == ""
    assert count_app_logs(populated) == 4
    assert all_events(populated) == events_before


@pytest.mark.parametrize("argv", [["logs"], ["logs", "prune"], ["logs", "purge", "--befor", "2025-01-01"]])
def test_a_missing_or_mistyped_action_or_flag_is_a_usage_error(
    populated: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, _ = run_cli(capsys, "--data-dir", str(data_location.directory), *argv)

    assert code == 2
    assert count_app_logs(populated) == 4


def test_purge_without_a_database_exits_3_and_creates_nothing(
    data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = purge(capsys, data_location)

    assert code == 3
    assert "no codeflux database exists" in err
    assert not data_location.directory.exists()


def test_purge_end_to_end_in_its_own_process(populated: Database, data_location: DataLocation) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))

    result = subprocess.run(
        [sys.executable, "-m", "codeflux", "logs", "purge", "--before", "2025-02-01",
         "--data-dir", str(data_location.directory)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )

    assert result.returncode == 0, result.stderr
    assert "deleted 3 application log records written before 2025-02-01 00:00 UTC" in result.stdout
    assert log_events(populated) == ["new-2"]
