"""`codeflux doctor`: is everything codeflux needs here, and if not, what to do next."""

from __future__ import annotations

import argparse

from codeflux.cli.context import CliContext
from codeflux.cli.documents import JSON_FORMAT
from codeflux.cli.exit_codes import ExitCode
from codeflux.cli.output import print_json
from codeflux.coordinator.doctor import DEFAULT_PORT, run_doctor
from codeflux.coordinator.runs.configured import check_settings_in_force
from codeflux.coordinator.tasks.leftovers import check_leftovers
from codeflux.domain.errors import UsageError

NAME = "doctor"
SUMMARY = "check every prerequisite (ok / missing / degraded / failed / unknown) and say what to do next"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON for machines")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"loopback port to check (default {DEFAULT_PORT})")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    if not 1 <= args.port <= 65535:
        raise UsageError("--port must be between 1 and 65535")
    report = run_doctor(ctx.location(), port=args.port, extra_checks=(check_leftovers, check_settings_in_force))
    blocking = report.blocking
    if args.json:
        print_json(ctx, {
            "format": JSON_FORMAT,
            "checks": [
                {"id": c.id, "title": c.title, "status": c.status.value, "summary": c.summary,
                 "remediation": c.remediation, "blocks": c.blocks}
                for c in report.checks
            ],
            "blocking": [c.id for c in blocking],
        })
    else:
        width = max(len(c.title) for c in report.checks)
        for check in report.checks:
            ctx.say(f"{check.title:<{width}}  {check.status.value:<9} {check.summary}")
            if check.remediation and check.status.value != "ok":
                ctx.say(f"{'':<{width}}  -> {check.remediation}")
        if blocking:
            ctx.say(f"doctor: {len(blocking)} check(s) block work; start with {blocking[0].id!r}")
        else:
            ctx.say("doctor: everything required is available")
    return int(ExitCode.PREREQUISITE if blocking else ExitCode.OK)
