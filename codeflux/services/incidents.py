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
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.coordinator import incidents as coordinator
from codeflux.coordinator.incidents import IncidentDetail, ReportedRepository
from codeflux.coordinator.spending.model_access import pin_new_task
from codeflux.domain.errors import InvalidValueError, RepositoryNotUsableError
from codeflux.domain.ids import IncidentId, RepositoryId
from codeflux.domain.incidents import (
    MAX_INCIDENT_TEXT_CHARS,
    Incident,
    IncidentSource,
    IncidentState,
    draft_incident_requirement,
    parse_dismiss_reason,
)
from codeflux.gitwork.tracked_paths import tracked_paths_at_head
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import mutation_of, parse_request_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
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


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:

    def report(ctx: CallContext, request: pb.ReportIncidentRequest) -> pb.IncidentReport:
        mutation = mutation_of(ctx, "Report", request.control)
        source = _source(request.source)
        if not request.text.strip():
            raise InvalidValueError(kind="incident text", reason="it is empty; give a traceback or a log excerpt")
        if len(request.text) > MAX_INCIDENT_TEXT_CHARS:
            raise InvalidValueError(kind="incident text", reason=f"at most {MAX_INCIDENT_TEXT_CHARS} characters")
        snapshot = inspect_path(request.repository_root)
        repository = ReportedRepository(root=snapshot.root, identity=snapshot.identity,
                                        root_commits=tuple(snapshot.root_commits))
        done = coordinator.report_incident(app.db, snapshot=repository, repository_files=tracked_paths_at_head(
            snapshot.root), text=request.text, source=source, idempotency_key=mutation.key)
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
        check = _check(request.check)
        detail = coordinator.show_incident(app.db, incident_id, occurrences=1)
        incident = detail.incident
        snapshot = inspect_path(incident.repository_root)
        if coordinator.known_repository_id(app.db, snapshot.identity) != incident.repository_id:
            raise RepositoryNotUsableError(path="the incident's repository root", problem="not-a-repository",
                                          detail="the checkout there is another repository now")
        requirement = draft_incident_requirement(incident, newest_text=detail.occurrences[0].redacted_text,
                                                 check=check)
        title = f"Fix {incident.fingerprint.summary}"
        change = task_service(app).create_task(
            snapshot, requirement, title=title if len(title) <= 80 else title[:79] + "…",
            acknowledged_dirty_hash=request.acknowledged_dirty_hash or None, idempotency_key=mutation.key,
            also=pin_new_task(app.models, lambda tx, task_id: [
                coordinator.record_task_proposed(tx, incident_id, task_id, at_us=now_us())]))
        return pb.IncidentProposal(detail=detail_view(coordinator.show_incident(app.db, incident_id)),
                                   task_id=change.task_id.value, requirement=requirement)

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
    ]
