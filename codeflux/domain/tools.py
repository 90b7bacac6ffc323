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
read as omitted. A ``path`` argument is made canonical first (:func:`canonical_tool_path`: ``./pkg//mod.py``
is ``pkg/mod.py``), so the classifier, the operation identity, the worker and its resolver all see the
one spelling; an optional path that names the root (``.``) is read as omitted. Argument values are
exactly one of ``str``, ``int`` (not ``bool``), ``bool`` or a tuple of ``str`` (an argv); floats, nested objects
and anything else are refused.

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
    "GREP_DEFAULT_RESULTS",
    "GREP_MAX_LINE_CHARS",
    "READ_DEFAULT_LINES",
    "READ_MAX_LINE_CHARS",
    "READ_RESULT_BYTES",
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
    "canonical_tool_path",
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


READ_RESULT_BYTES: Final = 16 * KIB
"""The output cap of the reading tools: what one result shows the model (each result says how to read on)."""
READ_DEFAULT_LINES: Final = 2000
"""Lines ``read_file`` shows when ``line_count`` is omitted (fewer when they do not fit its output cap)."""
READ_MAX_LINE_CHARS: Final = 2000
"""Characters of one line ``read_file`` shows; a longer line is cut, with a note saying so."""
GREP_DEFAULT_RESULTS: Final = 200
"""Matches ``grep`` shows when ``max_results`` is omitted."""
GREP_MAX_LINE_CHARS: Final = 500
"""Characters of a matching line ``grep`` shows; a longer line is cut, with a note saying so."""

_FAILURES: Final = ("On failure the result says `state: failed`, `failure: <kind>` and a one-line `message`; "
                    "fix the request rather than repeating it.")


def _build_catalog() -> Mapping[ToolName, ToolDescriptor]:
    optional_path = _optional(_path("a directory or file relative to the task worktree root, e.g. src/app "
                                    "(default: the root)"))
    offset = _integer("offset", "how many entries to skip: pass the offset a cut result names to see the next "
                                "ones (default 0)", low=0, high=1_000_000)
    entries = [
        _descriptor(
            ToolName.READ_FILE,
            "Read a text file of the task worktree: a window of its lines, numbered like `cat -n` (the number, a "
            f"tab, then the line exactly), and the file's sha256. Shows up to {READ_DEFAULT_LINES} lines from "
            f"start_line, fewer when they do not fit {READ_RESULT_BYTES // KIB} KiB; the message says which lines "
            "of how many are shown and, when more follow, the start_line that continues "
            "(`showing lines 1–412 of 2633; call read_file with start_line=413 to continue`). Lines longer than "
            f"{READ_MAX_LINE_CHARS} characters are cut with a note. Use it before editing or replacing a file: "
            "copy old_text for edit_file from the text after the tab; pass the sha256 to write_file as "
            "expected_sha256. Files up to 4 MiB can be read. " + _FAILURES + " Kinds: not-found, path-refused, "
            "not-text (binary), too-large, wrong-file-type (a directory: use list_directory).",
            (
                _path("the file, relative to the task worktree root, e.g. src/app/main.py"),
                _integer("start_line", "the first line to show, 1-based (default 1)", low=1, high=10_000_000),
                _integer("line_count", f"how many lines to show at most (default {READ_DEFAULT_LINES}; the output "
                                       "limit may show fewer)", low=1, high=100_000),
            ),
            writes=False,
            output=READ_RESULT_BYTES,
        ),
        _descriptor(
            ToolName.LIST_DIRECTORY,
            "List a directory of the task worktree, one entry per line: `dir/`, `file`, `link@` (symbolic links "
            "are never followed), paths relative to the root; `.git` is never listed. With recursive=true every "
            f"level below is listed. A listing over {READ_RESULT_BYTES // KIB} KiB shows its first entries and says "
            "`showing entries 1–812 of 5,000; call list_directory with offset=812 for the next ones`. Use it to "
            "learn the layout; use glob to find files by name and grep to find text. " + _FAILURES
            + " Kinds: not-found, path-refused, wrong-file-type (not a directory).",
            (optional_path, _flag("recursive", "descend into sub-directories (default false)"), offset),
            writes=False,
            output=READ_RESULT_BYTES,
        ),
        _descriptor(
            ToolName.GLOB,
            "Find files and directories of the task worktree whose path (below `path`, default the root) matches "
            "a glob pattern: `*` within one name, `**` across directories, `?` one character, e.g. `src/**/*.py` "
            "or `**/test_*.py`. Paths come sorted, one per line, directories ending in `/`. A result over "
            f"{READ_RESULT_BYTES // KIB} KiB shows its first paths and the offset that continues. " + _FAILURES
            + " Kinds: invalid-pattern, not-found, path-refused.",
            (_text("pattern", ArgumentType.GLOB, "a glob such as src/**/*.py", max_bytes=KIB, min_bytes=1),
             optional_path, offset),
            writes=False,
            output=READ_RESULT_BYTES,
        ),
        _descriptor(
            ToolName.GREP,
            "Search the text of the task worktree's files for a Python regular expression (or literal text with "
            "fixed_string=true), one matching line per result line as `path:line number:line`; line numbers are "
            f"the ones read_file shows. Files are searched in path order; binary files and `.git` are skipped. "
            f"Shows up to max_results matches (default {GREP_DEFAULT_RESULTS}) while they fit "
            f"{READ_RESULT_BYTES // KIB} KiB; when more exist the message says so and gives the offset that "
            f"continues. Matching lines over {GREP_MAX_LINE_CHARS} characters are cut with a note. Use it to find "
            "where something is defined or used before reading those files. " + _FAILURES
            + " Kinds: invalid-pattern, not-found, path-refused.",
            (
                _text("pattern", ArgumentType.TEXT, "a Python regular expression (or literal text with "
                      "fixed_string), matched against each line", max_bytes=KIB, min_bytes=1),
                optional_path,
                _optional(_text("glob", ArgumentType.GLOB, "search only files whose path below `path` matches this "
                                "glob, e.g. **/*.py", max_bytes=KIB, min_bytes=1)),
                _flag("ignore_case", "match case-insensitively (default false)"),
                _flag("fixed_string", "treat the pattern as literal text, not a regular expression (default false)"),
                _integer("max_results", f"show at most this many matches (default {GREP_DEFAULT_RESULTS})", low=1,
                         high=10_000),
                _integer("offset", "how many matches to skip: pass the offset a cut result names to see the next "
                                   "ones (default 0)", low=0, high=1_000_000),
            ),
            writes=False,
            timeout=60,
            output=READ_RESULT_BYTES,
        ),
        _descriptor(
            ToolName.WRITE_FILE,
            "Create a new file with the given content, or replace a whole existing file. Read a file before "
            "replacing it: the replacement is written only while the file still has the sha256 last shown to "
            "you (by read_file, or by your last write or edit of it) — in the implementation loop that sha256 "
            "is used when you omit expected_sha256. A file you have not read is refused (already-exists), and "
            "one that changed since you read it too (content-mismatch): read it again. To change part of a file "
            "prefer edit_file. Missing directories are created. Content up to 512 KiB. " + _FAILURES
            + " Kinds: already-exists, content-mismatch, not-found (expected_sha256 given for a file that does "
            "not exist), too-large, path-refused.",
            (
                _path("the file, relative to the task worktree root"),
                _text("content", ArgumentType.TEXT, "the complete new content of the file", max_bytes=512 * KIB),
                _optional(_text("expected_sha256", ArgumentType.SHA256,
                                "the sha256 the file must have now, as read_file showed it; omit it to create "
                                "a file or (in the implementation loop) to use the sha256 last shown to you",
                                max_bytes=64)),
            ),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.EDIT_FILE,
            "Replace exactly one occurrence of old_text with new_text in a file. old_text must match the file "
            "exactly, whitespace and indentation included (copy it from read_file's output: the text after the "
            "line number and tab, never the number itself) and occur once; include a few unchanged lines around "
            "the change to make it unique. On success the result shows the file's new sha256. " + _FAILURES
            + " Kinds: no-match (the result's content shows the most similar region with line numbers, or the "
            "lines old_text matches but for whitespace, and what differs), ambiguous-match (it lists the line "
            "numbers of every match), not-found, not-text, too-large.",
            (
                _path("the file, relative to the task worktree root"),
                _text("old_text", ArgumentType.TEXT, "text that occurs exactly once in the file, exactly as it is "
                      "there", max_bytes=64 * KIB, min_bytes=1),
                _text("new_text", ArgumentType.TEXT, "the text that replaces it (may be empty to delete it)",
                      max_bytes=64 * KIB),
            ),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.APPLY_PATCH,
            "Apply a unified diff (as `git diff` or `diff -u` writes it, paths as a/… b/… or plain) to files of "
            "the task worktree: every hunk applies or nothing changes. It can create, delete and rename files. "
            "Use it for changes across several files or places; use edit_file for one change. " + _FAILURES
            + " Kinds: patch-does-not-apply (the message names the file and hunk, or the patch line that is not "
            "a diff; read the file again and rebuild the hunk), patch-refused (a refused path, a symbolic link, "
            "a submodule), too-large.",
            (_text("patch", ArgumentType.TEXT, "a unified diff", max_bytes=512 * KIB, min_bytes=1),),
            writes=True,
            output=16 * KIB,
        ),
        _descriptor(
            ToolName.DELETE_FILE,
            "Delete one regular file of the task worktree (never a directory or a symbolic link). "
            + _FAILURES + " Kinds: not-found, wrong-file-type, path-refused.",
            (_path("the file, relative to the task worktree root"),),
            writes=True,
            output=4 * KIB,
        ),
        _descriptor(
            ToolName.INSPECT_DIFF,
            "Show the task's changes against its base commit as a unified diff, new untracked files included; "
            "with path, only that file or directory. A diff over "
            f"{READ_RESULT_BYTES // KIB} KiB shows its head and names the files it did not show whole; ask for one "
            "of them with path. Use it to review your own changes before finishing. " + _FAILURES
            + " Kinds: git-failed, path-refused.",
            (optional_path,),
            writes=False,
            timeout=60,
            output=READ_RESULT_BYTES,
        ),
        _descriptor(ToolName.GIT_STATUS, "Show `git status --porcelain` of the task worktree: the branch line, "
                    "then one line per changed or untracked path (`XY path`). " + _FAILURES + " Kinds: git-failed.",
                    (), writes=False, output=READ_RESULT_BYTES),
        _descriptor(
            ToolName.GIT_LOG,
            "Show recent commits of the task branch (hash, date, author, then the subject indented), newest "
            "first; with path, only commits touching it. " + _FAILURES + " Kinds: git-failed, path-refused.",
            (optional_path, _integer("max_count", "how many commits (default 20)", low=1, high=500)),
            writes=False,
            output=READ_RESULT_BYTES,
        ),
        ToolDescriptor(
            name=ToolName.RUN_COMMAND,
            description=(
                "Run one program in the task worktree with an argv array: no shell, so no pipes, redirections, "
                "globbing or `&&` unless argv names a shell (e.g. [\"sh\", \"-c\", \"…\"]). Use it to run tests "
                "and checks, e.g. [\"python\", \"-m\", \"pytest\", \"-q\"]. A command may need a person's "
                "approval first; a refused one comes back as an error saying so — do not retry it unchanged. "
                "It is killed after 600 s with everything it started. The result gives the exit code and "
                "stdout and stderr; long output keeps its head and tail around a note saying how many "
                "characters and lines were elided (narrow the command, e.g. run one test, to see the middle). "
                "Kinds: nonzero-exit (the program failed: read its output), timed-out, command-not-found, "
                "executable-mismatch."
            ),
            arguments=(
                ArgumentSpec(
                    name="argv",
                    type=ArgumentType.ARGV,
                    required=True,
                    description="the program and its arguments, one array element each, e.g. [\"git\", \"status\"]",
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
        if spec.type is ArgumentType.PATH and isinstance(raw, str):
            raw = canonical_tool_path(raw)
            if raw == "" and not spec.required:
                raw = None  # `.` for an optional path: the root, which is what omitting it means
        if raw is None:
            if spec.required:
                raise _invalid(descriptor, spec, ToolRequestProblem.MISSING_ARGUMENT, "is required")
            continue
        bound.append(BoundArgument(name=spec.name, value=_bind_value(descriptor, spec, raw)))
    return BoundToolRequest(descriptor=descriptor, arguments=tuple(bound))


def canonical_tool_path(path: str) -> str:
    """``path`` with the spellings that cannot change which worktree file it names made canonical: ``.``
    components, repeated and trailing ``/`` dropped (``./pkg//mod.py`` is ``pkg/mod.py``; ``.`` and ``./``
    are ``""``, the root).

    Purely lexical, and only where that is exact: a path starting with ``/`` or ``~`` (absolute or
    home-relative), or holding a NUL byte, is returned as written, for the resolver and the classifier to
    refuse with their reason; ``..`` is never resolved, and a component's own text (spaces included) is
    never changed.
    """
    if path.startswith(("/", "~")) or "\x00" in path:
        return path
    return "/".join(part for part in path.split("/") if part not in ("", "."))


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
