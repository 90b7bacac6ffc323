"""Pure, table-driven classification of a bound tool request into the capabilities it needs.

No I/O: the path resolver (symlinks) runs elsewhere and hands in what it found as
:class:`WorktreeFacts`. The rules, and why, are documented in ``docs/security.md`` ("Capability
classification"); in short:

* File tools need ``read`` or ``task-write``. A path that is not a plain worktree-relative path
  (empty, absolute, ``~``, ``..``, a backslash, a drive letter or colon, surrounding whitespace, or
  reported escaping by the resolver) adds ``outside-write`` — reads too, since leaving the worktree is
  what must be asked about. A ``.git`` component adds ``privileged`` (hooks and config there run code
  and belong to the user's repository). Credential-looking paths (``~/.ssh``, ``.env``, ``*.pem`` …)
  add ``credential``.
* ``run_command`` always needs ``process``. Its argv is read through wrappers (``env``, ``timeout``,
  ``nice``, ``nohup``, ``xargs``, ``sudo`` …), absolute executable paths, shells with ``-c`` (whose
  strings are lexed; every command in a compound string counts) and interpreters with inline code.
  Known programs add what they do (``curl`` → ``network:host``, ``pip install`` → ``network`` +
  ``install``, ``rm -rf`` → ``destructive`` …). Unknown programs need ``process`` only.
* What cannot be read — an unparseable shell string, a program name decided at run time
  (``$X``, a substitution, a glob), a program that reads its script from stdin, nesting deeper than
  :data:`MAX_NESTING` — needs *every* non-automatic capability, so any denial blocks it.

Classification only ever adds needs: no argument text ("approved", "read-only", a purpose) can remove
one, and wrappers never hide the wrapped command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, assert_never
from urllib.parse import urlsplit

from codeflux.domain.capabilities import Capability, CapabilityNeed, is_automatic_capability
from codeflux.domain.tools import ArgumentType, BoundToolRequest, ToolName

__all__ = [
    "MAX_NESTING",
    "Classification",
    "ClassifiedNeed",
    "WorktreeFacts",
    "classify_tool_request",
]

MAX_NESTING: Final = 8
"""Wrappers, shells and substitutions nested deeper than this are classified as unknowable."""

_C = Capability
_UNKNOWABLE: Final = tuple(c for c in Capability if not is_automatic_capability(c))
_SHOWN: Final = 60


# ─── public values ────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeFacts:
    """What the path resolver found out about the request's paths (classification does no I/O).

    ``escaping_paths`` holds path arguments, exactly as written in the request, that resolve outside
    the task worktree (through a symlink, for example).
    """

    escaping_paths: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassifiedNeed:
    """One need and why it is needed, in words a person can check against the request."""

    need: CapabilityNeed
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """The sorted needs of one request (each with its reason) and whether it was a compound string.

    ``compound`` is true when a shell string held several commands, redirections or substitutions: the
    whole string is one operation and no narrower approval can cover it.
    """

    tool: ToolName
    needs: tuple[ClassifiedNeed, ...]
    compound: bool

    def need_set(self) -> frozenset[CapabilityNeed]:
        return frozenset(item.need for item in self.needs)

    def capabilities(self) -> frozenset[Capability]:
        return frozenset(item.need.capability for item in self.needs)

    def most_severe(self) -> Capability:
        """The most severe capability needed (needs are sorted, so it is the last one)."""
        return self.needs[-1].need.capability

    def is_automatic(self) -> bool:
        """True when every need is automatic (``read`` / ``task-write``)."""
        return all(is_automatic_capability(item.need.capability) for item in self.needs)

    def reason_for(self, need: CapabilityNeed) -> str | None:
        for item in self.needs:
            if item.need == need:
                return item.reason
        return None


def classify_tool_request(request: BoundToolRequest, *, facts: WorktreeFacts | None = None) -> Classification:
    """The capabilities ``request`` needs, each with a reason; never fewer than its tool's default."""
    findings = _Findings()
    known = facts or WorktreeFacts()
    match request.tool:
        case ToolName.RUN_COMMAND:
            findings.add(_C.PROCESS, "run_command runs a program")
            _classify_argv(request.argv(), findings, depth=0)
        case (
            ToolName.READ_FILE
            | ToolName.LIST_DIRECTORY
            | ToolName.GLOB
            | ToolName.GREP
            | ToolName.INSPECT_DIFF
            | ToolName.GIT_STATUS
            | ToolName.GIT_LOG
            | ToolName.WRITE_FILE
            | ToolName.EDIT_FILE
            | ToolName.APPLY_PATCH
            | ToolName.DELETE_FILE
        ):
            _classify_file_tool(request, known, findings)
        case _:
            assert_never(request.tool)
    return findings.freeze(request.tool)


# ─── findings ─────────────────────────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _Findings:
    """Needs gathered so far, each with its reasons in discovery order (a private accumulator)."""

    reasons: dict[CapabilityNeed, list[str]] = field(default_factory=dict)
    compound: bool = False

    def add(self, capability: Capability, reason: str, resource: str | None = None) -> None:
        listed = self.reasons.setdefault(CapabilityNeed(capability=capability, resource=resource), [])
        if reason not in listed:
            listed.append(reason)

    def add_all(self, capabilities: Iterable[Capability], reason: str) -> None:
        for capability in capabilities:
            self.add(capability, reason)

    def unknowable(self, reason: str) -> None:
        self.add_all(_UNKNOWABLE, reason)

    def network(self, reason: str, hosts: Iterable[str | None]) -> None:
        """``network`` once per host; unscoped when a host is unknown (None) or none was found."""
        listed = list(hosts)
        for host in listed or [None]:
            self.add(_C.NETWORK, reason, host)

    def freeze(self, tool: ToolName) -> Classification:
        needs = tuple(
            ClassifiedNeed(need=need, reason="; ".join(self.reasons[need])) for need in sorted(self.reasons)
        )
        return Classification(tool=tool, needs=needs, compound=self.compound)


def _words(text: str) -> list[str]:
    """Space-separated table entries as a list (tables of program names read better this way)."""
    return text.split()


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")


# ─── paths ────────────────────────────────────────────────────────────────────────────────────────

_CREDENTIAL_DIRECTORIES: Final = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", "keyrings", "gcloud"}
)
_CREDENTIAL_FILES: Final = frozenset(
    {
        ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".env", ".envrc",
        ".vault-token", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "authorized_keys", "shadow",
        "gshadow", "environ", "credentials", "credentials.json", "kubeconfig", ".htpasswd",
    }
)  # fmt: skip
_CREDENTIAL_SUFFIXES: Final = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx")
_HARMLESS_ENV_SUFFIXES: Final = (".example", ".sample", ".template", ".dist")
_HARMLESS_DEVICES: Final = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/random",
     "/dev/urandom"}
)  # fmt: skip
_DRIVE: Final = re.compile(r"[A-Za-z]:")
_HOME_VARIABLE: Final = re.compile(r"\$(?:HOME\b|\{HOME\})")


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in {"", "."}]


def _is_git_component(part: str) -> bool:
    # Case-insensitive file systems and Windows' trailing-dot/space trimming make these `.git` too.
    return part.lower().rstrip(" .") == ".git"


def _is_credential_path(path: str) -> bool:
    parts = [part.lower() for part in _components(path)]
    if any(part in _CREDENTIAL_DIRECTORIES for part in parts[:-1]):
        return True
    if not parts:
        return False
    name = parts[-1]
    if name in _CREDENTIAL_FILES or name in _CREDENTIAL_DIRECTORIES or name.endswith(_CREDENTIAL_SUFFIXES):
        return True
    return name.startswith(".env.") and not name.endswith(_HARMLESS_ENV_SUFFIXES)


def _tool_path_escape(path: str) -> str | None:
    """Why a file-tool path is not a plain worktree-relative path, or None if it is one."""
    checks: tuple[tuple[bool, str], ...] = (
        (path.strip() == "", "is empty"),
        (path.startswith(("/", "~")), "is absolute or home-relative"),
        ("\\" in path, "contains a backslash"),
        (":" in path or _DRIVE.match(path) is not None, "contains a drive letter or colon"),
        (any(part != part.strip() for part in path.split("/")), "has a component with surrounding spaces"),
        (".." in path.split("/"), "climbs out with '..'"),
    )
    return next((why for failed, why in checks if failed), None)


def _classify_tool_path(path: str, *, writes: bool, facts: WorktreeFacts, out: _Findings) -> None:
    escape = _tool_path_escape(path)
    if escape is not None:
        out.add(_C.OUTSIDE_WRITE, f"path {_shown(path)} {escape}; it may leave the task worktree")
    if path in facts.escaping_paths:
        out.add(_C.OUTSIDE_WRITE, f"path {_shown(path)} resolves outside the task worktree")
    if any(_is_git_component(part) for part in path.split("/")):
        out.add(_C.PRIVILEGED, f"path {_shown(path)} enters .git, whose hooks and config run code")
        if writes:
            out.add(_C.OUTSIDE_WRITE, f"path {_shown(path)} writes into the user's repository metadata")
    if _is_credential_path(path):
        out.add(_C.CREDENTIAL, f"path {_shown(path)} looks like a credential file")


def _classify_command_path(argument: str, out: _Findings) -> None:
    """Path facts that hold for any program: an argument naming a place outside, .git, or a secret."""
    candidates = [argument, argument.removeprefix("@")]
    if "=" in argument and (argument.startswith("-") or _ASSIGNMENT.match(argument)):
        candidates.append(argument.split("=", 1)[1])
    candidates += [text[len("file://") :] for text in candidates if text.lower().startswith("file://")]
    for text in candidates:
        if "://" in text:
            continue
        if text not in _HARMLESS_DEVICES and (
            text.startswith(("/", "~")) or ".." in text.split("/") or _HOME_VARIABLE.search(text)
            or (_DRIVE.match(text) and text[2:3] in {"/", "\\"})
        ):
            out.add(_C.OUTSIDE_WRITE, f"argument {_shown(argument)} names a path outside the task worktree")
        if any(_is_git_component(part) for part in text.split("/")):
            out.add(_C.PRIVILEGED, f"argument {_shown(argument)} names .git, whose hooks and config run code")
            out.add(_C.OUTSIDE_WRITE, f"argument {_shown(argument)} names the user's repository metadata")
        if _is_credential_path(text):
            out.add(_C.CREDENTIAL, f"argument {_shown(argument)} names a credential file")


_PATCH_HEADER: Final = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$")


def _patch_paths(patch: str) -> list[str]:
    """Every path a unified or git diff names (old and new sides, renames and copies)."""
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            rest = line.removeprefix("diff --git ")
            old, separator, new = rest.rpartition(" b/")
            paths.extend([old, "b/" + new] if separator else [rest])
            continue
        match = _PATCH_HEADER.match(line)
        if match is not None:
            paths.append(match.group(1).split("\t", 1)[0])
    cleaned = []
    for path in paths:
        bare = path.strip('"') if path.startswith('"') else path
        if bare != "/dev/null":
            cleaned.append(bare[2:] if bare.startswith(("a/", "b/")) else bare)
    return cleaned


def _classify_file_tool(request: BoundToolRequest, facts: WorktreeFacts, out: _Findings) -> None:
    capability = request.descriptor.default_capability
    writes = capability is _C.TASK_WRITE
    verb = "writes inside" if writes else "reads"
    out.add(capability, f"{request.tool} {verb} the task worktree")
    for spec, value in request.typed_values():
        if spec.type in {ArgumentType.PATH, ArgumentType.GLOB} and isinstance(value, str):
            _classify_tool_path(value, writes=writes, facts=facts, out=out)
    patch = request.value("patch")
    if request.tool is ToolName.APPLY_PATCH and isinstance(patch, str):
        for path in _patch_paths(patch):
            _classify_tool_path(path, writes=True, facts=facts, out=out)


# ─── shell strings ────────────────────────────────────────────────────────────────────────────────

_OPERATOR_CHARS: Final = ";&|<>()\n`"
_OPERATOR_PIECE: Final = re.compile(
    r";;&|;;|;&|&&|\|\||\|&|<<<|<<-|<<|<>|<&|>&|&>>|&>|>>|>\||[;&|()\n`<>]"
)
_REDIRECTIONS: Final = frozenset({"<<<", "<<-", "<<", "<>", "<&", ">&", "&>>", "&>", ">>", ">|", "<", ">"})
_DYNAMIC_MARK: Final = "`"


@dataclass(slots=True)
class _ShellCommand:
    words: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


def _lex_shell(script: str) -> list[str] | None:
    lexer = shlex.shlex(script.replace("\\\n", ""), posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex would end a comment mid-word and swallow the newline after it
    try:
        return list(lexer)
    except ValueError:
        return None


def _split_shell(script: str) -> tuple[list[_ShellCommand], bool] | None:
    """The simple commands of ``script`` and whether it was compound; None when it cannot be parsed.

    Every operator separates commands (a quoted lone ``;`` does too: over-splitting only adds needs).
    A redirection's target stays with its command. A backtick in command position marks a program
    name decided at run time.
    """
    tokens = _lex_shell(script)
    if tokens is None:
        return None
    splitter = _ShellSplitter()
    for token in tokens:
        if any(char not in _OPERATOR_CHARS for char in token):
            splitter.word(token)
        elif not splitter.operator(token):
            return None
    return splitter.finish()


@dataclass(slots=True)
class _ShellSplitter:
    """The state of :func:`_split_shell` while it walks the tokens."""

    commands: list[_ShellCommand] = field(default_factory=list)
    current: _ShellCommand = field(default_factory=_ShellCommand)
    pending_redirection: bool = False
    compound: bool = False
    open_parentheses: int = 0  # may go negative: `case` patterns close what they never opened
    backticks: int = 0

    def word(self, token: str) -> None:
        (self.current.targets if self.pending_redirection else self.current.words).append(token)
        self.pending_redirection = False

    def operator(self, token: str) -> bool:
        """Take one operator token; False when it makes the script unparseable."""
        pieces = _OPERATOR_PIECE.findall(token)
        if "".join(pieces) != token:
            return False
        self.compound = True
        for piece in _merge_process_substitutions(pieces):
            if piece in _REDIRECTIONS:
                if self.pending_redirection:
                    return False
                self.pending_redirection = True
                continue
            if self.pending_redirection and piece != "(":  # `< <(…)` is fine, `> ;` is not
                return False
            if piece == "`" and not self.current.words:
                self.current.words.append(_DYNAMIC_MARK)
            self.open_parentheses += {"(": 1, ")": -1}.get(piece, 0)
            self.backticks += piece == "`"
            self.pending_redirection = False
            self._flush()
        return True

    def finish(self) -> tuple[list[_ShellCommand], bool] | None:
        if self.pending_redirection or self.open_parentheses > 0 or self.backticks % 2:
            return None
        self._flush()
        return self.commands, self.compound

    def _flush(self) -> None:
        if self.current.words or self.current.targets:
            self.commands.append(self.current)
        self.current = _ShellCommand()


def _merge_process_substitutions(pieces: list[str]) -> list[str]:
    """``<(`` and ``>(`` open a process substitution: a new command, not a redirection."""
    merged: list[str] = []
    for piece in pieces:
        if piece == "(" and merged and merged[-1] in {"<", ">"}:
            merged[-1] = "("
        else:
            merged.append(piece)
    return merged


def _substitutions(word: str) -> list[str] | None:
    """Scripts inside ``$( … )`` and backticks of one word (quoted or not); None if unbalanced."""
    found: list[str] = []
    index = 0
    while index < len(word):
        if word.startswith("$(", index):
            depth, end = 0, index + 1
            while end < len(word):
                depth += {"(": 1, ")": -1}.get(word[end], 0)
                if depth == 0:
                    break
                end += 1
            if depth != 0:
                return None
            found.append(word[index + 2 : end])
            index = end + 1
        elif word[index] == "`":
            end = word.find("`", index + 1)
            if end < 0:
                return None
            found.append(word[index + 1 : end])
            index = end + 1
        else:
            index += 1
    return found


_RESERVED_PREFIXES: Final = frozenset({"!", "{", "}", "(", "then", "do", "else", "elif", "if", "while", "until"})
_NOT_A_COMMAND: Final = frozenset({"for", "select", "case", "function", "in", "esac", "done", "fi", "}"})
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", flags=re.DOTALL)


def _classify_script(script: str, out: _Findings, *, depth: int) -> None:
    if depth > MAX_NESTING:
        out.unknowable(f"commands nested deeper than {MAX_NESTING} levels cannot be read")
        return
    split = _split_shell(script)
    if split is None:
        out.compound = True
        out.unknowable(f"shell string {_shown(script)} cannot be parsed")
        return
    commands, compound = split
    out.compound = out.compound or compound
    for command in commands:
        for word in [*command.words, *command.targets]:
            inner = _substitutions(word)
            if inner is None:
                out.unknowable(f"word {_shown(word)} has an unbalanced substitution")
                continue
            for script_text in inner:
                out.compound = True
                _classify_script(script_text, out, depth=depth + 1)
        for target in command.targets:
            _classify_command_path(target, out)
        _classify_shell_command(command.words, out, depth=depth)


def _classify_shell_command(words: list[str], out: _Findings, *, depth: int) -> None:
    while words and words[0] in _RESERVED_PREFIXES:
        words = words[1:]
    if words and words[0] == "function":  # `function name { body` — the body follows the name
        words = [word for word in words[2:] if word not in _RESERVED_PREFIXES]
    if words and words[0] == "time":  # the bash keyword, with its one option
        words = words[2:] if words[1:2] == ["-p"] else words[1:]
    if not words or words[0] in _NOT_A_COMMAND or words[0].startswith("#"):
        return
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words[0].partition("=")
        _classify_assignment(name.rstrip("+"), value, out)
        words = words[1:]
    if words:
        _classify_argv(words, out, depth=depth)


# ─── argv ─────────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class _Command:
    program: str  # normalized name of argv[0]
    args: tuple[str, ...]  # argv[1:]
    depth: int


_Handler = Callable[[_Command, _Findings], None]
_VERSIONED: Final = re.compile(r"(python|pypy|pip|perl|ruby|php|node|lua|luajit|tclsh|wish|pwsh)[0-9.]*")
_DYNAMIC_NAME: Final = re.compile(r"[$`*?\[{]")


def _program_name(word: str) -> str:
    name = word.rsplit("/", 1)[-1].lower().removesuffix(".exe")
    versioned = _VERSIONED.fullmatch(name)
    base = versioned.group(1) if versioned else name
    return _ALIASES.get(base, base)


def _classify_argv(argv: Sequence[str], out: _Findings, *, depth: int) -> None:
    """Classify one program invocation (argv[0] is the program)."""
    if depth > MAX_NESTING:
        out.unknowable(f"commands nested deeper than {MAX_NESTING} levels cannot be read")
        return
    if not argv:
        return
    head = argv[0]
    if head == _DYNAMIC_MARK or _DYNAMIC_NAME.search(head) or not head:
        out.unknowable(f"program name {_shown(head)} is decided at run time")
        return
    program = _program_name(head)
    out.add(_C.PROCESS, f"runs {program}")
    if any(_is_git_component(part) for part in head.split("/")):
        out.add(_C.PRIVILEGED, f"program {_shown(head)} lives in .git (a hook)")
    for argument in argv[1:]:
        _classify_command_path(argument, out)
    command = _Command(program=program, args=tuple(argv[1:]), depth=depth)
    handler = _HANDLERS.get(program)
    if handler is not None:
        handler(command, out)
    elif program.startswith("mkfs"):
        out.add(_C.DESTRUCTIVE, f"{program} formats a file system")


def _run_inner(argv: Sequence[str], command: _Command, out: _Findings) -> None:
    _classify_argv(argv, out, depth=command.depth + 1)


def _run_script(script: str, command: _Command, out: _Findings) -> None:
    _classify_script(script, out, depth=command.depth + 1)


# ─── option parsing ───────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class _Grammar:
    """Enough of a program's option syntax to find its operands.

    ``strict`` grammars (wrappers) fail on an unknown option: guessing where the wrapped command
    starts could hide it. Lenient grammars treat unknown options as flags.
    """

    short_flags: str = ""
    short_values: str = ""  # value attached (-ofile) or next argument (-o file)
    short_optional: str = ""  # value only when attached (perl -i.bak)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    strict: bool = False
    stop_at_operand: bool = True
    numeric_flags: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class _Parsed:
    options: tuple[tuple[str, str | None], ...]
    operands: tuple[str, ...]  # with stop_at_operand: everything from the first operand on

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [value for name, value in self.options if name in names and value is not None]


def _parse_options(args: Sequence[str], grammar: _Grammar) -> _Parsed | None:
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            operands.extend(args[index:])
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if name in grammar.long_values and not has_value:
                if index >= len(args):
                    return None
                options.append((name, args[index]))
                index += 1
            elif grammar.strict and name not in grammar.long_flags | grammar.long_values:
                return None
            else:
                options.append((name, value if has_value else None))
            continue
        if arg.startswith("-") and len(arg) > 1:
            parsed = _parse_short_cluster(arg, args, index, grammar, options)
            if parsed is None:
                return None
            index = parsed
            continue
        if grammar.stop_at_operand:
            operands.extend(args[index - 1 :])
            break
        operands.append(arg)
    return _Parsed(options=tuple(options), operands=tuple(operands))


def _parse_short_cluster(
    arg: str, args: Sequence[str], index: int, grammar: _Grammar, options: list[tuple[str, str | None]]
) -> int | None:
    """Append the options of one ``-abc`` cluster; the index after it (and any value), or None."""
    letters = arg[1:]
    if grammar.numeric_flags and letters.isdigit():
        options.append((arg, None))
        return index
    for position, letter in enumerate(letters):
        attached = letters[position + 1 :]
        if letter in grammar.short_values:
            if attached:
                options.append(("-" + letter, attached))
                return index
            if index >= len(args):
                return None
            options.append(("-" + letter, args[index]))
            return index + 1
        if letter in grammar.short_optional:
            options.append(("-" + letter, attached or None))
            return index
        if grammar.strict and letter not in grammar.short_flags:
            return None
        options.append(("-" + letter, None))
    return index


def _grammar(
    short_flags: str = "",
    short_values: str = "",
    long_flags: str = "",
    long_values: str = "",
    **rest: bool | str,
) -> _Grammar:
    """A grammar from space-separated long option lists (terser tables)."""
    return _Grammar(
        short_flags=short_flags,
        short_values=short_values,
        long_flags=frozenset(long_flags.split()),
        long_values=frozenset(long_values.split()),
        short_optional=str(rest.get("short_optional", "")),
        strict=bool(rest.get("strict", False)),
        stop_at_operand=bool(rest.get("stop_at_operand", True)),
        numeric_flags=bool(rest.get("numeric_flags", False)),
    )


# ─── wrappers ─────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class _Wrapper:
    grammar: _Grammar
    preamble: int = 0  # operands before the wrapped command (timeout's duration, chroot's root)
    privileged: bool = False
    script_options: frozenset[str] = frozenset()  # options whose value is a shell string (flock -c)
    needs_command: bool = False  # without a command the wrapper starts a shell: unknowable


def _wrap(wrapper: _Wrapper) -> _Handler:
    def handle(command: _Command, out: _Findings) -> None:
        if wrapper.privileged:
            out.add(_C.PRIVILEGED, f"{command.program} runs a command with other privileges")
        parsed = _parse_options(command.args, wrapper.grammar)
        if parsed is None:
            out.unknowable(f"{command.program} has options codeflux cannot read, so its command is unknown")
            return
        for script in parsed.values(*wrapper.script_options):
            _run_script(script, command, out)
        inner = list(parsed.operands[wrapper.preamble :])
        while inner and _ASSIGNMENT.match(inner[0]):
            name, _, value = inner[0].partition("=")
            _classify_assignment(name, value, out)
            inner = inner[1:]
        if inner:
            _run_inner(inner, command, out)
        elif wrapper.needs_command and not parsed.values(*wrapper.script_options):
            out.unknowable(f"{command.program} without a command starts a shell")

    return handle


def _env(command: _Command, out: _Findings) -> None:
    grammar = _grammar("i0v", "uCS", "--ignore-environment --null --debug --list-signal-handling "
                       "--block-signal --default-signal --ignore-signal --help --version",
                       "--unset --chdir --split-string", strict=True)
    args = [arg if arg != "-" else "-i" for arg in command.args]
    parsed = _parse_options(args, grammar)
    if parsed is None:
        out.unknowable("env has options codeflux cannot read, so its command is unknown")
        return
    inner = list(parsed.operands)
    while inner and _ASSIGNMENT.match(inner[0]):
        name, _, value = inner[0].partition("=")
        _classify_assignment(name, value, out)
        inner = inner[1:]
    for split in parsed.values("-S", "--split-string"):
        try:
            inner = [*shlex.split(split), *inner]
        except ValueError:
            out.unknowable(f"env -S string {_shown(split)} cannot be parsed")
            return
    if inner:
        _run_inner(inner, command, out)
    else:
        out.add(_C.CREDENTIAL, "env without a command prints every environment variable")


def _sudo(command: _Command, out: _Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} runs a command as another user (usually root)")
    grammar = _grammar(
        "AbEeHiKklnPSsVvh", "CDghprTUu",
        "--askpass --background --preserve-env --edit --help --login --remove-timestamp --reset-timestamp "
        "--list --non-interactive --preserve-groups --stdin --shell --version --validate --set-home",
        "--close-from --chdir --group --host --prompt --chroot --role --type --command-timeout "
        "--other-user --user",
        strict=True,
    )
    parsed = _parse_options(command.args, grammar)
    if parsed is None:
        out.unknowable(f"{command.program} has options codeflux cannot read, so its command is unknown")
        return
    if parsed.has("-e", "--edit") or command.program == "sudoedit":
        out.add(_C.OUTSIDE_WRITE, "sudo -e edits files as root")
        return
    inner = list(parsed.operands)
    while inner and _ASSIGNMENT.match(inner[0]):
        name, _, value = inner[0].partition("=")
        _classify_assignment(name, value, out)
        inner = inner[1:]
    if inner:
        _run_inner(inner, command, out)
    elif parsed.has("-i", "-s", "--login", "--shell"):
        out.unknowable(f"{command.program} without a command starts a root shell")


def _su(command: _Command, out: _Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} runs commands as another user")
    parsed = _parse_options(command.args, _grammar("flmpPh", "cgGsw", long_values="--command --group "
                                                   "--supp-group --shell --whitelist-environment",
                                                   stop_at_operand=False))
    scripts = parsed.values("-c", "--command") if parsed else []
    for script in scripts:
        _run_script(script, command, out)
    if not scripts:
        out.unknowable(f"{command.program} without -c starts a shell")


def _shell(command: _Command, out: _Findings) -> None:
    """sh/bash/zsh …: ``-c STRING`` is lexed; a script file is repository code; stdin is unknowable."""
    args, index, inline, reads_stdin = command.args, 0, False, False
    while index < len(args):
        arg = args[index]
        index += 1
        if arg in {"--", "-"}:
            reads_stdin = arg == "-"
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if name in {"--command"}:
                _run_script(value if has_value else (args[index] if index < len(args) else ""), command, out)
                return
            if name in {"--rcfile", "--init-file"} and not has_value:
                index += 1
            continue
        if arg[:1] in {"-", "+"} and len(arg) > 1:
            inline = inline or (arg[0] == "-" and "c" in arg[1:])
            reads_stdin = reads_stdin or "s" in arg[1:]
            index += sum(1 for letter in arg[1:] if letter in "oO")
            continue
        index -= 1
        break
    operands = args[index:]
    if inline:
        if operands:
            _run_script(operands[0], command, out)
        return
    if operands and not reads_stdin:
        out.add(_C.PROCESS, f"{command.program} runs the script {_shown(operands[0])} (repository code)")
        return
    out.unknowable(f"{command.program} reads its commands from stdin, which codeflux cannot see")


def _eval(command: _Command, out: _Findings) -> None:
    _run_script(" ".join(command.args), command, out)


def _trap(command: _Command, out: _Findings) -> None:
    operands = [arg for arg in command.args if not arg.startswith("-")]
    if len(operands) >= 2:
        _run_script(operands[0], command, out)


def _alias(command: _Command, out: _Findings) -> None:
    for arg in command.args:
        if "=" in arg:
            _run_script(arg.split("=", 1)[1], command, out)


def _source(command: _Command, out: _Findings) -> None:
    if not command.args or command.args[0] in {"/dev/stdin", "-"}:
        out.unknowable(f"{command.program} reads commands from stdin, which codeflux cannot see")
    else:
        out.add(_C.PROCESS, f"{command.program} runs the script {_shown(command.args[0])}")


def _watch(command: _Command, out: _Findings) -> None:
    grammar = _grammar("bcdeghtxpwrC", "nq", "--beep --color --no-color --differences --errexit --chgexit "
                       "--exec --precise --no-title --no-wrap --no-rerun --help --version",
                       "--interval --equexit", strict=True)
    parsed = _parse_options(command.args, grammar)
    if parsed is None:
        out.unknowable("watch has options codeflux cannot read, so its command is unknown")
        return
    if parsed.operands:
        # watch hands the joined operands to `sh -c` (unless -x); lexing them covers both cases.
        _run_script(" ".join(parsed.operands), command, out)


def _busybox(command: _Command, out: _Findings) -> None:
    if command.args:
        _run_inner(command.args, command, out)


def _find(command: _Command, out: _Findings) -> None:
    args = list(command.args)
    for index, arg in enumerate(args):
        if arg == "-delete":
            out.add(_C.DESTRUCTIVE, "find -delete removes every file it matches")
        if arg in {"-exec", "-execdir", "-ok", "-okdir"}:
            inner = []
            for word in args[index + 1 :]:
                if word in {";", "+"}:
                    break
                inner.append(word)
            _run_inner(inner, command, out)


_TAR_PROGRAM_OPTIONS: Final = frozenset(
    {"--to-command", "--use-compress-program", "-I", "--info-script", "-F", "--new-volume-script",
     "--rsh-command", "--checkpoint-action"}
)


def _tar(command: _Command, out: _Findings) -> None:
    """tar options whose value is a program tar runs (--to-command, -I, --checkpoint-action=exec=…)."""
    for index, arg in enumerate(command.args):
        name, has_value, value = arg.partition("=")
        if name not in _TAR_PROGRAM_OPTIONS:
            continue
        program = value if has_value else (command.args[index + 1] if index + 1 < len(command.args) else "")
        _run_script(program.removeprefix("exec="), command, out)


def _coproc(command: _Command, out: _Findings) -> None:
    """``coproc [NAME] { …`` or ``coproc command …``."""
    inner = list(command.args)
    if len(inner) > 1 and inner[1] in {"{", "("}:
        inner = inner[2:]
    while inner and inner[0] in {"{", "("}:
        inner = inner[1:]
    if inner:
        _run_inner(inner, command, out)


_SED_EXECUTES: Final = re.compile(r"(?:^|[;\n{}])\s*[0-9$,/!~]*\s*e(?:\s|$)|s(.).*\1.*\1[gipmIM0-9wW]*e")


def _sed(command: _Command, out: _Findings) -> None:
    """GNU sed's ``e`` command and ``s///e`` flag run shell commands."""
    parsed = _parse_options(command.args, _grammar(short_values="eflsS", short_optional="i",
                                                   long_values="--expression --file --line-length"))
    scripts = parsed.values("-e", "--expression") if parsed else []
    if parsed is not None and not scripts and parsed.operands:
        scripts = [parsed.operands[0]]
    if parsed is None or parsed.has("-f", "--file"):
        _classify_inline_code("sed", " ".join(scripts), out)
    elif any(_SED_EXECUTES.search(script) for script in scripts):
        out.unknowable("sed's e command runs shell commands codeflux does not read")


def _runner(command: _Command, out: _Findings) -> None:
    out.unknowable(f"{command.program} runs commands in a way codeflux does not read")


# ─── environment assignments ──────────────────────────────────────────────────────────────────────

_CODE_LOADING_VARIABLES: Final = frozenset(
    _words(
        """LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV PROMPT_COMMAND SHELLOPTS BASHOPTS PS4 IFS PATH
    PYTHONPATH PYTHONSTARTUP PYTHONHOME NODE_OPTIONS NODE_PATH PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB
    GIT_SSH GIT_SSH_COMMAND GIT_EXTERNAL_DIFF GIT_PAGER PAGER MANPAGER EDITOR VISUAL GIT_EDITOR
    GIT_SEQUENCE_EDITOR GIT_ASKPASS SSH_ASKPASS GIT_PROXY_COMMAND GIT_EXEC_PATH GIT_TEMPLATE_DIR
    GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG_COUNT GIT_CONFIG_PARAMETERS GIT_DIR
    GIT_WORK_TREE GIT_COMMON_DIR LESSOPEN LESSCLOSE BROWSER"""
    )
)
_CODE_LOADING_PREFIXES: Final = ("LD_", "DYLD_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
_PROXY_VARIABLES: Final = frozenset({"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "no_proxy"})
_SECRET_VARIABLE: Final = re.compile(
    r"(?i).*(?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_CREDENTIALS?|_AUTH)$|"
    r"(?:AWS_|AZURE_|GOOGLE_APPLICATION_CREDENTIALS$|SSH_AUTH_SOCK$|NETRC$|KUBECONFIG$|DOCKER_CONFIG$).*"
)


def _classify_assignment(name: str, value: str, out: _Findings) -> None:
    _classify_command_path(f"{name}={value}", out)
    if name in _CODE_LOADING_VARIABLES or name.startswith(_CODE_LOADING_PREFIXES):
        out.add(_C.PRIVILEGED, f"setting {name} makes programs load or run other code")
    if _SECRET_VARIABLE.fullmatch(name):
        out.add(_C.CREDENTIAL, f"setting {name} passes a secret-looking variable")
    if name.lower() in _PROXY_VARIABLES:
        out.network(f"setting {name} routes traffic through a proxy", [_host_of(value, bare_names=True)])


# ─── hosts ────────────────────────────────────────────────────────────────────────────────────────

_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_DOTTED_HOST: Final = re.compile(rf"(?:{_LABEL}\.)+[a-z](?:[a-z0-9-]{{0,61}}[a-z0-9])?")
_IPV4: Final = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_SIMPLE_HOST: Final = re.compile(_LABEL)
_BARE_DESTINATION: Final = re.compile(r"(?:[^@/\s]+@)?(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+)(?::[^/\s]*)?(?:[/?#].*)?")
_URL_IN_TEXT: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")
_LOCAL_SCHEMES: Final = frozenset({"file"})


def _normalize_host(raw: str, *, bare_names: bool) -> str | None:
    host = raw.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]") and len(host) > 2:
        return host
    if _IPV4.fullmatch(host) or _DOTTED_HOST.fullmatch(host) or host == "localhost":
        return host
    if bare_names and _SIMPLE_HOST.fullmatch(host) and not host.isdigit():
        return host
    return None


def _url_host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a malformed port raises ValueError
    except ValueError:
        return None
    if host is None:
        return None
    if ":" in host:
        return f"[{host}]"
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return _normalize_host(ascii_host, bare_names=True)


def _host_of(word: str, *, bare_names: bool) -> str | None:
    """The host a destination word names (URL, ``user@host:path``, ``host:port``, ``host/path``)."""
    if "://" in word:
        return _url_host(word)
    match = _BARE_DESTINATION.fullmatch(word)
    return None if match is None else _normalize_host(match.group(1), bare_names=bare_names)


def _urls_in(args: Iterable[str]) -> list[str]:
    return [url for arg in args for url in _URL_IN_TEXT.findall(arg)]


def _has_password_in_url(url: str) -> bool:
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    return "@" in netloc and ":" in netloc.rsplit("@", 1)[0]


def _url_destinations(urls: Iterable[str], out: _Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for url in urls:
        if url.split("://", 1)[0].lower() in _LOCAL_SCHEMES:
            continue
        hosts.append(_url_host(url))
        if _has_password_in_url(url):
            out.add(_C.CREDENTIAL, f"URL {_shown(url)} carries a password")
    return hosts


# ─── network programs ─────────────────────────────────────────────────────────────────────────────

_CURL: Final = _grammar(
    short_values="AbcCdDeEFHKmoPQrtTuUwxXYyz",
    long_values="--url --data --data-raw --data-binary --data-urlencode --data-ascii --json --form "
    "--form-string --header --output --user --request --upload-file --proxy --proxy-user --cookie "
    "--cookie-jar --referer --user-agent --connect-to --resolve --config --max-time --connect-timeout "
    "--retry --cacert --cert --key --output-dir --write-out --range --oauth2-bearer --netrc-file "
    "--dump-header --continue-at --interface --unix-socket --limit-rate --max-filesize --pass "
    "--proxy-header --quote --retry-delay --retry-max-time --speed-limit --speed-time --time-cond "
    "--trace --trace-ascii --variable --aws-sigv4 --mail-from --mail-rcpt --url-query",
    stop_at_operand=False,
)
_CURL_SENDS: Final = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii",
                      "--json", "-F", "--form", "--form-string", "-T", "--upload-file", "--mail-rcpt")
_CURL_SECRETS: Final = ("-u", "--user", "-U", "--proxy-user", "--oauth2-bearer", "-E", "--cert", "--key",
                        "--pass", "-n", "--netrc", "--netrc-file", "--netrc-optional", "--aws-sigv4")
_SENDING_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _curl(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _CURL)
    if parsed is None:
        out.network("curl contacts a host codeflux cannot read", [None])
        return
    reason = "curl transfers data over the network"
    hosts = _operand_destinations([*parsed.values("--url", "-x", "--proxy"), *parsed.operands], out)
    if parsed.has("-K", "--config", "--connect-to", "--resolve", "--unix-socket") or not hosts:
        hosts.append(None)
    out.network(reason, hosts)
    methods = {value.upper() for value in parsed.values("-X", "--request")}
    if parsed.has(*_CURL_SENDS) or methods & _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, "curl sends data to a remote host")
    if parsed.has(*_CURL_SECRETS):
        out.add(_C.CREDENTIAL, "curl is given credentials (user, token, certificate or netrc)")


def _operand_destinations(operands: Iterable[str], out: _Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for operand in operands:
        if "://" in operand:
            hosts.extend(_url_destinations([operand], out))
        else:
            hosts.append(_host_of(operand, bare_names=False))
    return hosts


_WGET: Final = _grammar(
    short_values="OoaPeUtTwQiBlARDXIY",
    long_values="--output-document --output-file --append-output --directory-prefix --user --password "
    "--http-user --http-password --post-data --post-file --body-data --body-file --method --header "
    "--input-file --execute --user-agent --tries --timeout --wait --quota --level --accept --reject "
    "--domains --load-cookies --save-cookies --certificate --private-key --ca-certificate --base "
    "--ftp-user --ftp-password --proxy-user --proxy-password",
    stop_at_operand=False,
)


def _wget(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _WGET)
    if parsed is None:
        out.network("wget contacts a host codeflux cannot read", [None])
        return
    hosts = _operand_destinations(parsed.operands, out)
    if parsed.has("-i", "--input-file", "-e", "--execute", "-B", "--base") or not hosts:
        hosts.append(None)
    out.network("wget downloads over the network", hosts)
    if parsed.has("--post-data", "--post-file", "--body-data", "--body-file") or {
        value.upper() for value in parsed.values("--method")
    } & _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, "wget sends data to a remote host")
    if parsed.has("--user", "--password", "--http-user", "--http-password", "--ftp-password",
                  "--proxy-password", "--private-key", "--certificate"):
        out.add(_C.CREDENTIAL, "wget is given credentials")


_HTTPIE_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _httpie(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _grammar(short_values="abAov", stop_at_operand=False))
    operands = list(parsed.operands) if parsed else []
    method = operands.pop(0).upper() if operands and operands[0].upper() in _HTTPIE_METHODS else "GET"
    url = operands.pop(0) if operands else ""
    host = "localhost" if url.startswith(":") else _host_of(url, bare_names=True)
    out.network(f"{command.program} sends an HTTP request", [host])
    if operands or method in _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} sends data to a remote host")


def _network_client(command: _Command, out: _Findings) -> None:
    """nc, telnet, ftp, ping, dig …: hosts from URLs and host-like operands; unscoped if unsure."""
    hosts = _url_destinations(_urls_in(command.args), out)
    unsure = False
    for arg in command.args:
        if arg.startswith("-") or "://" in arg or arg.isdigit():
            continue
        host = _host_of(arg.lstrip("@"), bare_names=False)
        if host is None:
            unsure = True
        else:
            hosts.append(host)
    if unsure or not hosts:
        hosts.append(None)
    out.network(f"{command.program} talks to a network host", hosts)
    executes = {"-e", "-c", "--exec", "--sh-exec", "--lua-exec"}
    if command.program == "nc" and any(arg.split("=")[0] in executes for arg in command.args):
        out.unknowable("nc -e/-c runs a program fed by the network")
    if command.program == "socat" and any(arg.upper().startswith(("EXEC:", "SYSTEM:")) for arg in command.args):
        out.unknowable("socat EXEC:/SYSTEM: runs a program fed by the network")


_SSH: Final = _grammar(short_values="BbcDEeFIiJLlmOopQRSWw", stop_at_operand=True)
_CODE_RUNNING_SSH_OPTIONS: Final = ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
                                    "remotecommand", "match")


def _ssh_options(parsed: _Parsed, program: str, out: _Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for value in parsed.values("-o"):
        if value.lower().replace(" ", "").startswith(_CODE_RUNNING_SSH_OPTIONS):
            out.unknowable(f"{program} -o {_shown(value)} runs a local command")
        if value.lower().startswith("proxyjump"):
            hosts.extend(_host_of(jump, bare_names=True) for jump in re.split(r"[=\s,]+", value)[1:] if jump)
    if parsed.has("-F", "-S"):
        out.add(_C.PRIVILEGED, f"{program} -F/-S picks a config file or program that can run commands")
    if parsed.has("-i", "-A", "-I"):
        out.add(_C.CREDENTIAL, f"{program} uses a private key or forwards the agent")
    for jumps in parsed.values("-J"):
        hosts.extend(_host_of(jump, bare_names=True) for jump in jumps.split(","))
    return hosts


def _ssh(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _SSH)
    if parsed is None or not parsed.operands:
        out.network(f"{command.program} opens a network connection", [None])
        return
    hosts = _ssh_options(parsed, command.program, out)
    hosts.append(_host_of(parsed.operands[0], bare_names=True))
    out.network(f"{command.program} logs in to a remote host", hosts)
    if command.program == "ssh-copy-id":
        out.add(_C.CREDENTIAL, "ssh-copy-id installs a key on a remote host")


_REMOTE_SPEC: Final = re.compile(r"(?:[^@/\s:]+@)?([^@/\s:]+)::?(?!//).*", flags=re.DOTALL)


def _copy_destination(word: str) -> str | bool:
    """A remote copy operand's host; True for a remote with an unreadable host; False if local."""
    if "://" in word:
        return _url_host(word) or True
    if word.startswith(("/", "./", "../", "~")) or _DRIVE.match(word):
        return False
    match = _REMOTE_SPEC.fullmatch(word)
    if match is None:
        return False
    return _normalize_host(match.group(1), bare_names=True) or True


def _remote_copy(command: _Command, out: _Findings) -> None:
    """scp, sftp, rsync: network only when an operand names a remote (``host:path``, a URL)."""
    is_rsync = command.program == "rsync"
    grammar = (
        _grammar(short_values="eBfMT", long_values="--rsh --rsync-path --exclude --include --filter "
                 "--files-from --exclude-from --include-from --password-file --log-file --temp-dir "
                 "--compare-dest --copy-dest --link-dest --backup-dir --suffix --chmod --chown",
                 stop_at_operand=False)
        if is_rsync
        else _grammar(short_values="cDFiJloPSX", stop_at_operand=False)
    )
    parsed = _parse_options(command.args, grammar) or _Parsed(options=(), operands=tuple(command.args))
    hosts: list[str | None] = [] if is_rsync else _ssh_options(parsed, command.program, out)
    remote = command.program == "sftp"
    for operand in parsed.operands:
        destination = _copy_destination(operand)
        if destination is False:
            continue
        remote = True
        hosts.append(destination if isinstance(destination, str) else None)
    for shell in parsed.values("-e", "--rsh"):
        _run_script(shell, command, out)
    if is_rsync and any(name.startswith(("--delete", "--remove-source")) for name, _ in parsed.options):
        out.add(_C.DESTRUCTIVE, "rsync --delete removes files at the destination")
    if parsed.has("--password-file"):
        out.add(_C.CREDENTIAL, "rsync reads a password file")
    if remote:
        out.network(f"{command.program} copies to or from a remote host", hosts)


def _openssl(command: _Command, out: _Findings) -> None:
    if command.args and command.args[0] in {"s_client", "s_server", "ocsp", "s_time"}:
        connects = [value for name, value in zip(command.args, command.args[1:], strict=False)
                    if name in {"-connect", "-host"}]
        out.network(f"openssl {command.args[0]} opens a TLS connection",
                    [_host_of(value, bare_names=True) for value in connects])


# ─── git ──────────────────────────────────────────────────────────────────────────────────────────

_GIT_GLOBAL: Final = _grammar(
    short_values="Cc",
    long_values="--git-dir --work-tree --namespace --super-prefix --config-env --list-cmds",
)
_GIT_REMOTE_OPTIONS: Final = _grammar(
    short_values="objc",
    long_values="--depth --branch --origin --reference --reference-if-able --separate-git-dir --template "
    "--config --filter --shallow-since --shallow-exclude --server-option --bundle-uri --upload-pack "
    "--receive-pack --exec --jobs --push-option --repo --deepen --negotiation-tip --refmap "
    "--recurse-submodules-default --ref-format",
    stop_at_operand=False,
)
_GIT_NETWORK: Final = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "fetch-pack", "send-pack",
                                 "http-fetch", "http-push", "svn", "p4", "daemon", "instaweb"})
_GIT_SHARED_STATE: Final = frozenset({"branch", "tag", "update-ref", "symbolic-ref", "notes", "replace",
                                      "stash", "worktree", "gc", "repack", "prune", "maintenance", "reflog",
                                      "pack-refs"})
_GIT_CODE_CONFIG: Final = re.compile(
    r"(?i)(core\.(hookspath|fsmonitor|sshcommand|pager|editor|gitproxy|askpass|attributesfile)|alias\..*|"
    r".*\.command|diff\..*\.textconv|filter\..*|credential\..*|gpg\..*program|sequence\.editor|"
    r"url\..*\.(insteadof|pushinsteadof)|include\..*|includeif\..*|merge\..*\.driver|uploadpack\..*|"
    r"receive\..*|remote\..*\.(uploadpack|receivepack|proxy)|http\..*proxy.*|protocol\..*)"
)


_HARMLESS_GIT_CONFIG: Final = re.compile(
    r"(?i)(color|advice|user|log|format|column|i18n|init|blame|status|grep|commit|tag|branch|pull|rebase)\.[a-z]+|"
    r"core\.(quotepath|autocrlf|abbrev|safecrlf|ignorecase|filemode|longpaths)"
)
_GIT_PROGRAM_CONFIG: Final = re.compile(
    r"(?i)core\.(fsmonitor|sshcommand|pager|editor|askpass|gitproxy)|alias\..*|sequence\.editor|.*\.command|"
    r"diff\..*\.(textconv|command)|filter\..*\.(clean|smudge|process)|merge\..*\.driver|credential\.helper"
)


def _git_remote_destination(word: str | None) -> tuple[str | None, bool]:
    """(host, is_network) of a git remote operand: a URL, ``[user@]host:path``, a path or a name."""
    if word is None:
        return None, True
    if "://" in word:
        if word.split("://", 1)[0].lower() in _LOCAL_SCHEMES:
            return None, False
        return _url_host(word), True
    if word.startswith(("/", "./", "../", "~")) or word in {".", ".."}:
        return None, False
    match = _REMOTE_SPEC.fullmatch(word)
    if match is not None and "/" not in word.split(":", 1)[0]:
        return _normalize_host(match.group(1), bare_names=True), True
    return None, True  # a remote name: its URL lives in config


def _git(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _GIT_GLOBAL)
    if parsed is None:
        out.unknowable("git has options codeflux cannot read")
        return
    risky = [setting for setting in parsed.values("-c") if not _HARMLESS_GIT_CONFIG.fullmatch(setting.split("=")[0])]
    if risky or parsed.has("--config-env") or any(name == "--exec-path" and value for name, value in parsed.options):
        out.add(_C.PRIVILEGED, "git -c/--config-env/--exec-path can make git run programs or redirect traffic")
    for setting in parsed.values("-c"):
        key, _, value = setting.partition("=")
        if _GIT_PROGRAM_CONFIG.fullmatch(key) and value:
            _run_script(value.removeprefix("!"), command, out)
    if not parsed.operands:
        return
    sub, args = parsed.operands[0], parsed.operands[1:]
    handler = _GIT_SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(sub, args, command, out)
    elif sub.startswith("credential"):
        out.add(_C.CREDENTIAL, f"git {sub} reads or stores credentials")
    elif sub in _GIT_NETWORK:
        _git_network(sub, args, command, out)
    elif sub in _GIT_SHARED_STATE:
        _git_shared_state(sub, args, command, out)


def _git_network(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    parsed = _parse_options(args, _GIT_REMOTE_OPTIONS) or _Parsed(options=(), operands=tuple(args))
    operands = list(parsed.operands)
    host, networked = _git_remote_destination(operands[0] if operands else None)
    extra = _url_destinations(_urls_in(operands[1:]), out) if sub == "clone" else []
    if networked:
        out.network(f"git {sub} talks to a remote repository", [host, *extra])
    runs_program = parsed.has("--upload-pack", "--receive-pack", "--exec", "--template", "-c", "--config")
    if runs_program or (sub == "clone" and parsed.has("-u")):
        out.add(_C.PRIVILEGED, f"git {sub} is told to run a program or apply config")
    if sub == "push":
        out.add(_C.EXTERNAL_COMMUNICATION, "git push publishes commits to a shared remote")
        forced = parsed.has("-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror",
                            "--delete", "-d", "--prune")
        if forced or any(spec.startswith(("+", ":")) for spec in operands[1:]):
            out.add(_C.DESTRUCTIVE, "git push rewrites or deletes history on the remote")
    if sub in {"daemon", "instaweb"}:
        out.add(_C.PROCESS, f"git {sub} serves the repository")


def _git_shared_state(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    listing_words = {"-l", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--show-current", "list", "show"}
    listing = (not args and sub != "stash") or (bool(args) and all(arg in listing_words for arg in args))
    if sub in {"branch", "tag", "stash", "worktree", "notes", "reflog"} and listing:
        return
    out.add(_C.OUTSIDE_WRITE, f"git {sub} changes refs or objects shared with the user's repository")
    deleting = {"-d", "-D", "--delete", "drop", "clear", "remove", "prune", "expire", "delete", "-f", "--force"}
    if sub in {"prune", "filter-branch"} or deleting & set(args) or any(a.startswith("--prune") for a in args):
        out.add(_C.DESTRUCTIVE, f"git {sub} deletes refs, objects or worktrees")


def _git_destructive_when(flags: frozenset[str], reason: str, *, always: bool = False) -> Callable[
    [str, Sequence[str], _Command, _Findings], None
]:
    def handle(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
        if always or flags & set(args) or any(arg.split("=")[0] in flags for arg in args):
            out.add(_C.DESTRUCTIVE, f"git {sub} {reason}")

    return handle


def _git_clean(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    dry = any(arg in {"-n", "--dry-run"} or (arg.startswith("-") and not arg.startswith("--") and "n" in arg)
              for arg in args)
    if not dry:
        out.add(_C.DESTRUCTIVE, "git clean deletes untracked files for good")


def _git_checkout(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    if {"-f", "--force", "--", ".", "--discard-changes", "-p", "--patch"} & set(args):
        out.add(_C.DESTRUCTIVE, f"git {sub} overwrites uncommitted changes")


def _git_restore(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    staged_only = bool({"-S", "--staged"} & set(args)) and not {"-W", "--worktree"} & set(args)
    if not staged_only:
        out.add(_C.DESTRUCTIVE, "git restore overwrites uncommitted changes")


def _git_config(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "get", "list"}
    keys = [arg for arg in args if not arg.startswith("-")]
    if any("credential" in key.lower() or "token" in key.lower() or "password" in key.lower() for key in keys):
        out.add(_C.CREDENTIAL, "git config touches a credential setting")
    if reading & set(args):
        return
    out.add(_C.OUTSIDE_WRITE, "git config writes configuration shared with the user's repository")
    if any(_GIT_CODE_CONFIG.fullmatch(key) for key in keys):
        out.add(_C.PRIVILEGED, "git config sets a key that makes git run programs or redirect traffic")


def _git_remote(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    action = next((arg for arg in args if not arg.startswith("-")), None)
    if action in {"add", "remove", "rm", "rename", "set-url", "set-branches", "set-head"}:
        out.add(_C.OUTSIDE_WRITE, f"git remote {action} edits remotes shared with the user's repository")
        for url in [arg for arg in args if arg != action and not arg.startswith("-")][1:]:
            host, networked = _git_remote_destination(url)
            if networked and action in {"add", "set-url"} and "-f" in args:
                out.network("git remote add -f fetches", [host])
    elif action in {"update", "prune"} or (action == "show" and "-n" not in args):
        out.network(f"git remote {action} contacts the remote", [None])


def _git_submodule(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    operands = [arg for arg in args if not arg.startswith("-")]
    action = operands[0] if operands else "status"
    if action == "foreach":
        index = args.index("foreach")
        _run_script(" ".join(args[index + 1 :]), command, out)
    elif action == "add":
        host, networked = _git_remote_destination(operands[1] if len(operands) > 1 else None)
        if networked:
            out.network("git submodule add clones a repository", [host])
    elif action in {"update", "sync", "init"} and "--no-fetch" not in args:
        out.network(f"git submodule {action} may fetch submodules", [None])


def _git_lfs(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    action = args[0] if args else ""
    if action in {"install", "update"}:
        out.add(_C.PRIVILEGED, "git lfs install writes repository hooks")
        out.add(_C.OUTSIDE_WRITE, "git lfs install changes git configuration")
    elif action in {"fetch", "pull", "push", "clone", "checkout", "fsck", "prune", "migrate"}:
        out.network(f"git lfs {action} talks to the LFS server", [None])


def _git_send_email(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    out.network("git send-email sends mail", [None])
    out.add(_C.EXTERNAL_COMMUNICATION, "git send-email sends patches by mail")


def _git_exec_option(option_names: frozenset[str]) -> Callable[[str, Sequence[str], _Command, _Findings], None]:
    """rebase --exec, difftool --extcmd …: the option's value is a shell string git runs."""

    def handle(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
        for index, arg in enumerate(args):
            name, has_value, value = arg.partition("=")
            if name in option_names:
                script = value if has_value else (args[index + 1] if index + 1 < len(args) else "")
                _run_script(script, command, out)

    return handle


def _git_bisect(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    if args[:1] == ["run"] and len(args) > 1:
        _run_inner(args[1:], command, out)


def _git_hook(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    out.add(_C.PRIVILEGED, "git hook runs repository hooks")


def _git_archive(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    remotes = [arg.split("=", 1)[1] for arg in args if arg.startswith("--remote=")]
    remotes += [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--remote"]
    for remote in remotes:
        out.network("git archive --remote fetches from a remote", [_git_remote_destination(remote)[0]])


def _git_filter(sub: str, args: Sequence[str], command: _Command, out: _Findings) -> None:
    out.add(_C.DESTRUCTIVE, f"git {sub} rewrites history")
    out.add(_C.OUTSIDE_WRITE, f"git {sub} rewrites refs shared with the user's repository")
    out.unknowable(f"git {sub} runs shell snippets codeflux does not read")


_GitHandler = Callable[[str, Sequence[str], _Command, _Findings], None]
_GIT_SUBCOMMANDS: Final[Mapping[str, _GitHandler]] = {
    "reset": _git_destructive_when(frozenset({"--hard", "--merge", "--keep"}), "discards uncommitted work"),
    "clean": _git_clean,
    "checkout": _git_checkout,
    "switch": _git_checkout,
    "restore": _git_restore,
    "config": _git_config,
    "remote": _git_remote,
    "submodule": _git_submodule,
    "lfs": _git_lfs,
    "send-email": _git_send_email,
    "rebase": _git_exec_option(frozenset({"-x", "--exec"})),
    "difftool": _git_exec_option(frozenset({"-x", "--extcmd"})),
    "mergetool": _git_exec_option(frozenset({"--tool-cmd"})),
    "bisect": _git_bisect,
    "hook": _git_hook,
    "archive": _git_archive,
    "filter-branch": _git_filter,
    "filter-repo": _git_filter,
}


# ─── package managers and hosted services ─────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class _Act:
    """What a subcommand does: the capabilities it needs and the phrase that explains them."""

    capabilities: tuple[Capability, ...]
    phrase: str


_INSTALLS: Final = _Act(capabilities=(_C.NETWORK, _C.INSTALL), phrase="downloads and installs packages")
_DOWNLOADS: Final = _Act(capabilities=(_C.NETWORK,), phrase="downloads from a package index")
_UNINSTALLS: Final = _Act(capabilities=(_C.INSTALL,), phrase="changes the installed packages")
_PUBLISHES: Final = _Act(capabilities=(_C.NETWORK, _C.EXTERNAL_COMMUNICATION), phrase="publishes to a registry")
_LOGS_IN: Final = _Act(capabilities=(_C.NETWORK, _C.CREDENTIAL), phrase="handles registry credentials")
_RUNS: Final = _Act(capabilities=(), phrase="runs project code")


def _acts(**groups: str) -> Mapping[str, _Act]:
    table = {"installs": _INSTALLS, "downloads": _DOWNLOADS, "uninstalls": _UNINSTALLS,
             "publishes": _PUBLISHES, "logs_in": _LOGS_IN, "runs": _RUNS}
    return {word: table[group] for group, words in groups.items() for word in words.split()}


@dataclass(frozen=True, slots=True, kw_only=True)
class _PackageManager:
    subcommands: Mapping[str, _Act]
    bare: _Act | None = None  # what the program does without a subcommand (yarn installs)
    offline_flags: frozenset[str] = frozenset()
    global_flags: frozenset[str] = frozenset()  # install outside the project (npm -g, pip --user)
    delegate: Mapping[str, str] = field(default_factory=dict)  # `uv pip …` is pip
    runs_inner: Mapping[str, _Grammar] = field(default_factory=dict)  # `uv run CMD …` runs CMD
    inline: frozenset[str] = frozenset()  # `bun -e CODE`


def _package_manager(manager: _PackageManager) -> _Handler:
    def handle(command: _Command, out: _Findings) -> None:
        inline = [arg for arg in command.args if arg.split("=")[0] in manager.inline]
        if inline:
            index = command.args.index(inline[0])
            code = inline[0].split("=", 1)[1] if "=" in inline[0] else " ".join(command.args[index + 1 :])
            _classify_inline_code(command.program, code, out)
            return
        words = [arg for arg in command.args if not arg.startswith("-")]
        sub = next((word for word in words if word in manager.subcommands or word in manager.delegate), None)
        rest = command.args[command.args.index(sub) + 1 :] if sub is not None else ()
        if sub is not None and sub in manager.delegate:
            _run_inner([manager.delegate[sub], *rest], command, out)
            return
        if sub is not None and sub in manager.runs_inner:
            parsed = _parse_options(rest, manager.runs_inner[sub])
            if parsed is None:
                out.unknowable(f"{command.program} {sub} has options codeflux cannot read")
            elif parsed.operands:
                _run_inner(parsed.operands, command, out)
        act = manager.subcommands[sub] if sub is not None else manager.bare
        if act is None:
            return
        offline = any(arg.split("=")[0] in manager.offline_flags for arg in command.args)
        label = f"{command.program} {sub}" if sub else command.program
        for capability in act.capabilities:
            if not (offline and capability is _C.NETWORK):
                out.add(capability, f"{label} {act.phrase}")
        if act.capabilities and any(arg.split("=")[0] in manager.global_flags for arg in command.args):
            out.add(_C.OUTSIDE_WRITE, f"{label} installs outside the project")

    return handle


_PIP: Final = _PackageManager(
    subcommands=_acts(installs="install", downloads="download wheel index search", uninstalls="uninstall",
                      runs="list show freeze check config cache debug hash inspect help"),
    offline_flags=frozenset({"--no-index"}),
    global_flags=frozenset({"--user", "--root", "--prefix", "--target", "-t", "--break-system-packages"}),
)
_NPM: Final = _PackageManager(
    subcommands=_acts(
        installs="install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic "
        "install-clean isntall-clean install-ci-test cit install-test it update up upgrade udpate dedupe ddp "
        "exec x init create innit rebuild rb link ln",
        uninstalls="uninstall remove rm r un unlink prune",
        publishes="publish unpublish deprecate dist-tag owner access star unstar team org hook",
        logs_in="login adduser add-user logout token whoami",
        downloads="audit outdated view v info show search s se find ping doctor fund repo docs home bugs pack",
        runs="run run-script rum urn test t tst start stop restart config help ls list",
    ),
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"-g", "--global", "--location"}),
)
_YARN: Final = _PackageManager(
    subcommands=_acts(installs="install add upgrade up dlx create import set", uninstalls="remove",
                      publishes="publish npm", logs_in="login logout", downloads="info outdated audit",
                      runs="run test start build exec node workspace workspaces why list help"),
    bare=_INSTALLS,
    runs_inner={"exec": _grammar()},
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"global"}),
)
_PNPM: Final = _PackageManager(
    subcommands=_acts(installs="install i add update up upgrade dlx create fetch import rebuild link env",
                      uninstalls="remove rm uninstall un prune", publishes="publish", logs_in="login logout",
                      downloads="audit outdated view info", runs="run test start exec list ls why help"),
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"-g", "--global"}),
    runs_inner={"exec": _grammar(short_values="C", long_values="--dir --filter")},
)
_BUN: Final = _PackageManager(
    subcommands=_acts(installs="install i add update upgrade x create link", uninstalls="remove rm unlink",
                      publishes="publish", runs="run test build"),
    global_flags=frozenset({"-g", "--global"}),
    inline=frozenset({"-e", "--eval", "-p", "--print"}),
)
_UV: Final = _PackageManager(
    subcommands=_acts(installs="add remove sync lock run tool python venv build export tree init",
                      publishes="publish", runs="version help cache self generate-shell-completion"),
    delegate={"pip": "pip"},
    offline_flags=frozenset({"--offline"}),
    runs_inner={"run": _grammar(short_values="pw", long_values="--with --with-editable --with-requirements "
                                "--python --package --extra --group --env-file --directory --project --index "
                                "--index-url --extra-index-url --find-links --only-group --no-group")},
)
_POETRY: Final = _PackageManager(
    subcommands=_acts(installs="install add remove update lock sync self", publishes="publish",
                      runs="run shell build check show env config version new init search help"),
    runs_inner={"run": _grammar(short_values="PC", long_values="--directory --project")},
)
_PIPX: Final = _PackageManager(
    subcommands=_acts(installs="install install-all upgrade upgrade-all inject reinstall reinstall-all run",
                      uninstalls="uninstall uninstall-all uninject", runs="list ensurepath completions"),
    global_flags=frozenset({"--global"}),
)
_CONDA: Final = _PackageManager(
    subcommands=_acts(installs="install create update upgrade env", uninstalls="remove uninstall",
                      downloads="search", runs="run list info activate deactivate clean config"),
    offline_flags=frozenset({"--offline"}),
    runs_inner={"run": _grammar(short_values="np", long_values="--name --prefix --cwd")},
)
_CARGO: Final = _PackageManager(
    subcommands=_acts(installs="install add", uninstalls="uninstall remove rm",
                      downloads="update fetch build b check c test t run r bench doc d clippy tree vendor "
                      "generate-lockfile metadata search package",
                      publishes="publish yank owner", logs_in="login logout",
                      runs="fmt clean new init help version"),
    offline_flags=frozenset({"--offline", "--frozen"}),
)
_GO: Final = _PackageManager(
    subcommands=_acts(installs="get install", downloads="mod build test run vet list generate work",
                      runs="fmt env version doc help clean bug fix tool"),
)
_GEM: Final = _PackageManager(
    subcommands=_acts(installs="install update fetch", uninstalls="uninstall cleanup", publishes="push yank owner",
                      logs_in="signin signout", runs="list build env help contents which"),
)
_BUNDLE: Final = _PackageManager(
    subcommands=_acts(installs="install update add lock binstubs cache outdated", uninstalls="remove clean",
                      runs="exec check list info config help"),
    bare=_INSTALLS,
    runs_inner={"exec": _grammar()},
)
_COMPOSER: Final = _PackageManager(
    subcommands=_acts(installs="install update require create-project global", uninstalls="remove",
                      runs="run run-script dump-autoload show validate help"),
)
_BREW: Final = _PackageManager(
    subcommands=_acts(installs="install upgrade reinstall tap update fetch bundle", uninstalls="uninstall remove rm "
                      "untap cleanup", runs="list info search config doctor help"),
)
_TWINE: Final = _PackageManager(subcommands=_acts(publishes="upload register", runs="check"))


def _system_package_manager(command: _Command, out: _Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} changes system packages (it needs root)")
    words = {arg for arg in command.args if not arg.startswith("-")}
    if words & {"install", "reinstall", "upgrade", "dist-upgrade", "full-upgrade", "add", "update", "refresh",
                "download", "source", "build-dep", "-S", "-Syu", "in", "up"} or any(
        arg.startswith("-S") or arg in {"-U", "-i"} for arg in command.args
    ):
        out.add(_C.INSTALL, f"{command.program} installs or updates packages")
        out.network(f"{command.program} downloads packages", [None])
    if words & {"remove", "purge", "autoremove", "erase", "del", "uninstall"} or "-R" in command.args:
        out.add(_C.INSTALL, f"{command.program} removes packages")


def _make(command: _Command, out: _Findings) -> None:
    targets = {arg for arg in command.args if not arg.startswith("-") and "=" not in arg}
    if targets & {"install", "uninstall"}:
        out.add(_C.INSTALL, "make install installs into system locations")
        out.add(_C.OUTSIDE_WRITE, "make install writes outside the project")


_GH_POSTING: Final = frozenset(
    _words(
        "create comment edit close reopen merge review delete fork archive unarchive rename sync transfer lock "
        "unlock pin unpin ready upload set add remove enable disable cancel rerun run develop deploy "
        "approve dispatch star unstar"
    )
)


def _hosted_git_cli(command: _Command, out: _Findings) -> None:
    """gh, glab, hub: the hosting service's API; posting actions are external communication."""
    words = [arg for arg in command.args if not arg.startswith("-")]
    out.network(f"{command.program} talks to the code-hosting service", [None])
    group = words[0] if words else ""
    action = words[1] if len(words) > 1 else ""
    if group == "auth" or group in {"secret", "variable", "ssh-key", "gpg-key"}:
        out.add(_C.CREDENTIAL, f"{command.program} {group} handles credentials or secrets")
    if group == "api" or action in _GH_POSTING or (group in {"pull-request", "release", "issue"} and action):
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} {group} {action} posts to the hosting service")
    if group == "extension" and action in {"install", "upgrade"}:
        out.add(_C.INSTALL, f"{command.program} extension {action} installs an extension")
    if command.program == "hub" and words:
        _git(_Command(program="git", args=command.args, depth=command.depth), out)


def _docker(command: _Command, out: _Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} controls the container engine (root-equivalent)")
    words = [arg for arg in command.args if not arg.startswith("-")]
    sub = words[0] if words else ""
    if sub in {"pull", "push", "run", "build", "login", "search", "create", "compose", "buildx", "image",
               "logout", "manifest", "trust", "plugin"}:
        out.network(f"{command.program} {sub} may contact a registry", [None])
    if sub in {"login", "logout", "secret"}:
        out.add(_C.CREDENTIAL, f"{command.program} {sub} handles registry credentials")
    if sub == "push":
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} push publishes an image")


def _cloud_cli(command: _Command, out: _Findings) -> None:
    out.network(f"{command.program} talks to a cloud API", [None])
    out.add(_C.CREDENTIAL, f"{command.program} uses cloud credentials")


# ─── destructive and privileged programs ──────────────────────────────────────────────────────────


def _rm(command: _Command, out: _Findings) -> None:
    flags = "".join(arg[1:] for arg in command.args if arg.startswith("-") and not arg.startswith("--"))
    longs = {arg for arg in command.args if arg.startswith("--")}
    if set(flags) & {"r", "R", "f"} or longs & {"--recursive", "--force", "--no-preserve-root"}:
        out.add(_C.DESTRUCTIVE, "rm -r/-f deletes files and trees without asking")


def _recursive_owner_or_mode(command: _Command, out: _Findings) -> None:
    if any(arg in {"-R", "--recursive"} or (arg.startswith("-") and "R" in arg and not arg.startswith("--"))
           for arg in command.args):
        out.add(_C.DESTRUCTIVE, f"{command.program} -R changes a whole tree")
    if command.program == "chmod" and any(
        re.fullmatch(r"[ugoa]*[+=][rwxXt]*s[rwxXst]*", arg) or re.fullmatch(r"[2-7][0-7]{3}", arg)
        for arg in command.args
    ):
        out.add(_C.PRIVILEGED, "chmod sets a setuid/setgid bit")


def _listing_shell_state(command: _Command, out: _Findings) -> None:
    """export / declare / typeset / set / readonly with no names print variables (secrets too)."""
    listing_flags = set() if command.program == "set" else {"-p", "-x", "-px", "-xp", "-g"}
    if all(arg in listing_flags for arg in command.args):
        out.add(_C.CREDENTIAL, f"{command.program} without names prints environment variables")
        return
    for arg in command.args:
        if _ASSIGNMENT.match(arg):
            name, _, value = arg.partition("=")
            _classify_assignment(name.rstrip("+"), value, out)


def _fixed(*capabilities: Capability, reason: str) -> _Handler:
    def handle(command: _Command, out: _Findings) -> None:
        out.add_all(capabilities, f"{command.program} {reason}")

    return handle


# ─── interpreters ─────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class _Interpreter:
    grammar: _Grammar
    inline: frozenset[str]  # options whose value (or the next argument) is program text
    module: frozenset[str] = frozenset()  # python -m
    version_flags: frozenset[str] = frozenset({"--version", "-V", "--help", "-h", "-v"})


_INLINE_BASE: Final = (_C.PROCESS, _C.NETWORK, _C.OUTSIDE_WRITE)
_INLINE_HINTS: Final[tuple[tuple[re.Pattern[str], tuple[Capability, ...], str], ...]] = (
    (re.compile(r"(?i)environ|getenv|process\.env|ENV\[|%ENV|\.ssh|\.aws|\.netrc|keyring|id_rsa|passw|secret|token"),
     (_C.CREDENTIAL,), "mentions environment variables or secrets"),
    (re.compile(r"(?i)rmtree|unlink|os\.remove|removedirs|rm\s+-|fs\.rm|truncate|File\.delete|FileUtils\.rm"),
     (_C.DESTRUCTIVE,), "deletes files"),
    (re.compile(r"(?i)\bpip\b|\bnpm\b|ensurepip|\binstall\b"), (_C.INSTALL,), "installs packages"),
    (re.compile(r"(?i)smtplib|sendmail|slack|webhook|mailto|discord|telegram"),
     (_C.EXTERNAL_COMMUNICATION,), "sends messages"),
    (re.compile(r"(?i)subprocess|os\.system|popen|\bexec|spawn|child_process|system\s*\(|`|%x|Invoke-Expression|"
                r"\biex\b|\beval\b|Process\.Start|__import__|importlib|base64|b64decode|ctypes"),
     _UNKNOWABLE, "runs other programs or evaluates generated code"),
)


def _classify_inline_code(program: str, code: str, out: _Findings) -> None:
    out.add_all(_INLINE_BASE, f"{program} runs inline code, which may use the network and write anywhere")
    for pattern, capabilities, phrase in _INLINE_HINTS:
        if pattern.search(code):
            out.add_all(capabilities, f"{program} inline code {phrase}")


_PYTHON_MODULES: Final[Mapping[str, str]] = {
    "pip": "pip", "uv": "uv", "pipx": "pipx", "poetry": "poetry", "twine": "twine", "conda": "conda",
}  # fmt: skip


def _interpreter(spec: _Interpreter) -> _Handler:
    def handle(command: _Command, out: _Findings) -> None:
        parsed = _parse_options(command.args, spec.grammar)
        if parsed is None:
            out.unknowable(f"{command.program} has options codeflux cannot read")
            return
        codes = parsed.values(*spec.inline)
        if codes or parsed.has(*spec.inline):
            for code in codes or [""]:
                _classify_inline_code(command.program, code, out)
            return
        modules = parsed.values(*spec.module)
        if modules:
            _classify_module(command, modules[0], list(parsed.operands), out)
            return
        operands = parsed.operands
        if operands and operands[0] != "-":
            _classify_script_file(command, operands[0], list(operands[1:]), out)
        elif not parsed.has(*spec.version_flags) or operands:
            out.unknowable(f"{command.program} reads its program from stdin, which codeflux cannot see")

    return handle


def _classify_module(command: _Command, module: str, rest: list[str], out: _Findings) -> None:
    top = module.split(".", maxsplit=1)[0]
    if top in _PYTHON_MODULES:
        _run_inner([_PYTHON_MODULES[top], *rest], command, out)
    elif module in {"http.server", "SimpleHTTPServer", "smtpd", "aiosmtpd", "ftplib", "pydoc"} or top in {
        "http", "urllib", "requests", "httpx", "ftplib", "smtplib", "xmlrpc", "webbrowser"
    }:
        out.network(f"{command.program} -m {module} uses the network", [None])
    elif top in {"ensurepip", "venv", "virtualenv", "build"}:
        out.add(_C.INSTALL, f"{command.program} -m {module} creates or installs into an environment")
        if top in {"ensurepip", "build", "virtualenv"}:
            out.network(f"{command.program} -m {module} may download packages", [None])


def _classify_script_file(command: _Command, script: str, rest: list[str], out: _Findings) -> None:
    out.add(_C.PROCESS, f"{command.program} runs the script {_shown(script)} (repository code)")
    if script.rsplit("/", 1)[-1] == "setup.py" and command.program in {"python", "pypy"}:
        words = set(rest)
        if words & {"install", "develop", "easy_install", "bdist_egg"}:
            out.add(_C.INSTALL, "setup.py install changes the installed packages")
            out.network("setup.py install may download dependencies", [None])
        if words & {"upload", "register"}:
            out.add_all((_C.NETWORK, _C.EXTERNAL_COMMUNICATION), "setup.py upload publishes a package")


_PYTHON: Final = _Interpreter(
    grammar=_grammar("bBdEhiIOPqsSuvVxR", "cmWX", long_values="--check-hash-based-pycs"),
    inline=frozenset({"-c"}),
    module=frozenset({"-m"}),
)
_NODE: Final = _Interpreter(
    grammar=_grammar(short_values="eprC", long_values="--eval --print --require --import --loader "
                     "--experimental-loader --input-type --env-file --conditions --inspect-port --title "
                     "--redirect-warnings --openssl-config --icu-data-dir --disable-warning --watch-path"),
    inline=frozenset({"-e", "-p", "--eval", "--print"}),
)
_PERL: Final = _Interpreter(
    grammar=_grammar(short_values="eEIMm", short_optional="il0CdDxlWV"),
    inline=frozenset({"-e", "-E"}),
)
_RUBY: Final = _Interpreter(
    grammar=_grammar(short_values="eIrCEF", short_optional="0ixlW"),
    inline=frozenset({"-e"}),
)
_PHP: Final = _Interpreter(
    grammar=_grammar(short_values="rBREcdzfSt"),
    inline=frozenset({"-r", "-B", "-R", "-E"}),
)
_SIMPLE_E: Final = _Interpreter(grammar=_grammar(short_values="elL"), inline=frozenset({"-e", "-E"}))
_EXPECT: Final = _Interpreter(grammar=_grammar(short_values="cf"), inline=frozenset({"-c"}))


def _powershell(command: _Command, out: _Findings) -> None:
    lowered = [arg.lower() for arg in command.args]
    inline = {"-c", "-command", "-encodedcommand", "-ec", "-enc", "-e", "-commandwithargs", "-cwa"}
    for index, arg in enumerate(lowered):
        if arg in inline:
            code = command.args[index + 1] if index + 1 < len(command.args) else ""
            _classify_inline_code(command.program, code, out)
            if arg.startswith(("-e", "-enc")):
                out.unknowable(f"{command.program} runs an encoded command codeflux cannot read")
            return
    files = [arg for arg in command.args if not arg.startswith("-")]
    if files:
        _classify_script_file(command, files[0], files[1:], out)
    else:
        out.unknowable(f"{command.program} reads its commands from stdin, which codeflux cannot see")


def _deno(command: _Command, out: _Findings) -> None:
    sub = command.args[0] if command.args else ""
    if sub == "eval":
        _classify_inline_code("deno", " ".join(command.args[1:]), out)
        return
    args = command.args[1:]
    if any(arg in {"-A", "--allow-all"} for arg in args):
        out.add_all(_INLINE_BASE, "deno runs with every permission")
    nets = [arg for arg in args if arg.startswith("--allow-net")]
    for flag in nets:
        hosts = flag.split("=", 1)[1].split(",") if "=" in flag else [""]
        out.network("deno --allow-net lets the program use the network",
                    [_host_of(host, bare_names=True) if host else None for host in hosts])
    if any(arg.startswith(("--allow-run", "--allow-ffi")) for arg in args):
        out.unknowable("deno --allow-run/--allow-ffi lets the program run anything")
    if any(arg.startswith(("--allow-write", "--allow-env")) for arg in args):
        out.add_all((_C.OUTSIDE_WRITE, _C.CREDENTIAL), "deno may write files and read the environment")
    if sub in {"install", "add", "cache"} or _urls_in(args):
        out.network(f"deno {sub} downloads modules", _url_destinations(_urls_in(args), out) or [None])


def _awk(command: _Command, out: _Findings) -> None:
    parsed = _parse_options(command.args, _grammar(short_values="fvFE", stop_at_operand=True))
    program = parsed.operands[0] if parsed and parsed.operands and not parsed.has("-f") else ""
    if re.search(r"system|getline|\||>|/inet", program) or (parsed is not None and parsed.has("-f")):
        _classify_inline_code("awk", program, out)


# ─── the program table ────────────────────────────────────────────────────────────────────────────

_ALIASES: Final[Mapping[str, str]] = {
    "nodejs": "node", "netcat": "nc", "ncat": "nc", "gpg2": "gpg", "podman": "docker", "nerdctl": "docker",
    "mamba": "conda", "micromamba": "conda", "gawk": "awk", "mawk": "awk", "nawk": "awk", "pypy": "python",
    "luajit": "lua", "powershell": "pwsh", "bunx": "npx", "pnpx": "npx", "yum": "dnf", "apt": "apt-get",
    "aptitude": "apt-get", "https": "http", "xh": "http", "xhs": "http", "bundler": "bundle",
    "sudoedit": "sudo", "uvx": "npx", "rbash": "bash", "doas": "sudo",
}  # fmt: skip
_SHELLS: Final = "sh bash zsh dash ksh mksh ash yash posh fish csh tcsh xonsh nu elvish"
_NETWORK_CLIENTS: Final = (
    "nc socat telnet ftp tftp lftp mosh ping ping6 dig nslookup host whois traceroute tracepath mtr nmap "
    "ssh-keyscan websocat grpcurl aria2c ngrok open xdg-open sensible-browser w3m lynx links elinks"
)
_CLOUD_CLIS: Final = "aws gcloud gsutil az doctl flyctl fly heroku vercel netlify firebase terraform pulumi " \
    "kubectl helm oc eksctl vault"
_CREDENTIAL_TOOLS: Final = "ssh-add ssh-agent ssh-keygen gpg gpg-agent security keyring secret-tool pass " \
    "gopass op bw lpass keychain kinit klist printenv git-credential-store git-credential-cache"
_PRIVILEGED_TOOLS: Final = "pkexec mount umount losetup insmod rmmod modprobe sysctl iptables ip6tables nft ufw " \
    "setcap systemctl service launchctl shutdown reboot halt poweroff init telinit useradd usermod userdel " \
    "groupadd groupdel visudo ldconfig dpkg rpm passwd chpasswd"
_DESTRUCTIVE_TOOLS: Final = "shred dd wipefs fdisk sfdisk cfdisk parted gdisk sgdisk truncate srm wipe kill " \
    "pkill killall blkdiscard mke2fs"
_MESSAGING_TOOLS: Final = "mail mailx sendmail mutt neomutt msmtp ssmtp swaks slack slack-cli slackcat " \
    "telegram-send wall write"
_RUNNERS: Final = "parallel gdb lldb unshare nsenter firejail bwrap proot tmux screen dtach expect-lite sem " \
    "entr script at batch crontab systemd-run vi vim nvim gvim ex view emacs ed"


def _wrapper_table() -> dict[str, _Handler]:
    return {
        "timeout": _wrap(_Wrapper(grammar=_grammar("v", "ks", "--preserve-status --foreground --verbose",
                                                   "--kill-after --signal", strict=True), preamble=1)),
        "nice": _wrap(_Wrapper(grammar=_grammar("", "n", "", "--adjustment", strict=True, numeric_flags=True))),
        "nohup": _wrap(_Wrapper(grammar=_grammar(long_flags="--help --version", strict=True))),
        "stdbuf": _wrap(_Wrapper(grammar=_grammar("", "ioe", "", "--input --output --error", strict=True))),
        "command": _wrap(_Wrapper(grammar=_grammar("pvV", strict=True))),
        "builtin": _wrap(_Wrapper(grammar=_grammar(strict=True))),
        "exec": _wrap(_Wrapper(grammar=_grammar("cl", "a", strict=True))),
        "time": _wrap(_Wrapper(grammar=_grammar("pvqa", "fo", "--portability --verbose --quiet --append",
                                                "--format --output", strict=True))),
        "xargs": _wrap(_Wrapper(grammar=_grammar(
            "0prtxo", "aEdILnPs", "--null --interactive --no-run-if-empty --verbose --exit --open-tty "
            "--show-limits", "--arg-file --delimiter --replace --max-lines --max-args --max-procs --max-chars "
            "--process-slot-var --eof", strict=True, short_optional="iel"))),
        "setsid": _wrap(_Wrapper(grammar=_grammar("cfw", "", "--ctty --fork --wait", strict=True))),
        "ionice": _wrap(_Wrapper(grammar=_grammar("t", "cnpPu", strict=True))),
        "taskset": _wrap(_Wrapper(grammar=_grammar("acp", "", "--all-tasks --cpu-list --pid", strict=True),
                                  preamble=1)),
        "flock": _wrap(_Wrapper(grammar=_grammar("sexunFoh", "wEc", "--shared --exclusive --unlock --nonblock "
                                                 "--no-fork --close --verbose", "--timeout --conflict-exit-code "
                                                 "--command", strict=True),
                                preamble=1, script_options=frozenset({"-c", "--command"}))),
        "unbuffer": _wrap(_Wrapper(grammar=_grammar("p", strict=True))),
        "chrt": _wrap(_Wrapper(grammar=_grammar("abdefiormpRv", "TPD", strict=True), preamble=1)),
        "strace": _wrap(_Wrapper(grammar=_grammar("cCdDfFhiknqrtTvVwxyYZ", "abeEIoOpPsSuUX", strict=True))),
        "ltrace": _wrap(_Wrapper(grammar=_grammar("bcCfhiLrStTVw", "aAeEDFlnopsux", strict=True))),
        "chroot": _wrap(_Wrapper(grammar=_grammar("", "", "--skip-chdir", "--userspec --groups", strict=True),
                                 preamble=1, privileged=True, needs_command=True)),
        "pkexec": _wrap(_Wrapper(grammar=_grammar("", "", "--disable-internal-agent --keep-cwd", "--user",
                                                  strict=True), privileged=True, needs_command=True)),
        "runuser": _su,
        "su": _su,
        "sudo": _sudo,
        "env": _env,
        "watch": _watch,
        "busybox": _busybox,
        "coproc": _coproc,
        "find": _find,
        "eval": _eval,
        "trap": _trap,
        "alias": _alias,
        "source": _source,
        ".": _source,
    }


def _program_table() -> dict[str, _Handler]:
    table: dict[str, _Handler] = {}
    table.update(dict.fromkeys(_words(_SHELLS), _shell))
    table.update(dict.fromkeys(_words(_NETWORK_CLIENTS), _network_client))
    table.update(dict.fromkeys(_words(_CLOUD_CLIS), _cloud_cli))
    table.update(dict.fromkeys(_words(_CREDENTIAL_TOOLS), _fixed(_C.CREDENTIAL, reason="reads or manages "
                                                                 "keys, passwords or the environment")))
    table.update(dict.fromkeys(_words(_PRIVILEGED_TOOLS), _fixed(_C.PRIVILEGED, reason="changes the system "
                                                                 "or runs with other privileges")))
    table.update(dict.fromkeys(_words(_DESTRUCTIVE_TOOLS), _fixed(_C.DESTRUCTIVE, reason="destroys data or "
                                                                  "stops processes")))
    table.update(dict.fromkeys(_words(_MESSAGING_TOOLS), _fixed(_C.NETWORK, _C.EXTERNAL_COMMUNICATION,
                                                                reason="sends messages to people")))
    table.update(dict.fromkeys(_words(_RUNNERS), _runner))
    table.update(dict.fromkeys(_words("export declare typeset readonly local set"), _listing_shell_state))
    table.update(dict.fromkeys(_words("gh glab hub"), _hosted_git_cli))
    table.update(dict.fromkeys(_words("chmod chown chgrp"), _recursive_owner_or_mode))
    table.update(dict.fromkeys(_words("dnf zypper pacman apk snap flatpak emerge port apt-get"),
                               _system_package_manager))
    table.update({
        "curl": _curl, "wget": _wget, "http": _httpie, "ssh": _ssh, "ssh-copy-id": _ssh, "scp": _remote_copy,
        "sftp": _remote_copy, "rsync": _remote_copy, "openssl": _openssl, "git": _git, "docker": _docker,
        "rm": _rm, "tar": _tar, "sed": _sed, "make": _make, "gmake": _make, "deno": _deno, "awk": _awk,
        "pwsh": _powershell,
        "python": _interpreter(_PYTHON), "node": _interpreter(_NODE), "perl": _interpreter(_PERL),
        "ruby": _interpreter(_RUBY), "php": _interpreter(_PHP), "lua": _interpreter(_SIMPLE_E),
        "rscript": _interpreter(_SIMPLE_E), "osascript": _interpreter(_SIMPLE_E),
        "julia": _interpreter(_SIMPLE_E), "expect": _interpreter(_EXPECT), "tclsh": _interpreter(_SIMPLE_E),
        "pip": _package_manager(_PIP), "npm": _package_manager(_NPM), "yarn": _package_manager(_YARN),
        "pnpm": _package_manager(_PNPM), "bun": _package_manager(_BUN), "uv": _package_manager(_UV),
        "poetry": _package_manager(_POETRY), "pipx": _package_manager(_PIPX), "conda": _package_manager(_CONDA),
        "cargo": _package_manager(_CARGO), "go": _package_manager(_GO), "gem": _package_manager(_GEM),
        "bundle": _package_manager(_BUNDLE), "composer": _package_manager(_COMPOSER),
        "brew": _package_manager(_BREW), "twine": _package_manager(_TWINE),
        "npx": _fixed(_C.NETWORK, _C.INSTALL, reason="downloads and runs a package"),
        "easy_install": _fixed(_C.NETWORK, _C.INSTALL, reason="downloads and installs packages"),
    })  # fmt: skip
    table.update(_wrapper_table())
    return table


_HANDLERS: Final[Mapping[str, _Handler]] = _program_table()
