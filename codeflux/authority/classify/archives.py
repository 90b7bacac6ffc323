"""tar and zip: the programs their options run, and archives on other hosts.

``-I``/``--use-compress-program``, ``-F``/``--info-script``, ``--new-volume-script``,
``--to-command``, ``--rsh-command`` and ``--checkpoint-action=exec=`` name shell strings tar runs; they
are read in every spelling tar accepts — attached (``-Icmd``), inside a cluster (``-cI cmd``), with
``=`` or as the next argument, abbreviated (``--use-compress=cmd``) and in the old style where the
letters of a dashless first argument take the following arguments in turn (``tar cIf cmd a.tar``).
An archive named ``[user@]host:path`` (a colon with no slash before it) lives on another host, reached
through rsh/ssh: ``network`` (unless ``--force-local``).

``zip -TT CMD`` / ``--unzip-command CMD`` names the command zip runs (through the shell) to test the
archive: read as a shell string, in a cluster (``-rTTcmd``), attached, with ``=`` or as the next argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_script
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.hosts import normalize_host
from codeflux.authority.classify.options import option_values

_PROGRAM_LETTERS: Final = "IF"
_PROGRAM_OPTIONS: Final = ("--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
                           "--rsh-command", "--checkpoint-action")
_REAL_PREFIXES: Final = ("--checkpoint",)  # a real option, not an abbreviation of --checkpoint-action
_VALUE_LETTERS: Final = "bCfFgHIKLNTVX"  # short options that take a value


def _old_style_values(args: tuple[str, ...]) -> dict[str, list[str]]:
    """``tar cIf CMD a.tar …``: each value letter of a dashless first argument takes the next argument."""
    values: dict[str, list[str]] = {}
    if not args or args[0].startswith("-"):
        return values
    following = iter(args[1:])
    for letter in args[0]:
        if letter in _VALUE_LETTERS:
            values.setdefault(letter, []).append(next(following, ""))
    return values


def _tar(command: Command, out: Findings) -> None:
    old_style = _old_style_values(command.args)
    programs = option_values(command.args, short=_PROGRAM_LETTERS, long=_PROGRAM_OPTIONS,
                             not_prefixes=_REAL_PREFIXES, value_letters=_VALUE_LETTERS)
    for program in [*programs, *(value for letter in _PROGRAM_LETTERS for value in old_style.get(letter, []))]:
        run_script(program.removeprefix("exec="), command, out)
    if any(arg.startswith("--force-l") for arg in command.args):
        return
    archives = option_values(command.args, short="f", long=("--file",), value_letters=_VALUE_LETTERS)
    for archive in [*archives, *old_style.get("f", [])]:
        host, colon, _ = archive.partition(":")  # GNU tar's rule: a colon with no slash before it
        if colon and host and "/" not in host:
            out.network(f"tar archive {shown(archive)} is on another host (reached through rsh/ssh)",
                        [normalize_host(host.rsplit("@", 1)[-1], bare_names=True)])


def _zip(command: Command, out: Findings) -> None:
    args = command.args
    commands = option_values(args, long=("--unzip-command",))
    for index, arg in enumerate(args):
        position = arg.find("TT", 1) if arg.startswith("-") and not arg.startswith("--") else -1
        if position > 0:
            attached = arg[position + 2 :].removeprefix("=")
            commands.append(attached or (args[index + 1] if index + 1 < len(args) else ""))
    for test_command in commands:
        run_script(test_command, command, out)


ARCHIVE_PROGRAMS: Final[Mapping[str, Handler]] = {"tar": _tar, "zip": _zip}
"""Archivers whose options run programs or reach other hosts, by name."""
