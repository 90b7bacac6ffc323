"""`codeflux inspect ENTITY`: a closed set of entities, bounded, exact truncation, and read-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.store.app_logs import append_app_log
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.inspection import INSPECTABLE_ENTITIES
from codeflux.store.location import DataLocation
from codeflux.store.provider_credentials import record_provider_credential_reference
from tests.fixtures.journal import note_event

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def inspect(capsys: pytest.CaptureFixture[str], location: DataLocation, *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, "--data-dir", str(location.directory), "inspect", *argv)


def table_rows(out: str) -> list[list[str]]:
    """The data rows of the tab-separated output (header and trailer lines removed)."""
    lines = out.splitlines()
    assert lines[-2].startswith("rows: ") and lines[-1].startswith("truncated: ")
    return [line.split("\t") for line in lines[1:-2]]


def add_logs(db: Database, count: int) -> None:
    for number in range(count):
        append_app_log(db, level="info", event=f"event-{number}", fields_json="{}", at_us=number)


def add_setting(db: Database, key: str, value_json: str) -> None:
    db.write(lambda tx: tx.execute(
        "INSERT INTO settings (key, value_json, created_at_us, updated_at_us) VALUES (?, ?, 1, 1)",
        (key, value_json),
    ))


def test_the_entity_set_is_closed_and_names_what_the_foundation_stores() -> None:
    assert {"settings", "migrations", "events", "logs", "providers", "sessions"} <= set(INSPECTABLE_ENTITIES)
    with pytest.raises(TypeError):
        INSPECTABLE_ENTITIES["anything"] = INSPECTABLE_ENTITIES["events"]  # type: ignore[index]


@pytest.mark.parametrize("case", [(5, 5, "no"), (6, 5, "yes"), (5, 6, "no"), (1, 1, "no"), (2, 1, "yes")],
                         ids=lambda case: "rows={}-limit={}".format(*case))
def test_truncated_is_exact_at_the_limit_and_one_past_it(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str], case: tuple[int, int, str]
) -> None:
    rows, limit, truncated = case
    add_logs(db, rows)

    code, out, err = inspect(capsys, data_location, "logs", "--limit", str(limit))

    assert code == 0, err
    assert len(table_rows(out)) == min(rows, limit)
    assert out.splitlines()[-1] == f"truncated: {truncated}"


def test_the_default_limit_bounds_the_output_to_fifty_rows(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    add_logs(db, 60)

    code, out, _ = inspect(capsys, data_location, "logs")

    assert code == 0
    assert len(table_rows(out)) == 50
    assert out.splitlines()[-1] == "truncated: yes"


@pytest.mark.parametrize("limit", ["0", "501", "-1", "ten", "5.5", ""])
def test_a_limit_outside_1_to_500_is_a_usage_error(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    code, out, err = inspect(capsys, data_location, "events", "--limit", limit)

    assert code == 2
    assert "--limit" in err and "500" in err
    assert out == ""


def test_an_unknown_entity_is_a_usage_error_with_a_suggestion(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = inspect(capsys, data_location, "evnts")

    assert code == 2
    assert "did you mean 'events'?" in err
    assert "choose one of: " + ", ".join(sorted(INSPECTABLE_ENTITIES)) in err
    assert out == ""


def test_sql_in_place_of_an_entity_or_an_id_is_never_run(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = "x'; DROP TABLE app_logs; --"
    add_logs(db, 2)

    unknown = inspect(capsys, data_location, "app_logs; DROP TABLE app_logs")
    by_id = inspect(capsys, data_location, "events", "--id", seed)
    tables = [t for (t,) in db.read(lambda v: v.query_all("SELECT name FROM sqlite_schema WHERE type='table'"))]

    assert unknown[0] == 2
    assert by_id[0] == 0 and table_rows(by_id[1]) == []
    assert "app_logs" in tables


def test_id_filters_events_by_session_settings_by_key_and_providers_by_name(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    def add_thread_events(tx: Transaction) -> None:
        tx.execute("INSERT INTO sessions (id, kind, created_at_us) VALUES ('ses_thread', 'thread', 1)")
        for number in range(3):
            append_event(tx, session_id="ses_thread", event=note_event(number))
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(99))

    db.write(add_thread_events)
    add_setting(db, "ui.theme", '"dark"')
    add_setting(db, "ui.font", '"mono"')
    record_provider_credential_reference(db, provider="openai", credential_ref="os://codeflux-provider/openai")

    events = table_rows(inspect(capsys, data_location, "events", "--id", "ses_thread")[1])
    settings = table_rows(inspect(capsys, data_location, "settings", "--id", "ui.theme")[1])
    providers = table_rows(inspect(capsys, data_location, "providers", "--id", "openai")[1])
    migrations = table_rows(inspect(capsys, data_location, "migrations", "--id", "1")[1])

    assert [(r[0], r[1]) for r in events] == [("ses_thread", "1"), ("ses_thread", "2"), ("ses_thread", "3")]
    assert [r[0] for r in settings] == ["ui.theme"]
    assert [(r[0], r[1]) for r in providers] == [("openai", "os://codeflux-provider/openai")]
    assert {r[1] for r in migrations} == {"1"}


def test_logs_by_id_shows_the_one_record_an_internal_error_names(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    add_logs(db, 3)
    code, out, _ = inspect(capsys, data_location, "logs", "--id", "2")
    assert code == 0
    assert [(r[0], r[3]) for r in table_rows(out)] == [("2", "event-1")]


@pytest.mark.parametrize(("entity", "entity_id"), [("migrations", "one")])
def test_an_id_where_it_means_nothing_or_is_malformed_is_a_usage_error(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str], entity: str, entity_id: str
) -> None:
    code, out, err = inspect(capsys, data_location, entity, "--id", entity_id)

    assert code == 2
    assert "--id" in err
    assert out == ""


def test_null_is_shown_as_null_in_parentheses_and_values_are_strings_in_json(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = inspect(capsys, data_location, "migrations", "--json")

    assert code == 0
    document = json.loads(out)
    assert document["entity"] == "migrations" and document["truncated"] is False
    assert all(isinstance(value, str) for row in document["rows"] for value in row.values())
    assert document["rows"][0]["error"] == "(null)"


def test_control_characters_are_escaped_and_key_shaped_values_are_redacted(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    planted_key = "sk-ant-api03-" + "Q" * 40
    add_setting(db, "note", json.dumps(f"line1\nline2\t\x1b[31mred {planted_key}"))

    code, out, _ = inspect(capsys, data_location, "settings")

    assert code == 0
    assert planted_key not in out
    assert "[REDACTED]" in out
    assert "\x1b" not in out
    assert len(table_rows(out)) == 1  # the embedded newline did not split the row


def test_inspect_reads_without_changing_the_database_file(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    add_logs(db, 3)
    db.close()  # the last writer checkpoints: the WAL is clean
    before = data_location.database.read_bytes(), data_location.database.stat().st_mtime_ns

    for entity in sorted(INSPECTABLE_ENTITIES):
        code, _, err = inspect(capsys, data_location, entity, "--limit", "500")
        assert code == 0, err

    assert (data_location.database.read_bytes(), data_location.database.stat().st_mtime_ns) == before


def test_inspect_of_a_database_newer_than_this_codeflux_is_refused_with_exit_3(
    db: Database, data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    db.close()
    conn = apsw.Connection(str(data_location.database))
    conn.execute("PRAGMA user_version = 99")
    conn.close()

    code, _, err = inspect(capsys, data_location, "events")

    assert code == 3
    assert "needs a newer codeflux" in err


def test_inspect_without_a_database_exits_3_and_creates_nothing(
    data_location: DataLocation, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = inspect(capsys, data_location, "events")

    assert code == 3
    assert "no codeflux database exists" in err
    assert not data_location.directory.exists()


def test_inspect_end_to_end_prints_a_header_rows_and_the_truncated_flag(
    db: Database, data_location: DataLocation
) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))

    result = subprocess.run(
        [sys.executable, "-m", "codeflux", "--data-dir", str(data_location.directory),
         "inspect", "sessions"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "id\tkind\tcurrent_sequence\tcreated_at_us"
    assert lines[1].startswith("ses_system\tsystem\t")
    assert lines[-2:] == ["rows: 1", "truncated: no"]


def test_a_data_directory_that_is_a_file_is_refused_with_exit_3_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_directory = tmp_path / "data"
    not_a_directory.write_text("a file")

    code, out, err = run_cli(capsys, "--data-dir", str(not_a_directory), "inspect", "events")

    assert code == 3
    assert "not a directory" in err
    assert out == ""
    assert not_a_directory.read_text() == "a file"
