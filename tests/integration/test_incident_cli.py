"""``codeflux incident`` as a person runs it: through a running coordinator's socket (separate processes, the
real ``codeflux start``), and in process for the input refusals (a terminal or nothing on standard input)."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import make_repository


def traceback(line: int) -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "/build/{line}/calc/pkg/calc.py", line {line}, in add\n'
            "    return a + b\n"
            f"TypeError: can't add item {line * 7}\n")


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Path]:
    """A real ``codeflux start`` serving a fresh data directory (its socket is what the CLI finds)."""
    data = tmp_path / "data"
    process = subprocess.Popen(
        [sys.executable, "-B", "-m", "codeflux", "--data-dir", str(data), "start", "--no-browser",
         "--address", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "BROWSER": "false"})
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("open: "):
                break
        else:
            raise AssertionError(f"codeflux start printed no URL: {process.communicate(timeout=30)}")
        yield data
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_incident_commands_through_the_running_coordinator(coordinator: Path, tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    first = run_codeflux("incident", "report", "--repo", str(repo), data_dir=coordinator, stdin=traceback(2))
    assert first.code == 0, first.err
    assert "via the running coordinator" in first.err
    found = re.search(r"new incident (inc_[0-9a-z]+)", first.out)
    assert found, first.out
    incident_id = found.group(1)
    text_file = tmp_path / "trace.txt"
    text_file.write_text(traceback(40))
    again = run_codeflux("incident", "report", "--repo", str(repo), "--file", str(text_file), data_dir=coordinator)
    assert again.code == 0 and f"known incident {incident_id}: occurrence 2" in again.out, again.out + again.err
    assert "new  seen 2 times" in again.out and "TypeError in pkg/calc.py:add: can't add item #" in again.out
    dismissed = run_codeflux("incident", "dismiss", incident_id, "--reason", "fixed upstream", data_dir=coordinator)
    assert dismissed.code == 0, dismissed.err
    assert "via the running coordinator" in dismissed.err
    assert "state 2: dismissed" in dismissed.out and "by user: fixed upstream" in dismissed.out
    assert "  | TypeError: can't add item 280" in dismissed.out  # the newest occurrence, as stored (redacted)


def _run_in_process(data: Path, repo: Path, stdin: io.TextIOBase) -> tuple[int, str]:
    err = io.StringIO()
    code = main(["--data-dir", str(data), "incident", "report", "--repo", str(repo)],
                CliContext(stdin=stdin, stdout=io.StringIO(), stderr=err))  # type: ignore[arg-type]
    return code, err.getvalue()


def test_report_refuses_a_terminal_and_empty_input(tmp_path: Path) -> None:
    repo, data = make_repository(tmp_path).path, tmp_path / "data"
    leader, follower = os.openpty()
    try:
        with open(follower, encoding="utf-8", closefd=False) as terminal:
            code, err = _run_in_process(data, repo, terminal)
        assert code == 2 and "standard input is a terminal" in err
    finally:
        os.close(leader)
        os.close(follower)
    code, err = _run_in_process(data, repo, io.StringIO("  \n\n"))
    assert code == 2 and "the input is empty" in err
    code, err = _run_in_process(data, repo, io.StringIO(traceback(3)))  # positive control: text is taken
    assert code == 0, err
    out, err_out = io.StringIO(), io.StringIO()
    listed = main(["--data-dir", str(data), "incident", "list", "--repo", str(repo)],
                  CliContext(stdout=out, stderr=err_out))
    assert listed == 0 and "new  seen once" in out.getvalue(), err_out.getvalue()
    refused = main(["--data-dir", str(data), "incident", "dismiss", out.getvalue().split()[0], "--reason", "  "],
                   CliContext(stdout=io.StringIO(), stderr=err_out))
    assert refused == 2 and "--reason is empty" in err_out.getvalue()
