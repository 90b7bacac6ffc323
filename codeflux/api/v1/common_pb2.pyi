from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    NOT_FOUND: _ClassVar[ErrorCode]
    INVALID_ARGUMENT: _ClassVar[ErrorCode]
    INVALID_TRANSITION: _ClassVar[ErrorCode]
    BUDGET_EXHAUSTED: _ClassVar[ErrorCode]
    RECOVERY_REQUIRED: _ClassVar[ErrorCode]
    STALE_REVISION: _ClassVar[ErrorCode]
    DUPLICATE: _ClassVar[ErrorCode]
    DENIED: _ClassVar[ErrorCode]
    CANCELLED: _ClassVar[ErrorCode]
    DECISION_NEEDED: _ClassVar[ErrorCode]
    PRECONDITION: _ClassVar[ErrorCode]
    UNAUTHENTICATED: _ClassVar[ErrorCode]
    UNIMPLEMENTED: _ClassVar[ErrorCode]
    RESOURCE_EXHAUSTED: _ClassVar[ErrorCode]
    DEADLINE_EXCEEDED: _ClassVar[ErrorCode]
    INTERNAL: _ClassVar[ErrorCode]
    CONFLICT: _ClassVar[ErrorCode]
ERROR_CODE_UNSPECIFIED: ErrorCode
NOT_FOUND: ErrorCode
INVALID_ARGUMENT: ErrorCode
INVALID_TRANSITION: ErrorCode
BUDGET_EXHAUSTED: ErrorCode
RECOVERY_REQUIRED: ErrorCode
STALE_REVISION: ErrorCode
DUPLICATE: ErrorCode
DENIED: ErrorCode
CANCELLED: ErrorCode
DECISION_NEEDED: ErrorCode
PRECONDITION: ErrorCode
UNAUTHENTICATED: ErrorCode
UNIMPLEMENTED: ErrorCode
RESOURCE_EXHAUSTED: ErrorCode
DEADLINE_EXCEEDED: ErrorCode
INTERNAL: ErrorCode
CONFLICT: ErrorCode

class MutationControl(_message.Message):
    __slots__ = ("idempotency_key", "expected_revision")
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    expected_revision: int
    def __init__(self, idempotency_key: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class Money(_message.Message):
    __slots__ = ("currency", "minor_units", "decimal_places", "display")
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    MINOR_UNITS_FIELD_NUMBER: _ClassVar[int]
    DECIMAL_PLACES_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    currency: str
    minor_units: int
    decimal_places: int
    display: str
    def __init__(self, currency: _Optional[str] = ..., minor_units: _Optional[int] = ..., decimal_places: _Optional[int] = ..., display: _Optional[str] = ...) -> None: ...

class MaybeMoney(_message.Message):
    __slots__ = ("known", "amount", "unknown_reason")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_REASON_FIELD_NUMBER: _ClassVar[int]
    known: bool
    amount: Money
    unknown_reason: str
    def __init__(self, known: _Optional[bool] = ..., amount: _Optional[_Union[Money, _Mapping]] = ..., unknown_reason: _Optional[str] = ...) -> None: ...

class MoneyRange(_message.Message):
    __slots__ = ("low", "high")
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    low: MaybeMoney
    high: MaybeMoney
    def __init__(self, low: _Optional[_Union[MaybeMoney, _Mapping]] = ..., high: _Optional[_Union[MaybeMoney, _Mapping]] = ...) -> None: ...

class ApiErrorDetail(_message.Message):
    __slots__ = ("code", "safe_message", "retryable", "entity_id", "error_type")
    CODE_FIELD_NUMBER: _ClassVar[int]
    SAFE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_TYPE_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    safe_message: str
    retryable: bool
    entity_id: str
    error_type: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., safe_message: _Optional[str] = ..., retryable: _Optional[bool] = ..., entity_id: _Optional[str] = ..., error_type: _Optional[str] = ...) -> None: ...
