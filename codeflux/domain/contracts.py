"""Atom contracts: what a plan declares about a function before it is written, and what its syntax tree shows.

A plan step declares the atoms it will add or change (:class:`DeclaredAtom`): a name (``calc.ops.add``, or
``add`` / ``Calc.mean`` inside a file the step names), the signature text, and the effects it may have, from
the closed set :class:`AtomEffect` (none: the atom is *pure*). Stage 5 (contracts) compares the diff's atoms
with those declarations; stage 10 (atoms) checks that atoms declared pure read nothing outside their
arguments. Everything here is pure: the caller hands in the module's source.

**The effect table** (:data:`EFFECT_TABLE`, version :data:`EFFECT_TABLE_VERSION`) infers effects from the
names a function calls or reads, resolved through the module's imports (``import os.path as p`` →
``p.exists`` is ``os.path.exists``; ``from datetime import datetime`` → ``datetime.now`` is
``datetime.datetime.now``). A resolved dotted name has an effect when it equals a table entry or starts with an
entry ending in ``.`` (a whole module: ``subprocess.``). Beside it:

* ``file`` — also the builtin ``open`` (unless shadowed), and any call of a pathlib-style method
  (:data:`FILE_METHODS`: ``read_text``, ``write_bytes``, ``mkdir``, …) whatever its receiver;
* ``env`` — any read of ``os.environ`` (not only calls);
* ``global-state`` — a ``global`` or ``nonlocal`` statement, and a write into a module-level name the
  function does not bind itself: assigning an item or attribute of it, or calling a mutating method on it
  (:data:`MUTATING_METHODS`: ``append``, ``update``, …).

What the table does NOT prove: effects reached through another function (a call into a helper or a library
that opens a file is not followed), through ``getattr``/``eval``/``importlib``, or through objects passed in.
It is a syntactic lower bound: an effect it finds is there; an effect it misses may be too.

**Module-level mutable state** (stage 10): a name bound at module level is *constant* when it is bound exactly
once, by an assignment (plain or annotated) whose value is immutable — a literal number, string, bytes,
boolean, ``None`` or ``...``, a tuple of immutable values, ``frozenset(...)`` of them, an arithmetic or boolean
combination of them, or a name of another constant — and no function of the module declares it ``global``.
Names bound by ``def``, ``class`` or ``import`` are code, not state. Every other module-level name (a list,
dict or set, a call's result, a name bound twice, by ``+=``, by ``for`` or ``with``) is *mutable*, whatever
its case: ``CACHE = {}`` is mutable, ``LIMIT = 10`` and ``limit = 10`` are constant.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "EFFECT_TABLE",
    "EFFECT_TABLE_VERSION",
    "FILE_METHODS",
    "MAX_ATOMS_PER_STEP",
    "MAX_SIGNATURE_CHARS",
    "MUTATING_METHODS",
    "AtomEffect",
    "AtomShape",
    "DeclaredAtom",
    "EffectUse",
    "ModuleFacts",
    "PurityFinding",
    "contract_hash",
    "documented_raises",
    "dotted_name",
    "effect_order",
    "inferred_effects",
    "module_facts",
    "purity_findings",
    "shape_of",
]

MAX_ATOMS_PER_STEP: Final = 50
MAX_SIGNATURE_CHARS: Final = 1000
_MAX_NAME_CHARS: Final = 200
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _refuse(reason: str) -> InvalidValueError:
    return InvalidValueError(kind="plan", reason=reason)


class AtomEffect(StrEnum):
    """What an atom may do beyond computing from its arguments; an atom declared with none is pure."""

    FILE = "file"
    NETWORK = "network"
    PROCESS = "process"
    ENV = "env"
    GLOBAL_STATE = "global-state"
    CLOCK = "clock"
    RANDOMNESS = "randomness"
    DYNAMIC_CODE = "dynamic-code"
    """Runs code made at run time (stage 30): ``eval``, ``exec``, ``compile``, ``importlib.import_module``."""
    DESERIALISATION = "deserialisation"
    """Loads data that can construct arbitrary objects: ``pickle``, ``marshal``, an unsafe ``yaml.load`` (stage 30)."""


def contract_hash(signature: str, effects: Iterable[AtomEffect | str]) -> str:
    """sha256 (hex) of a contract: ``signature`` with runs of whitespace made one space, and ``effects`` sorted."""
    document = {"signature": " ".join(signature.split()),
                "effects": sorted(str(getattr(effect, "value", effect)) for effect in effects)}
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def effect_order(effects: Iterable[AtomEffect]) -> tuple[AtomEffect, ...]:
    """``effects`` once each, in the enumeration's order (the canonical order stored and shown)."""
    chosen = set(effects)
    return tuple(effect for effect in AtomEffect if effect in chosen)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclaredAtom:
    """One function or method a plan step says it will add or change, declared before the code is written.

    ``name`` is dotted identifiers: the qualified name (``calc.ops.add``, ``calc.stats.Calc.mean``) or the name
    inside a file the step names (``add``, ``Calc.mean``). ``signature`` is the declared signature as text
    (``def add(a: int, b: int) -> int``). ``effects`` are the effects it may have, each once, in
    :class:`AtomEffect` order; empty means pure. :class:`InvalidValueError` for a value that does not fit.
    """

    name: str
    signature: str
    effects: tuple[AtomEffect, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or len(self.name) > _MAX_NAME_CHARS or not _NAME.fullmatch(self.name):
            raise _refuse(f"step.atoms name must be dotted identifiers of at most {_MAX_NAME_CHARS} characters")
        if not isinstance(self.signature, str) or not self.signature.strip() \
                or len(self.signature) > MAX_SIGNATURE_CHARS or "\x00" in self.signature:
            raise _refuse(f"step.atoms signature must be non-empty text of at most {MAX_SIGNATURE_CHARS} characters")
        if not isinstance(self.effects, tuple) or not all(isinstance(e, AtomEffect) for e in self.effects):
            raise _refuse("step.atoms effects must be among " + ", ".join(e.value for e in AtomEffect))
        if self.effects != effect_order(self.effects):
            raise _refuse("step.atoms effects are listed once each, in the order "
                          + ", ".join(e.value for e in AtomEffect))

    @property
    def pure(self) -> bool:
        return not self.effects

    @property
    def contract_hash(self) -> str:
        """The contract's identity (stage 6 recall): sha256 of its signature, whitespace collapsed, and its effects
        — the name as written is left out (``calc.ops.add`` and ``add`` inside calc/ops.py declare the same
        contract when their signatures and effects agree)."""
        return contract_hash(self.signature, self.effects)

    def to_document(self) -> dict[str, object]:
        return {"name": self.name, "signature": self.signature, "effects": [e.value for e in self.effects]}

    def describe(self) -> str:
        """One line: the signature and the effects in words (``pure`` for none)."""
        effects = "effects: " + ", ".join(e.value for e in self.effects) if self.effects else "pure (no effects)"
        return f"{self.name} — {self.signature} — {effects}"


# ─── the effect table ──────────────────────────────────────────────────────────────────────────────

EFFECT_TABLE_VERSION: Final = "1"
"""Bumped whenever :data:`EFFECT_TABLE`, :data:`FILE_METHODS` or :data:`MUTATING_METHODS` change (it is in the
evidence, so a verdict says which table decided it)."""

EFFECT_TABLE: Final[Mapping[AtomEffect, tuple[str, ...]]] = {
    AtomEffect.FILE: (
        "open", "io.open", "os.open", "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace", "os.mkdir",
        "os.makedirs", "os.rmdir", "os.removedirs", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat",
        "os.chmod", "os.chown", "os.link", "os.symlink", "os.readlink", "os.truncate", "os.utime", "os.fdopen",
        "os.path.exists", "os.path.lexists", "os.path.isfile", "os.path.isdir", "os.path.islink",
        "os.path.getsize", "os.path.getmtime", "os.path.getatime", "os.path.getctime", "os.path.realpath",
        "shutil.", "tempfile.", "glob.", "fileinput.", "pathlib.Path.cwd", "pathlib.Path.home",
    ),
    AtomEffect.NETWORK: (
        "socket.", "ssl.", "http.client.", "urllib.request.", "urllib3.", "requests.", "httpx.", "aiohttp.",
        "ftplib.", "smtplib.", "poplib.", "imaplib.", "xmlrpc.client.", "websocket.", "websockets.",
        "asyncio.open_connection", "asyncio.start_server",
    ),
    AtomEffect.PROCESS: (
        "subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.fork", "os.forkpty", "os.kill",
        "os.killpg", "os.posix_spawn", "os.posix_spawnp", "multiprocessing.", "pty.spawn",
        "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
    ),
    AtomEffect.ENV: ("os.environ", "os.getenv", "os.putenv", "os.unsetenv", "os.environb", "os.getenvb"),
    AtomEffect.CLOCK: (
        "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns", "time.perf_counter",
        "time.perf_counter_ns", "time.process_time", "time.process_time_ns", "time.thread_time", "time.localtime",
        "time.gmtime", "time.ctime", "time.asctime", "time.strftime", "time.sleep", "datetime.datetime.now",
        "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today", "asyncio.sleep",
    ),
    AtomEffect.RANDOMNESS: (
        "random.", "secrets.", "uuid.uuid1", "uuid.uuid4", "os.urandom", "os.getrandom", "numpy.random.",
    ),
}
"""Per effect, the dotted names (resolved through imports) that have it; an entry ending in ``.`` covers a
whole module, and ``os.exec``/``os.spawn`` cover every ``os.exec*``/``os.spawn*``."""

_PREFIX_ENTRIES: Final = frozenset({"os.exec", "os.spawn"})

FILE_METHODS: Final = frozenset({
    "read_text", "read_bytes", "write_text", "write_bytes", "mkdir", "unlink", "rmdir", "touch", "iterdir",
    "rglob", "symlink_to", "hardlink_to", "chmod", "lchmod",
})
"""Methods that touch the file system whatever the receiver (pathlib's)."""

MUTATING_METHODS: Final = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "add", "discard", "setdefault",
    "sort", "reverse", "appendleft", "extendleft", "popleft", "__setitem__", "__delitem__",
})
"""Methods that change the container they are called on (a write into module-level state when it is one)."""


def _effect_of_name(dotted: str) -> AtomEffect | None:
    for effect, entries in EFFECT_TABLE.items():
        for entry in entries:
            if dotted == entry or (entry.endswith(".") and dotted.startswith(entry)) \
                    or (entry in _PREFIX_ENTRIES and dotted.startswith(entry)) \
                    or (not entry.endswith(".") and dotted.startswith(entry + ".")):
                return effect
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectUse:
    """An effect found in an atom: which, on what line, and through what (``os.getenv``, ``global CACHE``)."""

    effect: AtomEffect
    line: int
    what: str

    def to_evidence(self) -> dict[str, object]:
        return {"effect": self.effect.value, "line": self.line, "what": self.what}


# ─── what a module binds ───────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleFacts:
    """A module's imports (local name → dotted target), its module-level names that are state (mutable), those
    that are constants, and those that are code (functions, classes, imports)."""

    imports: Mapping[str, str]
    mutable: frozenset[str]
    constants: frozenset[str]
    code: frozenset[str]
    tree: ast.Module


def _module_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking into ``if``/``try``/``with``/``for``/``while`` blocks (not into functions
    or classes)."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            yield from _module_statements(node.body)
            yield from _module_statements(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_statements(block)
            for handler in node.handlers:
                yield from _module_statements(handler.body)


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _target_names(item)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _immutable(value: ast.expr, constants: set[str]) -> bool:
    match value:
        case ast.Constant():
            return True
        case ast.Tuple(elts=items):
            return all(_immutable(item, constants) for item in items)
        case ast.UnaryOp(operand=operand):
            return _immutable(operand, constants)
        case ast.BinOp(left=left, right=right):
            return _immutable(left, constants) and _immutable(right, constants)
        case ast.BoolOp(values=values):
            return all(_immutable(item, constants) for item in values)
        case ast.Name(id=name):
            return name in constants
        case ast.Call(func=ast.Name(id="frozenset"), args=args, keywords=[]):
            return all(_immutable(arg, constants) or (isinstance(arg, ast.List | ast.Set | ast.Tuple)
                                                     and all(_immutable(item, constants) for item in arg.elts))
                       for arg in args)
    return False


_Bindings = dict[str, list[ast.expr | None]]


def _bind_imports(node: ast.Import | ast.ImportFrom, imports: dict[str, str], code: set[str]) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            head = alias.name.split(".")[0]
            imports[alias.asname or head] = alias.name if alias.asname is not None else head
            code.add(alias.asname or head)
        return
    module = "." * node.level + (node.module or "")
    for alias in node.names:
        if alias.name != "*":
            imports[alias.asname or alias.name] = f"{module}.{alias.name}"
            code.add(alias.asname or alias.name)


def _bind_values(node: ast.stmt, bindings: _Bindings) -> None:
    """Record what ``node`` binds at module level: the value for a single name, None for anything else."""
    match node:
        case ast.Assign(targets=targets, value=value):
            for target in targets:
                for name in _target_names(target):
                    bindings.setdefault(name, []).append(value if isinstance(target, ast.Name) else None)
        case ast.AnnAssign(target=ast.Name(id=name), value=value):
            bindings.setdefault(name, []).append(value)
        case ast.AugAssign(target=ast.Name(id=name)):
            bindings.setdefault(name, []).extend([None, None])
        case ast.For(target=target) | ast.AsyncFor(target=target):
            for name in _target_names(target):
                bindings.setdefault(name, []).append(None)
        case ast.With(items=items) | ast.AsyncWith(items=items):
            for item in items:
                for name in _target_names(item.optional_vars) if item.optional_vars is not None else ():
                    bindings.setdefault(name, []).append(None)


def _constants(bindings: _Bindings, declared_global: set[str]) -> set[str]:
    constants: set[str] = set()
    changed = True
    while changed:  # a constant may name another constant defined before or after it
        changed = False
        for name, values in bindings.items():
            if name in constants or name in declared_global or len(values) != 1:
                continue
            value = values[0]
            if value is not None and _immutable(value, constants):
                constants.add(name)
                changed = True
    return constants


def module_facts(source: str, *, filename: str = "<module>") -> ModuleFacts:
    """What ``source`` binds at module level (see the module docstring); :class:`SyntaxError` when it does not
    parse."""
    tree = ast.parse(source, filename=filename)
    imports: dict[str, str] = {}
    code: set[str] = set()
    bindings: _Bindings = {}
    for node in _module_statements(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            _bind_imports(node, imports, code)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            code.add(node.name)
        else:
            _bind_values(node, bindings)
    declared_global = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    constants = _constants(bindings, declared_global)
    mutable = (set(bindings) | declared_global) - constants - code
    return ModuleFacts(imports=imports, mutable=frozenset(mutable), constants=frozenset(constants),
                       code=frozenset(code - set(bindings)), tree=tree)


# ─── one function ──────────────────────────────────────────────────────────────────────────────────

_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef)


def _function_named(tree: ast.Module, local_name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    body: list[ast.stmt] = tree.body
    parts = local_name.split(".")
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        found: ast.stmt | None = None
        for node in body:
            if last and isinstance(node, _FUNCTIONS) and node.name == part:
                found = node  # the last definition wins, as at run time
            elif not last and isinstance(node, ast.ClassDef) and node.name == part:
                found = node
        if found is None:
            return None
        if last:
            return found if isinstance(found, _FUNCTIONS) else None
        body = found.body if isinstance(found, ast.ClassDef) else []
    return None


def _bound_locally(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name the function (nested functions and comprehensions included) binds: parameters, assignment
    targets, loop and ``with`` variables, imports, nested definitions — minus names it declares global."""
    names: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arguments):
            for argument in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
                if argument is not None:
                    names.add(argument.arg)
        elif (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del)) \
                or (isinstance(node, ast.ExceptHandler) and node.name):
            names.add(node.id if isinstance(node, ast.Name) else str(node.name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
    return names - declared


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or an attribute chain on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _resolve(dotted: str, imports: Mapping[str, str], local: set[str]) -> str | None:
    head, _, rest = dotted.partition(".")
    if head in local:
        return None
    if head in imports:
        target = imports[head]
        return f"{target}.{rest}" if rest else target
    return dotted if head == "open" and not rest else None


def _base_name(node: ast.expr) -> ast.Name | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node if isinstance(node, ast.Name) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Scope:
    """What resolving names inside one function needs: the module's facts, the names the function binds, and
    the module-level names it could write into."""

    facts: ModuleFacts
    local: set[str]
    module_names: set[str]

    def module_level(self, node: ast.expr) -> str | None:
        base = _base_name(node)
        return base.id if base is not None and base.id in self.module_names and base.id not in self.local else None

    def resolved(self, node: ast.expr) -> str | None:
        dotted = dotted_name(node)
        return None if dotted is None else _resolve(dotted, self.facts.imports, self.local)


def _call_effects(node: ast.Call, scope: _Scope) -> Iterator[tuple[AtomEffect, str]]:
    resolved = scope.resolved(node.func)
    effect = None if resolved is None else _effect_of_name(resolved)
    if effect is not None and resolved is not None:
        yield effect, resolved
    elif isinstance(node.func, ast.Attribute) and node.func.attr in FILE_METHODS:
        yield AtomEffect.FILE, f".{node.func.attr}()"
    if isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS \
            and (name := scope.module_level(node.func.value)) is not None:
        yield AtomEffect.GLOBAL_STATE, f"{name}.{node.func.attr}() changes module-level state"


def _node_effects(node: ast.AST, scope: _Scope) -> Iterator[tuple[AtomEffect, str]]:
    if isinstance(node, ast.Global | ast.Nonlocal):
        keyword = "global" if isinstance(node, ast.Global) else "nonlocal"
        yield AtomEffect.GLOBAL_STATE, f"{keyword} {', '.join(node.names)}"
    elif isinstance(node, ast.Call):
        yield from _call_effects(node, scope)
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        resolved = scope.resolved(node)
        if resolved is not None and (resolved in ("os.environ", "os.environb") or resolved.startswith("os.environ.")):
            yield AtomEffect.ENV, "os.environ"
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in scope.local:
        imported = scope.facts.imports.get(node.id)
        if imported in ("os.environ", "os.environb", "os.getenv"):
            yield AtomEffect.ENV, str(imported)
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript) and (name := scope.module_level(target)) is not None:
                yield AtomEffect.GLOBAL_STATE, f"writes into module-level {name}"


def inferred_effects(function: ast.FunctionDef | ast.AsyncFunctionDef, facts: ModuleFacts) -> tuple[EffectUse, ...]:
    """The effects the table finds in ``function`` (nested functions included), in line order."""
    scope = _Scope(facts=facts, local=_bound_locally(function), module_names=set(facts.mutable) | set(facts.constants))
    found: dict[tuple[AtomEffect, int, str], EffectUse] = {}
    for node in ast.walk(function):
        for effect, what in _node_effects(node, scope):
            line = getattr(node, "lineno", function.lineno)
            found.setdefault((effect, line, what), EffectUse(effect=effect, line=line, what=what))
    return tuple(sorted(found.values(), key=lambda use: (use.line, use.effect.value, use.what)))


@dataclass(frozen=True, slots=True, kw_only=True)
class PurityFinding:
    """Why an atom declared pure reads something outside its arguments."""

    line: int
    kind: str
    what: str

    def describe(self) -> str:
        return f"{self.kind} {self.what} (line {self.line})"


def purity_findings(function: ast.FunctionDef | ast.AsyncFunctionDef, facts: ModuleFacts) -> tuple[PurityFinding, ...]:
    """What in ``function`` reads outside its arguments: ``global``/``nonlocal``, reads of module-level mutable
    names it does not bind itself, and every effect of the table (I/O, environment, clock, randomness)."""
    local = _bound_locally(function)
    findings: list[PurityFinding] = []
    seen: set[tuple[int, str]] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in facts.mutable \
                and node.id not in local and (node.lineno, node.id) not in seen:
            seen.add((node.lineno, node.id))
            findings.append(PurityFinding(line=node.lineno, kind="reads module-level mutable", what=node.id))
    for use in inferred_effects(function, facts):
        kind = "declares" if use.what.startswith(("global ", "nonlocal ")) else f"has effect {use.effect.value}:"
        findings.append(PurityFinding(line=use.line, kind=kind, what=use.what))
    return tuple(sorted(findings, key=lambda f: (f.line, f.kind, f.what)))


# ─── the shape of a contract ───────────────────────────────────────────────────────────────────────

_RAISES_SECTION: Final = re.compile(r"^\s*Raises\s*:?\s*$")
_SPHINX_RAISES: Final = re.compile(r":raises?\s+([A-Za-z_][\w.]*)\s*:")
_GOOGLE_ENTRY: Final = re.compile(r"([A-Za-z_][\w.]*)\s*:")
_NUMPY_ENTRY: Final = re.compile(r"([A-Za-z_][\w.]*)\s*(:.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _underline(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) == {"-"}


def _section_raises(lines: list[str], start: int) -> tuple[list[str], int]:
    """The exception names of the ``Raises`` section whose header is ``lines[start]``, and where it ends."""
    header = _indent(lines[start])
    index = start + 1
    numpy = index < len(lines) and _underline(lines[index])
    index += 1 if numpy else 0
    names: list[str] = []
    entry: int | None = None
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if _indent(line) < header or (_indent(line) == header and not numpy):
            break
        if numpy:
            if index + 1 < len(lines) and _underline(lines[index + 1]):
                break  # the next section's header
            if _indent(line) == header:
                found = _NUMPY_ENTRY.fullmatch(line.strip())
                if found is None:
                    break
                names.append(found.group(1))
        else:
            entry = _indent(line) if entry is None else entry
            if _indent(line) == entry and (found := _GOOGLE_ENTRY.match(line.strip())) is not None:
                names.append(found.group(1))
        index += 1
    return names, index


def documented_raises(docstring: str | None) -> tuple[str, ...]:
    """The exception names a docstring documents: a Google ``Raises:`` section (``Error: when…`` lines), a
    NumPy ``Raises`` section (underlined) or Sphinx ``:raises Error:`` fields; in order, once each."""
    if not docstring:
        return ()
    names: list[str] = list(_SPHINX_RAISES.findall(docstring))
    lines = docstring.expandtabs().splitlines()
    index = 0
    while index < len(lines):
        if _RAISES_SECTION.match(lines[index]):
            found, index = _section_raises(lines, index)
            names.extend(found)
        else:
            index += 1
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomShape:
    """What a function's syntax tree states about its contract: each parameter's annotation (None when it has
    none; ``self``/``cls`` of a method are left out), the return annotation, the exceptions its docstring
    documents and those its body raises by name, and the effects the table infers."""

    parameters: tuple[tuple[str, str | None], ...]
    returns: str | None
    returns_required: bool
    documented_raises: tuple[str, ...]
    raised: tuple[str, ...]
    effects: tuple[EffectUse, ...]
    purity: tuple[PurityFinding, ...] = field(default=())

    @property
    def missing_annotations(self) -> tuple[str, ...]:
        missing = [f"parameter {name}" for name, annotation in self.parameters if annotation is None]
        if self.returns is None and self.returns_required:
            missing.append("return")
        return tuple(missing)

    @property
    def effect_kinds(self) -> tuple[AtomEffect, ...]:
        return effect_order(use.effect for use in self.effects)


def _raised_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    names: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            dotted = dotted_name(target)
            if dotted is not None:
                names.append(dotted)
    return tuple(dict.fromkeys(names))


def shape_of(facts: ModuleFacts, local_name: str, *, is_method: bool) -> AtomShape | None:
    """The contract shape of the function ``local_name`` (``Class.name`` for a method) in the module, or None
    when the module has no such function."""
    function = _function_named(facts.tree, local_name)
    if function is None:
        return None
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args]
    if arguments.vararg is not None:
        every.append(arguments.vararg)
    every.extend(arguments.kwonlyargs)
    if arguments.kwarg is not None:
        every.append(arguments.kwarg)
    decorators = {dotted_name(d) for d in function.decorator_list}
    static = "staticmethod" in decorators
    parameters = tuple((a.arg, None if a.annotation is None else ast.unparse(a.annotation)) for a in every
                       if not (is_method and not static and a.arg in ("self", "cls")))
    return AtomShape(
        parameters=parameters,
        returns=None if function.returns is None else ast.unparse(function.returns),
        returns_required=not (is_method and function.name == "__init__"),
        documented_raises=documented_raises(ast.get_docstring(function)),
        raised=_raised_names(function),
        effects=inferred_effects(function, facts),
        purity=purity_findings(function, facts),
    )
