"""How ``run_command`` notices a program's end: its exit wakes the pump, whatever its pipes do."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionLimits, ExecutionState
from codeflux.worker.confinement import unconfined
from codeflux.worker.environment import build_worker_environment
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.command import CommandOutput, CommandPin, CommandStarted
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.dispatch import ToolEvent, execute_tool
from codeflux.worker.tools.executables import ExecutableDigests
from codeflux.worker.tools.results import ToolResult
from tests.fixtures.workers import pin_executable, wait_until_group_is_gone
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    task: TaskWorktree = make_task_worktree(tmp_path)
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    return ToolContext(
        worktree=task.worktree.resolve(),
        confinement=unconfined(task.worktree.resolve()),  # these tests are about the tools, not the box
        limits=ExecutionLimits(timeout_ms=20_000, max_output_bytes=65_536, max_file_bytes=4096),
        deadline=time.monotonic() + 20,
        cancelled=threading.Event(),
        environment=build_worker_environment(base=os.environ, home=tmp_path / "home", tmpdir=tmp_path / "tmp"),
        processes=ProcessGroups(),
        executables=ExecutableDigests(),
    )


def command(context: ToolContext, argv: list[str]) -> tuple[ToolResult, list[ToolEvent]]:
    pinned = pin_executable(argv[0])
    pin = CommandPin(executable_path=pinned.path, executable_sha256=pinned.sha256, env_overrides={}, stdin=b"")
    events: list[ToolEvent] = []
    generator = execute_tool(tool="run_command", raw_arguments={"argv": argv}, context=context, pin=pin)
    while True:
        try:
            events.append(next(generator))
        except StopIteration as stop:
            return stop.value, events


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_a_program_that_closes_its_pipes_early_is_waited_for_until_it_exits(
        context: ToolContext, monkeypatch: pytest.MonkeyPatch, pidfd: bool) -> None:
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)  # a kernel or Python without pidfds
    result, events = command(context, ["sh", "-c", "echo early; exec >&- 2>&-; sleep 0.4; exit 7"])
    # Exit code 7, not -9: the pump waited for the real exit instead of ending at end-of-file.
    assert (result.state, result.failure_kind, result.exit_code) == (ExecutionState.FAILED, "nonzero-exit", 7)
    assert "".join(e.text for e in events if isinstance(e, CommandOutput)) == "early\n"


def test_commands_leave_no_descriptor_open(context: ToolContext) -> None:
    command(context, ["true"])
    before = open_descriptors()
    for argv in (["true"], ["sh", "-c", "exit 3"], ["sh", "-c", "exec >&-; sleep 0.1"]):
        result, events = command(context, argv)
        assert result.state in {ExecutionState.SUCCEEDED, ExecutionState.FAILED}
        group = next(event.process_group_id for event in events if isinstance(event, CommandStarted))
        assert wait_until_group_is_gone(group) == []
    assert open_descriptors() == before


def test_a_background_child_holding_the_pipes_does_not_hold_the_result(context: ToolContext) -> None:
    began = time.monotonic()
    result, events = command(context, ["sh", "-c", "sleep 30 & echo started"])
    assert time.monotonic() - began < 5
    assert (result.state, result.exit_code) == (ExecutionState.SUCCEEDED, 0)
    group = next(event.process_group_id for event in events if isinstance(event, CommandStarted))
    assert wait_until_group_is_gone(group) == []
