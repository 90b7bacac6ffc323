"""`codeflux watch --repo R --command ARGV --every DURATION [--propose-only | --auto-plan --budget AMOUNT]`.

Runs one approved check command on a schedule and turns its failures into incidents (issue 22). A foreground
command that drives the ticks: every ``--every`` (``30s``, ``5m``, ``1h``) it calls ``IncidentService/WatchTick``
— through the running coordinator's socket when one serves the data directory (the coordinator starts the worker
and records the incident), else the method table in this process — so the tick is one handler the browser could
call as well (AGENTS rule 11), and nothing of a watch lives on in the coordinator once the command stops.

Each tick runs the command confined on a fresh scratch copy of the branch's HEAD (the uncommitted changes are not
watched; only its TMPDIR and HOME are writable) under a repository approval of exactly that command: without one
nothing runs and the command exits 4 naming how to grant it. A failing run becomes an incident (redacted,
fingerprinted, deduplicated); the first failure of a fingerprint proposes one draft task whose requirement carries
the command as its acceptance example, and later ticks failing the same way only count occurrences.

``--propose-only`` (the default) stops at that draft. ``--auto-plan`` (requires ``--budget``) also drafts the
plan of each proposed task through the provider (the flags as for ``codeflux run``; a running coordinator uses
its own), each planning call reserved against the task's hard budget; ``--budget`` is the watch's total: each
proposal gets what earlier plans left, and once it is spent proposals are drafted without a plan. Planning
happens inside the tick, one proposal at a time, so a watch never has more than one planning call in flight (and
a coordinator serving several watches drafts at most the active-task limit of plans at once: the app's planning
slots) and nothing is ever approved or started: every plan waits for a person's approval.

``--ticks N`` stops after N ticks (default: until Ctrl-C). SIGINT / SIGTERM stop the watch cleanly: a tick under
way finishes (its command, its incident, its plan) and no other starts; the first signal says what it waits for;
the exit is 0. With ``--auto-plan`` in process (no coordinator running), a second signal cancels the plan draft
under way: the model call already sent is settled and its reply discarded, the task is paused with the reason
recorded (``codeflux task resume`` drafts the plan again), and nothing else is written.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import threading
from types import FrameType

from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.run import StopSignals, add_provider_arguments
from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import UsageError
from codeflux.domain.money import USD, Money
from codeflux.domain.watch import parse_watch_interval

NAME = "watch"
SUMMARY = ("run an approved check command on a schedule (confined, on the branch's HEAD); failures become "
           "incidents that propose draft tasks")
RECORDS_APP_LOG = True

_MAX_TICKS = 1_000_000
_TICK_TIMEOUT_S = 3600.0  # a tick runs the command (its own timeout bounds it) and, with --auto-plan, a plan draft


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", required=True, metavar="PATH", help="the repository to watch (its branch's HEAD)")
    parser.add_argument("--command", required=True, metavar="ARGV",
                        help="the check command as one line (split like a shell would, never run by one), exactly "
                             "as allowed for the repository, e.g. 'python3 -m pytest -q'")
    parser.add_argument("--every", required=True, metavar="DURATION", help="time between ticks: 30s, 5m, 1h")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--propose-only", action="store_true",
                      help="a failure proposes a draft task and nothing else (the default)")
    mode.add_argument("--auto-plan", action="store_true",
                      help="also draft each proposed task's plan (needs --budget); it still waits for your approval")
    parser.add_argument("--budget", default=None, metavar="AMOUNT",
                        help="with --auto-plan: the hard budget in USD all planning of this watch may spend")
    parser.add_argument("--ticks", default=None, metavar="N", help="stop after N ticks (default: until Ctrl-C)")
    parser.add_argument("--acknowledge-dirty", default="", metavar="HASH",
                        help="the repository's uncommitted changes you saw (as `codeflux repo inspect` prints): a "
                             "proposal's draft task needs it while the checkout is dirty")
    add_provider_arguments(parser)


def _ticks(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= _MAX_TICKS:
        raise UsageError(f"--ticks must be a whole number from 1 to {_MAX_TICKS}")
    return int(text)


def _argv(text: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise UsageError(f"--command does not split into arguments: {error}") from None
    if not argv:
        raise UsageError("--command is empty; give the check command, e.g. 'python3 -m pytest -q'")
    return argv


def _checked(args: argparse.Namespace) -> tuple[list[str], int, int | None, Money | None]:
    if args.auto_plan and args.budget is None:
        raise UsageError("--auto-plan needs --budget AMOUNT: every planning call is reserved against it")
    if args.budget is not None and not args.auto_plan:
        raise UsageError("--budget is for --auto-plan; --propose-only makes no model call")
    budget = None if args.budget is None else Money.parse_decimal(args.budget, currency=USD)
    if budget is not None and budget.minor <= 0:
        raise UsageError("--budget must be more than 0")
    if not args.repo.strip():
        raise UsageError("--repo is empty; give the path of a git repository")
    return _argv(args.command), parse_watch_interval(args.every), _ticks(args.ticks), budget


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    _checked(args)  # a usage error is refused before any channel is opened
    if not args.auto_plan:
        return ChannelNeeds(use=ChannelUse.CREATE)
    from codeflux.cli.start import CliModelAccess  # noqa: PLC0415 (only a watch that plans needs a provider)

    return ChannelNeeds(use=ChannelUse.CREATE, models=lambda db: CliModelAccess(db, args))


class _StopOnSignal:
    """SIGINT / SIGTERM: the tick under way finishes, no other starts, and the first signal says what it waits for;
    with ``--auto-plan`` a second one cancels the tick's plan draft (in process: the planner asks
    :meth:`cancel_requested` before and after each model call — the call under way is settled, its reply
    discarded, the task paused with the reason recorded). Through a running coordinator the draft is its own and
    finishes; a second signal only says the watch is stopping."""

    def __init__(self, ctx: CliContext, *, auto_plan: bool, in_process: bool) -> None:
        self._ctx, self._auto_plan, self._cancellable = ctx, auto_plan, auto_plan and in_process
        self.stop = threading.Event()
        self.requested: str | None = None
        self.cancelled: str | None = None
        self._planning = False  # the tick under way asked before a planning call: its draft is under way
        self._signals = StopSignals(self._handle)

    def __enter__(self) -> _StopOnSignal:
        self._signals.__enter__()
        self._ctx.stop_requested = self.cancel_requested
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.stop_requested = lambda: None
        self._signals.__exit__()

    def tick_starts(self) -> None:
        self._planning = False

    def cancel_requested(self) -> str | None:
        """What the in-process planner asks around each model call: the signal that cancelled the draft, if any."""
        self._planning = True
        return self.cancelled

    def _handle(self, number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if self.requested is None:
            self.requested = name
            if self._planning:
                waits = ("the plan draft under way (a model call); press Ctrl-C again to cancel it (the task is "
                         "paused, `codeflux task resume` drafts it again)")
            elif self._cancellable:
                waits = ("the tick under way: its check command, its incident and its plan draft; press Ctrl-C "
                         "again to cancel the plan draft")
            elif self._auto_plan:
                waits = ("the tick under way: its check command, its incident and its plan draft (the running "
                         "coordinator drafts it, to its end)")
            else:
                waits = "the tick under way: its check command and its incident"
            self._ctx.warn(f"codeflux watch: {name}: stopping after the tick under way (no other starts); "
                           f"waiting for {waits}")
        elif self._cancellable and self.cancelled is None:
            self.cancelled = name
            self._ctx.warn(f"codeflux watch: {name}: cancelling the plan draft (a model call under way is settled "
                           "and its reply discarded; the task is paused)")
        else:
            self._ctx.warn(f"codeflux watch: {name}: already stopping")
        self.stop.set()


def _say_tick(ctx: CliContext, number: int, reply: pb.WatchTickReply) -> None:
    head = reply.head[:12]
    if reply.outcome == "passed":
        ctx.say(f"tick {number}: {head} passed ({reply.duration_ms} ms, {reply.confinement}, under "
                f"{reply.approval_id})")
        return
    incident = reply.incident
    seen = "new incident" if reply.incident_created else f"seen {incident.occurrences} times"
    ctx.say(f"tick {number}: {head} failed (exit {reply.exit_code}, {reply.confinement}): {incident.incident_id} "
            f"{incident.state} ({seen}): {escape_for_display(incident.summary)}")
    if reply.proposed_task_id:
        ctx.say(f"  proposed draft task {reply.proposed_task_id} (it never starts by itself): "
                f"codeflux task show {reply.proposed_task_id}")
    if reply.plan_revision:
        ctx.say(f"  plan revision {reply.plan_revision} drafted (planning spent "
                f"{Money(minor=reply.planning_spent_minor, currency=USD)}); it waits for your approval")
    if reply.proposal_note:
        ctx.say(f"  {escape_for_display(reply.proposal_note)}")


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    argv, every, ticks, budget = _checked(args)
    root = os.path.abspath(os.path.expanduser(args.repo))
    mode = "auto-plan" if args.auto_plan else "propose-only"
    ctx.say(f"watching {root} every {args.every} ({mode}): {shlex.join(argv)} on the branch's HEAD — uncommitted "
            "changes are not watched")
    remaining = budget
    number = 0
    with _StopOnSignal(ctx, auto_plan=args.auto_plan, in_process=channel.via is None) as stopping:
        while not stopping.stop.is_set() and (ticks is None or number < ticks):
            number += 1
            stopping.tick_starts()
            plan = remaining is not None and remaining.minor > 0
            request = pb.WatchTickRequest(control=control(), repository_root=root, argv=argv, auto_plan=plan,
                                          budget="" if not plan or remaining is None else _decimal(remaining),
                                          acknowledged_dirty_hash=args.acknowledge_dirty)
            reply = channel.call("IncidentService/WatchTick", request, pb.WatchTickReply, timeout=_TICK_TIMEOUT_S)
            _say_tick(ctx, number, reply)
            if remaining is not None and reply.plan_revision:
                remaining = Money(minor=max(remaining.minor - reply.planning_spent_minor, 0), currency=USD)
                if remaining.minor == 0:
                    ctx.say("  the watch's --budget is spent: later proposals are drafted without a plan")
            if ticks is not None and number >= ticks:
                break
            stopping.stop.wait(every)
    ctx.say(f"watch stopped after {number} tick(s)" + (f" ({stopping.requested})" if stopping.requested else ""))
    return 0


def _decimal(money: Money) -> str:
    """``money`` (USD) as the exact decimal ``Money.parse_decimal`` reads back."""
    whole, cents = divmod(money.minor, 100)
    return f"{whole}.{cents:02d}"
