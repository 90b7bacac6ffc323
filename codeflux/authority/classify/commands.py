"""Reading one command: argv[0] to a program, its arguments' path facts, its handler, and what it nests.

:func:`classify_argv` normalizes the program name (paths, ``.exe``, version suffixes, aliases), adds
``process``, checks every argument with :func:`~codeflux.authority.classify.paths.classify_command_path`
and hands the rest to the program's handler. :func:`classify_script` does the same for every command of
a shell string. Handlers reach nested commands through :func:`run_inner` and :func:`run_script`, one
level deeper each time; past :data:`MAX_NESTING` the command is unknowable. The program table is handed
in (and carried on each :class:`Command`), so this module does not import the handlers that call it.

A program the table does not name is handed to the table's :data:`UNKNOWN_PROGRAM` entry. A shell
redirection target is judged like a path argument and, since bash opens ``/dev/tcp/HOST/PORT`` as a
socket, as a possible network destination.

``NAME=value`` assignments are read here too: a variable that makes programs load code adds
``privileged``, a secret-looking one ``credential``, a proxy ``network``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.hosts import host_of, network_device
from codeflux.authority.classify.options import table_words
from codeflux.authority.classify.paths import classify_command_path, is_git_component
from codeflux.authority.classify.shell import (
    ASSIGNMENT,
    DYNAMIC_MARK,
    HERE_DOCUMENTS,
    NOT_A_COMMAND,
    RESERVED_PREFIXES,
    split_shell,
    substitutions,
)
from codeflux.domain.capabilities import Capability

_C = Capability

MAX_NESTING: Final = 8
"""Wrappers, shells and substitutions nested deeper than this are classified as unknowable."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """One program invocation, and the program table the commands it runs are looked up in."""

    program: str  # normalized name of argv[0]
    args: tuple[str, ...]  # argv[1:]
    depth: int
    programs: Mapping[str, Handler] = field(repr=False, compare=False)


Handler = Callable[[Command, Findings], None]
"""A program's entry in the table: it adds what one invocation of the program needs."""

UNKNOWN_PROGRAM: Final = "*"
"""The table entry read for every program the table does not name. No program has this name: a ``*``
in argv[0] makes the name one decided at run time, which is unknowable before any lookup."""


def is_table_program(word: str, programs: Mapping[str, Handler]) -> bool:
    """Whether ``word`` (a bare name or an absolute path) names a program in the table."""
    if not word or word.startswith("-") or ("/" in word and not word.startswith("/")):
        return False
    name = _program_name(word)
    return name != UNKNOWN_PROGRAM and name in programs

_VERSIONED: Final = re.compile(r"(python|pypy|pip|perl|ruby|php|node|lua|luajit|tclsh|wish|pwsh)[0-9.]*")
_DYNAMIC_NAME: Final = re.compile(r"[$`*?\[{]")
_ALIASES: Final[Mapping[str, str]] = {
    "nodejs": "node", "netcat": "nc", "ncat": "nc", "gpg2": "gpg", "podman": "docker", "nerdctl": "docker",
    "mamba": "conda", "micromamba": "conda", "gawk": "awk", "mawk": "awk", "nawk": "awk", "pypy": "python",
    "luajit": "lua", "bunx": "npx", "pnpx": "npx", "yum": "dnf", "apt": "apt-get",
    "aptitude": "apt-get", "https": "http", "xh": "http", "xhs": "http", "bundler": "bundle",
    "uvx": "npx", "rbash": "bash", "doas": "sudo",
}  # fmt: skip
"""Other names of the same program, read alike. A name whose program behaves differently (``sudoedit``
only edits; ``powershell`` runs a bare argument as a command where ``pwsh`` runs it as a script file)
is not an alias: it gets its own table entry, since a reader cannot tell an alias from its target."""


def _program_name(word: str) -> str:
    name = word.rsplit("/", 1)[-1].lower().removesuffix(".exe")
    versioned = _VERSIONED.fullmatch(name)
    base = versioned.group(1) if versioned else name
    return _ALIASES.get(base, base)


def classify_argv(argv: Sequence[str], out: Findings, *, depth: int, programs: Mapping[str, Handler]) -> None:
    """Classify one program invocation (argv[0] is the program), its handler looked up in ``programs``."""
    if depth > MAX_NESTING:
        out.unknowable(f"commands nested deeper than {MAX_NESTING} levels cannot be read")
        return
    if not argv:
        return
    head = argv[0]
    if head == DYNAMIC_MARK or _DYNAMIC_NAME.search(head) or not head:
        out.unknowable(f"program name {shown(head)} is decided at run time")
        return
    program = _program_name(head)
    out.add(_C.PROCESS, f"runs {program}")
    if any(is_git_component(part) for part in head.split("/")):
        out.add(_C.PRIVILEGED, f"program {shown(head)} lives in .git (a hook)")
    for argument in argv[1:]:
        classify_command_path(argument, out)
    command = Command(program=program, args=tuple(argv[1:]), depth=depth, programs=programs)
    handler = programs.get(program)
    if handler is not None:
        handler(command, out)
        return
    if program.startswith("mkfs"):
        out.add(_C.DESTRUCTIVE, f"{program} formats a file system")
    unknown = programs.get(UNKNOWN_PROGRAM)
    if unknown is not None:
        unknown(command, out)


def run_inner(argv: Sequence[str], command: Command, out: Findings) -> None:
    """Classify the command ``command`` runs in turn (an argv), one level deeper."""
    classify_argv(argv, out, depth=command.depth + 1, programs=command.programs)


def run_script(script: str, command: Command, out: Findings) -> None:
    """Classify the shell string ``command`` runs in turn, one level deeper."""
    classify_script(script, out, depth=command.depth + 1, programs=command.programs)


def classify_script(script: str, out: Findings, *, depth: int, programs: Mapping[str, Handler]) -> None:
    """Classify every command of a shell string, and every script substituted into its words."""
    if depth > MAX_NESTING:
        out.unknowable(f"commands nested deeper than {MAX_NESTING} levels cannot be read")
        return
    split = split_shell(script)
    if split is None:
        out.compound = True
        out.unknowable(f"shell string {shown(script)} cannot be parsed")
        return
    commands, compound = split
    out.compound = out.compound or compound
    for command in commands:
        for word in [*command.words, *command.targets]:
            inner = substitutions(word)
            if inner is None:
                out.unknowable(f"word {shown(word)} has an unbalanced substitution")
                continue
            for script_text in inner:
                out.compound = True
                classify_script(script_text, out, depth=depth + 1, programs=programs)
        for target, redirection in zip(command.targets, command.redirections, strict=True):
            classify_command_path(target, out)
            opens_socket, host = network_device(target)
            if opens_socket and redirection not in HERE_DOCUMENTS:
                out.network(f"redirection to {shown(target)} may open a network socket (/dev/tcp, /dev/udp)",
                            [host])
        _classify_shell_command(command.words, out, depth=depth, programs=programs)


def _classify_shell_command(
    words: list[str], out: Findings, *, depth: int, programs: Mapping[str, Handler]
) -> None:
    while words and words[0] in RESERVED_PREFIXES:
        words = words[1:]
    if words and words[0] == "function":  # `function name { body` — the body follows the name
        words = [word for word in words[2:] if word not in RESERVED_PREFIXES]
    if words and words[0] == "time":  # the bash keyword, with its one option
        words = words[2:] if words[1:2] == ["-p"] else words[1:]
    if not words or words[0] in NOT_A_COMMAND or words[0].startswith("#"):
        return
    words = strip_assignments(words, out, appends=True)
    if words:
        classify_argv(words, out, depth=depth, programs=programs)


# ─── environment assignments ──────────────────────────────────────────────────────────────────────

_CODE_LOADING_VARIABLES: Final = frozenset(
    table_words(
        """LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV PROMPT_COMMAND SHELLOPTS BASHOPTS PS4 IFS PATH
    PYTHONPATH PYTHONSTARTUP PYTHONHOME NODE_OPTIONS NODE_PATH PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB
    GIT_SSH GIT_SSH_COMMAND GIT_EXTERNAL_DIFF GIT_PAGER PAGER MANPAGER EDITOR VISUAL GIT_EDITOR
    GIT_SEQUENCE_EDITOR GIT_ASKPASS SSH_ASKPASS GIT_PROXY_COMMAND GIT_EXEC_PATH GIT_TEMPLATE_DIR
    GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG_COUNT GIT_CONFIG_PARAMETERS GIT_DIR
    GIT_WORK_TREE GIT_COMMON_DIR GIT_ALLOW_PROTOCOL LESSOPEN LESSCLOSE BROWSER"""
    )
)
_CODE_LOADING_PREFIXES: Final = ("LD_", "DYLD_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
_PROXY_VARIABLES: Final = frozenset({"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "no_proxy"})
_SECRET_VARIABLE: Final = re.compile(
    r"(?i).*(?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_CREDENTIALS?|_AUTH)$|"
    r"(?:AWS_|AZURE_|GOOGLE_APPLICATION_CREDENTIALS$|SSH_AUTH_SOCK$|NETRC$|KUBECONFIG$|DOCKER_CONFIG$).*"
)


def strip_assignments(words: Sequence[str], out: Findings, *, appends: bool) -> list[str]:
    """Classify the ``NAME=value`` words that lead ``words``; the words after them (the command).

    In a shell ``NAME+=value`` appends to NAME (``appends``); env and sudo take ``NAME+`` as the name.
    """
    rest = list(words)
    while rest and ASSIGNMENT.match(rest[0]):
        name, _, value = rest[0].partition("=")
        classify_assignment(name.rstrip("+") if appends else name, value, out)
        rest = rest[1:]
    return rest


def classify_assignment(name: str, value: str, out: Findings) -> None:
    """What setting ``name`` to ``value`` for a command needs (code loading, secrets, proxies, paths)."""
    classify_command_path(f"{name}={value}", out)
    if name in _CODE_LOADING_VARIABLES or name.startswith(_CODE_LOADING_PREFIXES):
        out.add(_C.PRIVILEGED, f"setting {name} makes programs load or run other code")
    if _SECRET_VARIABLE.fullmatch(name):
        out.add(_C.CREDENTIAL, f"setting {name} passes a secret-looking variable")
    if name.lower() in _PROXY_VARIABLES:
        out.network(f"setting {name} routes traffic through a proxy", [host_of(value, bare_names=True)])
