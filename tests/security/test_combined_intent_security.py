"""The combined commit against real worker processes: a tool call allowed at submission commits its intent
with the request (two commits per call, not three) and still runs at most once — across a retry under the
same key, a failed commit and a kill -9 between the commit and the worker; denials and an inactive task
still refuse before anything is intended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.tool_driver import (
    DriverFault,
    ExecutionRecord,
    SubmittedRequest,
    ToolDriver,
    reconcile_interrupted_executions,
)
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database
from codeflux.store.task_records import change_task_state
from codeflux.store.tasks import insert_task
from tests.fixtures.journal import count
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.worktrees import make_task_worktree

pytestmark = pytest.mark.security

APPEND = ["sh", "-c", "echo $$ >> marker.log"]


@pytest.fixture
def task(db: Database, tmp_path: Path) -> tuple[TaskId, Path]:
    task_id = TaskId.from_entropy(os.urandom(16))
    made = make_task_worktree(tmp_path / "git", task=task_id.value)
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=made.repository, worktree=made.worktree,
                                    state=TaskState.RUNNING, base_revision=made.base))
    return task_id, made.worktree


@pytest.fixture
def driver(db: Database, tmp_path: Path) -> Iterator[ToolDriver]:
    with ToolDriver(db, state_dir=tmp_path / "state") as tool_driver:
        yield tool_driver
    assert wait_until_no_process_works_under(tmp_path) == []


def marker_lines(worktree: Path) -> list[str]:
    marker = worktree / "marker.log"
    return marker.read_text().splitlines() if marker.exists() else []


def commits_during(db: Database, action: Callable[[], object]) -> int:
    seen: list[int] = []
    remove = db.add_commit_listener(lambda: seen.append(1))
    try:
        action()
    finally:
        remove()
    return len(seen)


def allow_for_task(driver: ToolDriver, task_id: TaskId, argv: list[str]) -> ExecutionRecord:
    first = driver.submit_tool_request(task_id, "run_command", {"argv": argv}, idempotency_key="approve",
                                       source="test")
    driver.decide(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="allowed for the task")
    return driver.execute(first.request_id)


def submit_and_execute(driver: ToolDriver, task_id: TaskId, key: str, tool: str = "run_command",
                       **raw: object) -> tuple[SubmittedRequest, ExecutionRecord | None]:
    return driver.submit_and_execute(task_id, tool, raw, idempotency_key=key, source="test")


def test_an_automatic_write_costs_two_commits_and_a_pending_command_keeps_its_four(
    driver: ToolDriver, db: Database, task: tuple[TaskId, Path]
) -> None:
    task_id, worktree = task
    submit_and_execute(driver, task_id, "warm", "read_file", path="README.md")  # the worker starts here
    made: list[tuple[SubmittedRequest, ExecutionRecord | None]] = []

    automatic = commits_during(db, lambda: made.append(
        submit_and_execute(driver, task_id, "w1", "write_file", path="new.txt", content="hello\n")))
    pending: list[SubmittedRequest] = []
    asked = commits_during(db, lambda: pending.append(
        driver.submit_tool_request(task_id, "run_command", {"argv": APPEND}, idempotency_key="c1",
                                   source="test", intend_if_allowed=True)))
    decided_and_ran = commits_during(db, lambda: (
        driver.decide(pending[0].request_id, UserDecision.ALLOW_ONCE, reason="once"),
        driver.execute(pending[0].request_id)))

    submitted, record = made[0]
    assert submitted.intended_execution_id is not None and record is not None
    assert record.execution_id == submitted.intended_execution_id and record.state == "succeeded"
    assert (worktree / "new.txt").read_text() == "hello\n"
    assert automatic == 2
    assert pending[0].outcome is DecisionOutcome.PENDING and pending[0].intended_execution_id is None
    assert (asked, decided_and_ran) == (1, 3)
    assert len(marker_lines(worktree)) == 1


def test_a_retry_under_the_same_key_returns_the_recorded_execution_and_runs_nothing(
    driver: ToolDriver, db: Database, task: tuple[TaskId, Path]
) -> None:
    task_id, worktree = task
    allow_for_task(driver, task_id, APPEND)

    submitted, record = submit_and_execute(driver, task_id, "c1", argv=APPEND)
    again, replayed = submit_and_execute(driver, task_id, "c1", argv=APPEND)
    with ToolDriver(db, state_dir=worktree.parent / "other-state") as other:
        elsewhere = other.submit_and_execute(task_id, "run_command", {"argv": APPEND}, idempotency_key="c1",
                                             source="test")

    assert submitted.outcome is DecisionOutcome.ALLOWED_FOR_TASK and submitted.intended_execution_id is not None
    assert record is not None and record.state == "succeeded"
    assert again.request_id == submitted.request_id and again.intended_execution_id is None
    assert replayed is not None and replayed.execution_id == record.execution_id
    assert elsewhere[1] is not None and elsewhere[1].execution_id == record.execution_id
    assert len(marker_lines(worktree)) == 2  # the approving run and this one, once
    assert count(db, "tool_executions") == 2


def test_if_the_combined_commit_fails_the_tool_does_not_run_and_nothing_is_recorded(
    db: Database, driver: ToolDriver, task: tuple[TaskId, Path], tmp_path: Path
) -> None:
    task_id, worktree = task
    allow_for_task(driver, task_id, APPEND)
    requests_before = count(db, "tool_requests")

    def fail_before_commit(point: DriverFault) -> None:
        if point is DriverFault.BEFORE_INTENT_COMMIT:
            raise RuntimeError("injected: the combined transaction fails")

    with ToolDriver(db, state_dir=tmp_path / "faulty", fault=fail_before_commit) as faulty, \
            pytest.raises(RuntimeError, match="injected"):
        faulty.submit_and_execute(task_id, "run_command", {"argv": APPEND}, idempotency_key="c1", source="test")

    assert len(marker_lines(worktree)) == 1
    assert count(db, "tool_requests") == requests_before and count(db, "tool_executions") == 1
    _, record = submit_and_execute(driver, task_id, "c1", argv=APPEND)
    assert record is not None and record.state == "succeeded"
    assert len(marker_lines(worktree)) == 2


def test_a_kill_9_after_the_combined_commit_leaves_an_intent_that_never_runs(
    db: Database, driver: ToolDriver, task: tuple[TaskId, Path], tmp_path: Path
) -> None:
    task_id, worktree = task
    allow_for_task(driver, task_id, APPEND)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from codeflux.coordinator.runs.tool_driver import DriverFault, ToolDriver
        from codeflux.domain.ids import TaskId
        from codeflux.store.location import DataLocation
        from codeflux.store.opening import open_store

        def crash(point):
            if point is DriverFault.AFTER_INTENT_COMMIT:
                os.kill(os.getpid(), signal.SIGKILL)

        db = open_store(DataLocation(directory=Path({str(db.path.parent)!r})), create=False, migrate=False)
        ToolDriver(db, state_dir=Path({str(tmp_path / "child-state")!r}), fault=crash).submit_and_execute(
            TaskId.parse({task_id.value!r}), "run_command", {{"argv": {APPEND!r}}}, idempotency_key="c1",
            source="test")
    """)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    with child.stderr:
        assert child.wait(timeout=60) == -signal.SIGKILL, child.stderr.read()
    assert wait_until_no_process_works_under(tmp_path / "child-state", timeout_s=15) == []

    ran_before_restart = len(marker_lines(worktree))
    reconciled = reconcile_interrupted_executions(db)
    submitted, record = submit_and_execute(driver, task_id, "c1", argv=APPEND)

    assert ran_before_restart == 1  # only the approving run: the child died before asking its worker
    assert record is not None and [record.execution_id] == reconciled
    assert (record.state, record.failure_kind) == ("outcome-unknown", "interrupted")
    assert submitted.intended_execution_id is None
    assert len(marker_lines(worktree)) == 1


def test_a_denial_recorded_after_an_allow_for_task_approval_blocks_the_combined_path(
    driver: ToolDriver, db: Database, task: tuple[TaskId, Path]
) -> None:
    task_id, worktree = task
    allow_for_task(driver, task_id, APPEND)
    other = driver.submit_tool_request(task_id, "run_command", {"argv": ["ls"]}, idempotency_key="ls",
                                       source="test")
    driver.decide(other.request_id, UserDecision.DENY, reason="no programs",
                  deny=(CapabilityNeed(capability=Capability.PROCESS),))

    submitted, record = submit_and_execute(driver, task_id, "c1", argv=APPEND)
    wrapped, wrapped_record = submit_and_execute(driver, task_id, "c2", argv=["env", *APPEND])

    assert submitted.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY and record is None
    assert wrapped.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY and wrapped_record is None
    assert submitted.intended_execution_id is None and wrapped.intended_execution_id is None
    assert len(marker_lines(worktree)) == 1 and count(db, "tool_executions") == 1


def test_an_inactive_task_intends_only_reads_at_submission(
    driver: ToolDriver, db: Database, task: tuple[TaskId, Path]
) -> None:
    task_id, worktree = task
    allow_for_task(driver, task_id, APPEND)
    db.write(lambda tx: change_task_state(tx, task_id=task_id, expected_revision=0, state=TaskState.PAUSED,
                                          reason="paused"))

    command, command_record = submit_and_execute(driver, task_id, "c1", argv=APPEND)
    write, write_record = submit_and_execute(driver, task_id, "w1", "write_file", path="x.txt", content="x")
    read, read_record = submit_and_execute(driver, task_id, "r1", "read_file", path="README.md")

    assert command.outcome is DecisionOutcome.REFUSED_INACTIVE_TASK and command_record is None
    assert write.outcome is DecisionOutcome.REFUSED_INACTIVE_TASK and write_record is None
    assert not (worktree / "x.txt").exists() and len(marker_lines(worktree)) == 1
    assert read.outcome is DecisionOutcome.AUTOMATIC and read_record is not None
    assert read_record.state == "succeeded"
