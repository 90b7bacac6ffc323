"""Incidents: a reported failure becomes a fingerprinted incident of its repository (issue 22).

* :func:`report_incident` — redact the text (:func:`codeflux.credentials.redaction.redact_for_storage`: every
  stored provider key loaded into the redactor first, then the key patterns), fingerprint the *redacted* text
  against the paths the repository tracks, and in one transaction: the repository row (recorded the first time
  it is seen), the incident (new) or one more occurrence of it, a ``regressed`` state when the incident was
  ``fixed``, its event, and the idempotency record. Nothing of the text reaches SQLite unredacted: the
  normalised message kept with the fingerprint is taken from the redacted text too.
* :func:`dismiss_incident` — a person's decision with a reason: a state row and its event, one transaction.
* :func:`list_incidents` / :func:`show_incident` — read views.

Incident events go to the system session (an incident belongs to a repository, not to a task).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.credentials.redaction import redact_for_storage
from codeflux.domain.events import (
    IncidentDismissed,
    IncidentFixed,
    IncidentNew,
    IncidentRecurred,
    IncidentRegressed,
    IncidentTaskProposed,
    RepositoryRegistered,
)
from codeflux.domain.ids import IncidentId, RepositoryId, TaskId
from codeflux.domain.incidents import (
    Incident,
    IncidentOccurrence,
    IncidentSource,
    IncidentState,
    IncidentStateEntry,
    fingerprint_incident,
    may_propose_again,
    next_incident_state,
    state_after_occurrence,
)
from codeflux.domain.tasks import Actor
from codeflux.store import incidents as rows
from codeflux.store import repositories as repository_rows
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import SYSTEM_SESSION_ID, JournalEvent, append_event
from codeflux.store.idempotency import run_idempotent
from codeflux.store.provider_credentials import list_provider_credential_references
from codeflux.store.task_records import require_task_record

__all__ = [
    "IncidentDetail",
    "IncidentReport",
    "ReportedRepository",
    "dismiss_incident",
    "known_repository_id",
    "list_incidents",
    "record_incidents_fixed",
    "record_task_proposed",
    "report_incident",
    "show_incident",
]

_SCOPE_REPORT: Final = "incident-report"
_SCOPE_DISMISS: Final = "incident-dismiss"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportedRepository:
    """The checkout a failure was reported for, as the caller just observed it (top level, identity, root commits)."""

    root: Path
    identity: str
    root_commits: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentReport:
    """What one report did: the incident as it is now, and whether the report created it or made it regress."""

    incident: Incident
    occurrence_id: int
    created: bool
    regressed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentDetail:
    incident: Incident
    history: tuple[IncidentStateEntry, ...]
    occurrences: tuple[IncidentOccurrence, ...]


def _ensure_repository(tx: Transaction, snapshot: ReportedRepository, *, at_us: int, entropy: bytes) -> RepositoryId:
    # The same rule as TaskService's: a repository row is recorded the first time its identity is seen.
    existing = repository_rows.repository_by_identity(tx, snapshot.identity)
    if existing is not None:
        return existing.repository_id
    row = repository_rows.insert_repository(
        tx, repository_id=RepositoryId.from_entropy(entropy), root=snapshot.root, identity=snapshot.identity,
        root_commits=snapshot.root_commits, at_us=at_us)
    append_event(tx, session_id=SYSTEM_SESSION_ID, event=RepositoryRegistered(
        repository_id=row.repository_id, root=str(row.root), identity=row.identity))
    return row.repository_id


def report_incident(
    db: Database, *, snapshot: ReportedRepository, repository_files: frozenset[str], text: str,
    source: IncidentSource, idempotency_key: str,
    entropy: Callable[[], bytes] = lambda: os.urandom(16), clock: Callable[[], int] = now_us,
) -> IncidentReport:  # fmt: skip
    """Record ``text`` (a traceback or a log excerpt) reported for the repository ``snapshot`` shows; see the
    module docstring. An identical retry under ``idempotency_key`` returns the first report's outcome."""
    providers = [reference.provider for reference in list_provider_credential_references(db)]
    redacted = redact_for_storage(text, providers=providers)
    fingerprint = fingerprint_incident(redacted, repository_files=repository_files)
    request = {"repository": snapshot.identity, "source": source.value,
               "text_sha256": hashlib.sha256(redacted.encode()).hexdigest()}

    def record(tx: Transaction) -> Mapping[str, object]:
        at = clock()
        repository_id = _ensure_repository(tx, snapshot, at_us=at, entropy=entropy())
        known = rows.incident_by_fingerprint(tx, repository_id, fingerprint.digest)
        if known is None:
            incident_id = IncidentId.from_entropy(entropy())
            rows.insert_incident(tx, incident_id=incident_id, repository_id=repository_id, fingerprint=fingerprint,
                                 at_us=at)
            rows.insert_incident_state(tx, incident_id=incident_id, sequence=1, state=IncidentState.NEW,
                                       actor=Actor.SYSTEM, reason=f"first reported ({source.value})", task_id=None,
                                       at_us=at)
            occurrence = rows.insert_occurrence(tx, incident_id=incident_id, source=source, redacted_text=redacted,
                                                at_us=at)
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentNew(
                incident_id=incident_id, repository_id=repository_id, fingerprint=fingerprint.digest,
                summary=fingerprint.summary, source=source.value))
            return {"incident_id": incident_id.value, "occurrence_id": occurrence, "created": True,
                    "regressed": False}
        occurrence = rows.insert_occurrence(tx, incident_id=known.incident_id, source=source, redacted_text=redacted,
                                            at_us=at)
        count = known.occurrences + 1
        regressed = state_after_occurrence(known.state.state)
        if regressed is None:
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentRecurred(
                incident_id=known.incident_id, occurrences=count, state=known.state.state.value, source=source.value))
            return {"incident_id": known.incident_id.value, "occurrence_id": occurrence, "created": False,
                    "regressed": False}
        fixer = known.state.task_id
        reason = "seen again after the fix" + ("" if fixer is None else f" of task {fixer.value}")
        rows.insert_incident_state(tx, incident_id=known.incident_id, sequence=known.state.sequence + 1,
                                   state=regressed, actor=Actor.SYSTEM, reason=reason, task_id=fixer, at_us=at)
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentRegressed(
            incident_id=known.incident_id, task_id=fixer, occurrences=count))
        return {"incident_id": known.incident_id.value, "occurrence_id": occurrence, "created": False,
                "regressed": True}

    def work(tx: Transaction) -> IncidentReport:
        outcome = run_idempotent(tx, scope=_SCOPE_REPORT, key=idempotency_key, request=request,
                                 work=lambda: record(tx))
        incident = rows.incident_by_id(tx, IncidentId.parse(str(outcome["incident_id"])))
        return IncidentReport(incident=incident, occurrence_id=int(str(outcome["occurrence_id"])),
                              created=bool(outcome["created"]), regressed=bool(outcome["regressed"]))

    return db.write(work)


def dismiss_incident(db: Database, incident_id: IncidentId, *, reason: str, idempotency_key: str,
                     clock: Callable[[], int] = now_us) -> IncidentDetail:
    """A person dismisses ``incident_id`` with ``reason`` (already parsed); refused with
    :class:`TransitionNotAllowedError` from a state that cannot be dismissed (dismissed, fixed)."""

    def record(tx: Transaction) -> Mapping[str, object]:
        incident = rows.incident_by_id(tx, incident_id)
        to = next_incident_state(incident.state.state, IncidentState.DISMISSED)
        rows.insert_incident_state(tx, incident_id=incident_id, sequence=incident.state.sequence + 1, state=to,
                                   actor=Actor.USER, reason=reason, task_id=None, at_us=clock())
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentDismissed(
            incident_id=incident_id, from_state=incident.state.state.value, reason=reason))
        return {"incident_id": incident_id.value}

    def work(tx: Transaction) -> None:
        run_idempotent(tx, scope=_SCOPE_DISMISS, key=idempotency_key,
                       request={"incident_id": incident_id.value, "reason": reason}, work=lambda: record(tx))

    db.write(work)
    return show_incident(db, incident_id)


def known_repository_id(db: Database, identity: str) -> RepositoryId | None:
    """The id codeflux recorded for the repository of ``identity``; None when it never recorded it."""
    row = db.read(lambda view: repository_rows.repository_by_identity(view, identity))
    return None if row is None else row.repository_id


def list_incidents(db: Database, *, repository_id: RepositoryId | None, state: IncidentState | None,
                   limit: int) -> list[Incident]:
    """Incidents, most recently seen first (see :func:`codeflux.store.incidents.list_incidents`)."""
    return db.read(lambda view: rows.list_incidents(view, repository_id=repository_id, state=state, limit=limit))


def show_incident(db: Database, incident_id: IncidentId, *, occurrences: int = 5) -> IncidentDetail:
    """``incident_id`` with every state it entered and its newest ``occurrences`` reports."""
    return db.read(lambda view: IncidentDetail(
        incident=rows.incident_by_id(view, incident_id),
        history=tuple(rows.incident_states(view, incident_id)),
        occurrences=tuple(rows.incident_occurrences(view, incident_id, limit=occurrences))))


def record_task_proposed(tx: Transaction, incident_id: IncidentId, task_id: TaskId, *, at_us: int,
                         by_watch: bool = False) -> JournalEvent:
    """In the transaction that created the draft ``task_id`` from ``incident_id``: the incident's
    ``task-proposed`` state naming the task, and its event — by the person (Propose), or by codeflux when
    ``codeflux watch`` proposed it on its own (``by_watch``). Refused (:class:`TransitionNotAllowedError`) unless
    the incident is new or regressed, or proposed with a task that ended without landing (cancelled, rolled back):
    one open proposal per incident."""
    incident = rows.incident_by_id(tx, incident_id)
    current = incident.state
    if not (current.state is IncidentState.TASK_PROPOSED and current.task_id is not None
            and may_propose_again(require_task_record(tx, current.task_id).state)):
        next_incident_state(current.state, IncidentState.TASK_PROPOSED)
    rows.insert_incident_state(tx, incident_id=incident_id, sequence=current.sequence + 1,
                               state=IncidentState.TASK_PROPOSED, actor=Actor.SYSTEM if by_watch else Actor.USER,
                               reason=f"task {task_id.value} proposed" + (" by `codeflux watch`" if by_watch else ""),
                               task_id=task_id,
                               at_us=at_us)
    return append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentTaskProposed(incident_id=incident_id,
                                                                                     task_id=task_id))


def record_incidents_fixed(tx: Transaction, task_id: TaskId, *, at_us: int) -> list[JournalEvent]:
    """In the transaction that accepted ``task_id``: every incident proposed to it becomes ``fixed`` naming the
    task, with its event (none when the task was not proposed from an incident)."""
    events = []
    for incident in rows.incidents_proposed_to(tx, task_id):
        to = next_incident_state(incident.state.state, IncidentState.FIXED)
        rows.insert_incident_state(tx, incident_id=incident.incident_id, sequence=incident.state.sequence + 1,
                                   state=to, actor=Actor.SYSTEM, reason=f"task {task_id.value} accepted",
                                   task_id=task_id, at_us=at_us)
        events.append(append_event(tx, session_id=SYSTEM_SESSION_ID, event=IncidentFixed(
            incident_id=incident.incident_id, task_id=task_id)))
    return events
