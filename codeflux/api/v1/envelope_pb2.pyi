from google.protobuf import any_pb2 as _any_pb2
from . import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Frame(_message.Message):
    __slots__ = ("stream_id", "call", "message", "status", "cancel")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    stream_id: int
    call: Call
    message: _any_pb2.Any
    status: Status
    cancel: Cancel
    def __init__(self, stream_id: _Optional[int] = ..., call: _Optional[_Union[Call, _Mapping]] = ..., message: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., status: _Optional[_Union[Status, _Mapping]] = ..., cancel: _Optional[_Union[Cancel, _Mapping]] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("method", "request", "deadline_ms")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    method: str
    request: _any_pb2.Any
    deadline_ms: int
    def __init__(self, method: _Optional[str] = ..., request: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., deadline_ms: _Optional[int] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("code", "safe_message", "detail")
    CODE_FIELD_NUMBER: _ClassVar[int]
    SAFE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    code: int
    safe_message: str
    detail: _common_pb2.ApiErrorDetail
    def __init__(self, code: _Optional[int] = ..., safe_message: _Optional[str] = ..., detail: _Optional[_Union[_common_pb2.ApiErrorDetail, _Mapping]] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
