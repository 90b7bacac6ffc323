"""``TaskService``: create a task, draft and decide its plan, start / pause / resume / cancel its run, set
its budget, read it and its timeline.

Every mutating request carries a valid ``MutationControl`` (:mod:`codeflux.services.mutations`): the key
goes to the coordinator's own idempotency keys (scoped to the connection), a retry with the same key
returns the first reply, and a non-zero ``expected_revision`` must be the task's revision.

* ``CreateTask`` opens the repository read-only; uncommitted changes need ``acknowledged_dirty_hash`` equal
  to the hash of exactly the list the person saw (``WorkspaceService.InspectRepository`` shows it), else
  :class:`DirtyTreeNotAcknowledgedError` naming only the repository's folder name, the count and hashes.
* ``DraftPlan`` drafts the next revision through ``app.models.gateway(("plan",))`` in the calling thread
  (the transports run unary handlers in worker threads). A task without a budget is refused up front
  (:class:`BudgetDecisionNeededError`) rather than letting the gateway pause it.
* ``SendBackPlan`` only records the feedback (the task returns to ``forecasting``); the UI then calls
  ``DraftPlan``, so the person sees the sent-back plan and a failed redraft is retried on its own.
* ``AnswerQuestion`` answers one open question of the newest plan revision (the revision and hash the
  person read): the next revision is that plan with the answer, and it needs its own approval.
* ``EditPlanExamples`` replaces the acceptance examples of the newest plan revision (the revision and hash
  the person edited) with the person's list: the next revision, by the person, needs its own approval (the
  rules: :mod:`codeflux.domain.plan_examples`). Like ``SendBackPlan`` it decides nothing, so it needs no card
  confirmation; the approval of the edited revision does.
* ``StartTask`` starts exactly what was reviewed: ``plan_revision`` must be the newest, approved
  revision (:class:`PlanChangedError` otherwise); the run then goes on in the background
  (:class:`~codeflux.coordinator.runs.scheduler.BackgroundRuns`).
* ``SetBudget``: ``set`` creates or changes the hard limit (an exact decimal, parsed by
  :meth:`Money.parse_decimal`; compare-and-set on the budget's revision); ``stop`` cancels a task paused
  by its budget (:meth:`BudgetService.stop_task`) and disposes of its worktree like ``CancelTask``;
  ``finish`` is refused with the reason: the budget service offers no "finish" — a paid call that would
  not fit is refused *before* it starts, so when the task pauses on its budget nothing reserved is left
  to finish (raise the limit, or stop).
* ``CancelTask`` cancels the task and says what it did (``TaskView.cancel_outcome``): a command of the task
  that was running is stopped by the run that runs it (the cancel waits briefly for its recorded result),
  and the worktree is removed, kept (why), or left to that run, which removes it when the command has
  stopped (:mod:`codeflux.coordinator.tasks.cancelled_runs`).
* ``ListTasks`` pages through the tasks newest first (keyset on creation time and id, so a task created between
  two pages shifts nothing), optionally only those whose id, title or requirement holds every word of
  ``query`` — the whole store is searched, not a loaded page.
* ``GetTimeline`` pages through the committed events of the task's session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.journal import read_session_events
from codeflux.coordinator.runs.planner import propose_plan
from codeflux.coordinator.runs.scheduler import BackgroundRuns, open_checkout
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.model_access import gateway_for_task, pin_new_task
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.acceptance import MAX_EXAMPLES, AcceptanceExample
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    DirtyTreeNotAcknowledgedError,
    InvalidValueError,
    PlanChangedError,
    TaskActionUnavailableError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.money import USD, Currency, Money
from codeflux.domain.plan_examples import ExampleEdit
from codeflux.domain.tasks import TaskAction, TaskState, describe_task_action
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import Mutation, MutationLedger, check_expected_revision, mutation_of, parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.session import session_event
from codeflux.services.views import session_head, task_service, task_summary, task_view

__all__ = ["draft_plan", "methods", "runs_of"]

_SERVICE: Final = "TaskService"
_DEFAULT_LIST: Final = 100
_MAX_LIST: Final = 500
_MAX_SEARCH: Final = 500
_MAX_SEARCH_WORDS: Final = 12
_DEFAULT_PAGE: Final = 200
_MAX_PAGE: Final = 1000
_MAX_TEXT: Final = 64 * 1024


def runs_of(app: CoordinatorApp) -> BackgroundRuns:
    """The coordinator's background runs."""
    return app.runs


def _text(value: str, *, kind: str, required: bool) -> str:
    if required and not value.strip():
        raise InvalidValueError(kind=kind, reason="must not be empty")
    if len(value) > _MAX_TEXT or "\x00" in value:
        raise InvalidValueError(kind=kind, reason="at most 64 KiB of text without NUL characters")
    return value


def _checked(app: CoordinatorApp, ctx: CallContext, method: str, request: Message) -> tuple[Mutation, TaskId]:
    mutation = mutation_of(ctx, method, getattr(request, "control"))  # noqa: B009 (every mutating request has one)
    task_id = parse_task_id(getattr(request, "task_id"))  # noqa: B009
    check_expected_revision(task_id, mutation, task_service(app).show(task_id).task.revision)
    return mutation, task_id


# ─── create and plan ─────────────────────────────────────────────────────────────────────────────


def _create(app: CoordinatorApp, ctx: CallContext, request: pb.CreateTaskRequest) -> pb.TaskView:
    mutation = mutation_of(ctx, "CreateTask", request.control)
    requirement = _text(request.requirement, kind="requirement", required=True)
    title = _text(request.title, kind="title", required=False) or None
    path = Path(_text(request.repository_path, kind="repository path", required=True))
    if not path.is_absolute():
        raise InvalidValueError(kind="repository path", reason="give the repository's absolute path")
    snapshot = open_checkout(path)
    acknowledged = request.acknowledged_dirty_hash or None
    if snapshot.is_dirty and acknowledged != snapshot.dirty_hash:
        raise DirtyTreeNotAcknowledgedError(path=snapshot.root.name, change_count=len(snapshot.changes),
                                            current_hash=snapshot.dirty_hash, acknowledged_hash=acknowledged)
    change = task_service(app).create_task(snapshot, requirement, title=title, acknowledged_dirty_hash=acknowledged,
                                           acknowledged_by=Actor.USER, idempotency_key=mutation.key,
                                           also=pin_new_task(app.models))  # the task pins the provider in force
    return task_view(app, change.task_id)


def _require_budget(app: CoordinatorApp, task_id: TaskId) -> None:
    if BudgetService(app.db).revision_of(task_id) is None:
        raise BudgetDecisionNeededError(task_id=task_id.value,
                                        reason="no budget is set; set a hard limit before the plan is drafted")


def draft_plan(app: CoordinatorApp, task_id: TaskId, *, key: str, stop_discards_reply: bool = False) -> None:
    """Draft the task's next plan revision through the coordinator's gateway, in this thread.
    ``stop_discards_reply``: a stop named while a model call was under way discards that call's reply (settled)
    instead of recording its plan (the watch's second Ctrl-C cancels the draft)."""
    _require_budget(app, task_id)
    runs_of(app).hold_running_lock()
    gateway = gateway_for_task(app.models, app.db, task_id, ("plan",)).gateway  # built for this draft
    try:
        propose_plan(task_id, gateway=gateway, tasks=task_service(app),
                     position=gateway.start_position(), idempotency_key=key, stop_requested=app.stop_requested,
                     stop_discards_reply=stop_discards_reply)
    finally:
        gateway.close()  # its provider connections end with the draft (a coordinator drafts many)


def _draft(app: CoordinatorApp, ctx: CallContext, request: pb.DraftPlanRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "DraftPlan", request)
    draft_plan(app, task_id, key=mutation.key)
    return task_view(app, task_id)


def _approve(app: CoordinatorApp, ctx: CallContext, request: pb.ApprovePlanRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "ApprovePlan", request)
    task_service(app).approve_plan(task_id, revision=request.revision, sha256=request.sha256,
                                   decided_by=Actor.USER, idempotency_key=mutation.key)
    return task_view(app, task_id)


def _send_back(app: CoordinatorApp, ctx: CallContext, request: pb.SendBackPlanRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "SendBackPlan", request)
    feedback = _text(request.feedback, kind="feedback", required=True)
    task_service(app).send_back(task_id, revision=request.revision, sha256=request.sha256, feedback=feedback,
                                decided_by=Actor.USER, idempotency_key=mutation.key)
    return task_view(app, task_id)


def _answer(app: CoordinatorApp, ctx: CallContext, request: pb.AnswerQuestionRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "AnswerQuestion", request)
    text = _text(request.text, kind="answer", required=True)
    task_service(app).answer_question(task_id, revision=request.revision, sha256=request.sha256,
                                      question=request.question, answer=text, idempotency_key=mutation.key)
    return task_view(app, task_id)


def _example_edit(entry: pb.PlanExampleEdit) -> ExampleEdit:
    content = None
    if entry.test or entry.argv or entry.expected:
        content = AcceptanceExample(test=entry.test or None, argv=tuple(entry.argv), expected=tuple(entry.expected))
    return ExampleEdit(number=entry.number or None, example=content, steps=tuple(entry.steps))


def _edit_examples(app: CoordinatorApp, ctx: CallContext, request: pb.EditPlanExamplesRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "EditPlanExamples", request)
    if len(request.examples) > MAX_EXAMPLES:
        raise InvalidValueError(kind="example edit", reason=f"at most {MAX_EXAMPLES} examples")
    edits = tuple(_example_edit(entry) for entry in request.examples)
    task_service(app).edit_examples(task_id, revision=request.revision, sha256=request.sha256, edits=edits,
                                    idempotency_key=mutation.key)
    return task_view(app, task_id)


# ─── the run ─────────────────────────────────────────────────────────────────────────────────────


def _start(app: CoordinatorApp, ctx: CallContext, request: pb.StartTaskRequest) -> pb.TaskView:
    _, task_id = _checked(app, ctx, "StartTask", request)
    view = task_service(app).show(task_id)
    availability = describe_task_action(view.task.state, TaskAction.START)
    if not availability.available:
        raise TaskActionUnavailableError(task_id=task_id.value, action="start", state=view.task.state.value,
                                         reason=availability.reason or "start is not available")
    if view.plan is None or not view.plan_approved or view.plan.revision != request.plan_revision:
        raise PlanChangedError(task_id=task_id.value, offered_revision=request.plan_revision, offered_sha256="",
                               current_revision=None if view.plan is None else view.plan.revision,
                               current_sha256=None if view.plan is None else view.plan.sha256)
    runs_of(app).start(task_id)
    return task_view(app, task_id)


def _retry(app: CoordinatorApp, ctx: CallContext, request: pb.RetryTaskRequest) -> pb.TaskView:
    _, task_id = _checked(app, ctx, "RetryTask", request)
    state = task_service(app).show(task_id).task.state
    action = TaskAction.RETRY if state is TaskState.FAILED else TaskAction.REPAIR
    availability = describe_task_action(state, action)
    if not availability.available:
        raise TaskActionUnavailableError(task_id=task_id.value, action="retry", state=state.value,
                                         reason=availability.reason or "retry is not available")
    feedback = _text(request.feedback, kind="feedback", required=True)
    runs_of(app).start(task_id, retry_feedback=feedback)
    return task_view(app, task_id)


def _pause(app: CoordinatorApp, ctx: CallContext, request: pb.TaskActionRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "PauseTask", request)
    reason = _text(request.reason, kind="reason", required=False)[:2048] or "paused by the user"
    runs_of(app).pause(task_id, key=mutation.key, reason=reason)
    return task_view(app, task_id)


def _resume(app: CoordinatorApp, ctx: CallContext, request: pb.TaskActionRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "ResumeTask", request)
    if not task_service(app).show(task_id).plan_approved:
        _require_budget(app, task_id)  # before the task moves back to planning
    runs_of(app).resume(task_id, key=mutation.key,
                        draft_plan=lambda: draft_plan(app, task_id, key=f"{mutation.key}:plan"))
    return task_view(app, task_id)


def _cancel(app: CoordinatorApp, ctx: CallContext, request: pb.TaskActionRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "CancelTask", request)
    _, report = runs_of(app).cancel(task_id, key=mutation.key)
    view = task_view(app, task_id)
    view.cancel_outcome.CopyFrom(pb.CancelOutcomeView(
        running_command=report.command.value, worktree=report.worktree.value, detail=report.detail,
        command_state=report.command_state, summary=report.summary(), by_the_run=report.by_the_run))
    return view


def _set_budget(app: CoordinatorApp, ctx: CallContext, request: pb.SetBudgetRequest) -> pb.TaskView:
    mutation, task_id = _checked(app, ctx, "SetBudget", request)
    budgets = BudgetService(app.db)
    match request.choice:
        case "set":
            currency = Currency.parse(request.currency) if request.currency else USD
            limit = Money.parse_decimal(request.hard_limit, currency=currency)
            budgets.set_budget(task_id, hard_limit=limit, expected_revision=budgets.revision_of(task_id),
                               idempotency_key=mutation.key)
        case "stop":
            budgets.stop_task(task_id)
            runs_of(app).after_stop(task_id)
        case "finish":
            state = task_service(app).show(task_id).task.state
            raise TaskActionUnavailableError(
                task_id=task_id.value, action="finish", state=state.value,
                reason="finish: a call that would not fit the budget is refused before it starts, so nothing "
                       "reserved is left to finish; raise the limit and resume, or stop the task")
        case _:
            raise InvalidValueError(kind="budget choice", reason="choose set, finish or stop")
    return task_view(app, task_id)


# ─── reading ─────────────────────────────────────────────────────────────────────────────────────


def _list(app: CoordinatorApp, ctx: CallContext, request: pb.ListTasksRequest) -> pb.ListTasksReply:
    limit = min(request.limit or _DEFAULT_LIST, _MAX_LIST)
    before = parse_task_id(request.before) if request.before else None
    found = task_service(app).list_tasks(limit=limit + 1, before=before, words=_search_words(request.query))
    page = found[:limit]
    has_more = len(found) > limit
    return pb.ListTasksReply(tasks=[task_summary(record) for record in page], has_more=has_more,
                             next_before=page[-1].task_id.value if has_more else "")


def _search_words(query: str) -> tuple[str, ...]:
    """The distinct lower-case words of a task-list search (``ListTasksRequest.query``), at most
    :data:`_MAX_SEARCH_WORDS` of them; :class:`InvalidValueError` for a longer text or more words."""
    if len(query) > _MAX_SEARCH:
        raise InvalidValueError(kind="task search", reason=f"at most {_MAX_SEARCH} characters")
    words = tuple(dict.fromkeys(query.lower().split()))
    if len(words) > _MAX_SEARCH_WORDS:
        raise InvalidValueError(kind="task search", reason=f"at most {_MAX_SEARCH_WORDS} words")
    return words


def _timeline(app: CoordinatorApp, ctx: CallContext, request: pb.GetTimelineRequest) -> pb.Timeline:
    task_id = parse_task_id(request.task_id)
    session = task_service(app).show(task_id).task.session_id
    if request.after_sequence < 0:
        raise InvalidValueError(kind="after_sequence", reason="must not be negative")
    if request.after_sequence > session_head(app.db, session):
        raise InvalidValueError(kind="after_sequence", reason="it is ahead of the task's committed history")
    limit = min(request.limit or _DEFAULT_PAGE, _MAX_PAGE)
    rows = read_session_events(app.db, session_id=session, after_sequence=request.after_sequence,
                               limit=min(limit + 1, _MAX_PAGE))
    has_more = len(rows) > limit or (len(rows) == limit and rows[-1].sequence < session_head(app.db, session))
    return pb.Timeline(events=[session_event(r) for r in rows[:limit]], has_more=has_more)


# ─── the table ───────────────────────────────────────────────────────────────────────────────────


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def mutating(name: str, request_type: type[Message], handler: object) -> UnaryMethod[Message, Message]:
        def call(ctx: CallContext, request: Message) -> Message:
            mutation = mutation_of(ctx, name, getattr(request, "control"))  # noqa: B009
            return ledger.run(mutation, request, pb.TaskView, lambda: handler(app, ctx, request))  # type: ignore[operator]

        return UnaryMethod(name=method_name(_SERVICE, name), request_type=request_type, response_type=pb.TaskView,
                           handler=call, mutating=True)

    def reading(name: str, request_type: type[Message], response_type: type[Message],
                handler: object) -> UnaryMethod[Message, Message]:
        return UnaryMethod(name=method_name(_SERVICE, name), request_type=request_type, response_type=response_type,
                           handler=lambda ctx, request: handler(app, ctx, request))  # type: ignore[operator]

    return [
        reading("ListTasks", pb.ListTasksRequest, pb.ListTasksReply, _list),
        reading("GetTask", pb.GetTaskRequest, pb.TaskView,
                lambda app_, ctx, request: task_view(app_, parse_task_id(request.task_id))),
        reading("GetTimeline", pb.GetTimelineRequest, pb.Timeline, _timeline),
        mutating("CreateTask", pb.CreateTaskRequest, _create),
        mutating("DraftPlan", pb.DraftPlanRequest, _draft),
        mutating("ApprovePlan", pb.ApprovePlanRequest, _approve),
        mutating("SendBackPlan", pb.SendBackPlanRequest, _send_back),
        mutating("AnswerQuestion", pb.AnswerQuestionRequest, _answer),
        mutating("EditPlanExamples", pb.EditPlanExamplesRequest, _edit_examples),
        mutating("StartTask", pb.StartTaskRequest, _start),
        mutating("RetryTask", pb.RetryTaskRequest, _retry),
        mutating("PauseTask", pb.TaskActionRequest, _pause),
        mutating("ResumeTask", pb.TaskActionRequest, _resume),
        mutating("CancelTask", pb.TaskActionRequest, _cancel),
        mutating("SetBudget", pb.SetBudgetRequest, _set_budget),
    ]
