"""Card confirmations (issue 13 item 2): a browser decision must send back the single-use value issued with
the card it answers; without it nothing is decided and the refusal is journaled."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.domain.errors import UnconfirmedDecisionError
from codeflux.server.confirmations import CardConfirmations
from codeflux.services.registry import CallContext, MethodTable, UnaryMethod

TASK = "tsk_0123456789abcdef"
REQUEST = "treq_0123456789abcdef"
CONTEXT = CallContext(transport="websocket", connection_id="browser-test")


def awaiting_plan(revision: int = 1, sha: str = "a" * 64) -> pb.TaskView:
    return pb.TaskView(task_id=TASK, state="awaiting-plan-approval",
                       plan=pb.PlanView(revision=revision, sha256=sha, decision="undecided"),
                       pending_approvals=[pb.PendingApproval(request_id=REQUEST, tool="run_command")])


def approve(confirmation: str = "", *, key: str = "k1", revision: int = 1,
            sha: str = "a" * 64) -> pb.ApprovePlanRequest:
    return pb.ApprovePlanRequest(control=common_pb2.MutationControl(idempotency_key=key), task_id=TASK,
                                 revision=revision, sha256=sha, confirmation=confirmation)


class Journal:
    def __init__(self) -> None:
        self.refusals: list[tuple[str, str, str, str]] = []

    def __call__(self, task_id: str, decision: str, subject: str, reason: str) -> None:
        self.refusals.append((task_id, decision, subject, reason))


def test_cards_nested_anywhere_in_a_reply_are_stamped_with_distinct_values() -> None:
    cards = CardConfirmations()
    reply = pb.DecideReply(task=awaiting_plan())
    cards.stamp(reply)
    plan_value, decide_value = reply.task.plan.confirmation, reply.task.pending_approvals[0].confirmation
    assert len(plan_value) >= 32 and len(decide_value) >= 32 and plan_value != decide_value
    again = awaiting_plan()
    cards.stamp(again)
    assert again.plan.confirmation not in ("", plan_value)  # every read gets its own value
    review = pb.ReviewView(task_id=TASK, diff_identity="d" * 64)
    cards.stamp(review)
    assert review.accept_confirmation


def test_a_reject_with_or_without_retry_answers_the_reviews_own_reject_value() -> None:
    """Issue 14 item 9: a reject (and a reject with retry) is a browser decision like accept; the accept value
    of the same review does not let it through, and the reject value is used once."""
    journal = Journal()
    cards = CardConfirmations(record=journal)
    review = pb.ReviewView(task_id=TASK, diff_identity="d" * 64)
    cards.stamp(review)
    assert review.reject_confirmation and review.reject_confirmation != review.accept_confirmation
    method = "/codeflux.v1.ReviewService/RejectChange"

    def reject(value: str, key: str) -> pb.RejectChangeRequest:
        return pb.RejectChangeRequest(control=common_pb2.MutationControl(idempotency_key=key), task_id=TASK,
                                      diff_identity="d" * 64, reason="not this way", retry=True, confirmation=value)

    with pytest.raises(UnconfirmedDecisionError, match="missing"):
        cards.admit(method, reject("", "r1"))
    with pytest.raises(UnconfirmedDecisionError, match="unknown"):
        cards.admit(method, reject(review.accept_confirmation, "r2"))
    admitted = reject(review.reject_confirmation, "r3")
    cards.admit(method, admitted)
    assert admitted.confirmation == "" and admitted.retry  # the value is removed; the decision is kept
    with pytest.raises(UnconfirmedDecisionError, match="unknown"):
        cards.admit(method, reject(review.reject_confirmation, "r4"))  # used up
    assert journal.refusals == [(TASK, "reject", "d" * 64, reason) for reason in ("missing", "unknown", "unknown")]


def test_a_plan_that_is_not_awaiting_approval_gets_no_value() -> None:
    cards = CardConfirmations()
    view = awaiting_plan()
    view.state = "running"
    cards.stamp(view)
    assert view.plan.confirmation == ""
    decided = awaiting_plan()
    decided.plan.decision = "approved"
    cards.stamp(decided)
    assert decided.plan.confirmation == ""


def test_a_decision_without_its_value_is_refused_and_journaled_without_the_value() -> None:
    journal = Journal()
    cards = CardConfirmations(record=journal)
    with pytest.raises(UnconfirmedDecisionError, match="missing"):
        cards.admit("/codeflux.v1.TaskService/ApprovePlan", approve())
    with pytest.raises(UnconfirmedDecisionError, match="unknown"):
        cards.admit("/codeflux.v1.TaskService/ApprovePlan", approve("forged-value"))
    assert journal.refusals == [(TASK, "approve-plan", "r1", "missing"), (TASK, "approve-plan", "r1", "unknown")]


def test_a_value_is_used_once_except_by_the_identical_retry() -> None:
    journal = Journal()
    cards = CardConfirmations(record=journal)
    view = awaiting_plan()
    cards.stamp(view)
    value = view.plan.confirmation
    request = approve(value, key="k1")
    cards.admit("/codeflux.v1.TaskService/ApprovePlan", request)
    assert request.confirmation == ""  # the service (and its idempotency ledger) never sees it
    cards.admit("/codeflux.v1.TaskService/ApprovePlan", approve(value, key="k1"))  # the reconnect retry
    with pytest.raises(UnconfirmedDecisionError):  # a replay under a new key
        cards.admit("/codeflux.v1.TaskService/ApprovePlan", approve(value, key="k2"))
    assert journal.refusals == [(TASK, "approve-plan", "r1", "unknown")]


def test_a_value_answers_only_its_own_card() -> None:
    cards = CardConfirmations()
    view = awaiting_plan(revision=1)
    cards.stamp(view)
    value = view.plan.confirmation
    for other in (approve(value, revision=2), approve(value, sha="b" * 64)):
        with pytest.raises(UnconfirmedDecisionError):
            cards.admit("/codeflux.v1.TaskService/ApprovePlan", other)
    decide = pb.DecideRequest(control=common_pb2.MutationControl(idempotency_key="d1"), task_id=TASK,
                              request_id=REQUEST, decision="allow-once", confirmation=value)
    with pytest.raises(UnconfirmedDecisionError):  # a plan's value does not answer a tool request
        cards.admit("/codeflux.v1.ApprovalService/Decide", decide)
    decide.confirmation = view.pending_approvals[0].confirmation
    cards.admit("/codeflux.v1.ApprovalService/Decide", decide)
    cards.admit("/codeflux.v1.TaskService/ApprovePlan", approve(value))


def test_the_guarded_table_checks_decisions_and_stamps_replies_and_leaves_other_methods_alone() -> None:
    seen: list[Message] = []

    def approve_plan(ctx: CallContext, request: pb.ApprovePlanRequest) -> pb.TaskView:
        seen.append(request)
        return pb.TaskView(task_id=TASK, state="ready")

    def get_task(ctx: CallContext, request: pb.GetTaskRequest) -> pb.TaskView:
        return awaiting_plan()

    def list_tasks(ctx: CallContext, request: pb.ListTasksRequest) -> pb.ListTasksReply:
        return pb.ListTasksReply()

    methods = [
        UnaryMethod(name="/codeflux.v1.TaskService/ApprovePlan", request_type=pb.ApprovePlanRequest,
                    response_type=pb.TaskView, handler=approve_plan, mutating=True),
        UnaryMethod(name="/codeflux.v1.TaskService/GetTask", request_type=pb.GetTaskRequest,
                    response_type=pb.TaskView, handler=get_task),
        UnaryMethod(name="/codeflux.v1.TaskService/ListTasks", request_type=pb.ListTasksRequest,
                    response_type=pb.ListTasksReply, handler=list_tasks),
    ]
    plain = MethodTable.of(methods)  # type: ignore[arg-type]
    guarded = CardConfirmations().guard(plain)
    assert guarded.methods["/codeflux.v1.TaskService/ListTasks"] is plain.methods["/codeflux.v1.TaskService/ListTasks"]
    view = guarded.methods["/codeflux.v1.TaskService/GetTask"].handler(CONTEXT, pb.GetTaskRequest(task_id=TASK))
    assert isinstance(view, pb.TaskView) and view.plan.confirmation
    approve_method = guarded.methods["/codeflux.v1.TaskService/ApprovePlan"]
    with pytest.raises(UnconfirmedDecisionError):
        approve_method.handler(CONTEXT, approve())
    assert seen == []  # nothing reached the service
    approve_method.handler(CONTEXT, approve(view.plan.confirmation))
    assert len(seen) == 1 and seen[0].confirmation == ""  # type: ignore[attr-defined]
    # Over the Unix socket the table is not guarded at all: the plain handler takes the request as it is.
    plain.methods["/codeflux.v1.TaskService/ApprovePlan"].handler(CONTEXT, approve())
    assert len(seen) == 2


def instruction_files() -> pb.InstructionFilesView:
    return pb.InstructionFilesView(root="/repo", files=[
        pb.InstructionFileView(path="AGENTS.md", sha256="b" * 64, state="changed-since-approval",
                               approvals=[pb.InstructionApprovalView(sha256="a" * 64, approved_by="user")]),
        pb.InstructionFileView(path="CLAUDE.md", sha256="c" * 64, state="unapproved", problem="not-utf-8")])


def instruction_decision(confirmation: str, *, sha: str = "b" * 64,
                         key: str = "i1") -> pb.InstructionFileDecisionRequest:
    return pb.InstructionFileDecisionRequest(control=common_pb2.MutationControl(idempotency_key=key),
                                             repository_path="/repo", path="AGENTS.md", sha256=sha,
                                             confirmation=confirmation)


def test_an_instruction_file_decision_needs_the_value_issued_for_that_content_and_that_decision() -> None:
    journal = Journal()
    cards = CardConfirmations(record=journal)
    view = instruction_files()
    cards.stamp(view)
    agents, claude = view.files
    approve_value, revoke_value = agents.approve_confirmation, agents.approvals[0].revoke_confirmation
    assert approve_value and revoke_value and not claude.approve_confirmation  # not-utf-8: nothing to approve
    approving = "/codeflux.v1.InstructionService/ApproveInstructionFile"
    revoking = "/codeflux.v1.InstructionService/RevokeInstructionFile"

    for method, request in ((approving, instruction_decision("")), (approving, instruction_decision(revoke_value)),
                            (approving, instruction_decision(approve_value, sha="a" * 64)),
                            (revoking, instruction_decision(approve_value, sha="a" * 64))):
        with pytest.raises(UnconfirmedDecisionError):
            cards.admit(method, request)
    cards.admit(approving, instruction_decision(approve_value))
    cards.admit(revoking, instruction_decision(revoke_value, sha="a" * 64, key="i2"))
    assert journal.refusals == []  # an instruction-file decision belongs to no task


def endpoint_request(confirmation: str, *, base_url: str = "http://127.0.0.1:4000/v1", key: str = "e1",
                     provider: str = "openai-compatible") -> pb.ApproveEndpointRequest:
    return pb.ApproveEndpointRequest(control=common_pb2.MutationControl(idempotency_key=key), provider=provider,
                                     base_url=base_url, task_id=TASK, confirmation=confirmation)


def test_an_endpoint_approval_answers_only_the_card_of_that_provider_and_exact_url() -> None:
    """Issue 20 item 6: the endpoint card in a task view and in the settings view; another URL (even one that
    normalizes to the same), another provider, or a used value is refused and journaled on the named task."""
    journal = Journal()
    cards = CardConfirmations(record=journal)
    task = pb.TaskView(task_id=TASK, state="paused", endpoint_approval=pb.EndpointApprovalCard(
        provider="openai-compatible", base_url="http://127.0.0.1:4000/v1"))
    settings = pb.SettingsView(chosen_endpoint_approval=pb.EndpointApprovalCard(
        provider="openai-compatible", base_url="http://127.0.0.1:4001/v1"))
    cards.stamp(task)
    cards.stamp(settings)
    value, other = task.endpoint_approval.confirmation, settings.chosen_endpoint_approval.confirmation
    assert len(value) >= 32 and len(other) >= 32 and value != other
    method = "/codeflux.v1.SettingsService/ApproveEndpoint"
    for refused in (endpoint_request(""), endpoint_request(other), endpoint_request(value, provider="openai"),
                    endpoint_request(value, base_url="http://127.0.0.1:4000/v1/"),
                    endpoint_request(value, base_url="http://127.0.0.1:4001/v1")):
        with pytest.raises(UnconfirmedDecisionError):
            cards.admit(method, refused)
    let_through = endpoint_request(value)
    cards.admit(method, let_through)
    assert let_through.confirmation == ""  # removed before the service sees it
    with pytest.raises(UnconfirmedDecisionError):
        cards.admit(method, endpoint_request(value, key="e2"))  # used up
    assert [(t, d, r) for t, d, _, r in journal.refusals] == [(TASK, "approve-endpoint", "missing")] + [
        (TASK, "approve-endpoint", "unknown")] * 5
    assert not any(value in subject or other in subject for _, _, subject, _ in journal.refusals)
