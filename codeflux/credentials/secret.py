"""The ``Secret`` type: a string that refuses to be shown, serialized or copied out by accident."""

from __future__ import annotations

import hmac
from typing import Any, NoReturn, final

__all__ = ["REDACTED", "Secret"]

REDACTED = "[REDACTED]"
"""What a :class:`Secret` prints as, whatever the format; it says nothing about the value's length."""


@final
class Secret:
    """A secret string whose only way out is :meth:`reveal`.

    - ``str()``, ``repr()``, ``format()`` and f-strings give ``[REDACTED]``, so a secret that reaches a
      log line, an exception message or a UI payload by accident shows nothing.
    - ``json.dumps`` refuses it (it is not a ``str`` subclass and has no ``__dict__``), and pickling,
      ``copy`` through ``__reduce__`` and ``__getstate__`` raise ``TypeError``: a secret never travels
      to a file, a database or another process except through an explicit :meth:`reveal`.
    - Equality compares in constant time; a secret is unhashable (a hash of the value is derived data
      that could be printed).
    - It is immutable and cannot be subclassed.
    """

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"Secret holds a str, not {type(value).__name__}")
        object.__setattr__(self, "_value", value)

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("Secret cannot be subclassed")

    def reveal(self) -> str:
        """The secret value. Call it at the last moment, at the one place that must send the value."""
        return self._value

    def __str__(self) -> str:
        return REDACTED

    def __repr__(self) -> str:
        return REDACTED

    def __format__(self, format_spec: str) -> str:
        # The spec is ignored on purpose: padding or truncating the marker could only mislead.
        return REDACTED

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode("utf-8"), other._value.encode("utf-8"))

    __hash__ = None  # type: ignore[assignment]

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialized; call reveal() where the value is needed")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialized; call reveal() where the value is needed")

    def __getstate__(self) -> NoReturn:
        raise TypeError("a Secret has no state to export; call reveal() where the value is needed")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Secret:
        return self
