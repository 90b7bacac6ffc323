"""What a cancel says it did (issue 16 item 6): :func:`report_cancel` against a real migrated database, with
real execution intents and results recorded by the authority service (no run: the test records the result
the run's worker would)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import UserDecision
from codeflux.authority.service import AuthorityService
from codeflux.coordinator.tasks.cancelled_runs import (
    LEFT_FOR_THE_RUN,
    CancelReport,
    CommandAtCancel,
    IdleDisposal,
    WorktreeAtCancel,
    report_cancel,
    requests_in_flight,
)
from codeflux.coordinator.tasks.worktree_lifecycle import WorktreeDisposal
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store.authority import ExecutionResultValues
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task, require_task

PIN = ExecutablePin(path="/usr/bin/sleep", sha256="c" * 64)
LEFT = IdleDisposal(disposal=None, left=LEFT_FOR_THE_RUN)


def a_running_command(db: Database) -> tuple[TaskId, AuthorityService, str, str]:
    """A task with one ``run_command`` whose execution intent is recorded and running (no result yet)."""
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                    worktree=Path(f"/data/worktrees/repo/{task_id}"), state=TaskState.RUNNING))
    service = AuthorityService(db)
    request = bind_tool_request("run_command", {"argv": ["sleep", "120"]})
    operation = describe_operation(request, task_id=task_id, executable=PIN)
    view = service.record_request(operation=operation, classification=classify_tool_request(request),
                                  source="test", idempotency_key="k1")
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")
    intent = service.record_execution_intent(view.request_id)
    service.mark_execution_running(intent.execution_id)
    return task_id, service, view.request_id, intent.execution_id


def record(db: Database, service: AuthorityService, task_id: TaskId, execution_id: str,
           state: ToolExecutionState) -> None:
    task = db.read(lambda view: require_task(view, task_id))
    failure = FailureKind.CANCELLED if state is ToolExecutionState.CANCELLED else None
    service.record_execution_result(task=task, execution_id=execution_id,
                                    result=ExecutionResultValues(state=state, failure_kind=failure, message="ended"))


def test_a_command_the_run_stops_within_the_wait_is_reported_stopped_and_the_worktree_left_to_the_run(
        db: Database) -> None:
    task_id, service, request_id, execution_id = a_running_command(db)
    in_flight = requests_in_flight(db, task_id)
    assert in_flight == (request_id,)
    stopper = threading.Timer(0.3, lambda: record(db, service, task_id, execution_id, ToolExecutionState.CANCELLED))
    stopper.start()
    try:
        report = report_cancel(db, task_id, in_flight=in_flight, disposal=LEFT, wait_s=10)
    finally:
        stopper.join()
    assert report == CancelReport(task_id=task_id, command=CommandAtCancel.STOPPED,
                                  worktree=WorktreeAtCancel.LEFT_TO_THE_RUN, command_state="cancelled")
    assert report.summary() == (f"task {task_id} cancelled; its running command was stopped (recorded cancelled)"
                                " — the run removes the worktree when the command has stopped")


def test_a_command_with_no_result_within_the_wait_is_reported_still_stopping(db: Database) -> None:
    task_id, _service, _request_id, _execution_id = a_running_command(db)
    report = report_cancel(db, task_id, in_flight=requests_in_flight(db, task_id), disposal=None, wait_s=0.3)
    assert report.command is CommandAtCancel.STOPPING and report.worktree is WorktreeAtCancel.LEFT_TO_THE_RUN
    assert "its running command is being stopped" in report.summary()
    assert "the run removes the worktree when the command has stopped" in report.summary()


def test_a_command_that_ended_on_its_own_is_not_called_stopped(db: Database) -> None:
    task_id, service, _request_id, execution_id = a_running_command(db)
    in_flight = requests_in_flight(db, task_id)
    record(db, service, task_id, execution_id, ToolExecutionState.SUCCEEDED)
    removed = IdleDisposal(disposal=WorktreeDisposal(removed=True, refusal=None, detail="", branch_deleted=False))
    report = report_cancel(db, task_id, in_flight=in_flight, disposal=removed, wait_s=0)
    assert report.command is CommandAtCancel.ENDED and report.command_state == "succeeded"
    assert report.summary().endswith("had ended on its own (recorded succeeded); its worktree was removed")


def test_an_idle_cancel_says_what_happened_to_the_worktree(db: Database) -> None:
    task_id = TaskId.from_entropy(os.urandom(16))
    kept = IdleDisposal(disposal=WorktreeDisposal(removed=False, refusal="unsaved-work", detail="notes.txt is unsaved",
                                                  branch_deleted=False))
    report = report_cancel(db, task_id, in_flight=(), disposal=kept)
    assert (report.command, report.worktree) == (CommandAtCancel.NONE, WorktreeAtCancel.KEPT)
    assert report.summary() == f"task {task_id} cancelled; its worktree was kept: notes.txt is unsaved"
    never = report_cancel(db, task_id, in_flight=(), disposal=IdleDisposal(disposal=None))
    assert never.summary() == f"task {task_id} cancelled; it had no worktree"
