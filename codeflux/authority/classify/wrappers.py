"""Look-through: programs whose arguments hold another command or a shell string, read as that command.

Wrappers (``env``, ``timeout``, ``nice``, ``nohup``, ``xargs``, ``sudo``, ``chroot`` …) are parsed with
a strict grammar, so that an option codeflux does not know cannot hide where the wrapped command
starts: such an argv is unknowable. Shells (``sh -c``), ``eval``, ``trap``, ``alias``, ``watch``,
``find -exec`` hand their strings to the shell lexer (``tar``'s program options are read in
:mod:`~codeflux.authority.classify.archives`). What the wrapped command
needs is added on top of what the wrapper itself needs (``sudo`` adds ``privileged``). The launchers
in :mod:`~codeflux.authority.classify.launchers` (``setpriv``, ``prlimit``, ``fakeroot`` …) are described
with the same :class:`Wrapper`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner, run_script, strip_assignments
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.hosts import host_of, names_a_destination
from codeflux.authority.classify.options import Grammar, Parsed, option_grammar, parse_options, table_words
from codeflux.domain.capabilities import Capability

_C = Capability


@dataclass(frozen=True, slots=True, kw_only=True)
class Wrapper:
    """How to find the command a wrapper runs, and what the wrapper itself adds to it."""

    grammar: Grammar
    preamble: int = 0  # operands before the wrapped command (timeout's duration, chroot's root)
    privileged: bool = False
    needs: tuple[tuple[Capability, str], ...] = ()  # what the wrapper itself adds, each with why
    script_options: frozenset[str] = frozenset()  # options whose value is a shell string (flock -c)
    script_after_preamble: bool = False  # `flock LOCK -c STRING`: the option may follow the preamble
    program_options: frozenset[str] = frozenset()  # options whose value is a program it runs (--faked)
    unknowable_options: frozenset[str] = frozenset()  # options that load code or config (fakeroot --lib)
    network_options: frozenset[str] = frozenset()  # options that use the network; a value is the destination
    needs_command: bool = False  # without a command the wrapper starts a shell: unknowable


def wrap_command(wrapper: Wrapper) -> Handler:
    """The handler of a wrapper: its own needs, what its options run, then the wrapped command."""

    def handle(command: Command, out: Findings) -> None:
        if wrapper.privileged:
            out.add(_C.PRIVILEGED, f"{command.program} runs a command with other privileges")
        for capability, why in wrapper.needs:
            out.add(capability, f"{command.program} {why}")
        parsed = parse_options(command.args, wrapper.grammar)
        if parsed is None:
            out.unknowable(f"{command.program} has options codeflux cannot read, so its command is unknown")
            return
        _read_wrapper_options(wrapper, parsed, command, out)
        operands = parsed.operands[wrapper.preamble :]
        if wrapper.script_after_preamble and operands and operands[0] in wrapper.script_options:
            run_script(operands[1] if len(operands) > 1 else "", command, out)
            return
        inner = strip_assignments(operands, out, appends=False)
        if inner:
            run_inner(inner, command, out)
        elif wrapper.needs_command and not parsed.values(*wrapper.script_options):
            out.unknowable(f"{command.program} without a command starts a shell")

    return handle


def _read_wrapper_options(wrapper: Wrapper, parsed: Parsed, command: Command, out: Findings) -> None:
    for script in parsed.values(*wrapper.script_options):
        run_script(script, command, out)
    for program in parsed.values(*wrapper.program_options):
        run_inner([program], command, out)
    for name, value in parsed.options:
        if name in wrapper.unknowable_options:
            out.unknowable(f"{command.program} {name} loads code or configuration codeflux does not read")
        if name in wrapper.network_options:
            out.network(f"{command.program} {name} uses the network",
                        [host_of(value, bare_names=True) if value else None])


_ENV: Final = option_grammar("i0v", "uCS", "--ignore-environment --null --debug --list-signal-handling "
                             "--block-signal --default-signal --ignore-signal --help --version",
                             "--unset --chdir --split-string", strict=True)


def _env(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, _ENV)
    if parsed is None:
        out.unknowable("env has options codeflux cannot read, so its command is unknown")
        return
    operands = parsed.operands[1:] if parsed.operands[:1] == ("-",) else parsed.operands  # `-` is `-i`
    splits = parsed.values("-S", "--split-string")
    if splits:
        # env splits -S strings into arguments and reads them as its own: options, NAME=value, command.
        words: list[str] = []
        for split in splits:
            try:
                words += shlex.split(split)
            except ValueError:
                out.unknowable(f"env -S string {shown(split)} cannot be parsed")
                return
        run_inner(["env", *words, *operands], command, out)
        return
    inner = strip_assignments(operands, out, appends=False)
    if inner:
        run_inner(inner, command, out)
    else:
        out.add(_C.CREDENTIAL, "env without a command prints every environment variable")


def _sudo(command: Command, out: Findings) -> None:
    """sudo (and doas, its alias); sudoedit, a program of its own, is ``sudo -e``: it only edits files."""
    editing = command.program == "sudoedit"
    out.add(_C.PRIVILEGED, "sudoedit edits files as root" if editing
            else f"{command.program} runs a command as another user (usually root)")
    grammar = option_grammar(
        "AbEeHiKklnPSsVvh", "CDghprTUu",
        "--askpass --background --preserve-env --edit --help --login --remove-timestamp --reset-timestamp "
        "--list --non-interactive --preserve-groups --stdin --shell --version --validate --set-home",
        "--close-from --chdir --group --host --prompt --chroot --role --type --command-timeout "
        "--other-user --user",
        strict=True,
    )
    parsed = parse_options(command.args, grammar)
    if parsed is None:
        out.unknowable(f"{command.program} has options codeflux cannot read, so its command is unknown")
        return
    if editing or parsed.has("-e", "--edit"):
        out.add(_C.OUTSIDE_WRITE, f"{'sudoedit' if editing else 'sudo -e'} edits files as root")
        return
    inner = strip_assignments(parsed.operands, out, appends=False)
    if inner:
        run_inner(inner, command, out)
    elif parsed.has("-i", "-s", "--login", "--shell"):
        out.unknowable(f"{command.program} without a command starts a root shell")


def _su(command: Command, out: Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} runs commands as another user")
    parsed = parse_options(command.args, option_grammar("flmpPh", "cgGsw", long_values="--command --group "
                                                        "--supp-group --shell --whitelist-environment",
                                                        stop_at_operand=False))
    scripts = parsed.values("-c", "--command") if parsed else []
    for script in scripts:
        run_script(script, command, out)
    if not scripts:
        out.unknowable(f"{command.program} without -c starts a shell")


def _shell(command: Command, out: Findings) -> None:
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
                run_script(value if has_value else (args[index] if index < len(args) else ""), command, out)
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
            run_script(operands[0], command, out)
        return
    if operands and not reads_stdin:
        out.add(_C.PROCESS, f"{command.program} runs the script {shown(operands[0])} (repository code)")
        if any(names_a_destination(arg) for arg in operands[1:]):
            out.network(f"{command.program} {shown(operands[0])} is given a network destination", [None])
        return
    out.unknowable(f"{command.program} reads its commands from stdin, which codeflux cannot see")


def _eval(command: Command, out: Findings) -> None:
    run_script(" ".join(command.args), command, out)


def _trap(command: Command, out: Findings) -> None:
    operands = [arg for arg in command.args if not arg.startswith("-")]
    if len(operands) >= 2:
        run_script(operands[0], command, out)


def _alias(command: Command, out: Findings) -> None:
    for arg in command.args:
        if "=" in arg:
            run_script(arg.split("=", 1)[1], command, out)


def _source(command: Command, out: Findings) -> None:
    if not command.args or command.args[0] in {"/dev/stdin", "-"}:
        out.unknowable(f"{command.program} reads commands from stdin, which codeflux cannot see")
    else:
        out.add(_C.PROCESS, f"{command.program} runs the script {shown(command.args[0])}")


def _watch(command: Command, out: Findings) -> None:
    grammar = option_grammar("bcdeghtxpwrC", "nq", "--beep --color --no-color --differences --errexit --chgexit "
                             "--exec --precise --no-title --no-wrap --no-rerun --help --version",
                             "--interval --equexit", strict=True)
    parsed = parse_options(command.args, grammar)
    if parsed is None:
        out.unknowable("watch has options codeflux cannot read, so its command is unknown")
        return
    if parsed.operands:
        # watch hands the joined operands to `sh -c` (unless -x); lexing them covers both cases.
        run_script(" ".join(parsed.operands), command, out)


def _busybox(command: Command, out: Findings) -> None:
    if command.args:
        run_inner(command.args, command, out)


def _find(command: Command, out: Findings) -> None:
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
            run_inner(inner, command, out)


def _coproc(command: Command, out: Findings) -> None:
    """``coproc [NAME] { …`` or ``coproc command …``."""
    inner = list(command.args)
    if len(inner) > 1 and inner[1] in {"{", "("}:
        inner = inner[2:]
    while inner and inner[0] in {"{", "("}:
        inner = inner[1:]
    if inner:
        run_inner(inner, command, out)


_SHELLS: Final = "sh bash zsh dash ksh mksh ash yash posh fish csh tcsh xonsh nu elvish"

WRAPPER_PROGRAMS: Final[Mapping[str, Handler]] = {
    **dict.fromkeys(table_words(_SHELLS), _shell),
    "timeout": wrap_command(Wrapper(grammar=option_grammar("v", "ks", "--preserve-status --foreground --verbose",
                                                     "--kill-after --signal", strict=True), preamble=1)),
    "nice": wrap_command(Wrapper(grammar=option_grammar("", "n", "", "--adjustment", strict=True, numeric_flags=True))),
    "nohup": wrap_command(Wrapper(grammar=option_grammar(long_flags="--help --version", strict=True))),
    "stdbuf": wrap_command(Wrapper(grammar=option_grammar("", "ioe", "", "--input --output --error", strict=True))),
    "command": wrap_command(Wrapper(grammar=option_grammar("pvV", strict=True))),
    "builtin": wrap_command(Wrapper(grammar=option_grammar(strict=True))),
    "exec": wrap_command(Wrapper(grammar=option_grammar("cl", "a", strict=True))),
    "time": wrap_command(Wrapper(grammar=option_grammar("pvqa", "fo", "--portability --verbose --quiet --append",
                                                  "--format --output", strict=True))),
    "xargs": wrap_command(Wrapper(grammar=option_grammar(
        "0prtxo", "aEdILnPs", "--null --interactive --no-run-if-empty --verbose --exit --open-tty "
        "--show-limits", "--arg-file --delimiter --replace --max-lines --max-args --max-procs --max-chars "
        "--process-slot-var --eof", strict=True, short_optional="iel"))),
    "setsid": wrap_command(Wrapper(grammar=option_grammar("cfw", "", "--ctty --fork --wait", strict=True))),
    "ionice": wrap_command(Wrapper(grammar=option_grammar("t", "cnpPu", strict=True))),
    "taskset": wrap_command(Wrapper(grammar=option_grammar("acp", "", "--all-tasks --cpu-list --pid", strict=True),
                              preamble=1)),
    "flock": wrap_command(Wrapper(grammar=option_grammar("sexunFohV", "wEc", "--shared --exclusive --unlock --nonblock "
                                                   "--nonblocking --nb --no-fork --close --verbose --help --version",
                                                   "--timeout --wait --conflict-exit-code --command", strict=True),
                            preamble=1, script_options=frozenset({"-c", "--command"}), script_after_preamble=True)),
    "unbuffer": wrap_command(Wrapper(grammar=option_grammar("p", strict=True))),
    "chrt": wrap_command(Wrapper(grammar=option_grammar("abdefiormpRv", "TPD", strict=True), preamble=1)),
    "strace": wrap_command(Wrapper(grammar=option_grammar("cCdDfFhiknqrtTvVwxyYZ", "abeEIoOpPsSuUX", strict=True))),
    "ltrace": wrap_command(Wrapper(grammar=option_grammar("bcCfhiLrStTVw", "aAeEDFlnopsux", strict=True))),
    "chroot": wrap_command(Wrapper(grammar=option_grammar("", "", "--skip-chdir", "--userspec --groups", strict=True),
                             preamble=1, privileged=True, needs_command=True)),
    "pkexec": wrap_command(Wrapper(grammar=option_grammar("", "", "--disable-internal-agent --keep-cwd", "--user",
                                                    strict=True), privileged=True, needs_command=True)),
    "runuser": _su,
    "su": _su,
    "sudo": _sudo,
    "sudoedit": _sudo,
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
"""Shells, wrappers and the other programs read through to the command they run."""
