"""`codeflux repo instructions …` and `codeflux repo clean REPO [--yes]`.

`repo instructions --repo PATH` lists the repository's instruction files (``AGENTS.md``, ``CLAUDE.md``, … as
configured) with their sha256 and approval state (``--show`` prints their content too); `repo instructions
approve FILE --sha256 HEX --repo PATH` records the person's approval of exactly that content, `revoke` takes it
back, and `repo instructions configure [PATH …]` sets which paths are instruction files (none: the defaults).
These go through the method table (``InstructionService``): the running coordinator's socket, else this process.

`codeflux repo clean REPO [--yes]`: find codeflux's worktrees, ``codeflux/task/*`` branches and
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

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.views import print_instruction_files
from codeflux.coordinator.tasks.leftovers import clean_leftovers, find_unknown_leftovers
from codeflux.domain.errors import UsageError

NAME = "repo"
SUMMARY = ("repository instruction files (`repo instructions`: list, show, approve, revoke) and housekeeping "
           "(`repo clean REPO` lists, and with --yes removes, codeflux leftovers)")
_INSTRUCTION_ACTIONS = ("list", "show", "approve", "revoke", "configure")


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="repo_action", metavar="ACTION", required=True)
    instructions = actions.add_parser(
        "instructions",
        help="list, show, approve or revoke the repository's instruction files (AGENTS.md, CLAUDE.md, …)",
        description=("the repository's instruction files reach the model only after you approve their exact "
                     "content (path + sha256); `list` (default) shows each file's state and sha256, `show` its "
                     "content too, `approve FILE --sha256 HEX` / `revoke FILE --sha256 HEX` record your decision, "
                     "`configure [PATH ...]` sets which repository-relative paths are instruction files"),
        allow_abbrev=False,
    )
    instructions.add_argument("instructions_action", nargs="?", default="list", choices=_INSTRUCTION_ACTIONS,
                              metavar="{list,show,approve,revoke,configure}", help="what to do (default: list)")
    instructions.add_argument("files", nargs="*", metavar="FILE",
                              help="approve/revoke: the repository-relative path; configure: the paths")
    instructions.add_argument("--repo", default=".", metavar="PATH",
                              help="the repository (its top level or any folder inside; default: the current folder)")
    instructions.add_argument("--sha256", default="", metavar="HEX",
                              help="approve/revoke: the sha256 of the content you read (as `list` prints it)")
    instructions.add_argument("--show", action="store_true", help="list: print each file's content too")
    instructions.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH",
                              help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")
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


def channel_needs(args: argparse.Namespace) -> ChannelNeeds | None:
    """`instructions` reads and records through the method table (approving creates the database if needed);
    `clean` works on its own (see the module docstring)."""
    if args.repo_action != "instructions":
        return None
    return ChannelNeeds(use=ChannelUse.CREATE)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel | None = None) -> int:
    if args.repo_action == "instructions":
        if channel is None:
            raise UsageError("repo instructions needs the codeflux database")
        return _instructions(args, ctx, channel)
    return _clean(args, ctx)


def _repository_path(raw: str) -> str:
    if not raw.strip() or "\x00" in raw:
        raise UsageError("--repo is empty or contains a NUL byte; give the repository's path")
    return os.path.abspath(os.path.expanduser(raw))


def _instructions(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    action, files, repo = args.instructions_action, list(args.files), _repository_path(args.repo)
    if action in ("list", "show"):
        if files:
            raise UsageError(f"repo instructions {action} takes no FILE; use --repo PATH")
        view = channel.call("InstructionService/ListInstructionFiles",
                            pb.ListInstructionFilesRequest(repository_path=repo), pb.InstructionFilesView)
        print_instruction_files(ctx, view, show_content=action == "show" or args.show)
        return 0
    if action == "configure":
        view = channel.call("InstructionService/SetInstructionPaths",
                            pb.SetInstructionPathsRequest(control=control(), paths=files, repository_path=repo),
                            pb.InstructionFilesView)
        print_instruction_files(ctx, view, show_content=False)
        return 0
    if len(files) != 1 or not args.sha256:
        raise UsageError(f"repo instructions {action} takes one FILE and --sha256 HEX (as `list` prints them)")
    method = "ApproveInstructionFile" if action == "approve" else "RevokeInstructionFile"
    view = channel.call(f"InstructionService/{method}", pb.InstructionFileDecisionRequest(
        control=control(), repository_path=repo, path=files[0], sha256=args.sha256), pb.InstructionFilesView)
    print_instruction_files(ctx, view, show_content=False)
    return 0


def _clean(args: argparse.Namespace, ctx: CliContext) -> int:
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
