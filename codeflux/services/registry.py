"""The method table both transports dispatch to, and the one map from errors to RPC statuses.

A :class:`UnaryMethod` handler is a plain function (it blocks on SQLite and git), so a transport runs it
in a worker thread; a :class:`StreamMethod` handler is an async generator that runs on the event loop.
Both receive a :class:`CallContext` that says which connection the call came from — authentication is
bound to that connection by the transport before any handler runs, never to a header or a field.

:func:`status_of` maps any exception to a gRPC status code and an :class:`ApiErrorDetail` whose message
is safe to show: codeflux errors carry their own single-line safe message; anything else becomes
INTERNAL with a generic text (its details go to the log, never to the caller).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Generic, TypeAlias, TypeVar

from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2, envelope_pb2
from codeflux.domain import errors as e

__all__ = [
    "UNIX_SOCKET",
    "CallContext",
    "Code",
    "MethodTable",
    "StreamMethod",
    "UnaryMethod",
    "method_name",
    "plain_status",
    "status_of",
]

ErrorCodeValue: TypeAlias = common_pb2.ErrorCode
Req = TypeVar("Req", bound=Message)
Rep = TypeVar("Rep", bound=Message)


class Code:
    """gRPC numeric status codes (the subset codeflux uses)."""

    OK: Final = 0
    CANCELLED: Final = 1
    UNKNOWN: Final = 2
    INVALID_ARGUMENT: Final = 3
    DEADLINE_EXCEEDED: Final = 4
    NOT_FOUND: Final = 5
    PERMISSION_DENIED: Final = 7
    RESOURCE_EXHAUSTED: Final = 8
    FAILED_PRECONDITION: Final = 9
    ABORTED: Final = 10
    UNIMPLEMENTED: Final = 12
    INTERNAL: Final = 13
    UNAVAILABLE: Final = 14
    UNAUTHENTICATED: Final = 16


# ``CallContext.transport`` of a call over the coordinator's 0600 Unix socket (the CLI's way in).
UNIX_SOCKET: Final = "unix-socket"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """Who is calling: the transport (``"websocket"`` or ``"unix-socket"``) and a per-connection id.

    ``connection_id`` scopes idempotency keys to the authenticated connection's session."""

    transport: str
    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UnaryMethod(Generic[Req, Rep]):
    name: str  # "/codeflux.v1.TaskService/GetTask"
    request_type: type[Req]
    response_type: type[Rep]
    handler: Callable[[CallContext, Req], Rep]
    mutating: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamMethod(Generic[Req, Rep]):
    name: str
    request_type: type[Req]
    response_type: type[Rep]
    handler: Callable[[CallContext, Req], AsyncIterator[Rep]]


Method = UnaryMethod[Message, Message] | StreamMethod[Message, Message]


@dataclass(frozen=True, slots=True)
class MethodTable:
    """Every callable method by its full name; the services (``/codeflux.v1.X/``) it covers."""

    methods: Mapping[str, Method] = field(default_factory=dict)

    @classmethod
    def of(cls, methods: Iterable[Method]) -> MethodTable:
        table: dict[str, Method] = {}
        for method in methods:
            if method.name in table:
                raise ValueError(f"method {method.name} registered twice")
            table[method.name] = method
        return cls(table)

    def get(self, name: str) -> Method | None:
        return self.methods.get(name)

    def services(self) -> dict[str, list[Method]]:
        grouped: dict[str, list[Method]] = {}
        for name, method in sorted(self.methods.items()):
            service = name.split("/")[1]
            grouped.setdefault(service, []).append(method)
        return grouped


_METHOD_NAME: Final = re.compile(r"/codeflux\.v1\.[A-Za-z]+/[A-Za-z]+")


def method_name(service: str, method: str) -> str:
    name = f"/codeflux.v1.{service}/{method}"
    if not _METHOD_NAME.fullmatch(name):
        raise ValueError(f"not a method name: {name!r}")
    return name


# The most specific class wins: the table is searched along the exception's MRO.
_STATUS_FOR_ERROR: Final[dict[type[e.CodefluxError], tuple[int, ErrorCodeValue]]] = {
    e.CodefluxError: (Code.INTERNAL, common_pb2.INTERNAL),
    e.UsageError: (Code.INVALID_ARGUMENT, common_pb2.INVALID_ARGUMENT),
    e.PrerequisiteError: (Code.FAILED_PRECONDITION, common_pb2.PRECONDITION),
    e.TaskActionUnavailableError: (Code.FAILED_PRECONDITION, common_pb2.INVALID_TRANSITION),
    e.AuthorityRefusedError: (Code.PERMISSION_DENIED, common_pb2.DENIED),
    e.DecisionNeededError: (Code.FAILED_PRECONDITION, common_pb2.DECISION_NEEDED),
    e.BudgetExhaustedError: (Code.FAILED_PRECONDITION, common_pb2.BUDGET_EXHAUSTED),
    e.StalledError: (Code.FAILED_PRECONDITION, common_pb2.PRECONDITION),
    e.NotFoundError: (Code.NOT_FOUND, common_pb2.NOT_FOUND),
    e.ConflictError: (Code.ABORTED, common_pb2.CONFLICT),
    e.StaleRevisionError: (Code.ABORTED, common_pb2.STALE_REVISION),
    e.IdempotencyConflictError: (Code.ABORTED, common_pb2.DUPLICATE),
    e.TransitionNotAllowedError: (Code.FAILED_PRECONDITION, common_pb2.INVALID_TRANSITION),
}



def status_of(error: BaseException) -> envelope_pb2.Status:
    """The status a caller sees for ``error`` (never its traceback, SQL, paths or secrets)."""
    error_code: ErrorCodeValue
    if isinstance(error, e.CodefluxError):
        code, error_code = next(_STATUS_FOR_ERROR[k] for k in type(error).__mro__ if k in _STATUS_FOR_ERROR)
        message = e.safe_error_message(error)
        entity = getattr(error, "entity_id", None) or getattr(error, "task_id", None) or ""
        error_type = type(error).__name__
    else:
        code, error_code, message, entity, error_type = (Code.INTERNAL, common_pb2.INTERNAL, e.INTERNAL_ERROR_MESSAGE,
                                                         "", "")
    detail = common_pb2.ApiErrorDetail(
        code=error_code,
        safe_message=message,
        retryable=code == Code.ABORTED,
        entity_id=str(entity)[:128],
        error_type=error_type,
    )
    return envelope_pb2.Status(code=code, safe_message=message, detail=detail)


def plain_status(code: int, error_code: ErrorCodeValue, message: str) -> envelope_pb2.Status:
    """A transport-level status (malformed frame, unknown method, limits) with a fixed safe message."""
    detail = common_pb2.ApiErrorDetail(code=error_code, safe_message=message)
    return envelope_pb2.Status(code=code, safe_message=message, detail=detail)
