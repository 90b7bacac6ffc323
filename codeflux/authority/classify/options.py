"""Option grammars: enough of each program's option syntax to tell its options from its operands.

A :class:`Grammar` says which short and long options take a value; :func:`parse_options` splits an
argv tail into options (with their values) and operands, or gives None when a strict grammar meets an
option it does not know. Long options may be abbreviated (getopt_long, git and PowerShell accept any
unambiguous prefix), so a prefix of exactly one known long option is read as that option.
:func:`option_values` finds the values of a few options anywhere in an argv, in every spelling
(``-xV``, ``-abx V``, ``--name=V``, ``--name V``, ``--na=V``), for programs whose full grammar is
not written down. The program readers in the sibling modules build their grammars with
:func:`option_grammar`, and write their tables of names space-separated (:func:`table_words`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

_SHORTEST_ABBREVIATION: Final = 3  # `--x`: a long option abbreviated to one letter


@dataclass(frozen=True, slots=True, kw_only=True)
class Grammar:
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
    stop_after: frozenset[str] = frozenset()  # options after whose value every argument is an operand (python -m)


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    options: tuple[tuple[str, str | None], ...]
    operands: tuple[str, ...]  # with stop_at_operand: everything from the first operand on

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [value for name, value in self.options if name in names and value is not None]


def parse_options(args: Sequence[str], grammar: Grammar) -> Parsed | None:
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
            name = _unabbreviated(name, grammar.long_flags | grammar.long_values)
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
            if options and options[-1][0] in grammar.stop_after:
                operands.extend(args[index:])
                break
            continue
        if grammar.stop_at_operand:
            operands.extend(args[index - 1 :])
            break
        operands.append(arg)
    return Parsed(options=tuple(options), operands=tuple(operands))


def _unabbreviated(name: str, known: frozenset[str]) -> str:
    """The one known long option ``name`` abbreviates; ``name`` itself when it is known, ambiguous or none."""
    if name in known or len(name) < _SHORTEST_ABBREVIATION:
        return name
    candidates = [option for option in known if option.startswith(name)]
    return candidates[0] if len(candidates) == 1 else name


def option_values(
    args: Sequence[str],
    *,
    short: str = "",
    long: Iterable[str] = (),
    not_prefixes: Iterable[str] = (),
    value_letters: str = "",
    attached_only: bool = False,
) -> list[str]:
    """Every value given to the ``short`` letters or ``long`` options anywhere in ``args``.

    With ``attached_only`` a value counts only when it is part of the option (``-OPAGER``,
    ``--pager=PAGER``): the option's optional value never takes the next argument (empty when none).

    Reads on purpose more than the program would: every argument is looked at (also past operands and
    ``--``), a letter anywhere in a short cluster counts unless an earlier letter of ``value_letters``
    (other options that take a value) took the rest of the cluster, and a long option counts when it is a
    prefix of one in ``long`` (other than the real options listed in ``not_prefixes``). Over-reading only
    adds needs; under-reading would let ``-xCMD`` or ``--exe=CMD`` hide the program an option runs.
    """
    longs, exact = tuple(long), frozenset(not_prefixes)
    found: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) and not attached_only else ""
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            named = len(name) >= _SHORTEST_ABBREVIATION and name not in exact
            if named and any(option.startswith(name) for option in longs):
                found.append(value if has_value else following)
        elif arg.startswith("-"):
            position = next((i for i, letter in enumerate(arg[1:], start=1) if letter in short + value_letters), None)
            if position is not None and arg[position] in short:
                found.append(arg[position + 1 :] or following)
    return found


def short_letters(args: Sequence[str]) -> str:
    """Every letter of every short option cluster (``-Rns`` gives ``Rns``), for flag checks."""
    return "".join(arg[1:] for arg in args if arg.startswith("-") and not arg.startswith("--"))


def _parse_short_cluster(
    arg: str, args: Sequence[str], index: int, grammar: Grammar, options: list[tuple[str, str | None]]
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


def option_grammar(
    short_flags: str = "",
    short_values: str = "",
    long_flags: str = "",
    long_values: str = "",
    **rest: bool | str,
) -> Grammar:
    """A grammar from space-separated long option lists (terser tables)."""
    return Grammar(
        short_flags=short_flags,
        short_values=short_values,
        long_flags=frozenset(long_flags.split()),
        long_values=frozenset(long_values.split()),
        short_optional=str(rest.get("short_optional", "")),
        strict=bool(rest.get("strict", False)),
        stop_at_operand=bool(rest.get("stop_at_operand", True)),
        numeric_flags=bool(rest.get("numeric_flags", False)),
        stop_after=frozenset(str(rest.get("stop_after", "")).split()),
    )


def table_words(text: str) -> list[str]:
    """Space-separated table entries as a list (tables of program names read better this way)."""
    return text.split()
