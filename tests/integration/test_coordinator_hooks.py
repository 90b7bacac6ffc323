"""The coordinator's hook points against a real SQLite file, git repository and worker process: observers hear
of a tool call submitted, decided and run, and of a task's state change — on the changing thread, in order,
only after the commit, never for a change that rolled back — and an observer that raises is logged and
changes nothing."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.hooks import (
    Notification,
    Observers,
    TaskStateChanged,
    ToolCallDecided,
    ToolCallRan,
    ToolCallSubmitted,
)
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.service import Actor, TaskFault, TaskService
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import ToolRequestInvalidError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.logs import LogRecord, configure_logging, reset_logging
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.tasks import a_draft, a_ready_task, a_repository, keys
from tests.fixtures.worktrees import make_task_worktree


def heard_by(observers: Observers) -> list[Notification]:
    """Subscribe one observer to every hook point; returns the list it appends to."""
    heard: list[Notification] = []
    observers.subscribe(ToolCallSubmitted, heard.append).subscribe(ToolCallDecided, heard.append)
    observers.subscribe(ToolCallRan, heard.append).subscribe(TaskStateChanged, heard.append)
    return heard


@pytest.fixture
def saved_logs() -> Iterator[list[LogRecord]]:
    saved: list[LogRecord] = []
    configure_logging(stream=io.StringIO(), persist=saved.append)
    try:
        yield saved
    finally:
        reset_logging()


def test_a_state_change_is_announced_on_the_changing_thread_after_its_commit(db: Database, tmp_path: Path) -> None:
    seen_in_store: list[TaskState] = []
    threads: list[int] = []
    observers = Observers()
    heard = heard_by(observers)
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers)

    def look(change: TaskStateChanged) -> None:
        threads.append(threading.get_ident())
        seen_in_store.append(tasks.show(change.task_id).task.state)  # the reader sees only committed rows

    observers.subscribe(TaskStateChanged, look)
    draft = a_draft(tasks, a_repository(tmp_path / "repo"))
    change = tasks.transition(draft.task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                              reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())

    assert heard == [TaskStateChanged(task_id=draft.task_id, from_state=TaskState.DRAFT,
                                      to_state=TaskState.FORECASTING, revision=change.revision,
                                      actor=Actor.SYSTEM.value, reason="planning")]
    assert seen_in_store == [TaskState.FORECASTING]
    assert threads == [threading.get_ident()]


def test_a_change_that_rolls_back_is_never_announced(db: Database, tmp_path: Path) -> None:
    def fail(point: TaskFault) -> None:
        if point is TaskFault.BEFORE_COMMIT:
            raise OSError("disk full")

    observers = Observers()
    heard = heard_by(observers)
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers)
    draft = a_draft(TaskService(db, worktrees_root=tmp_path / "worktrees"), a_repository(tmp_path / "repo"))
    failing = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers, fault=fail)

    with pytest.raises(OSError, match="disk full"):
        failing.transition(draft.task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                           reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())

    assert heard == []
    assert tasks.show(draft.task_id).task.state is TaskState.DRAFT


def test_an_observer_that_raises_is_logged_and_cannot_veto(db: Database, tmp_path: Path,
                                                           saved_logs: list[LogRecord]) -> None:
    def veto(change: TaskStateChanged) -> None:
        raise RuntimeError("no, do not pause")

    observers = Observers().subscribe(TaskStateChanged, veto)
    heard = heard_by(observers)  # subscribed after the one that raises: still told
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers)
    draft = a_draft(tasks, a_repository(tmp_path / "repo"))

    change = tasks.transition(draft.task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                              reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())

    assert change.state is TaskState.FORECASTING and not change.replayed
    assert tasks.show(draft.task_id).task.state is TaskState.FORECASTING
    assert [type(n) for n in heard] == [TaskStateChanged]
    failures = [json.loads(record.fields_json) for record in saved_logs if record.event == "an observer failed"]
    assert len(failures) == 1
    assert failures[0]["point"] == "TaskStateChanged" and failures[0]["error_type"] == "RuntimeError"
    assert "do not pause" not in failures[0]["error"]  # only a safe message of a foreign error


def test_an_identical_retry_announces_nothing_new(db: Database, tmp_path: Path) -> None:
    observers = Observers()
    heard = heard_by(observers)
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers)
    draft = a_draft(tasks, a_repository(tmp_path / "repo"))
    key = keys()
    for _ in range(2):
        tasks.transition(draft.task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                         reason="planning", actor=Actor.SYSTEM, idempotency_key=key)

    assert len(heard) == 1


def test_a_run_start_is_announced_as_the_move_from_ready_to_running(db: Database, tmp_path: Path) -> None:
    observers = Observers()
    heard = heard_by(observers)
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees", observers=observers)
    snapshot = a_repository(tmp_path / "repo")
    ready = a_ready_task(tasks, snapshot)
    tasks.start_run(ready.task_id, snapshot, expected_revision=ready.revision, idempotency_key=keys())

    moves = [(n.from_state, n.to_state, n.run_started) for n in heard if isinstance(n, TaskStateChanged)]
    assert moves == [(TaskState.DRAFT, TaskState.FORECASTING, False),
                     (TaskState.FORECASTING, TaskState.AWAITING_PLAN_APPROVAL, False),
                     (TaskState.AWAITING_PLAN_APPROVAL, TaskState.READY, False),
                     (TaskState.READY, TaskState.RUNNING, True)]


# ─── the tool driver ────────────────────────────────────────────────────────────────────────────────


@pytest.fixture
def task(db: Database, tmp_path: Path) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    made = make_task_worktree(tmp_path / "git", task=task_id.value)
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=made.repository, worktree=made.worktree,
                                    state=TaskState.RUNNING, base_revision=made.base))
    return task_id


def test_the_tool_driver_announces_each_call_submitted_decided_and_run(db: Database, tmp_path: Path,
                                                                       task: TaskId) -> None:
    observers = Observers()
    heard = heard_by(observers)
    recorded: list[DecisionOutcome] = []
    with ToolDriver(db, state_dir=tmp_path / "state", observers=observers) as driver:
        observers.subscribe(ToolCallSubmitted, lambda n: recorded.append(driver.read_request(n.request.request_id)
                                                                        .outcome))
        read, record = driver.submit_and_execute(task, "read_file", {"path": "README.md"}, idempotency_key="r1",
                                                 source="test")
        pending = driver.submit_tool_request(task, "run_command", {"argv": ["sh", "-c", "echo hi"]},
                                             idempotency_key="c1", source="test")
        denied = driver.decide(pending.request_id, UserDecision.DENY, reason="not now")
    assert wait_until_no_process_works_under(tmp_path) == []

    assert record is not None and record.state == "succeeded"
    assert heard == [
        ToolCallSubmitted(request=read, arguments={"path": "README.md"}, source="test",
                          confinement=driver.confinement.mode),
        ToolCallRan(request_id=read.request_id, execution=record),
        ToolCallSubmitted(request=pending, arguments={"argv": ["sh", "-c", "echo hi"]}, source="test",
                          confinement=driver.confinement.mode),
        ToolCallDecided(request=denied),
    ]
    assert recorded == [DecisionOutcome.AUTOMATIC, DecisionOutcome.PENDING]  # committed when announced
    assert denied.outcome is DecisionOutcome.DENIED
    assert isinstance(driver.confinement.mode, ConfinementMode)


def test_a_refused_submission_is_not_announced(db: Database, tmp_path: Path, task: TaskId) -> None:
    observers = Observers()
    heard = heard_by(observers)
    with ToolDriver(db, state_dir=tmp_path / "state", observers=observers) as driver, \
            pytest.raises(ToolRequestInvalidError):
        driver.submit_tool_request(task, "read_file", {"no_such_argument": "x"}, idempotency_key="bad")
    assert heard == []


def test_a_raising_observer_does_not_change_what_the_driver_returns(db: Database, tmp_path: Path, task: TaskId,
                                                                    saved_logs: list[LogRecord]) -> None:
    def broken(ran: ToolCallRan) -> None:
        raise ValueError("observer bug")

    observers = Observers().subscribe(ToolCallRan, broken)
    with ToolDriver(db, state_dir=tmp_path / "state", observers=observers) as driver:
        submitted, record = driver.submit_and_execute(task, "read_file", {"path": "README.md"},
                                                      idempotency_key="r1", source="test")
        stored = driver.read_result(submitted.request_id)
    assert wait_until_no_process_works_under(tmp_path) == []

    assert record is not None and record == stored and record.state == "succeeded"
    failures = [json.loads(r.fields_json)["point"] for r in saved_logs if r.event == "an observer failed"]
    assert failures == ["ToolCallRan"]
