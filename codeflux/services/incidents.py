"""``IncidentService``: reported failures, fingerprinted per repository (issue 22; docs/using.md, "Incidents").

* ``Report`` (mutating) — a traceback or log excerpt for the repository at ``repository_root``: the text is
  redacted (stored provider keys loaded into the redactor first), fingerprinted against the paths the repository
  tracks at HEAD, and recorded as a new incident or one more occurrence of a known one, in one transaction
  (:mod:`codeflux.coordinator.incidents`). Refusals never echo the text or the path.
* ``List`` — incidents most recently seen first (one repository, one state).
* ``Show`` — one incident with every state it entered and its newest occurrences (redacted text only).
* ``Dismiss`` (mutating) — a person's decision with a reason (required); a dismissed or fixed incident refuses
  (FAILED_PRECONDITION / INVALID_TRANSITION).
* ``Propose`` (mutating) — a draft task drafted from a new or regressed incident, created with the incident's
  ``task-proposed`` state in one transaction (:meth:`TaskService.create_task`'s ``also``). Proposal, never action:
  the task is a draft; it runs only after a person approves its plan. Accepting it makes the incident ``fixed``
  (in the accept's transaction, :func:`codeflux.coordinator.incidents.record_incidents_fixed`).
* ``WatchTick`` (mutating) — one tick of ``codeflux watch`` (:mod:`codeflux.coordinator.runs.watch`): the check
  command, allowed for the repository, runs confined on a fresh scratch copy of the branch's HEAD; a failing run is
  reported as above (source ``watch``) and, when that leaves the incident ``new`` or ``regressed``, proposes one
  draft task exactly as ``Propose`` does (the command as its acceptance example). A later tick failing the same
  way only counts an occurrence: the incident is ``task-proposed`` then, so one failure makes one proposal. With
  ``auto_plan`` the draft gets ``budget`` as its hard limit and its plan is drafted through the coordinator's
  gateway in this call (every planning call reserved against that budget), then it waits for plan approval.
  Ticks planning at once (several watches on one coordinator) share the app's planning slots: at most the
  active-task limit of plan drafts are under way, the others wait for a slot.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.coordinator import incidents as coordinator
from codeflux.coordinator.incidents import IncidentDetail, ReportedRepository
from codeflux.coordinator.runs.watch import run_watch_tick
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.model_access import pin_new_task
from codeflux.domain.errors import (
    DecisionNeededError,
    DirtyTreeNotAcknowledgedError,
    InvalidValueError,
    RepositoryNotUsableError,
)
from codeflux.domain.ids import IncidentId, RepositoryId, TaskId
from codeflux.domain.incidents import (
    MAX_INCIDENT_TEXT_CHARS,
    Incident,
    IncidentSource,
    IncidentState,
    draft_incident_requirement,
    parse_dismiss_reason,
)
from codeflux.domain.money import USD, Money
from codeflux.domain.tasks import TaskState
from codeflux.domain.watch import WatchTickOutcome
from codeflux.gitwork.tracked_paths import tracked_paths_at_head
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import mutation_of, parse_request_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.tasks import draft_plan
from codeflux.services.views import rfc3339_of_us as _iso
from codeflux.services.views import task_service
from codeflux.services.workspace import inspect_path
from codeflux.store.database import now_us

__all__ = ["detail_view", "incident_view", "methods", "parse_incident_id"]

_SERVICE: Final = "IncidentService"


def parse_incident_id(text: str) -> IncidentId:
    """A incident id from a request, or INVALID_ARGUMENT that does not repeat what was sent."""
    return parse_request_id(IncidentId.parse, text, kind="incident id", prefix="inc_")


def _state(text: str) -> IncidentState | None:
    if not text:
        return None
    try:
        return IncidentState(text)
    except ValueError:
        raise InvalidValueError(kind="incident state",
                                reason="one of " + ", ".join(s.value for s in IncidentState)) from None


def _source(text: str) -> IncidentSource:
    try:
        return IncidentSource(text or IncidentSource.CLI.value)
    except ValueError:
        raise InvalidValueError(kind="incident source",
                                reason="one of " + ", ".join(s.value for s in IncidentSource)) from None


def _check(text: str) -> str | None:
    """The acceptance example's command as the person gave it: one line, at most 1,000 characters; None if empty."""
    check = text.strip()
    if not check:
        return None
    if len(check) > 1000 or any(ch in check for ch in "\x00\r\n"):
        raise InvalidValueError(kind="check command", reason="one line of at most 1000 characters")
    return check


def incident_view(incident: Incident) -> pb.IncidentView:
    fingerprint, state = incident.fingerprint, incident.state
    return pb.IncidentView(
        incident_id=incident.incident_id.value, repository_id=incident.repository_id.value,
        repository_root=incident.repository_root, state=state.state.value, state_reason=state.reason,
        state_since=_iso(state.recorded_at_us), state_task_id="" if state.task_id is None else state.task_id.value,
        occurrences=incident.occurrences, first_seen=_iso(incident.first_seen_us),
        last_seen=_iso(incident.last_seen_us), fingerprint=fingerprint.digest, shape=fingerprint.shape.value,
        exception_type=fingerprint.exception_type,
        frames=[pb.IncidentFrameView(path=f.path, function=f.function) for f in fingerprint.frames],
        message=fingerprint.message, summary=fingerprint.summary)


def detail_view(detail: IncidentDetail) -> pb.IncidentDetail:
    return pb.IncidentDetail(
        incident=incident_view(detail.incident),
        history=[pb.IncidentStateView(sequence=h.sequence, state=h.state.value, actor=h.actor.value, reason=h.reason,
                                      task_id="" if h.task_id is None else h.task_id.value,
                                      recorded_at=_iso(h.recorded_at_us)) for h in detail.history],
        occurrences=[pb.IncidentOccurrenceView(occurrence_id=o.occurrence_id, source=o.source.value,
                                               reported_at=_iso(o.reported_at_us), redacted_text=o.redacted_text)
                     for o in detail.occurrences])


def _known_repository(app: CoordinatorApp, root: str) -> RepositoryId | None:
    """The id codeflux recorded for the checkout at ``root``; None when it never recorded that repository."""
    return coordinator.known_repository_id(app.db, inspect_path(root).identity)


def _report(app: CoordinatorApp, *, root: str, text: str, source: IncidentSource,
            key: str) -> coordinator.IncidentReport:
    snapshot = inspect_path(root)
    repository = ReportedRepository(root=snapshot.root, identity=snapshot.identity,
                                    root_commits=tuple(snapshot.root_commits))
    return coordinator.report_incident(app.db, snapshot=repository, repository_files=tracked_paths_at_head(
        snapshot.root), text=text, source=source, idempotency_key=key)


def _propose(app: CoordinatorApp, incident_id: IncidentId, *, check: str | None, acknowledged: str | None,
             by_watch: bool, key: str) -> tuple[TaskId, str]:
    """A draft task drafted from ``incident_id``, created with the incident's ``task-proposed`` state in one
    transaction; returns the task and its requirement."""
    detail = coordinator.show_incident(app.db, incident_id, occurrences=1)
    incident = detail.incident
    snapshot = inspect_path(incident.repository_root)
    if coordinator.known_repository_id(app.db, snapshot.identity) != incident.repository_id:
        raise RepositoryNotUsableError(path="the incident's repository root", problem="not-a-repository",
                                      detail="the checkout there is another repository now")
    requirement = draft_incident_requirement(incident, newest_text=detail.occurrences[0].redacted_text, check=check)
    title = f"Fix {incident.fingerprint.summary}"
    change = task_service(app).create_task(
        snapshot, requirement, title=title if len(title) <= 80 else title[:79] + "…",
        acknowledged_dirty_hash=acknowledged, idempotency_key=key,
        also=pin_new_task(app.models, lambda tx, task_id: [  # the task pins the provider in force
            coordinator.record_task_proposed(tx, incident_id, task_id, at_us=now_us(), by_watch=by_watch)]))
    return change.task_id, requirement


def _budget(text: str) -> Money:
    if not text.strip():
        raise InvalidValueError(kind="watch budget", reason="auto_plan needs a budget (an exact decimal in USD)")
    return Money.parse_decimal(text.strip(), currency=USD)


def _watch_tick(app: CoordinatorApp, ctx: CallContext, request: pb.WatchTickRequest) -> pb.WatchTickReply:
    mutation = mutation_of(ctx, "WatchTick", request.control)
    budget = _budget(request.budget) if request.auto_plan else None
    snapshot = inspect_path(request.repository_root)
    tick = run_watch_tick(app.db, data_dir=app.location.directory, snapshot=snapshot, argv=list(request.argv))
    reply = pb.WatchTickReply(outcome=tick.outcome.value, head=tick.head, exit_code=tick.exit_code or 0,
                              approval_id=tick.approval_id, confinement=tick.confinement,
                              duration_ms=tick.duration_ms)
    if tick.outcome is WatchTickOutcome.PASSED:
        return reply
    text = tick.output if tick.output.strip() else f"the watched command exited with status {tick.exit_code}"
    if len(text) > MAX_INCIDENT_TEXT_CHARS:
        text = text[-MAX_INCIDENT_TEXT_CHARS:]
    report = _report(app, root=str(Path(snapshot.root)), text=text, source=IncidentSource.WATCH,
                     key=f"{mutation.key}:report")
    reply.incident.CopyFrom(incident_view(report.incident))
    reply.incident_created = report.created
    state = report.incident.state.state
    if state not in (IncidentState.NEW, IncidentState.REGRESSED):
        reply.proposal_note = (f"the incident is {state.value}" + (
            f" (task {report.incident.state.task_id.value})" if report.incident.state.task_id else "")
            + "; no new proposal")
        return reply
    try:
        task_id, requirement = _propose(app, report.incident.incident_id, check=shlex.join(request.argv), by_watch=True,
                                        acknowledged=request.acknowledged_dirty_hash or None,
                                        key=f"{mutation.key}:propose")
    except DirtyTreeNotAcknowledgedError as error:
        reply.proposal_note = (f"no task proposed: the checkout has {error.change_count} uncommitted change(s) "
                               f"not acknowledged (list {error.current_hash}); the next failing tick tries again")
        return reply
    reply.proposed_task_id, reply.requirement = task_id.value, requirement
    reply.incident.CopyFrom(incident_view(coordinator.show_incident(app.db, report.incident.incident_id).incident))
    if budget is not None:
        _auto_plan(app, reply, task_id, budget, key=mutation.key)
    return reply


def _auto_plan(app: CoordinatorApp, reply: pb.WatchTickReply, task_id: TaskId, budget: Money, *, key: str) -> None:
    """The proposed draft's hard budget, then its plan drafted under one of the app's planning slots (a burst of
    ticks waits for one: at most the active-task limit of plan drafts, so of planning calls, at once). A stop
    named while drafting (the terminal's second Ctrl-C, in process) cancels the draft: the task is paused with the
    reason recorded, no plan, the call under way settled — said in the reply's note."""
    budgets = BudgetService(app.db)
    budgets.set_budget(task_id, hard_limit=budget, expected_revision=None, idempotency_key=f"{key}:budget")
    with app.planning_slots:
        try:
            draft_plan(app, task_id, key=f"{key}:plan", stop_discards_reply=True)
        except DecisionNeededError:
            cause = app.stop_requested()
            if cause is None or task_service(app).show(task_id).task.state is not TaskState.PAUSED:
                raise  # a refusal of the gateway (budget, endpoint, rung): the caller hears it as it is
            reply.proposal_note = (f"the plan draft was cancelled ({cause}): task {task_id} is paused with no plan; "
                                   f"`codeflux task resume {task_id}` drafts it again")
    plan = task_service(app).show(task_id).plan
    reply.plan_revision = 0 if plan is None else plan.revision
    summary = budgets.summary(task_id)
    reply.planning_spent_minor = (summary.spent_known + summary.reserved_known).minor


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:

    def report(ctx: CallContext, request: pb.ReportIncidentRequest) -> pb.IncidentReport:
        mutation = mutation_of(ctx, "Report", request.control)
        source = _source(request.source)
        if not request.text.strip():
            raise InvalidValueError(kind="incident text", reason="it is empty; give a traceback or a log excerpt")
        if len(request.text) > MAX_INCIDENT_TEXT_CHARS:
            raise InvalidValueError(kind="incident text", reason=f"at most {MAX_INCIDENT_TEXT_CHARS} characters")
        done = _report(app, root=request.repository_root, text=request.text, source=source, key=mutation.key)
        return pb.IncidentReport(incident=incident_view(done.incident), created=done.created,
                                 regressed=done.regressed, occurrence_id=done.occurrence_id)

    def list_incidents(ctx: CallContext, request: pb.ListIncidentsRequest) -> pb.IncidentList:
        limit = request.limit or 100
        if not 1 <= limit <= 500:
            raise InvalidValueError(kind="limit", reason="between 1 and 500")
        state = _state(request.state)
        repository_id = _known_repository(app, request.repository_root) if request.repository_root else None
        if request.repository_root and repository_id is None:
            return pb.IncidentList()  # a repository codeflux never recorded has no incidents
        found = coordinator.list_incidents(app.db, repository_id=repository_id, state=state, limit=limit)
        return pb.IncidentList(incidents=[incident_view(i) for i in found])

    def show(ctx: CallContext, request: pb.ShowIncidentRequest) -> pb.IncidentDetail:
        count = request.occurrences or 5
        if not 1 <= count <= 100:
            raise InvalidValueError(kind="occurrences", reason="between 1 and 100")
        return detail_view(coordinator.show_incident(app.db, parse_incident_id(request.incident_id),
                                                     occurrences=count))

    def dismiss(ctx: CallContext, request: pb.DismissIncidentRequest) -> pb.IncidentDetail:
        mutation = mutation_of(ctx, "Dismiss", request.control)
        incident_id = parse_incident_id(request.incident_id)
        reason = parse_dismiss_reason(request.reason)
        return detail_view(coordinator.dismiss_incident(app.db, incident_id, reason=reason,
                                                        idempotency_key=mutation.key))

    def propose(ctx: CallContext, request: pb.ProposeIncidentTaskRequest) -> pb.IncidentProposal:
        mutation = mutation_of(ctx, "Propose", request.control)
        incident_id = parse_incident_id(request.incident_id)
        task_id, requirement = _propose(app, incident_id, check=_check(request.check), by_watch=False,
                                        acknowledged=request.acknowledged_dirty_hash or None, key=mutation.key)
        return pb.IncidentProposal(detail=detail_view(coordinator.show_incident(app.db, incident_id)),
                                   task_id=task_id.value, requirement=requirement)

    return [
        UnaryMethod(name=method_name(_SERVICE, "Report"), request_type=pb.ReportIncidentRequest,
                    response_type=pb.IncidentReport, handler=report, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "List"), request_type=pb.ListIncidentsRequest,
                    response_type=pb.IncidentList, handler=list_incidents),
        UnaryMethod(name=method_name(_SERVICE, "Show"), request_type=pb.ShowIncidentRequest,
                    response_type=pb.IncidentDetail, handler=show),
        UnaryMethod(name=method_name(_SERVICE, "Dismiss"), request_type=pb.DismissIncidentRequest,
                    response_type=pb.IncidentDetail, handler=dismiss, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "Propose"), request_type=pb.ProposeIncidentTaskRequest,
                    response_type=pb.IncidentProposal, handler=propose, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "WatchTick"), request_type=pb.WatchTickRequest,
                    response_type=pb.WatchTickReply, handler=lambda ctx, request: _watch_tick(app, ctx, request),
                    mutating=True),
    ]
