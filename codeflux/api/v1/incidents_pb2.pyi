from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReportIncidentRequest(_message.Message):
    __slots__ = ("control", "repository_root", "text", "source")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    repository_root: str
    text: str
    source: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., repository_root: _Optional[str] = ..., text: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class IncidentFrameView(_message.Message):
    __slots__ = ("path", "function")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    path: str
    function: str
    def __init__(self, path: _Optional[str] = ..., function: _Optional[str] = ...) -> None: ...

class IncidentView(_message.Message):
    __slots__ = ("incident_id", "repository_id", "repository_root", "state", "state_reason", "state_since", "state_task_id", "occurrences", "first_seen", "last_seen", "fingerprint", "shape", "exception_type", "frames", "message", "summary")
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ID_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_SINCE_FIELD_NUMBER: _ClassVar[int]
    STATE_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    incident_id: str
    repository_id: str
    repository_root: str
    state: str
    state_reason: str
    state_since: str
    state_task_id: str
    occurrences: int
    first_seen: str
    last_seen: str
    fingerprint: str
    shape: str
    exception_type: str
    frames: _containers.RepeatedCompositeFieldContainer[IncidentFrameView]
    message: str
    summary: str
    def __init__(self, incident_id: _Optional[str] = ..., repository_id: _Optional[str] = ..., repository_root: _Optional[str] = ..., state: _Optional[str] = ..., state_reason: _Optional[str] = ..., state_since: _Optional[str] = ..., state_task_id: _Optional[str] = ..., occurrences: _Optional[int] = ..., first_seen: _Optional[str] = ..., last_seen: _Optional[str] = ..., fingerprint: _Optional[str] = ..., shape: _Optional[str] = ..., exception_type: _Optional[str] = ..., frames: _Optional[_Iterable[_Union[IncidentFrameView, _Mapping]]] = ..., message: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class IncidentReport(_message.Message):
    __slots__ = ("incident", "created", "regressed", "occurrence_id")
    INCIDENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    REGRESSED_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    incident: IncidentView
    created: bool
    regressed: bool
    occurrence_id: int
    def __init__(self, incident: _Optional[_Union[IncidentView, _Mapping]] = ..., created: _Optional[bool] = ..., regressed: _Optional[bool] = ..., occurrence_id: _Optional[int] = ...) -> None: ...

class ListIncidentsRequest(_message.Message):
    __slots__ = ("repository_root", "state", "limit")
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    repository_root: str
    state: str
    limit: int
    def __init__(self, repository_root: _Optional[str] = ..., state: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class IncidentList(_message.Message):
    __slots__ = ("incidents",)
    INCIDENTS_FIELD_NUMBER: _ClassVar[int]
    incidents: _containers.RepeatedCompositeFieldContainer[IncidentView]
    def __init__(self, incidents: _Optional[_Iterable[_Union[IncidentView, _Mapping]]] = ...) -> None: ...

class ShowIncidentRequest(_message.Message):
    __slots__ = ("incident_id", "occurrences")
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    incident_id: str
    occurrences: int
    def __init__(self, incident_id: _Optional[str] = ..., occurrences: _Optional[int] = ...) -> None: ...

class IncidentStateView(_message.Message):
    __slots__ = ("sequence", "state", "actor", "reason", "task_id", "recorded_at")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    state: str
    actor: str
    reason: str
    task_id: str
    recorded_at: str
    def __init__(self, sequence: _Optional[int] = ..., state: _Optional[str] = ..., actor: _Optional[str] = ..., reason: _Optional[str] = ..., task_id: _Optional[str] = ..., recorded_at: _Optional[str] = ...) -> None: ...

class IncidentOccurrenceView(_message.Message):
    __slots__ = ("occurrence_id", "source", "reported_at", "redacted_text")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REPORTED_AT_FIELD_NUMBER: _ClassVar[int]
    REDACTED_TEXT_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: int
    source: str
    reported_at: str
    redacted_text: str
    def __init__(self, occurrence_id: _Optional[int] = ..., source: _Optional[str] = ..., reported_at: _Optional[str] = ..., redacted_text: _Optional[str] = ...) -> None: ...

class IncidentDetail(_message.Message):
    __slots__ = ("incident", "history", "occurrences", "dismiss_confirmation", "propose_confirmation")
    INCIDENT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    DISMISS_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    PROPOSE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    incident: IncidentView
    history: _containers.RepeatedCompositeFieldContainer[IncidentStateView]
    occurrences: _containers.RepeatedCompositeFieldContainer[IncidentOccurrenceView]
    dismiss_confirmation: str
    propose_confirmation: str
    def __init__(self, incident: _Optional[_Union[IncidentView, _Mapping]] = ..., history: _Optional[_Iterable[_Union[IncidentStateView, _Mapping]]] = ..., occurrences: _Optional[_Iterable[_Union[IncidentOccurrenceView, _Mapping]]] = ..., dismiss_confirmation: _Optional[str] = ..., propose_confirmation: _Optional[str] = ...) -> None: ...

class DismissIncidentRequest(_message.Message):
    __slots__ = ("control", "incident_id", "reason", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    incident_id: str
    reason: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., incident_id: _Optional[str] = ..., reason: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class ProposeIncidentTaskRequest(_message.Message):
    __slots__ = ("control", "incident_id", "check", "acknowledged_dirty_hash", "confirmation")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECK_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_DIRTY_HASH_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    incident_id: str
    check: str
    acknowledged_dirty_hash: str
    confirmation: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., incident_id: _Optional[str] = ..., check: _Optional[str] = ..., acknowledged_dirty_hash: _Optional[str] = ..., confirmation: _Optional[str] = ...) -> None: ...

class IncidentProposal(_message.Message):
    __slots__ = ("detail", "task_id", "requirement")
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    detail: IncidentDetail
    task_id: str
    requirement: str
    def __init__(self, detail: _Optional[_Union[IncidentDetail, _Mapping]] = ..., task_id: _Optional[str] = ..., requirement: _Optional[str] = ...) -> None: ...

class WatchTickRequest(_message.Message):
    __slots__ = ("control", "repository_root", "argv", "auto_plan", "budget", "acknowledged_dirty_hash")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAN_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_DIRTY_HASH_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    repository_root: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    auto_plan: bool
    budget: str
    acknowledged_dirty_hash: str
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., repository_root: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., auto_plan: _Optional[bool] = ..., budget: _Optional[str] = ..., acknowledged_dirty_hash: _Optional[str] = ...) -> None: ...

class WatchTickReply(_message.Message):
    __slots__ = ("outcome", "head", "exit_code", "approval_id", "confinement", "duration_ms", "incident", "incident_created", "proposed_task_id", "requirement", "proposal_note", "plan_revision", "planning_spent_minor")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CONFINEMENT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_CREATED_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_NOTE_FIELD_NUMBER: _ClassVar[int]
    PLAN_REVISION_FIELD_NUMBER: _ClassVar[int]
    PLANNING_SPENT_MINOR_FIELD_NUMBER: _ClassVar[int]
    outcome: str
    head: str
    exit_code: int
    approval_id: str
    confinement: str
    duration_ms: int
    incident: IncidentView
    incident_created: bool
    proposed_task_id: str
    requirement: str
    proposal_note: str
    plan_revision: int
    planning_spent_minor: int
    def __init__(self, outcome: _Optional[str] = ..., head: _Optional[str] = ..., exit_code: _Optional[int] = ..., approval_id: _Optional[str] = ..., confinement: _Optional[str] = ..., duration_ms: _Optional[int] = ..., incident: _Optional[_Union[IncidentView, _Mapping]] = ..., incident_created: _Optional[bool] = ..., proposed_task_id: _Optional[str] = ..., requirement: _Optional[str] = ..., proposal_note: _Optional[str] = ..., plan_revision: _Optional[int] = ..., planning_spent_minor: _Optional[int] = ...) -> None: ...
