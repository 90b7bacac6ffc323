"""`codeflux task …` while a coordinator runs: the command goes to it over its Unix socket.

A running ``codeflux start`` owns the tasks it runs (their conversations, workers and approvals live in
that process), so the CLI must not act on the database behind its back. When the data directory's instance
lock is held, :func:`run_remote` sends the command as the same RPC the browser would use — over the
coordinator's gRPC socket (0600 in a 0700 directory) — and prints the reply. Actions with no RPC counterpart
are refused with a message naming the coordinator, never run locally.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol, TypeVar

from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2, product_pb2
from codeflux.cli.context import CliContext
from codeflux.coordinator.instance import coordinator_socket_path, running_coordinator
from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import CoordinatorRunningError
from codeflux.domain.review_flags import WhatRunsChange, what_runs_lines
from codeflux.server.client import call_unary, unix_channel
from codeflux.store.location import DataLocation

__all__ = ["REMOTE_ACTIONS", "run_remote"]


def _control() -> common_pb2.MutationControl:
    return common_pb2.MutationControl(idempotency_key=f"cli-{os.urandom(16).hex()}")


M = TypeVar("M", bound=Message)


class Call(Protocol):
    def __call__(self, method: str, request: Message, reply_type: type[M]) -> M: ...


def _list(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
    reply = call("TaskService/ListTasks", product_pb2.ListTasksRequest(limit=args.limit), product_pb2.ListTasksReply)
    for task in reply.tasks:
        ctx.say(f"{task.task_id}  {task.state:<22} {task.title}")


def _print_task(ctx: CliContext, view: product_pb2.TaskView) -> None:
    ctx.say(f"task {view.task_id}  {view.title}")
    ctx.say(f"  state        {view.state} (revision {view.revision})")
    ctx.say(f"  repository   {view.repository_root}")
    if view.HasField("plan"):
        ctx.say(f"  plan         revision {view.plan.revision} sha256 {view.plan.sha256} ({view.plan.decision})")
    for pending in view.pending_approvals:
        arguments = " ".join(f"{a.name}={escape_for_display(a.value)}" for a in pending.arguments)
        shown = arguments if len(arguments) <= 200 else arguments[:200] + " … (cut)"
        ctx.say(f"  waiting      {pending.request_id} {pending.tool} {shown} [{', '.join(pending.capabilities)}]")
        if pending.meaning:
            ctx.say(f"    approving means: {pending.meaning}")
        if pending.allow_for_task_refusal:
            ctx.say(f"    allow-for-task is not offered: {pending.allow_for_task_refusal}")
    ctx.say("  actions")
    for action in view.actions:
        ctx.say(f"    {action.action:<15} " + ("available" if action.available else f"no: {action.reason}"))


def _task_call(method: str, build: Callable[[argparse.Namespace], Message]) -> Callable[..., None]:
    def handler(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
        reply = call(method, build(args), product_pb2.TaskView)
        _print_task(ctx, reply)

    return handler


def _decide(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
    request = product_pb2.DecideRequest(
        control=_control(), task_id=args.task, request_id=args.request, decision=str(args.decision), reason=args.reason
    )
    reply = call("ApprovalService/Decide", request, product_pb2.DecideReply)
    ctx.say(f"task {args.task}: request {reply.request_id} {reply.outcome}")


def _accept(args: argparse.Namespace, ctx: CliContext, call: Call) -> int:
    request = product_pb2.AcceptChangeRequest(control=_control(), task_id=args.task, diff_identity=args.identity)
    reply = call("ReviewService/AcceptChange", request, product_pb2.AcceptChangeReply)
    if reply.kind == "conflict":
        ctx.warn(f"codeflux task: the diff conflicts with {reply.branch} in: {', '.join(reply.conflicting_paths)}")
        ctx.warn("nothing changed; the task still awaits review (repair it, or reject it to keep the patch)")
        return 1
    ctx.say(
        f"task {args.task}: accepted ({reply.kind}) on {reply.branch} "
        f"{reply.previous_head[:12]} → {reply.landed_head[:12]}; {reply.task.state}"
    )
    return 0


def _create(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
    request = product_pb2.CreateTaskRequest(
        control=_control(),
        repository_path=str(Path(args.repo).absolute()),
        requirement=args.requirement,
        title=args.title or "",
        acknowledged_dirty_hash=args.acknowledge_dirty or "",
    )
    _print_task(ctx, call("TaskService/CreateTask", request, product_pb2.TaskView))


def _start(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
    view = call("TaskService/GetTask", product_pb2.GetTaskRequest(task_id=args.task), product_pb2.TaskView)
    request = product_pb2.StartTaskRequest(control=_control(), task_id=args.task, plan_revision=view.plan.revision)
    _print_task(ctx, call("TaskService/StartTask", request, product_pb2.TaskView))
    ctx.say("the coordinator runs it in the background; follow it in the browser or with `codeflux task show`")


def _diff(args: argparse.Namespace, ctx: CliContext, call: Call) -> None:
    review = call("ReviewService/GetReview", product_pb2.GetReviewRequest(task_id=args.task), product_pb2.ReviewView)
    ctx.stdout.write(review.unified_diff)
    if review.diff_truncated:
        ctx.warn("(the diff was cut at 1 MiB; stop the coordinator and use `codeflux task diff` for all of it)")
    ctx.say(
        f"diff identity {review.diff_identity} (base {review.base[:12]}, head {review.head[:12]}, "
        f"{len(review.files)} file(s))"
    )
    flags = [WhatRunsChange(path=flag.path, reason=flag.reason) for flag in review.changes_what_runs]
    for line in what_runs_lines(flags):
        ctx.say(line)


def _action(method: str) -> Callable[..., None]:
    return _task_call(
        method,
        lambda a: product_pb2.TaskActionRequest(
            control=_control(), task_id=a.task, reason=f"{method} from the command line"
        ),
    )


REMOTE_ACTIONS: Final[dict[str, Callable[..., int | None]]] = {
    "create": _create,
    "start": _start,
    "diff": _diff,
    "list": _list,
    "show": _task_call("TaskService/GetTask", lambda a: product_pb2.GetTaskRequest(task_id=a.task)),
    "approve-plan": _task_call(
        "TaskService/ApprovePlan",
        lambda a: product_pb2.ApprovePlanRequest(
            control=_control(), task_id=a.task, revision=a.revision, sha256=a.sha256
        ),
    ),
    "send-back": _task_call(
        "TaskService/SendBackPlan",
        lambda a: product_pb2.SendBackPlanRequest(
            control=_control(), task_id=a.task, revision=a.revision, sha256=a.sha256, feedback=a.feedback
        ),
    ),
    "plan": _task_call(
        "TaskService/DraftPlan", lambda a: product_pb2.DraftPlanRequest(control=_control(), task_id=a.task)
    ),
    "pause": _action("TaskService/PauseTask"),
    "resume": _action("TaskService/ResumeTask"),
    "cancel": _action("TaskService/CancelTask"),
    "decide": _decide,
    "accept": _accept,
    "reject": _task_call(
        "ReviewService/RejectChange",
        lambda a: product_pb2.RejectChangeRequest(
            control=_control(), task_id=a.task, diff_identity=a.identity, reason=a.reason
        ),
    ),
}


def run_remote(args: argparse.Namespace, ctx: CliContext, location: DataLocation) -> int | None:
    """Run ``codeflux task ACTION`` against the running coordinator; None when no coordinator runs."""
    holder = running_coordinator(location)
    if holder is None:
        return None
    handler = REMOTE_ACTIONS.get(args.action)
    if handler is None:
        raise CoordinatorRunningError(
            holder=f"{holder}; `task {args.action}` runs only without it — use the "
            "browser UI, or stop the coordinator first"
        )
    ctx.warn(f"codeflux task {args.action}: via the running coordinator ({holder})")
    with unix_channel(coordinator_socket_path(location)) as channel:

        def call(method: str, request: Message, reply_type: type[M]) -> M:
            return call_unary(channel, f"/codeflux.v1.{method}", request, reply_type)

        code = handler(args, ctx, call)
    return int(code or 0)
