"""`codeflux repo clean REPO [--yes]`: find codeflux's worktrees, ``codeflux/task/*`` branches and
``refs/codeflux/…`` refs in REPO that no database knows — what deleting the data directory leaves — list
them, and with ``--yes`` remove them, saving first, as a verified git bundle under ``<data>/bundles/``, every
branch or ref holding commits that are on no other branch.

Runs in this process, never through a running coordinator (no RPC): it must work when the data directory and
its database are gone, it reads the database only to leave alone what it knows (read-only, never created),
and removing branches from the user's repository is a decision taken in a terminal with ``--yes``, not one
the browser offers. Tasks this database knows are finished by their own journaled cleanup instead.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from codeflux.cli.context import CliContext
from codeflux.coordinator.tasks.leftovers import clean_leftovers, find_unknown_leftovers
from codeflux.domain.errors import UsageError

NAME = "repo"
SUMMARY = "repository housekeeping: `repo clean REPO` lists (and with --yes removes) codeflux leftovers"


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="repo_action", metavar="ACTION", required=True)
    clean = actions.add_parser(
        "clean",
        help="list codeflux worktrees, task branches and refs no database knows; --yes removes them",
        description=("list codeflux worktrees, codeflux/task/* branches and refs/codeflux/* refs in REPO that no "
                     "codeflux database knows; with --yes remove them, saving first as a git bundle every branch "
                     "holding commits on no other branch"),
        allow_abbrev=False,
    )
    clean.add_argument("repo", metavar="REPO", help="the repository (its top level or any folder inside)")
    clean.add_argument("--yes", action="store_true", help="remove what is listed (default: only list)")
    clean.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH",
                       help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    if not str(args.repo).strip() or "\x00" in args.repo:
        raise UsageError("REPO is empty or contains a NUL byte; give the repository's path")
    location = ctx.location()
    found = find_unknown_leftovers(location, Path(os.path.abspath(os.path.expanduser(args.repo))))
    for item, directory in found.known_elsewhere:
        ctx.say(f"repo clean: left alone: {item.describe()} — the database in {directory} knows it")
    if not found.unknown:
        ctx.say(f"repo clean: {found.root}: no codeflux leftovers that no database knows")
        return 0
    ctx.say(f"repo clean: {found.root}: {len(found.unknown)} codeflux leftover(s) no database knows:")
    for item in found.unknown:
        ctx.say(f"  {item.describe()}")
    if not args.yes:
        ctx.say("repo clean: nothing removed; run again with --yes to remove them")
        return 0
    result = clean_leftovers(location, found)
    for bundle in result.bundles:
        ctx.say(f"repo clean: saved commits on no other branch in {bundle} (verified; restore with "
                f"`git fetch {bundle} 'refs/*:refs/*'`)")
    for item in result.kept:
        ctx.say(f"repo clean: kept {item.describe()}")
    ctx.say(f"repo clean: removed {len(result.removed)} of {len(found.unknown)}")
    return 0
