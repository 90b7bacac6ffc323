"""Operation identity: the exact thing an approval is bound to.

An :class:`Operation` holds every input that decides what would happen: the task, the tool, the
arguments in the tool descriptor's order (as ``[name, value]`` pairs, so an omitted optional argument
cannot shift another into its place), the working directory (relative to the worktree, or — chosen only by
the pipeline — ``$TMPDIR/<path>`` under the task's TMPDIR: fixed text naming no host path, so the same for
every task; see :func:`normalize_working_directory`), the declared
effects, for programs the resolved executable (absolute path and content sha256, pinned so a swapped
binary is another operation), environment overrides and the digest of stdin.

Its identity is the sha256 of its canonical JSON::

    {"args":[[name,value],…],"cwd":".","effects":[…sorted],"env":[[k,v],…sorted],
     "executable":{"path":…,"sha256":…}|null,"schema":1,"stdin_sha256":…|null,
     "task_id":"tsk_…","tool":"…"}

serialized with sorted keys, ASCII-only escapes and no spaces. JSON strings are quoted and escaped and
every array and object is delimited, so the encoding is injective: two different operations cannot
produce the same bytes (the reference system concatenated fields with NUL separators and no lengths,
so ``args [x, "network"]`` + ``effects [subprocess]`` collided with ``args [x]`` + ``effects [network,
subprocess]``). Value types are distinct in JSON too: ``"1"``, ``1`` and ``true`` differ.

NUL bytes and non-Unicode text are refused (:class:`UnsafeArgumentError`) anywhere in an operation:
NUL truncates C strings, so what runs would differ from what was approved.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Self

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.tools import ArgumentValue, BoundToolRequest, refuse_unsafe_text

__all__ = [
    "OPERATION_IDENTITY_SCHEMA",
    "ExecutablePin",
    "Operation",
    "OperationIdentity",
    "canonical_json_text",
    "canonical_operation_json",
    "canonical_operation_json_and_identity",
    "derive_operation_identity",
    "describe_operation",
    "in_task_temp_directory",
    "normalize_working_directory",
    "normalize_worktree_directory",
    "operation_document",
    "parse_canonical_operation_json",
    "task_temp_relative",
]

OPERATION_IDENTITY_SCHEMA: Final = 1
"""Bumped whenever the canonical form changes; old identities then never match new operations."""

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_ARGUMENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_EFFECT_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
TASK_TEMP_DIRECTORY: Final = "$TMPDIR"
"""The first component of a working directory under the task's TMPDIR (the worker resolves it there)."""
_MAX_DIRECTORY_BYTES: Final = 4096
_TOP_KEYS: Final = frozenset(
    {"schema", "task_id", "tool", "args", "cwd", "effects", "executable", "env", "stdin_sha256"}
)


def _require(condition: bool, *, kind: str, reason: str) -> None:
    if not condition:
        raise InvalidValueError(kind=kind, reason=reason)


def _require_sha256(value: str, *, kind: str) -> None:
    _require(_SHA256_HEX.fullmatch(value) is not None, kind=kind, reason="must be 64 lowercase hex digits")


def normalize_worktree_directory(path: str) -> str:
    """``path`` as a normalized worktree-relative directory: ``.`` for the root, ``a/b`` otherwise.

    Empty and ``.`` components collapse (``./a//b/`` is ``a/b``). Refused with
    :class:`InvalidValueError`: an empty string, absolute paths, backslashes, drive letters, any ``..``
    component (never resolved lexically: ``a/..`` through a symlinked ``a`` is not the root) and any
    ``.git`` component.
    """
    refuse_unsafe_text(path, field="cwd")
    kind = "operation working directory"
    _require(path != "", kind=kind, reason="must not be empty; use '.' for the worktree root")
    _require(not path.startswith("/"), kind=kind, reason="must be relative to the worktree")
    _require("\\" not in path, kind=kind, reason="must use '/' separators")
    _require(_DRIVE.match(path) is None, kind=kind, reason="must not start with a drive letter")
    parts = [part for part in path.split("/") if part not in {"", "."}]
    _require(".." not in parts, kind=kind, reason="must not contain '..'")
    _require(
        all(part.lower() != ".git" for part in parts), kind=kind, reason="must not enter .git"
    )
    return "/".join(parts) or "."


def normalize_working_directory(path: str) -> str:
    """An operation's working directory: a worktree directory (:func:`normalize_worktree_directory`) or
    ``$TMPDIR/<path>``, a directory under the task's TMPDIR.

    The second form is fixed text (it names no host path, so the identity of the same command is the same for
    every task) and is kept exactly as written: ``<path>`` must be plain — non-empty components, no ``.`` or
    ``..``, no backslash, no control character, not absolute, at most 4096 bytes. Any other first component
    that starts with ``$`` is refused (no other variable is expanded), and so is ``$TMPDIR`` alone. Refused
    with :class:`InvalidValueError` (:class:`UnsafeArgumentError` for NUL or non-Unicode text)."""
    refuse_unsafe_text(path, field="cwd")
    kind = "operation working directory"
    first, separator, rest = path.partition("/")
    if first != TASK_TEMP_DIRECTORY:
        _require(not path.startswith("$"), kind=kind,
                 reason=f"names a variable; only {TASK_TEMP_DIRECTORY}/<path> is a directory outside the worktree")
        return normalize_worktree_directory(path)
    _require(bool(separator) and rest != "", kind=kind,
             reason=f"{TASK_TEMP_DIRECTORY} needs a plain relative path after it ({TASK_TEMP_DIRECTORY}/<path>)")
    _require(len(path.encode("utf-8")) <= _MAX_DIRECTORY_BYTES, kind=kind,
             reason=f"is longer than {_MAX_DIRECTORY_BYTES} bytes")
    _require(_CONTROL.search(path) is None, kind=kind, reason="contains a control character")
    _require("\\" not in path, kind=kind, reason="must use '/' separators")
    parts = rest.split("/")
    _require(".." not in parts, kind=kind, reason=f"must not contain '..' (it would leave {TASK_TEMP_DIRECTORY})")
    _require(all(part not in ("", ".") for part in parts), kind=kind,
             reason=f"must be a plain relative path under {TASK_TEMP_DIRECTORY} (no empty or '.' component)")
    return path


def in_task_temp_directory(relative: str) -> str:
    """The working directory text of ``relative`` (a plain relative path) under the task's TMPDIR."""
    return normalize_working_directory(f"{TASK_TEMP_DIRECTORY}/{relative}")


def task_temp_relative(cwd: str) -> tuple[str, ...] | None:
    """The components under the task's TMPDIR that the working directory ``cwd`` names (validated by
    :func:`normalize_working_directory`); None for a worktree directory."""
    normal = normalize_working_directory(cwd)
    first, _, rest = normal.partition("/")
    return tuple(rest.split("/")) if first == TASK_TEMP_DIRECTORY else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutablePin:
    """The program a command resolved to: its absolute real path and the sha256 of its content."""

    path: str
    sha256: str

    def __post_init__(self) -> None:
        refuse_unsafe_text(self.path, field="executable.path")
        _require(self.path.startswith("/"), kind="executable path", reason="must be absolute")
        _require_sha256(self.sha256, kind="executable sha256")


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationIdentity:
    """The sha256 (lowercase hex) of an operation's canonical JSON; written ``op_<hex>``."""

    digest: str

    def __post_init__(self) -> None:
        _require_sha256(self.digest, kind="operation identity")

    @classmethod
    def parse(cls, text: str) -> Self:
        """``op_<64 hex>`` back into an identity; :class:`InvalidValueError` otherwise."""
        prefix, separator, digest = text.partition("_")
        _require(prefix == "op" and bool(separator), kind="operation identity", reason="must start with op_")
        return cls(digest=digest)

    def __str__(self) -> str:
        return f"op_{self.digest}"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Operation:
    """Every input that decides what an operation does; equal operations have equal identities.

    Construction normalizes what has one meaning but several spellings: ``cwd`` (see
    :func:`normalize_working_directory`), ``effects`` (sorted, duplicates dropped: it is a set) and
    ``env`` (sorted by name). Argument order is kept: it is the descriptor's order and part of the
    identity. Repeated argument or environment names are refused as ambiguous.

    Equality tells value types apart (Python's ``1 == True`` would otherwise make two operations with
    different identities compare equal).
    """

    task_id: TaskId
    tool: str
    arguments: tuple[tuple[str, ArgumentValue], ...]
    cwd: str = "."
    effects: tuple[str, ...] = ()
    executable: ExecutablePin | None = None
    env: tuple[tuple[str, str], ...] = ()
    stdin_sha256: str | None = None

    def __post_init__(self) -> None:
        refuse_unsafe_text(self.tool, field="tool")
        _require(_TOOL_NAME.fullmatch(self.tool) is not None, kind="operation tool", reason="bad name")
        _check_arguments(self.arguments)
        for effect in self.effects:
            refuse_unsafe_text(effect, field="effects")
            _require(_EFFECT_NAME.fullmatch(effect) is not None, kind="operation effect", reason="bad name")
        _check_env(self.env)
        if self.stdin_sha256 is not None:
            _require_sha256(self.stdin_sha256, kind="stdin sha256")
        # Frozen dataclasses set normalized fields through object.__setattr__ in __post_init__.
        object.__setattr__(self, "cwd", normalize_working_directory(self.cwd))
        object.__setattr__(self, "effects", tuple(sorted(set(self.effects))))
        object.__setattr__(self, "env", tuple(sorted(self.env)))

    def _comparison_key(self) -> tuple[object, ...]:
        typed = tuple((name, type(value).__name__, value) for name, value in self.arguments)
        return (self.task_id, self.tool, typed, self.cwd, self.effects, self.executable, self.env,
                self.stdin_sha256)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Operation):
            return NotImplemented
        return self._comparison_key() == other._comparison_key()

    def __hash__(self) -> int:
        return hash(self._comparison_key())


def _check_arguments(arguments: tuple[tuple[str, ArgumentValue], ...]) -> None:
    names = [name for name, _ in arguments]
    _require(len(set(names)) == len(names), kind="operation arguments", reason="repeat a name")
    for name, value in arguments:
        refuse_unsafe_text(name, field="argument name")
        _require(_ARGUMENT_NAME.fullmatch(name) is not None, kind="operation argument", reason="bad name")
        _check_value(name, value)


def _check_value(name: str, value: object) -> None:
    # Exactly str, int (bool included: JSON keeps them apart) and tuple[str, ...]; everything else is refused.
    if isinstance(value, str):
        refuse_unsafe_text(value, field=f"args.{name}")
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidValueError(kind="operation argument", reason=f"{name}[{index}] is not text")
            refuse_unsafe_text(item, field=f"args.{name}[{index}]")
    elif not isinstance(value, int):  # int includes bool, both allowed
        raise InvalidValueError(
            kind="operation argument",
            reason=f"{name} must be text, an integer, a boolean or a tuple of text",
        )


def _check_env(env: tuple[tuple[str, str], ...]) -> None:
    names = [name for name, _ in env]
    _require(len(set(names)) == len(names), kind="operation environment", reason="repeats a name")
    for name, value in env:
        refuse_unsafe_text(name, field="env name")
        _require(_ENV_NAME.fullmatch(name) is not None, kind="operation environment", reason="bad name")
        refuse_unsafe_text(value, field=f"env.{name}")


def _json_value(value: ArgumentValue) -> object:
    return list(value) if isinstance(value, tuple) else value


def canonical_operation_json(operation: Operation) -> str:
    """The canonical JSON text of ``operation`` (ASCII only; see the module docstring)."""
    return canonical_json_text(operation_document(operation))


def canonical_json_text(document: Mapping[str, object]) -> str:
    """``document`` in the canonical spelling: sorted keys, ASCII-only escapes, no spaces, no NaN."""
    return json.dumps(document, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def operation_document(operation: Operation) -> dict[str, object]:
    """The canonical document of ``operation`` before serialization (a fresh dict each call)."""
    executable = operation.executable
    return {
        "schema": OPERATION_IDENTITY_SCHEMA,
        "task_id": str(operation.task_id),
        "tool": operation.tool,
        "args": [[name, _json_value(value)] for name, value in operation.arguments],
        "cwd": operation.cwd,
        "effects": list(operation.effects),
        "executable": None if executable is None else {"path": executable.path, "sha256": executable.sha256},
        "env": [[name, value] for name, value in operation.env],
        "stdin_sha256": operation.stdin_sha256,
    }


def derive_operation_identity(operation: Operation) -> OperationIdentity:
    """sha256 of the canonical JSON of ``operation``."""
    return canonical_operation_json_and_identity(operation)[1]


def canonical_operation_json_and_identity(operation: Operation) -> tuple[str, OperationIdentity]:
    """:func:`canonical_operation_json` and :func:`derive_operation_identity` of ``operation`` from one
    serialisation (the identity is the sha256 of exactly the returned text)."""
    canonical = canonical_operation_json(operation)
    return canonical, OperationIdentity(digest=hashlib.sha256(canonical.encode("ascii")).hexdigest())


def describe_operation(
    request: BoundToolRequest,
    *,
    task_id: TaskId,
    executable: ExecutablePin | None = None,
    env: Mapping[str, str] | None = None,
    stdin_sha256: str | None = None,
    working_directory: str | None = None,
) -> Operation:
    """The operation a bound request would perform in ``task_id``'s worktree.

    Tool, argument order, working directory and effects come from the request's descriptor, never from
    the model. ``executable`` is required exactly for tools that run a program (``run_command``): the
    caller resolves argv[0] to a real path and hashes it before the identity is taken, so an approval
    pins that binary. ``env`` holds coordinator-chosen overrides only. ``working_directory`` is the
    coordinator's choice too, never the model's: the pipeline runs a check on the base revision in a
    scratch copy under the task's TMPDIR (``$TMPDIR/<path>``; only programs may run elsewhere than the
    worktree root). Its shape is checked here, before any identity is taken
    (:func:`normalize_working_directory`).
    """
    descriptor = request.descriptor
    if working_directory not in (None, descriptor.working_directory) and not descriptor.runs_program:
        raise InvalidValueError(kind="operation", reason=f"{descriptor.name} runs in the worktree root only")
    if working_directory is not None:
        working_directory = normalize_working_directory(working_directory)
    if descriptor.runs_program and executable is None:
        raise InvalidValueError(kind="operation", reason=f"{descriptor.name} needs the resolved executable")
    if not descriptor.runs_program and executable is not None:
        raise InvalidValueError(kind="operation", reason=f"{descriptor.name} runs no program")
    return Operation(
        task_id=task_id,
        tool=descriptor.name.value,
        arguments=tuple((argument.name, argument.value) for argument in request.arguments),
        cwd=descriptor.working_directory if working_directory is None else working_directory,
        effects=tuple(effect.value for effect in descriptor.effects),
        executable=executable,
        env=tuple((env or {}).items()),
        stdin_sha256=stdin_sha256,
    )


def parse_canonical_operation_json(text: str) -> Operation:
    """The operation whose canonical JSON is exactly ``text``; :class:`InvalidValueError` otherwise.

    Duplicate keys, floats, unknown or missing keys, a foreign schema and any non-canonical spelling
    (spaces, key order, escapes) are refused, so ``canonical_operation_json(parse(t)) == t`` always.
    """
    kind = "canonical operation json"
    try:
        document = json.loads(text, object_pairs_hook=_refuse_duplicate_keys, parse_float=_refuse_float,
                              parse_constant=_refuse_float)
    except (ValueError, RecursionError) as error:
        raise InvalidValueError(kind=kind, reason=f"not valid JSON ({type(error).__name__})") from None
    _require(isinstance(document, dict) and set(document) == _TOP_KEYS, kind=kind, reason="wrong keys")
    _require(document["schema"] == OPERATION_IDENTITY_SCHEMA and type(document["schema"]) is int,
             kind=kind, reason="unsupported schema")
    operation = Operation(
        task_id=TaskId.parse(_text(document["task_id"], kind)),
        tool=_text(document["tool"], kind),
        arguments=tuple(_parse_argument(pair, kind) for pair in _list(document["args"], kind)),
        cwd=_text(document["cwd"], kind),
        effects=tuple(_text(effect, kind) for effect in _list(document["effects"], kind)),
        executable=_parse_executable(document["executable"], kind),
        env=tuple(_parse_env_pair(pair, kind) for pair in _list(document["env"], kind)),
        stdin_sha256=None if document["stdin_sha256"] is None else _text(document["stdin_sha256"], kind),
    )
    _require(canonical_operation_json(operation) == text, kind=kind, reason="not in canonical form")
    return operation


def _refuse_duplicate_keys(pairs: Iterable[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("duplicate key")
        result[key] = value
    return result


def _refuse_float(text: str) -> object:
    raise ValueError("floats are not operation values")


def _text(value: object, kind: str) -> str:
    if not isinstance(value, str):
        raise InvalidValueError(kind=kind, reason="expected a string")
    return value


def _list(value: object, kind: str) -> list[object]:
    if not isinstance(value, list):
        raise InvalidValueError(kind=kind, reason="expected an array")
    return value


def _parse_argument(pair: object, kind: str) -> tuple[str, ArgumentValue]:
    items = _list(pair, kind)
    _require(len(items) == 2, kind=kind, reason="an argument is a [name, value] pair")
    name, value = _text(items[0], kind), items[1]
    if isinstance(value, list):
        return name, tuple(_text(item, kind) for item in value)
    if isinstance(value, str | int):  # int includes bool
        return name, value
    raise InvalidValueError(kind=kind, reason="unsupported argument value")


def _parse_env_pair(pair: object, kind: str) -> tuple[str, str]:
    items = _list(pair, kind)
    _require(len(items) == 2, kind=kind, reason="an environment entry is a [name, value] pair")
    return _text(items[0], kind), _text(items[1], kind)


def _parse_executable(value: object, kind: str) -> ExecutablePin | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"path", "sha256"}:
        raise InvalidValueError(kind=kind, reason="executable is {path, sha256} or null")
    return ExecutablePin(path=_text(value["path"], kind), sha256=_text(value["sha256"], kind))
