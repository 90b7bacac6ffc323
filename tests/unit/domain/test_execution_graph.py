"""The execution graph projection: every event kind decided, deterministic output, the edges a run implies, the
disclaimer on every rendering, DOT text that escapes what the events carry, and the narrow records it is projected
from (typed events become the same records the store reads)."""

from __future__ import annotations

import json
import re

from codeflux.domain.events import (
    DecodedEvent,
    EventKind,
    EventPayload,
    UnknownEvent,
    decode_event,
    event_payload_keys,
)
from codeflux.domain.execution_graph import (
    DISCLAIMER,
    NOT_SHOWN_KINDS,
    PROJECTED_KINDS,
    EdgeKind,
    ExecutionGraph,
    NodeKind,
    graph_dot,
    graph_json,
    project_graph,
    with_incidents,
)
from codeflux.domain.graph_facts import (
    FACT_SLOTS,
    GRAPH_FIELDS,
    GraphFact,
    IncidentLink,
    fact_value,
    graph_facts_of_events,
)
from tests.fixtures.graph_runs import TASK, demo_like_run, graph_id


def _graph(events: list[tuple[int, DecodedEvent]]) -> ExecutionGraph:
    return project_graph(TASK.value, graph_facts_of_events(events))


def test_every_event_kind_is_projected_or_listed_as_not_shown() -> None:
    projected, not_shown = set(PROJECTED_KINDS), set(NOT_SHOWN_KINDS)
    assert projected.isdisjoint(not_shown)
    assert projected | not_shown == set(EventKind), set(EventKind) - projected - not_shown
    assert all(reason for reason in NOT_SHOWN_KINDS.values())


def test_the_same_events_give_the_same_bytes_and_a_reread_gives_the_same_graph() -> None:
    events = demo_like_run()
    first, second = _graph(events), _graph(list(events))
    assert graph_json(first) == graph_json(second) and graph_dot(first) == graph_dot(second)
    # through the stored form: every payload encoded and decoded again, as the journal gives it back
    reread = [(seq, decode_event(e.KIND.value, json.loads(json.dumps(e.to_payload()))))
              if isinstance(e, EventPayload) else (seq, e) for seq, e in events]
    assert graph_json(_graph(reread)) == graph_json(first)


def test_a_run_becomes_the_nodes_and_edges_it_implies() -> None:
    graph = _graph(demo_like_run())
    kinds = {node.id: node.kind for node in graph.nodes}
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    assert set(kinds.values()) == set(NodeKind) - {NodeKind.INCIDENT}  # incidents join later: with_incidents
    assert ("model:" + graph_id("mreq", 1), "plan:r1", EdgeKind.PRODUCED) in edges
    sent_back = next(n.id for n in graph.nodes if n.label == "plan revision 1 sent back")
    assert ("plan:r1", sent_back, EdgeKind.SENT_BACK) in edges
    assert (sent_back, "plan:r2", EdgeKind.CAUSED) in edges
    approved = next(n.id for n in graph.nodes if n.label == "plan revision 2 approved")
    assert ("plan:r2", "attempt:1", EdgeKind.USED) in edges and (approved, "attempt:1", EdgeKind.CAUSED) in edges
    edit, command, check = (f"request:{graph_id('treq', n)}" for n in (1, 2, 3))
    assert ("model:" + graph_id("mreq", 3), edit, EdgeKind.PRODUCED) in edges
    assert kinds[check] is NodeKind.CHECK and ("attempt:1", check, EdgeKind.CAUSED) in edges
    person = "decision:" + graph_id("dec", 1002)
    assert (command, person, EdgeKind.CAUSED) in edges
    # the person's decision, not the pending one
    assert (person, "execution:" + graph_id("exe", 2), EdgeKind.CAUSED) in edges
    verdicts = next(n.id for n in graph.nodes if n.kind is NodeKind.STAGE_VERDICTS)
    assert ("execution:" + graph_id("exe", 3), verdicts, EdgeKind.USED) in edges
    gate = next(n.id for n in graph.nodes if n.label == "atom-mutation sent attempt 1 back")
    assert ("attempt:1", gate, EdgeKind.SENT_BACK) in edges and (gate, "attempt:2", EdgeKind.CAUSED) in edges
    said = next(n for n in graph.nodes if n.id == "model:" + graph_id("mreq", 3))
    assert "said: I will fix <add>." in said.summary
    landed = next(n.id for n in graph.nodes if n.label == "landed on main")
    assert any(e.target == landed and e.kind is EdgeKind.USED and e.source.startswith("evidence:a2")
               for e in graph.edges)
    # every edge joins two nodes, from the earlier to the later (a request and its first decision share an event)
    first = {n.id: n.sequence for n in graph.nodes}
    # no node stands alone
    assert {n.id for n in graph.nodes} == {e.source for e in graph.edges} | {e.target for e in graph.edges}
    assert ("task:" + TASK.value, "model:" + graph_id("mreq", 1), EdgeKind.CAUSED) in edges
    assert all(first[e.source] <= first[e.target] for e in graph.edges)
    shown = {item.kind: item.count for item in graph.not_shown}
    assert shown == {"checkpoint-created": 1, "tool-output": 3, "from-the-future": 1}
    assert graph.through_sequence == len(demo_like_run())


def test_output_is_sorted_whatever_order_the_builder_met_things_in() -> None:
    graph = _graph(demo_like_run())
    assert [n.sequence for n in graph.nodes] == sorted(n.sequence for n in graph.nodes)
    keys = [(e.source, e.target, e.kind.value) for e in graph.edges]
    assert keys == sorted(keys)
    assert len({n.id for n in graph.nodes}) == len(graph.nodes)


def test_every_rendering_carries_the_disclaimer() -> None:
    graph = _graph(demo_like_run())
    assert graph.disclaimer == DISCLAIMER == "an explanation of what happened, not evidence that it is right"
    assert json.loads(graph_json(graph))["disclaimer"] == DISCLAIMER
    assert DISCLAIMER in graph_dot(graph)
    empty = _graph([])
    assert empty.nodes == () and DISCLAIMER in graph_dot(empty) and DISCLAIMER in graph_json(empty)


_DOT_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_LINE = re.compile(rf"^  (?:{_DOT_STRING}(?: -> {_DOT_STRING})? \[(?:\w+=(?:{_DOT_STRING}|\w+)(?:, )?)+\];"
                       rf"|label={_DOT_STRING};|labelloc=\"t\";|rankdir=TB;|node \[.*\];)$")


def test_dot_text_escapes_quotes_backslashes_and_line_breaks() -> None:
    graph = _graph(demo_like_run())
    lines = graph_dot(graph).splitlines()
    assert re.fullmatch(rf"digraph {_DOT_STRING} \{{", lines[0]) and lines[-1] == "}"
    for line in lines[1:-1]:
        assert _DOT_LINE.match(line), line
    task_line = next(line for line in lines if line.startswith('  "task:'))
    assert 'Fix \\"add\\" \\\\ now please' in task_line  # the title's quote and backslash escaped, line break flat


def test_the_graph_reads_named_payload_keys_of_exactly_the_kinds_it_shows() -> None:
    assert set(GRAPH_FIELDS) == set(PROJECTED_KINDS)
    for kind, keys in GRAPH_FIELDS.items():
        assert set(keys) <= set(event_payload_keys(kind)), kind
    assert max(len(keys) for keys in GRAPH_FIELDS.values()) == FACT_SLOTS


def test_a_typed_event_becomes_its_stored_payloads_fields() -> None:
    facts = list(graph_facts_of_events(demo_like_run()))
    assert all(len(fact.values) == FACT_SLOTS for fact in facts)
    requested = next(fact for fact in facts if fact.kind == "tool-requested")
    assert requested.values == (graph_id("treq", 1), "edit_file", graph_id("op", 1), '["process"]', graph_id("dec", 1),
                                "automatic")
    output = next(fact for fact in facts if fact.kind == "tool-output")
    assert output.values == (None,) * FACT_SLOTS  # a kind the graph does not show carries nothing
    assert [fact_value(v) for v in (True, 3, 1.5, None, "x", {"b": 1, "a": [2]})] == [1, 3, 1.5, None, "x",
                                                                                       '{"b":1,"a":[2]}']


def test_a_payload_that_does_not_fit_its_kind_is_drawn_from_the_fields_the_graph_reads() -> None:
    """A stored row the typed decoding rejects (here: a wrong ``outcome`` type the graph shows, an unknown
    ``to`` state, verdicts that are not pairs) still gives nodes, never an error; the store's read gives it the
    same record (tests/unit/store/test_graph_fact_rows.py)."""
    request = graph_id("treq", 9)
    odd = [(1, decode_event("task-state-changed", {"task_id": TASK.value, "from": "draft", "to": "sideways",
                                                   "revision": 2})),
           (2, decode_event("tool-requested", {"request_id": request, "tool": "run_command", "operation": 7,
                                               "needs": "process", "decision_id": graph_id("dec", 9), "outcome": 3})),
           (3, decode_event("stage-verdicts-recorded", {"task_id": TASK.value, "attempt": 1, "stages": [1, [2]]})),
           (4, UnknownEvent(kind="tool-output", payload={"text": 5}, problem="does not fit"))]
    assert all(isinstance(event, UnknownEvent) for _, event in odd)
    graph = _graph(odd)
    nodes = {node.id: node for node in graph.nodes}
    assert nodes[f"request:{request}"].summary == "needs nothing; operation 7"
    assert nodes["decision:" + graph_id("dec", 9)].label == "decision: 3"
    assert not any(node.kind is NodeKind.STAGE_VERDICTS for node in graph.nodes)
    assert {item.kind: item.count for item in graph.not_shown} == {"tool-output": 1}
    assert graph.through_sequence == 4


def test_facts_in_any_container_give_the_same_graph() -> None:
    facts = list(graph_facts_of_events(demo_like_run()))
    assert graph_json(project_graph(TASK.value, facts)) == graph_json(project_graph(TASK.value, iter(facts)))
    assert graph_json(project_graph(TASK.value, [GraphFact(*fact) for fact in facts])) == graph_json(_graph(
        demo_like_run()))


def _incident(number: int, *, proposed: bool = True, fixed: bool = False, regressed: bool = False) -> IncidentLink:
    return IncidentLink(incident_id=f"inc_{number:010d}", summary=f"TypeError in pkg/calc.py:add: case {number}",
                        state="regressed" if regressed else "fixed" if fixed else "task-proposed", occurrences=number,
                        proposed=proposed, fixed=fixed, regressed=regressed)


def test_an_incident_comes_before_the_task_it_caused_and_points_at_the_landing_that_fixed_it() -> None:
    plain = _graph(demo_like_run())
    links = [_incident(2, fixed=True, regressed=True), _incident(1), _incident(3, proposed=False)]
    graph = with_incidents(plain, links)
    first = {n.id: n.sequence for n in graph.nodes}
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    task, landed = "task:" + TASK.value, next(n.id for n in graph.nodes if n.label == "landed on main")
    one, two, three = (f"incident:inc_{n:010d}" for n in (1, 2, 3))
    assert [n.id for n in graph.nodes[:3]] == [one, two, three] and {first[one], first[two], first[three]} == {0}
    assert {(one, task, EdgeKind.CAUSED), (two, task, EdgeKind.CAUSED), (two, landed, EdgeKind.FIXED_BY),
            (three, task, EdgeKind.CAUSED)} <= edges
    assert (three, landed, EdgeKind.FIXED_BY) not in edges
    assert graph.nodes[1].summary == ("now regressed; 2 occurrence(s); this task was proposed from it; accepting this "
                                      "task fixed it; seen again after this task's fix (regressed)")
    # the graph's rules still hold: every edge forward, no node alone, sorted, the task's events only counted
    assert all(first[e.source] <= first[e.target] for e in graph.edges)
    assert {n.id for n in graph.nodes} == {e.source for e in graph.edges} | {e.target for e in graph.edges}
    assert [(e.source, e.target, e.kind.value) for e in graph.edges] == sorted(
        (e.source, e.target, e.kind.value) for e in graph.edges)
    assert graph.through_sequence == plain.through_sequence and graph.nodes[3:] == plain.nodes
    assert with_incidents(plain, []) == plain
    assert graph_json(with_incidents(plain, [_incident(1), _incident(2, fixed=True)])) == graph_json(
        with_incidents(plain, [_incident(2, fixed=True), _incident(1)]))
    assert 'shape=octagon' in graph_dot(graph)
