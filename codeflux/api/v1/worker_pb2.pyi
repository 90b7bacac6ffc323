from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OutputStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTPUT_STREAM_UNSPECIFIED: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDOUT: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDERR: _ClassVar[OutputStream]

class ResultState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESULT_STATE_UNSPECIFIED: _ClassVar[ResultState]
    RESULT_STATE_SUCCEEDED: _ClassVar[ResultState]
    RESULT_STATE_FAILED: _ClassVar[ResultState]
    RESULT_STATE_CANCELLED: _ClassVar[ResultState]
    RESULT_STATE_OUTCOME_UNKNOWN: _ClassVar[ResultState]
OUTPUT_STREAM_UNSPECIFIED: OutputStream
OUTPUT_STREAM_STDOUT: OutputStream
OUTPUT_STREAM_STDERR: OutputStream
RESULT_STATE_UNSPECIFIED: ResultState
RESULT_STATE_SUCCEEDED: ResultState
RESULT_STATE_FAILED: ResultState
RESULT_STATE_CANCELLED: ResultState
RESULT_STATE_OUTCOME_UNKNOWN: ResultState

class HeartbeatRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    def __init__(self, lease_id: _Optional[str] = ...) -> None: ...

class HeartbeatReply(_message.Message):
    __slots__ = ("lease_id", "worker_pid", "in_flight_request_ids")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_PID_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_REQUEST_IDS_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    worker_pid: int
    in_flight_request_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, lease_id: _Optional[str] = ..., worker_pid: _Optional[int] = ..., in_flight_request_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StringList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, items: _Optional[_Iterable[str]] = ...) -> None: ...

class ToolArgument(_message.Message):
    __slots__ = ("name", "text", "integer", "flag", "argv")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    FLAG_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    name: str
    text: str
    integer: int
    flag: bool
    argv: StringList
    def __init__(self, name: _Optional[str] = ..., text: _Optional[str] = ..., integer: _Optional[int] = ..., flag: _Optional[bool] = ..., argv: _Optional[_Union[StringList, _Mapping]] = ...) -> None: ...

class ExecutionLimits(_message.Message):
    __slots__ = ("timeout_ms", "max_output_bytes", "max_file_bytes")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_FILE_BYTES_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    max_output_bytes: int
    max_file_bytes: int
    def __init__(self, timeout_ms: _Optional[int] = ..., max_output_bytes: _Optional[int] = ..., max_file_bytes: _Optional[int] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("request_id", "task_id", "operation_identity", "tool", "arguments", "limits", "executable_path", "executable_sha256", "env_overrides", "stdin", "lease_token", "network_granted", "working_directory")
    class EnvOverridesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    EXECUTABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    EXECUTABLE_SHA256_FIELD_NUMBER: _ClassVar[int]
    ENV_OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NETWORK_GRANTED_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    task_id: str
    operation_identity: str
    tool: str
    arguments: _containers.RepeatedCompositeFieldContainer[ToolArgument]
    limits: ExecutionLimits
    executable_path: str
    executable_sha256: str
    env_overrides: _containers.ScalarMap[str, str]
    stdin: bytes
    lease_token: str
    network_granted: bool
    working_directory: str
    def __init__(self, request_id: _Optional[str] = ..., task_id: _Optional[str] = ..., operation_identity: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Iterable[_Union[ToolArgument, _Mapping]]] = ..., limits: _Optional[_Union[ExecutionLimits, _Mapping]] = ..., executable_path: _Optional[str] = ..., executable_sha256: _Optional[str] = ..., env_overrides: _Optional[_Mapping[str, str]] = ..., stdin: _Optional[bytes] = ..., lease_token: _Optional[str] = ..., network_granted: _Optional[bool] = ..., working_directory: _Optional[str] = ...) -> None: ...

class OutputChunk(_message.Message):
    __slots__ = ("stream", "text")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    stream: OutputStream
    text: str
    def __init__(self, stream: _Optional[_Union[OutputStream, str]] = ..., text: _Optional[str] = ...) -> None: ...

class ExecutionStarted(_message.Message):
    __slots__ = ("request_id", "process_group_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    process_group_id: int
    def __init__(self, request_id: _Optional[str] = ..., process_group_id: _Optional[int] = ...) -> None: ...

class ExecutionResult(_message.Message):
    __slots__ = ("request_id", "state", "failure_kind", "message", "exit_code", "content", "content_truncated", "stdout_truncated", "stderr_truncated", "duration_ms", "content_sha256", "confinement")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    CONFINEMENT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    state: ResultState
    failure_kind: str
    message: str
    exit_code: int
    content: str
    content_truncated: bool
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    content_sha256: str
    confinement: str
    def __init__(self, request_id: _Optional[str] = ..., state: _Optional[_Union[ResultState, str]] = ..., failure_kind: _Optional[str] = ..., message: _Optional[str] = ..., exit_code: _Optional[int] = ..., content: _Optional[str] = ..., content_truncated: _Optional[bool] = ..., stdout_truncated: _Optional[bool] = ..., stderr_truncated: _Optional[bool] = ..., duration_ms: _Optional[int] = ..., content_sha256: _Optional[str] = ..., confinement: _Optional[str] = ...) -> None: ...

class ExecuteEvent(_message.Message):
    __slots__ = ("started", "output", "result")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    started: ExecutionStarted
    output: OutputChunk
    result: ExecutionResult
    def __init__(self, started: _Optional[_Union[ExecutionStarted, _Mapping]] = ..., output: _Optional[_Union[OutputChunk, _Mapping]] = ..., result: _Optional[_Union[ExecutionResult, _Mapping]] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class CancelReply(_message.Message):
    __slots__ = ("was_running",)
    WAS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    was_running: bool
    def __init__(self, was_running: _Optional[bool] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ShutdownReply(_message.Message):
    __slots__ = ("killed_process_groups",)
    KILLED_PROCESS_GROUPS_FIELD_NUMBER: _ClassVar[int]
    killed_process_groups: int
    def __init__(self, killed_process_groups: _Optional[int] = ...) -> None: ...
