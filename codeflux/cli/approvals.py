"""`codeflux approvals list [--repo PATH] [--all]` and `codeflux approvals revoke ID [--reason TEXT]`.

``list`` prints the repository approvals (a person's "allow for this repository": exactly one operation, allowed in
every later task of the repository without asking), newest first — of the repository at PATH (its root commits)
or of every repository; revoked ones too with ``--all``. ``revoke`` ends one: from then on that operation asks
again. Both are calls of the method table (``ApprovalService``): through a running coordinator when one serves
the data directory, else in this process (:mod:`codeflux.cli.channel`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.views import print_repository_approvals
from codeflux.domain.ids import RepositoryApprovalId

NAME = "approvals"
SUMMARY = "list or revoke what was allowed for a whole repository (allow-for-repository)"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the repository approvals, newest first",
                                 description="the repository approvals, newest first", allow_abbrev=False)
    listing.add_argument("--repo", default=None, metavar="PATH", help="only this repository's (a path inside it)")
    listing.add_argument("--all", action="store_true", help="revoked approvals too")
    listing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    revoking = actions.add_parser("revoke", help="revoke one repository approval: that operation asks again",
                                  description="revoke one repository approval: that operation asks again",
                                  allow_abbrev=False)
    revoking.add_argument("approval", metavar="ID", help="the approval id (rap_…)")
    revoking.add_argument("--reason", default="", metavar="TEXT", help="why (recorded with the revocation)")
    revoking.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    return ChannelNeeds(use=ChannelUse.EXISTING)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    if args.action == "list":
        path = "" if args.repo is None else str(Path(args.repo).resolve())
        reply = channel.call("ApprovalService/ListRepositoryApprovals",
                             pb.ListRepositoryApprovalsRequest(repository_path=path, include_revoked=args.all),
                             pb.ListRepositoryApprovalsReply)
        print_repository_approvals(ctx, list(reply.approvals))
        return 0
    approval_id = RepositoryApprovalId.parse(args.approval)
    revoked = channel.call("ApprovalService/RevokeRepositoryApproval",
                           pb.RevokeRepositoryApprovalRequest(control=control(), approval_id=approval_id.value,
                                                              reason=args.reason),
                           pb.RevokeRepositoryApprovalReply)
    ctx.say(f"revoked {revoked.approval.approval_id}: that operation asks again in every task of "
            f"{revoked.approval.repository_root}")
    print_repository_approvals(ctx, [revoked.approval])
    return 0
