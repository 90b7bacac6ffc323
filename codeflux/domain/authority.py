"""The recorded vocabulary of authority — decision outcomes, deciders, approval scopes, request sources, a
need with its reason — and the records the authority tables hold (requests, decisions, approvals, denials,
executions).

These are the values the authority tables store (the enums as their kebab-case text) and the rules in
``codeflux.authority`` decide with; they live here so the store hands its rows upward as these types, decoded
once (``codeflux.store.authority``), and every layer above can name them without reaching into the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import Operation, OperationIdentity
from codeflux.domain.tools import ToolName

__all__ = [
    "ApprovalRow",
    "ApprovalScope",
    "ClassifiedNeed",
    "Decider",
    "DecisionOutcome",
    "DecisionRow",
    "DenialRow",
    "ExecutionResultValues",
    "ExecutionRow",
    "RequestSource",
    "ToolRequestRow",
]


class DecisionOutcome(StrEnum):
    """The outcome of one authority decision (stored as ``authority_decisions.outcome``)."""

    AUTOMATIC = "automatic"
    PENDING = "pending"
    ALLOWED_ONCE = "allowed-once"
    ALLOWED_FOR_TASK = "allowed-for-task"
    DENIED = "denied"
    REFUSED_INACTIVE_TASK = "refused-inactive-task"
    REFUSED_DENIED_CAPABILITY = "refused-denied-capability"


class Decider(StrEnum):
    """Who made a decision: the rules themselves, a person, or the headless policy standing in for one."""

    SYSTEM = "system"
    USER = "user"
    HEADLESS_POLICY = "headless-policy"


class ApprovalScope(StrEnum):
    """How long an approval lasts: one execution of its request, or every identical request of the task."""

    ALLOW_ONCE = "allow-once"
    ALLOW_FOR_TASK = "allow-for-task"


class RequestSource(StrEnum):
    """Who asked for a tool request (stored as ``tool_requests.source``)."""

    MODEL = "model"
    USER = "user"
    TEST = "test"
    PIPELINE = "pipeline"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassifiedNeed:
    """One need and why it is needed, in words a person can check against the request."""

    need: CapabilityNeed
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRequestRow:
    """A recorded tool request: its exact operation (checked against its identity) and classified needs."""

    request_id: str
    task_id: TaskId
    tool: ToolName
    operation: Operation
    identity: OperationIdentity
    needs: tuple[ClassifiedNeed, ...]
    compound: bool
    source: RequestSource
    idempotency_key: str
    requested_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionRow:
    """One immutable authority decision about a request; ``covered`` are the needs it rules on."""

    decision_id: str
    request_id: str
    task_id: TaskId
    supersedes_decision_id: str | None
    outcome: DecisionOutcome
    covered: tuple[CapabilityNeed, ...]
    decided_by: Decider
    reason: str
    approval_id: str | None
    denial_id: str | None
    decided_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRow:
    """An approval of exactly one operation identity in one task."""

    approval_id: str
    task_id: TaskId
    request_id: str
    decision_id: str
    identity: OperationIdentity
    scope: ApprovalScope
    consumed_at_us: int | None
    consumed_by_execution_id: str | None
    revision: int
    created_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DenialRow:
    """A denied capability (maybe narrowed to a resource) standing in one task."""

    denial_id: str
    task_id: TaskId
    need: CapabilityNeed
    decision_id: str
    reason: str
    created_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResultValues:
    """The end of an execution as stored: already redacted and capped by the caller."""

    state: ToolExecutionState
    failure_kind: FailureKind | None = None
    message: str | None = None
    exit_code: int | None = None
    content: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    content_truncated: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    content_sha256: str | None = None
    duration_ms: int | None = None
    confinement: ConfinementMode | None = None
    """The box its processes ran in; None when no worker ran it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionRow:
    """One recorded execution of a request: its state so far and, once ended, its result."""

    execution_id: str
    request_id: str
    task_id: TaskId
    decision_id: str
    approval_id: str | None
    identity: OperationIdentity
    result: ExecutionResultValues
    intended_at_us: int
    started_at_us: int | None
    finished_at_us: int | None

    @property
    def state(self) -> ToolExecutionState:
        return self.result.state
