"""`codeflux open`: a fresh one-time link into the running coordinator's browser UI.

The running ``codeflux start`` for the data directory issues the link over its 0600 Unix socket
(``SessionService/IssueLaunchLink``); this prints it and, unless ``--no-browser``, opens the browser — the way
back in after the tab was closed, the link expired or the page says its session ended; with ``--task`` the
link opens that task's page (a second tab, a bookmark). Tasks keep running throughout. With no coordinator
serving the data directory nothing is started: the command says to run ``codeflux start`` and exits 3 (a
prerequisite is missing).
"""

from __future__ import annotations

import argparse

from codeflux.api.v1 import product_pb2
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse
from codeflux.cli.context import CliContext
from codeflux.cli.start import say_launch_link
from codeflux.domain.errors import PrerequisiteError

NAME = "open"
SUMMARY = "print (and open) a fresh one-time link into the running coordinator's browser UI"

NOT_RUNNING = ("no codeflux coordinator serves this data directory: run `codeflux start` (it prints and opens a "
               "link into the browser UI)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-browser", action="store_true", help="print the link but do not open a browser")
    parser.add_argument("--task", metavar="TASK_ID", default="",
                        help="open this task's page (/tasks/<id>) once the link is used")


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    del args
    return ChannelNeeds(use=ChannelUse.COORDINATOR_ONLY)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel | None) -> int:
    if channel is None or channel.via is None:
        raise PrerequisiteError(NOT_RUNNING)
    link = channel.call("SessionService/IssueLaunchLink", product_pb2.IssueLaunchLinkRequest(task_id=args.task),
                        product_pb2.LaunchLink)
    say_launch_link(ctx, link, open_browser=not args.no_browser)
    return 0
