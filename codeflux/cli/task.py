"""`codeflux task …`: tasks from the terminal (headless), through the product's method table.

``create`` opens the repository read-only; uncommitted changes are listed with their hash and need
``--acknowledge-dirty HASH`` (exactly that list) — without it the command exits 4. ``show`` prints the
state, every action (the unavailable ones with why), the plan and budget figures. ``approve-plan`` and
``send-back`` bind to the plan revision and its sha256; ``accept`` and ``reject`` to the reviewed diff
identity. ``patch`` prints a kept patch. ``recovery`` lists, per interrupted task, what is known, what is
ambiguous and what is recommended, then the interrupted accept landings a retry or startup recovery finished or
rolled back (most recent 20, from the accept journal; ``show`` lists the task's own); ``record-outcome``
records whether an ambiguous effect happened;
``recover`` takes a recovery action; ``cancel`` ends an open task. ``plan`` drafts a plan revision via the
gateway; ``start`` runs a ready task in this process under a headless policy (``--allow``); ``pause``
pauses it between turns; ``resume`` continues a paused task in this process, in the next attempt — the
loop's conversation is kept in SQLite (redacted), so the resumed run continues it with the plan steps
already done, from the worktree as it is (a task paused before its plan was approved drafts the plan
again instead); ``decide`` answers a pending tool request; ``evidence`` prints an attempt's evidence per atom (0 / no
``--attempt``: the newest) — for each atom of its diff, what each atom stage measured of it or why not — and
its stages with their outcomes; ``--json`` prints the same as one stable JSON document. ``graph`` prints the task's
execution graph (``--format json`` or ``dot``, Graphviz text), projected from its committed events: an explanation
of what happened, not evidence that it is right (docs/graph.md). ``diff`` prints the
unified diff and its identity, then the changed files that change what later commands execute ("changes what runs":
``conftest.py``, ``pytest.ini``, a Makefile, …, with why). SIGINT / SIGTERM during ``plan``, ``start`` or
``resume`` stop at the next boundary with nothing half-written (see :mod:`codeflux.cli.run`). Arguments,
paths and check argv are shown escaped (:func:`codeflux.domain.display.escape_for_display`).

``list`` prints one page of tasks, newest first (``--limit``, at most 500), and when older ones follow, a line
``more: codeflux task list --before ID …`` on stderr that prints the next page; ``--all`` prints every page;
``--search TEXT`` lists only the tasks whose id, title or requirement contains every word (the whole store).

``answer`` answers an open question of the newest plan revision: a new revision records the answer, and
that revision is the one approved.

``plan`` with ``--set-example N SPEC``, ``--add-example SPEC`` or ``--remove-example N`` edits the newest plan
revision's acceptance examples instead of drafting (:mod:`codeflux.cli.plan_examples`): a new revision, by the
person, records the edited list, and that revision is the one approved.

Every verb but ``start`` and ``resume`` is one or two calls of the method table (:mod:`codeflux.cli.channel`):
to a running coordinator over its socket, else in this process — where startup recovery runs first when no
other process is running tasks (interrupted work is marked, never resumed). Both print through the same
printers (:mod:`codeflux.cli.views`), so the output does not depend on the channel. ``start`` and ``resume``
go to a running coordinator too (it runs the task in the background); without one they run the task in this
process under the headless policy (:mod:`codeflux.cli.run`), which is not a call of the method table: the
run lives as long as this command. Exit codes come from the one table (0 done, 1 failed, 2 usage, 3 refused
by state, 4 a decision is needed, 5 stalled).

``reject --retry`` rejects the diff as the next attempt on the same plan starts, with the reason as that
attempt's feedback (the patch is kept; the task goes back to ``running``, never through ``cancelled``); like
``retry`` it goes to a running coordinator, else runs in this process as ``start`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from codeflux.api.v1 import product_pb2 as pb
from codeflux.authority.decide import UserDecision
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control, startup_recovery
from codeflux.cli.context import CliContext
from codeflux.cli.documents import task_list_document, task_show_document
from codeflux.cli.exit_codes import ExitCode
from codeflux.cli.output import print_json
from codeflux.cli.plan_examples import add_edit_arguments, edit_examples, edits_examples
from codeflux.cli.run import (
    ShutdownOnSignal,
    add_allow_argument,
    add_provider_arguments,
    run_ready_task,
)
from codeflux.cli.start import CliModelAccess
from codeflux.cli.views import (
    evidence_document,
    execution_graph_of,
    print_evidence,
    print_landing_resolutions,
    print_plan,
    print_recovery,
    print_task,
    worktree_disposal_text,
    write_bytes,
)
from codeflux.coordinator.runs.loop_steps import conversation_summary
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import Actor, TaskService
from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import (
    CheckoutNotCleanError,
    DirtyTreeNotAcknowledgedError,
    TaskActionUnavailableError,
    UsageError,
)
from codeflux.domain.execution_graph import graph_dot, graph_json
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import EffectOutcome, RecoveryAction
from codeflux.domain.review_flags import WhatRunsChange, what_runs_lines
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database
from codeflux.store.opening import open_store

NAME = "task"
SUMMARY = "create, inspect, approve, review and recover tasks (headless)"
RECORDS_APP_LOG = True

_JSON_HELP = "print one JSON document (its keys: docs/using.md, \"JSON output\")"

_ACTIONS = {
    "create": "create a task for a repository (uncommitted changes must be acknowledged by their hash)",
    "list": "every task with its state",
    "show": "a task's state, actions (with why unavailable), plan and budget",
    "approve-plan": "approve plan revision N with hash H; the task becomes ready",
    "send-back": "send plan revision N (hash H) back with feedback for a new revision",
    "answer": ("answer open question N of the newest plan revision: records the next revision with the answer, "
               "which you then approve"),
    "accept": "land the reviewed diff (identity H) on your branch and complete the task",
    "reject": ("keep the diff (identity H) as a patch and end the task; with --retry, start another attempt on the "
               "same plan with --reason as its feedback instead (as `retry`)"),
    "patch": "print the patch kept for a task",
    "recovery": "interrupted tasks: what is known, what is ambiguous, what is recommended",
    "record-outcome": "record whether an effect with an unknown outcome happened (it is never re-run)",
    "recover": "take a recovery action: safe-resume, reconcile, preserve-patch or abandon",
    "cancel": "cancel an open task (its worktree is removed unless that would lose work)",
    "plan": ("draft the next plan revision via the gateway (provider flags as for `codeflux run`); with "
             "--set-example, --add-example or --remove-example, edit the newest revision's acceptance examples "
             "instead (a new revision, by you, to approve)"),
    "start": "run a ready task in this process, headless: only --allow operations run without a person",
    "retry": ("another attempt on the same plan for a task awaiting review or failed, starting with --feedback "
              "(the running coordinator runs it; else this process, headless, as `start`)"),
    "pause": "pause a task (a running one stops between turns)",
    "resume": ("continue a paused task in this process: the next attempt continues the run's conversation (kept "
               "in SQLite, redacted) with the plan steps already done"),
    "decide": "answer a pending tool request: --allow-once, --allow-for-task, --allow-for-repository or --deny",
    "diff": "print the task worktree's unified diff and its identity",
    "evidence": ("print an attempt's evidence per atom (what each atom stage measured of it, or why not) and its "
                 "stages with their outcomes; --json prints a stable JSON document"),
    "graph": ("print the task's execution graph (JSON or Graphviz DOT), projected from its committed events: an "
              "explanation of what happened, not evidence that it is right"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in _ACTIONS.items():
        sub = actions.add_parser(action, help=text, description=text, allow_abbrev=False)
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
        if action not in ("create", "list", "recovery"):
            sub.add_argument("task", metavar="ID", help="the task id (tsk_…)")
        if action in ("list", "show"):
            sub.add_argument("--json", action="store_true", help=_JSON_HELP)
        _configure_action(action, sub)


def _configure_action(action: str, sub: argparse.ArgumentParser) -> None:
    if action == "create":
        sub.add_argument("--repo", required=True, metavar="PATH", help="the git repository (any path inside it)")
        sub.add_argument("--requirement", required=True, metavar="TEXT", help="what the task must achieve")
        sub.add_argument("--title", default=None, metavar="TEXT", help="a short title (default: first line)")
        sub.add_argument("--acknowledge-dirty", default=None, metavar="HASH",
                         help="the hash of the uncommitted changes you reviewed (printed when they exist)")
    elif action == "list":
        sub.add_argument("--limit", type=_parse_count, default=100, metavar="N",
                         help="at most N tasks per page (newest first; at most 500)")
        sub.add_argument("--before", default="", metavar="ID",
                         help="the next page: tasks created before task ID (the line `more: …` prints)")
        sub.add_argument("--search", default="", metavar="TEXT",
                         help="only tasks whose id, title or requirement contains every word of TEXT")
        sub.add_argument("--all", action="store_true", help="every page, not just the first")
    elif action in ("approve-plan", "send-back"):
        sub.add_argument("--revision", required=True, type=_parse_count, metavar="N", help="the plan revision")
        sub.add_argument("--sha256", required=True, metavar="H", help="the plan revision's sha256")
        if action == "send-back":
            sub.add_argument("--feedback", required=True, metavar="TEXT", help="what to change")
    elif action in ("accept", "reject"):
        sub.add_argument("--identity", required=True, metavar="H", help="the diff identity you reviewed")
        if action == "reject":
            sub.add_argument("--reason", required=True, metavar="TEXT", help="why the diff is rejected")
            sub.add_argument("--retry", action="store_true",
                             help=("reject this diff (its patch is kept) and start another attempt on the same plan "
                                   "with the reason as feedback (the running coordinator runs it; else this process, "
                                   "headless, as `start`)"))
            add_provider_arguments(sub)
            add_allow_argument(sub)
    elif action == "record-outcome":
        sub.add_argument("--item", required=True, metavar="ITEM", help="the effect id (exe_… or mreq_…)")
        outcome = sub.add_mutually_exclusive_group(required=True)
        outcome.add_argument("--happened", dest="outcome", action="store_const", const=EffectOutcome.HAPPENED)
        outcome.add_argument("--did-not-happen", dest="outcome", action="store_const",
                             const=EffectOutcome.DID_NOT_HAPPEN)
        sub.add_argument("--note", default=None, metavar="TEXT", help="what you checked")
    elif action == "recover":
        sub.add_argument("--action", dest="recovery", required=True, choices=[a.value for a in RecoveryAction])
    elif action == "answer":
        _configure_answer(sub)
    elif action == "graph":
        sub.add_argument("--format", choices=("json", "dot"), default="json",
                         help="json (one stable document) or dot (Graphviz text); default json")
    elif action == "evidence":
        sub.add_argument("--attempt", type=_parse_count, default=0, metavar="N",
                         help="the attempt (default: the newest)")
        sub.add_argument("--json", action="store_true", help="print one JSON document (described in docs/using.md)")
    else:
        _configure_run_action(action, sub)


def _configure_answer(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--question", required=True, type=_parse_count, metavar="N", help="the question's number")
    sub.add_argument("--text", required=True, metavar="TEXT", help="your answer")
    sub.add_argument("--revision", type=_parse_count, default=None, metavar="N",
                     help="the plan revision you read (default: the newest)")
    sub.add_argument("--sha256", default=None, metavar="H", help="that revision's sha256 (default: the newest's)")


def _configure_run_action(action: str, sub: argparse.ArgumentParser) -> None:
    if action == "retry":
        sub.add_argument("--feedback", required=True, metavar="TEXT", help="what the next attempt should change")
    if action in ("plan", "start", "resume", "retry"):
        add_provider_arguments(sub)
        if action != "plan":
            add_allow_argument(sub)
        else:
            add_edit_arguments(sub, parse_count=_parse_count)
    elif action == "decide":
        sub.add_argument("--request", required=True, metavar="REQ", help="the pending tool request (treq_…)")
        choice = sub.add_mutually_exclusive_group(required=True)
        for flag, value in (("--allow-once", UserDecision.ALLOW_ONCE),
                            ("--allow-for-task", UserDecision.ALLOW_FOR_TASK),
                            ("--allow-for-repository", UserDecision.ALLOW_FOR_REPOSITORY),
                            ("--deny", UserDecision.DENY)):
            choice.add_argument(flag, dest="decision", action="store_const", const=value)
        sub.add_argument("--reason", default="decided on the command line", metavar="TEXT", help="why")


def _parse_count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise UsageError("expected a whole number")
    return int(text)


# A command without provider flags: the choice stored in Settings, else the config file's, else scripted.
_NO_PROVIDER_FLAGS: Final = argparse.Namespace(provider=None, script=None, cheap_model=None, capable_model=None,
                                               base_url=None, no_key=False)


def channel_needs(args: argparse.Namespace) -> ChannelNeeds:
    """What :func:`codeflux.cli.channel.open_channel` must give this verb (``codeflux.cli.main`` asks)."""
    if args.action in ("start", "retry") or (args.action == "reject" and args.retry):
        return ChannelNeeds(use=ChannelUse.COORDINATOR_ONLY)
    if args.action in ("plan", "resume") and not edits_examples(args):  # both may draft a plan: in process, with
        # this command's provider (editing the examples calls no model); a --provider flag given here wins over the
        # task's pin for this command, else the task's pin (a task created before pins: flags, config, scripted)
        return ChannelNeeds(use=ChannelUse.EXISTING, models=lambda db: CliModelAccess(db, args, command_flag_wins=True))
    if args.action == "create":  # in process, the new task pins what `codeflux start` without a flag would use
        return ChannelNeeds(use=ChannelUse.CREATE, models=lambda db: CliModelAccess(db, _NO_PROVIDER_FLAGS))
    return ChannelNeeds(use=ChannelUse.EXISTING)


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel | None) -> int:
    if channel is None and args.action == "reject":  # `reject --retry` with no coordinator
        return _reject_here(args, ctx, TaskId.parse(args.task))
    if channel is None:  # `start` or `retry` with no coordinator: this process runs the task
        return _start_here(args, ctx, TaskId.parse(args.task), retry_feedback=getattr(args, "feedback", None)
                           if args.action == "retry" else None)
    if args.action == "create":
        return _create(args, ctx, channel)
    if args.action == "list":
        return _list(args, ctx, channel)
    if args.action == "recovery":
        reply = channel.call("RecoveryService/ListRecovery", pb.ListRecoveryRequest(), pb.ListRecoveryReply)
        if not reply.tasks:
            ctx.say("no task needs recovery")
        for view in reply.tasks:
            print_recovery(ctx, view)
        print_landing_resolutions(ctx, reply.landings, reply.landings_more)
        return 0
    return _TASK_HANDLERS[args.action](args, ctx, channel, TaskId.parse(args.task).value)


def _list(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    """Pages of tasks, newest first: the first (or the one ``--before`` names), or with ``--all`` every one. Only
    task lines go to stdout (one per task); how to get the next page, or that nothing is listed, goes to stderr.
    With ``--json``, one document holds the tasks and the next page's ``next_before``; stderr stays quiet."""
    before = TaskId.parse(args.before).value if args.before else ""
    listed = 0
    collected: list[pb.TaskSummary] = []
    while True:
        reply = channel.call("TaskService/ListTasks", pb.ListTasksRequest(
            limit=args.limit, before=before, query=args.search), pb.ListTasksReply)
        for task in reply.tasks:
            if args.json:
                collected.append(task)
            else:
                ctx.say(f"{task.task_id}  {task.state:<22} {escape_for_display(task.title)}")
        listed += len(reply.tasks)
        if args.json and (not reply.has_more or not args.all):
            print_json(ctx, task_list_document(collected, has_more=reply.has_more, next_before=reply.next_before))
            return 0
        if not reply.has_more:
            break
        if not args.all:
            ctx.warn(f"more: codeflux task list --before {reply.next_before}"
                    + (f" --limit {args.limit}" if args.limit != 100 else "")
                    + (f" --search {shlex.quote(escape_for_display(args.search))}" if args.search else ""))
            return 0
        before = reply.next_before
    if not listed:
        ctx.warn("no task matches" if args.search else ("no older task" if args.before else "no tasks yet"))
    return 0


Handler = Callable[[argparse.Namespace, CliContext, Channel, str], int]


def _task(channel: Channel, task_id: str) -> pb.TaskView:
    return channel.call("TaskService/GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView)


def _show_task(ctx: CliContext, channel: Channel, view: pb.TaskView, *, as_json: bool = False) -> None:
    """The task, its recovery assessment when it needs one, and the interrupted landings of it that a retry or
    startup recovery resolved (``as_json``: one document, docs/using.md "JSON output")."""
    reply = channel.call("RecoveryService/ListRecovery", pb.ListRecoveryRequest(task_id=view.task_id),
                         pb.ListRecoveryReply)
    if as_json:
        print_json(ctx, task_show_document(view, reply.tasks[0] if reply.tasks else None))
        return
    print_task(ctx, view, reply.tasks[0] if reply.tasks else None)
    print_landing_resolutions(ctx, reply.landings, reply.landings_more, indent="  ")


def _show(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    view = _task(channel, task_id)
    _show_task(ctx, channel, view, as_json=args.json)
    if view.state == TaskState.AWAITING_REVIEW.value and view.worktree_exists:
        diff = channel.call("ReviewService/GetDiff", pb.GetDiffRequest(task_id=task_id), pb.DiffBytes)
        _warn_if_evidence_differs(ctx, task_id, diff)
    return 0


def _warn_if_evidence_differs(ctx: CliContext, task_id: str, diff: pb.DiffBytes) -> None:
    """Say so when the diff under review is not the one the checks gathered their evidence on."""
    checked = diff.evidence_diff_identity
    if checked and checked != diff.diff_identity:
        ctx.warn(f"the evidence was gathered on diff {checked[:12]}, but the worktree's diff is now "
                 f"{diff.diff_identity[:12]}: the worktree changed after the checks ran, so the evidence is not "
                 f"about this diff and accept refuses it (undo the change, `codeflux task retry {task_id} "
                 "--feedback …` to check it again, or reject it)")


def _create(args: argparse.Namespace, ctx: CliContext, channel: Channel) -> int:
    path = str(Path(args.repo).absolute())
    repository = channel.call("WorkspaceService/InspectRepository", pb.InspectRepositoryRequest(path=path),
                              pb.RepositoryView)
    if repository.operations_in_progress:  # refused before any acknowledgement is asked for
        raise CheckoutNotCleanError(paths=(), operations=tuple(repository.operations_in_progress))
    if repository.dirty and args.acknowledge_dirty != repository.dirty_hash:
        ctx.say(f"{repository.root} has uncommitted changes:")
        for entry in repository.changes:
            ctx.say(f"  {entry.status:<12} {entry.path}  {entry.content_sha256 or '-'}")
        ctx.say(f"dirty hash {repository.dirty_hash}")
        ctx.say(f"if the task may start from exactly these, add --acknowledge-dirty {repository.dirty_hash}")
        raise DirtyTreeNotAcknowledgedError(path=repository.root, change_count=len(repository.changes),
                                            current_hash=repository.dirty_hash,
                                            acknowledged_hash=args.acknowledge_dirty)
    request = pb.CreateTaskRequest(control=control(), repository_path=path, requirement=args.requirement,
                                   title=args.title or "", acknowledged_dirty_hash=args.acknowledge_dirty or "")
    view = channel.call("TaskService/CreateTask", request, pb.TaskView)
    ctx.say(f"task {view.task_id} created ({view.state}, revision {view.revision})")
    return 0


def _approve(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.ApprovePlanRequest(control=control(), task_id=task_id, revision=args.revision, sha256=args.sha256)
    view = channel.call("TaskService/ApprovePlan", request, pb.TaskView)
    ctx.say(f"task {task_id}: plan revision {args.revision} approved; {view.state}")
    return 0


def _send_back(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.SendBackPlanRequest(control=control(), task_id=task_id, revision=args.revision, sha256=args.sha256,
                                     feedback=args.feedback)
    view = channel.call("TaskService/SendBackPlan", request, pb.TaskView)
    ctx.say(f"task {task_id}: plan revision {args.revision} sent back; {view.state}")
    return 0


def _answer(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    plan = _task(channel, task_id).plan
    revision = args.revision if args.revision is not None else plan.revision
    sha256 = args.sha256 if args.sha256 is not None else plan.sha256
    request = pb.AnswerQuestionRequest(control=control(), task_id=task_id, revision=revision, sha256=sha256,
                                       question=args.question, text=args.text)
    view = channel.call("TaskService/AnswerQuestion", request, pb.TaskView)
    ctx.say(f"task {task_id}: question {args.question} of plan revision {revision} answered; plan revision "
            f"{view.plan.revision} records it")
    print_plan(ctx, view.plan, indent="")
    still = [question.number for question in view.plan.questions if question.status == "open"]
    if still:
        ctx.say(f"still open: question(s) {', '.join(map(str, still))} (`codeflux task answer {task_id} --question N "
                "--text TEXT`)")
    else:
        ctx.say(f"approve it: codeflux task approve-plan {task_id} --revision {view.plan.revision} "
                f"--sha256 {view.plan.sha256}")
    return 0


def _worktree_line(ctx: CliContext, view: pb.TaskView) -> None:
    """What happened to the worktree of a task that just ended (removed, or kept and why)."""
    if view.HasField("worktree_disposal"):
        ctx.say(f"  worktree {worktree_disposal_text(view.worktree_disposal)}")


def _accept(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.AcceptChangeRequest(control=control(), task_id=task_id, diff_identity=args.identity)
    reply = channel.call("ReviewService/AcceptChange", request, pb.AcceptChangeReply)
    if reply.kind == "conflict":
        ctx.warn(f"codeflux task: the diff conflicts with {reply.branch} in: {', '.join(reply.conflicting_paths)}")
        ctx.warn(f"nothing changed; the task still awaits review: `codeflux task retry {task_id} --feedback …` for "
                 "another attempt, or reject it with --reason to keep the patch")
        return int(ExitCode.FAILED)
    ctx.say(f"task {task_id}: accepted ({reply.kind}) on {reply.branch} "
            f"{reply.previous_head[:12]} → {reply.landed_head[:12]}; {reply.task.state}")
    _worktree_line(ctx, reply.task)
    return 0


def _reject(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.RejectChangeRequest(control=control(), task_id=task_id, diff_identity=args.identity,
                                     reason=args.reason, retry=args.retry)
    view = channel.call("ReviewService/RejectChange", request, pb.TaskView)
    if args.retry:  # only a coordinator gets here (see run)
        ctx.say(f"task {task_id}: diff {args.identity[:12]} rejected (its patch is kept); another attempt on the same "
                "plan starts with your reason")
        print_task(ctx, view)
        ctx.say("the coordinator runs the new attempt in the background; follow it in the browser or with "
                "`codeflux task show`")
        return 0
    patch = channel.call("ReviewService/GetPatch", pb.GetPatchRequest(task_id=task_id), pb.PatchView)
    ctx.say(f"task {task_id}: rejected; {view.state}; patch {patch.diff_identity} kept ({patch.whole_bytes} bytes; "
            f"`codeflux task patch {task_id}`)")
    _worktree_line(ctx, view)
    return 0


def _patch(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    patch = channel.call("ReviewService/GetPatch", pb.GetPatchRequest(task_id=task_id), pb.PatchView)
    write_bytes(ctx, patch.patch)
    if patch.truncated:
        ctx.warn(f"(the patch was cut at a line end: {len(patch.patch)} of {patch.whole_bytes} bytes shown)")
    return 0


def _diff(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    diff = channel.call("ReviewService/GetDiff", pb.GetDiffRequest(task_id=task_id), pb.DiffBytes)
    write_bytes(ctx, diff.unified_diff)
    if diff.truncated:
        ctx.warn(f"(the diff was cut at a line end: {len(diff.unified_diff)} of {diff.whole_bytes} bytes shown; "
                 f"`git diff {diff.base}` in the task's worktree shows all of it)")
    ctx.say(f"diff identity {diff.diff_identity} (base {diff.base[:12]}, head {diff.head[:12]}, "
            f"{diff.file_count} file(s))")
    _warn_if_evidence_differs(ctx, task_id, diff)
    budget = _task(channel, task_id).budget
    if budget.set:  # what the work under review cost so far (as `codeflux run` prints it)
        ctx.say(budget.spend_line)
    flags = [WhatRunsChange(path=flag.path, reason=flag.reason) for flag in diff.changes_what_runs]
    for line in what_runs_lines(flags):
        ctx.say(line)
    return 0


def _evidence(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    view = channel.call("ReviewService/GetEvidence", pb.GetEvidenceRequest(task_id=task_id, attempt=args.attempt),
                        pb.EvidenceView)
    if args.json:
        ctx.say(json.dumps(evidence_document(view), indent=2, sort_keys=True, ensure_ascii=True))
    else:
        print_evidence(ctx, view)
    return 0


def _graph(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    view = channel.call("TaskService/GetTaskGraph", pb.GetTaskGraphRequest(task_id=task_id), pb.TaskGraph)
    graph = execution_graph_of(view)
    ctx.stdout.write(graph_dot(graph) if args.format == "dot" else graph_json(graph))
    ctx.stdout.flush()
    return 0


def _record_outcome(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.RecordOutcomeRequest(control=control(), task_id=task_id, item_id=args.item,
                                      outcome=str(args.outcome), note=args.note or "")
    view = channel.call("RecoveryService/RecordOutcome", request, pb.RecoveryView)
    ctx.say(f"task {task_id}: {args.item} recorded as {args.outcome}")
    print_recovery(ctx, view)
    return 0


def _recover(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.RecoveryActionRequest(control=control(), task_id=task_id, action=args.recovery)
    channel.call("RecoveryService/TakeAction", request, pb.RecoveryView)
    view = _task(channel, task_id)
    match RecoveryAction(args.recovery):
        case RecoveryAction.SAFE_RESUME | RecoveryAction.RECONCILE:
            ctx.say(f"task {task_id}: {args.recovery} done; {view.state}; resume it to go on")
        case RecoveryAction.PRESERVE_PATCH:
            patch = channel.call("ReviewService/GetPatch", pb.GetPatchRequest(task_id=task_id), pb.PatchView)
            ctx.say(f"task {task_id}: patch {patch.diff_identity} preserved ({patch.whole_bytes} bytes); {view.state}")
        case RecoveryAction.ABANDON:
            ctx.say(f"task {task_id}: abandoned; {view.state}")
            _worktree_line(ctx, view)
    return 0


def _action(method: str, verb: str) -> Handler:
    def handler(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
        request = pb.TaskActionRequest(control=control(), task_id=task_id, reason=f"{verb} by the user")
        view = channel.call(f"TaskService/{method}", request, pb.TaskView)
        if view.HasField("cancel_outcome"):  # what the cancel did to a running command and to the worktree
            ctx.say(view.cancel_outcome.summary)
            _worktree_line(ctx, view)
            return 0
        ctx.say(f"task {task_id}: {view.state}" + (" (a run in progress stops before its next turn)"
                                                    if verb == "paused" else ""))
        if verb == "cancelled":
            _worktree_line(ctx, view)
        return 0

    return handler


def _decide(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.DecideRequest(control=control(), task_id=task_id, request_id=args.request,
                               decision=str(args.decision), reason=args.reason)
    reply = channel.call("ApprovalService/Decide", request, pb.DecideReply)
    ctx.say(f"task {task_id}: request {reply.request_id} {reply.outcome}; {reply.task.state}")
    return 0


def _plan(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    if edits_examples(args):
        return _drafted(ctx, edit_examples(args, ctx, channel, task_id), None)
    with ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        ctx.stop_requested = shutdown.stop_requested
        try:
            request = pb.DraftPlanRequest(control=control(), task_id=task_id)
            view = channel.call("TaskService/DraftPlan", request, pb.TaskView)
        finally:
            ctx.stop_requested = lambda: None
    return _drafted(ctx, view, shutdown.requested)


def _drafted(ctx: CliContext, view: pb.TaskView, stopped_by: str | None) -> int:
    print_plan(ctx, view.plan, indent="")
    if any(question.status == "open" for question in view.plan.questions):
        ctx.say(f"answer its open questions first: codeflux task answer {view.task_id} --question N --text TEXT")
    else:
        ctx.say(f"approve it: codeflux task approve-plan {view.task_id} --revision {view.plan.revision} "
                f"--sha256 {view.plan.sha256}")
    if stopped_by is not None:
        ctx.say(f"{stopped_by}: stopped after recording plan revision {view.plan.revision}")
        ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
        return int(ExitCode.DECISION_NEEDED)
    return 0


def _start(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    view = _task(channel, task_id)  # only a coordinator gets here (see run)
    request = pb.StartTaskRequest(control=control(), task_id=task_id, plan_revision=view.plan.revision)
    print_task(ctx, channel.call("TaskService/StartTask", request, pb.TaskView))
    ctx.say("the coordinator runs it in the background; follow it in the browser or with `codeflux task show`")
    return 0


def _retry(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    request = pb.RetryTaskRequest(control=control(), task_id=task_id, feedback=args.feedback)
    print_task(ctx, channel.call("TaskService/RetryTask", request, pb.TaskView))  # only a coordinator gets here
    ctx.say("the coordinator runs the new attempt in the background; follow it in the browser or with "
            "`codeflux task show`")
    return 0


def _resume(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> int:
    view = _task(channel, task_id)
    if view.state != TaskState.PAUSED.value:
        raise TaskActionUnavailableError(task_id=task_id, action="resume", state=view.state,
                                         reason="only a paused task resumes")
    request = pb.TaskActionRequest(control=control(), task_id=task_id, reason="resumed by the user")
    if channel.via is not None or not (view.HasField("plan") and view.plan.decision == "approved"):
        # a coordinator runs it in the background; paused while planning, the plan is drafted again
        resumed = channel.call("TaskService/ResumeTask", request, pb.TaskView)
        if resumed.state == TaskState.AWAITING_PLAN_APPROVAL.value:
            return _drafted(ctx, resumed, None)
        print_task(ctx, resumed)
        return 0
    return _resume_here(args, ctx, TaskId.parse(task_id))


_TASK_HANDLERS: dict[str, Handler] = {
    "show": _show, "approve-plan": _approve, "send-back": _send_back, "accept": _accept, "reject": _reject,
    "patch": _patch, "record-outcome": _record_outcome, "recover": _recover, "plan": _plan, "start": _start,
    "pause": _action("PauseTask", "paused"), "cancel": _action("CancelTask", "cancelled"), "resume": _resume,
    "decide": _decide, "diff": _diff, "retry": _retry, "answer": _answer, "evidence": _evidence,
    "graph": _graph,
}


# ─── start and resume in this process (no coordinator runs) ─────────────────────────────────────────


def _start_here(args: argparse.Namespace, ctx: CliContext, task_id: TaskId, *,
                retry_feedback: str | None = None) -> int:
    with _local_tasks(ctx, recover=True) as (db, service), ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        return run_ready_task(ctx, db, ctx.location(), service, task_id, args=args, shutdown=shutdown,
                              retry_feedback=retry_feedback)


def _reject_here(args: argparse.Namespace, ctx: CliContext, task_id: TaskId) -> int:
    """``reject --retry`` with no coordinator: the diff is rejected as the next attempt starts (one transaction),
    and that attempt runs in this process under the headless policy, as ``retry`` does."""
    with _local_tasks(ctx, recover=True) as (db, service), ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        rejection = ReviewService(db).rejection(task_id, reviewed_identity=args.identity, reason=args.reason)
        ctx.say(f"task {task_id}: rejecting diff {args.identity[:12]} (its patch is kept); another attempt on the "
                "same plan starts in this process with your reason")
        return run_ready_task(ctx, db, ctx.location(), service, task_id, args=args, shutdown=shutdown,
                              rejection=rejection)


def _resume_here(args: argparse.Namespace, ctx: CliContext, task_id: TaskId) -> int:
    # the in-process channel that read the task already ran startup recovery
    with _local_tasks(ctx, recover=False) as (db, service), ShutdownOnSignal(ctx, ctx.location()) as shutdown:
        view = service.show(task_id)
        service.transition(task_id, TaskState.READY, expected_revision=view.task.revision,
                           reason="resumed by the user", actor=Actor.USER, idempotency_key=control().idempotency_key)
        kept = conversation_summary(service.changes, task_id)
        if kept is not None and kept.is_open and view.plan is not None and kept.plan_revision == view.plan.revision:
            ctx.say(f"task {task_id}: resuming in this process; the run's conversation continues ({kept.messages} "
                    f"message(s) kept, {len(kept.steps_done)} of {len(view.plan.plan.steps)} plan step(s) done)")
        else:
            ctx.say(f"task {task_id}: resuming in this process; no conversation is kept for plan revision "
                    f"{view.plan.revision if view.plan else '?'}, so the run starts one from the worktree's current "
                    "state")
        return run_ready_task(ctx, db, ctx.location(), service, task_id, args=args, shutdown=shutdown)


@contextlib.contextmanager
def _local_tasks(ctx: CliContext, *, recover: bool) -> Iterator[tuple[Database, TaskService]]:
    location = ctx.location()
    db = open_store(location, create=False, migrate=False)
    try:
        if recover:
            startup_recovery(ctx, db, location)
        yield db, TaskService(db, worktrees_root=location.worktrees)
    finally:
        db.close()
