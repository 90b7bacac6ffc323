"""Execution intents: the row that must be committed before a tool runs, and the refusals instead of one.

An intent is written in one of two transactions, by the authority service:

* the **intent transaction** (:meth:`AuthorityService.record_execution_intent`) — after a person's (or the
  headless policy's) decision, or for any request executed after it was submitted; it re-checks the
  request against the facts then and consumes an allow-once approval;
* the **submission transaction** (:meth:`AuthorityService.record_request_with_intent`) — only when the
  request's first decision already allows it (``automatic``, or ``allowed-for-task`` by a standing
  approval of the exact identity) and the same facts clear it for execution; nothing is consumed then.

Either way the intent, its ``tool-execution-intended`` event and (if any) the allow-once consumption
commit together and before anything runs; if that commit fails, nothing runs; after a crash an intent
without a result becomes ``outcome-unknown`` and is never run again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from codeflux.authority.decide import ExecutionRefusal, StandingDenial
from codeflux.authority.records import classification_of
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.errors import (
    ApprovalRequiredError,
    CapabilityDeniedError,
    CodefluxError,
    ConflictError,
    TaskInactiveError,
)
from codeflux.domain.events import ToolExecutionIntended
from codeflux.domain.ids import ApprovalId, ToolRequestId
from codeflux.domain.operations import Operation, OperationIdentity
from codeflux.store import authority as rows
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import append_event
from codeflux.store.tasks import TaskRow

__all__ = ["ExecutionIntent", "refusal_error", "write_intent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionIntent:
    """A committed intent: the operation may now run once. ``existing`` is set (and nothing may run)
    when the request already had an execution. ``identity`` is the operation's identity, checked
    against the stored operation in the intent transaction."""

    execution_id: str
    request_id: str
    task: TaskRow
    operation: Operation
    identity: OperationIdentity
    consumed_approval_id: str | None
    existing: rows.ExecutionRow | None
    network_granted: bool = False
    """True when the request's needs include ``network``: it is cleared to run, so a person (or the
    headless policy) granted exactly this operation the network. Its box then shares the network."""


def write_intent(
    tx: Transaction,
    *,
    execution_id: str,
    request: rows.ToolRequestRow,
    task: TaskRow,
    operation: Operation,
    decision_id: str,
    approval_id: str | None,
    consume_approval: bool,
    before_commit: Callable[[], None] | None,
) -> ExecutionIntent:
    """Insert the intent (consuming the allow-once ``approval_id`` when ``consume_approval``) and
    append ``tool-execution-intended``; ``before_commit`` runs last (a fault injection point: if it
    raises, the whole transaction rolls back)."""
    rows.insert_execution_intent(tx, execution_id=execution_id, request=request, decision_id=decision_id,
                                 approval_id=approval_id)
    consumed = None
    if consume_approval and approval_id is not None:
        rows.consume_allow_once_approval(tx, approval_id=approval_id, execution_id=execution_id)
        consumed = approval_id
    append_event(tx, session_id=task.session_id, event=ToolExecutionIntended(
        request_id=ToolRequestId.parse(request.request_id), execution_id=execution_id,
        operation=str(request.identity), consumed_approval_id=None if consumed is None else ApprovalId.parse(consumed),
    ))
    if before_commit is not None:
        before_commit()
    return ExecutionIntent(execution_id=execution_id, request_id=request.request_id, task=task, operation=operation,
                           identity=request.identity, consumed_approval_id=consumed, existing=None,
                           network_granted=needs_network(request))


def needs_network(request: rows.ToolRequestRow) -> bool:
    """True if the recorded classification of ``request`` needs ``network`` (scoped to a host or not)."""
    return any(need.need.capability is Capability.NETWORK for need in classification_of(request).needs)


def refusal_error(
    view: ReadView,
    *,
    request: rows.ToolRequestRow,
    task: TaskRow,
    decision: rows.DecisionRow,
    refusal: ExecutionRefusal,
    denial: StandingDenial | None,
    need: CapabilityNeed | None,
) -> CodefluxError:
    """The typed error for an execution the rules refuse (nothing is written)."""
    request_id = request.request_id
    match refusal:
        case ExecutionRefusal.PENDING:
            return ApprovalRequiredError(request_id=request_id, needs=tuple(str(need) for need in decision.covered))
        case ExecutionRefusal.INACTIVE_TASK:
            return TaskInactiveError(request_id=request_id, task_id=task.task_id.value, state=task.state.value)
        case ExecutionRefusal.DENIED_CAPABILITY | ExecutionRefusal.DENIED:
            if denial is not None and need is not None:
                return CapabilityDeniedError(request_id=request_id, need=str(need), denial_id=denial.denial_id)
            denial_id = decision.denial_id
            if denial_id is None:
                recorded = rows.denials_of_decision(view, task_id=request.task_id, decision_id=decision.decision_id)
                denial_id = recorded[0].denial_id if recorded else decision.decision_id
            shown = ", ".join(str(need) for need in decision.covered) or "a capability"
            return CapabilityDeniedError(request_id=request_id, need=shown, denial_id=denial_id)
        case ExecutionRefusal.APPROVAL_CONSUMED | ExecutionRefusal.APPROVAL_MISSING:
            return ConflictError(f"tool request {request_id} has no unused approval ({refusal.value}); it does not run")
        case _:
            assert_never(refusal)
