"""The authority records in domain terms: stored rows turned into views and rule inputs, and back.

Pure conversions plus the few reads the service composes (``standing_denials``, ``request_view``); the
transactions themselves are the service's (``service.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from codeflux.authority.classify import Classification, ClassifiedNeed
from codeflux.authority.decide import ApprovalScope, Decider, DecisionOutcome, StandingApproval, StandingDenial
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import (
    Operation,
    OperationIdentity,
    derive_operation_identity,
    parse_canonical_operation_json,
)
from codeflux.domain.tools import parse_tool_name
from codeflux.store import authority as rows
from codeflux.store.database import ReadView

__all__ = [
    "DecisionView",
    "RequestView",
    "classification_of",
    "covered_json",
    "decision_view",
    "needs_json",
    "operation_of",
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


def needs_json(classification: Classification) -> str:
    return json.dumps([{"need": str(item.need), "reason": item.reason} for item in classification.needs],
                      separators=(",", ":"), ensure_ascii=False)


def covered_json(needs: tuple[CapabilityNeed, ...]) -> str:
    return json.dumps([str(need) for need in needs], separators=(",", ":"))


def classification_of(request: rows.ToolRequestRow) -> Classification:
    items = json.loads(request.needs_json)
    needs = tuple(ClassifiedNeed(need=CapabilityNeed.parse(item["need"]), reason=item["reason"]) for item in items)
    return Classification(tool=parse_tool_name(request.tool), needs=needs, compound=request.compound)


def decision_view(row: rows.DecisionRow) -> DecisionView:
    return DecisionView(
        decision_id=row.decision_id, outcome=DecisionOutcome(row.outcome), decided_by=Decider(row.decided_by),
        reason=row.reason, covered=tuple(CapabilityNeed.parse(text) for text in json.loads(row.covered_needs_json)),
        approval_id=row.approval_id, denial_id=row.denial_id,
    )


def standing_denials(view: ReadView, task_id: TaskId) -> list[StandingDenial]:
    return [StandingDenial(denial_id=row.denial_id, task_id=row.task_id, need=row.need)
            for row in rows.denials_of_task(view, task_id)]


def standing_approval(row: rows.ApprovalRow) -> StandingApproval:
    return StandingApproval(approval_id=row.approval_id, task_id=row.task_id, identity=row.identity,
                            scope=ApprovalScope(row.scope), request_id=row.request_id,
                            consumed=row.consumed_at_us is not None)


def operation_of(request: rows.ToolRequestRow) -> Operation:
    """The stored operation, refused unless its identity is still the sha256 of its stored JSON."""
    operation = parse_canonical_operation_json(request.operation_json)
    if derive_operation_identity(operation) != request.identity:
        raise InvalidValueError(kind="stored tool request", reason="its operation no longer matches its identity")
    return operation


def request_view(view: ReadView, request_id: str) -> RequestView:
    request = rows.read_tool_request(view, request_id)
    return RequestView(request_id=request.request_id, task_id=request.task_id, tool=request.tool,
                       operation=operation_of(request), identity=request.identity,
                       classification=classification_of(request),
                       decision=decision_view(rows.latest_decision(view, request_id)))
