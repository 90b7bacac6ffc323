"""The closed registry of journal event kinds and their typed payloads: the contract with the browser.

Every event the coordinator commits is one of the frozen dataclasses below; its kind comes from the class
(:data:`EventPayload.KIND`), never from a string at the call site, and :meth:`EventPayload.to_payload`
gives the JSON-able mapping that is stored (``events.payload_json``) and sent to the web client, under the
same keys the journal has always used.

Event rows are immutable, so reading must accept every shape ever written:

- a key that earlier versions did not write is a field with a default (``None``): it may be missing on
  read and is always written now (``task-created``'s ``repository_id`` and ``title``, ``task-state-changed``'s
  ``reason`` and ``actor``, ``worktree-*``'s ``checkpoint_refs_deleted``);
- a key written only in some cases is *conditional*: omitted when ``None`` (``authority-decided``'s
  ``approval_id``, ``denied``, ``refused_requests``; ``model-call-refused``'s ``reserve``; ``tool-output``'s
  ``stopped``);
- keys this registry does not know are ignored on read (a newer codeflux may add one).

A kind this registry does not know, or a payload that does not fit its kind, decodes to
:class:`UnknownEvent`: kept whole for display with the problem named, so replaying a journal never stops
at one row. :func:`decode_event` never raises; :class:`UnknownEvent` can never be appended.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar, Final, TypeAlias

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.event_codec import (
    FIELD_KEY,
    OMITTED_WHEN_NONE,
    JsonValue,
    PayloadShapeError,
    decode_fields,
    encode_fields,
    payload_key_of,
)
from codeflux.domain.ids import (
    ApprovalId,
    DecisionId,
    IncidentId,
    RepositoryApprovalId,
    RepositoryId,
    RunId,
    TaskId,
    ToolRequestId,
)
from codeflux.domain.pipeline.outcomes import StageOutcome
from codeflux.domain.tasks import TaskState

__all__ = [
    "EVENT_TYPES",
    "AcceptConflicted",
    "AcceptResolved",
    "AcceptStarted",
    "AgentMessage",
    "AttemptSentBack",
    "AuthorityDecided",
    "BrowserDecisionRefused",
    "BudgetAcknowledged",
    "BudgetDefaultSet",
    "BudgetExhausted",
    "BudgetSet",
    "BudgetWarning",
    "CheckpointCreated",
    "ClarificationPolicySet",
    "DecodedEvent",
    "DeliveryRecorded",
    "DirtyTreeAcknowledged",
    "EffectOutcomeRecorded",
    "EndpointApproved",
    "EventKind",
    "EventPayload",
    "IncidentDismissed",
    "IncidentFixed",
    "IncidentNew",
    "IncidentRecurred",
    "IncidentRegressed",
    "IncidentTaskProposed",
    "InstructionFileApproved",
    "InstructionFileRevoked",
    "JsonValue",
    "LadderRungApproved",
    "LogsPurged",
    "ModelCallFinished",
    "ModelCallPlanned",
    "ModelCallReconciled",
    "ModelCallRefused",
    "ModelCallStarted",
    "PatchStored",
    "PlanApproved",
    "PlanDecided",
    "PlanRevisionRecorded",
    "PlanSentBack",
    "PriceSet",
    "ProviderCredentialDeleted",
    "ProviderCredentialStored",
    "RecoveryAssessed",
    "RepositoryRegistered",
    "RunAttemptEnded",
    "RunAttemptOpened",
    "SettlementMove",
    "StageVerdictsRecorded",
    "StoreDamageDetected",
    "TaskAccepted",
    "TaskCreated",
    "TaskStateChanged",
    "ToolExecutionFinished",
    "ToolExecutionIntended",
    "ToolOutput",
    "ToolRequested",
    "UnknownEvent",
    "WorktreeDisposed",
    "WorktreeKept",
    "WorktreeRemoved",
    "decode_event",
    "event_payload_keys",
]

class EventKind(StrEnum):
    """Every kind of event the journal holds (stored kebab-case in ``events.kind``)."""

    # repositories and tasks
    REPOSITORY_REGISTERED = "repository-registered"
    TASK_CREATED = "task-created"
    TASK_STATE_CHANGED = "task-state-changed"
    DIRTY_TREE_ACKNOWLEDGED = "dirty-tree-acknowledged"
    # plans and attempts
    PLAN_REVISION_RECORDED = "plan-revision-recorded"
    PLAN_APPROVED = "plan-approved"
    PLAN_SENT_BACK = "plan-sent-back"
    RUN_ATTEMPT_OPENED = "run-attempt-opened"
    STAGE_VERDICTS_RECORDED = "stage-verdicts-recorded"
    RUN_ATTEMPT_ENDED = "run-attempt-ended"
    ATTEMPT_SENT_BACK = "attempt-sent-back"
    CHECKPOINT_CREATED = "checkpoint-created"
    AGENT_MESSAGE = "agent-message"
    # tools and authority
    TOOL_REQUESTED = "tool-requested"
    AUTHORITY_DECIDED = "authority-decided"
    TOOL_EXECUTION_INTENDED = "tool-execution-intended"
    TOOL_OUTPUT = "tool-output"
    TOOL_EXECUTION_FINISHED = "tool-execution-finished"
    # review, delivery, recovery, worktrees
    PATCH_STORED = "patch-stored"
    ACCEPT_CONFLICTED = "accept-conflicted"
    ACCEPT_STARTED = "accept-started"
    ACCEPT_RESOLVED = "accept-resolved"
    TASK_ACCEPTED = "task-accepted"
    DELIVERY_RECORDED = "delivery-recorded"
    RECOVERY_ASSESSED = "recovery-assessed"
    EFFECT_OUTCOME_RECORDED = "effect-outcome-recorded"
    WORKTREE_REMOVED = "worktree-removed"
    WORKTREE_KEPT = "worktree-kept"
    # models and money
    MODEL_CALL_PLANNED = "model-call-planned"
    MODEL_CALL_REFUSED = "model-call-refused"
    MODEL_CALL_STARTED = "model-call-started"
    MODEL_CALL_FINISHED = "model-call-finished"
    MODEL_CALL_RECONCILED = "model-call-reconciled"
    BUDGET_SET = "budget-set"
    BUDGET_ACKNOWLEDGED = "budget-acknowledged"
    BUDGET_WARNING = "budget-warning"
    BUDGET_EXHAUSTED = "budget-exhausted"
    BUDGET_DEFAULT_SET = "budget-default-set"
    CLARIFICATION_POLICY_SET = "clarification-policy-set"
    PRICE_SET = "price-set"
    ENDPOINT_APPROVED = "endpoint-approved"
    LADDER_RUNG_APPROVED = "ladder-rung-approved"
    # the browser transport
    BROWSER_DECISION_REFUSED = "browser-decision-refused"
    # the system session
    PROVIDER_CREDENTIAL_STORED = "provider-credential-stored"
    PROVIDER_CREDENTIAL_DELETED = "provider-credential-deleted"
    LOGS_PURGED = "logs-purged"
    STORE_DAMAGE_DETECTED = "store-damage-detected"
    # repository instruction files
    INSTRUCTION_FILE_APPROVED = "instruction-file-approved"
    INSTRUCTION_FILE_REVOKED = "instruction-file-revoked"
    # incidents (issue 22)
    INCIDENT_NEW = "incident-new"
    INCIDENT_RECURRED = "incident-recurred"
    INCIDENT_REGRESSED = "incident-regressed"
    INCIDENT_DISMISSED = "incident-dismissed"
    INCIDENT_TASK_PROPOSED = "incident-task-proposed"
    INCIDENT_FIXED = "incident-fixed"


class EventPayload:
    """Base of every registered payload: ``KIND`` names the event; fields are the stored keys."""

    __slots__ = ()
    KIND: ClassVar[EventKind]

    def to_payload(self) -> dict[str, JsonValue]:
        """The JSON-able mapping stored for this event (the keys the web client reads)."""
        return encode_fields(self)


# ─── repositories and tasks ─────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryRegistered(EventPayload):
    KIND = EventKind.REPOSITORY_REGISTERED
    repository_id: RepositoryId
    root: str
    identity: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskCreated(EventPayload):
    """``repository_id`` and ``title`` were not written by the first task store."""

    KIND = EventKind.TASK_CREATED
    task_id: TaskId
    state: TaskState
    repository_id: RepositoryId | None = None
    title: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskStateChanged(EventPayload):
    """``reason`` and ``actor`` were not written by the first task store."""

    KIND = EventKind.TASK_STATE_CHANGED
    task_id: TaskId
    from_state: TaskState = dataclasses.field(metadata={FIELD_KEY: "from"})
    to_state: TaskState = dataclasses.field(metadata={FIELD_KEY: "to"})
    revision: int
    reason: str | None = None
    actor: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DirtyTreeAcknowledged(EventPayload):
    KIND = EventKind.DIRTY_TREE_ACKNOWLEDGED
    task_id: TaskId
    dirty_hash: str
    changes: int
    by: str


# ─── plans and attempts ─────────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanRevisionRecorded(EventPayload):
    KIND = EventKind.PLAN_REVISION_RECORDED
    task_id: TaskId
    revision: int
    sha256: str
    created_by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanDecided(EventPayload):
    """The shared shape of a person's (or the headless policy's) answer to one plan revision."""

    task_id: TaskId
    revision: int
    sha256: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanApproved(PlanDecided):
    KIND = EventKind.PLAN_APPROVED


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanSentBack(PlanDecided):
    KIND = EventKind.PLAN_SENT_BACK


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunAttemptOpened(EventPayload):
    KIND = EventKind.RUN_ATTEMPT_OPENED
    task_id: TaskId
    attempt: int
    run_id: RunId
    plan_revision: int
    plan_sha256: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StageVerdictsRecorded(EventPayload):
    """``stages``: (stage name, outcome) pairs, in stage order."""

    KIND = EventKind.STAGE_VERDICTS_RECORDED
    task_id: TaskId
    attempt: int
    stages: tuple[tuple[str, StageOutcome], ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunAttemptEnded(EventPayload):
    """``outcomes``: how many of the attempt's ledger rows ended with each outcome."""

    KIND = EventKind.RUN_ATTEMPT_ENDED
    task_id: TaskId
    attempt: int
    stopped_at: str | None
    outcomes: Mapping[StageOutcome, int]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AttemptSentBack(EventPayload):
    """A gate sent ``attempt``'s work back: the ``rung`` it ran on, the normalised failure ``fingerprint`` (its
    digest) and what the ladder decided (``stay``, ``climb``, ``exhausted``, ``ask-before-climb``). A run that goes
    on after a pause or a restart reads these back, so repair stays bounded per rung and stalls are still seen."""

    KIND = EventKind.ATTEMPT_SENT_BACK
    task_id: TaskId
    attempt: int
    gate: str
    rung: str
    fingerprint: str
    decision: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCreated(EventPayload):
    KIND = EventKind.CHECKPOINT_CREATED
    task_id: TaskId
    sequence: int
    trigger: str
    commit: str
    ref: str
    head: str
    diff_identity: str
    plan_revision: int | None
    attempt: int | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AgentMessage(EventPayload):
    """What the agent said (already redacted and cut to the timeline's bound)."""

    KIND = EventKind.AGENT_MESSAGE
    conversation_id: int
    attempt: int
    text: str
    truncated: bool
    redacted: bool


# ─── tools and authority ────────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolRequested(EventPayload):
    KIND = EventKind.TOOL_REQUESTED
    request_id: ToolRequestId
    tool: str
    operation: str
    needs: tuple[str, ...]
    decision_id: DecisionId
    outcome: str
    repository_approval_id: RepositoryApprovalId | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    """The repository approval that decided the request at once (allow for this repository), if one did."""
    summary: str | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    """The call in one line for the timeline (:func:`codeflux.domain.display.operation_summary`, redacted): a
    command as a shell reads it, a file tool's path. Events recorded before it existed have none."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuthorityDecided(EventPayload):
    KIND = EventKind.AUTHORITY_DECIDED
    request_id: ToolRequestId
    decision_id: DecisionId
    outcome: str
    decided_by: str
    approval_id: ApprovalId | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    denied: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    refused_requests: tuple[ToolRequestId, ...] | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    repository_approval_id: RepositoryApprovalId | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)
    """The repository approval a person's allow-for-repository recorded with this decision."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionIntended(EventPayload):
    KIND = EventKind.TOOL_EXECUTION_INTENDED
    request_id: ToolRequestId
    execution_id: str
    operation: str
    consumed_approval_id: ApprovalId | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput(EventPayload):
    """A chunk of live output; the last one of a capped stream carries ``stopped`` and no text."""

    KIND = EventKind.TOOL_OUTPUT
    request_id: ToolRequestId
    execution_id: str
    stream: str
    text: str
    offset: int
    stopped: str | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionFinished(EventPayload):
    KIND = EventKind.TOOL_EXECUTION_FINISHED
    request_id: ToolRequestId
    execution_id: str
    state: str
    failure_kind: str | None
    exit_code: int | None


# ─── review, delivery, recovery, worktrees ──────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PatchStored(EventPayload):
    """``kind``: why the patch was kept (``rejected``, ``preserved``, …)."""

    KIND = EventKind.PATCH_STORED
    task_id: TaskId
    kind: str
    diff_identity: str
    patch_sha256: str
    bytes: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AcceptConflicted(EventPayload):
    KIND = EventKind.ACCEPT_CONFLICTED
    task_id: TaskId
    diff_identity: str
    branch: str
    conflicting_paths: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AcceptStarted(EventPayload):
    """The intent of a landing, committed before the checkout is touched: ``mode`` (``fast-forward`` or
    ``merge-commit``) moves ``branch`` from ``previous_head`` to ``landed_head`` changing ``paths`` paths."""

    KIND = EventKind.ACCEPT_STARTED
    task_id: TaskId
    landing_id: int
    diff_identity: str
    mode: str
    branch: str
    previous_head: str
    landed_head: str
    paths: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AcceptResolved(EventPayload):
    """An accept landing that did not finish was resolved: ``resolution`` is ``finished`` (the branch had
    moved; leftovers removed) or ``rolled-back`` (every path back to its old content); ``by`` is ``accept``
    (the failing accept itself), ``retry`` or ``recovery`` (startup recovery); ``reason`` says why it stopped."""

    KIND = EventKind.ACCEPT_RESOLVED
    task_id: TaskId
    landing_id: int
    resolution: str
    by: str
    branch: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskAccepted(EventPayload):
    """``kind``: how the diff landed (``fast-forward``, ``merge-commit``, …)."""

    KIND = EventKind.TASK_ACCEPTED
    task_id: TaskId
    diff_identity: str
    kind: str
    branch: str
    previous_head: str
    landed_head: str
    task_commit: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryRecorded(EventPayload):
    KIND = EventKind.DELIVERY_RECORDED
    task_id: TaskId
    attempt: int
    diff_identity: str
    human_acceptance: StageOutcome
    deliver: StageOutcome
    landed_commit: str | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryAssessed(EventPayload):
    KIND = EventKind.RECOVERY_ASSESSED
    task_id: TaskId
    assessment_id: int
    recommended: str
    ambiguous: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EffectOutcomeRecorded(EventPayload):
    KIND = EventKind.EFFECT_OUTCOME_RECORDED
    task_id: TaskId
    item: str
    kind: str
    outcome: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeDisposed(EventPayload):
    """The shared shape of a worktree's end; ``checkpoint_refs_deleted`` was not written at first."""

    task_id: TaskId
    path: str
    refusal: str | None
    detail: str
    branch_deleted: bool
    checkpoint_refs_deleted: int | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeRemoved(WorktreeDisposed):
    KIND = EventKind.WORKTREE_REMOVED


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeKept(WorktreeDisposed):
    """``refusal`` says why the worktree stayed."""

    KIND = EventKind.WORKTREE_KEPT


# ─── models and money ───────────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SettlementMove:
    """One budget-ledger row a settled call wrote: its kind and amount (``None``: unknown)."""

    kind: str
    amount_minor: int | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallPlanned(EventPayload):
    """``reserved``: the reserve as shown (an amount, or why it is unknown)."""

    KIND = EventKind.MODEL_CALL_PLANNED
    request_id: str
    provider: str
    model: str
    rung: str
    reserved: str
    reserved_minor: int | None
    currency: str
    price_snapshot_id: int | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallRefused(EventPayload):
    """``refusal``: the error class that refused the call; ``reserve`` only when one was computed."""

    KIND = EventKind.MODEL_CALL_REFUSED
    task_id: TaskId
    refusal: str
    reason: str
    reserve: str | None = dataclasses.field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted(EventPayload):
    KIND = EventKind.MODEL_CALL_STARTED
    request_id: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFinished(EventPayload):
    """Amounts as shown (``cost`` may be ``unknown``); ``ledger`` the rows this settlement wrote."""

    KIND = EventKind.MODEL_CALL_FINISHED
    request_id: str
    state: str
    cost: str
    ledger: tuple[SettlementMove, ...]
    spent: str
    remaining: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallReconciled(EventPayload):
    KIND = EventKind.MODEL_CALL_RECONCILED
    request_id: str
    state: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSet(EventPayload):
    KIND = EventKind.BUDGET_SET
    task_id: TaskId
    hard_limit_minor: int
    currency: str
    warning_minor: int | None
    token_limit: int | None
    allow_unknown_price: bool


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetAcknowledged(EventPayload):
    """``entries``: the ledger entry ids acknowledged."""

    KIND = EventKind.BUDGET_ACKNOWLEDGED
    task_id: TaskId
    entries: tuple[int, ...]
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetWarning(EventPayload):
    KIND = EventKind.BUDGET_WARNING
    task_id: TaskId
    warning_minor: int
    spent_minor: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetExhausted(EventPayload):
    KIND = EventKind.BUDGET_EXHAUSTED
    task_id: TaskId
    hard_limit_minor: int
    spent_minor: int
    reserved_minor: int
    currency: str
    spent: str
    remaining: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetDefaultSet(EventPayload):
    """``hard_limit``: the new default as shown, ``None`` when it was cleared."""

    KIND = EventKind.BUDGET_DEFAULT_SET
    hard_limit: str | None
    revision: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ClarificationPolicySet(EventPayload):
    """``policy``: ``ask`` or ``assume``, what the planner does with open questions from now on."""

    KIND = EventKind.CLARIFICATION_POLICY_SET
    policy: str
    revision: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PriceSet(EventPayload):
    """``effective_date``: ISO date."""

    KIND = EventKind.PRICE_SET
    provider: str
    model: str
    revision: int
    effective_date: str
    currency: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EndpointApproved(EventPayload):
    KIND = EventKind.ENDPOINT_APPROVED
    provider: str
    base_url: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LadderRungApproved(EventPayload):
    KIND = EventKind.LADDER_RUNG_APPROVED
    task_id: TaskId
    rung: str
    by: str


# ─── the browser transport ──────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BrowserDecisionRefused(EventPayload):
    """A decision sent over the browser connection without the current card's confirmation value.

    ``decision``: "approve-plan", "decide", "accept" or "reject"; ``subject``: what it answered (a plan revision as
    ``r<N>``, a tool request id, a diff identity); ``reason``: "missing", "unknown" (not issued for this
    card, or already used) — never the value that was sent."""

    KIND = EventKind.BROWSER_DECISION_REFUSED
    task_id: TaskId
    decision: str
    subject: str
    reason: str


# ─── the system session ─────────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCredentialStored(EventPayload):
    KIND = EventKind.PROVIDER_CREDENTIAL_STORED
    provider: str
    rotated: bool


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCredentialDeleted(EventPayload):
    KIND = EventKind.PROVIDER_CREDENTIAL_DELETED
    provider: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LogsPurged(EventPayload):
    KIND = EventKind.LOGS_PURGED
    deleted: int
    before_us: int | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StoreDamageDetected(EventPayload):
    """Before this database was opened, its write-ahead log was found damaged at ``frame``: SQLite dropped
    ``lost_commits`` committed transactions from there on. ``copy`` is where the damaged log (with the
    database file as it was) was copied first; ``wal_sha256`` identifies that log (one event per log)."""

    KIND = EventKind.STORE_DAMAGE_DETECTED
    frame: int | None
    lost_commits: int
    copy: str
    wal_sha256: str
    detail: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InstructionFileApproved(EventPayload):
    """A person approved the instruction file ``path`` of a repository at exactly ``sha256`` (system session)."""

    KIND = EventKind.INSTRUCTION_FILE_APPROVED
    repository_id: RepositoryId
    path: str
    sha256: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InstructionFileRevoked(EventPayload):
    """A person revoked the approval of ``path`` at ``sha256``: from now on it is not sent as instructions."""

    KIND = EventKind.INSTRUCTION_FILE_REVOKED
    repository_id: RepositoryId
    path: str
    sha256: str
    by: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentNew(EventPayload):
    """A failure reported for ``repository_id`` whose fingerprint was not seen there before: a new incident.
    ``summary`` is the fingerprint's one line (normalised; never the reported text)."""

    KIND = EventKind.INCIDENT_NEW
    incident_id: IncidentId
    repository_id: RepositoryId
    fingerprint: str
    summary: str
    source: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentRecurred(EventPayload):
    """Another occurrence of a known incident; ``occurrences`` counts every report so far, this one included."""

    KIND = EventKind.INCIDENT_RECURRED
    incident_id: IncidentId
    occurrences: int
    state: str
    source: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentRegressed(EventPayload):
    """An incident fixed by ``task_id`` (an accepted task that named it) was seen again."""

    KIND = EventKind.INCIDENT_REGRESSED
    incident_id: IncidentId
    task_id: TaskId | None
    occurrences: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentDismissed(EventPayload):
    """A person dismissed an incident, with ``reason``; later occurrences are counted, the state stays."""

    KIND = EventKind.INCIDENT_DISMISSED
    incident_id: IncidentId
    from_state: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentTaskProposed(EventPayload):
    """A person asked for a task from the incident: the draft ``task_id`` was created (it starts only when a
    person approves its plan)."""

    KIND = EventKind.INCIDENT_TASK_PROPOSED
    incident_id: IncidentId
    task_id: TaskId


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IncidentFixed(EventPayload):
    """``task_id``, proposed from the incident, was accepted: the incident is fixed (until it is seen again)."""

    KIND = EventKind.INCIDENT_FIXED
    incident_id: IncidentId
    task_id: TaskId


# ─── the registry ───────────────────────────────────────────────────────────────────────────────────

_PAYLOAD_TYPES: Final[tuple[type[EventPayload], ...]] = (
    RepositoryRegistered, TaskCreated, TaskStateChanged, DirtyTreeAcknowledged,
    PlanRevisionRecorded, PlanApproved, PlanSentBack, RunAttemptOpened, StageVerdictsRecorded, RunAttemptEnded,
    AttemptSentBack, CheckpointCreated, AgentMessage,
    ToolRequested, AuthorityDecided, ToolExecutionIntended, ToolOutput, ToolExecutionFinished,
    PatchStored, AcceptConflicted, AcceptStarted, AcceptResolved, TaskAccepted, DeliveryRecorded, RecoveryAssessed,
    EffectOutcomeRecorded,
    WorktreeRemoved, WorktreeKept,
    ModelCallPlanned, ModelCallRefused, ModelCallStarted, ModelCallFinished, ModelCallReconciled,
    BudgetSet, BudgetAcknowledged, BudgetWarning, BudgetExhausted, BudgetDefaultSet, ClarificationPolicySet,
    PriceSet, EndpointApproved,
    LadderRungApproved, BrowserDecisionRefused,
    ProviderCredentialStored, ProviderCredentialDeleted, LogsPurged, StoreDamageDetected,
    InstructionFileApproved, InstructionFileRevoked,
    IncidentNew, IncidentRecurred, IncidentRegressed, IncidentDismissed, IncidentTaskProposed, IncidentFixed,
)  # fmt: skip

EVENT_TYPES: Final[Mapping[EventKind, type[EventPayload]]] = types.MappingProxyType(
    {payload_type.KIND: payload_type for payload_type in _PAYLOAD_TYPES}
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEvent:
    """A stored event this codeflux cannot read as a registered payload, kept whole for display.

    ``problem`` says why: the kind is not in this registry (written by a newer codeflux), or the payload
    does not fit its kind. It is never appended: :func:`append_event` accepts only :class:`EventPayload`.
    """

    kind: str
    payload: Mapping[str, object]
    problem: str

    def to_payload(self) -> dict[str, object]:
        """The payload as it was stored."""
        return dict(self.payload)


DecodedEvent: TypeAlias = EventPayload | UnknownEvent


def event_payload_keys(kind: EventKind) -> tuple[str, ...]:
    """Every key a ``kind`` payload may carry, in field order (conditional and older-optional ones too)."""
    return tuple(payload_key_of(item) for item in dataclasses.fields(EVENT_TYPES[kind]))  # type: ignore[arg-type]


def decode_event(kind: str, payload: object) -> DecodedEvent:
    """The registered payload stored as ``kind`` / ``payload``, or an :class:`UnknownEvent` naming why not.

    Accepts every shape earlier versions wrote (see the module docstring); never raises.
    """
    mapping: dict[str, object] = dict(payload) if isinstance(payload, Mapping) else {"value": payload}
    try:
        known = EventKind(kind)
    except ValueError:
        return UnknownEvent(kind=kind, payload=mapping, problem=f"{kind!r} is not an event kind this codeflux knows")
    if not isinstance(payload, Mapping):
        return UnknownEvent(kind=kind, payload=mapping, problem="the payload is not a JSON object")
    try:
        decoded = decode_fields(EVENT_TYPES[known], mapping)
    except (PayloadShapeError, InvalidValueError) as error:
        return UnknownEvent(kind=kind, payload=mapping, problem=f"the payload does not fit {kind}: {error}")
    if not isinstance(decoded, EventPayload):  # pragma: no cover - the registry holds only payload types
        raise TypeError(kind)
    return decoded
