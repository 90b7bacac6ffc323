"""SIGTERM / SIGINT during a headless run: the run stops between loop turns, a ``shutdown`` checkpoint is
taken, the task is left ``paused`` (resumable) and the exit code is 4 — the real CLI as a process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import ENV, demo
from tests.integration.test_task_cli_verbs import (
    DEMO_ARGV,
    DONE,
    FIX,
    _wait_for_sleep,
    planned_task,
    rows,
    script,
    state,
    turn,
)

pytestmark = pytest.mark.slow

# A distinctive duration (about 5.017 s) carrying this test process's pid, so the check for a left-over process
# finds only ours: other pytest-xdist workers, and other checkouts, run these tests at the same time.
SLOW = f"5.017{os.getpid():07d}"


def slow(path: Path) -> Path:
    return script(path, turn("fix", FIX), turn("wait", ("run_command", {"argv": ["sleep", SLOW]})),
                  turn("test", ("run_command", {"argv": DEMO_ARGV})), turn("Every step is done.", DONE))


def leftover_sleeps() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", SLOW.encode()]:
                found.append(int(entry.name))
    return found


def interrupt(argv: list[str], data: Path, task_id: str | None, number: signal.Signals) -> tuple[int, str, str]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **ENV})
    try:
        _wait_for_sleep(data, task_id)
        time.sleep(0.3)  # the command is executing
        process.send_signal(number)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    print(out, err)
    return process.returncode, out, err


def test_sigterm_during_codeflux_run_pauses_with_a_shutdown_checkpoint_and_exit_4(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    argv = [sys.executable, "-m", "codeflux", "--data-dir", str(data), "run", "--repo", str(repo),
            "--requirement-file", str(repo / "TASK.md"), "--provider", "scripted", "--script",
            str(slow(tmp_path / "slow.json")), "--budget", "1.00", "--allow", f"run_command:sleep {SLOW}",
            "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes"]

    code, out, err = interrupt(argv, data, None, signal.SIGTERM)

    assert code == 4, out + err
    assert "SIGTERM: pausing task" in err
    task_id = str(rows(data, "SELECT id FROM tasks")[0][0])
    assert state(data, task_id) == "paused"
    triggers = [r[0] for r in rows(data, "SELECT trigger_kind FROM checkpoints WHERE task_id = ? ORDER BY sequence",
                                   task_id)]
    assert triggers[-1] == "shutdown", triggers
    assert "shutdown checkpoint" in out and "exit 4" in out
    assert leftover_sleeps() == []
    # the slow command finished (the stop came between turns); the tests never ran
    assert rows(data, "SELECT count(*) FROM tool_requests WHERE task_id = ? AND operation_json LIKE '%pytest%'",
                task_id) == [(0,)]


def test_sigint_during_task_start_pauses_resumably(tmp_path: Path) -> None:
    _repo, data, task_id = planned_task(tmp_path, slow(tmp_path / "slow.json"))
    argv = [sys.executable, "-m", "codeflux", "--data-dir", str(data), "task", "start", task_id,
            "--provider", "scripted", "--script", str(tmp_path / "slow.json"), "--allow", f"run_command:sleep {SLOW}",
            "--allow", f"run_command:{DEMO_TEST_COMMAND}"]

    code, out, err = interrupt(argv, data, task_id, signal.SIGINT)

    assert code == 4, out + err
    assert state(data, task_id) == "paused"
    assert rows(data, "SELECT count(*) FROM checkpoints WHERE task_id = ? AND trigger_kind = 'shutdown'",
                task_id) == [(1,)]
    assert leftover_sleeps() == []
    shown = subprocess.run([sys.executable, "-m", "codeflux", "--data-dir", str(data), "task", "show",
                            task_id], capture_output=True, text=True, check=True).stdout
    assert "resume          available" in shown
