"""``ApprovalService``: the tool requests that wait for a person, and the person's answer.

* ``ListPending`` — the task's pending requests, each with the exact operation (tool, ordered arguments,
  working directory, operation identity) and the capabilities it needs, plus the capabilities a person
  denied for the task (every later request needing one of them is refused by the authority engine).
* ``Decide`` — ``allow-once``, ``allow-for-task`` or ``deny`` through
  :meth:`~codeflux.coordinator.runs.tool_driver.ToolDriver.decide` (one transaction with its
  ``authority-decided`` event in the task's journal); the request must belong to the task named. A deny
  records a standing denial of the request's capabilities and refuses the task's other pending requests
  that need them (the authority engine does both). Then the background run that waited goes on
  (:meth:`BackgroundRuns.continue_after_decision`); the reply carries the task as it is now.

* ``ListRepositoryApprovals`` — the repository approvals (``allow-for-repository``), newest first, of the repository
  a path names (its root commits) or of every repository; revoked ones only when asked.
* ``RevokeRepositoryApproval`` — revoke one (an immutable revocation row; from its commit on the approval decides
  nothing and every such request asks again). Revoking a revoked approval returns it unchanged.

The authority engine takes no idempotency key for a decision; deciding a request again the same way
returns it unchanged and a different answer is refused (:class:`DecisionAlreadyRecordedError`), and a
retry with the same key returns the first reply (:class:`~codeflux.services.mutations.MutationLedger`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.authority.decide import UserDecision
from codeflux.authority.repository_approvals import RepositoryApprovals
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.errors import InvalidValueError, NotFoundError, UsageError
from codeflux.domain.ids import RepositoryApprovalId
from codeflux.domain.repository_approvals import RepositoryRoots
from codeflux.gitwork.repository import open_repository
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, check_expected_revision, mutation_of, parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.tasks import runs_of
from codeflux.services.views import (
    denial_views,
    pending_approvals,
    repository_approval_view,
    task_service,
    task_view,
)

__all__ = ["methods"]

_SERVICE: Final = "ApprovalService"
_MAX_REASON: Final = 2048


def _list(app: CoordinatorApp, ctx: CallContext, request: pb.ListPendingRequest) -> pb.ListPendingReply:
    task_id = parse_task_id(request.task_id)
    task_service(app).show(task_id)  # NOT_FOUND for an unknown task
    return pb.ListPendingReply(pending=pending_approvals(app, task_id), denials=denial_views(app, task_id))


def _decide(app: CoordinatorApp, ctx: CallContext, request: pb.DecideRequest) -> pb.DecideReply:
    mutation = mutation_of(ctx, "Decide", request.control)
    task_id = parse_task_id(request.task_id)
    check_expected_revision(task_id, mutation, task_service(app).show(task_id).task.revision)
    try:
        decision = UserDecision(request.decision)
    except ValueError:
        raise InvalidValueError(kind="decision",
                                reason="choose allow-once, allow-for-task, allow-for-repository or deny") from None
    if not request.request_id.startswith("treq_") or len(request.request_id) > 80:
        raise InvalidValueError(kind="request id", reason="expected a tool request id like treq_…")
    reason = request.reason.strip()[:_MAX_REASON] or f"{decision.value} in the codeflux UI"
    runs = runs_of(app)
    driver = runs.driver_for(task_id)
    own = driver is None
    chosen = driver or ToolDriver(app.db, state_dir=app.location.directory / "workers")
    try:
        try:
            belongs = chosen.read_request(request.request_id).task_id == task_id
        except NotFoundError:
            belongs = False
        if not belongs:
            raise UsageError(f"request {request.request_id} is not a request of task {task_id}")
        decided = chosen.decide(request.request_id, decision, reason=reason)
    finally:
        if own:
            chosen.close()  # it started no worker: deciding only records
    runs.continue_after_decision(task_id)
    return pb.DecideReply(request_id=decided.request_id, outcome=decided.outcome.value, task=task_view(app, task_id))


def _list_repository_approvals(app: CoordinatorApp, ctx: CallContext,
                               request: pb.ListRepositoryApprovalsRequest) -> pb.ListRepositoryApprovalsReply:
    roots = None
    if request.repository_path:
        path = Path(request.repository_path)
        if not path.is_absolute():
            raise InvalidValueError(kind="repository path", reason="must be absolute")
        roots = RepositoryRoots.of(open_repository(path).root_commits)
    listed = RepositoryApprovals(app.db).list_approvals(roots=roots, include_revoked=request.include_revoked)
    return pb.ListRepositoryApprovalsReply(approvals=[repository_approval_view(approval) for approval in listed])


def _revoke_repository_approval(app: CoordinatorApp, request: pb.RevokeRepositoryApprovalRequest,
                                ) -> pb.RevokeRepositoryApprovalReply:
    approval_id = RepositoryApprovalId.parse(request.approval_id.strip())
    reason = request.reason.strip()[:_MAX_REASON] or "revoked"
    revoked = RepositoryApprovals(app.db).revoke(approval_id, reason=reason)
    return pb.RevokeRepositoryApprovalReply(approval=repository_approval_view(revoked))


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def list_pending(ctx: CallContext, request: pb.ListPendingRequest) -> pb.ListPendingReply:
        return _list(app, ctx, request)

    def decide(ctx: CallContext, request: pb.DecideRequest) -> pb.DecideReply:
        mutation = mutation_of(ctx, "Decide", request.control)
        return ledger.run(mutation, request, pb.DecideReply, lambda: _decide(app, ctx, request))

    def list_repository_approvals(ctx: CallContext,
                                  request: pb.ListRepositoryApprovalsRequest) -> pb.ListRepositoryApprovalsReply:
        return _list_repository_approvals(app, ctx, request)

    def revoke_repository_approval(ctx: CallContext,
                                   request: pb.RevokeRepositoryApprovalRequest) -> pb.RevokeRepositoryApprovalReply:
        mutation = mutation_of(ctx, "RevokeRepositoryApproval", request.control)
        return ledger.run(mutation, request, pb.RevokeRepositoryApprovalReply,
                          lambda: _revoke_repository_approval(app, request))

    return [
        UnaryMethod(name=method_name(_SERVICE, "ListRepositoryApprovals"),
                    request_type=pb.ListRepositoryApprovalsRequest, response_type=pb.ListRepositoryApprovalsReply,
                    handler=list_repository_approvals),
        UnaryMethod(name=method_name(_SERVICE, "RevokeRepositoryApproval"),
                    request_type=pb.RevokeRepositoryApprovalRequest, response_type=pb.RevokeRepositoryApprovalReply,
                    handler=revoke_repository_approval, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "ListPending"), request_type=pb.ListPendingRequest,
                    response_type=pb.ListPendingReply, handler=list_pending),
        UnaryMethod(name=method_name(_SERVICE, "Decide"), request_type=pb.DecideRequest,
                    response_type=pb.DecideReply, handler=decide, mutating=True),
    ]
