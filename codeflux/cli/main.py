"""The ``codeflux`` entry point: one argparse tree, one error-to-exit-code map, no tracebacks.

Commands load lazily (:mod:`codeflux.cli.command_table`): ``codeflux --help`` lists the table without importing
any command, and a command line that names a command imports that command's module alone and adds its
arguments to its sub-parser (:func:`parser_for_command`; the other commands are not even listed then). So
``codeflux version`` and ``codeflux --help`` import no coordinator, grpc, pygit2 or apsw
(``tests/unit/cli/test_lazy_commands.py``); :func:`build_parser` still builds the whole tree (every command
loaded) for what needs all of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

import codeflux
from codeflux.cli.command_table import COMMANDS, CommandEntry, CommandModule, command_named
from codeflux.cli.context import CliContext
from codeflux.cli.exit_codes import ExitCode, exit_code_for, exit_code_table_text
from codeflux.cli.inputs import refuse_undecodable_arguments
from codeflux.cli.internal_errors import debug_requested, report_internal_error, without_debug_flag
from codeflux.cli.output import colour_allowed, stdout_reader_gone
from codeflux.domain.errors import CodefluxError, UsageError
from codeflux.worker.hardening import harden_process

__all__ = ["COMMAND_MODULES", "build_parser", "main", "parser_for_command", "version_line"]

# One module per command, in the order --help lists them.
COMMAND_MODULES: tuple[str, ...] = tuple(entry.module for entry in COMMANDS)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter for descriptions laid out by hand, told the width so it does not import
    :mod:`shutil` (and the compression modules that imports) to ask for it on every argument added."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


def _terminal_columns() -> int:
    """What :func:`shutil.get_terminal_size` answers for the columns: ``$COLUMNS``, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (os.get_terminal_size(stdout.fileno()).columns or 80) if stdout is not None else 80
    except (ValueError, OSError):  # not a terminal, or a closed or replaced stream
        return 80


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser that raises UsageError (with a did-you-mean) instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(_with_suggestion(self, message))


def _close_matches(word: str, possibilities: Sequence[str], *, n: int, cutoff: float) -> list[str]:
    import difflib  # noqa: PLC0415 (only when a word is unknown: not on every start)

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


def _all_option_strings(parser: argparse.ArgumentParser) -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        found += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _all_option_strings(sub)
    return sorted(set(found))


def _options_for(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The long options ``argv`` may use: the global ones and those of the command it names (with its
    verbs), not every command's — ``start --port`` must not be taken for another command's ``--port``."""
    options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")}
    word = _command_word(argv)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and word in action.choices:
            options.update(_all_option_strings(action.choices[word]))
    return sorted(options)


def _with_suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    marker = "unrecognized arguments: "
    if marker in message:
        candidates = _all_option_strings(parser)
        hints = []
        flags: list[str] = []
        hidden = 0
        for token in message.split(marker, 1)[1].split():
            if not token.startswith("-"):
                hidden += 1  # a stray value may be a secret pasted in the wrong place: never echo it
                continue
            flag = token.split("=", 1)[0]
            flags.append(flag)
            close = _close_matches(flag, [c for c in candidates if c != flag], n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean {close[0]}?")
        parts = [f"unrecognized arguments: {' '.join(flags)}" if flags else "unexpected arguments"]
        if hidden:
            parts.append(f"({hidden} value{'s' if hidden > 1 else ''} not shown)")
        text = " ".join(parts)
        return f"{text}; {' '.join(hints)}" if hints else text
    return message


def build_parser() -> CliParser:
    """The whole argparse tree: every command listed and its arguments added, so every command module is
    imported — for what needs all of it (completion, a CLI reference). A command line gets
    :func:`parser_for_command`."""
    return _parser(COMMANDS, configured=True)


def parser_for_command(name: str | None) -> CliParser:
    """What one command line needs. No command named (``codeflux --help``): every command listed by its name and
    help from the table, none imported. A command named: that command alone, its module imported and its
    arguments added (its name was checked against the table first)."""
    entry = None if name is None else command_named(name)
    if entry is None:
        return _parser(COMMANDS, configured=False)
    return _parser((entry,), configured=True)


def _parser(entries: Sequence[CommandEntry], *, configured: bool) -> CliParser:
    parser = CliParser(
        prog="codeflux",
        description="codeflux: a local-first coordinator for an AI coding agent.",
        epilog=exit_code_table_text(),
        formatter_class=_HelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print the codeflux version and exit")
    parser.add_argument("--data-dir", default=None, metavar="PATH",
                        help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")
    parser.add_argument("--debug", action="store_true",
                        help="print an internal error's traceback (also: CODEFLUX_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CliParser)
    for entry in entries:
        command = sub.add_parser(
            entry.name,
            help=entry.summary,
            description=entry.summary,
            epilog=exit_code_table_text(),
            formatter_class=_HelpFormatter,
            allow_abbrev=False,
        )
        command.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH",
                             help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")
        if configured:
            command.set_defaults(_module=entry.add_arguments(command))
    return parser


def version_line() -> str:
    """The first line of ``codeflux version``, which ``codeflux --version`` prints alone."""
    return f"codeflux: {codeflux.__version__}"


def _check_flags(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """Refuse a misspelled flag with a did-you-mean before argparse complains about required ones."""
    known = _options_for(parser, argv)
    for word in argv:
        if word == "--":
            return
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and flag not in known and flag not in ("--help",):
            close = _close_matches(flag, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UsageError(f"unknown option {flag}{hint}")


def _command_word(argv: Sequence[str]) -> str | None:
    skip_next = False
    for word in argv:
        if skip_next:
            skip_next = False
        elif word == "--data-dir":
            skip_next = True
        elif not word.startswith("-"):
            return word
    return None


def _check_command_name(argv: Sequence[str], names: Sequence[str]) -> None:
    """Refuse an unknown command with a did-you-mean before argparse's generic message."""
    word = _command_word(argv)
    if word is not None and word not in names:
        close = _close_matches(word, names, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown command {word!r}{hint} (see `codeflux --help`)")


def main(argv: Sequence[str] | None = None, ctx: CliContext | None = None) -> int:
    if argv is None:  # a real process (not a test calling in): keep our secrets from other processes
        harden_process()  # already done by codeflux.cli.entry when the process entered there
    arguments = list(sys.argv[1:] if argv is None else argv)
    context = ctx or CliContext()
    started = time.monotonic()
    code = _run_command(arguments, context)
    if context.records_app_log:
        _record_command_outcome(context, code=code, elapsed_s=time.monotonic() - started)
    return code


def _record_command_outcome(context: CliContext, *, code: int, elapsed_s: float) -> None:
    """One application log record per state-changing command: which, its exit code, how long it took.

    Read-only commands (inspect, integrity-check, backup, doctor, …) never write to the database.
    """
    try:
        location = context.location()
    except CodefluxError:
        return
    from codeflux.cli.app_log_sink import AppLogSink  # noqa: PLC0415 (commands load lazily: see the docstring)
    from codeflux.logs import configure_logging, get_logger, reset_logging  # noqa: PLC0415

    sink = AppLogSink(location)
    configure_logging(level="info", console_level="warning", persist=sink, stream=context.stderr,
                      colour=colour_allowed(context.stderr, context.environ))
    try:
        get_logger("cli").info(
            "command.finished", command=context.command, exit_code=code, elapsed_ms=int(elapsed_s * 1000),
            error=context.error_class,
        )
    finally:
        reset_logging()
        sink.close()


def _run_module(module: CommandModule, args: argparse.Namespace, context: CliContext) -> int:
    """Run the command. One that declares ``channel_needs`` gets its channel to the method table, chosen
    here and only here: the running coordinator's socket when one serves the data directory, else this
    process (:func:`codeflux.cli.channel.open_channel`)."""
    needs_of = getattr(module, "channel_needs", None)
    if needs_of is None:
        return int(module.run(args, context))
    needs = needs_of(args)
    if needs is None:  # this action of the command does not read or change the product's state
        return int(module.run(args, context, None))
    from codeflux.cli.channel import open_channel  # noqa: PLC0415 (only a command that declares its needs)

    with open_channel(context, needs) as channel:
        if channel is not None and channel.via is not None:
            verb = getattr(args, "action", None)
            context.warn(f"codeflux {module.NAME}{f' {verb}' if verb else ''}: via the running coordinator "
                         f"({channel.via})")
        return int(module.run(args, context, channel))


def _silence_closed_stdout(context: CliContext) -> None:
    if context.stdout is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _run_command(arguments: list[str], context: CliContext) -> int:
    command_name = "codeflux"
    try:
        _check_command_name(arguments, [entry.name for entry in COMMANDS])
        word = _command_word(arguments)
        if word is not None:
            command_name = f"codeflux {word}"
        refuse_undecodable_arguments(arguments)
        parser = parser_for_command(word)
        _check_flags(arguments, parser)
        try:
            args = parser.parse_args(without_debug_flag(arguments))  # --debug counts anywhere (internal_errors)
        except SystemExit as stop:  # --help / --version printed; argparse exits 0
            return int(stop.code or 0)
        module: CommandModule | None = getattr(args, "_module", None)
        if module is None:
            parser.print_help(context.stderr)
            return ExitCode.USAGE
        command_name = f"codeflux {module.NAME}"
        context.data_dir = args.data_dir
        context.command = module.NAME
        context.records_app_log = bool(getattr(module, "RECORDS_APP_LOG", False))
        return _run_module(module, args, context)
    except CodefluxError as err:
        context.error_class = type(err).__name__
        context.warn(f"{command_name}: {err}")
        return int(exit_code_for(err))
    except KeyboardInterrupt:
        context.warn(f"{command_name}: interrupted")
        return int(ExitCode.FAILED)
    except BrokenPipeError as err:
        if not stdout_reader_gone(context.stdout):  # a pipe to something else (a child) broke: a bug
            return _internal_error(context, err, command_name=command_name, arguments=arguments)
        # The reader of our output went away (`codeflux task list | head -1`): what the command did is done and
        # recorded; only the rest of its output is lost. Say nothing more, keep Python's exit-time flush from
        # failing on the same pipe, and exit as a process ended by SIGPIPE is seen by its shell (128 + 13).
        _silence_closed_stdout(context)
        return int(ExitCode.OUTPUT_CLOSED)
    except Exception as err:
        return _internal_error(context, err, command_name=command_name, arguments=arguments)


def _internal_error(context: CliContext, err: Exception, *, command_name: str, arguments: list[str]) -> int:
    """A bug: one line naming the class and the app_logs record of its redacted traceback (docs/using.md)."""
    context.error_class = type(err).__name__
    # Never print the exception text unasked: it may hold paths or values. The type names the bug.
    report_internal_error(context, err, command_name=command_name,
                          debug=debug_requested(arguments, context.environ))
    return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main())
