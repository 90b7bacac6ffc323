"""An internal error prints one line naming the app_logs record that keeps its redacted traceback; --debug (or
CODEFLUX_DEBUG=1) prints the traceback too; without a database the line says it was not logged."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from codeflux.store.database import Database
from codeflux.store.location import DataLocation

_KEY_LIKE = "sk-ant-api03-" + "Q7" * 20  # a key's shape, in the exception text: it must never be kept or shown


class _StdoutThatFails(io.StringIO):
    """A standard output whose first write raises: what the CLI meets when a bug hides behind a print."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self._error = error

    def write(self, text: str) -> int:
        raise self._error


def _run(arguments: list[str], *, error: Exception, environ: dict[str, str] | None = None) -> tuple[int, str]:
    err = io.StringIO()
    ctx = CliContext(stdout=_StdoutThatFails(error), stderr=err, environ=environ or {})
    return main(arguments, ctx), err.getvalue()


def _logged_record(data: Path, record_id: str) -> dict[str, object]:
    out = io.StringIO()
    ctx = CliContext(stdout=out, stderr=io.StringIO(), environ={})
    assert main(["--data-dir", str(data), "inspect", "logs", "--id", record_id, "--json"], ctx) == 0
    rows = json.loads(out.getvalue())["rows"]
    assert len(rows) == 1
    row: dict[str, object] = rows[0]
    return row


def test_an_internal_error_names_the_record_that_keeps_its_redacted_traceback(
    db: Database, data_location: DataLocation,
) -> None:
    code, err = _run(["--data-dir", str(data_location.directory), "version"], error=LookupError(f"no {_KEY_LIKE}"))
    assert code == 1
    named = re.search(r"codeflux version: internal error \(LookupError\), logged as (\d+) .*; run with --debug", err)
    assert named is not None, err
    assert "Traceback" not in err and _KEY_LIKE not in err
    record = _logged_record(data_location.directory, named.group(1))
    assert record["event"] == "cli.internal-error" and record["level"] == "error"
    fields = json.loads(str(record["fields_json"]))
    assert fields["command"] == "codeflux version" and fields["error_class"] == "LookupError"
    assert fields["traceback"].startswith("Traceback (most recent call last):")
    assert "[REDACTED]" in fields["traceback"] and "LookupError: no " in fields["traceback"]
    assert _KEY_LIKE not in fields["traceback"]


def test_debug_or_codeflux_debug_prints_the_redacted_traceback(db: Database, data_location: DataLocation) -> None:
    data = str(data_location.directory)
    for arguments, environ in ((["--data-dir", data, "--debug", "version"], {}),
                               (["--data-dir", data, "version", "--debug"], {}),
                               (["--data-dir", data, "prices", "list", "--debug"], {}),  # after a verb too
                               (["--data-dir", data, "version"], {"CODEFLUX_DEBUG": "1"})):
        code, err = _run(arguments, error=LookupError(f"no {_KEY_LIKE}"), environ=environ)
        assert code == 1
        assert "Traceback (most recent call last):" in err and "LookupError: no [REDACTED]" in err, arguments
        assert _KEY_LIKE not in err
        assert re.search(r"internal error \(LookupError\), logged as \d+", err), err
        assert "run with --debug" not in err


def test_without_a_database_the_message_says_the_traceback_was_not_logged(tmp_path: Path) -> None:
    data = tmp_path / "empty"
    code, err = _run(["--data-dir", str(data), "version"], error=LookupError("boom"))
    assert code == 1
    assert "internal error (LookupError), not logged (this data directory has no database yet)" in err
    assert "logged as" not in err
    assert not data.exists()  # nothing was created just to hold the record


def test_a_broken_pipe_that_is_not_standard_outputs_reader_is_an_internal_error(tmp_path: Path) -> None:
    # the positive control of the quiet exit (tests/integration/test_cli_usage.py): a BrokenPipeError from
    # anything but a closed standard output (here: a stream with no descriptor) is a bug and said as one
    code, err = _run(["--data-dir", str(tmp_path / "d"), "version"], error=BrokenPipeError(32, "Broken pipe"))
    assert code == 1
    assert "internal error (BrokenPipeError), not logged" in err
