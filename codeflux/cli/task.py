"""`codeflux task …`: tasks from the terminal (headless), against the local database.

``create`` opens the repository read-only; uncommitted changes are listed with their hash and need
``--acknowledge-dirty HASH`` (exactly that list) — without it the command exits 4. ``show`` prints the
state, every action (the unavailable ones with why), the plan and budget figures. ``approve-plan`` and
``send-back`` bind to the plan revision and its sha256; ``accept`` and ``reject`` to the reviewed diff
identity. ``patch`` prints a kept patch. ``recovery`` lists, per interrupted task, what is known, what is
ambiguous and what is recommended; ``record-outcome`` records whether an ambiguous effect happened;
``recover`` takes a recovery action; ``cancel`` ends an open task. ``plan`` drafts a plan revision via the
gateway; ``start`` runs a ready task in this process under a headless policy (``--allow``); ``pause``
pauses it between turns; ``resume`` continues a paused task in this process, in the next attempt — the
loop's conversation is kept in SQLite (redacted), so the resumed run continues it with the plan steps
already done, from the worktree as it is (a task paused before its plan was approved drafts the plan
again instead); ``decide`` answers a pending tool request; ``diff`` prints the unified diff and its
identity, then the changed files that change what later commands execute ("changes what runs":
``conftest.py``, ``pytest.ini``, a Makefile, …, with why). SIGINT / SIGTERM during ``plan``, ``start`` or
``resume`` stop at the next boundary with nothing half-written (see :mod:`codeflux.cli.run`). Arguments,
paths and check argv are shown escaped (:func:`codeflux.domain.display.escape_for_display`).

Every subcommand first runs startup recovery when no other process is running tasks (see
:mod:`codeflux.coordinator.tasks.recovery`): interrupted work is marked, never resumed. Exit codes come from
the one table (0 done, 1 failed, 2 usage, 3 refused by state, 4 a decision is needed, 5 stalled).
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from pathlib import Path

from codeflux.authority.decide import UserDecision
from codeflux.cli.context import CliContext
from codeflux.cli.exit_codes import ExitCode
from codeflux.cli.remote import run_remote
from codeflux.cli.run import (
    ShutdownOnSignal,
    add_allow_argument,
    add_provider_arguments,
    build_gateway,
    print_plan,
    run_ready_task,
)
from codeflux.coordinator.runs.loop_steps import conversation_summary
from codeflux.coordinator.runs.planner import propose_plan
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.recovery import RecoveryService, RecoveryView, exclusive_startup_lock
from codeflux.coordinator.tasks.review import ReviewService, require_task_action
from codeflux.coordinator.tasks.service import Actor, TaskService, TaskView
from codeflux.coordinator.tasks.worktree_lifecycle import WorktreeDisposal, dispose_task_worktree, task_worktree_binding
from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import DirtyTreeNotAcknowledgedError, TaskActionUnavailableError, UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.recovery import EffectOutcome, RecoveryAction
from codeflux.domain.review_flags import changes_what_runs, what_runs_lines
from codeflux.domain.tasks import TaskAction, TaskState
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database
from codeflux.store.opening import open_store

NAME = "task"
SUMMARY = "create, inspect, approve, review and recover tasks (headless)"
RECORDS_APP_LOG = True

_ACTIONS = {
    "create": "create a task for a repository (uncommitted changes must be acknowledged by their hash)",
    "list": "every task with its state",
    "show": "a task's state, actions (with why unavailable), plan and budget",
    "approve-plan": "approve plan revision N with hash H; the task becomes ready",
    "send-back": "send plan revision N (hash H) back with feedback for a new revision",
    "accept": "land the reviewed diff (identity H) on your branch and complete the task",
    "reject": "keep the diff (identity H) as a patch and end the task",
    "patch": "print the patch kept for a task",
    "recovery": "interrupted tasks: what is known, what is ambiguous, what is recommended",
    "record-outcome": "record whether an effect with an unknown outcome happened (it is never re-run)",
    "recover": "take a recovery action: safe-resume, reconcile, preserve-patch or abandon",
    "cancel": "cancel an open task (its worktree is removed unless that would lose work)",
    "plan": "draft the next plan revision via the gateway (provider flags as for `codeflux run`)",
    "start": "run a ready task in this process, headless: only --allow operations run without a person",
    "pause": "pause a task (a running one stops between turns)",
    "resume": ("continue a paused task in this process: the next attempt continues the run's conversation (kept "
               "in SQLite, redacted) with the plan steps already done"),
    "decide": "answer a pending tool request: --allow-once, --allow-for-task or --deny",
    "diff": "print the task worktree's unified diff and its identity",
}


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in _ACTIONS.items():
        sub = actions.add_parser(action, help=text, description=text, allow_abbrev=False)
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
        if action not in ("create", "list", "recovery"):
            sub.add_argument("task", metavar="ID", help="the task id (tsk_…)")
        _configure_action(action, sub)


def _configure_action(action: str, sub: argparse.ArgumentParser) -> None:
    if action == "create":
        sub.add_argument("--repo", required=True, metavar="PATH", help="the git repository (any path inside it)")
        sub.add_argument("--requirement", required=True, metavar="TEXT", help="what the task must achieve")
        sub.add_argument("--title", default=None, metavar="TEXT", help="a short title (default: first line)")
        sub.add_argument("--acknowledge-dirty", default=None, metavar="HASH",
                         help="the hash of the uncommitted changes you reviewed (printed when they exist)")
    elif action == "list":
        sub.add_argument("--limit", type=_parse_count, default=100, metavar="N", help="at most N tasks")
    elif action in ("approve-plan", "send-back"):
        sub.add_argument("--revision", required=True, type=_parse_count, metavar="N", help="the plan revision")
        sub.add_argument("--sha256", required=True, metavar="H", help="the plan revision's sha256")
        if action == "send-back":
            sub.add_argument("--feedback", required=True, metavar="TEXT", help="what to change")
    elif action in ("accept", "reject"):
        sub.add_argument("--identity", required=True, metavar="H", help="the diff identity you reviewed")
        if action == "reject":
            sub.add_argument("--reason", required=True, metavar="TEXT", help="why the diff is rejected")
    elif action == "record-outcome":
        sub.add_argument("--item", required=True, metavar="ITEM", help="the effect id (exe_… or mreq_…)")
        outcome = sub.add_mutually_exclusive_group(required=True)
        outcome.add_argument("--happened", dest="outcome", action="store_const", const=EffectOutcome.HAPPENED)
        outcome.add_argument("--did-not-happen", dest="outcome", action="store_const",
                             const=EffectOutcome.DID_NOT_HAPPEN)
        sub.add_argument("--note", default=None, metavar="TEXT", help="what you checked")
    elif action == "recover":
        sub.add_argument("--action", dest="recovery", required=True, choices=[a.value for a in RecoveryAction])
    else:
        _configure_run_action(action, sub)


def _configure_run_action(action: str, sub: argparse.ArgumentParser) -> None:
    if action in ("plan", "start", "resume"):
        add_provider_arguments(sub)
        if action != "plan":
            add_allow_argument(sub)
    elif action == "decide":
        sub.add_argument("--request", required=True, metavar="REQ", help="the pending tool request (treq_…)")
        choice = sub.add_mutually_exclusive_group(required=True)
        for flag, value in (("--allow-once", UserDecision.ALLOW_ONCE),
                            ("--allow-for-task", UserDecision.ALLOW_FOR_TASK), ("--deny", UserDecision.DENY)):
            choice.add_argument(flag, dest="decision", action="store_const", const=value)
        sub.add_argument("--reason", default="decided on the command line", metavar="TEXT", help="why")


def _parse_count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise UsageError("expected a whole number")
    return int(text)


def _key() -> str:
    return f"cli-{os.urandom(16).hex()}"


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    location = ctx.location()
    remote = run_remote(args, ctx, location)
    if remote is not None:  # a coordinator runs: it owns the tasks, the command went to it
        return remote
    creating = args.action == "create"
    db = open_store(location, create=creating, migrate=creating)
    try:
        with exclusive_startup_lock(location) as alone:
            if alone:
                found = RecoveryService(db).recover_at_startup()
                if found.tasks and args.action != "recovery":
                    ctx.warn(f"{len(found.tasks)} interrupted task(s) now need recovery: `codeflux task recovery`")
        service = TaskService(db, worktrees_root=location.worktrees)
        return _run(args, ctx, db, service)
    finally:
        db.close()


def _run(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService) -> int:
    if args.action == "create":
        return _create(args, ctx, service)
    if args.action == "list":
        for task in service.list_tasks(limit=args.limit):
            ctx.say(f"{task.task_id}  {task.state:<22} {task.title or ''}")
        return 0
    if args.action == "recovery":
        views = RecoveryService(db).tasks_needing_recovery()
        if not views:
            ctx.say("no task needs recovery")
        for view in views:
            _print_recovery(ctx, view)
        return 0
    return _TASK_HANDLERS[args.action](args, ctx, db, service, TaskId.parse(args.task))


Handler = Callable[[argparse.Namespace, CliContext, Database, TaskService, TaskId], int]


def _show_task(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    _show(ctx, db, service.show(task_id))
    return 0


def _approve(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    change = service.approve_plan(task_id, revision=args.revision, sha256=args.sha256, idempotency_key=_key())
    ctx.say(f"task {task_id}: plan revision {args.revision} approved; {change.state}")
    return 0


def _send_back(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    change = service.send_back(task_id, revision=args.revision, sha256=args.sha256, feedback=args.feedback,
                               idempotency_key=_key())
    ctx.say(f"task {task_id}: plan revision {args.revision} sent back; {change.state}")
    return 0


def _reject(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    result = ReviewService(db).reject_task(task_id, reviewed_identity=args.identity, reason=args.reason)
    ctx.say(f"task {task_id}: rejected; {result.change.state}; patch {result.patch.diff_identity} kept "
            f"({len(result.patch.patch)} bytes; `codeflux task patch {task_id}`)")
    _print_worktree(ctx, result.worktree)
    return 0


def _patch(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    _write_bytes(ctx, ReviewService(db).task_patch(task_id))
    return 0


def _record_outcome(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService,
                    task_id: TaskId) -> int:
    view = RecoveryService(db).record_outcome(task_id, item_id=args.item, outcome=args.outcome, note=args.note)
    ctx.say(f"task {task_id}: {args.item} recorded as {args.outcome}")
    _print_recovery(ctx, view)
    return 0


def _create(args: argparse.Namespace, ctx: CliContext, service: TaskService) -> int:
    snapshot = open_repository(Path(args.repo))
    if snapshot.is_dirty and args.acknowledge_dirty != snapshot.dirty_hash:
        ctx.say(f"{snapshot.root} has uncommitted changes:")
        for entry in snapshot.changes:
            ctx.say(f"  {entry.status!s:<12} {entry.path}  {entry.content_sha256 or '-'}")
        ctx.say(f"dirty hash {snapshot.dirty_hash}")
        ctx.say(f"if the task may start from exactly these, add --acknowledge-dirty {snapshot.dirty_hash}")
        raise DirtyTreeNotAcknowledgedError(path=str(snapshot.root), change_count=len(snapshot.changes),
                                            current_hash=snapshot.dirty_hash, acknowledged_hash=args.acknowledge_dirty)
    change = service.create_task(snapshot, args.requirement, title=args.title,
                                 acknowledged_dirty_hash=args.acknowledge_dirty, acknowledged_by=Actor.USER,
                                 idempotency_key=_key())
    ctx.say(f"task {change.task_id} created ({change.state}, revision {change.revision})")
    return 0


def _show(ctx: CliContext, db: Database, view: TaskView) -> None:
    task = view.task
    ctx.say(f"task {task.task_id}  {task.title or ''}")
    ctx.say(f"  state        {task.state} (revision {task.revision})")
    ctx.say(f"  repository   {task.repository_root}")
    ctx.say(f"  base         {task.base_revision or '(not started)'}")
    ctx.say(f"  worktree     {task.worktree}")
    if view.plan is None:
        ctx.say("  plan         none yet")
    else:
        plan, decision = view.plan, view.plan_decision
        verdict = "undecided" if decision is None else decision.decision
        ctx.say(f"  plan         revision {plan.revision} sha256 {plan.sha256} ({verdict})")
        ctx.say(f"    scope      {plan.plan.scope.summary}")
        for number, step in enumerate(plan.plan.steps, start=1):
            ctx.say(f"    step {number}     {step.title}")
        for check in plan.plan.checks:
            ctx.say(f"    check      {escape_for_display(check.name)}: "
                    f"{shlex.join(escape_for_display(a) for a in check.argv)}")
    if view.attempt is not None:
        ended = "open" if view.attempt.is_open else f"ended at {view.attempt.stopped_at or 'the end'}"
        ctx.say(f"  attempt      {view.attempt.attempt} under plan revision {view.attempt.plan_revision} ({ended})")
    budgets = BudgetService(db)
    if budgets.revision_of(task.task_id) is None:
        ctx.say("  budget       none set (`codeflux budget set --task ID --limit AMOUNT`)")
    else:
        for line in budgets.summary(task.task_id).lines():
            ctx.say(f"  {line}")
    ctx.say("  actions")
    for action in view.actions:
        ctx.say(f"    {action.action.value:<15} " + ("available" if action.available else f"no: {action.reason}"))
    if task.state is TaskState.RECOVERY_REQUIRED:
        _print_recovery(ctx, RecoveryService(db).assess(task.task_id))


def _accept(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    result = ReviewService(db).accept_task(task_id, reviewed_identity=args.identity)
    outcome = result.outcome
    if result.conflicted:
        ctx.warn(f"codeflux task: the diff conflicts with {outcome.branch} in: {', '.join(outcome.conflicting_paths)}")
        ctx.warn("nothing changed; the task still awaits review (repair it, or reject it to keep the patch)")
        return 1
    state = "" if result.change is None else f"; {result.change.state}"
    ctx.say(f"task {task_id}: accepted ({outcome.kind}) on {outcome.branch} "
            f"{outcome.previous_head[:12]} → {outcome.landed_head[:12]}{state}")
    _print_worktree(ctx, result.worktree)
    return 0


def _recover(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    recovery = RecoveryService(db)
    match RecoveryAction(args.recovery):
        case RecoveryAction.SAFE_RESUME:
            ctx.say(f"task {task_id}: {recovery.safe_resume(task_id).state}; resume it to go on")
        case RecoveryAction.RECONCILE:
            ctx.say(f"task {task_id}: reconciled; {recovery.reconcile(task_id).state}; resume it to go on")
        case RecoveryAction.PRESERVE_PATCH:
            row = recovery.preserve_patch(task_id)
            ctx.say(f"task {task_id}: patch {row.diff_identity} preserved ({len(row.patch)} bytes)")
        case RecoveryAction.ABANDON:
            change, disposal = recovery.abandon(task_id)
            ctx.say(f"task {task_id}: abandoned; {change.state}")
            _print_worktree(ctx, disposal)
    return 0


def _cancel(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    task = service.show(task_id).task
    require_task_action(task, TaskAction.CANCEL)
    change = service.transition(task_id, TaskState.CANCELLED, expected_revision=task.revision,
                                reason="cancelled by the user", actor=Actor.USER, idempotency_key=_key())
    ctx.say(f"task {task_id}: {change.state}")
    stored = [p.diff_identity for p in service.patches(task_id)]
    _print_worktree(ctx, dispose_task_worktree(db, task_id, saved_patch_identity=stored[-1] if stored else None,
                                               delete_branch=False))
    return 0


def _plan(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    with ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        return _draft(args, ctx, db, service, task_id, shutdown=shutdown)


def _draft(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId, *,
           shutdown: ShutdownOnSignal) -> int:
    gateway, provider = build_gateway(db, args, phases=("plan",))
    planned = propose_plan(task_id, gateway=gateway, tasks=service, position=LadderPosition.start(),
                           idempotency_key=_key(), stop_requested=shutdown.stop_requested)
    print_plan(ctx, planned, provider)
    ctx.say(f"approve it: codeflux task approve-plan {task_id} --revision {planned.revision} --sha256 {planned.sha256}")
    if shutdown.requested is not None:
        ctx.say(f"{shutdown.requested}: stopped after recording plan revision {planned.revision}")
        ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
        return int(ExitCode.DECISION_NEEDED)
    return 0


def _start(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    with ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        return run_ready_task(ctx, db, ctx.location(), service, task_id, args=args, shutdown=shutdown)


def _pause(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    task = service.show(task_id).task
    require_task_action(task, TaskAction.PAUSE)
    change = service.transition(task_id, TaskState.PAUSED, expected_revision=task.revision, reason="paused by the user",
                                actor=Actor.USER, idempotency_key=_key())
    ctx.say(f"task {task_id}: {change.state} (a run in progress stops before its next turn)")
    return 0


def _resume(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    with ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        return _resume_paused(args, ctx, db, service, task_id, shutdown=shutdown)


def _resume_paused(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId,
                   *, shutdown: ShutdownOnSignal) -> int:
    task = service.show(task_id).task
    if task.state is not TaskState.PAUSED:
        raise TaskActionUnavailableError(task_id=task_id.value, action=TaskAction.RESUME.value,
                                         state=task.state.value, reason="only a paused task resumes")
    view = service.show(task_id)
    if not view.plan_approved:
        # paused while planning (e.g. no budget yet): resuming drafts the plan again
        service.transition(task_id, TaskState.FORECASTING, expected_revision=task.revision,
                           reason="resumed by the user: the plan is drafted again", actor=Actor.USER,
                           idempotency_key=_key())
        return _draft(args, ctx, db, service, task_id, shutdown=shutdown)
    service.transition(task_id, TaskState.READY, expected_revision=task.revision, reason="resumed by the user",
                       actor=Actor.USER, idempotency_key=_key())
    kept = conversation_summary(service.changes, task_id)
    if kept is not None and kept.is_open and view.plan is not None and kept.plan_revision == view.plan.revision:
        steps = len(view.plan.plan.steps)
        ctx.say(f"task {task_id}: resuming in this process; the run's conversation continues ({kept.messages} "
                f"message(s) kept, {len(kept.steps_done)} of {steps} plan step(s) done)")
    else:
        ctx.say(f"task {task_id}: resuming in this process; no conversation is kept for plan revision "
                f"{view.plan.revision if view.plan else '?'}, so the run starts one from the worktree's current state")
    return run_ready_task(ctx, db, ctx.location(), service, task_id, args=args, shutdown=shutdown)


def _decide(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    with ToolDriver(db, state_dir=ctx.location().directory / "workers") as driver:
        if driver.read_request(args.request).task_id != task_id:
            raise UsageError(f"request {args.request} is not a request of task {task_id}")
        decided = driver.decide(args.request, args.decision, reason=args.reason)
    ctx.say(f"task {task_id}: request {decided.request_id} {decided.outcome} ({decided.decision.reason[:200]})")
    return 0


def _diff(args: argparse.Namespace, ctx: CliContext, db: Database, service: TaskService, task_id: TaskId) -> int:
    binding = task_worktree_binding(service.show(task_id).task)
    if binding is None or not binding.path.exists():
        raise TaskActionUnavailableError(task_id=task_id.value, action="diff", state=service.show(task_id).task.state,
                                         reason="the task has no worktree (it never ran, or it was removed)")
    diff = diff_against_base(binding)
    _write_bytes(ctx, diff.unified_diff)
    ctx.say(f"diff identity {diff.identity} (base {diff.base[:12]}, head {diff.head[:12]}, {len(diff.files)} file(s))")
    for line in what_runs_lines(changes_what_runs(f.path for f in diff.files)):
        ctx.say(line)
    return 0


_TASK_HANDLERS: dict[str, Handler] = {
    "show": _show_task, "approve-plan": _approve, "send-back": _send_back, "accept": _accept, "reject": _reject,
    "patch": _patch, "record-outcome": _record_outcome, "recover": _recover, "cancel": _cancel, "plan": _plan,
    "start": _start, "pause": _pause, "resume": _resume, "decide": _decide, "diff": _diff,
}


def _print_worktree(ctx: CliContext, disposal: WorktreeDisposal | None) -> None:
    if disposal is None:
        return
    if disposal.removed:
        deleted = disposal.checkpoint_refs_deleted
        refs = f"; {deleted} checkpoint ref(s) deleted" if deleted else ""
        ctx.say("  worktree removed" + (" with its branch" if disposal.branch_deleted else "") + refs)
    else:
        ctx.say(f"  worktree kept ({disposal.refusal}): {disposal.detail}")


def _print_recovery(ctx: CliContext, view: RecoveryView) -> None:
    known, advice = view.known, view.recommendation
    ctx.say(f"task {view.task.task_id}  {view.task.state}  {view.task.title or ''}")
    ctx.say("  known")
    ctx.say(f"    interrupted while {known.interrupted_in}")
    plan = "none" if known.plan_revision is None else (
        f"revision {known.plan_revision} ({'approved' if known.plan_approved else 'not approved'})")
    ctx.say(f"    plan       {plan}")
    ctx.say(f"    attempt    {known.attempt or 'none'}; last ledger stage {known.last_stage or 'none'}")
    head = f"HEAD {known.head[:12]} over base {known.base[:12]}" if known.head and known.base else ""
    ctx.say(f"    worktree   {known.worktree} {head}".rstrip())
    if known.diff_identity is not None:
        ctx.say(f"    diff       {known.diff_identity}" + ("  (stored as a patch)" if known.patch_stored else ""))
    ctx.say("  ambiguous" + ("" if view.ambiguous else "  nothing"))
    for effect in view.ambiguous:
        outcome = "UNRESOLVED" if effect.outcome is None else f"recorded: {effect.outcome}"
        ctx.say(f"    {effect.item_id}  {effect.kind}  {effect.summary}  [{outcome}]")
    ctx.say(f"  recommended  {advice.recommended}: {advice.why}")
    for action, reason in advice.refused:
        ctx.say(f"    {action.value:<15} no: {reason}")
    if advice.unresolved:
        ctx.say(f"  next: codeflux task record-outcome {view.task.task_id} --item ITEM --happened|--did-not-happen")


def _write_bytes(ctx: CliContext, data: bytes) -> None:
    buffer = getattr(ctx.stdout, "buffer", None)
    if buffer is None:
        ctx.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        ctx.stdout.flush()
        buffer.write(data)
        buffer.flush()
