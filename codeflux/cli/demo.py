"""`codeflux demo init PATH`: a small sample repository to try codeflux offline.

The repository (shipped as package data in ``codeflux/cli/demo_files/``, made by
:mod:`codeflux.coordinator.demo`) is a tiny Python package with one
failing test and a ``TASK.md`` holding the requirement; ``script.json`` is the scripted provider's (not a
model) script that fixes it: a plan turn, an ``edit_file`` turn, a ``run_command`` of the tests and a final
turn. ``init`` refuses a non-empty PATH, runs ``git init`` and commits, then prints the exact
``codeflux run`` command that works through it with ``--provider scripted`` and the test command
pre-approved. The tests need ``python3`` with pytest on your PATH.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from codeflux.cli.context import CliContext
from codeflux.coordinator.demo import DEMO_TEST_COMMAND, create_sample_repository, sample_files

__all__ = ["DEMO_TEST_COMMAND", "configure", "demo_run_command", "run", "sample_files"]

NAME = "demo"
SUMMARY = "create a sample repository with a failing test and print the offline `codeflux run` to fix it"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="create the sample repository at PATH (git init + commit)",
                              description="create the sample repository at PATH (must be missing or empty), "
                                          "commit it, and print the `codeflux run` command to try",
                              allow_abbrev=False)
    init.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    init.add_argument("path", metavar="PATH", help="where to create the repository (missing or empty)")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    root = create_sample_repository(Path(args.path).expanduser().absolute())
    ctx.say(f"sample repository created at {root} (branch main, 1 commit; tests/test_ops.py::test_add_negative "
            "fails)")
    ctx.say("try it offline (scripted provider, not a model; needs python3 with pytest on PATH):")
    ctx.say("  " + " ".join(demo_run_command(root)))
    return 0


def demo_run_command(root: Path) -> list[str]:
    """The exact ``codeflux run`` command line for the sample at ``root`` (shell-quoted words)."""
    return ["codeflux", "run", "--repo", shlex.quote(str(root)), "--requirement-file",
            shlex.quote(str(root / "TASK.md")), "--provider", "scripted", "--allow",
            shlex.quote(f"run_command:{DEMO_TEST_COMMAND}"), "--allow-check-tools", "--budget", "1.00", "--yes"]
