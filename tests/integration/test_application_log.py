"""Application log records reach SQLite redacted, and only state-changing commands write them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from codeflux.cli.app_log_sink import AppLogSink
from codeflux.logs import configure_logging, get_logger, reset_logging
from codeflux.redact import default_redactor
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.cli import run_codeflux


def _log_rows(location: DataLocation) -> list[tuple[str, str, dict[str, object]]]:
    db = open_store(location, create=False, migrate=False)
    try:
        rows = db.read(lambda view: view.query_all("SELECT level, event, fields_json FROM app_logs ORDER BY id"))
    finally:
        db.close()
    return [(r[0], r[1], json.loads(r[2])) for r in rows]


def test_a_state_changing_command_leaves_one_log_record(tmp_path: Path) -> None:
    location = DataLocation(directory=tmp_path / "data")
    assert run_codeflux("migrate", data_dir=location.directory).code == 0
    rows = _log_rows(location)
    assert [(level, event) for level, event, _ in rows] == [("info", "command.finished")]
    assert rows[0][2]["command"] == "migrate"
    assert rows[0][2]["exit_code"] == 0


def test_read_only_commands_do_not_write_log_records(tmp_path: Path) -> None:
    location = DataLocation(directory=tmp_path / "data")
    run_codeflux("migrate", data_dir=location.directory)
    for args in (("inspect", "events"), ("integrity-check",), ("version",)):
        assert run_codeflux(*args, data_dir=location.directory).code == 0, args
    assert len(_log_rows(location)) == 1


@pytest.mark.security
def test_a_loaded_secret_is_redacted_before_it_reaches_the_log_table(tmp_path: Path) -> None:
    location = DataLocation(directory=tmp_path / "data")
    open_store(location, create=True, migrate=True).close()
    secret = "loaded-provider-key-0123456789abcdef"
    default_redactor().add_secret(secret)
    sink = AppLogSink(location)
    stream = io.StringIO()
    configure_logging(level="info", persist=sink, stream=stream, renderer="json")
    try:
        get_logger("test").warning("provider.call-failed", detail=f"server echoed {secret} back")
    finally:
        reset_logging()
        sink.close()
    rows = _log_rows(location)
    assert rows and secret not in json.dumps(rows)
    assert "[REDACTED]" in json.dumps(rows)
    assert secret not in stream.getvalue()
    raw = b"".join(p.read_bytes() for p in location.directory.glob("codeflux.sqlite3*"))
    assert secret.encode() not in raw
