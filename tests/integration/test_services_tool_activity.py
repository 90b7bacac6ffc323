"""``TaskService.GetToolActivity`` end to end: a real SQLite file, the demo repository, real worker processes
and the scripted provider (not a model), called through the method table the transports use.

The demo's run edits ``calc/ops.py`` (a file tool, automatic) and then asks to run the tests (a command,
pending): the activity shows the exact operation as the approval card does, the decision in force, and —
once it ran — the stored (redacted, capped) result with an exit code only where there is one."""

from __future__ import annotations

import json

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.services.registry import Code
from tests.fixtures.service_runs import Coordinator, call, control, failure, settle, waiting_for_a_decision

pytestmark = pytest.mark.slow
GET = "TaskService/GetToolActivity"


def requested(c: Coordinator, task_id: str) -> dict[str, str]:
    """tool name → request id, from the task's committed ``tool-requested`` events (first of each tool)."""
    timeline = call(c, "TaskService/GetTimeline", pb.GetTimelineRequest(task_id=task_id, limit=1000))
    assert isinstance(timeline, pb.Timeline)
    found: dict[str, str] = {}
    for event in timeline.events:
        if event.kind == "tool-requested":
            payload = json.loads(event.payload_json)
            found.setdefault(payload["tool"], payload["request_id"])
    return found


def activity(c: Coordinator, task_id: str, request_id: str) -> pb.ToolActivityView:
    reply = call(c, GET, pb.GetToolActivityRequest(task_id=task_id, request_id=request_id))
    assert isinstance(reply, pb.ToolActivityView)
    return reply


def test_a_file_tool_and_a_command_show_their_operation_decision_and_result(coordinator: Coordinator) -> None:
    c = coordinator
    waiting = waiting_for_a_decision(c, at_current_revision=True)
    pending = waiting.pending_approvals[0]
    ids = requested(c, waiting.task_id)

    edit = activity(c, waiting.task_id, ids["edit_file"])
    assert (edit.tool, edit.decision, edit.state) == ("edit_file", "automatic", "succeeded")
    assert [a.name for a in edit.arguments] == ["path", "old_text", "new_text"]
    assert edit.arguments[0].value == "calc/ops.py" and edit.arguments[2].value == "    return a + b\n"
    assert not edit.exit_code_known and edit.exit_code == 0, "a file tool has no exit code (not 0)"
    assert edit.duration_known and edit.operation_identity.startswith("op_") and edit.capabilities
    assert not edit.failure_kind and not edit.stdout_truncated and not edit.content_truncated

    before = activity(c, waiting.task_id, pending.request_id)
    assert before.request_id == pending.request_id and before.tool == "run_command"
    assert list(before.arguments) == list(pending.arguments), "the arguments exactly as the approval card shows them"
    assert list(before.capabilities) == list(pending.capabilities)
    assert before.operation_identity == pending.operation_identity
    assert (before.decision, before.state) == ("pending", ""), "it has not run"
    assert before.decision_reason and not before.exit_code_known and not before.duration_known
    assert before.confinement == "", "no worker ran it yet"
    assert pending.meaning.startswith("runs code from the task's worktree, which the agent can change; confined")

    call(c, "ApprovalService/Decide", pb.DecideRequest(control=control(), task_id=waiting.task_id,
                                                       request_id=pending.request_id, decision="allow-once"))
    settle(c, waiting.task_id)

    after = activity(c, waiting.task_id, pending.request_id)
    assert (after.decision, after.state, after.failure_kind) == ("allowed-once", "succeeded", "")
    assert after.exit_code_known and after.exit_code == 0
    assert "passed" in after.stdout and not after.stdout_truncated and not after.stderr_truncated
    assert after.duration_known and after.duration_ms >= 0
    assert (after.confinement, after.confinement_meaning.startswith("confined (bubblewrap): no network")) == (
        "bubblewrap", True)
    assert list(after.arguments) == list(before.arguments) and after.operation_identity == before.operation_identity


def test_a_stale_then_a_current_deny_and_other_tasks_requests_are_not_found(coordinator: Coordinator) -> None:
    c = coordinator
    waiting = waiting_for_a_decision(c, at_current_revision=True)
    request_id = waiting.pending_approvals[0].request_id
    stale = failure(c, "ApprovalService/Decide", pb.DecideRequest(
        control=control(waiting.revision - 1), task_id=waiting.task_id, request_id=request_id, decision="deny"))
    assert stale.code == Code.ABORTED and stale.detail.error_type == "StaleRevisionError"
    assert activity(c, waiting.task_id, request_id).decision == "pending", "a stale decision records nothing"
    call(c, "ApprovalService/Decide", pb.DecideRequest(control=control(waiting.revision), task_id=waiting.task_id,
                                                       request_id=request_id, decision="deny",
                                                       reason="not the tests, please"))
    settle(c, waiting.task_id)

    denied = activity(c, waiting.task_id, request_id)
    assert (denied.decision, denied.decision_reason, denied.state) == ("denied", "not the tests, please", "")
    assert not denied.stdout and not denied.exit_code_known and not denied.duration_known

    other = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement="Another task"))
    assert isinstance(other, pb.TaskView)
    elsewhere = failure(c, GET, pb.GetToolActivityRequest(task_id=other.task_id, request_id=request_id))
    assert elsewhere.code == Code.NOT_FOUND
    unknown = failure(c, GET, pb.GetToolActivityRequest(task_id=waiting.task_id, request_id="treq_" + "0" * 32))
    assert unknown.code == Code.NOT_FOUND
    no_task = failure(c, GET, pb.GetToolActivityRequest(task_id="tsk_" + "0" * 32, request_id=request_id))
    assert no_task.code == Code.NOT_FOUND
    for bad in ("", "treq_<script>", "tsk_" + "0" * 32, "treq_" + "0" * 500):
        malformed = failure(c, GET, pb.GetToolActivityRequest(task_id=waiting.task_id, request_id=bad))
        assert malformed.code == Code.INVALID_ARGUMENT, bad
        assert "<script>" not in malformed.safe_message
    bad_task = failure(c, GET, pb.GetToolActivityRequest(task_id="nope", request_id=request_id))
    assert bad_task.code == Code.INVALID_ARGUMENT
