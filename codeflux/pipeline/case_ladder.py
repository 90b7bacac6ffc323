"""Stage 7's input ladder: the rungs of a parameter's kind, the rules that put a value on one rung, codeflux's own
examples of each rung, and the recorder that classifies the arguments a repository's tests pass to its atoms.

**Standard library only, and self-contained**: this file's text *is* the program stage 7 runs in the task's box
(:func:`ladder_script` appends the few lines that run pytest with :class:`ArgumentRecorder`), so the classifier that
runs there is exactly the one the unit tests check here — no copy to drift — and it needs no tool from codeflux's
overlay. It imports nothing of codeflux; pytest (and Hypothesis, only to point its example database at ``$TMPDIR``)
are imported only by those appended lines, in the box.

**No Hypothesis at run time.** Hypothesis is a test-only dependency of codeflux (``[project.optional-dependencies]
test``), not a runtime one, so the rungs are defined by codeflux's own classification rules (:data:`RULES`, version
:data:`RULES_VERSION`) and the examples shown for each rung come from fixed deterministic generators here
(:func:`examples_of`) — each example is kept only when the classifier puts it on its rung. Adding Hypothesis (and its
dependencies) to codeflux's runtime for ``from_type`` would buy examples of the same classes and no extra
measurement: the gate reads the repository's tests' arguments, never codeflux's examples (which are never run). Even
where Hypothesis is installed beside codeflux (as a check tool for the box), codeflux's own interpreter does not
import it here: the pipeline package leans on ruff, radon and libcst only, and the examples stay the same whatever
Hypothesis version is installed.

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
import math
import os
import pathlib
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "LARGE_LENGTH",
    "RULES",
    "RULES_VERSION",
    "RUNGS",
    "ArgumentRecorder",
    "accepts",
    "examples_of",
    "ladder_of",
    "ladder_script",
    "rule_of",
    "rung_of",
    "shown",
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


# ─── codeflux's own examples (shown, never run) ────────────────────────────────────────────────────────────


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


def shown(value: object, *, limit: int = 60) -> str:
    """A short, deterministic text of an example value (long ones cut, with their length)."""
    if isinstance(value, str | bytes | list | tuple | set | dict) and len(value) >= 100:
        return f"{type(value).__name__} of {len(value)} {'characters' if isinstance(value, str) else 'items'}"
    if isinstance(value, list) and any(item is value for item in value):
        return "a list that contains itself"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"{'a negative' if value < 0 else 'an'} int of {value.bit_length()} bits"
    if isinstance(value, set | frozenset) and value:
        text = "{" + ", ".join(sorted(repr(item) for item in value)) + "}"  # never in hash order
        return text if len(text) <= limit else text[:limit - 1] + "…"
    text = repr(value)
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
    "def record_main(argv):\n"
    "    import json\n"
    "    import threading\n"
    "    import pytest\n"
    "    job = json.loads(argv[1])\n"
    "    arguments = list(argv[list(argv).index('--') + 1:])\n"
    "    checks = os.path.join(os.environ['TMPDIR'], 'codeflux-checks')\n"
    "    os.makedirs(checks, exist_ok=True)\n"
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
    "    report = {'exit_status': int(status), 'pytest': pytest.__version__, 'rules_version': RULES_VERSION,\n"
    "              'atoms': recorder.summary, 'outcomes': outcomes}\n"
    "    with open(os.path.join(checks, 'case-ladder.json'), 'w', encoding='utf-8') as handle:\n"
    "        json.dump(report, handle)\n"
    "    return int(status)\n"
    "\n\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(record_main(sys.argv))\n"
)
"""What :func:`ladder_script` appends: ``record_main(argv)``, run in the box with ``argv`` ``[-c, job JSON, --,
pytest's arguments…]``. It runs pytest with a plugin that sets :class:`ArgumentRecorder`'s profile hook only while
a test runs (setup, call and teardown; collection and imports are not slowed) and names that test, points Hypothesis's
example database (when Hypothesis is importable) at ``$TMPDIR/codeflux-checks/hypothesis`` once pytest has loaded its
plugins, and writes ``$TMPDIR/codeflux-checks/case-ladder.json``: pytest's status and version, the rules' version,
each test's outcome and the recorder's summary. It is text here, not code, because only the box may import pytest."""


def ladder_script() -> str:
    """The program stage 7 runs in the box: this file's text and :data:`_BOX_MAIN`."""
    return pathlib.Path(__file__).read_text(encoding="utf-8") + _BOX_MAIN
