"""Background runs of the coordinator (real SQLite, demo repository, real workers, scripted provider — not a
model): pause and resume around a pending decision, resume in a new coordinator after a shutdown, a plan
drafted again on resume, an exception in a run thread recorded, cancel, and ``shutdown()`` leaving tasks
paused with a shutdown checkpoint and no worker alive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.services.app import CoordinatorApp
from codeflux.services.methods import build_method_table
from codeflux.services.registry import Code
from codeflux.services.views import task_service
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.service_runs import Coordinator, call, control, drive_to_ready, failure, settle, start_ready

pytestmark = pytest.mark.slow


def started(c: Coordinator) -> pb.TaskView:
    waiting = start_ready(c)
    assert waiting.state == "awaiting-authority"
    return waiting


def action(c: Coordinator, name: str, task_id: str) -> pb.TaskView:
    reply = call(c, f"TaskService/{name}", pb.TaskActionRequest(control=control(), task_id=task_id))
    assert isinstance(reply, pb.TaskView)
    return reply


def decide_all(c: Coordinator, view: pb.TaskView) -> pb.TaskView:
    while view.state == "awaiting-authority":
        call(c, "ApprovalService/Decide", pb.DecideRequest(
            control=control(), task_id=view.task_id, request_id=view.pending_approvals[0].request_id,
            decision="allow-once"))
        view = settle(c, view.task_id)
    return view


def checkpoint_triggers(c: Coordinator, task_id: str) -> list[str]:
    timeline = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=task_id, limit=1000))
    assert isinstance(timeline, pb.Timeline)
    return [json.loads(e.payload_json)["trigger"] for e in timeline.events if e.kind == "checkpoint-created"]


def test_pause_while_waiting_then_resume_goes_on_where_it_stopped(coordinator: Coordinator) -> None:
    c = coordinator
    waiting = started(c)
    request_id = waiting.pending_approvals[0].request_id

    paused = action(c, "PauseTask", waiting.task_id)
    assert paused.state == "paused" and paused.run_active  # the conversation waits in memory
    assert {a.action: a.available for a in paused.actions}["resume"]

    back = action(c, "ResumeTask", waiting.task_id)  # the request is still undecided: it waits again
    assert back.state == "awaiting-authority" and back.pending_approvals[0].request_id == request_id

    action(c, "PauseTask", waiting.task_id)
    call(c, "ApprovalService/Decide", pb.DecideRequest(control=control(), task_id=waiting.task_id,
                                                       request_id=request_id, decision="allow-once"))
    assert settle(c, waiting.task_id).state == "paused"  # a decision does not resume a paused task
    resumed = action(c, "ResumeTask", waiting.task_id)
    assert resumed.state in ("running", "validating", "awaiting-authority", "awaiting-review")

    done = decide_all(c, settle(c, waiting.task_id))
    assert done.state == "awaiting-review", done.last_outcome
    assert done.attempt.attempt == 1


def test_shutdown_pauses_with_a_checkpoint_stops_workers_and_a_new_coordinator_resumes(
        coordinator: Coordinator) -> None:
    c = coordinator
    waiting = started(c)

    stopped = c.runs.shutdown(timeout=60)

    assert [t.value for t in stopped] == [waiting.task_id]
    assert wait_until_no_process_works_under(c.data.directory) == []
    after = settle(c, waiting.task_id)
    assert after.state == "paused" and not after.run_active
    assert checkpoint_triggers(c, waiting.task_id)[-1] == "shutdown"
    refused = failure(c, "TaskService/ResumeTask", pb.TaskActionRequest(control=control(), task_id=waiting.task_id))
    assert refused.code == Code.FAILED_PRECONDITION and "shutting down" in refused.safe_message

    # the next coordinator holds no run: resume opens the next attempt (the runner ends the open one)
    app = CoordinatorApp(db=c.app.db, location=c.data, models=c.app.models, version="test")
    table = build_method_table(app)
    again = Coordinator(app=app, table=table, repo=c.repo, data=c.data)
    try:
        resumed = action(again, "ResumeTask", waiting.task_id)
        assert resumed.attempt.attempt == 2
        view = settle(again, waiting.task_id)
        assert view.state in ("awaiting-authority", "awaiting-review", "failed"), view.last_outcome
        assert view.last_outcome
    finally:
        app.runs.shutdown(timeout=60)


def test_resume_of_a_task_paused_while_planning_drafts_the_plan_again(coordinator: Coordinator) -> None:
    c = coordinator
    created = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement=(c.repo / "TASK.md").read_text()))
    assert isinstance(created, pb.TaskView)
    task_id = TaskId.parse(created.task_id)
    tasks = task_service(c.app)
    planning = tasks.transition(task_id, TaskState.FORECASTING, expected_revision=created.revision,
                                reason="planning", actor=Actor.SYSTEM, idempotency_key="test-forecasting")
    paused = call(c, "TaskService/PauseTask", pb.TaskActionRequest(
        control=control(planning.revision), task_id=created.task_id))
    assert isinstance(paused, pb.TaskView) and paused.state == "paused" and not paused.HasField("plan")

    no_budget = failure(c, "TaskService/ResumeTask", pb.TaskActionRequest(control=control(), task_id=created.task_id))
    assert no_budget.code == Code.FAILED_PRECONDITION and "budget" in no_budget.safe_message
    call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=control(), task_id=created.task_id, choice="set",
                                                         hard_limit="0.50"))
    resumed = action(c, "ResumeTask", created.task_id)

    assert resumed.state == "awaiting-plan-approval" and resumed.plan.revision == 1
    assert resumed.budget.hard_limit.minor_units == 50


def test_cancel_of_a_waiting_run_ends_it_and_removes_the_worktree(coordinator: Coordinator,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    c = coordinator
    closed: list[ModelGateway] = []  # the real close, watched: a run's gateway (its connection pools) ends with it
    close = ModelGateway.close
    monkeypatch.setattr(ModelGateway, "close", lambda self: (closed.append(self), close(self))[1])
    waiting = started(c)
    drafted = len(closed)  # the plan draft's own gateway closed as the draft ended; the waiting run keeps its own

    cancelled = action(c, "CancelTask", waiting.task_id)
    assert len(closed) == drafted + 1

    assert cancelled.state == "cancelled" and not cancelled.run_active
    assert not c.runs.is_active(TaskId.parse(waiting.task_id))
    assert wait_until_no_process_works_under(c.data.directory) == []
    timeline = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=waiting.task_id, limit=1000))
    assert isinstance(timeline, pb.Timeline)
    assert {e.kind for e in timeline.events} & {"worktree-removed", "worktree-kept"}
    # the reply says what the cancel did: no command was running (the run waited for a decision), the worktree
    outcome = cancelled.cancel_outcome
    disposed = "removed" if cancelled.worktree_disposal.removed else "kept"
    assert (outcome.running_command, outcome.worktree, outcome.by_the_run) == ("none", disposed, False)
    assert outcome.summary.startswith(f"task {waiting.task_id} cancelled; its worktree was {disposed}"), outcome
    again = call(c, "TaskService/GetTask", pb.GetTaskRequest(task_id=waiting.task_id))
    assert isinstance(again, pb.TaskView) and not again.HasField("cancel_outcome")  # only the cancel's reply


def test_a_run_that_raises_is_recorded_never_lost(coordinator: Coordinator) -> None:
    c = coordinator
    ready = drive_to_ready(c)
    squatter = Path(ready.worktree)  # something that is not the task's worktree sits where it goes
    squatter.mkdir(parents=True)
    (squatter / "not-a-worktree.txt").write_text("placed by the test\n")

    call(c, "TaskService/StartTask", pb.StartTaskRequest(control=control(), task_id=ready.task_id,
                                                         plan_revision=ready.plan.revision))
    ended = settle(c, ready.task_id)

    assert ended.state == "failed" and not ended.run_active
    assert ended.last_outcome.startswith("stopped: ") and "worktree" in ended.last_outcome
    assert ended.attempt.attempt == 1 and not ended.attempt.open
    assert {a.action: a.available for a in ended.actions}["retry"]
