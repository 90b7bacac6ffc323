"""One call path: every state command prints the same facts whether or not ``codeflux start`` runs.

The issue's reproduction: ``codeflux task show`` printed base, worktree, plan and budget without a
coordinator and none of them with one, and ``codeflux budget|prices`` wrote the database behind a running
coordinator's back. Here each command runs twice, as separate processes — once in process, once while a real
``codeflux start`` serves the data directory — and the two outputs must be identical; only standard error
names the coordinator ("via"). Mutations run once each way on twin tasks and are compared with the task ids
masked.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.fixtures.cli import CliRun
from tests.fixtures.keyring_service import SECRET_SERVICE_READER
from tests.integration.test_headless_run import ENV, cli, demo
from tests.integration.test_task_cli_verbs import DONE, FIX, script, turn

pytestmark = pytest.mark.slow

DEMO_ARGV = DEMO_TEST_COMMAND.split()


@contextmanager
def coordinator(data: Path, scripted: Path) -> Iterator[None]:
    """A real ``codeflux start`` on the data directory, the scripted provider answering its plan drafts."""
    process = subprocess.Popen(
        [sys.executable, "-B", "-m", "codeflux", "--data-dir", str(data), "start", "--no-browser",
         "--address", "127.0.0.1:0", "--provider", "scripted", "--script", str(scripted)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **ENV, "BROWSER": "false"})  # the environment `cli` runs commands with
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("open: "):
                break
        else:
            raise AssertionError(f"codeflux start printed no URL: {process.communicate(timeout=30)}")
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def task_of(run: CliRun) -> str:
    found = re.search(r"task (tsk_[0-9a-f]+) created", run.out)
    assert found, run.out + run.err
    return found.group(1)


def masked(text: str, *task_ids: str) -> str:
    for task_id in task_ids:
        text = text.replace(task_id, "tsk_X")
    text = re.sub(r"\b[0-9a-f]{64}\b", "H", text)  # plan hashes: bound to the task id
    return re.sub(r"/worktrees/[^/\s]+/tsk_X", "/worktrees/R/tsk_X", text)


def pin_reason_masked(text: str) -> str:
    return re.sub(r"(?m)^  pinned by    .*$", "  pinned by    (why)", text)


def reviewed_task(data: Path, repo: Path, scripted: Path, requirement: str) -> str:
    """A task run to review in this process (``task start`` without a coordinator)."""
    task_id = task_of(cli(data, "task", "create", "--repo", str(repo), "--requirement", requirement))
    assert cli(data, "budget", "set", "--task", task_id, "--limit", "1.00").code == 0
    planned = cli(data, "task", "plan", task_id, "--provider", "scripted", "--script", str(scripted))
    found = re.search(r"--revision (\d+) --sha256 ([0-9a-f]{64})", planned.out)
    assert found, planned.out + planned.err
    assert cli(data, "task", "approve-plan", task_id, "--revision", found.group(1), "--sha256",
               found.group(2)).code == 0
    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(scripted),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")
    assert started.code == 0, started.out + started.err
    return task_id


@SECRET_SERVICE_READER  # `provider list`, read twice, must find the same keys stored
def test_every_state_command_prints_the_same_with_and_without_a_running_coordinator(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "s.json", turn("fix", FIX), turn("test", ("run_command", {"argv": DEMO_ARGV})),
                      turn("Every step is done.", DONE))
    requirement = (repo / "TASK.md").read_text().strip()
    reviewing = reviewed_task(data, repo, scripted, requirement)
    rejected = reviewed_task(data, repo, scripted, requirement)
    diff = cli(data, "task", "diff", rejected)
    identity = re.search(r"diff identity ([0-9a-f]{64})", diff.out)
    assert identity, diff.out
    assert cli(data, "task", "reject", rejected, "--identity", identity.group(1), "--reason", "no").code == 0

    reads = [
        ("task", "list"), ("task", "show", reviewing), ("task", "show", rejected), ("task", "diff", reviewing),
        ("task", "patch", rejected), ("task", "recovery"), ("budget", "show", "--task", reviewing, "--entries"),
        ("prices", "list"), ("prices", "list", "--provider", "openai"), ("provider", "list"),
        ("task", "evidence", reviewing), ("task", "evidence", reviewing, "--json", "--attempt", "1"),
    ]
    alone = {argv: cli(data, *argv) for argv in reads}
    with coordinator(data, scripted):
        served = {argv: cli(data, *argv) for argv in reads}

    for argv in reads:
        assert alone[argv].code == served[argv].code == 0, (argv, alone[argv].err, served[argv].err)
        assert alone[argv].out == served[argv].out, argv
        assert "via the running coordinator" in served[argv].err, argv
        assert "via" not in alone[argv].err, argv
    shown = alone[("task", "show", reviewing)].out
    for fact in ("  base         ", "  worktree     ", "  plan         revision 1", "  budget of task",
                 "    hard limit", "  attempt      1", "    accept          available"):
        assert fact in shown, (fact, shown)
    assert "  atom calc.ops.add  (calc/ops.py:" in alone[("task", "evidence", reviewing)].out


def test_every_state_change_prints_the_same_with_and_without_a_running_coordinator(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    scripted = script(tmp_path / "s.json", turn("Every step is done.", DONE))
    requirement = (repo / "TASK.md").read_text().strip()

    def journey(remote: bool) -> list[str]:
        created = cli(data, "task", "create", "--repo", str(repo), "--requirement", requirement)
        task_id = task_of(created)
        steps = [created,
                 cli(data, "budget", "set", "--task", task_id, "--limit", "2.50", "--warning", "2.00"),
                 cli(data, "budget", "show", "--task", task_id),
                 cli(data, "task", "plan", task_id, "--provider", "scripted", "--script", str(scripted))]
        found = re.search(r"--revision (\d+) --sha256 ([0-9a-f]{64})", steps[-1].out)
        assert found, steps[-1].out + steps[-1].err
        steps += [cli(data, "task", "send-back", task_id, "--revision", found.group(1), "--sha256", found.group(2),
                      "--feedback", "smaller"),
                  cli(data, "task", "show", task_id),  # resting in forecasting: not "interrupted"
                  cli(data, "task", "plan", task_id, "--provider", "scripted", "--script", str(scripted))]
        found = re.search(r"--revision (\d+) --sha256 ([0-9a-f]{64})", steps[-1].out)
        assert found and found.group(1) == "2", steps[-1].out + steps[-1].err
        steps += [cli(data, "task", "approve-plan", task_id, "--revision", found.group(1), "--sha256",
                      found.group(2)),
                  cli(data, "budget", "approve-rung", "--task", task_id, "--rung", "capable:max"),
                  cli(data, "budget", "acknowledge", "--task", task_id),
                  cli(data, "task", "show", task_id),
                  cli(data, "task", "cancel", task_id),
                  cli(data, "task", "show", task_id)]
        for step in steps:
            assert step.code == 0, step.out + step.err
            assert ("via the running coordinator" in step.err) is remote, step.err
        return [masked(step.out, task_id) for step in steps]

    alone = journey(remote=False)
    with coordinator(data, scripted):
        served = journey(remote=True)

    # Why a task's provider was pinned is the one fact that differs by design: created in this process with no
    # flag it is the built-in default; created through the coordinator, the `start --provider` flag it was given.
    assert all("  pinned by    the built-in default" in out for out in alone if "  pinned by " in out)
    assert all("  pinned by    the --provider flag" in out for out in served if "  pinned by " in out)
    assert [pin_reason_masked(out) for out in alone] == [pin_reason_masked(out) for out in served]
    assert "  state        forecasting" in alone[5]
    assert "  state        cancelled" in alone[-1]
