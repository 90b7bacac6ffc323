"""The tool catalog: what the model may ask for, and the binding of its raw arguments to a descriptor.

Each :class:`ToolDescriptor` fixes a tool's ordered arguments (name, type, required, size limits), its
declared effects, its default capability, its working directory and its limits (timeout, output cap).
The model supplies argument *values* only. Everything that decides authority — working directory,
effects, timeout, capability — comes from the descriptor, so a request cannot carry a ``cwd``, a
``timeout``, an ``effects`` list or a "purpose" that lowers its class: such names are unknown arguments
and refused.

:func:`bind_tool_request` turns a model's ``{name: value}`` object into a :class:`BoundToolRequest`:
arguments validated against their specs and put in the descriptor's order (the order the operation
identity hashes), omitted optional arguments left out, an explicit ``null`` for an optional argument
read as omitted. Argument values are exactly one of ``str``, ``int`` (not ``bool``), ``bool`` or a
tuple of ``str`` (an argv); floats, nested objects and anything else are refused.

Refusals are typed: :class:`ToolRequestInvalidError` (unknown tool or argument, missing argument, wrong
type, too large, invalid value) and :class:`UnsafeArgumentError` (a NUL byte, or text that is not valid
Unicode and so could not be written, hashed or shown faithfully).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final, TypeAlias, assert_never

from codeflux.domain.capabilities import Capability
from codeflux.domain.errors import InvalidValueError, ToolRequestInvalidError, UnsafeArgumentError

__all__ = [
    "TOOL_CATALOG",
    "ArgumentSpec",
    "ArgumentType",
    "ArgumentValue",
    "BoundArgument",
    "BoundToolRequest",
    "Effect",
    "ToolDescriptor",
    "ToolLimits",
    "ToolName",
    "ToolRequestProblem",
    "bind_tool_request",
    "parse_tool_name",
    "refuse_unsafe_text",
    "tool_descriptor",
]

ArgumentValue: TypeAlias = str | int | bool | tuple[str, ...]
"""The only argument value types: text, integer, boolean, argv (a tuple of text)."""

KIB: Final = 1024
MIB: Final = 1024 * KIB
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_NAME_SHOWN = 64


class ToolName(StrEnum):
    """The closed set of tools the model may request."""

    READ_FILE = "read_file"
    LIST_DIRECTORY = "list_directory"
    GLOB = "glob"
    GREP = "grep"
    WRITE_FILE = "write_file"
    EDIT_FILE = "edit_file"
    APPLY_PATCH = "apply_patch"
    DELETE_FILE = "delete_file"
    INSPECT_DIFF = "inspect_diff"
    GIT_STATUS = "git_status"
    GIT_LOG = "git_log"
    RUN_COMMAND = "run_command"


class ArgumentType(StrEnum):
    """What an argument holds; classification reads ``path`` and ``glob`` arguments as worktree paths."""

    PATH = "path"  # a worktree-relative path
    GLOB = "glob"  # a worktree-relative path pattern
    TEXT = "text"  # free text: file content, a search pattern, a patch
    SHA256 = "sha256"  # 64 lowercase hex digits
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ARGV = "argv"  # a non-empty array of text; element 0 is the program


class Effect(StrEnum):
    """What a tool declares it does; hashed into the operation identity, never taken from a request."""

    REPOSITORY_READ = "repository-read"
    WORKTREE_WRITE = "worktree-write"
    SUBPROCESS = "subprocess"


class ToolRequestProblem(StrEnum):
    """Why :func:`bind_tool_request` refused (``ToolRequestInvalidError.problem``)."""

    UNKNOWN_TOOL = "unknown-tool"
    UNKNOWN_ARGUMENT = "unknown-argument"
    MISSING_ARGUMENT = "missing-argument"
    WRONG_TYPE = "wrong-type"
    TOO_LARGE = "too-large"
    INVALID_VALUE = "invalid-value"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgumentSpec:
    """One argument of a tool: its name, type, whether it is required, and its bounds.

    ``max_bytes`` bounds text by its UTF-8 length (for an argv, the sum over its elements);
    ``min_bytes`` rejects empty text where empty means nothing; ``max_items`` bounds an argv's length;
    ``min_value``/``max_value`` bound integers.
    """

    name: str
    type: ArgumentType
    required: bool
    description: str
    max_bytes: int = 4 * KIB
    min_bytes: int = 0
    max_items: int = 0
    min_value: int = 0
    max_value: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolLimits:
    """Limits the worker enforces; chosen by the descriptor, never by the request."""

    timeout_seconds: int
    output_cap_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDescriptor:
    """Everything about a tool that the model cannot choose.

    ``working_directory`` is relative to the task worktree (``.`` is its root). ``runs_program`` marks
    tools whose operation identity must pin the resolved executable (path and content sha256).
    """

    name: ToolName
    description: str
    arguments: tuple[ArgumentSpec, ...]
    effects: frozenset[Effect]
    default_capability: Capability
    limits: ToolLimits
    working_directory: str = "."
    runs_program: bool = False

    def __post_init__(self) -> None:
        names = [spec.name for spec in self.arguments]
        if len(set(names)) != len(names):
            raise InvalidValueError(kind="tool descriptor", reason=f"{self.name} repeats an argument name")

    def argument(self, name: str) -> ArgumentSpec | None:
        """The spec named ``name``, or None."""
        for spec in self.arguments:
            if spec.name == name:
                return spec
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundArgument:
    """One validated argument value, named as in its spec."""

    name: str
    value: ArgumentValue


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundToolRequest:
    """A request that fits its descriptor: arguments validated and in the descriptor's order."""

    descriptor: ToolDescriptor
    arguments: tuple[BoundArgument, ...]

    @property
    def tool(self) -> ToolName:
        return self.descriptor.name

    def value(self, name: str) -> ArgumentValue | None:
        """The bound value of ``name``; None when the argument was omitted."""
        for argument in self.arguments:
            if argument.name == name:
                return argument.value
        return None

    def argv(self) -> tuple[str, ...]:
        """The ``argv`` argument of ``run_command``; empty for every other tool."""
        value = self.value("argv")
        return value if isinstance(value, tuple) else ()

    def typed_values(self) -> tuple[tuple[ArgumentSpec, ArgumentValue], ...]:
        """Each bound value with its spec, in the descriptor's order."""
        specs = {spec.name: spec for spec in self.descriptor.arguments}
        return tuple((specs[argument.name], argument.value) for argument in self.arguments)


def _text(name: str, type_: ArgumentType, description: str, **bounds: int) -> ArgumentSpec:
    return ArgumentSpec(name=name, type=type_, required=True, description=description, **bounds)


def _optional(spec: ArgumentSpec) -> ArgumentSpec:
    return ArgumentSpec(
        name=spec.name,
        type=spec.type,
        required=False,
        description=spec.description,
        max_bytes=spec.max_bytes,
        min_bytes=spec.min_bytes,
        max_items=spec.max_items,
        min_value=spec.min_value,
        max_value=spec.max_value,
    )


def _path(description: str = "a path relative to the task worktree") -> ArgumentSpec:
    return _text("path", ArgumentType.PATH, description, max_bytes=4 * KIB, min_bytes=1)


def _integer(name: str, description: str, *, low: int, high: int) -> ArgumentSpec:
    return ArgumentSpec(
        name=name,
        type=ArgumentType.INTEGER,
        required=False,
        description=description,
        min_value=low,
        max_value=high,
    )


def _flag(name: str, description: str) -> ArgumentSpec:
    return ArgumentSpec(name=name, type=ArgumentType.BOOLEAN, required=False, description=description)


_READ: Final = frozenset({Effect.REPOSITORY_READ})
_WRITE: Final = frozenset({Effect.WORKTREE_WRITE})
_QUICK: Final = 30


def _descriptor(
    name: ToolName,
    description: str,
    arguments: tuple[ArgumentSpec, ...],
    *,
    writes: bool,
    timeout: int = _QUICK,
    output: int = 256 * KIB,
) -> ToolDescriptor:
    return ToolDescriptor(
        name=name,
        description=description,
        arguments=arguments,
        effects=_WRITE if writes else _READ,
        default_capability=Capability.TASK_WRITE if writes else Capability.READ,
        limits=ToolLimits(timeout_seconds=timeout, output_cap_bytes=output),
    )


def _build_catalog() -> Mapping[ToolName, ToolDescriptor]:
    optional_path = _optional(_path("a directory or file relative to the task worktree (default: root)"))
    entries = [
        _descriptor(
            ToolName.READ_FILE,
            "Read a text file of the task worktree.",
            (
                _path(),
                _integer("start_line", "first line to return (1-based)", low=1, high=10_000_000),
                _integer("line_count", "how many lines to return", low=1, high=100_000),
            ),
            writes=False,
            output=512 * KIB,
        ),
        _descriptor(
            ToolName.LIST_DIRECTORY,
            "List a directory of the task worktree.",
            (optional_path, _flag("recursive", "descend into sub-directories")),
            writes=False,
        ),
        _descriptor(
            ToolName.GLOB,
            "Find files of the task worktree whose paths match a glob pattern.",
            (_text("pattern", ArgumentType.GLOB, "a glob such as src/**/*.py", max_bytes=KIB, min_bytes=1),
             optional_path),
            writes=False,
        ),
        _descriptor(
            ToolName.GREP,
            "Search file contents of the task worktree for a regular expression.",
            (
                _text("pattern", ArgumentType.TEXT, "a regular expression", max_bytes=KIB, min_bytes=1),
                optional_path,
                _optional(_text("glob", ArgumentType.GLOB, "only files matching this glob", max_bytes=KIB,
                                min_bytes=1)),
                _flag("ignore_case", "match case-insensitively"),
                _flag("fixed_string", "treat the pattern as literal text"),
                _integer("max_results", "stop after this many matches", low=1, high=10_000),
            ),
            writes=False,
            timeout=60,
            output=512 * KIB,
        ),
        _descriptor(
            ToolName.WRITE_FILE,
            "Create a file, or replace one whose current content has the given sha256.",
            (
                _path(),
                _text("content", ArgumentType.TEXT, "the complete new content", max_bytes=512 * KIB),
                _optional(_text("expected_sha256", ArgumentType.SHA256,
                                "sha256 of the current content; omit to create a new file", max_bytes=64)),
            ),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.EDIT_FILE,
            "Replace exactly one occurrence of old_text with new_text in a file.",
            (
                _path(),
                _text("old_text", ArgumentType.TEXT, "text that occurs exactly once", max_bytes=64 * KIB,
                      min_bytes=1),
                _text("new_text", ArgumentType.TEXT, "its replacement", max_bytes=64 * KIB),
            ),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.APPLY_PATCH,
            "Apply a unified diff to files of the task worktree, all hunks or none.",
            (_text("patch", ArgumentType.TEXT, "a unified diff", max_bytes=512 * KIB, min_bytes=1),),
            writes=True,
            output=16 * KIB,
        ),
        _descriptor(
            ToolName.DELETE_FILE,
            "Delete one file of the task worktree.",
            (_path(),),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.INSPECT_DIFF,
            "Show the task's changes against its base commit.",
            (optional_path,),
            writes=False,
            timeout=60,
            output=MIB,
        ),
        _descriptor(ToolName.GIT_STATUS, "Show the git status of the task worktree.", (), writes=False),
        _descriptor(
            ToolName.GIT_LOG,
            "Show recent commits of the task branch.",
            (optional_path, _integer("max_count", "how many commits", low=1, high=500)),
            writes=False,
        ),
        ToolDescriptor(
            name=ToolName.RUN_COMMAND,
            description="Run a program with an argv array (no shell unless argv names one) in the worktree.",
            arguments=(
                ArgumentSpec(
                    name="argv",
                    type=ArgumentType.ARGV,
                    required=True,
                    description="the program and its arguments, one element each",
                    max_bytes=32 * KIB,
                    max_items=256,
                ),
            ),
            effects=frozenset({Effect.SUBPROCESS}),
            default_capability=Capability.PROCESS,
            limits=ToolLimits(timeout_seconds=600, output_cap_bytes=4 * MIB),
            runs_program=True,
        ),
    ]
    return MappingProxyType({entry.name: entry for entry in entries})


TOOL_CATALOG: Final[Mapping[ToolName, ToolDescriptor]] = _build_catalog()
"""Every tool, by name. Read-only."""


def tool_descriptor(name: ToolName) -> ToolDescriptor:
    """The descriptor of ``name``."""
    return TOOL_CATALOG[name]


def parse_tool_name(text: str) -> ToolName:
    """The tool called ``text``; :class:`ToolRequestInvalidError` (``unknown-tool``) otherwise."""
    try:
        return ToolName(text)
    except ValueError:
        raise ToolRequestInvalidError(
            tool=repr(text[:_NAME_SHOWN]),
            argument=None,
            problem=ToolRequestProblem.UNKNOWN_TOOL,
            detail=f"known tools are {', '.join(sorted(TOOL_CATALOG))}",
        ) from None


def refuse_unsafe_text(text: str, *, field: str) -> None:
    """Raise :class:`UnsafeArgumentError` if ``text`` holds a NUL byte or is not encodable as UTF-8.

    NUL truncates C strings (argv, paths, environment) so what runs would differ from what was approved;
    lone surrogates cannot be written to a file or shown faithfully.
    """
    if "\x00" in text:
        raise UnsafeArgumentError(field=field, reason="contains a NUL byte")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeArgumentError(field=field, reason="is not valid Unicode text") from None


def bind_tool_request(tool_name: str, raw_args: Mapping[str, object]) -> BoundToolRequest:
    """Validate a model's raw arguments against the tool's descriptor and order them by it.

    Raises :class:`ToolRequestInvalidError` or :class:`UnsafeArgumentError`; never returns a partly
    valid request.
    """
    descriptor = tool_descriptor(parse_tool_name(tool_name))
    known = {spec.name for spec in descriptor.arguments}
    unknown = sorted(repr(str(key)[:_NAME_SHOWN]) for key in raw_args if key not in known)
    if unknown:
        raise ToolRequestInvalidError(
            tool=descriptor.name,
            argument=unknown[0],
            problem=ToolRequestProblem.UNKNOWN_ARGUMENT,
            detail=f"unknown argument(s) {', '.join(unknown)}; expected {_expected(descriptor)}",
        )
    bound: list[BoundArgument] = []
    for spec in descriptor.arguments:
        raw = raw_args.get(spec.name)
        if raw is None:
            if spec.required:
                raise _invalid(descriptor, spec, ToolRequestProblem.MISSING_ARGUMENT, "is required")
            continue
        bound.append(BoundArgument(name=spec.name, value=_bind_value(descriptor, spec, raw)))
    return BoundToolRequest(descriptor=descriptor, arguments=tuple(bound))


def _expected(descriptor: ToolDescriptor) -> str:
    return ", ".join(spec.name for spec in descriptor.arguments) or "no arguments"


def _invalid(
    descriptor: ToolDescriptor, spec: ArgumentSpec, problem: ToolRequestProblem, detail: str
) -> ToolRequestInvalidError:
    return ToolRequestInvalidError(tool=descriptor.name, argument=spec.name, problem=problem, detail=detail)


def _bind_value(descriptor: ToolDescriptor, spec: ArgumentSpec, raw: object) -> ArgumentValue:
    match spec.type:
        case ArgumentType.PATH | ArgumentType.GLOB | ArgumentType.TEXT | ArgumentType.SHA256:
            if not isinstance(raw, str):
                raise _invalid(descriptor, spec, ToolRequestProblem.WRONG_TYPE, "must be a string")
            _check_text(descriptor, spec, raw, field=f"{descriptor.name}.{spec.name}")
            if spec.type is ArgumentType.SHA256 and _SHA256_HEX.fullmatch(raw) is None:
                raise _invalid(descriptor, spec, ToolRequestProblem.INVALID_VALUE,
                               "must be 64 lowercase hex digits")
            return raw
        case ArgumentType.INTEGER:
            # bool is an int subclass; `true` is not a line number.
            if type(raw) is not int:
                raise _invalid(descriptor, spec, ToolRequestProblem.WRONG_TYPE, "must be an integer")
            if not spec.min_value <= raw <= spec.max_value:
                raise _invalid(descriptor, spec, ToolRequestProblem.INVALID_VALUE,
                               f"must be between {spec.min_value} and {spec.max_value}")
            return raw
        case ArgumentType.BOOLEAN:
            if type(raw) is not bool:
                raise _invalid(descriptor, spec, ToolRequestProblem.WRONG_TYPE, "must be true or false")
            return raw
        case ArgumentType.ARGV:
            return _bind_argv(descriptor, spec, raw)
        case _:
            assert_never(spec.type)


def _check_text(descriptor: ToolDescriptor, spec: ArgumentSpec, text: str, *, field: str) -> None:
    refuse_unsafe_text(text, field=field)
    size = len(text.encode("utf-8"))
    if size > spec.max_bytes:
        raise _invalid(descriptor, spec, ToolRequestProblem.TOO_LARGE,
                       f"is {size} bytes; the limit is {spec.max_bytes}")
    if size < spec.min_bytes:
        raise _invalid(descriptor, spec, ToolRequestProblem.INVALID_VALUE, "must not be empty")


def _bind_argv(descriptor: ToolDescriptor, spec: ArgumentSpec, raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list | tuple) or not all(isinstance(item, str) for item in raw):
        raise _invalid(descriptor, spec, ToolRequestProblem.WRONG_TYPE, "must be an array of strings")
    argv = tuple(str(item) for item in raw)
    if not argv or not argv[0]:
        raise _invalid(descriptor, spec, ToolRequestProblem.INVALID_VALUE,
                       "must name a program in its first element")
    if len(argv) > spec.max_items:
        raise _invalid(descriptor, spec, ToolRequestProblem.TOO_LARGE,
                       f"has {len(argv)} elements; the limit is {spec.max_items}")
    for index, item in enumerate(argv):
        refuse_unsafe_text(item, field=f"{descriptor.name}.{spec.name}[{index}]")
    total = sum(len(item.encode("utf-8")) for item in argv)
    if total > spec.max_bytes:
        raise _invalid(descriptor, spec, ToolRequestProblem.TOO_LARGE,
                       f"is {total} bytes; the limit is {spec.max_bytes}")
    return argv
