"""SQL of incidents: the fingerprinted failures, every occurrence (text already redacted) and every state.

Rows leave as :class:`~codeflux.domain.incidents.Incident` (state and occurrence count read from the fact rows),
:class:`~codeflux.domain.incidents.IncidentOccurrence` and :class:`~codeflux.domain.incidents.IncidentStateEntry`.
The stored fingerprint parts must still hash to the stored fingerprint, or the row is refused
(:class:`StoredValueUnknownError`). Every function works inside the caller's transaction or read view; the caller
redacts the text before :func:`insert_occurrence` (this module stores what it is given).
"""

from __future__ import annotations

import json
from typing import Final

from codeflux.domain.errors import NotFoundError, StoredValueUnknownError
from codeflux.domain.ids import IncidentId, RepositoryId, TaskId
from codeflux.domain.incidents import (
    Incident,
    IncidentFingerprint,
    IncidentOccurrence,
    IncidentSource,
    IncidentState,
    IncidentStateEntry,
    OwnFrame,
    TextShape,
    incident_fingerprint_of,
)
from codeflux.domain.tasks import Actor
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "incident_by_fingerprint",
    "incident_by_id",
    "incident_occurrences",
    "incident_states",
    "incidents_naming_task",
    "incidents_proposed_to",
    "insert_incident",
    "insert_incident_state",
    "insert_occurrence",
    "list_incidents",
]

# The incident, its repository's root, its newest state row and its occurrence summary, in one row.
_INCIDENT: Final = (
    "i.id, i.repository_id, r.root_path, i.fingerprint, i.shape, i.exception_type, i.frames_json, i.message,"
    " i.created_at_us, s.sequence, s.state, s.actor, s.reason, s.task_id, s.recorded_at_us,"
    " (SELECT COUNT(*) FROM incident_occurrences o WHERE o.incident_id = i.id),"
    " (SELECT MIN(reported_at_us) FROM incident_occurrences o WHERE o.incident_id = i.id),"
    " (SELECT MAX(reported_at_us) FROM incident_occurrences o WHERE o.incident_id = i.id) AS last_seen_us"
)
_FROM: Final = (
    " FROM incidents i JOIN repositories r ON r.id = i.repository_id"
    " JOIN incident_states s ON s.incident_id = i.id"
    " AND s.sequence = (SELECT MAX(sequence) FROM incident_states x WHERE x.incident_id = i.id)"
)


def _frames_json(frames: tuple[OwnFrame, ...]) -> str:
    return json.dumps([[f.path, f.function] for f in frames], ensure_ascii=False, separators=(",", ":"))


def _fingerprint(row: Row) -> IncidentFingerprint:
    incident_id, digest = str(row[0]), str(row[3])
    try:
        frames = tuple(OwnFrame(path=str(path), function=str(function)) for path, function in json.loads(str(row[6])))
    except (ValueError, TypeError):
        raise StoredValueUnknownError(kind="incident frames", value=incident_id) from None
    shape = decode_choice(TextShape, row[4], kind="incident text shape")
    fingerprint = incident_fingerprint_of(shape=shape, exception_type=str(row[5]), frames=frames, message=str(row[7]))
    if fingerprint.digest != digest:
        raise StoredValueUnknownError(kind="incident fingerprint", value=incident_id)
    return fingerprint


def _state(row: Row, offset: int) -> IncidentStateEntry:
    task = row[offset + 4]
    return IncidentStateEntry(
        sequence=int(str(row[offset])), state=decode_choice(IncidentState, row[offset + 1], kind="incident state"),
        actor=decode_choice(Actor, row[offset + 2], kind="incident actor"), reason=str(row[offset + 3]),
        task_id=None if task is None else TaskId.parse(str(task)), recorded_at_us=int(str(row[offset + 5])))

_NAMING_TASK: Final = " WHERE i.id IN (SELECT incident_id FROM incident_states WHERE task_id = ?) ORDER BY i.id"


def _incident(row: Row) -> Incident:
    return Incident(
        incident_id=IncidentId.parse(str(row[0])), repository_id=RepositoryId.parse(str(row[1])),
        repository_root=str(row[2]), fingerprint=_fingerprint(row), created_at_us=int(str(row[8])),
        state=_state(row, 9), occurrences=int(str(row[15])),
        first_seen_us=int(str(row[16] if row[16] is not None else row[8])),
        last_seen_us=int(str(row[17] if row[17] is not None else row[8])))


def insert_incident(tx: Transaction, *, incident_id: IncidentId, repository_id: RepositoryId,
                    fingerprint: IncidentFingerprint, at_us: int) -> None:
    """Record a new incident (its first state, ``new``, is the caller's :func:`insert_incident_state`)."""
    tx.execute(
        "INSERT INTO incidents (id, repository_id, fingerprint, shape, exception_type, frames_json, message,"
        " created_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (incident_id.value, repository_id.value, fingerprint.digest, fingerprint.shape.value,
         fingerprint.exception_type, _frames_json(fingerprint.frames), fingerprint.message, at_us))


def insert_occurrence(tx: Transaction, *, incident_id: IncidentId, source: IncidentSource, redacted_text: str,
                      at_us: int) -> int:
    """Record one report of ``incident_id`` (``redacted_text`` must already be redacted); its id."""
    rows = tx.execute("INSERT INTO incident_occurrences (incident_id, source, redacted_text, reported_at_us)"
                      " VALUES (?, ?, ?, ?) RETURNING id", (incident_id.value, source.value, redacted_text, at_us))
    return int(str(rows[0][0]))


def insert_incident_state(tx: Transaction, *, incident_id: IncidentId, sequence: int, state: IncidentState,
                          actor: Actor, reason: str, task_id: TaskId | None, at_us: int) -> IncidentStateEntry:
    """Record that ``incident_id`` entered ``state`` as its ``sequence``-th state (validated by the caller)."""
    tx.execute("INSERT INTO incident_states (incident_id, sequence, state, actor, reason, task_id, recorded_at_us)"
               " VALUES (?, ?, ?, ?, ?, ?, ?)",
               (incident_id.value, sequence, state.value, actor.value, reason,
                None if task_id is None else task_id.value, at_us))
    return IncidentStateEntry(sequence=sequence, state=state, actor=actor, reason=reason, task_id=task_id,
                              recorded_at_us=at_us)


def incident_by_fingerprint(view: ReadView, repository_id: RepositoryId, digest: str) -> Incident | None:
    """The incident of ``digest`` in ``repository_id``, if one was reported."""
    row = view.query_one(f"SELECT {_INCIDENT}{_FROM} WHERE i.repository_id = ? AND i.fingerprint = ?",
                         (repository_id.value, digest))
    return None if row is None else _incident(row)


def incident_by_id(view: ReadView, incident_id: IncidentId) -> Incident:
    """The incident ``incident_id``, or :class:`NotFoundError`."""
    row = view.query_one(f"SELECT {_INCIDENT}{_FROM} WHERE i.id = ?", (incident_id.value,))
    if row is None:
        raise NotFoundError(kind="incident", entity_id=incident_id.value)
    return _incident(row)


def list_incidents(view: ReadView, *, repository_id: RepositoryId | None, state: IncidentState | None,
                   limit: int) -> list[Incident]:
    """Incidents, most recently seen first: of one repository and one state when given; at most ``limit``."""
    where: list[str] = []
    params: list[str | int] = []
    if repository_id is not None:
        where.append("i.repository_id = ?")
        params.append(repository_id.value)
    if state is not None:
        where.append("s.state = ?")
        params.append(state.value)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = view.query_all(f"SELECT {_INCIDENT}{_FROM}{clause} ORDER BY last_seen_us DESC, i.id DESC LIMIT ?",
                          (*params, limit))
    return [_incident(row) for row in rows]


def incident_states(view: ReadView, incident_id: IncidentId) -> list[IncidentStateEntry]:
    """Every state ``incident_id`` entered, first first."""
    rows = view.query_all("SELECT sequence, state, actor, reason, task_id, recorded_at_us FROM incident_states"
                          " WHERE incident_id = ? ORDER BY sequence", (incident_id.value,))
    return [_state(row, 0) for row in rows]


def incident_occurrences(view: ReadView, incident_id: IncidentId, *, limit: int) -> list[IncidentOccurrence]:
    """The newest ``limit`` occurrences of ``incident_id``, newest first."""
    rows = view.query_all("SELECT id, source, redacted_text, reported_at_us FROM incident_occurrences"
                          " WHERE incident_id = ? ORDER BY id DESC LIMIT ?", (incident_id.value, limit))
    return [IncidentOccurrence(occurrence_id=int(str(row[0])),
                               source=decode_choice(IncidentSource, row[1], kind="incident source"),
                               redacted_text=str(row[2]), reported_at_us=int(str(row[3]))) for row in rows]


def incidents_proposed_to(view: ReadView, task_id: TaskId) -> list[Incident]:
    """The incidents whose current state is ``task-proposed`` naming ``task_id``."""
    rows = view.query_all(f"SELECT {_INCIDENT}{_FROM} WHERE s.state = ? AND s.task_id = ? ORDER BY i.id",
                          (IncidentState.TASK_PROPOSED.value, task_id.value))
    return [_incident(row) for row in rows]


def incidents_naming_task(view: ReadView, task_id: TaskId) -> list[tuple[Incident, list[IncidentStateEntry]]]:
    """Every incident one of whose state rows names ``task_id`` (proposed it, fixed by it, regressed after it),
    with those rows, first first; incidents by id."""
    rows = view.query_all("SELECT incident_id, sequence, state, actor, reason, task_id, recorded_at_us"
                          " FROM incident_states WHERE task_id = ? ORDER BY incident_id, sequence", (task_id.value,))
    named: dict[str, list[IncidentStateEntry]] = {}
    for row in rows:
        named.setdefault(str(row[0]), []).append(_state(row, 1))
    incidents = view.query_all(f"SELECT {_INCIDENT}{_FROM}{_NAMING_TASK}", (task_id.value,))
    return [(incident, named[incident.incident_id.value]) for incident in map(_incident, incidents)]
