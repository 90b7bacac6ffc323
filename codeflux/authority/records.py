"""The authority records in domain terms: stored rows turned into views and rule inputs, and back.

Pure conversions plus the few reads the service composes (``standing_denials``, ``request_view``); the
transactions themselves are the service's (``service.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.authority.classify import Classification
from codeflux.authority.decide import Decider, DecisionOutcome, StandingApproval, StandingDenial
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import Operation, OperationIdentity
from codeflux.store import authority as rows
from codeflux.store.database import ReadView

__all__ = [
    "DecisionView",
    "RequestView",
    "classification_of",
    "decision_view",
    "request_view",
    "standing_approval",
    "standing_denials",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionView:
    """One recorded decision in domain terms."""

    decision_id: str
    outcome: DecisionOutcome
    decided_by: Decider
    reason: str
    covered: tuple[CapabilityNeed, ...]
    approval_id: str | None
    denial_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestView:
    """A recorded request with the decision in force."""

    request_id: str
    task_id: TaskId
    tool: str
    operation: Operation
    identity: OperationIdentity
    classification: Classification
    decision: DecisionView


def classification_of(request: rows.ToolRequestRow) -> Classification:
    return Classification(tool=request.tool, needs=request.needs, compound=request.compound)


def decision_view(row: rows.DecisionRow) -> DecisionView:
    return DecisionView(decision_id=row.decision_id, outcome=row.outcome, decided_by=row.decided_by,
                        reason=row.reason, covered=row.covered, approval_id=row.approval_id, denial_id=row.denial_id)


def standing_denials(view: ReadView, task_id: TaskId) -> list[StandingDenial]:
    return [StandingDenial(denial_id=row.denial_id, task_id=row.task_id, need=row.need)
            for row in rows.denials_of_task(view, task_id)]


def standing_approval(row: rows.ApprovalRow) -> StandingApproval:
    return StandingApproval(approval_id=row.approval_id, task_id=row.task_id, identity=row.identity,
                            scope=row.scope, request_id=row.request_id,
                            consumed=row.consumed_at_us is not None)


def request_view(view: ReadView, request_id: str) -> RequestView:
    request = rows.read_tool_request(view, request_id)
    return RequestView(request_id=request.request_id, task_id=request.task_id, tool=request.tool,
                       operation=request.operation, identity=request.identity,
                       classification=classification_of(request),
                       decision=decision_view(rows.latest_decision(view, request_id)))
