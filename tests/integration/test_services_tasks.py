"""The task and approval services end to end, called through the method table the transports use: a real
SQLite file, the demo repository, real worker processes, the scripted provider (not a model).

create → budget → draft plan → approve → start → the run waits for the demo's ``run_command`` → allow
once → the run goes on (the pipeline's test command asks again) → awaiting review; plus the refusals a
client meets: a stale ``expected_revision``, a missing idempotency key, a start of another plan revision."""

from __future__ import annotations

import dataclasses
import json

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.runs.scheduler import BackgroundRuns
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.methods import build_method_table
from codeflux.services.registry import Code
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.service_runs import Coordinator, call, control, drive_to_ready, failure, settle
from tests.fixtures.services import ScriptedDemoAccess

pytestmark = pytest.mark.slow


def allow_until_review(c: Coordinator, view: pb.TaskView, decision: str = "allow-once") -> tuple[pb.TaskView, int]:
    """Answer every request the run waits for; returns the settled task and how many were answered."""
    answered = 0
    while view.state == "awaiting-authority":
        assert len(view.pending_approvals) == 1, view
        pending = view.pending_approvals[0]
        reply = call(c, "ApprovalService/Decide", pb.DecideRequest(
            control=control(), task_id=view.task_id, request_id=pending.request_id, decision=decision))
        assert isinstance(reply, pb.DecideReply) and reply.outcome == decision.replace("-once", "ed-once").replace(
            "allow-for", "allowed-for")
        answered += 1
        view = settle(c, view.task_id)
    return view, answered


def test_the_demo_journey_through_the_services(coordinator: Coordinator) -> None:
    c = coordinator
    ready = drive_to_ready(c)
    assert ready.plan.author_label == SCRIPTED_DEMO_LABEL and ready.provider_label == SCRIPTED_DEMO_LABEL
    assert ready.plan.decision == "approved" and ready.plan.checks[0].argv[0] == "python3"
    # priced with the rates in force (issue 14 item 10; it used to be always unknown): the scripted provider's
    # models are priced at zero, so the range is a known $0.00
    cost = ready.plan.forecast.cost
    assert ready.plan.forecast.label and cost.low.known and cost.high.known, cost
    assert cost.low.amount.display == cost.high.amount.display == "$0.00"
    assert ready.budget.set and ready.budget.hard_limit.display == "$1.00" and ready.budget.spent.known
    assert {a.action: a.available for a in ready.actions}["start"] is True
    assert all(a.reason for a in ready.actions if not a.available)

    started = call(c, "TaskService/StartTask", pb.StartTaskRequest(
        control=control(ready.revision), task_id=ready.task_id, plan_revision=ready.plan.revision))
    assert isinstance(started, pb.TaskView) and started.state in ("running", "awaiting-authority")

    waiting = settle(c, ready.task_id)
    assert waiting.state == "awaiting-authority" and waiting.run_active
    pending = waiting.pending_approvals[0]
    assert pending.tool == "run_command" and pending.request_id.startswith("treq_")
    assert pending.arguments[0].name == "argv"
    assert json.loads(pending.arguments[0].value)[:3] == ["python3", "-m", "pytest"]
    assert pending.operation_identity.startswith("op_") and pending.cwd == "."
    assert pending.capabilities and pending.scope
    assert {a.action: a.available for a in waiting.actions}["decide-approval"] is True
    assert waiting.attempt.attempt == 1 and waiting.attempt.open

    done, answered = allow_until_review(c, waiting)

    assert done.state == "awaiting-review", done.last_outcome
    # one card: the model's own test run. The plan's check (python3 -m pytest -q) is approved with the plan, and
    # the pipeline's test command runs the same program as that check, so it follows the plan approval too
    assert answered == 1 and not done.pending_approvals and not done.run_active
    assert done.last_outcome.startswith("awaiting-review")
    timeline = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=done.task_id, limit=5))
    assert isinstance(timeline, pb.Timeline) and timeline.has_more and len(timeline.events) == 5
    assert [e.sequence for e in timeline.events] == [1, 2, 3, 4, 5]
    everything = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=done.task_id, limit=1000))
    assert isinstance(everything, pb.Timeline) and not everything.has_more
    assert everything.events[-1].sequence == done.through_sequence
    kinds = [e.kind for e in everything.events]
    assert "authority-decided" in kinds and "run-attempt-opened" in kinds
    listed = call(c, "TaskService/ListTasks", pb.ListTasksRequest())
    assert isinstance(listed, pb.ListTasksReply)
    assert [(t.task_id, t.state, t.needs_attention) for t in listed.tasks] == [(done.task_id, "awaiting-review", True)]


def test_a_stale_revision_a_missing_key_and_another_plan_revision_are_refused(coordinator: Coordinator) -> None:
    c = coordinator
    ready = drive_to_ready(c)

    stale = failure(c, "TaskService/PauseTask", pb.TaskActionRequest(
        control=control(ready.revision - 1), task_id=ready.task_id))
    assert stale.code == Code.ABORTED and stale.detail.error_type == "StaleRevisionError"
    assert stale.detail.retryable

    for bad_key in ("", "has space", "x" * 129):
        missing = failure(c, "TaskService/StartTask", pb.StartTaskRequest(
            control=control(key=bad_key) if bad_key else None, task_id=ready.task_id,
            plan_revision=ready.plan.revision))
        assert missing.code == Code.INVALID_ARGUMENT, bad_key
    bad_id = failure(c, "TaskService/GetTask", pb.GetTaskRequest(task_id="tsk_<script>"))
    assert bad_id.code == Code.INVALID_ARGUMENT and "<script>" not in bad_id.safe_message
    unknown = failure(c, "TaskService/GetTask", pb.GetTaskRequest(task_id="tsk_" + "0" * 32))
    assert unknown.code == Code.NOT_FOUND

    other = failure(c, "TaskService/StartTask", pb.StartTaskRequest(
        control=control(), task_id=ready.task_id, plan_revision=ready.plan.revision + 1))
    assert other.code == Code.ABORTED and other.detail.error_type == "PlanChangedError"
    assert settle(c, ready.task_id).state == "ready"

    finish = failure(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=control(), task_id=ready.task_id,
                                                                     choice="finish"))
    assert finish.code == Code.FAILED_PRECONDITION and "raise the limit" in finish.safe_message
    floaty = failure(c, "TaskService/SetBudget", pb.SetBudgetRequest(
        control=control(), task_id=ready.task_id, choice="set", hard_limit="1.005", currency="USD"))
    assert floaty.code == Code.INVALID_ARGUMENT


def test_the_same_key_replays_and_a_different_request_under_it_is_a_duplicate(coordinator: Coordinator) -> None:
    c = coordinator
    ready = drive_to_ready(c)
    request = pb.SetBudgetRequest(control=control(key="budget-raise-1"), task_id=ready.task_id, choice="set",
                                  hard_limit="2.50", currency="USD")

    first = call(c, "TaskService/SetBudget", request)
    again = call(c, "TaskService/SetBudget", request)
    other = failure(c, "TaskService/SetBudget", pb.SetBudgetRequest(
        control=control(key="budget-raise-1"), task_id=ready.task_id, choice="set", hard_limit="3.00"))

    assert isinstance(first, pb.TaskView) and first == again and first.budget.hard_limit.minor_units == 250
    assert other.code == Code.ABORTED and other.detail.error_type == "IdempotencyConflictError"


def test_a_dirty_repository_needs_its_exact_hash_acknowledged(coordinator: Coordinator) -> None:
    c = coordinator
    (c.repo / "notes.txt").write_text("a local note\n")
    request = pb.CreateTaskRequest(control=control(), repository_path=str(c.repo), requirement="Fix add()")

    refused = failure(c, "TaskService/CreateTask", request)

    assert refused.code == Code.FAILED_PRECONDITION and refused.detail.error_type == "DirtyTreeNotAcknowledgedError"
    assert str(c.repo.parent) not in refused.safe_message and "local note" not in refused.safe_message
    inspected = call(c, "WorkspaceService/InspectRepository", pb.InspectRepositoryRequest(path=str(c.repo)))
    assert isinstance(inspected, pb.RepositoryView) and inspected.dirty
    created = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement="Fix add()",
        acknowledged_dirty_hash=inspected.dirty_hash))
    assert isinstance(created, pb.TaskView) and created.state == "draft"


def test_the_app_is_whole_when_built_and_building_the_method_table_changes_nothing(
    db: Database, data_location: DataLocation
) -> None:
    """The issue's smell: the app used to be completed (its runs set) as a side effect of building the table."""
    app = CoordinatorApp(db=db, location=data_location, models=ScriptedDemoAccess(db), version="test")
    before = {field.name: getattr(app, field.name) for field in dataclasses.fields(app)}
    assert isinstance(before["runs"], BackgroundRuns)

    build_method_table(app)
    build_method_table(app)

    assert {field.name: getattr(app, field.name) for field in dataclasses.fields(app)} == before


def test_a_question_is_answered_through_the_method_table_and_the_answered_revision_is_approved(
        coordinator: Coordinator) -> None:
    """Issue 14 item 2 through the services (the browser's and the CLI's one path): the plan view carries the
    question and the trace; ApprovePlan is refused while it is open; AnswerQuestion records revision 2."""
    c = coordinator
    requirement = (c.repo / "TASK.md").read_text().replace("numbers.", "numbers, as `docs/X.md` says.")
    created = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement=requirement))
    assert isinstance(created, pb.TaskView)
    call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=control(), task_id=created.task_id, choice="set",
                                                         hard_limit="1.00", currency="USD"))
    planned = call(c, "TaskService/DraftPlan", pb.DraftPlanRequest(control=control(), task_id=created.task_id))
    assert isinstance(planned, pb.TaskView)
    plan = planned.plan
    assert [q.status for q in plan.questions] == ["open"] and plan.clarification_policy == "ask"
    assert plan.traced and list(plan.steps[0].serves_examples) == [1] and not plan.uncovered_examples
    assert "`docs/X.md`" in plan.questions[0].question

    status = failure(c, "TaskService/ApprovePlan", pb.ApprovePlanRequest(
        control=control(), task_id=created.task_id, revision=plan.revision, sha256=plan.sha256))
    assert status.code == Code.FAILED_PRECONDITION and "open question" in status.safe_message, status

    answered = call(c, "TaskService/AnswerQuestion", pb.AnswerQuestionRequest(
        control=control(), task_id=created.task_id, revision=plan.revision, sha256=plan.sha256, question=1,
        text="There is no such file; ignore it."))
    assert isinstance(answered, pb.TaskView) and answered.plan.revision == 2
    assert answered.plan.questions[0].status == "answered" and answered.state == "awaiting-plan-approval"
    ready = call(c, "TaskService/ApprovePlan", pb.ApprovePlanRequest(
        control=control(), task_id=created.task_id, revision=2, sha256=answered.plan.sha256))
    assert isinstance(ready, pb.TaskView) and ready.state == "ready"
