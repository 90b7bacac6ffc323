"""`codeflux budget show|set|acknowledge|resume|stop|approve-rung --task T`: a task's hard budget from the terminal.

``show`` prints the exact figures (limit, spent, reserved, remaining; unknown is never written as 0)
and, with ``--entries``, the ledger. ``set`` creates the budget or changes it (compare-and-set on its
revision: ``--revision`` pins the one you saw; without it the current one is used). ``acknowledge``
accepts overruns and unknown charges so paid calls may go on; ``resume`` continues a task paused by its
budget and ``stop`` cancels it. Amounts are decimals in the budget's currency (``5.00``).
"""

from __future__ import annotations

import argparse
import os

from codeflux.cli.context import CliContext
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.model_approvals import approve_ladder_rung
from codeflux.domain.errors import UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Rung
from codeflux.domain.money import Currency, Money
from codeflux.store.database import Database
from codeflux.store.opening import open_store
from codeflux.store.tasks import require_task

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


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    task_id = TaskId.parse(args.task)
    db = open_store(ctx.location(), create=False, migrate=False)
    try:
        return _run(args, ctx, db, task_id)
    finally:
        db.close()


def _run(args: argparse.Namespace, ctx: CliContext, db: Database, task_id: TaskId) -> int:
    budgets = BudgetService(db)
    if args.action == "set":
        currency = Currency.parse(args.currency)
        limit = Money.parse_decimal(args.limit, currency=currency)
        warning = None if args.warning is None else Money.parse_decimal(args.warning, currency=currency)
        revision = args.revision if args.revision is not None else budgets.revision_of(task_id)
        budgets.set_budget(task_id, hard_limit=limit, warning=warning, token_limit=args.tokens,
                           allow_unknown_price=args.allow_unknown_price, expected_revision=revision,
                           idempotency_key=f"cli-{os.urandom(16).hex()}")
    elif args.action == "acknowledge":
        revision = args.revision if args.revision is not None else budgets.summary(task_id).revision
        budgets.acknowledge(task_id, expected_revision=revision, entry_ids=args.entry)
    elif args.action == "resume":
        task = budgets.resume_task(task_id)
        ctx.say(f"task {task_id}: {task.state}")
    elif args.action == "stop":
        task = budgets.stop_task(task_id)
        ctx.say(f"task {task_id}: {task.state}")
        return 0
    elif args.action == "approve-rung":
        rung = Rung.parse(args.rung)
        approve_ladder_rung(db, task_id=task_id, rung=rung)
        ctx.say(f"task {task_id}: spending on {rung} is allowed; the gateway will no longer stop before it")
        return 0
    state = db.read(lambda view: require_task(view, task_id)).state
    for line in budgets.summary(task_id).lines():
        ctx.say(line)
    ctx.say(f"  task state   {state}")
    if args.action == "show" and args.entries:
        for entry in budgets.entries(task_id):
            amount = "unknown" if entry.amount_minor is None else str(Money(minor=entry.amount_minor,
                                                                             currency=entry.currency))
            ack = "  acknowledged" if entry.acknowledged else ""
            reason = f"  ({entry.reason})" if entry.reason else ""
            ctx.say(f"  entry {entry.entry_id}  {entry.request_id}  {entry.kind:<14} {amount}{reason}{ack}")
    return 0

