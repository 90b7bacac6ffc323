"""Stored text back into the domain's closed vocabularies, for the row decoders of this package.

A value outside the vocabulary is never coerced to a neighbour: it raises
:class:`~codeflux.domain.errors.StoredValueUnknownError` naming what kind of value it was.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from codeflux.domain.errors import StoredValueUnknownError

__all__ = ["decode_choice", "decode_optional_choice"]

E = TypeVar("E", bound=StrEnum)


def decode_choice(vocabulary: type[E], value: object, *, kind: str) -> E:
    """The member of ``vocabulary`` stored as ``value``; :class:`StoredValueUnknownError` otherwise."""
    text = str(value)
    try:
        return vocabulary(text)
    except ValueError:
        raise StoredValueUnknownError(kind=kind, value=text) from None


def decode_optional_choice(vocabulary: type[E], value: object, *, kind: str) -> E | None:
    """:func:`decode_choice`, with NULL read as None."""
    return None if value is None else decode_choice(vocabulary, value, kind=kind)
