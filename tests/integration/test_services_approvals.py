"""The approval service on real runs (scripted provider, not a model; real workers): a deny blocks the
capability and the task shows it; allow-for-task; answers that do not fit are refused."""

from __future__ import annotations

import json

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.services.registry import Code
from tests.fixtures.service_runs import Coordinator, call, control, failure, settle, waiting_for_a_decision

pytestmark = pytest.mark.slow


def test_a_deny_blocks_the_capability_and_the_task_sees_it(coordinator: Coordinator) -> None:
    c = coordinator
    waiting = waiting_for_a_decision(c)
    pending = waiting.pending_approvals[0]

    reply = call(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(), task_id=waiting.task_id, request_id=pending.request_id, decision="deny",
        reason="no commands in this task"))

    assert isinstance(reply, pb.DecideReply) and reply.outcome == "denied"
    assert reply.task.task_id == waiting.task_id
    assert all(p.request_id != pending.request_id for p in reply.task.pending_approvals)
    after = settle(c, waiting.task_id)
    assert not after.pending_approvals and not after.run_active and after.last_outcome
    listed = call(c, "ApprovalService/ListPending", pb.ListPendingRequest(task_id=waiting.task_id))
    assert isinstance(listed, pb.ListPendingReply) and not listed.pending
    denied = {(d.capability, d.resource) for d in listed.denials}
    assert denied and all(d.reason == "no commands in this task" for d in listed.denials)
    assert {cap.split(":", 1)[0] for cap in pending.capabilities} <= {cap for cap, _ in denied}
    # what the card said Deny would block, before the click, is exactly what was recorded (issue 20 item 3)
    assert set(pending.deny_blocks) == {f"{cap}:{resource}" if resource else cap for cap, resource in denied}
    assert pending.deny_meaning.startswith("blocks every program (any command the agent asks to run) for the rest")
    timeline = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=waiting.task_id, limit=1000))
    assert isinstance(timeline, pb.Timeline)
    decided = [json.loads(e.payload_json) for e in timeline.events if e.kind == "authority-decided"]
    assert any(d["outcome"] == "denied" and d.get("denied") for d in decided)
    # the plan's check at finish and the test command the pipeline wanted afterwards need the denied
    # capability: refused, never asked
    requested = [json.loads(e.payload_json) for e in timeline.events if e.kind == "tool-requested"]
    assert [r["outcome"] for r in requested if "process" in r["needs"]] == [
        "pending", "refused-denied-capability", "refused-denied-capability"]
    assert after.state == "awaiting-review" and after.last_outcome.startswith("awaiting-review")


def test_allow_for_task_answers_identical_requests_too(coordinator: Coordinator) -> None:
    c = coordinator
    view = waiting_for_a_decision(c)
    answered = 0
    while view.state == "awaiting-authority":
        call(c, "ApprovalService/Decide", pb.DecideRequest(
            control=control(), task_id=view.task_id, request_id=view.pending_approvals[0].request_id,
            decision="allow-for-task"))
        answered += 1
        view = settle(c, view.task_id)
    assert view.state == "awaiting-review", view.last_outcome
    assert answered <= 2


def test_answers_that_do_not_fit_are_refused(coordinator: Coordinator) -> None:
    c = coordinator
    waiting = waiting_for_a_decision(c)
    request_id = waiting.pending_approvals[0].request_id
    other = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement="another task"))
    assert isinstance(other, pb.TaskView)

    foreign = failure(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(), task_id=other.task_id, request_id=request_id, decision="allow-once"))
    unknown = failure(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(), task_id=waiting.task_id, request_id=request_id, decision="allow-always"))
    no_key = failure(c, "ApprovalService/Decide", pb.DecideRequest(
        task_id=waiting.task_id, request_id=request_id, decision="allow-once"))
    missing = failure(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(), task_id=waiting.task_id, request_id="treq_" + "0" * 32, decision="allow-once"))

    assert foreign.code == Code.INVALID_ARGUMENT and unknown.code == Code.INVALID_ARGUMENT
    assert no_key.code == Code.INVALID_ARGUMENT and missing.code == Code.INVALID_ARGUMENT
    still = settle(c, waiting.task_id)
    assert still.state == "awaiting-authority" and still.pending_approvals[0].request_id == request_id
