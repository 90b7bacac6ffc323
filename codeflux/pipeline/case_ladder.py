"""Stage 7's input ladder: the rungs of a parameter's kind, the rules that put a value on one rung, the examples of
each rung — drawn with Hypothesis in the task's box, or codeflux's fixed ones — and the recorder that classifies the
arguments a repository's tests pass to its atoms.

**Standard library only, and self-contained**: this file's text *is* the program stage 7 runs in the task's box
(:func:`ladder_script` appends the few lines that run pytest with :class:`ArgumentRecorder` and then draw the
examples), so the classifier and the strategies that run there are exactly the ones the unit tests check here — no
copy to drift. It imports nothing of codeflux, and neither pytest nor Hypothesis: those are imported only by the
appended lines, in the box, which hand the Hypothesis module they imported to the functions here (the ``hypothesis``
and ``st`` parameters). codeflux's own interpreter never imports Hypothesis (a test-only dependency of codeflux, and
the pipeline leans on ruff, radon and libcst only); in the box it is the repository environment's, else codeflux's
tool overlay's, appended after site-packages.

**Examples drawn with Hypothesis** (:func:`draw_examples`, in the box, after the recording run). Per parameter of
each atom, the type is the imported atom's own annotation (``typing.get_type_hints``; decorators unwrapped), else —
when it has none or it cannot be resolved — the one the contract's kind names (:func:`hint_of_kind`: the plan's
declared ``int``, a class of that name in the atom's module). The ``typical`` rung is drawn from
``st.from_type(type)`` — which builds a repository's own classes and dataclasses from their annotations — and every
other rung from codeflux's own strategy for that class of values (:func:`rung_strategy`: ``0``/``""``/empty for
degenerate, the int and float edges, ``10**6``+ and ``10**4``-item sizes, a strategy of other types for wrong-type,
NaN, infinities, control characters, lone surrogates, ``..`` parts and self-containing lists for pathological;
paths are codeflux's on every rung, as ``from_type(Path)`` builds only ``Path('.')``). Each rung:
:data:`DRAW_MAX_EXAMPLES` values with ``@seed`` (the job's seed, recorded), no example database, no deadline, the
generate phase only, every value classified by the same :func:`rung_of` and kept only on its own rung (the others
are counted as dropped), at most :data:`DRAW_KEEP` kept (:func:`shown`: bounded text). A strategy that cannot be built
or drawn from (``ResolutionFailed``, a constructor raising) is reported for its rung; each parameter's draws stop at
:data:`DRAW_PARAMETER_S` and all of them at :data:`DRAW_TOTAL_S`. The examples are shown, never run, never counted.

**codeflux's fixed examples** (:func:`examples_of`: deterministic generators here, each kept only when the classifier
puts it on its rung) stand in wherever nothing was drawn: Hypothesis not importable in the box, a rung whose
strategy failed or whose draws all landed elsewhere.

**Kinds** are JSON objects derived from a parameter's annotation (:mod:`codeflux.pipeline.case_synthesis`):
``{"kind": K}`` for ``int``, ``float``, ``bool``, ``str``, ``bytes``, ``path``, ``none``, ``callable``, ``any``;
containers ``list``, ``tuple``, ``set``, ``sequence``, ``iterable`` with an optional ``"item"`` kind and ``dict`` with
optional ``"key"``/``"value"`` kinds; ``{"kind": "instance", "name": N}`` (a class named ``N`` in the value's type's
MRO); ``{"kind": "union", "of": [...]}`` (``Optional[X]`` is ``X | None``). The rungs (:data:`RUNGS`, in this order):
``typical``, ``degenerate``, ``boundary``, ``large``, ``wrong-type``, ``pathological`` — each kind has the ones its
values can reach (:func:`ladder_of`). :func:`rung_of` puts any value on exactly one rung of its kind's ladder,
deterministically, and never raises: a value whose own methods raise while it is looked at is ``pathological`` (or
``wrong-type`` where the kind has no pathological rung).
"""

from __future__ import annotations

import collections.abc
import contextlib
import importlib
import inspect
import io
import math
import os
import pathlib
import re
import signal
import string
import sys
import threading
import time
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any, Final

__all__ = [
    "DRAW_HOME",
    "DRAW_KEEP",
    "DRAW_MAX_EXAMPLES",
    "DRAW_PARAMETER_S",
    "DRAW_TOTAL_S",
    "LADDER_JOB_IN_CHECKS",
    "LADDER_LOADER_SCRIPT",
    "LADDER_SCRIPT_IN_CHECKS",
    "LARGE_LENGTH",
    "RULES",
    "RULES_VERSION",
    "RUNGS",
    "ArgumentRecorder",
    "DrawOverBudget",
    "NoStrategy",
    "accepts",
    "atom_function",
    "draw_atom",
    "draw_examples",
    "draw_parameter",
    "draw_rung",
    "examples_of",
    "hint_of_kind",
    "ladder_of",
    "ladder_script",
    "rule_of",
    "rung_of",
    "rung_strategy",
    "shown",
    "type_text",
]

RULES_VERSION: Final = "1"
RUNGS: Final = ("typical", "degenerate", "boundary", "large", "wrong-type", "pathological")
LARGE_LENGTH: Final = 10_000
"""A str, bytes or container of at least this many items is ``large``."""
_SCANNED: Final = 1000
"""Elements of a container looked at for the pathological rung (the first ones)."""
_INT_EDGES: Final = frozenset(edge for bits in (7, 8, 15, 16, 31, 32, 63, 64) for edge in (2**bits - 1, 2**bits))
_NASTY_TEXT: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff"
                                "\ud800-\udfff]")
_CONTAINERS: Final = ("list", "tuple", "set", "dict", "sequence", "iterable")

RULES: Final[Mapping[str, Mapping[str, str]]] = {
    "int": {"wrong-type": "not an int (a bool is not one)", "pathological": "more than 128 bits",
            "degenerate": "0", "boundary": "±1, or ±2**k or ±(2**k - 1) for k in 7, 8, 15, 16, 31, 32, 63, 64",
            "large": "|n| ≥ 10**6", "typical": "any other int"},
    "float": {"wrong-type": "not a float or int (a bool is not one)", "pathological": "nan or ±inf",
              "degenerate": "0.0 or -0.0",
              "boundary": "±1.0, ±epsilon, ±the largest float, or a non-zero |x| ≤ the smallest normal float",
              "large": "|x| ≥ 2**53 (integers no longer exact)", "typical": "any other finite float"},
    "bool": {"wrong-type": "not a bool", "degenerate": "False", "typical": "True"},
    "str": {"wrong-type": "not a str", "degenerate": "the empty string",
            "pathological": "a control character (other than tab, newline, carriage return), a zero-width or "
                            "bidirectional-override character, a byte-order mark or a lone surrogate",
            "large": f"at least {LARGE_LENGTH} characters",
            "boundary": "one character, only whitespace, surrounding whitespace, or non-ASCII",
            "typical": "any other str"},
    "bytes": {"wrong-type": "not bytes, bytearray or memoryview", "degenerate": "empty",
              "pathological": "not valid UTF-8", "large": f"at least {LARGE_LENGTH} bytes",
              "boundary": "one byte, only ASCII whitespace, or a NUL byte", "typical": "any other bytes"},
    "container": {"wrong-type": "not the annotated container", "degenerate": "empty",
                  "pathological": f"contains itself, a NaN, or (among its first {_SCANNED} items) one its item "
                                  "annotation rejects",
                  "large": f"at least {LARGE_LENGTH} items", "boundary": "exactly one item",
                  "typical": "2 or more items (an iterable without a length is typical)"},
    "path": {"wrong-type": "not an os.PathLike (a str is not one)", "degenerate": "'' or '.'",
             "pathological": "a NUL or control character, a '..' part, or longer than 4096 characters",
             "large": "at least 1024 characters or 32 parts",
             "boundary": "a filesystem root, a hidden part ('.name'), a space or non-ASCII",
             "typical": "any other path"},
    "none": {"degenerate": "None"},
    "instance": {"wrong-type": "its type has no class of the annotated name in its MRO",
                 "typical": "an instance of the annotated class (or a subclass)"},
    "callable": {"wrong-type": "not callable", "typical": "callable"},
}
"""What puts a value of each kind on each rung (the containers share ``container``); a value is checked against the
rungs in the order wrong-type, pathological, degenerate, boundary, large (str and bytes: degenerate, pathological,
large, boundary), and the first that holds is its rung."""

_LADDERS: Final[Mapping[str, tuple[str, ...]]] = {
    "int": RUNGS, "float": RUNGS, "str": RUNGS, "bytes": RUNGS, "path": RUNGS, "container": RUNGS,
    "bool": ("typical", "degenerate", "wrong-type"), "none": ("degenerate",),
    "instance": ("typical", "wrong-type"), "callable": ("typical", "wrong-type"), "any": (),
}


def _family(kind: Mapping[str, Any]) -> str:
    name = str(kind.get("kind", "any"))
    return "container" if name in _CONTAINERS else name


def ladder_of(kind: Mapping[str, Any]) -> tuple[str, ...]:
    """The rungs a value of ``kind`` can be on, in :data:`RUNGS` order (empty: no ladder, e.g. ``any``)."""
    if kind.get("kind") == "union":
        members = [ladder_of(member) for member in kind.get("of", ())]
        return tuple(rung for rung in RUNGS if any(rung in ladder for ladder in members))
    return _LADDERS.get(_family(kind), ())


def rule_of(kind: Mapping[str, Any], rung: str) -> str:
    """The rule that puts a value of ``kind`` on ``rung`` (a union's member rules joined)."""
    if kind.get("kind") == "union":
        found = [rule_of(member, rung) for member in kind.get("of", ()) if rung in ladder_of(member)]
        text = "; or ".join(dict.fromkeys(rule for rule in found if rule))
        return "matches no member of the union" if rung == "wrong-type" else text
    return RULES.get(_family(kind), {}).get(rung, "")


# ─── accepting and classifying ─────────────────────────────────────────────────────────────────────────────


def _mro_names(value: object) -> set[str]:
    return {klass.__name__ for klass in type(value).__mro__}


def accepts(kind: Mapping[str, Any], value: object) -> bool:
    """Whether ``value`` is of ``kind``'s type (a union: of any member's); may raise for a hostile value."""
    name = kind.get("kind")
    if name == "union":
        return any(accepts(member, value) for member in kind.get("of", ()))
    checks: dict[str, Any] = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "bytes": lambda v: isinstance(v, bytes | bytearray | memoryview),
        "list": lambda v: isinstance(v, list),
        "tuple": lambda v: isinstance(v, tuple),
        "set": lambda v: isinstance(v, collections.abc.Set),
        "dict": lambda v: isinstance(v, collections.abc.Mapping),
        "sequence": lambda v: isinstance(v, collections.abc.Sequence) and not isinstance(v, str | bytes | bytearray),
        "iterable": lambda v: isinstance(v, collections.abc.Iterable) and not isinstance(v, str | bytes | bytearray),
        "path": lambda v: isinstance(v, os.PathLike),
        "none": lambda v: v is None,
        "instance": lambda v: str(kind.get("name", "")) in _mro_names(v),
        "callable": callable,
    }
    check = checks.get(str(name))
    return True if check is None else bool(check(value))


def _int_rung(value: int) -> str:
    size = abs(value)
    if size.bit_length() > 128:
        return "pathological"
    if size == 0:
        return "degenerate"
    if size == 1 or size in _INT_EDGES:
        return "boundary"
    return "large" if size >= 10**6 else "typical"


def _float_rung(value: float) -> str:
    if isinstance(value, int):
        if abs(value).bit_length() > 1023:
            return "pathological"  # beyond the largest float
        value = float(value)
    if math.isnan(value) or math.isinf(value):
        return "pathological"
    size = abs(value)
    if size == 0.0:
        return "degenerate"
    if size in (1.0, sys.float_info.epsilon, sys.float_info.max) or size <= sys.float_info.min:
        return "boundary"
    return "large" if size >= 2.0**53 else "typical"


def _str_rung(value: str) -> str:
    if not value:
        return "degenerate"
    if _NASTY_TEXT.search(value):
        return "pathological"
    if len(value) >= LARGE_LENGTH:
        return "large"
    if len(value) == 1 or not value.strip() or value != value.strip() or not value.isascii():
        return "boundary"
    return "typical"


def _bytes_rung(value: bytes | bytearray | memoryview) -> str:
    data = bytes(value)
    if not data:
        return "degenerate"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "pathological"
    if len(data) >= LARGE_LENGTH:
        return "large"
    if len(data) == 1 or not data.strip() or b"\x00" in data:
        return "boundary"
    return "typical"


def _items(kind: Mapping[str, Any], value: object) -> list[tuple[Mapping[str, Any] | None, object]]:
    """The first items of a container with the kind each should have (None: not annotated)."""
    if isinstance(value, collections.abc.Mapping):
        pairs: list[tuple[Mapping[str, Any] | None, object]] = []
        for index, key in enumerate(value):
            if index >= _SCANNED:
                break
            pairs.append((kind.get("key"), key))
            pairs.append((kind.get("value"), value[key]))
        return pairs
    found: list[tuple[Mapping[str, Any] | None, object]] = []
    if isinstance(value, collections.abc.Collection):  # never consume an iterator to look at it
        for index, item in enumerate(value):
            if index >= _SCANNED:
                break
            found.append((kind.get("item"), item))
    return found


def _container_rung(kind: Mapping[str, Any], value: object) -> str:
    if not isinstance(value, collections.abc.Sized):
        return "typical"  # an iterator or generator: its length is unknown without consuming it
    for item_kind, item in _items(kind, value):
        if item is value or (isinstance(item, float) and math.isnan(item)):
            return "pathological"
        if item_kind is not None and not accepts(item_kind, item):
            return "pathological"
    size = len(value)
    if size == 0:
        return "degenerate"
    if size >= LARGE_LENGTH:
        return "large"
    return "boundary" if size == 1 else "typical"


def _path_rung(value: os.PathLike[Any]) -> str:
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    if text in ("", "."):
        return "degenerate"
    parts = [part for part in text.replace("\\", "/").split("/") if part]
    if _NASTY_TEXT.search(text) or ".." in parts or len(text) > 4096:
        return "pathological"
    if len(text) >= 1024 or len(parts) >= 32:
        return "large"
    if not parts or any(part.startswith(".") and part != "." for part in parts) or " " in text \
            or not text.isascii():
        return "boundary"
    return "typical"


def _member_rung(kind: Mapping[str, Any], value: object) -> str:
    """The rung of a value ``kind`` accepts."""
    family = _family(kind)
    if family == "int":
        return _int_rung(value)  # type: ignore[arg-type]
    if family == "float":
        return _float_rung(value)  # type: ignore[arg-type]
    if family == "bool":
        return "typical" if value else "degenerate"
    if family == "str":
        return _str_rung(value)  # type: ignore[arg-type]
    if family == "bytes":
        return _bytes_rung(value)  # type: ignore[arg-type]
    if family == "container":
        return _container_rung(kind, value)
    if family == "path":
        return _path_rung(value)  # type: ignore[arg-type]
    if family == "none":
        return "degenerate"
    return "typical"


def _fallback(ladder: tuple[str, ...]) -> str:
    for rung in ("pathological", "wrong-type"):
        if rung in ladder:
            return rung
    return ladder[0] if ladder else "typical"


def rung_of(kind: Mapping[str, Any], value: object) -> str:
    """The one rung of ``kind``'s ladder ``value`` is on (see the module docstring); never raises."""
    ladder = ladder_of(kind)
    try:
        members = list(kind.get("of", ())) if kind.get("kind") == "union" else [kind]
        for member in members:
            if accepts(member, value):
                rung = _member_rung(member, value)
                return rung if rung in ladder else _fallback(ladder)
        return "wrong-type" if "wrong-type" in ladder else _fallback(ladder)
    except Exception:  # a value whose own methods raise while it is looked at
        return _fallback(ladder)


# ─── codeflux's fixed examples (shown, never run) ────────────────────────────────────────────────────────────


_WRONG_POOL: Final[tuple[object, ...]] = ("1", 1.5, None, b"1", [1], {"k": 1}, 1, True, (1,),
                                          pathlib.PurePosixPath("data.txt"))


def _pick(table: Mapping[str, Sequence[object]], rung: str) -> list[object]:
    return list(table.get(rung, ()))


def _candidates(kind: Mapping[str, Any], rung: str) -> list[object]:
    family = _family(kind)
    if rung == "wrong-type":
        return list(_WRONG_POOL)
    if kind.get("kind") == "union":
        return [value for member in kind.get("of", ()) for value in _candidates(member, rung)]
    if family == "int":
        return _pick({"typical": [42, -7, 3], "degenerate": [0], "boundary": [1, -1, 2**31 - 1, 2**63],
                "large": [10**6, -(10**9), 10**12], "pathological": [2**200, -(10**50)]}, rung)
    if family == "float":
        return _pick({"typical": [3.14, -2.5, 0.1], "degenerate": [0.0, -0.0],
                "boundary": [1.0, -1.0, 5e-324, sys.float_info.max], "large": [1e16, -1e20],
                "pathological": [math.nan, math.inf, -math.inf]}, rung)
    if family == "bool":
        return _pick({"typical": [True], "degenerate": [False]}, rung)
    if family == "str":
        return _pick({"typical": ["hello", "a1 b2"], "degenerate": [""], "boundary": ["a", " ", " padded ", "é"],
                "large": ["x" * LARGE_LENGTH], "pathological": ["\x00", "a\u202eb", "\ud800"]}, rung)
    if family == "bytes":
        return _pick({"typical": [b"hello", b"\x01data"], "degenerate": [b""], "boundary": [b"a", b"\x00", b" "],
                "large": [b"x" * LARGE_LENGTH], "pathological": [b"\xff", b"\xc3", b"\x80abc"]}, rung)
    if family == "path":
        return _pick({"typical": [pathlib.PurePosixPath("data/input.txt"), pathlib.PurePosixPath("/srv/report.csv")],
                "degenerate": [pathlib.PurePosixPath("")],
                "boundary": [pathlib.PurePosixPath("/"), pathlib.PurePosixPath(".hidden"),
                             pathlib.PurePosixPath("my file.txt")],
                "large": [pathlib.PurePosixPath("/".join(["d"] * 40))],
                "pathological": [pathlib.PurePosixPath("../../etc/passwd"), pathlib.PurePosixPath("a\x00b")],
                }, rung)
    if family == "none":
        return [None] if rung == "degenerate" else []
    if family == "callable":
        return [len] if rung == "typical" else []
    if family == "container":
        return _container_candidates(kind, rung)
    return []


def _items_for(kind: Mapping[str, Any] | None, count: int) -> list[object]:
    """``count`` distinct items of ``kind`` (fewer when the kind has fewer), from codeflux's generators."""
    name = "any" if kind is None else _family(kind)
    if name in ("int", "float", "any"):
        return [index if name != "float" else index + 0.5 for index in range(count)]
    if name == "str":
        return [f"s{index}" for index in range(count)]
    if name == "bytes":
        return [f"s{index}".encode() for index in range(count)]
    pool = [value for rung in ("typical", "degenerate", "boundary") for value in _candidates(kind or {}, rung)]
    return list(dict.fromkeys(value for value in pool if isinstance(value, collections.abc.Hashable)))[:count] \
        or pool[:count]


def _built(kind: Mapping[str, Any], items: list[object]) -> object:
    name = kind.get("kind")
    if name == "dict":
        values = _items_for(kind.get("value"), max(len(items), 1)) or [None]
        return {key: values[index % len(values)] for index, key in enumerate(items)}
    if name == "tuple":
        return tuple(items)
    if name == "set":
        try:
            return set(items)
        except TypeError:
            return None
    return list(items)


def _container_candidates(kind: Mapping[str, Any], rung: str) -> list[object]:
    item_kind = kind.get("key") if kind.get("kind") == "dict" else kind.get("item")
    if rung == "typical":
        return [_built(kind, _items_for(item_kind, 3))]
    if rung == "degenerate":
        return [_built(kind, [])]
    if rung == "boundary":
        return [_built(kind, _items_for(item_kind, 1))]
    if rung == "large":
        return [_built(kind, _items_for(item_kind, LARGE_LENGTH))]
    if rung == "pathological":
        found: list[object] = [_built(kind, [*_items_for(item_kind, 1), math.nan])]
        if kind.get("kind") in ("list", "sequence", "iterable"):
            looped: list[object] = [1]
            looped.append(looped)
            found.append(looped)
        return found
    return []


_NO_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+")


def shown(value: object, *, limit: int = 60) -> str:
    """A short, deterministic text of an example value (long ones cut, with their length; no memory address)."""
    if isinstance(value, str | bytes | list | tuple | set | dict) and len(value) >= 100:
        return f"{type(value).__name__} of {len(value)} {'characters' if isinstance(value, str) else 'items'}"
    if isinstance(value, list) and any(item is value for item in value):
        return "a list that contains itself"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"{'a negative' if value < 0 else 'an'} int of {value.bit_length()} bits"
    if isinstance(value, set | frozenset) and value:
        text = "{" + ", ".join(sorted(repr(item) for item in value)) + "}"  # never in hash order
        return text if len(text) <= limit else text[:limit - 1] + "…"
    text = _NO_ADDRESS.sub("", repr(value))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def examples_of(kind: Mapping[str, Any], rung: str, *, count: int = 3) -> tuple[str, ...]:
    """Up to ``count`` examples of ``rung`` for ``kind``, as text: codeflux's own generated values that
    :func:`rung_of` puts on that rung (an instance of a named class is described, not built)."""
    if rung not in ladder_of(kind):
        return ()
    found = [shown(value) for value in _candidates(kind, rung) if rung_of(kind, value) == rung]
    if rung == "typical" and kind.get("kind") == "instance":
        found.insert(0, f"an instance of {kind.get('name')}")
    if kind.get("kind") == "union" and rung == "typical":
        found += [f"an instance of {member.get('name')}" for member in kind.get("of", ())
                  if member.get("kind") == "instance"]
    return tuple(dict.fromkeys(found))[:count]


# ─── examples drawn with Hypothesis (in the task's box) ─────────────────────────────────────────────────


DRAW_MAX_EXAMPLES: Final = 20
"""Hypothesis's ``max_examples`` per rung: the values generated, each classified and kept only on its own rung."""
DRAW_KEEP: Final = 3
"""Examples kept per rung (distinct texts, :func:`shown`)."""
DRAW_PARAMETER_S: Final = 2.0
"""Wall time one parameter's draws may take (a timer ends them; the rungs drawn by then are kept)."""
DRAW_TOTAL_S: Final = 20.0
"""Wall time all draws of one run may take; a parameter after that is not drawn (and a watchdog ends the process
10 s later)."""
DRAW_HOME: Final = "codeflux-hypothesis-home"
"""Hypothesis's home while drawing, in the task's TMPDIR: kept across the task's runs (its character tables take
seconds to build), never holding an example database (``database=None``)."""
_PATH_CHARACTERS: Final = string.ascii_lowercase + string.digits + "_-"
_LETTERS: Final = string.ascii_letters + string.digits
_OTHER_TYPES: Final = "one_of(text, integers, floats, none, booleans, binary, lists, dictionaries, tuples)"


class NoStrategy(ValueError):
    """A rung has nothing to draw from (its message says why)."""


class DrawOverBudget(BaseException):
    """Raised by the per-parameter timer wherever the draws are (a BaseException: Hypothesis lets it through)."""


# Where an exception raised by the timer would be "unraisable" (printed and dropped, the draws going on past their
# budget): a garbage-collector callback (Hypothesis registers one) or a finalizer. There the timer fires again a moment
# later instead, once that code has returned.
_SWALLOWED_IN: Final = frozenset({"gc_callback", "__del__"})
_RETRY_S: Final = 0.01


def _over_budget(signum: int, frame: FrameType | None) -> None:
    if frame is not None and frame.f_code.co_name in _SWALLOWED_IN:
        signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
        return
    raise DrawOverBudget


def hint_of_kind(kind: Mapping[str, Any], namespace: Mapping[str, Any]) -> Any:
    """A type to build ``from_type`` on when the atom's own annotation cannot be resolved (the contract's kind
    alone — the plan's declared signature, say): the builtin or ``collections.abc`` type the kind names (a
    container's items typed the same way), a union of its members', or the class of that name in ``namespace``
    (the atom's module); None when the kind names nothing to build."""
    name = kind.get("kind")
    simple: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str, "bytes": bytes,
                              "none": type(None), "path": pathlib.PurePosixPath,
                              "callable": collections.abc.Callable}
    if name in simple:
        return simple[str(name)]
    if name == "instance":
        found = namespace.get(str(kind.get("name")))
        return found if isinstance(found, type) else None
    if name == "union":
        members = [hint_of_kind(member, namespace) for member in kind.get("of", ())]
        if not members or any(member is None for member in members):
            return None
        return typing.Union.__getitem__(tuple(members))
    if name == "dict":
        key, value = (hint_of_kind(kind.get(part) or {}, namespace) for part in ("key", "value"))
        return dict if key is None or value is None else types.GenericAlias(dict, (key, value))
    generic: Any = {"list": list, "tuple": tuple, "set": set, "sequence": collections.abc.Sequence,
                    "iterable": collections.abc.Iterable}.get(str(name))
    if generic is None:
        return None
    item = hint_of_kind(kind.get("item") or {}, namespace)
    if item is None:
        return generic
    return types.GenericAlias(generic, (item, ...) if generic is tuple else (item,))


def type_text(hint: object) -> str:
    """How a type is named in the evidence (``int``, ``Point``, ``list[int]``, ``Optional[int]``), bounded."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    text = re.sub(r"\b(?:typing|collections\.abc|builtins|pathlib)\.", "", _NO_ADDRESS.sub("", repr(hint)))
    return text if len(text) <= 120 else text[:119] + "…"


def _signed(st: Any, magnitude: Any) -> Any:
    return st.tuples(st.booleans(), magnitude).map(lambda pair: -pair[1] if pair[0] else pair[1])


def _items_strategy(st: Any, kind: Mapping[str, Any] | None, namespace: Mapping[str, Any]) -> Any:
    """A container's items: ``from_type`` of the item kind's type (integers when it names none)."""
    hint = hint_of_kind(kind or {}, namespace)
    return st.integers() if hint is None else st.from_type(hint)


def _container_strategy(st: Any, kind: Mapping[str, Any], rung: str, namespace: Mapping[str, Any]
                        ) -> tuple[Any, str] | None:
    is_dict = kind.get("kind") == "dict"
    item_kind = kind.get("key") if is_dict else kind.get("item")
    items = _items_strategy(st, item_kind, namespace)
    if rung == "degenerate":
        return st.just(None).map(lambda _: _built(kind, [])), "an empty one"
    if rung == "boundary":
        if is_dict:
            values = _items_strategy(st, kind.get("value"), namespace)
            return st.dictionaries(items, values, min_size=1, max_size=1), "dictionaries(min_size=1, max_size=1)"
        return st.lists(items, min_size=1, max_size=1).map(lambda found: _built(kind, found)), "one item"
    if rung == "large":
        return (st.integers(min_value=0, max_value=3).map(lambda extra: _built(kind, _items_for(
            item_kind, LARGE_LENGTH + extra))), f"{LARGE_LENGTH} to {LARGE_LENGTH + 3} distinct items")
    if rung == "pathological":
        with_nan = st.lists(items, max_size=2).map(lambda found: _built(kind, [*found, math.nan]))
        if kind.get("kind") in ("list", "sequence", "iterable"):
            looped: list[object] = [1]
            looped.append(looped)
            return st.one_of(with_nan, st.just(looped)), "items and a NaN | a list that contains itself"
        return with_nan, "items and a NaN"
    return None


def _path_strategy(st: Any, rung: str, hint: object) -> tuple[Any, str] | None:
    making: Any = hint if isinstance(hint, type) and issubclass(hint, pathlib.PurePath) else pathlib.PurePosixPath
    segment = st.text(alphabet=_PATH_CHARACTERS, min_size=1, max_size=8)
    strategies: dict[str, tuple[Any, str]] = {
        "typical": (st.lists(segment, min_size=1, max_size=3).map(lambda parts: making(*parts)),
                    "1 to 3 parts of [a-z0-9_-] (Hypothesis's from_type(Path) builds only Path('.'))"),
        "degenerate": (st.sampled_from(["", "."]).map(making), "'' or '.'"),
        "boundary": (st.one_of(st.just(making("/")), segment.map(lambda part: making("." + part)),
                               segment.map(lambda part: making(part + " " + part))),
                     "'/', a hidden part or a space"),
        "large": (st.integers(min_value=32, max_value=40).map(lambda count: making("/".join(["d"] * count))),
                  "32 to 40 parts"),
        "pathological": (st.one_of(st.lists(segment, max_size=2).map(lambda parts: making(*parts, "..", "etc")),
                                   segment.map(lambda part: making(part + "\x00"))), "a '..' part or a NUL"),
    }
    return strategies.get(rung)


def _codeflux_strategy(st: Any, kind: Mapping[str, Any], rung: str, hint: object, namespace: Mapping[str, Any]
                       ) -> tuple[Any, str] | None:
    """codeflux's own strategy for ``rung`` of ``kind`` and its description (None: the kind has no such rung)."""
    if rung == "wrong-type":
        return st.one_of(st.text(alphabet=_LETTERS, max_size=4), st.integers(), st.floats(allow_nan=False), st.none(),
                         st.booleans(),
                         st.binary(max_size=4), st.lists(st.integers(), max_size=2),
                         st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
                         st.tuples(st.integers())), _OTHER_TYPES
    if kind.get("kind") == "union":
        found = [_codeflux_strategy(st, member, rung, hint_of_kind(member, namespace), namespace)
                 for member in kind.get("of", ()) if rung in ladder_of(member)]
        members = [item for item in found if item is not None]
        if not members:
            return None
        return st.one_of(*(strategy for strategy, _ in members)), " | ".join(text for _, text in members)
    family = _family(kind)
    letters = st.text(alphabet=_LETTERS, min_size=1, max_size=8)
    if family == "int":
        edges = sorted({sign * edge for edge in (1, *_INT_EDGES) for sign in (1, -1)})
        table: dict[str, tuple[Any, str]] = {
            "degenerate": (st.just(0), "just(0)"),
            "boundary": (st.sampled_from(edges), "sampled_from(±1, ±2**k, ±(2**k - 1) for k in 7, 8, 15, 16, 31, "
                                                 "32, 63, 64)"),
            "large": (_signed(st, st.integers(min_value=10**6, max_value=2**128)),
                      "±integers(min_value=10**6, max_value=2**128)"),
            "pathological": (_signed(st, st.integers(min_value=2**128, max_value=2**512)),
                             "±integers(min_value=2**128, max_value=2**512)")}
        return table.get(rung)
    if family == "float":
        info = sys.float_info
        table = {
            "degenerate": (st.sampled_from([0.0, -0.0]), "sampled_from(0.0, -0.0)"),
            "boundary": (st.one_of(st.sampled_from([1.0, -1.0, info.epsilon, -info.epsilon, info.max, -info.max]),
                                   st.floats(min_value=-info.min, max_value=info.min)),
                         "sampled_from(±1.0, ±epsilon, ±the largest float) | floats(|x| ≤ the smallest normal)"),
            "large": (_signed(st, st.floats(min_value=2.0**53, allow_infinity=False)),
                      "±floats(min_value=2**53, finite)"),
            "pathological": (st.sampled_from([math.nan, math.inf, -math.inf]), "sampled_from(nan, inf, -inf)")}
        return table.get(rung)
    if family == "str":
        table = {
            "degenerate": (st.just(""), "just('')"),
            "boundary": (st.one_of(st.characters(), st.text(alphabet=" \t\n", min_size=1, max_size=3),
                                   letters.map(lambda text: " " + text + " "),
                                   st.text(alphabet="éüßñøλ漢字", min_size=1, max_size=5)),
                         "one_of(characters(), whitespace only, ' padded ', non-ASCII text)"),
            "large": (letters.map(lambda text: text * (LARGE_LENGTH // len(text) + 1)),
                      f"text repeated to at least {LARGE_LENGTH} characters"),
            "pathological": (st.tuples(st.text(alphabet=_LETTERS, max_size=3),
                                       st.sampled_from(["\x00", "\x1b", "\u200b", "\u202e", "\ufeff", "\ud800"]),
                                       st.text(alphabet=_LETTERS, max_size=3)).map("".join),
                             "text around a NUL, ESC, zero-width space, bidi override, BOM or lone surrogate")}
        return table.get(rung)
    if family == "bytes":
        table = {
            "degenerate": (st.just(b""), "just(b'')"),
            "boundary": (st.one_of(st.binary(min_size=1, max_size=1), st.sampled_from([b" ", b"\t\n", b"a\x00b"])),
                         "binary(min_size=1, max_size=1) | whitespace | a NUL"),
            "large": (letters.map(lambda text: text.encode() * (LARGE_LENGTH // len(text) + 1)),
                      f"bytes repeated to at least {LARGE_LENGTH}"),
            "pathological": (st.tuples(st.binary(max_size=3), st.sampled_from([b"\xff", b"\xfe", b"\xc0\x80"]))
                             .map(b"".join), "binary ending in a byte UTF-8 never has")}
        return table.get(rung)
    if family == "bool":
        return (st.just(False), "just(False)") if rung == "degenerate" else None
    if family == "none":
        return (st.just(None), "just(None)") if rung == "degenerate" else None
    if family == "path":
        return _path_strategy(st, rung, hint)
    if family == "container":
        return _container_strategy(st, kind, rung, namespace)
    return None


def rung_strategy(st: Any, kind: Mapping[str, Any], rung: str, hint: object, namespace: Mapping[str, Any]
                  ) -> tuple[Any, str, str]:
    """The strategy ``rung`` of ``kind`` is drawn from, where it comes from (``from_type`` or ``codeflux``) and its
    description: ``typical`` is ``st.from_type(hint)`` (a path: codeflux's, Hypothesis builds no path but
    ``Path('.')``); every other rung is codeflux's own strategy for that class of values. ``st`` is
    ``hypothesis.strategies`` as the box imported it — codeflux's own interpreter never imports Hypothesis.
    Raises :class:`NoStrategy` when there is nothing to draw from (the typical rung of a type that cannot be
    resolved)."""
    if rung == "typical" and _family(kind) != "path":
        if hint is None:
            raise NoStrategy("no type to build from_type on: neither the annotation nor the contract's kind names "
                             "one codeflux can find")
        return st.from_type(hint), "from_type", f"from_type({type_text(hint)})"
    found = _codeflux_strategy(st, kind, rung, hint, namespace)
    if found is None:
        raise NoStrategy(f"codeflux has no strategy for the {rung} rung of this kind")
    return found[0], "codeflux", found[1]


def draw_rung(hypothesis: Any, strategy: Any, kind: Mapping[str, Any], rung: str, *, seed: int,
              max_examples: int = DRAW_MAX_EXAMPLES, keep: int = DRAW_KEEP) -> dict[str, Any]:
    """Up to ``keep`` distinct examples (:func:`shown`) of ``rung`` drawn from ``strategy``: ``max_examples``
    values generated by Hypothesis (``hypothesis`` is the module the box imported) with ``@seed(seed)``, no example
    database, no deadline, the generate phase only, every health check off — the same seed gives the same values.
    Each value is classified by :func:`rung_of`; one that is not on ``rung`` is dropped (counted)."""
    kept: list[str] = []
    counts = {"drawn": 0, "dropped": 0}

    def body(value: object) -> None:
        if len(kept) >= keep:
            return
        counts["drawn"] += 1
        if rung_of(kind, value) != rung:
            counts["dropped"] += 1
            return
        try:
            text = shown(value)
        except Exception:
            text = f"<a {type(value).__name__} whose repr raised>"
        if text not in kept:
            kept.append(text)

    settings = hypothesis.settings(database=None, max_examples=max_examples, deadline=None, derandomize=False,
                                   phases=(hypothesis.Phase.generate,), verbosity=hypothesis.Verbosity.quiet,
                                   suppress_health_check=list(hypothesis.HealthCheck), report_multiple_bugs=False)
    test = hypothesis.seed(seed)(settings(hypothesis.given(strategy)(body)))
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        test()
    return {"examples": kept, **counts}


def _module_of(path: str, name: str, root: str) -> Any:
    """The module whose file is ``path`` (already imported), else ``name`` imported; or why not."""
    for candidate in list(sys.modules.values()):
        try:
            file = getattr(candidate, "__file__", None)
            if isinstance(file, str) and os.path.realpath(file) == path:
                return candidate
        except Exception:  # noqa: S112 - a module object whose attributes raise is not the one looked for
            continue
    for folder in (os.path.join(root, "src"), root):
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    except (Exception, SystemExit) as error:
        return f"importing {name} raised {type(error).__name__}"


def atom_function(atom: Mapping[str, Any], root: str) -> tuple[Any, Mapping[str, Any]] | str:
    """The function of ``atom`` (decorators unwrapped; a static or class method's function, a property's accessor
    defined at the atom's line) and its module's
    namespace — from the module the tests already imported (found by its file), else imported by name with the
    repository (and ``src``) on ``sys.path``; or why not."""
    name = str(atom.get("module", ""))
    module = _module_of(os.path.realpath(os.path.join(root, str(atom["path"]))), name, root)
    if isinstance(module, str):
        return module
    owner: Any = module
    parts = str(atom["local"]).split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
    try:
        raw = inspect.getattr_static(owner, parts[-1])
    except AttributeError:
        return f"{atom['local']} is not reachable by name from {name}"
    if isinstance(raw, staticmethod | classmethod):
        raw = raw.__func__
    if isinstance(raw, property):  # the accessor defined at the atom's line (a setter shares the getter's name)
        accessors = [found for found in (raw.fget, raw.fset, raw.fdel) if found is not None]
        raw = next((found for found in accessors if getattr(getattr(found, "__code__", None), "co_firstlineno", None)
                    == atom.get("line")), accessors[0] if accessors else raw)
    try:
        function = inspect.unwrap(raw)
    except ValueError:
        function = raw
    if not callable(function):
        return f"{atom['local']} is not a function in {name}"
    namespace = getattr(function, "__globals__", None)
    return function, namespace if isinstance(namespace, dict) else vars(module)


def draw_parameter(hypothesis: Any, parameter: Mapping[str, Any], hint: object, namespace: Mapping[str, Any], *,
                   seed: int, into: dict[str, Any]) -> None:
    """Draw every rung of ``parameter``'s kind into ``into`` (rung → its examples, ``source``, ``strategy``, counts
    — or ``problem``: the strategy could not be built or drawn from, e.g. ``from_type`` raising ResolutionFailed)."""
    kind = parameter["kind"]
    for rung in ladder_of(kind):
        entry: dict[str, Any] = {}
        into[rung] = entry
        try:
            strategy, source, description = rung_strategy(hypothesis.strategies, kind, rung, hint, namespace)
            entry.update(source=source, strategy=description)
            entry.update(draw_rung(hypothesis, strategy, kind, rung, seed=seed))
        except NoStrategy as error:
            entry["problem"] = str(error)[:300]
        except Exception as error:
            entry["problem"] = f"{type(error).__name__}: {error}"[:300]


def draw_atom(hypothesis: Any, atom: Mapping[str, Any], root: str, *, seed: int, stop: float) -> dict[str, Any]:
    """Per parameter of ``atom``: the type its examples are built on — its annotation (``typing.get_type_hints`` on
    the imported function), else the contract's kind (:func:`hint_of_kind`) — and each rung's draws
    (:func:`draw_parameter`), each parameter within :data:`DRAW_PARAMETER_S` (a timer, in the main thread) and none
    started after ``stop`` (a :func:`time.monotonic` instant)."""
    found = atom_function(atom, root)
    if isinstance(found, str):
        return {"problem": found}
    function, namespace = found
    hints_problem = None
    try:
        hints = typing.get_type_hints(function)
    except Exception as error:
        hints, hints_problem = {}, f"its annotations could not be resolved ({type(error).__name__}: {error})"[:300]
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    params: dict[str, Any] = {}
    for parameter in atom.get("params", ()):
        name = str(parameter["name"])
        if time.monotonic() > stop:
            params[name] = {"problem": f"not drawn: the run's {DRAW_TOTAL_S:g} s for drawing were used"}
            continue
        hint = hints.get(name)
        entry: dict[str, Any] = {"hint_from": "annotation"}
        if hint is None:
            hint = hint_of_kind(parameter["kind"], namespace)
            entry["hint_from"] = "contract"
            if hints_problem is not None:
                entry["hint_problem"] = hints_problem
        entry["hint"] = None if hint is None else type_text(hint)
        rungs: dict[str, Any] = {}
        entry["rungs"] = rungs
        params[name] = entry
        previous = signal.signal(signal.SIGALRM, _over_budget) if timed else None
        try:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, DRAW_PARAMETER_S)
            draw_parameter(hypothesis, parameter, hint, namespace, seed=seed, into=rungs)
        except DrawOverBudget:
            entry["problem"] = f"its draws took longer than {DRAW_PARAMETER_S:g} s and were stopped"
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
    return {"params": params}


def _may_draw_text(kind: Mapping[str, Any]) -> bool:
    """Whether ``from_type`` of ``kind``'s type may draw text: a ``str``, or a class (its fields' types are unknown
    here), in it anywhere."""
    name = kind.get("kind")
    if name in ("str", "instance"):
        return True
    parts = [*kind.get("of", ()), *(kind.get(part) for part in ("item", "key", "value"))]
    return any(_may_draw_text(part) for part in parts if isinstance(part, Mapping))


def draw_examples(hypothesis: Any, job: Mapping[str, Any], root: str,
                  write: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every atom of ``job`` drawn (:func:`draw_atom`) with the job's seed, ``write`` called with the document after
    each atom (what a watchdog's exit leaves is the atoms before it). When a type may draw text, Hypothesis's table
    of the characters text can hold is built first (seconds the first time in a Hypothesis home, which would
    otherwise land in one parameter's budget), within the run's :data:`DRAW_TOTAL_S`."""
    seed = int(job["seed"])
    document: dict[str, Any] = {"hypothesis": str(hypothesis.__version__), "seed": seed,
                                "max_examples": DRAW_MAX_EXAMPLES, "keep": DRAW_KEEP, "atoms": {}}
    started = time.monotonic()
    stop = started + DRAW_TOTAL_S
    if any(_may_draw_text(parameter["kind"]) for atom in job.get("atoms", ()) for parameter in atom.get("params", ())):
        try:  # text's table of encodable characters: built once per Hypothesis home (seconds), then read from there
            hypothesis.strategies.text().validate()
        except Exception as error:
            document["warm_up_problem"] = f"{type(error).__name__}: {error}"[:300]
        document["warm_up_s"] = round(time.monotonic() - started, 3)
    for atom in job.get("atoms", ()):
        try:
            document["atoms"][str(atom["key"])] = draw_atom(hypothesis, atom, root, seed=seed, stop=stop)
        except Exception as error:
            document["atoms"][str(atom["key"])] = {"problem": f"{type(error).__name__}: {error}"[:300]}
        write(document)
    write(document)
    return document


# ─── the recorder (runs in the task's box) ────────────────────────────────────────────────────────────────


class ArgumentRecorder:
    """The arguments the running test (``test``, set by the box's pytest plugin) passes to each of the job's atoms,
    classified — a ``sys.setprofile`` hook (:meth:`profile`) limited to the atoms' code objects (file, first line,
    name). Each call of an atom while a test runs, directly or through other code, has each parameter's value put on
    a rung by :func:`rung_of` (a ``*args``/``**kwargs`` parameter: each of its first 50 values); a direct recursive
    call is not recorded again, and a generator or coroutine only when it starts. Values never leave the process:
    :attr:`summary` holds per atom its calls and tests, and per parameter and rung the count and up to
    ``max_tests`` test ids."""

    def __init__(self, job: Mapping[str, Any], root: str) -> None:
        max_tests = int(job.get("max_tests", 3))
        self.atoms: dict[tuple[str, int, str], Mapping[str, Any]] = {}
        for atom in job.get("atoms", ()):
            path = os.path.realpath(os.path.join(root, str(atom["path"])))
            self.atoms[(path, int(atom["line"]), str(atom["name"]))] = atom
        self.names = {name for _, _, name in self.atoms}
        self.cache: dict[object, Mapping[str, Any] | None] = {}
        self.first_resume: dict[object, int] = {}
        self.test: str | None = None
        self.max_tests = max_tests
        self.summary: dict[str, dict[str, Any]] = {}

    def _atom_of(self, code: Any) -> Mapping[str, Any] | None:
        if code in self.cache:
            return self.cache[code]
        found = None
        if code.co_name in self.names:
            found = self.atoms.get((os.path.realpath(code.co_filename), code.co_firstlineno, code.co_name))
        self.cache[code] = found
        return found

    def _entered(self, frame: Any) -> bool:
        """Whether this ``call`` event starts the function (a generator or coroutine resumes with one too)."""
        code = frame.f_code
        if not code.co_flags & 0x2A0:  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
            return True
        if code not in self.first_resume:
            import dis  # noqa: PLC0415 - only for generator atoms

            offsets = [ins.offset for ins in dis.get_instructions(code) if ins.opname == "RESUME"]
            self.first_resume[code] = offsets[0] if offsets else -1
        return bool(frame.f_lasti < 0 or frame.f_lasti == self.first_resume[code])

    def profile(self, frame: Any, event: str, arg: object) -> None:
        if event != "call" or self.test is None:
            return
        try:
            atom = self._atom_of(frame.f_code)
            if atom is None or not self._entered(frame):
                return
            caller = frame.f_back
            if caller is not None and caller.f_code is frame.f_code:
                return  # a recursive call of the atom: the test's argument was recorded at the outer call
            self._record(atom, frame.f_locals)
        except Exception:  # noqa: S110 - recording must never change what the test sees
            pass

    def _record(self, atom: Mapping[str, Any], local: Mapping[str, Any]) -> None:
        entry = self.summary.setdefault(str(atom["key"]), {"calls": 0, "tests": [], "params": {}})
        entry["calls"] += 1
        if self.test not in entry["tests"] and len(entry["tests"]) < 50:
            entry["tests"].append(self.test)
        for parameter in atom.get("params", ()):
            name = str(parameter["name"])
            if name not in local:
                continue
            value = local[name]
            star = parameter.get("star", "")
            values = list(value)[:50] if star == "*" else list(value.values())[:50] if star == "**" else [value]
            rungs = entry["params"].setdefault(name, {})
            for each in values:
                rung = rung_of(parameter["kind"], each)
                seen = rungs.setdefault(rung, {"count": 0, "tests": []})
                seen["count"] += 1
                if self.test not in seen["tests"] and len(seen["tests"]) < self.max_tests:
                    seen["tests"].append(self.test)


_BOX_MAIN: Final = (
    "\n\n# ─── appended by ladder_script(): the run in the box ───\n"
    "def write_json(path, document):\n"
    "    import json\n"
    "    with open(path + '.part', 'w', encoding='utf-8') as handle:\n"
    "        json.dump(document, handle)\n"
    "    os.replace(path + '.part', path)\n"
    "def record_tests(job, arguments, checks):\n"
    "    import pytest\n"
    "    recorder = ArgumentRecorder(job, os.getcwd())\n"
    "    outcomes = {}\n"
    "    class CodefluxCaseLadder:\n"
    "        @pytest.hookimpl(tryfirst=True)\n"
    "        def pytest_configure(self, config):\n"
    "            try:\n"
    "                from hypothesis.configuration import set_hypothesis_home_dir\n"
    "            except ImportError:\n"
    "                return\n"
    "            set_hypothesis_home_dir(os.path.join(checks, 'hypothesis'))\n"
    "        @pytest.hookimpl(hookwrapper=True)\n"
    "        def pytest_runtest_protocol(self, item, nextitem):\n"
    "            recorder.test = item.nodeid\n"
    "            sys.setprofile(recorder.profile)\n"
    "            threading.setprofile(recorder.profile)\n"
    "            try:\n"
    "                yield\n"
    "            finally:\n"
    "                sys.setprofile(None)\n"
    "                threading.setprofile(None)\n"
    "                recorder.test = None\n"
    "        def pytest_runtest_logreport(self, report):\n"
    "            if report.failed:\n"
    "                outcomes[report.nodeid] = 'failed'\n"
    "            elif report.when == 'call' or report.skipped:\n"
    "                outcomes.setdefault(report.nodeid, report.outcome)\n"
    "    status = pytest.main(arguments, plugins=[CodefluxCaseLadder()])\n"
    "    write_json(os.path.join(checks, 'case-ladder.json'), {\n"
    "        'exit_status': int(status), 'pytest': pytest.__version__, 'rules_version': RULES_VERSION,\n"
    "        'atoms': recorder.summary, 'outcomes': outcomes})\n"
    "    return int(status)\n"
    "def draw_in_box(job, checks, status):\n"
    "    path = os.path.join(checks, 'case-examples.json')\n"
    "    try:\n"
    "        from hypothesis.configuration import set_hypothesis_home_dir\n"
    "        set_hypothesis_home_dir(os.path.join(os.environ['TMPDIR'], DRAW_HOME))\n"
    "        import hypothesis\n"
    "        import hypothesis.strategies\n"
    "    except Exception as error:\n"
    "        write_json(path, {'hypothesis': None, 'seed': job.get('seed'),\n"
    "                          'problem': 'Hypothesis is not importable in the box (' + type(error).__name__ + ')'})\n"
    "        return\n"
    "    watchdog = threading.Timer(DRAW_TOTAL_S + 10.0, os._exit, (status,))\n"
    "    watchdog.daemon = True\n"
    "    watchdog.start()\n"
    "    draw_examples(hypothesis, job, os.getcwd(), lambda document: write_json(path, document))\n"
    "    watchdog.cancel()\n"
    "def record_main(argv):\n"
    "    import importlib.util\n"
    "    import json\n"
    "    import site\n"
    "    overlay = argv[1]\n"
    "    own_hypothesis = importlib.util.find_spec('hypothesis') is not None\n"
    "    if overlay != '-' and os.path.isdir(overlay):\n"
    "        site.addsitedir(overlay)\n"
    "    checks = os.path.join(os.environ['TMPDIR'], 'codeflux-checks')\n"
    "    job = json.loads(LADDER_JOB_TEXT)\n"
    "    arguments = [str(argument) for argument in job.get('pytest_args', ())]\n"
    "    os.environ['HYPOTHESIS_STORAGE_DIRECTORY'] = os.path.join(checks, 'hypothesis')\n"
    "    status = 0\n"
    "    if job.get('record', True):\n"
    "        plugins_off = [] if own_hypothesis else ['-p', 'no:hypothesispytest']\n"
    "        status = record_tests(job, plugins_off + arguments, checks)\n"
    "    if job.get('draw'):\n"
    "        draw_in_box(job, checks, status)\n"
    "    return status\n"
    "\n\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(record_main(sys.argv))\n"
)
"""What :func:`ladder_script` appends: ``record_main(argv)``, run in the box by :data:`LADDER_LOADER_SCRIPT`
with ``argv`` ``[script, overlay or -]`` and the job it verified (``LADDER_JOB_TEXT``: its atoms, ``seed``,
``record``, ``draw`` and ``pytest_args``: pytest's arguments, the test ids among them). It appends codeflux's tool
overlay (when given) after site-packages — its Hypothesis pytest plugin is not loaded when the repository's
environment lacks Hypothesis, as in ``OVERLAY_SITE_SCRIPT`` of :mod:`~codeflux.pipeline.tool_overlay` — and points
Hypothesis's home (its example database) at ``$TMPDIR/codeflux-checks/hypothesis``. With ``record`` (the default) it
runs pytest with a plugin that sets :class:`ArgumentRecorder`'s profile hook only while a test runs (setup, call and
teardown; collection and imports are not slowed) and names that test, and writes
``$TMPDIR/codeflux-checks/case-ladder.json``: pytest's status and version, the rules' version, each test's outcome and
the recorder's summary. Then, with ``draw``, it imports Hypothesis and draws each rung's examples
(:func:`draw_examples`; a watchdog ends the process :data:`DRAW_TOTAL_S` + 10 s later) into
``$TMPDIR/codeflux-checks/case-examples.json`` — rewritten after each atom — or writes there that Hypothesis is not
importable. It is text here, not code, because only the box may import pytest and Hypothesis."""


LADDER_SCRIPT_IN_CHECKS: Final = "case-ladder.py"
"""The script's file name in ``$TMPDIR/codeflux-checks`` (codeflux writes it there before the run)."""
LADDER_JOB_IN_CHECKS: Final = "case-ladder-job.json"
LADDER_LOADER_SCRIPT: Final = (
    "import hashlib, os, sys\n"
    "checks = os.path.join(os.environ['TMPDIR'], 'codeflux-checks')\n"
    "texts = []\n"
    "for name, digest in (('" + LADDER_SCRIPT_IN_CHECKS + "', sys.argv[1]),\n"
    "                     ('" + LADDER_JOB_IN_CHECKS + "', sys.argv[2])):\n"
    "    with open(os.path.join(checks, name), 'rb') as handle:\n"
    "        texts.append(handle.read())\n"
    "    if hashlib.sha256(texts[-1]).hexdigest() != digest:\n"
    "        sys.exit('codeflux-case-ladder: ' + name + ' is not the one codeflux wrote')\n"
    "path = os.path.join(checks, '" + LADDER_SCRIPT_IN_CHECKS + "')\n"
    "sys.argv = [path, sys.argv[3]]\n"
    "exec(compile(texts[0], path, 'exec'), {'__name__': '__main__', '__file__': path, '__builtins__': __builtins__,\n"
    "                                       'LADDER_JOB_TEXT': texts[1]})\n"
)
"""The program the run's argv holds (``<python> -c LADDER_LOADER_SCRIPT <script sha256> <job sha256> <overlay or
->``): it runs :func:`ladder_script`'s text from ``$TMPDIR/codeflux-checks`` with the job there, only when both
files' SHA-256 are the ones in the argv — the script (this file and more) and the job (its test ids) are too long for
an argv, and the argv still names exactly what runs (and another job is another request)."""


def ladder_script() -> str:
    """The program stage 7 runs in the box: this file's text and :data:`_BOX_MAIN`."""
    return pathlib.Path(__file__).read_text(encoding="utf-8") + _BOX_MAIN
