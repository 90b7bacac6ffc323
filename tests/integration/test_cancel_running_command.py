"""``codeflux task cancel`` from a second terminal while ``codeflux run`` runs a long command (issue 16 item 6).

Before: the cancelling process (in-process channel, no coordinator) removed the worktree under the running
command, which ran on to its end. Now the cancelling process leaves the worktree while an execution intent of
the task has no result; the running process notices the cancellation while the command runs, its worker kills
the command's process group, the execution is recorded ``cancelled``, and the run removes the worktree when
it ends. Real processes: the CLI twice, a real worker, a real ``sleep``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from tests.fixtures.service_runs import Coordinator, call, control, running_coordinator, settle, start_ready
from tests.integration.test_headless_run import ENV, cli, demo
from tests.integration.test_task_cli_verbs import DONE, planned_task, rows, script, state, turn

pytestmark = pytest.mark.slow

# Each command's duration carries this test process's pid: other checkouts may run these tests on the same
# machine at the same time, and their `sleep` must never be taken for ours.
_OURS = f".{os.getpid()}"
SECONDS_120, SECONDS_121, SECONDS_123 = f"120{_OURS}", f"121{_OURS}", f"123{_OURS}"
LONG = ["sleep", SECONDS_120]
UNFINISHED = "SELECT count(*) FROM tool_executions WHERE state IN ('intended', 'running')"


def sleeping_processes(marker: str) -> list[int]:
    """Pids of processes whose command line is exactly ``sleep <marker>``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()] or argv[:2] == [b"/usr/bin/sleep", marker.encode()]:
                found.append(int(entry.name))
    return found


def allow_and_wait_for_the_command(c: Coordinator, marker: str) -> pb.TaskView:
    """Start the ready task, allow its one ``sleep <marker>`` once and wait until that command runs."""
    waiting = start_ready(c)
    assert waiting.state == "awaiting-authority", waiting
    call(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(), task_id=waiting.task_id, request_id=waiting.pending_approvals[0].request_id,
        decision="allow-once"))
    deadline = time.monotonic() + 60
    while not sleeping_processes(marker):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    return waiting


def test_cancel_from_a_second_terminal_stops_the_running_command_before_its_worktree_goes(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "long.json", turn("wait", ("run_command", {"argv": LONG})),
                      turn("Every step is done.", DONE))
    argv = [sys.executable, "-m", "codeflux", "--data-dir", str(data), "run", "--repo", str(repo),
            "--requirement-file", str(repo / "TASK.md"), "--provider", "scripted", "--script", str(scripted),
            "--budget", "1.00", "--allow", f"run_command:sleep {SECONDS_120}", "--yes"]
    started = time.monotonic()
    running = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **ENV})
    try:
        deadline = time.monotonic() + 90
        while not ((data / "codeflux.sqlite3").exists() and sleeping_processes(SECONDS_120)
                   and rows(data, UNFINISHED) == [(1,)]):
            assert running.poll() is None and time.monotonic() < deadline, "the command never started"
            time.sleep(0.1)
        commands = sleeping_processes(SECONDS_120)
        [(task_id, worktree)] = rows(data, "SELECT id, worktree_path FROM tasks")
        worktree_path = Path(str(worktree))

        cancelled = cli(data, "task", "cancel", str(task_id))

        assert cancelled.code == 0, cancelled.err
        # the cancel says what it did: the command stopped; the worktree left to the run, which removes it once
        # the command has stopped — or already did, before the cancel replied
        said = cancelled.out + cancelled.err
        assert f"task {task_id} cancelled; its running command was stopped (recorded cancelled) — the run " in said
        assert ("the run removes the worktree when the command has stopped" in cancelled.out
                or "the run removed the worktree once the command had stopped" in cancelled.out), said
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate(timeout=30)
    assert time.monotonic() - started < 100  # the 120 s command was stopped, not waited for
    assert state(data, str(task_id)) == "cancelled"
    assert rows(data, "SELECT e.state FROM tool_executions e JOIN tool_requests r ON r.id = e.request_id "
                      "WHERE e.task_id = ? AND r.tool = 'run_command'", task_id) == [("cancelled",)], out + err
    assert not set(commands) & set(sleeping_processes(SECONDS_120))  # its process group was killed
    assert not worktree_path.exists(), out + err
    # the worktree went only after the command had stopped (the cancelling process left it to the run)
    kinds = [str(kind) for (kind,) in rows(data, "SELECT kind FROM events WHERE session_id = 'ses_' || substr(?, 5) "
                                                 "ORDER BY sequence", task_id)]
    assert "worktree-removed" in kinds and "tool-execution-finished" in kinds, kinds
    assert kinds.index("worktree-removed") > max(i for i, k in enumerate(kinds) if k == "tool-execution-finished")
    assert "its running command was stopped and its worktree removed" in out


def test_cancel_through_a_running_coordinator_stops_its_own_runs_command_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``codeflux start`` runs the task in a thread of its own process (the scheduler): the CancelTask handler
    leaves the worktree to that thread, which stops the command; the reply says the command was stopped and
    what became of the worktree."""
    scripted = script(tmp_path / "coordinator.json", turn("wait", ("run_command", {"argv": ["sleep", SECONDS_123]})),
                      turn("Every step is done.", DONE))
    coordinating = running_coordinator(tmp_path, monkeypatch, script=scripted)
    c = next(coordinating)
    try:
        waiting = allow_and_wait_for_the_command(c, SECONDS_123)
        commands = sleeping_processes(SECONDS_123)

        cancelled = call(c, "TaskService/CancelTask", pb.TaskActionRequest(control=control(), task_id=waiting.task_id))

        assert isinstance(cancelled, pb.TaskView) and cancelled.state == "cancelled"
        outcome = cancelled.cancel_outcome
        assert (outcome.running_command, outcome.command_state) == ("stopped", "cancelled"), outcome
        assert (outcome.worktree, outcome.by_the_run) in (("left-to-the-run", False), ("removed", True)), outcome
        assert outcome.summary.startswith(f"task {waiting.task_id} cancelled; its running command was stopped "
                                          "(recorded cancelled) — the run remove"), outcome.summary
        assert not set(commands) & set(sleeping_processes(SECONDS_123))
        settle(c, waiting.task_id)
        deadline = time.monotonic() + 30  # the thread's end removes it (the run leaves the table first)
        while not (shown := call(c, "TaskService/GetTask", pb.GetTaskRequest(task_id=waiting.task_id))
                   ).HasField("worktree_disposal"):
            assert time.monotonic() < deadline, "the run never disposed of the worktree"
            time.sleep(0.1)
        assert isinstance(shown, pb.TaskView)
        assert shown.worktree_disposal.removed and not Path(shown.worktree).exists(), shown.worktree_disposal
    finally:
        coordinating.close()


def test_cancel_of_an_idle_task_says_its_worktree_was_removed_and_no_command_was_running(tmp_path: Path) -> None:
    """No command runs: the cancel removes the worktree itself and says so (and says nothing of a command)."""
    scripted = script(tmp_path / "idle.json", turn("look", ("read_file", {"path": "calc/ops.py"})))
    _repo, data, task_id = planned_task(tmp_path, scripted)
    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(scripted))
    assert started.code == 1 and state(data, task_id) == "paused", started.out + started.err  # the script ran out
    [(worktree,)] = rows(data, "SELECT worktree_path FROM tasks WHERE id = ?", task_id)
    assert Path(str(worktree)).is_dir()

    cancelled = cli(data, "task", "cancel", task_id)

    assert cancelled.code == 0, cancelled.err
    assert f"task {task_id} cancelled; its worktree was removed" in cancelled.out, cancelled.out
    assert "command" not in cancelled.out
    assert not Path(str(worktree)).exists()


def test_ctrl_z_of_codeflux_run_records_the_killed_command_cancelled_or_unknown_never_its_failure(
        tmp_path: Path) -> None:
    """``Ctrl-Z`` stops the terminal's foreground process group (the run, not its worker, which has its own
    session) for 7 s: the worker's lease lapses and it kills the command; the record says cancelled or
    outcome-unknown — never "failed exit -9", which would blame the command."""
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "stop.json", turn("wait", ("run_command", {"argv": ["sleep", SECONDS_121]})),
                      turn("Every step is done.", DONE))
    argv = [sys.executable, "-m", "codeflux", "--data-dir", str(data), "run", "--repo", str(repo),
            "--requirement-file", str(repo / "TASK.md"), "--provider", "scripted", "--script", str(scripted),
            "--budget", "1.00", "--allow", f"run_command:sleep {SECONDS_121}", "--yes"]
    running = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **ENV}, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not ((data / "codeflux.sqlite3").exists() and sleeping_processes(SECONDS_121)):
            assert running.poll() is None and time.monotonic() < deadline, "the command never started"
            time.sleep(0.1)
        commands = sleeping_processes(SECONDS_121)
        os.killpg(running.pid, signal.SIGSTOP)  # what the terminal does on Ctrl-Z
        time.sleep(7)
        assert Path(f"/proc/{running.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"  # it was stopped
        os.killpg(running.pid, signal.SIGCONT)  # `fg`
        out, err = running.communicate(timeout=90)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
            running.communicate(timeout=30)
    recorded = rows(data, "SELECT e.state, e.exit_code FROM tool_executions e JOIN tool_requests r "
                          "ON r.id = e.request_id WHERE r.tool = 'run_command'")
    assert len(recorded) == 1, out + err
    executed, exit_code = recorded[0]
    assert executed in ("cancelled", "outcome-unknown"), (recorded, out, err)
    assert not (executed == "failed" and exit_code == -9), recorded
    assert not set(commands) & set(sleeping_processes(SECONDS_121))  # the stopped run's command did not live on
    assert "failed exit -9" not in out, out


def test_a_second_ctrl_c_of_a_stopping_coordinator_cancels_the_running_command_instead_of_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 item 8: ``codeflux start``'s first signal pauses runs between turns and waits for a running command;
    a second one (:meth:`BackgroundRuns.cancel_running_commands`) cancels it: the worker kills its process group,
    the execution is recorded ``cancelled`` and the shutdown ends long before the command would have."""
    marker = f"124{_OURS}"
    scripted = script(tmp_path / "second.json", turn("wait", ("run_command", {"argv": ["sleep", marker]})),
                      turn("Every step is done.", DONE))
    coordinating = running_coordinator(tmp_path, monkeypatch, script=scripted)
    c = next(coordinating)
    try:
        waiting = allow_and_wait_for_the_command(c, marker)
        assert c.app.runs.running_commands() == 1  # what the first Ctrl-C says it waits for
        started = time.monotonic()
        c.app.runs.cancel_running_commands()  # the second Ctrl-C
        stopped = c.app.runs.shutdown(timeout=60)
        assert time.monotonic() - started < 30 and not sleeping_processes(marker)
        assert [task.value for task in stopped] == [waiting.task_id]
        shown = call(c, "TaskService/GetTask", pb.GetTaskRequest(task_id=waiting.task_id))
        assert isinstance(shown, pb.TaskView) and shown.state == "paused", shown.state
        executions = rows(c.data.directory, "SELECT e.state FROM tool_executions e JOIN tool_requests r ON "
                          "r.id = e.request_id WHERE e.task_id = ? AND r.tool = 'run_command'", waiting.task_id)
        assert executions == [("cancelled",)]
    finally:
        coordinating.close()
