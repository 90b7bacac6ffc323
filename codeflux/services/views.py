"""Coordinator records as the protobuf views the UI reads: a task with everything its screen needs.

Honest state, as the contract asks: unknown money is ``known=false`` with its reason, never 0; a forecast
is a range labelled as an estimate; a plan drafted by the scripted provider says so
(:data:`~codeflux.services.app.SCRIPTED_DEMO_LABEL`); every action is listed, the unavailable ones with
the reason; a pending tool request shows the exact operation (tool, arguments in the descriptor's order,
working directory, operation identity) and the capabilities it needs. ``through_sequence`` is the head of
the task's session at the time of the read, so a client can subscribe right after it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from codeflux.api.v1 import common_pb2, product_pb2
from codeflux.authority.decide import default_needs_to_deny, runs_a_program
from codeflux.authority.repository_approvals import RepositoryCardFacts
from codeflux.authority.service import AuthorityService, RequestView
from codeflux.coordinator.journal import latest_session_event, read_session_head
from codeflux.coordinator.runs.reviewed_commands import approval_card_facts
from codeflux.coordinator.runs.tool_records import read_denials_of_task
from codeflux.coordinator.spending.budget import BudgetService, BudgetSummary
from codeflux.coordinator.spending.model_access import EndpointModelAccess
from codeflux.coordinator.spending.model_approvals import endpoint_approved
from codeflux.coordinator.spending.prices import PriceCatalog, PriceUse
from codeflux.coordinator.spending.provider_choice import (
    SCRIPTED_PROVIDER,
    ChoiceSource,
    ProviderChoice,
    provider_used_by_task,
    read_task_pin,
)
from codeflux.coordinator.tasks.plans import examples_not_editable
from codeflux.coordinator.tasks.service import TaskService, TaskView
from codeflux.domain.acceptance import acceptance_of
from codeflux.domain.capabilities import Capability, describe_denial
from codeflux.domain.clarification import requirement_sentences, trace_coverage
from codeflux.domain.confinement import ConfinementMode, allow_for_task_refusal, describe_approval
from codeflux.domain.display import argument_display_text
from codeflux.domain.errors import CodefluxError
from codeflux.domain.events import EventKind, WorktreeDisposed, WorktreeRemoved
from codeflux.domain.ids import TaskId
from codeflux.domain.money import Cost, Money
from codeflux.domain.plans import Plan, PlanAuthor, PlanDecisionRow, PlanForecast
from codeflux.domain.providers import ProviderName
from codeflux.domain.repository_approvals import RepositoryApproval
from codeflux.domain.tasks import TaskRecord, TaskState, is_terminal
from codeflux.domain.tools import ArgumentValue
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.store.database import Database
from codeflux.worker.client.confinement import choose_confinement

__all__ = [
    "NEEDS_ATTENTION",
    "PIN_REASONS",
    "argument_text",
    "budget_view",
    "current_endpoint_card",
    "denial_views",
    "endpoint_approval_card",
    "maybe_money",
    "money",
    "pending_approvals",
    "plan_view",
    "repository_approval_view",
    "rfc3339_of_us",
    "session_head",
    "task_service",
    "task_summary",
    "task_view",
]

NEEDS_ATTENTION: Final = frozenset({TaskState.AWAITING_PLAN_APPROVAL, TaskState.AWAITING_AUTHORITY,
                                    TaskState.AWAITING_REVIEW, TaskState.RECOVERY_REQUIRED, TaskState.PAUSED})
_MAX_ARGUMENT_CHARS: Final = 64 * 1024


def task_service(app: CoordinatorApp) -> TaskService:
    """The coordinator's task service over the app's database (cheap: it holds no state of its own)."""
    return TaskService(app.db, worktrees_root=app.location.worktrees)


# ─── money ───────────────────────────────────────────────────────────────────────────────────────


def money(amount: Money) -> common_pb2.Money:
    return common_pb2.Money(currency=amount.currency.code, minor_units=amount.minor,
                            decimal_places=amount.currency.exponent, display=str(amount))


def maybe_money(cost: Cost) -> common_pb2.MaybeMoney:
    """A known amount, or ``known=false`` with why — never 0 standing in for unknown."""
    if isinstance(cost, Money):
        return common_pb2.MaybeMoney(known=True, amount=money(cost))
    return common_pb2.MaybeMoney(known=False, unknown_reason="; ".join(cost.reasons)[:1024])


# ─── the plan ────────────────────────────────────────────────────────────────────────────────────


def _forecast(forecast: PlanForecast) -> product_pb2.ForecastView:
    return product_pb2.ForecastView(
        label=forecast.label, heuristic=forecast.heuristic,
        wall_seconds=product_pb2.CountRange(low=forecast.wall_seconds.p50, high=forecast.wall_seconds.p90),
        tokens=product_pb2.CountRange(low=forecast.tokens.p50, high=forecast.tokens.p90),
        cost=common_pb2.MoneyRange(low=maybe_money(forecast.cost.low), high=maybe_money(forecast.cost.high)),
        uncertainty=list(forecast.uncertainty))


def _author_label(app: CoordinatorApp, created_by: PlanAuthor) -> str:
    if created_by is PlanAuthor.SCRIPTED:
        return SCRIPTED_DEMO_LABEL
    if created_by is PlanAuthor.USER:
        return "you"
    return "a model"  # the plan row does not record which provider answered


def plan_view(*, revision: int, sha256: str, plan: Plan, decision: PlanDecisionRow | None,
              author_label: str, requirement: str, awaiting_approval: bool = True) -> product_pb2.PlanView:
    """One plan revision as the plan card (and the terminal's plan printer) shows it, with the acceptance
    examples the task will be checked against (``requirement``'s own blocks win over the plan's) and the plan's
    own examples as the person edits them (``awaiting_approval``: the task waits on this revision's approval)."""
    acceptance = acceptance_of(requirement, plan.examples, plan_revision=revision, edited_in=plan.examples_edited_in)
    lines = [example.describe() for example in acceptance.examples]
    if plan.examples_edited_in and examples_not_editable(requirement) is None:  # the plan's examples, some edited
        lines = [line + ("" if edited is None else f" (edited by the person in revision {edited})")
                 for line, edited in zip(lines, plan.examples_edited_in, strict=True)]
    shown = product_pb2.PlanView(
        revision=revision, sha256=sha256, task_class=str(plan.task_class), scope_summary=plan.scope.summary,
        scope_paths=list(plan.scope.paths), scope_excluded=list(plan.scope.excluded),
        steps=[product_pb2.PlanStepView(
            title=s.title, detail=s.detail, expected_files=list(s.expected_files),
            atoms=[product_pb2.PlanAtomView(name=a.name, signature=a.signature, effects=[e.value for e in a.effects])
                   for a in s.atoms]) for s in plan.steps],
        checks=[product_pb2.PlanCheckView(name=c.name, argv=list(c.argv)) for c in plan.checks],
        permissions=[product_pb2.PlanPermissionView(capability=p.need.capability.value, resource=p.need.resource or "",
                                                    reason=p.reason) for p in plan.permissions],
        assumptions=list(plan.assumptions), decision="undecided" if decision is None else decision.decision,
        feedback=(decision.feedback or "") if decision is not None else "", author_label=author_label,
        examples=lines, examples_source=acceptance.source)
    _trace_and_questions(shown, plan, requirement, examples=len(acceptance.examples))
    _plan_examples(shown, plan, undecided=decision is None and awaiting_approval, requirement=requirement)
    if plan.forecast is not None:
        shown.forecast.CopyFrom(_forecast(plan.forecast))
    if plan.planning is not None:
        shown.planning.CopyFrom(product_pb2.PlanningSpendView(
            model_calls=plan.planning.model_calls, tool_calls=plan.planning.tool_calls,
            cost=maybe_money(plan.planning.cost)))
    return shown


def _plan_examples(shown: product_pb2.PlanView, plan: Plan, *, undecided: bool, requirement: str) -> None:
    """The plan's own examples, structured (what EditPlanExamples edits), and whether they may be edited now."""
    origins = acceptance_of("", plan.examples, plan_revision=None, edited_in=plan.examples_edited_in).origins
    serving: dict[int, list[int]] = {}
    for step, trace in enumerate(plan.trace or (), start=1):
        for number in trace.examples:
            serving.setdefault(number, []).append(step)
    for number, (example, origin) in enumerate(zip(plan.examples, origins, strict=True), start=1):
        shown.plan_examples.append(product_pb2.PlanExampleView(
            number=number, test=example.test or "", argv=list(example.argv), expected=list(example.expected),
            steps=serving.get(number, []), origin=origin, text=example.describe()))
    why_not = examples_not_editable(requirement)
    if not undecided:
        why_not = "the examples of a plan revision are edited while it awaits approval"
    shown.examples_editable = why_not is None
    shown.examples_edit_note = why_not or ""


def _trace_and_questions(shown: product_pb2.PlanView, plan: Plan, requirement: str, *, examples: int) -> None:
    """Stage 4's trace (step → examples and sentences, what no step names) and stage 2's questions; an assumed
    question is also listed among the assumptions, as the reading the plan goes on."""
    sentences = requirement_sentences(requirement)
    shown.sentences.extend(sentences)
    if plan.trace is not None:
        shown.traced = True
        for step, trace in zip(shown.steps, plan.trace, strict=True):
            step.serves_examples.extend(trace.examples)
            step.covers_sentences.extend(trace.sentences)
        coverage = trace_coverage([(t.examples, t.sentences) for t in plan.trace], examples=examples,
                                  sentences=len(sentences))
        shown.uncovered_examples.extend(coverage.uncovered_examples)
        shown.uncovered_sentences.extend(coverage.uncovered_sentences)
    for number, question in enumerate(plan.questions, start=1):
        status = "answered" if question.answer is not None else "assumed" if question.assumed else "open"
        shown.questions.append(product_pb2.PlanQuestionView(
            number=number, question=question.question, origin=question.origin.value, status=status,
            answer=question.answer or "", assumption=question.assumption))
        if question.assumed:
            shown.assumptions.append(f"(question {number}, policy assume) {question.assumption}")
    if plan.clarity is not None:
        shown.clarification_policy = plan.clarity.policy.value


def _plan(app: CoordinatorApp, view: TaskView) -> product_pb2.PlanView | None:
    row = view.plan
    if row is None:
        return None
    return plan_view(revision=row.revision, sha256=row.sha256, plan=row.plan, decision=view.plan_decision,
                     author_label=_author_label(app, row.created_by), requirement=view.task.requirement or "",
                     awaiting_approval=view.task.state is TaskState.AWAITING_PLAN_APPROVAL)


# ─── the budget ──────────────────────────────────────────────────────────────────────────────────


def budget_view(app: CoordinatorApp, task_id: TaskId) -> product_pb2.BudgetView:
    budgets = BudgetService(app.db)
    revision = budgets.revision_of(task_id)
    if revision is None:
        return product_pb2.BudgetView(set=False, lines=["no budget set: set a hard limit before the first model call"])
    summary: BudgetSummary = budgets.summary(task_id)
    committed = summary.spent_known + summary.reserved_known
    view = product_pb2.BudgetView(
        set=True, revision=summary.revision, hard_limit=money(summary.hard_limit), spent=maybe_money(summary.spent),
        reserved=maybe_money(summary.reserved), remaining=maybe_money(summary.remaining),
        tokens_used=summary.tokens_used, tokens_reserved=summary.tokens_reserved,
        token_limit=summary.token_limit or 0, token_limit_set=summary.token_limit is not None,
        pending_decisions=list(summary.pending_decisions),
        exhausted=committed >= summary.hard_limit and summary.hard_limit.minor > 0, lines=summary.lines(),
        spend_line=summary.spend_line())
    if summary.warning is not None:
        view.warning.CopyFrom(money(summary.warning))
    view.prices.extend(price_use_view(use) for use in PriceCatalog(app.db).uses_of_task(task_id))
    return view


def price_use_view(use: PriceUse) -> product_pb2.PriceUseView:
    """Which price revision priced which of a task's calls: the package, version and date of a shipped snapshot, or
    when the user set it (``codeflux prices set``), with its effective date; calls without a price say so."""
    calls = len(use.request_ids)
    counted = f"{calls} call" + ("" if calls == 1 else "s")
    row = use.revision
    if row is None:
        return product_pb2.PriceUseView(priced=False, request_ids=list(use.request_ids),
                                        line=f"no price: {counted} (unknown cost)")
    recorded = rfc3339_of_us(row.recorded_at_us)
    where = (f"the shipped snapshot {row.source_detail}" if row.source.value == "shipped"
             else f"a user revision ({row.source_detail}) recorded {recorded}")
    line = (f"priced by {row.provider} {row.model} revision {row.revision}, {where}, effective "
            f"{row.effective_date.isoformat()}: {counted}")
    return product_pb2.PriceUseView(
        priced=True, snapshot_id=row.snapshot_id, provider=row.provider, model=row.model, revision=row.revision,
        source=row.source.value, source_detail=row.source_detail, effective_date=row.effective_date.isoformat(),
        recorded_at=recorded, request_ids=list(use.request_ids), line=line)


# ─── approvals ───────────────────────────────────────────────────────────────────────────────────


def argument_text(value: ArgumentValue) -> str:
    """One argument as the approval card shows it: text as is, lists and numbers as JSON, capped for display."""
    text = argument_display_text(value)
    if len(text) > _MAX_ARGUMENT_CHARS:
        return text[:_MAX_ARGUMENT_CHARS] + f" … (cut here for display: {len(text):,} characters in all)"
    return text


def approval_view(request: RequestView, repository: RepositoryCardFacts | None = None) -> product_pb2.PendingApproval:
    """One pending tool request as the approval card shows it: the exact operation and what it needs, and — with
    ``repository`` — who allowed it before on this repository and whether allow-for-repository is offered."""
    operation = request.operation
    needs = request.classification.needs
    why = "; ".join(f"{item.need}: {item.reason}" for item in needs)
    reason = request.decision.reason + (f" — needs {why}" if why else "")
    program = "" if operation.executable is None else f"; program {operation.executable.path}"
    runs_program = runs_a_program(request.classification)
    network = any(item.need.capability is Capability.NETWORK for item in needs)
    mode = choose_confinement().mode
    denied = default_needs_to_deny(request.classification)
    return product_pb2.PendingApproval(
        request_id=request.request_id, tool=request.tool,
        arguments=[product_pb2.Argument(name=name, value=argument_text(value)) for name, value in operation.arguments],
        capabilities=[str(item.need) for item in needs],
        scope=(f"this exact operation in task {request.task_id}'s worktree (allow-for-task covers identical "
               f"requests of this task only){program}"),
        operation_identity=str(request.identity), reason=reason[:2048], cwd=operation.cwd,
        meaning=describe_approval(runs_program=runs_program, network=network, mode=mode),
        allow_for_task_refusal=allow_for_task_refusal(runs_program=runs_program, mode=mode),
        allowed_before=[] if repository is None else [
            product_pb2.EarlierAllowanceView(task_id=str(earlier.task_id), request_id=earlier.request_id,
                                             decision_id=earlier.decision_id, outcome=earlier.outcome,
                                             decided_at=rfc3339_of_us(earlier.decided_at_us))
            for earlier in repository.allowed_before],
        allow_for_repository_refusal="" if repository is None else repository.refusal,
        repository_identity="" if repository is None or repository.identity is None else str(repository.identity),
        deny_blocks=[str(need) for need in denied], deny_meaning=describe_denial(denied),
        allowed_before_refused=[] if repository is None else list(repository.not_applicable))


def pending_approvals(app: CoordinatorApp, task_id: TaskId) -> list[product_pb2.PendingApproval]:
    unconfined = choose_confinement().mode is ConfinementMode.NONE
    return [approval_view(request, approval_card_facts(app.db, request.request_id, unconfined=unconfined))
            for request in AuthorityService(app.db).pending_requests(task_id)]


def rfc3339_of_us(at_us: int) -> str:
    """Microseconds since the epoch as RFC 3339 text in UTC (seconds precision)."""
    return datetime.fromtimestamp(at_us / 1_000_000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def repository_approval_view(approval: RepositoryApproval) -> product_pb2.RepositoryApprovalView:
    """One repository approval as lists show it: the exact operation, the repository, the decision it came from."""
    operation = approval.operation
    revocation = approval.revocation
    return product_pb2.RepositoryApprovalView(
        approval_id=str(approval.approval_id), repository_root=approval.repository_root,
        root_commits=list(approval.roots.commits), repository_identity=str(approval.identity), tool=operation.tool,
        arguments=[product_pb2.Argument(name=name, value=argument_text(value)) for name, value in operation.arguments],
        cwd=operation.cwd, task_id=str(approval.task_id), decision_id=approval.decision_id,
        reason=approval.reason[:2048], created_at=rfc3339_of_us(approval.created_at_us),
        revoked=revocation is not None,
        revoked_at="" if revocation is None else rfc3339_of_us(revocation.revoked_at_us),
        revocation_reason="" if revocation is None else revocation.reason[:2048],
        program="" if operation.executable is None else operation.executable.path)


def denial_views(app: CoordinatorApp, task_id: TaskId) -> list[product_pb2.DenialView]:
    """The capabilities a person denied for the task (every later request needing them is refused)."""
    rows = read_denials_of_task(app.db, task_id)
    return [product_pb2.DenialView(capability=row.need.capability.value, resource=row.need.resource or "",
                                   reason=row.reason[:2048]) for row in rows]


# ─── the task ────────────────────────────────────────────────────────────────────────────────────


def session_head(db: Database, session_id: str) -> int:
    """The last committed sequence of ``session_id`` (0 for an empty session)."""
    return read_session_head(db, session_id) or 0


def _worktree_disposal(db: Database, session_id: str) -> product_pb2.WorktreeDisposalView | None:
    """The ended task's worktree disposal, from its journal (None: none was recorded). Called only for an ended
    task: a worktree is disposed of only at the end, and a live task's journal is not scanned for it."""
    found = latest_session_event(db, session_id=session_id, kinds=(EventKind.WORKTREE_REMOVED, EventKind.WORKTREE_KEPT))
    event = None if found is None else found.event
    if not isinstance(event, WorktreeDisposed):
        return None
    return product_pb2.WorktreeDisposalView(
        removed=isinstance(event, WorktreeRemoved), branch_deleted=event.branch_deleted,
        checkpoint_refs_deleted=event.checkpoint_refs_deleted or 0, refusal=event.refusal or "", detail=event.detail)


# Why a task's pinned provider was in force when the task was created (TaskView.provider_reason).
PIN_REASONS: Final = {
    ChoiceSource.FLAG: "the --provider flag `codeflux start` was given",
    ChoiceSource.ENVIRONMENT: "CODEFLUX_PROVIDER in the environment (it stands for the --provider flag)",
    ChoiceSource.DEMO: "the demo (the scripted provider)",
    ChoiceSource.SETTINGS: "the choice stored in Settings → Providers",
    ChoiceSource.CONFIG: "the config file's [provider]",
    ChoiceSource.DEFAULT: "the built-in default: nothing was chosen, so the scripted provider (not an AI model)",
}


def endpoint_approval_card(db: Database, choice: ProviderChoice) -> product_pb2.EndpointApprovalCard | None:
    """The card asking a person to approve ``choice``'s endpoint, or None: no base URL of its own, its provider's
    default, or approved already (nothing is sent to an endpoint before that approval)."""
    if not choice.base_url or choice.scripted:
        return None
    return _endpoint_card(db, ProviderName.parse(choice.provider), choice.base_url)


def current_endpoint_card(app: CoordinatorApp) -> product_pb2.EndpointApprovalCard | None:
    """The card for the endpoint of the provider in force now (a ``start --base-url`` flag's, the environment's, the
    config file's or the stored choice's: :class:`EndpointModelAccess`), or None: the provider's default endpoint,
    approved already, a URL the endpoint rules refuse (a gateway build says why), or an access that cannot say."""
    models = app.models
    found = models.endpoint if isinstance(models, EndpointModelAccess) else None
    if found is None:
        return None
    try:
        return _endpoint_card(db=app.db, provider=ProviderName.parse(found[0]), base_url=found[1])
    except CodefluxError:  # not a provider or an endpoint the rules refuse: a gateway build says why
        return None


def _endpoint_card(db: Database, provider: ProviderName, base_url: str) -> product_pb2.EndpointApprovalCard | None:
    if endpoint_approved(db, provider=provider, base_url=base_url):
        return None
    return product_pb2.EndpointApprovalCard(provider=provider.value, base_url=base_url)


def task_view(app: CoordinatorApp, task_id: TaskId) -> product_pb2.TaskView:
    """Everything the task screen shows, read now (see the module docstring)."""
    view = task_service(app).show(task_id)
    task = view.task
    head = session_head(app.db, task.session_id)
    runs = app.runs
    shown = product_pb2.TaskView(
        task_id=task.task_id.value, title=task.title or "", requirement=task.requirement or "",
        state=task.state.value, revision=task.revision, repository_root=str(task.repository_root),
        base_revision=task.base_revision or "", worktree=str(task.worktree), session_id=task.session_id,
        actions=[product_pb2.TaskActionView(action=a.action.value, available=a.available, reason=a.reason or "")
                 for a in view.actions],
        budget=budget_view(app, task_id), pending_approvals=pending_approvals(app, task_id),
        run_active=runs.is_active(task_id), provider_label=app.models.label,
        through_sequence=head, last_outcome=runs.last_outcome(task_id),
        worktree_exists=task.worktree.is_dir())
    disposal = _worktree_disposal(app.db, task.session_id) if is_terminal(task.state) else None
    if disposal is not None:
        shown.worktree_disposal.CopyFrom(disposal)
    plan = _plan(app, view)
    if plan is not None:
        shown.plan.CopyFrom(plan)
        if plan.author_label == SCRIPTED_DEMO_LABEL:
            shown.provider_label = SCRIPTED_DEMO_LABEL
    used = provider_used_by_task(app.db, task.task_id)
    pin = read_task_pin(app.db, task.task_id)
    shown.provider_basis = "used" if used is not None else "pinned" if pin is not None else "current"
    if used is not None:  # the provider its model calls went to, whatever is chosen now
        shown.provider_label = SCRIPTED_DEMO_LABEL if used[0] == SCRIPTED_PROVIDER else f"{used[0]} ({used[1]})"
    elif pin is not None:  # before its first call: the choice it pinned when it was created
        shown.provider_label = SCRIPTED_DEMO_LABEL if pin.choice.scripted else pin.choice.label
    elif app.models.scripted:  # a task created before pins (000018): the choice in force now
        shown.provider_label = SCRIPTED_DEMO_LABEL
    if pin is not None:
        shown.provider_source = pin.source.value
        shown.provider_reason = PIN_REASONS[pin.source]
    if not is_terminal(task.state):  # the endpoint its drafts and runs call: the pin's, else (before pins) today's
        card = current_endpoint_card(app) if pin is None else endpoint_approval_card(app.db, pin.choice)
        if card is not None:
            shown.endpoint_approval.CopyFrom(card)
    if view.attempt is not None:
        shown.attempt.CopyFrom(product_pb2.AttemptView(
            attempt=view.attempt.attempt, plan_revision=view.attempt.plan_revision, open=view.attempt.is_open,
            stopped_at="" if view.attempt.stopped_at is None else view.attempt.stopped_at.value))
    return shown


def task_summary(record: TaskRecord) -> product_pb2.TaskSummary:
    return product_pb2.TaskSummary(
        task_id=record.task_id.value, title=record.title or "", state=record.state.value, revision=record.revision,
        repository_root=str(record.repository_root), session_id=record.session_id,
        needs_attention=record.state in NEEDS_ATTENTION, created_at_us=record.created_at_us)
