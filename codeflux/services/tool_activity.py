"""``TaskService.GetToolActivity``: one tool request as recorded — the exact operation, its latest
decision and its result.

The request must belong to the task named (else NOT_FOUND, as for an unknown request, so a caller learns
nothing about other tasks' requests). The operation is shown as the approval card shows it (tool,
arguments in the descriptor's order, capabilities, operation identity; see
:func:`codeflux.services.views.approval_view`); the stored operation is re-checked against its identity
before it is shown. The result is what the coordinator stored: output was redacted before it was
stored and capped there, with its truncation flags; an unknown exit code (a file tool, an interrupted
run) is ``exit_code_known=false``, never 0; an unknown duration likewise. Request, decision and
execution are read in one read transaction, so they belong together.
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.runs.tool_records import read_recorded_tool_call
from codeflux.domain.capabilities import Capability
from codeflux.domain.confinement import describe_confinement
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import argument_text, task_service

__all__ = ["methods", "tool_activity"]

_SERVICE: Final = "TaskService"
_MAX_REASON: Final = 2048


def _request_id(text: str) -> str:
    try:
        return ToolRequestId.parse(text).value
    except (InvalidValueError, TypeError, ValueError):
        raise InvalidValueError(kind="tool request id",
                                reason="expected an id like treq_… as codeflux showed it") from None


def tool_activity(app: CoordinatorApp, task_id: TaskId, request_id: str) -> pb.ToolActivityView:
    """The request ``request_id`` of ``task_id`` with its latest decision and its result (see the module
    docstring); NOT_FOUND when the task has no such request."""
    task_service(app).show(task_id)  # NOT_FOUND for an unknown task
    found = read_recorded_tool_call(app.db, task_id=task_id, request_id=request_id)
    request = found.request
    operation = request.operation  # the store refuses an operation that no longer matches its identity
    shown = pb.ToolActivityView(
        request_id=request.request_id, tool=request.tool.value,
        arguments=[pb.Argument(name=name, value=argument_text(value)) for name, value in operation.arguments],
        capabilities=[str(item.need) for item in request.needs], operation_identity=str(request.identity),
        decision=found.decision.outcome.value, decision_reason=found.decision.reason[:_MAX_REASON])
    execution = found.execution
    if execution is None:
        return shown
    result = execution.result
    shown.state = result.state.value
    if result.exit_code is not None:
        shown.exit_code_known, shown.exit_code = True, result.exit_code
    shown.stdout, shown.stdout_truncated = result.stdout or "", result.stdout_truncated
    shown.stderr, shown.stderr_truncated = result.stderr or "", result.stderr_truncated
    shown.content, shown.content_truncated = result.content or "", result.content_truncated
    shown.message = result.message or ""
    shown.failure_kind = "" if result.failure_kind is None else result.failure_kind.value
    if result.duration_ms is not None:
        shown.duration_known, shown.duration_ms = True, result.duration_ms
    if result.confinement is not None:
        network = any(item.need.capability is Capability.NETWORK for item in request.needs)
        shown.confinement = result.confinement.value
        shown.confinement_meaning = describe_confinement(result.confinement, network=network)
    return shown


def _get(app: CoordinatorApp, ctx: CallContext, request: pb.GetToolActivityRequest) -> pb.ToolActivityView:
    return tool_activity(app, parse_task_id(request.task_id), _request_id(request.request_id))


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    def get(ctx: CallContext, request: pb.GetToolActivityRequest) -> pb.ToolActivityView:
        return _get(app, ctx, request)

    return [UnaryMethod(name=method_name(_SERVICE, "GetToolActivity"), request_type=pb.GetToolActivityRequest,
                        response_type=pb.ToolActivityView, handler=get)]
