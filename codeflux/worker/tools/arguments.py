"""Typed reads of a bound request's arguments (the binder has already checked names and types)."""

from __future__ import annotations

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import BoundToolRequest

__all__ = ["flag_argument", "integer_argument", "required_text", "text_argument"]


def text_argument(request: BoundToolRequest, name: str) -> str | None:
    value = request.value(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong_type(request, name)
    return value


def required_text(request: BoundToolRequest, name: str) -> str:
    value = text_argument(request, name)
    if value is None:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST, message=f"{request.tool}.{name} is required")
    return value


def integer_argument(request: BoundToolRequest, name: str) -> int | None:
    value = request.value(name)
    if value is None:
        return None
    if type(value) is not int:
        raise _wrong_type(request, name)
    return value


def flag_argument(request: BoundToolRequest, name: str) -> bool:
    value = request.value(name)
    if value is None:
        return False
    if type(value) is not bool:
        raise _wrong_type(request, name)
    return value


def _wrong_type(request: BoundToolRequest, name: str) -> ToolFailedError:
    return ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST,
                           message=f"{request.tool}.{name} has the wrong type")
