"""Field-driven JSON encoding of frozen dataclasses: the codec behind the event registry.

A dataclass's fields are its keys (``metadata[FIELD_KEY]`` renames one, e.g. a Python keyword); field
types drive both directions: ``str``, ``int``, ``bool``, ``X | None``, ``tuple[X, ...]``, fixed tuples,
``Mapping[K, V]``, ``StrEnum`` members, prefixed ids (:mod:`codeflux.domain.ids`) and nested dataclasses.
On read a missing key is allowed only where the field has a default; unknown keys are ignored. On write a
field marked :data:`OMITTED_WHEN_NONE` is left out while it is ``None``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Final, TypeAlias

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

__all__ = [
    "FIELD_KEY",
    "OMITTED_WHEN_NONE",
    "JsonValue",
    "PayloadShapeError",
    "decode_fields",
    "encode_fields",
    "payload_key_of",
]

JsonValue: TypeAlias = "bool | int | str | list[JsonValue] | dict[str, JsonValue] | None"

FIELD_KEY: Final = "codeflux.event.key"
_OMITTED: Final = "codeflux.event.omitted-when-none"
# Field metadata for a key written only when it has a value (omitted while None).
OMITTED_WHEN_NONE: Final = types.MappingProxyType({_OMITTED: True})



class PayloadShapeError(ValueError):
    """A stored value does not have the type its field declares (never leaves
    :func:`codeflux.domain.events.decode_event`, which turns it into an ``UnknownEvent``)."""


_ID_TYPES: Final = (ApprovalId, DecisionId, IncidentId, RepositoryApprovalId, RepositoryId, RunId, TaskId,
                    ToolRequestId)


def payload_key_of(item: dataclasses.Field[object]) -> str:
    """The stored key of the field ``item`` (its name unless renamed with :data:`FIELD_KEY`)."""
    key = item.metadata.get(FIELD_KEY, item.name)
    return key if isinstance(key, str) else item.name


def encode_fields(value: object) -> dict[str, JsonValue]:
    """The JSON-able mapping of the dataclass instance ``value``, keyed by :func:`payload_key_of`."""
    encoded: dict[str, JsonValue] = {}
    for name, key, omitted_when_none in _encoding_plan(type(value)):
        field_value = getattr(value, name)
        if field_value is None and omitted_when_none:
            continue
        kind = type(field_value)  # a plain str or int is itself (most fields): no call (a bool, an enum member take it)
        encoded[key] = field_value if kind is str or kind is int else _encode_value(field_value)
    return encoded


_ENCODING_PLANS: Final[dict[type[object], tuple[tuple[str, str, bool], ...]]] = {}


def _encoding_plan(cls: type[object]) -> tuple[tuple[str, str, bool], ...]:
    """(name, stored key, omitted when None) per field of the dataclass ``cls``, computed once per class (a class's
    fields never change; two threads meeting here compute the same plan)."""
    plan = _ENCODING_PLANS.get(cls)
    if plan is None:
        plan = tuple((item.name, payload_key_of(item), bool(item.metadata.get(_OMITTED)))
                     for item in dataclasses.fields(cls))  # type: ignore[arg-type]
        _ENCODING_PLANS[cls] = plan
    return plan


def _encode_value(value: object) -> JsonValue:
    if value is None or isinstance(value, bool | int | str):  # StrEnum members are str
        return value if not isinstance(value, StrEnum) else value.value
    if isinstance(value, _ID_TYPES):
        return value.value
    if isinstance(value, tuple):
        return [_encode_value(item) for item in value]
    if isinstance(value, Mapping):
        return {str(_encode_value(key)): _encode_value(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dict(encode_fields(value))
    raise TypeError(f"cannot encode {type(value).__name__} in an event payload")


_FieldPlan: TypeAlias = tuple[tuple[str, str, bool, object], ...]
_PLANS: Final[dict[type[object], _FieldPlan]] = {}


def _field_plan(cls: type[object]) -> _FieldPlan:
    """(name, stored key, has a default, type hint) per field of the dataclass ``cls``: resolving the hints is
    most of a decode's cost, and a class's fields never change, so it is done once per class (an idempotent
    fill: two threads meeting here compute the same plan)."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        plan = tuple((item.name, payload_key_of(item), item.default is not dataclasses.MISSING, hints[item.name])
                     for item in dataclasses.fields(cls))  # type: ignore[arg-type]
        _PLANS[cls] = plan
    return plan


def decode_fields(cls: type[object], raw: Mapping[str, object]) -> object:
    """An instance of the dataclass ``cls`` from the mapping ``raw`` (see the module docstring), or
    :class:`PayloadShapeError` / :class:`~codeflux.domain.errors.InvalidValueError` naming the key."""
    values: dict[str, object] = {}
    for name, key, has_default, hint in _field_plan(cls):
        if key not in raw:
            if not has_default:
                raise PayloadShapeError(f"{key!r} is missing")
            continue
        values[name] = _decode_value(hint, raw[key], where=key)
    return cls(**values)


@functools.cache
def _shape(hint: object) -> tuple[object, tuple[object, ...]]:
    """The hint's origin and arguments (``typing.get_origin`` / ``get_args``), once per hint."""
    return typing.get_origin(hint), typing.get_args(hint)


def _decode_value(hint: object, raw: object, *, where: str) -> object:
    origin, args = _shape(hint)
    if origin is types.UnionType or origin is typing.Union:
        if raw is None and type(None) in args:
            return None
        (present,) = [arg for arg in args if arg is not type(None)]
        return _decode_value(present, raw, where=where)
    if origin is tuple:
        if not isinstance(raw, list | tuple):
            raise PayloadShapeError(f"{where!r} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
            return tuple(_decode_value(args[0], item, where=where) for item in raw)
        if len(raw) != len(args):
            raise PayloadShapeError(f"{where!r} does not have {len(args)} items")
        return tuple(_decode_value(arg, item, where=where) for arg, item in zip(args, raw, strict=True))
    if origin is Mapping:
        if not isinstance(raw, Mapping):
            raise PayloadShapeError(f"{where!r} is not an object")
        return types.MappingProxyType(
            {_decode_value(args[0], key, where=where): _decode_value(args[1], item, where=where)
             for key, item in raw.items()})  # fmt: skip
    return _decode_scalar(hint, raw, where=where)


def _decode_scalar(hint: object, raw: object, *, where: str) -> object:
    if hint is bool:
        if not isinstance(raw, bool):
            raise PayloadShapeError(f"{where!r} is not true or false")
        return raw
    if hint is int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise PayloadShapeError(f"{where!r} is not an integer")
        return raw
    if not isinstance(hint, type):
        raise PayloadShapeError(f"{where!r} has an unsupported type")
    if dataclasses.is_dataclass(hint) and not issubclass(hint, _ID_TYPES):
        if not isinstance(raw, Mapping):
            raise PayloadShapeError(f"{where!r} is not an object")
        return decode_fields(hint, raw)
    if not isinstance(raw, str):
        raise PayloadShapeError(f"{where!r} is not a string")
    return _decode_text(hint, raw, where=where)


def _decode_text(hint: type, raw: str, *, where: str) -> object:
    if issubclass(hint, StrEnum):
        try:
            return hint(raw)
        except ValueError:
            raise PayloadShapeError(f"{where!r} is not one of the {hint.__name__} values") from None
    if issubclass(hint, _ID_TYPES):
        return hint.parse(raw)
    if hint is str:
        return raw
    raise PayloadShapeError(f"{where!r} has an unsupported type")
