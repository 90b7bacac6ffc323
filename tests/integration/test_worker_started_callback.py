"""``WorkerHandle.execute(on_started=…)``: told once, when the worker reports the start, with the group id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionState
from codeflux.worker.client.handle import WorkerHandle
from tests.fixtures.workers import TASK, execution_of, running_worker, wait_until_group_is_gone
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree


class CallbackFailedError(Exception):
    pass


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerHandle]:
    task: TaskWorktree = make_task_worktree(tmp_path)
    with running_worker(task.worktree, tmp_path / "data" / "workers" / str(TASK), base_commit=task.base) as handle:
        yield handle


def test_a_command_reports_its_group_once_before_any_output(worker: WorkerHandle) -> None:
    seen: list[tuple[str, object]] = []
    outcome = worker.execute(execution_of("run_command", {"argv": ["sh", "-c", "echo one; echo two >&2"]}),
                             on_started=lambda group: seen.append(("started", group)),
                             on_output=lambda stream, text: seen.append((stream, text)))
    assert outcome.state is ExecutionState.SUCCEEDED
    assert seen[0] == ("started", outcome.process_group_id)
    assert outcome.process_group_id > 1
    assert [kind for kind, _ in seen].count("started") == 1


def test_a_tool_without_a_process_reports_group_zero(worker: WorkerHandle) -> None:
    groups: list[int] = []
    outcome = worker.execute(execution_of("read_file", {"path": "README.md"}), on_started=groups.append)
    assert outcome.state is ExecutionState.SUCCEEDED
    assert groups == [0]


def test_a_failing_started_callback_cancels_the_command_and_propagates(worker: WorkerHandle) -> None:
    groups: list[int] = []

    def refuse(group: int) -> None:
        groups.append(group)
        raise CallbackFailedError

    with pytest.raises(CallbackFailedError):
        worker.execute(execution_of("run_command", {"argv": ["sleep", "300"]}), on_started=refuse)
    assert len(groups) == 1 and groups[0] > 1
    assert wait_until_group_is_gone(groups[0]) == []
    assert worker.is_alive()
