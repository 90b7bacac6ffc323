"""What the tool driver returns about a tool call: the recorded request with its decision, and its stored
execution. Plain values, shared by :mod:`codeflux.coordinator.runs.tool_driver` (which makes them) and
:mod:`codeflux.coordinator.hooks` (whose notifications carry them); they live beside the hooks, below the
wings, so the hook points lean on no wing."""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.authority.classify import ClassifiedNeed
from codeflux.authority.decide import DecisionOutcome
from codeflux.authority.service import DecisionView
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import OperationIdentity

__all__ = ["ExecutionRecord", "SubmittedRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmittedRequest:
    """A recorded tool request and the decision in force for it."""

    request_id: str
    task_id: TaskId
    tool: str
    operation_identity: OperationIdentity
    needs: tuple[ClassifiedNeed, ...]
    compound: bool
    decision: DecisionView
    intended_execution_id: str | None = None
    """Set when the submission's transaction also committed the execution intent (see
    :mod:`~codeflux.coordinator.runs.tool_driver`); ``ToolDriver.execute`` then runs it without another commit."""

    @property
    def outcome(self) -> DecisionOutcome:
        return self.decision.outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionRecord:
    """A stored execution: ``state`` is ``intended``, ``running`` or an end state; text is redacted."""

    execution_id: str
    request_id: str
    task_id: TaskId
    state: ToolExecutionState
    failure_kind: FailureKind | None
    message: str | None
    exit_code: int | None
    content: str | None
    stdout: str | None
    stderr: str | None
    content_truncated: bool
    stdout_truncated: bool
    stderr_truncated: bool
    content_sha256: str | None
    duration_ms: int | None
    confinement: ConfinementMode | None = None
