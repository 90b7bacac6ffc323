from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListMemoryRequest(_message.Message):
    __slots__ = ("kind", "state", "query", "limit")
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    state: str
    query: str
    limit: int
    def __init__(self, kind: _Optional[str] = ..., state: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class MemorySourceView(_message.Message):
    __slots__ = ("path", "blob_sha")
    PATH_FIELD_NUMBER: _ClassVar[int]
    BLOB_SHA_FIELD_NUMBER: _ClassVar[int]
    path: str
    blob_sha: str
    def __init__(self, path: _Optional[str] = ..., blob_sha: _Optional[str] = ...) -> None: ...

class MemoryEvidenceView(_message.Message):
    __slots__ = ("kind", "ref")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    kind: str
    ref: str
    def __init__(self, kind: _Optional[str] = ..., ref: _Optional[str] = ...) -> None: ...

class MemoryVerdictView(_message.Message):
    __slots__ = ("checked", "applicable", "reason", "detail")
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    checked: bool
    applicable: bool
    reason: str
    detail: str
    def __init__(self, checked: _Optional[bool] = ..., applicable: _Optional[bool] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class MemoryEntryView(_message.Message):
    __slots__ = ("entry_id", "kind", "text", "body_json", "root_commit", "toolchain", "dependency_hash", "learned_at_commit", "replaces_id", "created_at", "state", "state_cause", "state_reason", "state_since", "sources", "evidence", "verdict", "state_since_us")
    class ToolchainEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    ROOT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAIN_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_HASH_FIELD_NUMBER: _ClassVar[int]
    LEARNED_AT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    REPLACES_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_SINCE_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    STATE_SINCE_US_FIELD_NUMBER: _ClassVar[int]
    entry_id: str
    kind: str
    text: str
    body_json: str
    root_commit: str
    toolchain: _containers.ScalarMap[str, str]
    dependency_hash: str
    learned_at_commit: str
    replaces_id: str
    created_at: str
    state: str
    state_cause: str
    state_reason: str
    state_since: str
    sources: _containers.RepeatedCompositeFieldContainer[MemorySourceView]
    evidence: _containers.RepeatedCompositeFieldContainer[MemoryEvidenceView]
    verdict: MemoryVerdictView
    state_since_us: int
    def __init__(self, entry_id: _Optional[str] = ..., kind: _Optional[str] = ..., text: _Optional[str] = ..., body_json: _Optional[str] = ..., root_commit: _Optional[str] = ..., toolchain: _Optional[_Mapping[str, str]] = ..., dependency_hash: _Optional[str] = ..., learned_at_commit: _Optional[str] = ..., replaces_id: _Optional[str] = ..., created_at: _Optional[str] = ..., state: _Optional[str] = ..., state_cause: _Optional[str] = ..., state_reason: _Optional[str] = ..., state_since: _Optional[str] = ..., sources: _Optional[_Iterable[_Union[MemorySourceView, _Mapping]]] = ..., evidence: _Optional[_Iterable[_Union[MemoryEvidenceView, _Mapping]]] = ..., verdict: _Optional[_Union[MemoryVerdictView, _Mapping]] = ..., state_since_us: _Optional[int] = ...) -> None: ...

class MemoryList(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[MemoryEntryView]
    def __init__(self, entries: _Optional[_Iterable[_Union[MemoryEntryView, _Mapping]]] = ...) -> None: ...

class ShowMemoryRequest(_message.Message):
    __slots__ = ("entry_id",)
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    entry_id: str
    def __init__(self, entry_id: _Optional[str] = ...) -> None: ...

class MemoryEdgeView(_message.Message):
    __slots__ = ("kind", "dependent_id", "source_id", "other_text", "other_state")
    KIND_FIELD_NUMBER: _ClassVar[int]
    DEPENDENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    OTHER_TEXT_FIELD_NUMBER: _ClassVar[int]
    OTHER_STATE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    dependent_id: str
    source_id: str
    other_text: str
    other_state: str
    def __init__(self, kind: _Optional[str] = ..., dependent_id: _Optional[str] = ..., source_id: _Optional[str] = ..., other_text: _Optional[str] = ..., other_state: _Optional[str] = ...) -> None: ...

class MemoryStateView(_message.Message):
    __slots__ = ("sequence", "state", "cause", "cause_entry_id", "reason", "recorded_at")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    state: str
    cause: str
    cause_entry_id: str
    reason: str
    recorded_at: str
    def __init__(self, sequence: _Optional[int] = ..., state: _Optional[str] = ..., cause: _Optional[str] = ..., cause_entry_id: _Optional[str] = ..., reason: _Optional[str] = ..., recorded_at: _Optional[str] = ...) -> None: ...

class MemoryEntryDetail(_message.Message):
    __slots__ = ("entry", "edges", "history", "invalidate_confirmation", "confirm_confirmation")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    INVALIDATE_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    entry: MemoryEntryView
    edges: _containers.RepeatedCompositeFieldContainer[MemoryEdgeView]
    history: _containers.RepeatedCompositeFieldContainer[MemoryStateView]
    invalidate_confirmation: str
    confirm_confirmation: str
    def __init__(self, entry: _Optional[_Union[MemoryEntryView, _Mapping]] = ..., edges: _Optional[_Iterable[_Union[MemoryEdgeView, _Mapping]]] = ..., history: _Optional[_Iterable[_Union[MemoryStateView, _Mapping]]] = ..., invalidate_confirmation: _Optional[str] = ..., confirm_confirmation: _Optional[str] = ...) -> None: ...

class ConfirmMemoryRequest(_message.Message):
    __slots__ = ("control", "entry_id", "reason", "confirmation", "state_since_us")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    STATE_SINCE_US_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    entry_id: str
    reason: str
    confirmation: str
    state_since_us: int
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., entry_id: _Optional[str] = ..., reason: _Optional[str] = ..., confirmation: _Optional[str] = ..., state_since_us: _Optional[int] = ...) -> None: ...

class InvalidateMemoryRequest(_message.Message):
    __slots__ = ("control", "entry_id", "reason", "confirmation", "state_since_us")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    STATE_SINCE_US_FIELD_NUMBER: _ClassVar[int]
    control: _common_pb2.MutationControl
    entry_id: str
    reason: str
    confirmation: str
    state_since_us: int
    def __init__(self, control: _Optional[_Union[_common_pb2.MutationControl, _Mapping]] = ..., entry_id: _Optional[str] = ..., reason: _Optional[str] = ..., confirmation: _Optional[str] = ..., state_since_us: _Optional[int] = ...) -> None: ...

class MemoryInvalidationView(_message.Message):
    __slots__ = ("entry_id", "quarantined_ids", "flagged_ids", "detail")
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_IDS_FIELD_NUMBER: _ClassVar[int]
    FLAGGED_IDS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    entry_id: str
    quarantined_ids: _containers.RepeatedScalarFieldContainer[str]
    flagged_ids: _containers.RepeatedScalarFieldContainer[str]
    detail: MemoryEntryDetail
    def __init__(self, entry_id: _Optional[str] = ..., quarantined_ids: _Optional[_Iterable[str]] = ..., flagged_ids: _Optional[_Iterable[str]] = ..., detail: _Optional[_Union[MemoryEntryDetail, _Mapping]] = ...) -> None: ...

class ExportMemoryRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MemoryExport(_message.Message):
    __slots__ = ("document_json", "entries")
    DOCUMENT_JSON_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    document_json: str
    entries: int
    def __init__(self, document_json: _Optional[str] = ..., entries: _Optional[int] = ...) -> None: ...
