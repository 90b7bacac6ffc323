"""`codeflux incident report|list|show|dismiss|propose`: failures you hand codeflux, recognised when they recur.

``report --repo R`` reads a Python traceback or a log excerpt from standard input (or ``--file F``) and records it
for the repository at ``R``: the text is redacted before it is stored, then fingerprinted (exception type, the
repository's own frames as file:function, the message with numbers, paths and ids masked), so the same failure
reported again is one more occurrence of the same incident, not a new one. A terminal on standard input is refused
(pipe the text in or give ``--file``), as is empty input. ``list`` prints incidents most recently seen first
(``--repo``, ``--state``); ``show ID`` adds every state the incident entered and its newest occurrences (redacted
text); ``dismiss ID --reason TEXT`` records a person's decision; ``propose ID [--check COMMAND]`` creates a draft
task drafted from the incident — it never starts by itself (plan it and approve the plan as for any task).
Every action is a call of the method table
(``IncidentService``): through a running coordinator when one serves the data directory, else in this process.
"""

from __future__ import annotations

import argparse
import os

from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.inputs import read_text_file
from codeflux.cli.views import (
    print_incident_detail,
    print_incident_list,
    print_incident_proposal,
    print_incident_report,
)
from codeflux.domain.errors import UsageError
from codeflux.domain.incidents import MAX_INCIDENT_TEXT_CHARS, IncidentState

NAME = "incident"
SUMMARY = ("report a traceback or log excerpt as an incident (fingerprinted, redacted); list, show, dismiss it "
           "or propose a draft task from it")
RECORDS_APP_LOG = True

_MAX_BYTES = MAX_INCIDENT_TEXT_CHARS * 4  # UTF-8: the character limit is checked after decoding


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    reporting = actions.add_parser(
        "report", help="record a traceback or log excerpt (stdin, or --file) for a repository", allow_abbrev=False,
        description="Record a failure for the repository: the same fingerprint again counts one more occurrence.")
    reporting.add_argument("--repo", required=True, metavar="PATH", help="the repository the failure came from")
    reporting.add_argument("--file", default=None, metavar="FILE", help="read the text from FILE instead of stdin")
    reporting.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    listing = actions.add_parser("list", help="incidents, most recently seen first", allow_abbrev=False)
    listing.add_argument("--repo", default="", metavar="PATH", help="only this repository's incidents")
    listing.add_argument("--state", default="", choices=[s.value for s in IncidentState], metavar="STATE",
                         help=f"only this state: {', '.join(s.value for s in IncidentState)}")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="at most N incidents (1..500)")
    listing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    showing = actions.add_parser("show", help="one incident: fingerprint, states, newest occurrences",
                                 allow_abbrev=False)
    showing.add_argument("incident_id", metavar="ID", help="the incident's id (inc_…)")
    showing.add_argument("--occurrences", type=int, default=5, metavar="N", help="newest N occurrences (1..100)")
    showing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    dismissing = actions.add_parser("dismiss", help="dismiss an incident (your decision, with a reason)",
                                    allow_abbrev=False)
    dismissing.add_argument("incident_id", metavar="ID", help="the incident's id (inc_…)")
    dismissing.add_argument("--reason", required=True, metavar="TEXT", help="why (recorded with the state)")
    dismissing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    proposing = actions.add_parser(
        "propose", help="create a draft task from the incident (it starts only after you approve its plan)",
        allow_abbrev=False, description="Create a draft task whose requirement is drafted from the incident. It "
        "never starts by itself: plan it and approve the plan as for any task.")
    proposing.add_argument("incident_id", metavar="ID", help="the incident's id (inc_…)")
    proposing.add_argument("--check", default="", metavar="COMMAND",
                           help="the command that shows the failure (the acceptance example: fails now, passes after)")
    proposing.add_argument("--acknowledge-dirty", default="", metavar="HASH",
                           help="the repository's uncommitted changes you saw (as `codeflux repo inspect` prints)")
    proposing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    if args.action == "list" and not 1 <= args.limit <= 500:
        raise UsageError("--limit must be between 1 and 500")
    if args.action == "show" and not 1 <= args.occurrences <= 100:
        raise UsageError("--occurrences must be between 1 and 100")
    if args.action == "dismiss" and not args.reason.strip():
        raise UsageError("--reason is empty; say why the incident is dismissed")
    if args.action == "report":
        return ChannelNeeds(use=ChannelUse.CREATE)
    return ChannelNeeds(use=ChannelUse.EXISTING)


def _absolute(path: str) -> str:
    if not path.strip():
        raise UsageError("--repo is empty; give the path of a git repository")
    return os.path.abspath(os.path.expanduser(path))


def _report_text(args: argparse.Namespace, ctx: CliContext) -> str:
    if args.file is not None:
        text = read_text_file(args.file, what="--file", max_bytes=_MAX_BYTES)
    elif ctx.stdin.isatty():
        raise UsageError("standard input is a terminal; pipe the traceback in "
                         "(`pytest 2>&1 | codeflux incident report --repo .`) or give --file FILE")
    else:
        try:
            text = ctx.stdin.read(MAX_INCIDENT_TEXT_CHARS + 1)
        except UnicodeDecodeError:
            raise UsageError("the text on standard input is not valid UTF-8") from None
    if not text.strip():
        raise UsageError("the input is empty; give a traceback or a log excerpt")
    if len(text) > MAX_INCIDENT_TEXT_CHARS:
        raise UsageError(f"the input is longer than {MAX_INCIDENT_TEXT_CHARS:,} characters; give the excerpt "
                         "around the failure")
    return text


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    if args.action == "report":
        request = pb.ReportIncidentRequest(control=control(), repository_root=_absolute(args.repo),
                                           text=_report_text(args, ctx), source="cli")
        print_incident_report(ctx, channel.call("IncidentService/Report", request, pb.IncidentReport))
    elif args.action == "list":
        request = pb.ListIncidentsRequest(repository_root=_absolute(args.repo) if args.repo else "",
                                          state=args.state, limit=args.limit)
        print_incident_list(ctx, channel.call("IncidentService/List", request, pb.IncidentList))
    elif args.action == "show":
        request = pb.ShowIncidentRequest(incident_id=args.incident_id, occurrences=args.occurrences)
        print_incident_detail(ctx, channel.call("IncidentService/Show", request, pb.IncidentDetail))
    elif args.action == "dismiss":
        request = pb.DismissIncidentRequest(control=control(), incident_id=args.incident_id, reason=args.reason)
        print_incident_detail(ctx, channel.call("IncidentService/Dismiss", request, pb.IncidentDetail))
    else:
        proposal = channel.call("IncidentService/Propose", pb.ProposeIncidentTaskRequest(
            control=control(), incident_id=args.incident_id, check=args.check,
            acknowledged_dirty_hash=args.acknowledge_dirty), pb.IncidentProposal)
        print_incident_proposal(ctx, proposal)
    return 0
