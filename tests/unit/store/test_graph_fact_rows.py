"""The execution graph's narrow read: what SQLite extracts from each stored payload is the record the typed event
gives (the same graph, byte for byte, in JSON and DOT) — on a demo-like run with rows the typed decoding rejects or
does not know, and on a generated 10,000-event task."""

from __future__ import annotations

import json
from pathlib import Path

from codeflux.domain.events import EventPayload
from codeflux.domain.execution_graph import graph_dot, graph_json, project_graph
from codeflux.domain.graph_facts import FACT_SLOTS, GraphFact, graph_facts_of_events
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database, Transaction
from codeflux.store.events import append_event
from codeflux.store.graph_facts import read_graph_facts
from codeflux.store.tasks import insert_task
from tests.fixtures.graph_runs import TASK, demo_like_run, graph_id, read_typed_journal, write_long_task


def _raw_event(tx: Transaction, session_id: str, kind: str, payload: dict[str, object]) -> None:
    """A row as an older or newer codeflux (or a damaged file) could hold it: the journal's own two statements,
    without the registry (append_event refuses anything but registered payloads)."""
    sequence = tx.execute("UPDATE sessions SET current_sequence = current_sequence + 1 WHERE id = ?"
                          " RETURNING current_sequence", (session_id,))[0][0]
    tx.execute("INSERT INTO events (session_id, sequence, kind, payload_version, payload_json, created_at_us)"
               " VALUES (?, ?, ?, 1, ?, 0)", (session_id, sequence, kind, json.dumps(payload)))


def _both_ways(db: Database, session_id: str) -> tuple[list[GraphFact], list[GraphFact]]:
    narrow = db.read(lambda view: read_graph_facts(view, session_id))
    typed = list(graph_facts_of_events((event.sequence, event.event) for event in read_typed_journal(db, session_id)))
    return narrow, typed


def _assert_same_graph(task_id: str, narrow: list[GraphFact], typed: list[GraphFact]) -> None:
    from_store, from_events = project_graph(task_id, narrow), project_graph(task_id, typed)
    assert graph_json(from_store) == graph_json(from_events)
    assert graph_dot(from_store) == graph_dot(from_events)


def test_the_stores_narrow_read_is_the_typed_events_record_on_a_demo_like_run(db: Database, tmp_path: Path) -> None:
    def write(tx: Transaction) -> str:
        session = insert_task(tx, task_id=TASK, repository_root=tmp_path / "repo", worktree=tmp_path / "wt",
                              state=TaskState.DRAFT).session_id
        for _, event in demo_like_run():
            if isinstance(event, EventPayload):
                append_event(tx, session_id=session, event=event)
        _raw_event(tx, session, "from-the-future", {"x": 1})
        _raw_event(tx, session, "tool-requested", {"request_id": graph_id("treq", 9), "tool": "run_command",
                                                   "operation": 7, "needs": "process", "outcome": True,
                                                   "decision_id": graph_id("dec", 9), "title": "\u2603 \u001f"})
        _raw_event(tx, session, "run-attempt-ended", {"task_id": TASK.value, "attempt": 1.5, "stopped_at": None,
                                                      "outcomes": {"b": [1], "a": {"n": None}}})
        _raw_event(tx, session, "task-state-changed", {"task_id": TASK.value, "to": ["validating"]})
        return session

    session = db.write(write)
    narrow, typed = _both_ways(db, session)
    assert narrow == typed
    assert len(narrow) == len(demo_like_run()) + 4  # its own task-created, every registered event, four raw rows
    assert all(len(fact.values) == FACT_SLOTS for fact in narrow)
    odd = next(fact for fact in narrow if fact.kind == "tool-requested" and fact.values[0] == graph_id("treq", 9))
    assert odd.values == (graph_id("treq", 9), "run_command", 7, "process", graph_id("dec", 9), 1)  # true is 1
    _assert_same_graph(TASK.value, narrow, typed)
    shown = {item.kind: item.count for item in project_graph(TASK.value, narrow).not_shown}
    assert shown == {"checkpoint-created": 1, "tool-output": 3, "from-the-future": 1}


def test_the_stores_narrow_read_gives_the_typed_graph_of_a_ten_thousand_event_task(db: Database,
                                                                                 tmp_path: Path) -> None:
    session = write_long_task(db, tmp_path, 10_000)
    narrow, typed = _both_ways(db, session)
    assert len(narrow) == 10_000 and narrow == typed
    _assert_same_graph(TASK.value, narrow, typed)
    graph = project_graph(TASK.value, narrow)
    assert len(graph.nodes) > 5000 and graph.through_sequence == 10_000


def test_a_session_without_events_reads_no_facts(db: Database) -> None:
    assert db.read(lambda view: read_graph_facts(view, "ses_" + "0" * 32)) == []
