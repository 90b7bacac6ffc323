"""The commands ``codeflux`` knows, as a light table: what ``codeflux --help`` lists without loading them.

A command module imports what its command needs (the coordinator, grpc, pygit2, apsw …: up to a second of
imports), so :mod:`codeflux.cli.main` imports one only when its command runs — or when its ``--help`` is
asked for. Each row is the command's name, the module that implements it and the one-line help the
top-level ``--help`` shows; :meth:`CommandEntry.add_arguments` loads the module and lets it add its
arguments. The help text repeats the module's ``SUMMARY`` so listing the commands loads none of them;
``tests/unit/cli/test_lazy_commands.py`` keeps the two equal and the table complete.

Importing this module loads only :mod:`importlib`, :mod:`argparse` and :mod:`typing`, and does nothing.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import NamedTuple, Protocol, cast

__all__ = ["COMMANDS", "CommandEntry", "CommandModule", "command_named"]


class CommandModule(Protocol):
    """What a command module provides (``channel_needs`` and ``RECORDS_APP_LOG`` are optional)."""

    NAME: str
    SUMMARY: str

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    run: Callable[..., int]


class CommandEntry(NamedTuple):
    """One command: its name on the command line, its module under ``codeflux.cli``, its one-line help.

    A named tuple rather than a dataclass: :mod:`dataclasses` imports :mod:`inspect`, a tenth of ``--help``'s
    start."""

    name: str
    module: str
    summary: str

    def load(self) -> CommandModule:
        """Import the command's module (the only place a command module is imported)."""
        return cast(CommandModule, importlib.import_module(f"codeflux.cli.{self.module}"))

    def add_arguments(self, parser: argparse.ArgumentParser) -> CommandModule:
        """Load the command and let it add its arguments to ``parser``; returns the loaded module."""
        loaded = self.load()
        loaded.configure(parser)
        return loaded


def _entry(name: str, summary: str, *, module: str | None = None) -> CommandEntry:
    return CommandEntry(name=name, module=module or name, summary=summary)


# In the order --help lists them.
COMMANDS: tuple[CommandEntry, ...] = (
    _entry("start", "run the coordinator and open its browser UI on loopback"),
    _entry("open", "print (and open) a fresh one-time link into the running coordinator's browser UI"),
    _entry("version", "print the codeflux version and build (commit, frozen or not), the schema version, and the "
                      "versions of Python, apsw and pygit2"),
    _entry("doctor", "check every prerequisite (ok / missing / degraded / failed / unknown) and say what to do next"),
    _entry("migrate", "create the database, or migrate it to this codeflux's schema (an online backup is taken "
                      "first)"),
    _entry("provider", "store, test, delete or list model-provider keys (kept in the OS credential store, read from "
                       "stdin)"),
    _entry("prices", "list the model prices in force (shipped defaults and your revisions) or record your own"),
    _entry("budget", "show or set a task's hard budget, acknowledge charges, resume or stop a task paused by its "
                     "budget"),
    _entry("task", "create, inspect, approve, review and recover tasks (headless)"),
    _entry("approvals", "list or revoke what was allowed for a whole repository (allow-for-repository)"),
    _entry("repo", "repository instruction files (`repo instructions`: list, show, approve, revoke) and housekeeping "
                   "(`repo clean REPO` lists, and with --yes removes, codeflux leftovers)"),
    _entry("run", "one headless shot: create a task, plan, approve (--yes), run with pre-approved operations, report"),
    _entry("demo", "create a sample repository with a failing test and print the offline `codeflux run` to fix it"),
    _entry("backup", "write a consistent snapshot of the database to a new file (safe while codeflux runs; never "
                     "overwrites)"),
    _entry("integrity-check", "check the database: every integrity_check row, foreign keys, migration history, "
                              "journal contiguity (read-only)", module="integrity_check"),
    _entry("inspect", "show stored rows of one entity (read-only, bounded): ambiguity-resolutions, approvals, "
                      "budget-entries, budgets, checkpoints, decisions, deliveries, denials, dirty-acknowledgements, "
                      "events, executions, logs, loop-conversations, loop-messages, migrations, model-requests, "
                      "patches, plan-decisions, plans, prices, providers, recovery-assessments, repositories, runs, "
                      "sessions, settings, stage-ledger, tasks, tool-requests, transitions"),
    _entry("logs", "manage application logs: `logs purge [--before YYYY-MM-DD]` deletes log records only"),
    _entry("diagnostics", "export a diagnostics bundle: versions, counts and states only, scanned for secrets "
                          "(`diagnostics export --output PATH`)"),
    _entry("memory", "list, show, invalidate, confirm or export what codeflux learned (with each entry's "
                     "applicability verdict)"),
    _entry("incident", "report a traceback or log excerpt as an incident (fingerprinted, redacted); list, show, "
                       "dismiss it or propose a draft task from it"),
    _entry("watch", "run an approved check command on a schedule (confined, on the branch's HEAD); failures become "
                    "incidents that propose draft tasks"),
    _entry("completion", "print a shell completion script (bash, zsh or fish) for codeflux's commands, verbs and "
                         "options"),
)


def command_named(name: str) -> CommandEntry | None:
    """The table's row for ``name``, or None when codeflux has no such command."""
    return next((entry for entry in COMMANDS if entry.name == name), None)
