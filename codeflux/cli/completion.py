"""`codeflux completion bash|zsh|fish`: a shell completion script, built from the argparse parser itself.

Every command, every verb of a command (``task list``), every option a command or verb declares, and the choices
of an option or argument that has them (``--provider scripted|anthropic|…``) come from :func:`command_tree` of the
parser ``codeflux`` runs with, so the script cannot drift from the CLI; an option that takes a free value
(``--repo PATH``) completes file names. Hidden options are left out. No third-party dependency: the scripts are
plain bash (``complete -F``), zsh (``compdef``/``compadd``) and fish (``complete -c``).

Load it with ``source <(codeflux completion bash)`` (``~/.bashrc``), ``source <(codeflux completion zsh)``
after ``compinit`` (``~/.zshrc``), or ``codeflux completion fish > ~/.config/fish/completions/codeflux.fish``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

from codeflux.cli.context import CliContext

__all__ = ["CommandNode", "command_tree", "completion_script"]

NAME = "completion"
SUMMARY = "print a shell completion script (bash, zsh or fish) for codeflux's commands, verbs and options"

SHELLS = ("bash", "zsh", "fish")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in: bash, zsh or fish")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    from codeflux.cli.main import build_parser  # noqa: PLC0415 (main imports this module's package)

    ctx.stdout.write(completion_script(args.shell, command_tree(build_parser())))
    ctx.stdout.flush()
    return 0


@dataclass(slots=True)
class CommandNode:
    """One level of the command line: its flags, its options taking a value (with their choices, empty when
    free), the words that may follow it (verbs and argument choices) and the verbs' own nodes."""

    summary: str = ""
    flags: list[str] = field(default_factory=list)
    valued: dict[str, tuple[str, ...]] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    children: dict[str, CommandNode] = field(default_factory=dict)

    def walk(self, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], CommandNode]]:
        """This node and every node below it, each with the words that lead to it."""
        yield path, self
        for name, child in self.children.items():
            yield from child.walk((*path, name))


def command_tree(parser: argparse.ArgumentParser, summary: str = "") -> CommandNode:
    """The completion tree of ``parser``: its visible options and positional choices, and each sub-parser's."""
    node = CommandNode(summary=summary)
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                node.children[name] = command_tree(sub, helps.get(name, ""))
                node.words.append(name)
        elif action.option_strings:
            longs = [o for o in action.option_strings if o.startswith("--")] or list(action.option_strings)
            for option in longs:
                if action.nargs == 0:
                    node.flags.append(option)
                else:
                    node.valued[option] = tuple(str(c) for c in action.choices or ())
        elif action.choices:
            node.words += [str(c) for c in action.choices]
    return node


def completion_script(shell: str, tree: CommandNode) -> str:
    if shell == "bash":
        return _bash(tree)
    if shell == "zsh":
        return _zsh(tree)
    if shell == "fish":
        return _fish(tree)
    raise ValueError(f"no completion for shell {shell!r}")  # argparse's choices stop this first


def _valued_options(tree: CommandNode) -> dict[str, set[str]]:
    """Every option that takes a value anywhere, with the union of its choices (empty: a free value)."""
    valued: dict[str, set[str]] = {}
    for _, node in tree.walk():
        for option, choices in node.valued.items():
            valued.setdefault(option, set()).update(choices)
    return valued


def _candidates(node: CommandNode) -> str:
    return " ".join([*node.words, *node.flags, *node.valued])


def _case_arms(tree: CommandNode) -> list[tuple[str, str]]:
    """(pattern over "COMMAND/VERB", candidates) for the shells' ``case``: a command with verbs offers them
    until one is given; a command without verbs offers its options after any argument."""
    arms: list[tuple[str, str]] = [("/", _candidates(tree))]
    for name, command in tree.children.items():
        if command.children:
            arms.append((f"{name}/", _candidates(command)))
            arms += [(f"{name}/{verb}", _candidates(node)) for verb, node in command.children.items()]
        else:
            arms.append((f"{name}/*", _candidates(command)))
    return arms


def _scan(tree: CommandNode, *, first: int, end: str, array: str) -> str:
    """Shell text (bash and zsh alike) that finds the command and its verb among the words before the cursor,
    skipping options and the value of each option that takes one."""
    valued = "|".join(sorted(_valued_options(tree))) or "--"
    return f"""    local command="" verb="" word skip=0 i
    for ((i = {first}; i < {end}; i++)); do
        word="${{{array}[i]}}"
        if ((skip)); then skip=0; continue; fi
        case "$word" in
            {valued}) skip=1; continue ;;
            -*) continue ;;
        esac
        if [[ -z "$command" ]]; then command="$word"
        elif [[ -z "$verb" ]]; then verb="$word"; fi
    done
"""


def _bash(tree: CommandNode) -> str:
    valued = _valued_options(tree)
    prev_arms = "".join(
        f"        {option}) COMPREPLY=($(compgen -W {shlex.quote(' '.join(sorted(choices)))} -- \"$cur\")); return ;;\n"
        if choices else f"        {option}) return ;;\n"
        for option, choices in sorted(valued.items())
    )
    arms = "".join(f"        {_bash_pattern(pattern)}) words={shlex.quote(words)} ;;\n"
                   for pattern, words in _case_arms(tree))
    return f"""# codeflux completion for bash: source <(codeflux completion bash)
_codeflux_complete() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" words=""
    COMPREPLY=()
    case "$prev" in
{prev_arms}    esac
{_scan(tree, first=1, end="COMP_CWORD", array="COMP_WORDS")}    case "$command/$verb" in
{arms}    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _codeflux_complete codeflux
"""


def _bash_pattern(pattern: str) -> str:
    """A case pattern: the literal part quoted, a trailing ``*`` left to match."""
    return f'"{pattern[:-1]}"*' if pattern.endswith("*") else f'"{pattern}"'


def _zsh(tree: CommandNode) -> str:
    valued = _valued_options(tree)
    prev_arms = "".join(
        f"        {option}) compadd -- {' '.join(shlex.quote(c) for c in sorted(choices))}; return ;;\n"
        if choices else f"        {option}) _files; return ;;\n"
        for option, choices in sorted(valued.items())
    )
    arms = "".join(f"        {_bash_pattern(pattern)}) candidates=({words}) ;;\n"
                   for pattern, words in _case_arms(tree))
    return f"""#compdef codeflux
# codeflux completion for zsh: source <(codeflux completion zsh) after compinit
_codeflux() {{
    local prev="${{words[CURRENT-1]}}"
    local -a candidates
    case "$prev" in
{prev_arms}    esac
{_scan(tree, first=2, end="CURRENT", array="words")}    case "$command/$verb" in
{arms}    esac
    if [[ "${{words[CURRENT]}}" == -* ]]; then
        compadd -- ${{(M)candidates:#-*}}
    else
        local -a plain=(${{candidates:#-*}})
        if (( ${{#plain}} )); then compadd -- $plain; else _files; fi
    fi
}}
if [[ "${{funcstack[1]}}" == "_codeflux" ]]; then _codeflux "$@"; else compdef _codeflux codeflux; fi
"""


def _fish(tree: CommandNode) -> str:
    lines = ["# codeflux completion for fish: codeflux completion fish > ~/.config/fish/completions/codeflux.fish",
             "complete -c codeflux -f"]
    lines += _fish_options(tree, "__fish_use_subcommand")
    for name, command in tree.children.items():
        lines.append(f"complete -c codeflux -n __fish_use_subcommand -a {name} -d {shlex.quote(command.summary)}")
        seen = f"__fish_seen_subcommand_from {name}"
        if command.children:
            verbs = " ".join(command.children)
            no_verb = f"{seen}; and not __fish_seen_subcommand_from {verbs}"
            for verb, node in command.children.items():
                lines.append(f"complete -c codeflux -n {shlex.quote(no_verb)} -a {verb} -d {shlex.quote(node.summary)}")
                lines += _fish_options(node, f"{seen}; and __fish_seen_subcommand_from {verb}")
            lines += _fish_options(command, no_verb)
        else:
            lines += _fish_options(command, seen)
            if command.words:
                words = " ".join(command.words)
                lines.append(f"complete -c codeflux -n {shlex.quote(seen)} -a {shlex.quote(words)}")
    return "\n".join(lines) + "\n"


def _fish_options(node: CommandNode, condition: str) -> list[str]:
    when = f"-n {shlex.quote(condition)}"
    lines = [f"complete -c codeflux {when} -l {flag[2:]}" for flag in node.flags if flag.startswith("--")]
    for option, choices in node.valued.items():
        if not option.startswith("--"):
            continue
        values = f" -xa {shlex.quote(' '.join(choices))}" if choices else " -rF"
        lines.append(f"complete -c codeflux {when} -l {option[2:]}{values}")
    return lines
