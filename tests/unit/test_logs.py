"""Application logs: JSON or console lines on stderr, every string redacted, records handed to the store."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.credentials import Secret
from codeflux.domain.errors import UsageError
from codeflux.logs import LogRecord, configure_logging, get_logger, reset_logging
from codeflux.redact import REDACTED, Redactor

REPO_ROOT = Path(__file__).resolve().parents[2]
LOADED_KEY = "loaded-key-Qm9WZ3Jh2XpT7vLc"
PATTERN_KEY = "sk-ant-api03-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"
FIXED_US = 1_700_000_000_123_456


@pytest.fixture(autouse=True)
def unconfigured_after_each_test() -> Iterator[None]:
    yield
    reset_logging()


@pytest.fixture
def redactor() -> Redactor:
    redactor = Redactor()
    redactor.add_secret(LOADED_KEY)
    return redactor


def json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_a_record_is_one_json_line_when_stderr_is_not_a_terminal(redactor: Redactor) -> None:
    out = io.StringIO()
    configure_logging(stream=out, redactor=redactor, clock_us=lambda: FIXED_US)
    get_logger("store").info("backup written", pages=12)
    [line] = json_lines(out)
    assert line == {
        "event": "backup written", "level": "info", "component": "store", "pages": 12,
        "at_us": FIXED_US, "timestamp": "2023-11-14T22:13:20.123456+00:00",
    }  # fmt: skip


@pytest.mark.security
def test_every_string_in_a_record_is_redacted(redactor: Redactor) -> None:
    out = io.StringIO()
    configure_logging(stream=out, redactor=redactor)
    get_logger("providers").warning(
        f"calling with {LOADED_KEY}",
        header=f"Bearer {PATTERN_KEY}",
        nested={"inner": [f"x {LOADED_KEY} y", 3]},
        secret=Secret("a-secret-object-value"),
        thing=ValueError(f"failed for {PATTERN_KEY}"),
    )
    text = out.getvalue()
    for leaked in (LOADED_KEY, PATTERN_KEY, "a-secret-object-value"):
        assert leaked not in text
    [line] = json_lines(out)
    assert line["event"] == f"calling with {REDACTED}"
    assert line["nested"] == {"inner": [f"x {REDACTED} y", 3]}
    assert line["secret"] == REDACTED


@pytest.mark.security
def test_fields_named_like_credentials_are_hidden_whatever_their_value(redactor: Redactor) -> None:
    out = io.StringIO()
    configure_logging(stream=out, redactor=redactor)
    get_logger("cli").info("login", password="pw", api_key="short", session_token="t", input_tokens=1234)
    [line] = json_lines(out)
    assert (line["password"], line["api_key"], line["session_token"]) == (REDACTED, REDACTED, REDACTED)
    assert line["input_tokens"] == 1234


@pytest.mark.security
def test_a_logged_exception_traceback_is_redacted(redactor: Redactor) -> None:
    out = io.StringIO()
    configure_logging(stream=out, redactor=redactor)
    try:
        raise RuntimeError(f"provider rejected {LOADED_KEY}")
    except RuntimeError:
        get_logger("providers").exception("call failed")
    [line] = json_lines(out)
    assert LOADED_KEY not in out.getvalue()
    assert f"RuntimeError: provider rejected {REDACTED}" in str(line["exception"])


@pytest.mark.security
def test_standard_library_logging_goes_through_the_same_redaction(redactor: Redactor) -> None:
    out = io.StringIO()
    configure_logging(stream=out, redactor=redactor)
    logging.getLogger("httpx").info("sending %s", f"Authorization: Bearer {PATTERN_KEY}")
    [line] = json_lines(out)
    assert PATTERN_KEY not in out.getvalue()
    assert line["logger"] == "httpx"


def test_each_record_is_handed_to_the_store_redacted(redactor: Redactor) -> None:
    saved: list[LogRecord] = []
    configure_logging(
        stream=io.StringIO(), persist=saved.append, redactor=redactor, clock_us=lambda: FIXED_US
    )
    get_logger("worker").error(f"tool printed {LOADED_KEY}", exit_code=2)
    [record] = saved
    assert (record.level, record.event, record.at_us) == ("error", f"tool printed {REDACTED}", FIXED_US)
    assert json.loads(record.fields_json) == {"component": "worker", "exit_code": 2}


def test_records_below_the_level_are_neither_written_nor_saved(redactor: Redactor) -> None:
    out, saved = io.StringIO(), list[LogRecord]()
    configure_logging(level="warning", stream=out, persist=saved.append, redactor=redactor)
    log = get_logger("store")
    log.info("routine")
    log.warning("unusual")
    assert [line["event"] for line in json_lines(out)] == ["unusual"]
    assert [record.event for record in saved] == ["unusual"]


def test_a_failing_store_never_breaks_the_code_that_logged(redactor: Redactor) -> None:
    out = io.StringIO()

    def broken(record: LogRecord) -> None:
        raise OSError("disk full")

    configure_logging(stream=out, persist=broken, redactor=redactor)
    get_logger("store").info("still works")
    assert "could not be saved to the database (OSError)" in out.getvalue()
    assert [line["event"] for line in json_lines_after_notice(out)] == ["still works"]


def json_lines_after_notice(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_a_terminal_gets_the_console_renderer(redactor: Redactor) -> None:
    controller, terminal = os.openpty()
    with (
        os.fdopen(terminal, "w", encoding="utf-8") as tty,
        os.fdopen(controller, "rb", buffering=0) as reader,
    ):
        configure_logging(stream=tty, redactor=redactor)
        get_logger("cli").info(f"hello {LOADED_KEY}")
        tty.flush()
        shown = reader.read(4096).decode("utf-8", "replace")
    assert "hello [REDACTED]" in shown
    assert not shown.lstrip().startswith("{")
    assert LOADED_KEY not in shown


def _console_line_on_a_terminal(redactor: Redactor, **colour: bool) -> str:
    controller, terminal = os.openpty()
    with (
        os.fdopen(terminal, "w", encoding="utf-8") as tty,
        os.fdopen(controller, "rb", buffering=0) as reader,
    ):
        configure_logging(stream=tty, redactor=redactor, **colour)
        get_logger("cli").warning("disk nearly full")
        tty.flush()
        return reader.read(4096).decode("utf-8", "replace")


def test_a_terminal_gets_colour_unless_no_color_is_set(redactor: Redactor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in _console_line_on_a_terminal(redactor)  # the control: a terminal is coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _console_line_on_a_terminal(redactor)
    assert "disk nearly full" in plain and "\x1b[" not in plain
    monkeypatch.delenv("NO_COLOR")
    assert "\x1b[" not in _console_line_on_a_terminal(redactor, colour=False)  # the CLI's own decision wins


def test_an_unknown_level_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="debug, info, warning, error, critical"):
        configure_logging(level="verbose")


def test_reset_puts_standard_logging_back_as_it_was() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging(stream=io.StringIO(), level="debug")
    configure_logging(stream=io.StringIO(), level="error")
    reset_logging()
    assert (root.handlers, root.level) == (handlers, level)


def test_importing_the_module_configures_nothing() -> None:
    probe = (
        "import logging, structlog, codeflux.logs\n"
        "print(structlog.is_configured(), len(logging.getLogger().handlers))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert result.stdout.split() == ["False", "0"]
    assert result.stderr == ""
