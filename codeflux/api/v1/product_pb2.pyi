from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_REPOSITORY_REGISTERED: _ClassVar[EventKind]
    EVENT_KIND_TASK_CREATED: _ClassVar[EventKind]
    EVENT_KIND_TASK_STATE_CHANGED: _ClassVar[EventKind]
    EVENT_KIND_DIRTY_TREE_ACKNOWLEDGED: _ClassVar[EventKind]
    EVENT_KIND_PLAN_REVISION_RECORDED: _ClassVar[EventKind]
    EVENT_KIND_PLAN_APPROVED: _ClassVar[EventKind]
    EVENT_KIND_PLAN_SENT_BACK: _ClassVar[EventKind]
    EVENT_KIND_RUN_ATTEMPT_OPENED: _ClassVar[EventKind]
    EVENT_KIND_STAGE_VERDICTS_RECORDED: _ClassVar[EventKind]
    EVENT_KIND_RUN_ATTEMPT_ENDED: _ClassVar[EventKind]
    EVENT_KIND_CHECKPOINT_CREATED: _ClassVar[EventKind]
    EVENT_KIND_AGENT_MESSAGE: _ClassVar[EventKind]
    EVENT_KIND_TOOL_REQUESTED: _ClassVar[EventKind]
    EVENT_KIND_AUTHORITY_DECIDED: _ClassVar[EventKind]
    EVENT_KIND_TOOL_EXECUTION_INTENDED: _ClassVar[EventKind]
    EVENT_KIND_TOOL_OUTPUT: _ClassVar[EventKind]
    EVENT_KIND_TOOL_EXECUTION_FINISHED: _ClassVar[EventKind]
    EVENT_KIND_PATCH_STORED: _ClassVar[EventKind]
    EVENT_KIND_ACCEPT_CONFLICTED: _ClassVar[EventKind]
    EVENT_KIND_TASK_ACCEPTED: _ClassVar[EventKind]
    EVENT_KIND_DELIVERY_RECORDED: _ClassVar[EventKind]
    EVENT_KIND_RECOVERY_ASSESSED: _ClassVar[EventKind]
    EVENT_KIND_EFFECT_OUTCOME_RECORDED: _ClassVar[EventKind]
    EVENT_KIND_WORKTREE_REMOVED: _ClassVar[EventKind]
    EVENT_KIND_WORKTREE_KEPT: _ClassVar[EventKind]
    EVENT_KIND_MODEL_CALL_PLANNED: _ClassVar[EventKind]
    EVENT_KIND_MODEL_CALL_REFUSED: _ClassVar[EventKind]
    EVENT_KIND_MODEL_CALL_STARTED: _ClassVar[EventKind]
    EVENT_KIND_MODEL_CALL_FINISHED: _ClassVar[EventKind]
    EVENT_KIND_MODEL_CALL_RECONCILED: _ClassVar[EventKind]
    EVENT_KIND_BUDGET_SET: _ClassVar[EventKind]
    EVENT_KIND_BUDGET_ACKNOWLEDGED: _ClassVar[EventKind]
    EVENT_KIND_BUDGET_WARNING: _ClassVar[EventKind]
    EVENT_KIND_BUDGET_EXHAUSTED: _ClassVar[EventKind]
    EVENT_KIND_BUDGET_DEFAULT_SET: _ClassVar[EventKind]
    EVENT_KIND_PRICE_SET: _ClassVar[EventKind]
    EVENT_KIND_ENDPOINT_APPROVED: _ClassVar[EventKind]
    EVENT_KIND_LADDER_RUNG_APPROVED: _ClassVar[EventKind]
    EVENT_KIND_PROVIDER_CREDENTIAL_STORED: _ClassVar[EventKind]
    EVENT_KIND_PROVIDER_CREDENTIAL_DELETED: _ClassVar[EventKind]
    EVENT_KIND_LOGS_PURGED: _ClassVar[EventKind]
    EVENT_KIND_BROWSER_DECISION_REFUSED: _ClassVar[EventKind]
    EVENT_KIND_CLARIFICATION_POLICY_SET: _ClassVar[EventKind]
    EVENT_KIND_ATTEMPT_SENT_BACK: _ClassVar[EventKind]
    EVENT_KIND_STORE_DAMAGE_DETECTED: _ClassVar[EventKind]
    EVENT_KIND_ACCEPT_STARTED: _ClassVar[EventKind]
    EVENT_KIND_ACCEPT_RESOLVED: _ClassVar[EventKind]
    EVENT_KIND_INSTRUCTION_FILE_APPROVED: _ClassVar[EventKind]
    EVENT_KIND_INSTRUCTION_FILE_REVOKED: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_NEW: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_RECURRED: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_REGRESSED: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_DISMISSED: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_TASK_PROPOSED: _ClassVar[EventKind]
    EVENT_KIND_INCIDENT_FIXED: _ClassVar[EventKind]
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_REPOSITORY_REGISTERED: EventKind
EVENT_KIND_TASK_CREATED: EventKind
EVENT_KIND_TASK_STATE_CHANGED: EventKind
EVENT_KIND_DIRTY_TREE_ACKNOWLEDGED: EventKind
EVENT_KIND_PLAN_REVISION_RECORDED: EventKind
EVENT_KIND_PLAN_APPROVED: EventKind
EVENT_KIND_PLAN_SENT_BACK: EventKind
EVENT_KIND_RUN_ATTEMPT_OPENED: EventKind
EVENT_KIND_STAGE_VERDICTS_RECORDED: EventKind
EVENT_KIND_RUN_ATTEMPT_ENDED: EventKind
EVENT_KIND_CHECKPOINT_CREATED: EventKind
EVENT_KIND_AGENT_MESSAGE: EventKind
EVENT_KIND_TOOL_REQUESTED: EventKind
EVENT_KIND_AUTHORITY_DECIDED: EventKind
EVENT_KIND_TOOL_EXECUTION_INTENDED: EventKind
EVENT_KIND_TOOL_OUTPUT: EventKind
EVENT_KIND_TOOL_EXECUTION_FINISHED: EventKind
EVENT_KIND_PATCH_STORED: EventKind
EVENT_KIND_ACCEPT_CONFLICTED: EventKind
EVENT_KIND_TASK_ACCEPTED: EventKind
EVENT_KIND_DELIVERY_RECORDED: EventKind
EVENT_KIND_RECOVERY_ASSESSED: EventKind
EVENT_KIND_EFFECT_OUTCOME_RECORDED: EventKind
EVENT_KIND_WORKTREE_REMOVED: EventKind
EVENT_KIND_WORKTREE_KEPT: EventKind
EVENT_KIND_MODEL_CALL_PLANNED: EventKind
EVENT_KIND_MODEL_CALL_REFUSED: EventKind
EVENT_KIND_MODEL_CALL_STARTED: EventKind
EVENT_KIND_MODEL_CALL_FINISHED: EventKind
EVENT_KIND_MODEL_CALL_RECONCILED: EventKind
EVENT_KIND_BUDGET_SET: EventKind
EVENT_KIND_BUDGET_ACKNOWLEDGED: EventKind
EVENT_KIND_BUDGET_WARNING: EventKind
EVENT_KIND_BUDGET_EXHAUSTED: EventKind
EVENT_KIND_BUDGET_DEFAULT_SET: EventKind
EVENT_KIND_PRICE_SET: EventKind
EVENT_KIND_ENDPOINT_APPROVED: EventKind
EVENT_KIND_LADDER_RUNG_APPROVED: EventKind
EVENT_KIND_PROVIDER_CREDENTIAL_STORED: EventKind
EVENT_KIND_PROVIDER_CREDENTIAL_DELETED: EventKind
EVENT_KIND_LOGS_PURGED: EventKind
EVENT_KIND_BROWSER_DECISION_REFUSED: EventKind
EVENT_KIND_CLARIFICATION_POLICY_SET: EventKind
EVENT_KIND_ATTEMPT_SENT_BACK: EventKind
EVENT_KIND_STORE_DAMAGE_DETECTED: EventKind
EVENT_KIND_ACCEPT_STARTED: EventKind
EVENT_KIND_ACCEPT_RESOLVED: EventKind
EVENT_KIND_INSTRUCTION_FILE_APPROVED: EventKind
EVENT_KIND_INSTRUCTION_FILE_REVOKED: EventKind
EVENT_KIND_INCIDENT_NEW: EventKind
EVENT_KIND_INCIDENT_RECURRED: EventKind
EVENT_KIND_INCIDENT_REGRESSED: EventKind
EVENT_KIND_INCIDENT_DISMISSED: EventKind
EVENT_KIND_INCIDENT_TASK_PROPOSED: EventKind
EVENT_KIND_INCIDENT_FIXED: EventKind

class GetOverviewRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProviderStatus(_message.Message):
    __slots__ = ("name", "credential_stored", "reference_recorded", "detail", "key_source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_STORED_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_RECORDED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    KEY_SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    credential_stored: bool
    reference_recorded: bool
    detail: str
    key_source: str
    def __init__(self, name: _Optional[str] = ..., credential_stored: _Optional[bool] = ..., reference_recorded: _Optional[bool] = ..., detail: _Optional[str] = ..., key_source: _Optional[str] = ...) -> None: ...

class Overview(_message.Message):
    __slots__ = ("version", "provider_label", "scripted", "providers", "repositories", "data_directory_name", "system_session_id", "first_run")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_LABEL_FIELD_NUMBER: _ClassVar[int]
    SCRIPTED_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    REPOSITORIES_FIELD_NUMBER: _ClassVar[int]
    DATA_DIRECTORY_NAME_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_RUN_FIELD_NUMBER: _ClassVar[int]
    version: str
    provider_label: str
    scripted: bool
    providers: _containers.RepeatedCompositeFieldContainer[ProviderStatus]
    repositories: _containers.RepeatedCompositeFieldContainer[RepositoryView]
    data_directory_name: str
    system_session_id: str
    first_run: bool
    def __init__(self, version: _Optional[str] = ..., provider_label: _Optional[str] = ..., scripted: _Optional[bool] = ..., providers: _Optional[_Iterable[_Union[ProviderStatus, _Mapping]]] = ..., repositories: _Optional[_Iterable[_Union[RepositoryView, _Mapping]]] = ..., data_directory_name: _Optional[str] = ..., system_session_id: _Optional[str] = ..., first_run: _Optional[bool] = ...) -> None: ...

class InspectRepositoryRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class ChangedPath(_message.Message):
    __slots__ = ("path", "status", "content_sha256")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    path: str
    status: str
    content_sha256: str
    def __init__(self, path: _Optional[str] = ..., status: _Optional[str] = ..., content_sha256: _Optional[str] = ...) -> None: ...

class RepositoryView(_message.Message):
    __slots__ = ("root", "head", "branch", "detached", "operations_in_progress", "changes", "dirty_hash", "dirty", "repository_id", "suggested_requirement")
    ROOT_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    DIRTY_HASH_FIELD_NUMBER: _ClassVar[int]
    DIRTY_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ID_FIELD_NUMBER: _ClassVar[int]
    SUGGESTED_REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    root: str
    head: str
    branch: str
    detached: bool
    operations_in_progress: _containers.RepeatedScalarFieldContainer[str]
    changes: _containers.RepeatedCompositeFieldContainer[ChangedPath]
    dirty_hash: str
    dirty: bool
    repository_id: str
    suggested_requirement: str
    def __init__(self, root: _Optional[str] = ..., head: _Optional[str] = ..., branch: _Optional[str] = ..., detached: _Optional[bool] = ..., operations_in_progress: _Optional[_Iterable[str]] = ..., changes: _Optional[_Iterable[_Union[ChangedPath, _Mapping]]] = ..., dirty_hash: _Optional[str] = ..., dirty: _Optional[bool] = ..., repository_id: _Optional[str] = ..., suggested_requirement: _Optional[str] = ...) -> None: ...

class CreateDemoRepositoryRequest(_message.Message):
    __slots__ = ("control",)
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ...) -> None: ...

class GetTaskGraphRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class GraphNode(_message.Message):
    __slots__ = ("id", "kind", "sequence", "label", "summary", "sequences")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    sequence: int
    label: str
    summary: str
    sequences: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., sequence: _Optional[int] = ..., label: _Optional[str] = ..., summary: _Optional[str] = ..., sequences: _Optional[_Iterable[int]] = ...) -> None: ...

class GraphEdge(_message.Message):
    __slots__ = ("source", "target", "kind")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    source: str
    target: str
    kind: str
    def __init__(self, source: _Optional[str] = ..., target: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class GraphNotShown(_message.Message):
    __slots__ = ("kind", "count", "reason")
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    count: int
    reason: str
    def __init__(self, kind: _Optional[str] = ..., count: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class TaskGraph(_message.Message):
    __slots__ = ("task_id", "through_sequence", "disclaimer", "nodes", "edges", "not_shown")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THROUGH_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    DISCLAIMER_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    NOT_SHOWN_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    through_sequence: int
    disclaimer: str
    nodes: _containers.RepeatedCompositeFieldContainer[GraphNode]
    edges: _containers.RepeatedCompositeFieldContainer[GraphEdge]
    not_shown: _containers.RepeatedCompositeFieldContainer[GraphNotShown]
    def __init__(self, task_id: _Optional[str] = ..., through_sequence: _Optional[int] = ..., disclaimer: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[GraphNode, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[GraphEdge, _Mapping]]] = ..., not_shown: _Optional[_Iterable[_Union[GraphNotShown, _Mapping]]] = ...) -> None: ...

class GetToolActivityRequest(_message.Message):
    __slots__ = ("task_id", "request_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    request_id: str
    def __init__(self, task_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ToolActivityView(_message.Message):
    __slots__ = ("request_id", "tool", "arguments", "capabilities", "operation_identity", "decision", "decision_reason", "state", "exit_code_known", "exit_code", "stdout", "stdout_truncated", "stderr", "stderr_truncated", "content", "content_truncated", "message", "failure_kind", "duration_known", "duration_ms", "confinement", "confinement_meaning")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    OPERATION_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_KNOWN_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_KIND_FIELD_NUMBER: _ClassVar[int]
    DURATION_KNOWN_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CONFINEMENT_FIELD_NUMBER: _ClassVar[int]
    CONFINEMENT_MEANING_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tool: str
    arguments: _containers.RepeatedCompositeFieldContainer[Argument]
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    operation_identity: str
    decision: str
    decision_reason: str
    state: str
    exit_code_known: bool
    exit_code: int
    stdout: str
    stdout_truncated: bool
    stderr: str
    stderr_truncated: bool
    content: str
    content_truncated: bool
    message: str
    failure_kind: str
    duration_known: bool
    duration_ms: int
    confinement: str
    confinement_meaning: str
    def __init__(self, request_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[Argument, _Mapping]]] = ..., capabilities: _Optional[_Iterable[str]] = ..., operation_identity: _Optional[str] = ..., decision: _Optional[str] = ..., decision_reason: _Optional[str] = ..., state: _Optional[str] = ..., exit_code_known: _Optional[bool] = ..., exit_code: _Optional[int] = ..., stdout: _Optional[str] = ..., stdout_truncated: _Optional[bool] = ..., stderr: _Optional[str] = ..., stderr_truncated: _Optional[bool] = ..., content: _Optional[str] = ..., content_truncated: _Optional[bool] = ..., message: _Optional[str] = ..., failure_kind: _Optional[str] = ..., duration_known: _Optional[bool] = ..., duration_ms: _Optional[int] = ..., confinement: _Optional[str] = ..., confinement_meaning: _Optional[str] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("limit", "before", "query")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    limit: int
    before: str
    query: str
    def __init__(self, limit: _Optional[int] = ..., before: _Optional[str] = ..., query: _Optional[str] = ...) -> None: ...

class TaskSummary(_message.Message):
    __slots__ = ("task_id", "title", "state", "revision", "repository_root", "session_id", "needs_attention", "created_at_us")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NEEDS_ATTENTION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    title: str
    state: str
    revision: int
    repository_root: str
    session_id: str
    needs_attention: bool
    created_at_us: int
    def __init__(self, task_id: _Optional[str] = ..., title: _Optional[str] = ..., state: _Optional[str] = ..., revision: _Optional[int] = ..., repository_root: _Optional[str] = ..., session_id: _Optional[str] = ..., needs_attention: _Optional[bool] = ..., created_at_us: _Optional[int] = ...) -> None: ...

class ListTasksReply(_message.Message):
    __slots__ = ("tasks", "has_more", "next_before")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    NEXT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskSummary]
    has_more: bool
    next_before: str
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskSummary, _Mapping]]] = ..., has_more: _Optional[bool] = ..., next_before: _Optional[str] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class TaskActionView(_message.Message):
    __slots__ = ("action", "available", "reason")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    action: str
    available: bool
    reason: str
    def __init__(self, action: _Optional[str] = ..., available: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class PlanStepView(_message.Message):
    __slots__ = ("title", "detail", "expected_files", "serves_examples", "covers_sentences", "atoms")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FILES_FIELD_NUMBER: _ClassVar[int]
    SERVES_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    COVERS_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    ATOMS_FIELD_NUMBER: _ClassVar[int]
    title: str
    detail: str
    expected_files: _containers.RepeatedScalarFieldContainer[str]
    serves_examples: _containers.RepeatedScalarFieldContainer[int]
    covers_sentences: _containers.RepeatedScalarFieldContainer[int]
    atoms: _containers.RepeatedCompositeFieldContainer[PlanAtomView]
    def __init__(self, title: _Optional[str] = ..., detail: _Optional[str] = ..., expected_files: _Optional[_Iterable[str]] = ..., serves_examples: _Optional[_Iterable[int]] = ..., covers_sentences: _Optional[_Iterable[int]] = ..., atoms: _Optional[_Iterable[_Union[PlanAtomView, _Mapping]]] = ...) -> None: ...

class PlanAtomView(_message.Message):
    __slots__ = ("name", "signature", "effects")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    EFFECTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    signature: str
    effects: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., signature: _Optional[str] = ..., effects: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanQuestionView(_message.Message):
    __slots__ = ("number", "question", "origin", "status", "answer", "assumption")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTION_FIELD_NUMBER: _ClassVar[int]
    number: int
    question: str
    origin: str
    status: str
    answer: str
    assumption: str
    def __init__(self, number: _Optional[int] = ..., question: _Optional[str] = ..., origin: _Optional[str] = ..., status: _Optional[str] = ..., answer: _Optional[str] = ..., assumption: _Optional[str] = ...) -> None: ...

class PlanCheckView(_message.Message):
    __slots__ = ("name", "argv")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    name: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanPermissionView(_message.Message):
    __slots__ = ("capability", "resource", "reason")
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    capability: str
    resource: str
    reason: str
    def __init__(self, capability: _Optional[str] = ..., resource: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CountRange(_message.Message):
    __slots__ = ("low", "high")
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    low: int
    high: int
    def __init__(self, low: _Optional[int] = ..., high: _Optional[int] = ...) -> None: ...

class ForecastView(_message.Message):
    __slots__ = ("label", "heuristic", "wall_seconds", "tokens", "cost", "uncertainty")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_FIELD_NUMBER: _ClassVar[int]
    WALL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    UNCERTAINTY_FIELD_NUMBER: _ClassVar[int]
    label: str
    heuristic: str
    wall_seconds: CountRange
    tokens: CountRange
    cost: _common_pb2.MoneyRange
    uncertainty: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, label: _Optional[str] = ..., heuristic: _Optional[str] = ..., wall_seconds: _Optional[_Union[CountRange, _Mapping]] = ..., tokens: _Optional[_Union[CountRange, _Mapping]] = ..., cost: _Optional[_Union[_common_pb2.MoneyRange, _Mapping]] = ..., uncertainty: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanView(_message.Message):
    __slots__ = ("revision", "sha256", "task_class", "scope_summary", "scope_paths", "scope_excluded", "steps", "checks", "permissions", "assumptions", "forecast", "decision", "feedback", "author_label", "confirmation", "examples", "examples_source", "traced", "sentences", "uncovered_examples", "uncovered_sentences", "questions", "clarification_policy", "plan_examples", "examples_editable", "examples_edit_note", "planning")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    TASK_CLASS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_PATHS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTIONS_FIELD_NUMBER: _ClassVar[int]
    FORECAST_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_LABEL_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRACED_FIELD_NUMBER: _ClassVar[int]
    SENTENCES_FIELD_NUMBER: _ClassVar[int]
    UNCOVERED_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    UNCOVERED_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    CLARIFICATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    PLAN_EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_EDITABLE_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_EDIT_NOTE_FIELD_NUMBER: _ClassVar[int]
    PLANNING_FIELD_NUMBER: _ClassVar[int]
    revision: int
    sha256: str
    task_class: str
    scope_summary: str
    scope_paths: _containers.RepeatedScalarFieldContainer[str]
    scope_excluded: _containers.RepeatedScalarFieldContainer[str]
    steps: _containers.RepeatedCompositeFieldContainer[PlanStepView]
    checks: _containers.RepeatedCompositeFieldContainer[PlanCheckView]
    permissions: _containers.RepeatedCompositeFieldContainer[PlanPermissionView]
    assumptions: _containers.RepeatedScalarFieldContainer[str]
    forecast: ForecastView
    decision: str
    feedback: str
    author_label: str
    confirmation: str
    examples: _containers.RepeatedScalarFieldContainer[str]
    examples_source: str
    traced: bool
    sentences: _containers.RepeatedScalarFieldContainer[str]
    uncovered_examples: _containers.RepeatedScalarFieldContainer[int]
    uncovered_sentences: _containers.RepeatedScalarFieldContainer[int]
    questions: _containers.RepeatedCompositeFieldContainer[PlanQuestionView]
    clarification_policy: str
    plan_examples: _containers.RepeatedCompositeFieldContainer[PlanExampleView]
    examples_editable: bool
    examples_edit_note: str
    planning: PlanningSpendView
    def __init__(self, revision: _Optional[int] = ..., sha256: _Optional[str] = ..., task_class: _Optional[str] = ..., scope_summary: _Optional[str] = ..., scope_paths: _Optional[_Iterable[str]] = ..., scope_excluded: _Optional[_Iterable[str]] = ..., steps: _Optional[_Iterable[_Union[PlanStepView, _Mapping]]] = ..., checks: _Optional[_Iterable[_Union[PlanCheckView, _Mapping]]] = ..., permissions: _Optional[_Iterable[_Union[PlanPermissionView, _Mapping]]] = ..., assumptions: _Optional[_Iterable[str]] = ..., forecast: _Optional[_Union[ForecastView, _Mapping]] = ..., decision: _Optional[str] = ..., feedback: _Optional[str] = ..., author_label: _Optional[str] = ..., confirmation: _Optional[str] = ..., examples: _Optional[_Iterable[str]] = ..., examples_source: _Optional[str] = ..., traced: _Optional[bool] = ..., sentences: _Optional[_Iterable[str]] = ..., uncovered_examples: _Optional[_Iterable[int]] = ..., uncovered_sentences: _Optional[_Iterable[int]] = ..., questions: _Optional[_Iterable[_Union[PlanQuestionView, _Mapping]]] = ..., clarification_policy: _Optional[str] = ..., plan_examples: _Optional[_Iterable[_Union[PlanExampleView, _Mapping]]] = ..., examples_editable: _Optional[bool] = ..., examples_edit_note: _Optional[str] = ..., planning: _Optional[_Union[PlanningSpendView, _Mapping]] = ...) -> None: ...

class PlanningSpendView(_message.Message):
    __slots__ = ("model_calls", "tool_calls", "cost")
    MODEL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    model_calls: int
    tool_calls: int
    cost: _common_pb2.MaybeMoney
    def __init__(self, model_calls: _Optional[int] = ..., tool_calls: _Optional[int] = ..., cost: _Optional[_Union[_common_pb2.MaybeMoney, _Mapping]] = ...) -> None: ...

class PlanExampleView(_message.Message):
    __slots__ = ("number", "test", "argv", "expected", "steps", "origin", "text")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    TEST_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    number: int
    test: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    expected: _containers.RepeatedScalarFieldContainer[str]
    steps: _containers.RepeatedScalarFieldContainer[int]
    origin: str
    text: str
    def __init__(self, number: _Optional[int] = ..., test: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., expected: _Optional[_Iterable[str]] = ..., steps: _Optional[_Iterable[int]] = ..., origin: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class BudgetView(_message.Message):
    __slots__ = ("set", "revision", "hard_limit", "warning", "spent", "reserved", "remaining", "tokens_used", "tokens_reserved", "token_limit", "token_limit_set", "pending_decisions", "exhausted", "lines", "spend_line", "prices")
    SET_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    HARD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    SPENT_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    TOKENS_USED_FIELD_NUMBER: _ClassVar[int]
    TOKENS_RESERVED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LIMIT_SET_FIELD_NUMBER: _ClassVar[int]
    PENDING_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    EXHAUSTED_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    SPEND_LINE_FIELD_NUMBER: _ClassVar[int]
    PRICES_FIELD_NUMBER: _ClassVar[int]
    set: bool
    revision: int
    hard_limit: _common_pb2.Money
    warning: _common_pb2.Money
    spent: _common_pb2.MaybeMoney
    reserved: _common_pb2.MaybeMoney
    remaining: _common_pb2.MaybeMoney
    tokens_used: int
    tokens_reserved: int
    token_limit: int
    token_limit_set: bool
    pending_decisions: _containers.RepeatedScalarFieldContainer[int]
    exhausted: bool
    lines: _containers.RepeatedScalarFieldContainer[str]
    spend_line: str
    prices: _containers.RepeatedCompositeFieldContainer[PriceUseView]
    def __init__(self, set: _Optional[bool] = ..., revision: _Optional[int] = ..., hard_limit: _Optional[_Union[_common_pb2.Money, _Mapping]] = ..., warning: _Optional[_Union[_common_pb2.Money, _Mapping]] = ..., spent: _Optional[_Union[_common_pb2.MaybeMoney, _Mapping]] = ..., reserved: _Optional[_Union[_common_pb2.MaybeMoney, _Mapping]] = ..., remaining: _Optional[_Union[_common_pb2.MaybeMoney, _Mapping]] = ..., tokens_used: _Optional[int] = ..., tokens_reserved: _Optional[int] = ..., token_limit: _Optional[int] = ..., token_limit_set: _Optional[bool] = ..., pending_decisions: _Optional[_Iterable[int]] = ..., exhausted: _Optional[bool] = ..., lines: _Optional[_Iterable[str]] = ..., spend_line: _Optional[str] = ..., prices: _Optional[_Iterable[_Union[PriceUseView, _Mapping]]] = ...) -> None: ...

class PriceUseView(_message.Message):
    __slots__ = ("priced", "snapshot_id", "provider", "model", "revision", "source", "source_detail", "effective_date", "recorded_at", "request_ids", "line")
    PRICED_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_DETAIL_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_DATE_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_IDS_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    priced: bool
    snapshot_id: int
    provider: str
    model: str
    revision: int
    source: str
    source_detail: str
    effective_date: str
    recorded_at: str
    request_ids: _containers.RepeatedScalarFieldContainer[str]
    line: str
    def __init__(self, priced: _Optional[bool] = ..., snapshot_id: _Optional[int] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., revision: _Optional[int] = ..., source: _Optional[str] = ..., source_detail: _Optional[str] = ..., effective_date: _Optional[str] = ..., recorded_at: _Optional[str] = ..., request_ids: _Optional[_Iterable[str]] = ..., line: _Optional[str] = ...) -> None: ...

class PendingApproval(_message.Message):
    __slots__ = ("request_id", "tool", "arguments", "capabilities", "scope", "operation_identity", "reason", "cwd", "meaning", "allow_for_task_refusal", "confirmation", "allowed_before", "allow_for_repository_refusal", "repository_identity", "deny_blocks", "deny_meaning", "allowed_before_refused")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    MEANING_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FOR_TASK_REFUSAL_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FOR_REPOSITORY_REFUSAL_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    DENY_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    DENY_MEANING_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_BEFORE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tool: str
    arguments: _containers.RepeatedCompositeFieldContainer[Argument]
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    scope: str
    operation_identity: str
    reason: str
    cwd: str
    meaning: str
    allow_for_task_refusal: str
    confirmation: str
    allowed_before: _containers.RepeatedCompositeFieldContainer[EarlierAllowanceView]
    allow_for_repository_refusal: str
    repository_identity: str
    deny_blocks: _containers.RepeatedScalarFieldContainer[str]
    deny_meaning: str
    allowed_before_refused: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[Argument, _Mapping]]] = ..., capabilities: _Optional[_Iterable[str]] = ..., scope: _Optional[str] = ..., operation_identity: _Optional[str] = ..., reason: _Optional[str] = ..., cwd: _Optional[str] = ..., meaning: _Optional[str] = ..., allow_for_task_refusal: _Optional[str] = ..., confirmation: _Optional[str] = ..., allowed_before: _Optional[_Iterable[_Union[EarlierAllowanceView, _Mapping]]] = ..., allow_for_repository_refusal: _Optional[str] = ..., repository_identity: _Optional[str] = ..., deny_blocks: _Optional[_Iterable[str]] = ..., deny_meaning: _Optional[str] = ..., allowed_before_refused: _Optional[_Iterable[str]] = ...) -> None: ...

class EarlierAllowanceView(_message.Message):
    __slots__ = ("task_id", "request_id", "decision_id", "outcome", "decided_at")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    request_id: str
    decision_id: str
    outcome: str
    decided_at: str
    def __init__(self, task_id: _Optional[str] = ..., request_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., outcome: _Optional[str] = ..., decided_at: _Optional[str] = ...) -> None: ...

class Argument(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class AttemptView(_message.Message):
    __slots__ = ("attempt", "plan_revision", "open", "stopped_at")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    PLAN_REVISION_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    STOPPED_AT_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    plan_revision: int
    open: bool
    stopped_at: str
    def __init__(self, attempt: _Optional[int] = ..., plan_revision: _Optional[int] = ..., open: _Optional[bool] = ..., stopped_at: _Optional[str] = ...) -> None: ...

class TaskView(_message.Message):
    __slots__ = ("task_id", "title", "requirement", "state", "revision", "repository_root", "base_revision", "worktree", "session_id", "actions", "plan", "budget", "pending_approvals", "attempt", "run_active", "provider_label", "through_sequence", "last_outcome", "worktree_exists", "worktree_disposal", "cancel_outcome", "provider_basis", "provider_source", "provider_reason", "endpoint_approval")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    BASE_REVISION_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    PENDING_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RUN_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_LABEL_FIELD_NUMBER: _ClassVar[int]
    THROUGH_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LAST_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_EXISTS_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_DISPOSAL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_BASIS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_SOURCE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_REASON_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    title: str
    requirement: str
    state: str
    revision: int
    repository_root: str
    base_revision: str
    worktree: str
    session_id: str
    actions: _containers.RepeatedCompositeFieldContainer[TaskActionView]
    plan: PlanView
    budget: BudgetView
    pending_approvals: _containers.RepeatedCompositeFieldContainer[PendingApproval]
    attempt: AttemptView
    run_active: bool
    provider_label: str
    through_sequence: int
    last_outcome: str
    worktree_exists: bool
    worktree_disposal: WorktreeDisposalView
    cancel_outcome: CancelOutcomeView
    provider_basis: str
    provider_source: str
    provider_reason: str
    endpoint_approval: EndpointApprovalCard
    def __init__(self, task_id: _Optional[str] = ..., title: _Optional[str] = ..., requirement: _Optional[str] = ..., state: _Optional[str] = ..., revision: _Optional[int] = ..., repository_root: _Optional[str] = ..., base_revision: _Optional[str] = ..., worktree: _Optional[str] = ..., session_id: _Optional[str] = ..., actions: _Optional[_Iterable[_Union[TaskActionView, _Mapping]]] = ..., plan: _Optional[_Union[PlanView, _Mapping]] = ..., budget: _Optional[_Union[BudgetView, _Mapping]] = ..., pending_approvals: _Optional[_Iterable[_Union[PendingApproval, _Mapping]]] = ..., attempt: _Optional[_Union[AttemptView, _Mapping]] = ..., run_active: _Optional[bool] = ..., provider_label: _Optional[str] = ..., through_sequence: _Optional[int] = ..., last_outcome: _Optional[str] = ..., worktree_exists: _Optional[bool] = ..., worktree_disposal: _Optional[_Union[WorktreeDisposalView, _Mapping]] = ..., cancel_outcome: _Optional[_Union[CancelOutcomeView, _Mapping]] = ..., provider_basis: _Optional[str] = ..., provider_source: _Optional[str] = ..., provider_reason: _Optional[str] = ..., endpoint_approval: _Optional[_Union[EndpointApprovalCard, _Mapping]] = ...) -> None: ...

class CancelOutcomeView(_message.Message):
    __slots__ = ("running_command", "worktree", "detail", "command_state", "summary", "by_the_run")
    RUNNING_COMMAND_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_STATE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    BY_THE_RUN_FIELD_NUMBER: _ClassVar[int]
    running_command: str
    worktree: str
    detail: str
    command_state: str
    summary: str
    by_the_run: bool
    def __init__(self, running_command: _Optional[str] = ..., worktree: _Optional[str] = ..., detail: _Optional[str] = ..., command_state: _Optional[str] = ..., summary: _Optional[str] = ..., by_the_run: _Optional[bool] = ...) -> None: ...

class WorktreeDisposalView(_message.Message):
    __slots__ = ("removed", "branch_deleted", "checkpoint_refs_deleted", "refusal", "detail")
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    BRANCH_DELETED_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_DELETED_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    branch_deleted: bool
    checkpoint_refs_deleted: int
    refusal: str
    detail: str
    def __init__(self, removed: _Optional[bool] = ..., branch_deleted: _Optional[bool] = ..., checkpoint_refs_deleted: _Optional[int] = ..., refusal: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class CreateTaskRequest(_message.Message):
    __slots__ = ("control", "repository_path", "requirement", "title", "acknowledged_dirty_hash")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_DIRTY_HASH_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    repository_path: str
    requirement: str
    title: str
    acknowledged_dirty_hash: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., repository_path: _Optional[str] = ..., requirement: _Optional[str] = ..., title: _Optional[str] = ..., acknowledged_dirty_hash: _Optional[str] = ...) -> None: ...

class DraftPlanRequest(_message.Message):
    __slots__ = ("control", "task_id")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ...) -> None: ...

class ApprovePlanRequest(_message.Message):
    __slots__ = ("control", "task_id", "revision", "sha256", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    revision: int
    sha256: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., revision: _Optional[int] = ..., sha256: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class SendBackPlanRequest(_message.Message):
    __slots__ = ("control", "task_id", "revision", "sha256", "feedback")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    revision: int
    sha256: str
    feedback: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., revision: _Optional[int] = ..., sha256: _Optional[str] = ..., feedback: _Optional[str] = ...) -> None: ...

class AnswerQuestionRequest(_message.Message):
    __slots__ = ("control", "task_id", "revision", "sha256", "question", "text")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    revision: int
    sha256: str
    question: int
    text: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., revision: _Optional[int] = ..., sha256: _Optional[str] = ..., question: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class PlanExampleEdit(_message.Message):
    __slots__ = ("number", "test", "argv", "expected", "steps")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    TEST_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    number: int
    test: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    expected: _containers.RepeatedScalarFieldContainer[str]
    steps: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, number: _Optional[int] = ..., test: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., expected: _Optional[_Iterable[str]] = ..., steps: _Optional[_Iterable[int]] = ...) -> None: ...

class EditPlanExamplesRequest(_message.Message):
    __slots__ = ("control", "task_id", "revision", "sha256", "examples")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    revision: int
    sha256: str
    examples: _containers.RepeatedCompositeFieldContainer[PlanExampleEdit]
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., revision: _Optional[int] = ..., sha256: _Optional[str] = ..., examples: _Optional[_Iterable[_Union[PlanExampleEdit, _Mapping]]] = ...) -> None: ...

class RetryTaskRequest(_message.Message):
    __slots__ = ("control", "task_id", "feedback")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    feedback: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., feedback: _Optional[str] = ...) -> None: ...

class StartTaskRequest(_message.Message):
    __slots__ = ("control", "task_id", "plan_revision")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PLAN_REVISION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    plan_revision: int
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., plan_revision: _Optional[int] = ...) -> None: ...

class TaskActionRequest(_message.Message):
    __slots__ = ("control", "task_id", "reason")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    reason: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SetBudgetRequest(_message.Message):
    __slots__ = ("control", "task_id", "choice", "hard_limit", "currency")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    HARD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    choice: str
    hard_limit: str
    currency: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., choice: _Optional[str] = ..., hard_limit: _Optional[str] = ..., currency: _Optional[str] = ...) -> None: ...

class GetTimelineRequest(_message.Message):
    __slots__ = ("task_id", "after_sequence", "limit")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    after_sequence: int
    limit: int
    def __init__(self, task_id: _Optional[str] = ..., after_sequence: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class Timeline(_message.Message):
    __slots__ = ("events", "has_more")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[SessionEvent]
    has_more: bool
    def __init__(self, events: _Optional[_Iterable[_Union[SessionEvent, _Mapping]]] = ..., has_more: _Optional[bool] = ...) -> None: ...

class ListRepositoryApprovalsRequest(_message.Message):
    __slots__ = ("repository_path", "include_revoked")
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    repository_path: str
    include_revoked: bool
    def __init__(self, repository_path: _Optional[str] = ..., include_revoked: _Optional[bool] = ...) -> None: ...

class ListRepositoryApprovalsReply(_message.Message):
    __slots__ = ("approvals",)
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[RepositoryApprovalView]
    def __init__(self, approvals: _Optional[_Iterable[_Union[RepositoryApprovalView, _Mapping]]] = ...) -> None: ...

class RevokeRepositoryApprovalRequest(_message.Message):
    __slots__ = ("control", "approval_id", "reason")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    approval_id: str
    reason: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., approval_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RevokeRepositoryApprovalReply(_message.Message):
    __slots__ = ("approval",)
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    approval: RepositoryApprovalView
    def __init__(self, approval: _Optional[_Union[RepositoryApprovalView, _Mapping]] = ...) -> None: ...

class RepositoryApprovalView(_message.Message):
    __slots__ = ("approval_id", "repository_root", "root_commits", "repository_identity", "tool", "arguments", "cwd", "task_id", "decision_id", "reason", "created_at", "revoked", "revoked_at", "revocation_reason", "program")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    ROOT_COMMITS_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOCATION_REASON_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    repository_root: str
    root_commits: _containers.RepeatedScalarFieldContainer[str]
    repository_identity: str
    tool: str
    arguments: _containers.RepeatedCompositeFieldContainer[Argument]
    cwd: str
    task_id: str
    decision_id: str
    reason: str
    created_at: str
    revoked: bool
    revoked_at: str
    revocation_reason: str
    program: str
    def __init__(self, approval_id: _Optional[str] = ..., repository_root: _Optional[str] = ..., root_commits: _Optional[_Iterable[str]] = ..., repository_identity: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[Argument, _Mapping]]] = ..., cwd: _Optional[str] = ..., task_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., reason: _Optional[str] = ..., created_at: _Optional[str] = ..., revoked: _Optional[bool] = ..., revoked_at: _Optional[str] = ..., revocation_reason: _Optional[str] = ..., program: _Optional[str] = ...) -> None: ...

class ListPendingRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class ListPendingReply(_message.Message):
    __slots__ = ("pending", "denials")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    DENIALS_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.RepeatedCompositeFieldContainer[PendingApproval]
    denials: _containers.RepeatedCompositeFieldContainer[DenialView]
    def __init__(self, pending: _Optional[_Iterable[_Union[PendingApproval, _Mapping]]] = ..., denials: _Optional[_Iterable[_Union[DenialView, _Mapping]]] = ...) -> None: ...

class DenialView(_message.Message):
    __slots__ = ("capability", "resource", "reason")
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    capability: str
    resource: str
    reason: str
    def __init__(self, capability: _Optional[str] = ..., resource: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DecideRequest(_message.Message):
    __slots__ = ("control", "task_id", "request_id", "decision", "reason", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    request_id: str
    decision: str
    reason: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., request_id: _Optional[str] = ..., decision: _Optional[str] = ..., reason: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class DecideReply(_message.Message):
    __slots__ = ("request_id", "outcome", "task")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    outcome: str
    task: TaskView
    def __init__(self, request_id: _Optional[str] = ..., outcome: _Optional[str] = ..., task: _Optional[_Union[TaskView, _Mapping]] = ...) -> None: ...

class GetEvidenceRequest(_message.Message):
    __slots__ = ("task_id", "attempt")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class AtomFactView(_message.Message):
    __slots__ = ("name", "value_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    value_json: str
    def __init__(self, name: _Optional[str] = ..., value_json: _Optional[str] = ...) -> None: ...

class AtomStageEvidenceView(_message.Message):
    __slots__ = ("number", "stage", "measures", "outcome", "measured", "not_measured", "summary", "findings", "facts")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    MEASURES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    NOT_MEASURED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    number: int
    stage: str
    measures: str
    outcome: str
    measured: bool
    not_measured: str
    summary: str
    findings: _containers.RepeatedScalarFieldContainer[str]
    facts: _containers.RepeatedCompositeFieldContainer[AtomFactView]
    def __init__(self, number: _Optional[int] = ..., stage: _Optional[str] = ..., measures: _Optional[str] = ..., outcome: _Optional[str] = ..., measured: _Optional[bool] = ..., not_measured: _Optional[str] = ..., summary: _Optional[str] = ..., findings: _Optional[_Iterable[str]] = ..., facts: _Optional[_Iterable[_Union[AtomFactView, _Mapping]]] = ...) -> None: ...

class AtomEvidenceView(_message.Message):
    __slots__ = ("qualified_name", "path", "first_line", "last_line", "change", "stages")
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FIRST_LINE_FIELD_NUMBER: _ClassVar[int]
    LAST_LINE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    qualified_name: str
    path: str
    first_line: int
    last_line: int
    change: str
    stages: _containers.RepeatedCompositeFieldContainer[AtomStageEvidenceView]
    def __init__(self, qualified_name: _Optional[str] = ..., path: _Optional[str] = ..., first_line: _Optional[int] = ..., last_line: _Optional[int] = ..., change: _Optional[str] = ..., stages: _Optional[_Iterable[_Union[AtomStageEvidenceView, _Mapping]]] = ...) -> None: ...

class EvidenceView(_message.Message):
    __slots__ = ("task_id", "attempt", "diff_identity", "source", "atoms", "atom_count", "stages", "files_not_examined")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ATOMS_FIELD_NUMBER: _ClassVar[int]
    ATOM_COUNT_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    FILES_NOT_EXAMINED_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    diff_identity: str
    source: str
    atoms: _containers.RepeatedCompositeFieldContainer[AtomEvidenceView]
    atom_count: int
    stages: _containers.RepeatedCompositeFieldContainer[StageView]
    files_not_examined: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., diff_identity: _Optional[str] = ..., source: _Optional[str] = ..., atoms: _Optional[_Iterable[_Union[AtomEvidenceView, _Mapping]]] = ..., atom_count: _Optional[int] = ..., stages: _Optional[_Iterable[_Union[StageView, _Mapping]]] = ..., files_not_examined: _Optional[_Iterable[str]] = ...) -> None: ...

class GetDiffRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class DiffBytes(_message.Message):
    __slots__ = ("diff_identity", "base", "head", "file_count", "unified_diff", "truncated", "whole_bytes", "limit_bytes", "changes_what_runs", "evidence_diff_identity")
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_DIFF_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHANGES_WHAT_RUNS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    diff_identity: str
    base: str
    head: str
    file_count: int
    unified_diff: bytes
    truncated: bool
    whole_bytes: int
    limit_bytes: int
    changes_what_runs: _containers.RepeatedCompositeFieldContainer[WhatRunsChangeView]
    evidence_diff_identity: str
    def __init__(self, diff_identity: _Optional[str] = ..., base: _Optional[str] = ..., head: _Optional[str] = ..., file_count: _Optional[int] = ..., unified_diff: _Optional[bytes] = ..., truncated: _Optional[bool] = ..., whole_bytes: _Optional[int] = ..., limit_bytes: _Optional[int] = ..., changes_what_runs: _Optional[_Iterable[_Union[WhatRunsChangeView, _Mapping]]] = ..., evidence_diff_identity: _Optional[str] = ...) -> None: ...

class GetPatchRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class PatchView(_message.Message):
    __slots__ = ("diff_identity", "patch", "truncated", "whole_bytes")
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    WHOLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    diff_identity: str
    patch: bytes
    truncated: bool
    whole_bytes: int
    def __init__(self, diff_identity: _Optional[str] = ..., patch: _Optional[bytes] = ..., truncated: _Optional[bool] = ..., whole_bytes: _Optional[int] = ...) -> None: ...

class GetReviewRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class DiffFileView(_message.Message):
    __slots__ = ("path", "status")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    path: str
    status: str
    def __init__(self, path: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class CheckView(_message.Message):
    __slots__ = ("name", "outcome", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    outcome: str
    detail: str
    def __init__(self, name: _Optional[str] = ..., outcome: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class WhatRunsChangeView(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReviewView(_message.Message):
    __slots__ = ("task_id", "diff_identity", "base", "head", "files", "unified_diff", "diff_truncated", "checks", "evidence", "not_examined", "evidence_matches_diff", "changes_what_runs", "accept_confirmation", "budget", "reject_confirmation", "atoms", "line_notes", "accept_warnings", "diff_source")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_DIFF_FIELD_NUMBER: _ClassVar[int]
    DIFF_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    NOT_EXAMINED_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_MATCHES_DIFF_FIELD_NUMBER: _ClassVar[int]
    CHANGES_WHAT_RUNS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    REJECT_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    ATOMS_FIELD_NUMBER: _ClassVar[int]
    LINE_NOTES_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_WARNINGS_FIELD_NUMBER: _ClassVar[int]
    DIFF_SOURCE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    diff_identity: str
    base: str
    head: str
    files: _containers.RepeatedCompositeFieldContainer[DiffFileView]
    unified_diff: str
    diff_truncated: bool
    checks: _containers.RepeatedCompositeFieldContainer[CheckView]
    evidence: _containers.RepeatedScalarFieldContainer[str]
    not_examined: _containers.RepeatedScalarFieldContainer[str]
    evidence_matches_diff: bool
    changes_what_runs: _containers.RepeatedCompositeFieldContainer[WhatRunsChangeView]
    accept_confirmation: str
    budget: BudgetView
    reject_confirmation: str
    atoms: _containers.RepeatedCompositeFieldContainer[AtomEvidenceView]
    line_notes: _containers.RepeatedCompositeFieldContainer[LineNoteView]
    accept_warnings: _containers.RepeatedScalarFieldContainer[str]
    diff_source: str
    def __init__(self, task_id: _Optional[str] = ..., diff_identity: _Optional[str] = ..., base: _Optional[str] = ..., head: _Optional[str] = ..., files: _Optional[_Iterable[_Union[DiffFileView, _Mapping]]] = ..., unified_diff: _Optional[str] = ..., diff_truncated: _Optional[bool] = ..., checks: _Optional[_Iterable[_Union[CheckView, _Mapping]]] = ..., evidence: _Optional[_Iterable[str]] = ..., not_examined: _Optional[_Iterable[str]] = ..., evidence_matches_diff: _Optional[bool] = ..., changes_what_runs: _Optional[_Iterable[_Union[WhatRunsChangeView, _Mapping]]] = ..., accept_confirmation: _Optional[str] = ..., budget: _Optional[_Union[BudgetView, _Mapping]] = ..., reject_confirmation: _Optional[str] = ..., atoms: _Optional[_Iterable[_Union[AtomEvidenceView, _Mapping]]] = ..., line_notes: _Optional[_Iterable[_Union[LineNoteView, _Mapping]]] = ..., accept_warnings: _Optional[_Iterable[str]] = ..., diff_source: _Optional[str] = ...) -> None: ...

class LineNoteView(_message.Message):
    __slots__ = ("path", "line", "kind", "subject", "state", "text")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    path: str
    line: int
    kind: str
    subject: str
    state: str
    text: str
    def __init__(self, path: _Optional[str] = ..., line: _Optional[int] = ..., kind: _Optional[str] = ..., subject: _Optional[str] = ..., state: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ListStagesRequest(_message.Message):
    __slots__ = ("task_id", "attempt")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class StageView(_message.Message):
    __slots__ = ("number", "name", "phase", "outcome", "detail", "gate")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    GATE_FIELD_NUMBER: _ClassVar[int]
    number: int
    name: str
    phase: str
    outcome: str
    detail: str
    gate: str
    def __init__(self, number: _Optional[int] = ..., name: _Optional[str] = ..., phase: _Optional[str] = ..., outcome: _Optional[str] = ..., detail: _Optional[str] = ..., gate: _Optional[str] = ...) -> None: ...

class ListStagesReply(_message.Message):
    __slots__ = ("attempt", "stages")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    stages: _containers.RepeatedCompositeFieldContainer[StageView]
    def __init__(self, attempt: _Optional[int] = ..., stages: _Optional[_Iterable[_Union[StageView, _Mapping]]] = ...) -> None: ...

class AcceptChangeRequest(_message.Message):
    __slots__ = ("control", "task_id", "diff_identity", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    diff_identity: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., diff_identity: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class AcceptChangeReply(_message.Message):
    __slots__ = ("kind", "branch", "previous_head", "landed_head", "conflicting_paths", "task")
    KIND_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_HEAD_FIELD_NUMBER: _ClassVar[int]
    LANDED_HEAD_FIELD_NUMBER: _ClassVar[int]
    CONFLICTING_PATHS_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    kind: str
    branch: str
    previous_head: str
    landed_head: str
    conflicting_paths: _containers.RepeatedScalarFieldContainer[str]
    task: TaskView
    def __init__(self, kind: _Optional[str] = ..., branch: _Optional[str] = ..., previous_head: _Optional[str] = ..., landed_head: _Optional[str] = ..., conflicting_paths: _Optional[_Iterable[str]] = ..., task: _Optional[_Union[TaskView, _Mapping]] = ...) -> None: ...

class RejectChangeRequest(_message.Message):
    __slots__ = ("control", "task_id", "diff_identity", "reason", "retry", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DIFF_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    diff_identity: str
    reason: str
    retry: bool
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., diff_identity: _Optional[str] = ..., reason: _Optional[str] = ..., retry: _Optional[bool] = ..., confirmation: _Optional[str] = ...) -> None: ...

class ListRecoveryRequest(_message.Message):
    __slots__ = ("task_id", "landings_limit")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    LANDINGS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    landings_limit: int
    def __init__(self, task_id: _Optional[str] = ..., landings_limit: _Optional[int] = ...) -> None: ...

class AmbiguousEffectView(_message.Message):
    __slots__ = ("item_id", "kind", "summary", "outcome")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    kind: str
    summary: str
    outcome: str
    def __init__(self, item_id: _Optional[str] = ..., kind: _Optional[str] = ..., summary: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class RefusedAction(_message.Message):
    __slots__ = ("action", "reason")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    action: str
    reason: str
    def __init__(self, action: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RecoveryView(_message.Message):
    __slots__ = ("task_id", "title", "state", "known", "ambiguous", "recommended", "why", "allowed", "refused", "revision")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    AMBIGUOUS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    title: str
    state: str
    known: _containers.RepeatedScalarFieldContainer[str]
    ambiguous: _containers.RepeatedCompositeFieldContainer[AmbiguousEffectView]
    recommended: str
    why: str
    allowed: _containers.RepeatedScalarFieldContainer[str]
    refused: _containers.RepeatedCompositeFieldContainer[RefusedAction]
    revision: int
    def __init__(self, task_id: _Optional[str] = ..., title: _Optional[str] = ..., state: _Optional[str] = ..., known: _Optional[_Iterable[str]] = ..., ambiguous: _Optional[_Iterable[_Union[AmbiguousEffectView, _Mapping]]] = ..., recommended: _Optional[str] = ..., why: _Optional[str] = ..., allowed: _Optional[_Iterable[str]] = ..., refused: _Optional[_Iterable[_Union[RefusedAction, _Mapping]]] = ..., revision: _Optional[int] = ...) -> None: ...

class ListRecoveryReply(_message.Message):
    __slots__ = ("tasks", "landings", "landings_more")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    LANDINGS_FIELD_NUMBER: _ClassVar[int]
    LANDINGS_MORE_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[RecoveryView]
    landings: _containers.RepeatedCompositeFieldContainer[LandingResolutionView]
    landings_more: int
    def __init__(self, tasks: _Optional[_Iterable[_Union[RecoveryView, _Mapping]]] = ..., landings: _Optional[_Iterable[_Union[LandingResolutionView, _Mapping]]] = ..., landings_more: _Optional[int] = ...) -> None: ...

class LandingResolutionView(_message.Message):
    __slots__ = ("task_id", "landing_id", "resolution", "by", "branch", "landed_head", "previous_head", "reason", "resolved_at_us", "started_at_us")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    LANDING_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    LANDED_HEAD_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_HEAD_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_AT_US_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_US_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    landing_id: int
    resolution: str
    by: str
    branch: str
    landed_head: str
    previous_head: str
    reason: str
    resolved_at_us: int
    started_at_us: int
    def __init__(self, task_id: _Optional[str] = ..., landing_id: _Optional[int] = ..., resolution: _Optional[str] = ..., by: _Optional[str] = ..., branch: _Optional[str] = ..., landed_head: _Optional[str] = ..., previous_head: _Optional[str] = ..., reason: _Optional[str] = ..., resolved_at_us: _Optional[int] = ..., started_at_us: _Optional[int] = ...) -> None: ...

class RecordOutcomeRequest(_message.Message):
    __slots__ = ("control", "task_id", "item_id", "outcome", "note")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    item_id: str
    outcome: str
    note: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., item_id: _Optional[str] = ..., outcome: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class RecoveryActionRequest(_message.Message):
    __slots__ = ("control", "task_id", "action")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    action: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class ListInstructionFilesRequest(_message.Message):
    __slots__ = ("repository_path",)
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    repository_path: str
    def __init__(self, repository_path: _Optional[str] = ...) -> None: ...

class InstructionApprovalView(_message.Message):
    __slots__ = ("sha256", "approved_by", "approved_at", "revoked_by", "revoked_at", "revoke_confirmation")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    APPROVED_BY_FIELD_NUMBER: _ClassVar[int]
    APPROVED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_BY_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    sha256: str
    approved_by: str
    approved_at: str
    revoked_by: str
    revoked_at: str
    revoke_confirmation: str
    def __init__(self, sha256: _Optional[str] = ..., approved_by: _Optional[str] = ..., approved_at: _Optional[str] = ..., revoked_by: _Optional[str] = ..., revoked_at: _Optional[str] = ..., revoke_confirmation: _Optional[str] = ...) -> None: ...

class InstructionFileView(_message.Message):
    __slots__ = ("path", "sha256", "size", "text", "problem", "state", "approvals", "approve_confirmation")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    APPROVE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    path: str
    sha256: str
    size: int
    text: str
    problem: str
    state: str
    approvals: _containers.RepeatedCompositeFieldContainer[InstructionApprovalView]
    approve_confirmation: str
    def __init__(self, path: _Optional[str] = ..., sha256: _Optional[str] = ..., size: _Optional[int] = ..., text: _Optional[str] = ..., problem: _Optional[str] = ..., state: _Optional[str] = ..., approvals: _Optional[_Iterable[_Union[InstructionApprovalView, _Mapping]]] = ..., approve_confirmation: _Optional[str] = ...) -> None: ...

class InstructionFilesView(_message.Message):
    __slots__ = ("root", "repository_id", "paths", "files", "outcome")
    ROOT_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ID_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    root: str
    repository_id: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.RepeatedCompositeFieldContainer[InstructionFileView]
    outcome: str
    def __init__(self, root: _Optional[str] = ..., repository_id: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., files: _Optional[_Iterable[_Union[InstructionFileView, _Mapping]]] = ..., outcome: _Optional[str] = ...) -> None: ...

class InstructionFileDecisionRequest(_message.Message):
    __slots__ = ("control", "repository_path", "path", "sha256", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    repository_path: str
    path: str
    sha256: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., repository_path: _Optional[str] = ..., path: _Optional[str] = ..., sha256: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class SetInstructionPathsRequest(_message.Message):
    __slots__ = ("control", "paths", "repository_path")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    paths: _containers.RepeatedScalarFieldContainer[str]
    repository_path: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., paths: _Optional[_Iterable[str]] = ..., repository_path: _Optional[str] = ...) -> None: ...

class GetSettingsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EndpointApprovalView(_message.Message):
    __slots__ = ("provider", "base_url", "approved_at")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    APPROVED_AT_FIELD_NUMBER: _ClassVar[int]
    provider: str
    base_url: str
    approved_at: str
    def __init__(self, provider: _Optional[str] = ..., base_url: _Optional[str] = ..., approved_at: _Optional[str] = ...) -> None: ...

class EndpointApprovalCard(_message.Message):
    __slots__ = ("provider", "base_url", "confirmation")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    provider: str
    base_url: str
    confirmation: str
    def __init__(self, provider: _Optional[str] = ..., base_url: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class ApproveEndpointRequest(_message.Message):
    __slots__ = ("control", "provider", "base_url", "confirmation", "task_id")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    provider: str
    base_url: str
    confirmation: str
    task_id: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., provider: _Optional[str] = ..., base_url: _Optional[str] = ..., confirmation: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class SettingsView(_message.Message):
    __slots__ = ("providers", "endpoint_approvals", "default_hard_limit", "provider_label", "clarification_policy", "provider_source", "provider_reason", "chosen_provider", "chosen_cheap_model", "chosen_capable_model", "provider_choice_revision", "prices", "choosable_providers", "chosen_base_url", "chosen_no_key", "chosen_endpoint_approval", "default_hard_limit_source", "current_endpoint_approval")
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_HARD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_LABEL_FIELD_NUMBER: _ClassVar[int]
    CLARIFICATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_SOURCE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_REASON_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_CHEAP_MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_CAPABLE_MODEL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_CHOICE_REVISION_FIELD_NUMBER: _ClassVar[int]
    PRICES_FIELD_NUMBER: _ClassVar[int]
    CHOOSABLE_PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_NO_KEY_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_ENDPOINT_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_HARD_LIMIT_SOURCE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ENDPOINT_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    providers: _containers.RepeatedCompositeFieldContainer[ProviderStatus]
    endpoint_approvals: _containers.RepeatedCompositeFieldContainer[EndpointApprovalView]
    default_hard_limit: _common_pb2.Money
    provider_label: str
    clarification_policy: str
    provider_source: str
    provider_reason: str
    chosen_provider: str
    chosen_cheap_model: str
    chosen_capable_model: str
    provider_choice_revision: int
    prices: _containers.RepeatedCompositeFieldContainer[PriceRow]
    choosable_providers: _containers.RepeatedScalarFieldContainer[str]
    chosen_base_url: str
    chosen_no_key: bool
    chosen_endpoint_approval: EndpointApprovalCard
    default_hard_limit_source: str
    current_endpoint_approval: EndpointApprovalCard
    def __init__(self, providers: _Optional[_Iterable[_Union[ProviderStatus, _Mapping]]] = ..., endpoint_approvals: _Optional[_Iterable[_Union[EndpointApprovalView, _Mapping]]] = ..., default_hard_limit: _Optional[_Union[_common_pb2.Money, _Mapping]] = ..., provider_label: _Optional[str] = ..., clarification_policy: _Optional[str] = ..., provider_source: _Optional[str] = ..., provider_reason: _Optional[str] = ..., chosen_provider: _Optional[str] = ..., chosen_cheap_model: _Optional[str] = ..., chosen_capable_model: _Optional[str] = ..., provider_choice_revision: _Optional[int] = ..., prices: _Optional[_Iterable[_Union[PriceRow, _Mapping]]] = ..., choosable_providers: _Optional[_Iterable[str]] = ..., chosen_base_url: _Optional[str] = ..., chosen_no_key: _Optional[bool] = ..., chosen_endpoint_approval: _Optional[_Union[EndpointApprovalCard, _Mapping]] = ..., default_hard_limit_source: _Optional[str] = ..., current_endpoint_approval: _Optional[_Union[EndpointApprovalCard, _Mapping]] = ...) -> None: ...

class SetProviderChoiceRequest(_message.Message):
    __slots__ = ("control", "provider", "cheap_model", "capable_model", "base_url", "no_key")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    CHEAP_MODEL_FIELD_NUMBER: _ClassVar[int]
    CAPABLE_MODEL_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    NO_KEY_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    provider: str
    cheap_model: str
    capable_model: str
    base_url: str
    no_key: bool
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., provider: _Optional[str] = ..., cheap_model: _Optional[str] = ..., capable_model: _Optional[str] = ..., base_url: _Optional[str] = ..., no_key: _Optional[bool] = ...) -> None: ...

class StoreProviderKeyRequest(_message.Message):
    __slots__ = ("control", "provider", "key")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    provider: str
    key: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., provider: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class StoreProviderKeyReply(_message.Message):
    __slots__ = ("provider", "outcome")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    provider: str
    outcome: str
    def __init__(self, provider: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class SetClarificationPolicyRequest(_message.Message):
    __slots__ = ("control", "policy")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    policy: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., policy: _Optional[str] = ...) -> None: ...

class SetBudgetDefaultsRequest(_message.Message):
    __slots__ = ("control", "hard_limit", "currency")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    HARD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    hard_limit: str
    currency: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., hard_limit: _Optional[str] = ..., currency: _Optional[str] = ...) -> None: ...

class GetBudgetRequest(_message.Message):
    __slots__ = ("task_id", "entries")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    entries: bool
    def __init__(self, task_id: _Optional[str] = ..., entries: _Optional[bool] = ...) -> None: ...

class LedgerEntryView(_message.Message):
    __slots__ = ("entry_id", "request_id", "kind", "amount", "reason", "acknowledged")
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    entry_id: int
    request_id: str
    kind: str
    amount: _common_pb2.MaybeMoney
    reason: str
    acknowledged: bool
    def __init__(self, entry_id: _Optional[int] = ..., request_id: _Optional[str] = ..., kind: _Optional[str] = ..., amount: _Optional[_Union[_common_pb2.MaybeMoney, _Mapping]] = ..., reason: _Optional[str] = ..., acknowledged: _Optional[bool] = ...) -> None: ...

class BudgetReport(_message.Message):
    __slots__ = ("task_id", "task_state", "budget", "entries", "outcome")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_STATE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    task_state: str
    budget: BudgetView
    entries: _containers.RepeatedCompositeFieldContainer[LedgerEntryView]
    outcome: str
    def __init__(self, task_id: _Optional[str] = ..., task_state: _Optional[str] = ..., budget: _Optional[_Union[BudgetView, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[LedgerEntryView, _Mapping]]] = ..., outcome: _Optional[str] = ...) -> None: ...

class ChangeBudgetRequest(_message.Message):
    __slots__ = ("control", "task_id", "hard_limit", "currency", "warning", "token_limit", "token_limit_set", "allow_unknown_price", "revision")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    HARD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LIMIT_SET_FIELD_NUMBER: _ClassVar[int]
    ALLOW_UNKNOWN_PRICE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    hard_limit: str
    currency: str
    warning: str
    token_limit: int
    token_limit_set: bool
    allow_unknown_price: bool
    revision: int
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., hard_limit: _Optional[str] = ..., currency: _Optional[str] = ..., warning: _Optional[str] = ..., token_limit: _Optional[int] = ..., token_limit_set: _Optional[bool] = ..., allow_unknown_price: _Optional[bool] = ..., revision: _Optional[int] = ...) -> None: ...

class AcknowledgeChargesRequest(_message.Message):
    __slots__ = ("control", "task_id", "revision", "entry_ids")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ENTRY_IDS_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    revision: int
    entry_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., revision: _Optional[int] = ..., entry_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class BudgetTaskRequest(_message.Message):
    __slots__ = ("control", "task_id")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ...) -> None: ...

class ApproveRungRequest(_message.Message):
    __slots__ = ("control", "task_id", "rung")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RUNG_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    task_id: str
    rung: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., task_id: _Optional[str] = ..., rung: _Optional[str] = ...) -> None: ...

class ListPricesRequest(_message.Message):
    __slots__ = ("provider",)
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    provider: str
    def __init__(self, provider: _Optional[str] = ...) -> None: ...

class PriceRow(_message.Message):
    __slots__ = ("provider", "model", "aliases", "input", "output", "cache_read", "cache_write", "currency", "effective_date", "source", "revision", "cache_write_1h")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_DATE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_1H_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    input: str
    output: str
    cache_read: str
    cache_write: str
    currency: str
    effective_date: str
    source: str
    revision: int
    cache_write_1h: str
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., input: _Optional[str] = ..., output: _Optional[str] = ..., cache_read: _Optional[str] = ..., cache_write: _Optional[str] = ..., currency: _Optional[str] = ..., effective_date: _Optional[str] = ..., source: _Optional[str] = ..., revision: _Optional[int] = ..., cache_write_1h: _Optional[str] = ...) -> None: ...

class PriceList(_message.Message):
    __slots__ = ("prices", "outcome")
    PRICES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    prices: _containers.RepeatedCompositeFieldContainer[PriceRow]
    outcome: str
    def __init__(self, prices: _Optional[_Iterable[_Union[PriceRow, _Mapping]]] = ..., outcome: _Optional[str] = ...) -> None: ...

class SetPriceRequest(_message.Message):
    __slots__ = ("control", "provider", "model", "input", "output", "cache_read", "cache_write", "currency", "effective_date", "cache_write_1h")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_DATE_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_1H_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    provider: str
    model: str
    input: str
    output: str
    cache_read: str
    cache_write: str
    currency: str
    effective_date: str
    cache_write_1h: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., input: _Optional[str] = ..., output: _Optional[str] = ..., cache_read: _Optional[str] = ..., cache_write: _Optional[str] = ..., currency: _Optional[str] = ..., effective_date: _Optional[str] = ..., cache_write_1h: _Optional[str] = ...) -> None: ...

class RunDoctorRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DoctorCheckView(_message.Message):
    __slots__ = ("name", "status", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: str
    detail: str
    def __init__(self, name: _Optional[str] = ..., status: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class DoctorReport(_message.Message):
    __slots__ = ("checks", "healthy")
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    checks: _containers.RepeatedCompositeFieldContainer[DoctorCheckView]
    healthy: bool
    def __init__(self, checks: _Optional[_Iterable[_Union[DoctorCheckView, _Mapping]]] = ..., healthy: _Optional[bool] = ...) -> None: ...

class CreateBackupRequest(_message.Message):
    __slots__ = ("control",)
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ...) -> None: ...

class BackupView(_message.Message):
    __slots__ = ("file_name", "bytes", "pages")
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    file_name: str
    bytes: int
    pages: int
    def __init__(self, file_name: _Optional[str] = ..., bytes: _Optional[int] = ..., pages: _Optional[int] = ...) -> None: ...

class IssueLaunchLinkRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class LaunchLink(_message.Message):
    __slots__ = ("url", "origin", "valid_seconds")
    URL_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    VALID_SECONDS_FIELD_NUMBER: _ClassVar[int]
    url: str
    origin: str
    valid_seconds: int
    def __init__(self, url: _Optional[str] = ..., origin: _Optional[str] = ..., valid_seconds: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("session_id", "after_sequence", "batched")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    BATCHED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_sequence: int
    batched: bool
    def __init__(self, session_id: _Optional[str] = ..., after_sequence: _Optional[int] = ..., batched: _Optional[bool] = ...) -> None: ...

class SessionEvent(_message.Message):
    __slots__ = ("session_id", "sequence", "kind", "created_at_us", "payload_json", "event_kind")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    EVENT_KIND_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    sequence: int
    kind: str
    created_at_us: int
    payload_json: str
    event_kind: EventKind
    def __init__(self, session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., kind: _Optional[str] = ..., created_at_us: _Optional[int] = ..., payload_json: _Optional[str] = ..., event_kind: _Optional[_Union[EventKind, str]] = ...) -> None: ...

class ReplayBoundary(_message.Message):
    __slots__ = ("through_sequence",)
    THROUGH_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    through_sequence: int
    def __init__(self, through_sequence: _Optional[int] = ...) -> None: ...

class SessionEventBatch(_message.Message):
    __slots__ = ("session_id", "first_sequence", "kinds", "created_at_us", "payloads_json", "event_kinds")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_JSON_FIELD_NUMBER: _ClassVar[int]
    EVENT_KINDS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    first_sequence: int
    kinds: _containers.RepeatedScalarFieldContainer[str]
    created_at_us: _containers.RepeatedScalarFieldContainer[int]
    payloads_json: _containers.RepeatedScalarFieldContainer[str]
    event_kinds: _containers.RepeatedScalarFieldContainer[EventKind]
    def __init__(self, session_id: _Optional[str] = ..., first_sequence: _Optional[int] = ..., kinds: _Optional[_Iterable[str]] = ..., created_at_us: _Optional[_Iterable[int]] = ..., payloads_json: _Optional[_Iterable[str]] = ..., event_kinds: _Optional[_Iterable[_Union[EventKind, str]]] = ...) -> None: ...

class SessionFrame(_message.Message):
    __slots__ = ("event", "replay_boundary", "batch")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REPLAY_BOUNDARY_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    event: SessionEvent
    replay_boundary: ReplayBoundary
    batch: SessionEventBatch
    def __init__(self, event: _Optional[_Union[SessionEvent, _Mapping]] = ..., replay_boundary: _Optional[_Union[ReplayBoundary, _Mapping]] = ..., batch: _Optional[_Union[SessionEventBatch, _Mapping]] = ...) -> None: ...

class GetHeadRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class SessionHead(_message.Message):
    __slots__ = ("session_id", "through_sequence")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THROUGH_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    through_sequence: int
    def __init__(self, session_id: _Optional[str] = ..., through_sequence: _Optional[int] = ...) -> None: ...
