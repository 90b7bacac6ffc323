"""Reading the event journal: what the services replay to the browser and the CLI.

Every session's events are numbered 1, 2, … without gaps; these functions read committed events only, each
decoded once into its typed payload (an event of a kind this codeflux does not know keeps its stored payload).
Writing stays with the coordinator code that changes an aggregate (one transaction per outcome).

- :func:`read_session_events` — a page of a session's events after a sequence (up to a bound);
- :func:`read_session_head` — the session's last committed sequence (``None`` when there is no such session);
- :func:`latest_session_event` — the newest event of one of the given kinds;
- :func:`read_session_graph_facts` — every committed event of one session narrowed to what the execution graph
  shows, in one query (no payload decoded into its typed event), and, in the same snapshot, the incidents whose
  state rows name the task (issue 22: the graph links an incident to the task proposed from it and fixed by it);
- :func:`read_every_system_event` — the whole system session (coordinator-wide facts, such as endpoint
  approvals), page by page;
- :data:`SYSTEM_SESSION_ID` — the id of that session.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from codeflux.domain.graph_facts import GraphFact, IncidentLink
from codeflux.domain.ids import TaskId
from codeflux.domain.incidents import IncidentState
from codeflux.store.database import Database, ReadView
from codeflux.store.events import (
    MAX_PAGE,
    SYSTEM_SESSION_ID,
    JournalEvent,
    StoredEventRow,
    latest_event,
    read_stored_event_rows_after,
    read_stored_events_after,
    session_head,
)
from codeflux.store.graph_facts import read_graph_facts
from codeflux.store.incidents import incidents_naming_task

__all__ = [
    "MAX_EVENT_PAGE",
    "SYSTEM_SESSION_ID",
    "JournalEvent",
    "StoredEventRow",
    "latest_session_event",
    "read_every_system_event",
    "read_session_event_rows",
    "read_session_events",
    "read_session_graph_facts",
    "read_session_head",
]

MAX_EVENT_PAGE: Final = MAX_PAGE
"""The most events one read returns."""


def read_session_events(
    db: Database, *, session_id: str, after_sequence: int, through_sequence: int | None = None, limit: int
) -> list[JournalEvent]:
    """Committed events of ``session_id`` in ``(after_sequence, through_sequence]`` (no upper bound when None),
    oldest first, at most ``limit`` (1..:data:`MAX_EVENT_PAGE`)."""
    return db.read(lambda view: read_stored_events_after(
        view, session_id=session_id, after_sequence=after_sequence, through_sequence=through_sequence, limit=limit))


def read_session_event_rows(
    db: Database, *, session_id: str, after_sequence: int, through_sequence: int | None = None, limit: int
) -> list[StoredEventRow]:
    """:func:`read_session_events` as stored rows, payloads not decoded (the session stream forwards them)."""
    return db.read(lambda view: read_stored_event_rows_after(
        view, session_id=session_id, after_sequence=after_sequence, through_sequence=through_sequence, limit=limit))


def read_session_head(db: Database, session_id: str) -> int | None:
    """The last committed sequence of ``session_id`` (0 before its first event); None if no such session."""
    return db.read(lambda view: session_head(view, session_id))


def latest_session_event(db: Database, *, session_id: str, kinds: Sequence[str]) -> JournalEvent | None:
    """The newest committed event of ``session_id`` whose kind is one of ``kinds``; None when there is none."""
    return db.read(lambda view: latest_event(view, session_id=session_id, kinds=kinds))


def read_session_graph_facts(db: Database, session_id: str, task_id: TaskId
                             ) -> tuple[list[GraphFact], list[IncidentLink]]:
    """Every committed event of ``session_id`` (the session of ``task_id``), oldest first, as the execution graph
    reads it, and the incidents whose state rows name ``task_id`` — one snapshot."""
    def read(view: ReadView) -> tuple[list[GraphFact], list[IncidentLink]]:
        links = [IncidentLink(incident_id=incident.incident_id.value, summary=incident.fingerprint.summary,
                              state=incident.state.state.value, occurrences=incident.occurrences,
                              proposed=any(s.state is IncidentState.TASK_PROPOSED for s in states),
                              fixed=any(s.state is IncidentState.FIXED for s in states),
                              regressed=any(s.state is IncidentState.REGRESSED for s in states))
                 for incident, states in incidents_naming_task(view, task_id)]
        return read_graph_facts(view, session_id), links

    return db.read(read)


def read_every_system_event(db: Database) -> Iterator[JournalEvent]:
    """Every committed event of the system session, oldest first, read one page at a time."""
    after = 0
    while True:
        page = read_session_events(db, session_id=SYSTEM_SESSION_ID, after_sequence=after, limit=MAX_EVENT_PAGE)
        yield from page
        if len(page) < MAX_EVENT_PAGE:
            return
        after = page[-1].sequence
