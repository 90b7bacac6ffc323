"""Runs that stop before they are done, through the real CLI as separate processes, and their resume in
a new process: SIGTERM landing at the loop → validation handover, SIGINT / SIGTERM while a plan is being
drafted (``codeflux run``, ``codeflux task plan``), and a scripted run that runs out of turns.

Real signals to real processes. To land a signal inside a window that normally lasts milliseconds, the
child is the real CLI (``codeflux.cli.main.main``) with one function wrapped to announce itself (a marker
file) and then wait a few seconds before doing its real work; nothing else is replaced. The scripted
provider is not a model."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import ENV, cli, demo
from tests.integration.test_task_cli_verbs import DONE, FIX, PLAN, rows, script, state, turn

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEMO_ARGV = DEMO_TEST_COMMAND.split()
FIX_ADD: tuple[str, dict[str, object]] = (FIX[0], dict(FIX[1]))

# The real CLI in a child process, with ``TARGET`` (module:function) wrapped: announce, wait, then go on.
CHILD = """
import importlib, sys, time
from pathlib import Path

marker, target, argv = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
module_name, _, name = target.partition(":")
module = importlib.import_module(module_name)
original = getattr(module, name)


def announced(*args, **kwargs):
    marker.write_text("here")
    time.sleep(4)
    return original(*args, **kwargs)


setattr(module, name, announced)
from codeflux.cli.main import main

sys.exit(main(argv))
"""


def interrupted(tmp_path: Path, target: str, argv: list[str], number: signal.Signals) -> tuple[int, str, str]:
    """Run the CLI with ``target`` wrapped; send ``number`` once the wrapped function is entered."""
    marker = tmp_path / f"{target.replace(':', '.')}.marker"
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), str(marker), target, *argv],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            if child.poll() is not None or time.monotonic() > deadline:
                out, err = child.communicate(timeout=10)
                raise AssertionError(f"{target} was never reached:\n{out}\n{err}")
            time.sleep(0.05)
        child.send_signal(number)
        out, err = child.communicate(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print(f"$ codeflux {' '.join(argv)}  ({number.name} in {target})\n{out}{err}exit {child.returncode}\n")
    return child.returncode, out, err


def run_argv(data: Path, repo: Path, scripted: Path, *extra: str) -> list[str]:
    return ["--data-dir", str(data), "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"),
            "--provider", "scripted", "--script", str(scripted), "--budget", "1.00", *extra]


def only_task(data: Path) -> str:
    [(task_id,)] = rows(data, "SELECT id FROM tasks")
    return str(task_id)


def transitions(data: Path, task_id: str) -> list[str]:
    return [str(to) for (to,) in rows(data, "SELECT to_state FROM task_transitions WHERE task_id = ? ORDER BY id",
                                      task_id)]


def test_sigterm_at_the_handover_to_validation_pauses_cleanly_and_a_new_process_validates(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "s.json", turn("fix", FIX_ADD), turn("Every step is done.", DONE))
    argv = run_argv(data, repo, scripted, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes")

    code, out, err = interrupted(tmp_path, "codeflux.coordinator.runs.runner:detect_test_command", argv, signal.SIGTERM)

    assert code == 4, out + err
    assert "SIGTERM: pausing task" in err and "at the handover from the loop to validation" in out
    task_id = only_task(data)
    assert state(data, task_id) == "paused"
    assert "validating" not in transitions(data, task_id)  # validation never began
    # the only pipeline request is the loop's own check at finish (issue 15 item 2); validation recorded none
    assert rows(data, "SELECT count(*), min(idempotency_key LIKE 'loop:%') FROM tool_requests WHERE task_id = ? "
                "AND source = 'pipeline'", task_id) == [(1, 1)]
    assert rows(data, "SELECT count(*), min(ended_at_us IS NOT NULL) FROM task_runs WHERE task_id = ?",
                task_id) == [(1, 1)]
    assert rows(data, "SELECT count(*) FROM stage_ledger WHERE task_id = ? AND attempt = 1", task_id) == [(37,)]
    assert rows(data, "SELECT trigger_kind FROM checkpoints WHERE task_id = ? ORDER BY sequence DESC LIMIT 1",
                task_id) == [("shutdown",)]

    # a new process: the kept conversation had finished the implementation, so no model turn is needed
    nothing_left = script(tmp_path / "empty.json")
    resumed = cli(data, "task", "resume", task_id, "--provider", "scripted", "--script", str(nothing_left),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")

    assert resumed.code == 0, resumed.out + resumed.err
    assert "the run's conversation continues" in resumed.out and "1 of 1 plan step(s) done" in resumed.out
    assert "stage ledger (attempt 2)" in resumed.out and "3 passed" in resumed.out
    assert state(data, task_id) == "awaiting-review"
    assert rows(data, "SELECT DISTINCT source FROM tool_requests WHERE task_id = ? AND tool = 'run_command'",
                task_id) == [("pipeline",)]


def test_sigint_while_codeflux_run_drafts_the_plan_records_it_then_stops_before_approving(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "s.json", turn("fix", FIX_ADD), turn("Every step is done.", DONE))
    argv = run_argv(data, repo, scripted, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes")

    code, out, err = interrupted(tmp_path, "codeflux.coordinator.runs.planner:_ask", argv, signal.SIGINT)

    assert code == 4, out + err
    assert "SIGINT: stopping once the step under way is recorded" in err
    assert "SIGINT: stopped after recording plan revision 1; nothing was approved or run" in out
    assert "Traceback" not in err and "interrupted" not in err
    task_id = only_task(data)
    assert state(data, task_id) == "awaiting-plan-approval"
    assert rows(data, "SELECT count(*) FROM plan_revisions WHERE task_id = ?", task_id) == [(1,)]
    assert rows(data, "SELECT count(*) FROM plan_decisions WHERE task_id = ?", task_id) == [(0,)]
    assert rows(data, "SELECT count(*) FROM task_runs WHERE task_id = ?", task_id) == [(0,)]
    # the printed approval goes on from there
    found = re.search(r"approve-plan (\S+) --revision (\d+) --sha256 ([0-9a-f]{64})", out)
    assert found is not None and found.group(1) == task_id
    approved = cli(data, "task", "approve-plan", task_id, "--revision", found.group(2), "--sha256", found.group(3))
    assert approved.code == 0 and state(data, task_id) == "ready"


def test_sigterm_while_task_plan_drafts_records_the_plan_and_exits_4(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    created = cli(data, "task", "create", "--repo", str(repo), "--requirement", (repo / "TASK.md").read_text().strip())
    task_id = re.search(r"task (tsk_[0-9a-f]+) created", created.out).group(1)  # type: ignore[union-attr]
    assert cli(data, "budget", "set", "--task", task_id, "--limit", "1.00").code == 0
    scripted = script(tmp_path / "s.json")

    code, out, err = interrupted(tmp_path, "codeflux.coordinator.runs.planner:_ask",
                                 ["--data-dir", str(data), "task", "plan", task_id, "--provider", "scripted",
                                  "--script", str(scripted)], signal.SIGTERM)

    assert code == 4, out + err
    assert "SIGTERM: stopped after recording plan revision 1" in out
    assert state(data, task_id) == "awaiting-plan-approval"


def test_a_scripted_run_that_runs_out_of_turns_is_paused_exits_1_and_resumes_in_a_new_process(
        tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    short = script(tmp_path / "short.json", turn("fix", FIX_ADD))  # the script ends before the run does

    ran = cli(data, *run_argv(data, repo, short, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes")[2:])

    assert ran.code == 1, ran.out + ran.err  # the one table: the operation (a model call) failed
    task_id = only_task(data)
    assert state(data, task_id) == "paused"
    assert "has no turn left" in ran.out and f"codeflux task resume {task_id}" in ran.out
    assert "stage ledger (attempt 1): 37 rows" in ran.out
    [(reason,)] = rows(data, "SELECT reason FROM task_transitions WHERE task_id = ? ORDER BY id DESC LIMIT 1",
                       task_id)
    assert "the model call failed" in str(reason) and "has no turn left" in str(reason)

    more = tmp_path / "more.json"
    more.write_text(json.dumps({"plan": PLAN, "run": [turn("test", ("run_command", {"argv": DEMO_ARGV})),
                                                      turn("Every step is done.", DONE)]}))
    resumed = cli(data, "task", "resume", task_id, "--provider", "scripted", "--script", str(more),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")

    assert resumed.code == 0, resumed.out + resumed.err
    # the prompt, the approved operations, the fix and its result
    assert "the run's conversation continues (4 message(s) kept, 1 of 1 plan step(s) done)" in resumed.out
    assert state(data, task_id) == "awaiting-review"
    assert rows(data, "SELECT count(*) FROM tool_requests WHERE task_id = ? AND tool = 'edit_file'", task_id) == [
        (1,)]
