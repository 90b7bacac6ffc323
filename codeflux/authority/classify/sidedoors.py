"""Everyday tools with a command or option that runs another program: sqlite3, man, sort and split.

* ``sqlite3`` reads each operand after the database (and each ``-cmd`` value, which it handles the same
  way) as SQL or, when it starts with a dot, as a dot command. ``.shell`` and ``.system`` run a shell
  command, ``.load`` loads a library, ``.read`` runs a file's commands (or a pipe's), ``.excel`` opens
  an application, ``.once``/``.output``/``.import`` do so with ``|`` or a flag: any of them, in any
  abbreviation sqlite accepts (``.sh``), makes the request unknowable, and so does ``.shell``/``.system``
  written anywhere in an operand, ``-init FILE`` and the SQL functions ``edit()`` (it runs an editor
  command) and ``load_extension()``. ``readfile()``, ``writefile()`` and ``fsdir()`` reach any file
  (``outside-write``); each word of a dot command is judged like a path argument.
* ``man -P``/``--pager`` names a pager command and ``-H``/``--html`` a browser (read as shell strings;
  ``-H`` alone opens a web browser: ``network``); ``-C``/``--config-file`` names a configuration whose
  ``DEFINE`` lines choose the programs man runs (unknowable).
* ``sort --compress-program=PROG`` runs PROG; ``split --filter=COMMAND`` runs a shell command per piece.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner, run_script
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.options import option_values
from codeflux.authority.classify.paths import classify_command_path
from codeflux.domain.capabilities import Capability

_C = Capability

_SQLITE_ONE_VALUE: Final = frozenset({"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-vfs", "-mmap",
                                      "-maxsize", "-nonce", "-heap", "-escape"})
_SQLITE_TWO_VALUES: Final = frozenset({"-lookaside", "-pagecache"})
_DOT_COMMAND: Final = re.compile(r"^\s*\.([A-Za-z_][A-Za-z0-9_]*)(.*)$", flags=re.MULTILINE)
_DOT_RUNS_PROGRAMS: Final = ("shell", "system", "load", "read", "excel", "www")
_DOT_RUNS_WITH_PIPE_OR_FLAG: Final = ("once", "output", "import")
_SHELL_ANYWHERE: Final = re.compile(r"(?i)\.(?:shell|system)\b")
_SQL_RUNS_CODE: Final = re.compile(r"(?i)\b(?:edit|load_extension)\s*\(")
_SQL_REACHES_FILES: Final = re.compile(r"(?i)\b(?:readfile|writefile|fsdir)\s*\(")


def _sqlite3(command: Command, out: Findings) -> None:
    """sqlite3 takes options anywhere (``--opt`` is ``-opt``); other words are the database, then SQL."""
    texts: list[str] = []
    args, index = command.args, 0
    while index < len(args):
        arg = args[index]
        index += 1
        if not arg.startswith("-") or arg == "-":
            texts.append(arg)
            continue
        name = "-" + arg.lstrip("-")
        if name == "-A":
            break  # the rest are `.archive` arguments, judged as paths like every argument
        if name == "-init":
            out.unknowable("sqlite3 -init runs the commands of a file codeflux does not read")
        if name == "-cmd" and index < len(args):
            texts.append(args[index])
        index += 1 if name in _SQLITE_ONE_VALUE else 2 if name in _SQLITE_TWO_VALUES else 0
    for text in texts:
        _read_sqlite_text(text, out)


def _read_sqlite_text(text: str, out: Findings) -> None:
    if _SHELL_ANYWHERE.search(text) or _SQL_RUNS_CODE.search(text):
        out.unknowable(f"sqlite3 input {shown(text)} runs a program or loads code")
    if _SQL_REACHES_FILES.search(text):
        out.add(_C.OUTSIDE_WRITE, f"sqlite3 input {shown(text)} reads or writes files anywhere")
    for match in _DOT_COMMAND.finditer(text):
        name, rest = match.group(1).lower(), match.group(2)
        # sqlite accepts a dot command abbreviated to any prefix that reaches it (`.sh` is `.shell`)
        if any(full.startswith(name) for full in _DOT_RUNS_PROGRAMS) or (
            any(full.startswith(name) for full in _DOT_RUNS_WITH_PIPE_OR_FLAG)
            and ("|" in rest or re.search(r"(?:^|\s)-", rest))
        ):
            out.unknowable(f"sqlite3 dot command {shown(match.group(0).strip())} runs a program or another script")
        for word in rest.split():
            classify_command_path(word.strip("'\""), out)


_MAN_VALUE_LETTERS: Final = "CLmMSerEpR"  # short options that take a value (-P is the one looked for)


def _man(command: Command, out: Findings) -> None:
    for pager in option_values(command.args, short="P", long=("--pager",), value_letters=_MAN_VALUE_LETTERS):
        run_script(pager, command, out)
    for browser in _man_browsers(command.args):
        if browser:
            run_script(browser, command, out)
        else:
            out.network("man -H opens its page in a web browser", [None])
    if option_values(command.args, short="C", long=("--config-file",), value_letters=_MAN_VALUE_LETTERS):
        out.unknowable("man -C reads a configuration that chooses the programs man runs")


def _man_browsers(args: tuple[str, ...]) -> list[str]:
    """Values of ``-H[BROWSER]``/``--html[=BROWSER]`` (attached only; "" when none is given)."""
    return option_values(args, short="H", long=("--html",), value_letters=_MAN_VALUE_LETTERS + "P",
                         attached_only=True)


def _sort(command: Command, out: Findings) -> None:
    for program in option_values(command.args, long=("--compress-program",)):
        run_inner([program], command, out)


def _split(command: Command, out: Findings) -> None:
    for script in option_values(command.args, long=("--filter",)):
        run_script(script, command, out)


SIDE_DOOR_PROGRAMS: Final[Mapping[str, Handler]] = {"sqlite3": _sqlite3, "man": _man, "sort": _sort, "split": _split}
"""Everyday tools whose commands or options run other programs, by name."""
