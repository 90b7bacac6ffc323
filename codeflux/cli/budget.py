"""`codeflux budget show|set|acknowledge|resume|stop|approve-rung --task T`: a task's hard budget from the terminal.

``show`` prints the exact figures (limit, spent, reserved, remaining; unknown is never written as 0)
and, with ``--entries``, the ledger. ``set`` creates the budget or changes it (compare-and-set on its
revision: ``--revision`` pins the one you saw; without it the current one is used). ``acknowledge``
accepts overruns and unknown charges so paid calls may go on; ``resume`` continues a task paused by its
budget and ``stop`` cancels it (its worktree is disposed of as ``task cancel`` does). Amounts are decimals in
the budget's currency (``5.00``). Every action is a call of the method table (``BudgetService``): through a
running coordinator when one serves the data directory, else in this process (:mod:`codeflux.cli.channel`).
"""

from __future__ import annotations

import argparse

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.views import print_budget
from codeflux.domain.errors import UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Rung

NAME = "budget"
SUMMARY = "show or set a task's hard budget, acknowledge charges, resume or stop a task paused by its budget"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    texts = {
        "show": "the exact figures: limit, spent, reserved, remaining, tokens, charges awaiting a decision",
        "set": "create the budget or change its limits",
        "acknowledge": "accept overruns and unknown charges (all pending ones unless --entry is given)",
        "resume": "continue a task paused by its budget (after raising the limit or acknowledging)",
        "stop": "cancel a task paused by its budget",
        "approve-rung": "allow spending on a ladder rung that asks first (capable:max) in this task",
    }
    for action, text in texts.items():
        sub = actions.add_parser(action, help=text, description=text, allow_abbrev=False)
        sub.add_argument("--task", required=True, metavar="T", help="the task id (tsk_…)")
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
        if action == "show":
            sub.add_argument("--entries", action="store_true", help="also print every ledger entry")
        if action == "set":
            sub.add_argument("--limit", required=True, metavar="AMOUNT", help="hard limit, such as 5.00")
            sub.add_argument("--currency", default="USD", metavar="CODE", help="ISO 4217 code (default USD)")
            sub.add_argument("--warning", default=None, metavar="AMOUNT", help="warn when spending reaches this")
            sub.add_argument("--tokens", type=_parse_count, default=None, metavar="N", help="token limit")
            sub.add_argument("--allow-unknown-price", action="store_true",
                             help="let calls at an unknown price start (their charges stay unknown)")
        if action in ("set", "acknowledge"):
            sub.add_argument("--revision", type=_parse_count, default=None, metavar="N",
                             help="the budget revision you saw (default: the current one)")
        if action == "approve-rung":
            sub.add_argument("--rung", required=True, metavar="RUNG", help="the rung, e.g. capable:max")
        if action == "acknowledge":
            sub.add_argument("--entry", type=_parse_count, action="append", default=None, metavar="ID",
                             help="a ledger entry id to accept (repeatable)")


def _parse_count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise UsageError("expected a whole number")
    return int(text)


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    return ChannelNeeds(use=ChannelUse.EXISTING)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    task_id = TaskId.parse(args.task).value
    report: pb.BudgetReport
    if args.action == "show":
        report = channel.call("BudgetService/GetBudget", pb.GetBudgetRequest(task_id=task_id, entries=args.entries),
                              pb.BudgetReport)
    elif args.action == "set":
        request = pb.ChangeBudgetRequest(
            control=control(), task_id=task_id, hard_limit=args.limit, currency=args.currency,
            warning=args.warning or "", token_limit=args.tokens or 0, token_limit_set=args.tokens is not None,
            allow_unknown_price=args.allow_unknown_price, revision=args.revision or 0)
        report = channel.call("BudgetService/ChangeBudget", request, pb.BudgetReport)
    elif args.action == "acknowledge":
        request = pb.AcknowledgeChargesRequest(control=control(), task_id=task_id, revision=args.revision or 0,
                                               entry_ids=args.entry or [])
        report = channel.call("BudgetService/AcknowledgeCharges", request, pb.BudgetReport)
    elif args.action == "approve-rung":
        request = pb.ApproveRungRequest(control=control(), task_id=task_id, rung=str(Rung.parse(args.rung)))
        report = channel.call("BudgetService/ApproveRung", request, pb.BudgetReport)
        ctx.say(report.outcome)
        return 0
    else:
        method = "ResumeAfterBudget" if args.action == "resume" else "StopForBudget"
        report = channel.call(f"BudgetService/{method}", pb.BudgetTaskRequest(control=control(), task_id=task_id),
                              pb.BudgetReport)
        if args.action == "stop":
            ctx.say(report.outcome)
            return 0
    print_budget(ctx, report)
    return 0
