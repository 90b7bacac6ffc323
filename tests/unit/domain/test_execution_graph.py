"""The execution graph projection: every event kind decided, deterministic output, the edges a run implies, the
disclaimer on every rendering, and DOT text that escapes what the events carry."""

from __future__ import annotations

import json
import re

from codeflux.domain.events import (
    AgentMessage,
    AttemptSentBack,
    AuthorityDecided,
    CheckpointCreated,
    DecodedEvent,
    DeliveryRecorded,
    EventKind,
    EventPayload,
    ModelCallFinished,
    ModelCallPlanned,
    ModelCallStarted,
    PlanApproved,
    PlanRevisionRecorded,
    PlanSentBack,
    RunAttemptEnded,
    RunAttemptOpened,
    SettlementMove,
    StageVerdictsRecorded,
    TaskAccepted,
    TaskCreated,
    TaskStateChanged,
    ToolExecutionFinished,
    ToolExecutionIntended,
    ToolOutput,
    ToolRequested,
    UnknownEvent,
    decode_event,
)
from codeflux.domain.execution_graph import (
    DISCLAIMER,
    NOT_SHOWN_KINDS,
    PROJECTED_KINDS,
    EdgeKind,
    NodeKind,
    graph_dot,
    graph_json,
    project_graph,
)
from codeflux.domain.ids import ApprovalId, DecisionId, RunId, TaskId, ToolRequestId
from codeflux.domain.pipeline.outcomes import StageOutcome
from codeflux.domain.tasks import TaskState

TASK = TaskId.parse("tsk_" + "1" * 32)
PLAN_SHA = "a" * 64


def _id(prefix: str, n: int) -> str:
    return f"{prefix}_{n:032x}"


def _model_call(n: int) -> list[EventPayload]:
    request = _id("mreq", n)
    return [ModelCallPlanned(request_id=request, provider="scripted", model="m", rung="cheap:low", reserved="$0.00",
                             reserved_minor=0, currency="USD", price_snapshot_id=1),
            ModelCallStarted(request_id=request),
            ModelCallFinished(request_id=request, state="succeeded", cost="$0.00",
                              ledger=(SettlementMove(kind="settle", amount_minor=0),), spent="$0.00",
                              remaining="$1.00")]


def _tool(n: int, tool: str, *, outcome: str, decided: bool, check: bool = False) -> list[EventPayload]:
    request, execution = ToolRequestId.parse(_id("treq", n)), _id("exe", n)
    events: list[EventPayload] = [ToolRequested(request_id=request, tool=tool, operation=_id("op", n),
                                                needs=("process",), decision_id=DecisionId.parse(_id("dec", n)),
                                                outcome=outcome)]
    approval = ApprovalId.parse(_id("apr", n))
    if decided:
        events.append(AuthorityDecided(request_id=request, decision_id=DecisionId.parse(_id("dec", n + 1000)),
                                       outcome="allowed-once", decided_by="user", approval_id=approval))
    events += [ToolExecutionIntended(request_id=request, execution_id=execution, operation=_id("op", n),
                                     consumed_approval_id=approval if decided else None),
               ToolOutput(request_id=request, execution_id=execution, stream="stdout", text="ok\n", offset=0),
               ToolExecutionFinished(request_id=request, execution_id=execution, state="succeeded",
                                     failure_kind=None, exit_code=0 if not check else 1)]
    return events


def _state(to: TaskState, frm: TaskState, revision: int) -> TaskStateChanged:
    return TaskStateChanged(task_id=TASK, from_state=frm, to_state=to, revision=revision)


def demo_like_run() -> list[tuple[int, DecodedEvent]]:
    """A task as codeflux journals one: a plan sent back and redrawn, an attempt with a model call, an edit, a
    command a person allowed, checks while validating, verdicts, a gate sending the attempt back, a second
    attempt, the evidence and the landing."""
    s = TaskState
    events: list[DecodedEvent] = [
        TaskCreated(task_id=TASK, state=s.DRAFT, title='Fix "add" \\ now\nplease'),
        *_model_call(1),
        PlanRevisionRecorded(task_id=TASK, revision=1, sha256=PLAN_SHA, created_by="scripted"),
        PlanSentBack(task_id=TASK, revision=1, sha256=PLAN_SHA, by="user"),
        *_model_call(2),
        PlanRevisionRecorded(task_id=TASK, revision=2, sha256="b" * 64, created_by="scripted"),
        PlanApproved(task_id=TASK, revision=2, sha256="b" * 64, by="user"),
        _state(s.RUNNING, s.READY, 4),
        RunAttemptOpened(task_id=TASK, attempt=1, run_id=RunId.parse(_id("run", 1)), plan_revision=2,
                         plan_sha256="b" * 64),
        CheckpointCreated(task_id=TASK, sequence=1, trigger="plan-approved", commit="c" * 40, ref="refs/x",
                          head="d" * 40, diff_identity="e" * 64, plan_revision=2, attempt=1),
        *_model_call(3),
        AgentMessage(conversation_id=1, attempt=1, text="I will fix <add>.", truncated=False, redacted=False),
        *_tool(1, "edit_file", outcome="automatic", decided=False),
        *_tool(2, "run_command", outcome="pending", decided=True),
        _state(s.VALIDATING, s.RUNNING, 5),
        *_tool(3, "run_command", outcome="allowed-once", decided=False, check=True),
        StageVerdictsRecorded(task_id=TASK, attempt=1, stages=(("contracts", StageOutcome.SATISFIED),
                                                                ("atom-mutation", StageOutcome.FAILED))),
        AttemptSentBack(task_id=TASK, attempt=1, gate="atom-mutation", rung="cheap:low", fingerprint="f" * 64,
                        decision="stay"),
        RunAttemptEnded(task_id=TASK, attempt=1, stopped_at="atom-mutation", outcomes={StageOutcome.FAILED: 1}),
        RunAttemptOpened(task_id=TASK, attempt=2, run_id=RunId.parse(_id("run", 2)), plan_revision=2,
                         plan_sha256="b" * 64),
        *_model_call(4),
        StageVerdictsRecorded(task_id=TASK, attempt=2, stages=(("evidence-bundle", StageOutcome.SATISFIED),)),
        RunAttemptEnded(task_id=TASK, attempt=2, stopped_at="human-acceptance",
                        outcomes={StageOutcome.SATISFIED: 30, StageOutcome.SKIPPED: 7}),
        TaskAccepted(task_id=TASK, diff_identity="e" * 64, kind="fast-forward", branch="main",
                     previous_head="d" * 40, landed_head="9" * 40, task_commit="8" * 40),
        DeliveryRecorded(task_id=TASK, attempt=2, diff_identity="e" * 64, human_acceptance=StageOutcome.SATISFIED,
                         deliver=StageOutcome.SATISFIED, landed_commit="9" * 40),
        UnknownEvent(kind="from-the-future", payload={"x": 1}, problem="not known"),
    ]
    return list(enumerate(events, start=1))


def test_every_event_kind_is_projected_or_listed_as_not_shown() -> None:
    projected, not_shown = set(PROJECTED_KINDS), set(NOT_SHOWN_KINDS)
    assert projected.isdisjoint(not_shown)
    assert projected | not_shown == set(EventKind), set(EventKind) - projected - not_shown
    assert all(reason for reason in NOT_SHOWN_KINDS.values())


def test_the_same_events_give_the_same_bytes_and_a_reread_gives_the_same_graph() -> None:
    events = demo_like_run()
    first, second = project_graph(TASK.value, events), project_graph(TASK.value, list(events))
    assert graph_json(first) == graph_json(second) and graph_dot(first) == graph_dot(second)
    # through the stored form: every payload encoded and decoded again, as the journal gives it back
    reread = [(seq, decode_event(e.KIND.value, json.loads(json.dumps(e.to_payload()))))
              if isinstance(e, EventPayload) else (seq, e) for seq, e in events]
    assert graph_json(project_graph(TASK.value, reread)) == graph_json(first)


def test_a_run_becomes_the_nodes_and_edges_it_implies() -> None:
    graph = project_graph(TASK.value, demo_like_run())
    kinds = {node.id: node.kind for node in graph.nodes}
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    assert set(kinds.values()) == set(NodeKind)
    assert ("model:" + _id("mreq", 1), "plan:r1", EdgeKind.PRODUCED) in edges
    sent_back = next(n.id for n in graph.nodes if n.label == "plan revision 1 sent back")
    assert ("plan:r1", sent_back, EdgeKind.SENT_BACK) in edges
    assert (sent_back, "plan:r2", EdgeKind.CAUSED) in edges
    approved = next(n.id for n in graph.nodes if n.label == "plan revision 2 approved")
    assert ("plan:r2", "attempt:1", EdgeKind.USED) in edges and (approved, "attempt:1", EdgeKind.CAUSED) in edges
    edit, command, check = (f"request:{_id('treq', n)}" for n in (1, 2, 3))
    assert ("model:" + _id("mreq", 3), edit, EdgeKind.PRODUCED) in edges
    assert kinds[check] is NodeKind.CHECK and ("attempt:1", check, EdgeKind.CAUSED) in edges
    person = "decision:" + _id("dec", 1002)
    assert (command, person, EdgeKind.CAUSED) in edges
    assert (person, "execution:" + _id("exe", 2), EdgeKind.CAUSED) in edges  # the person's decision, not the pending
    verdicts = next(n.id for n in graph.nodes if n.kind is NodeKind.STAGE_VERDICTS)
    assert ("execution:" + _id("exe", 3), verdicts, EdgeKind.USED) in edges
    gate = next(n.id for n in graph.nodes if n.label == "atom-mutation sent attempt 1 back")
    assert ("attempt:1", gate, EdgeKind.SENT_BACK) in edges and (gate, "attempt:2", EdgeKind.CAUSED) in edges
    said = next(n for n in graph.nodes if n.id == "model:" + _id("mreq", 3))
    assert "said: I will fix <add>." in said.summary
    landed = next(n.id for n in graph.nodes if n.label == "landed on main")
    assert any(e.target == landed and e.kind is EdgeKind.USED and e.source.startswith("evidence:a2")
               for e in graph.edges)
    # every edge joins two nodes, from the earlier to the later (a request and its first decision share an event)
    first = {n.id: n.sequence for n in graph.nodes}
    # no node stands alone
    assert {n.id for n in graph.nodes} == {e.source for e in graph.edges} | {e.target for e in graph.edges}
    assert ("task:" + TASK.value, "model:" + _id("mreq", 1), EdgeKind.CAUSED) in edges
    assert all(first[e.source] <= first[e.target] for e in graph.edges)
    shown = {item.kind: item.count for item in graph.not_shown}
    assert shown == {"checkpoint-created": 1, "tool-output": 3, "from-the-future": 1}
    assert graph.through_sequence == len(demo_like_run())


def test_output_is_sorted_whatever_order_the_builder_met_things_in() -> None:
    graph = project_graph(TASK.value, demo_like_run())
    assert [n.sequence for n in graph.nodes] == sorted(n.sequence for n in graph.nodes)
    keys = [(e.source, e.target, e.kind.value) for e in graph.edges]
    assert keys == sorted(keys)
    assert len({n.id for n in graph.nodes}) == len(graph.nodes)


def test_every_rendering_carries_the_disclaimer() -> None:
    graph = project_graph(TASK.value, demo_like_run())
    assert graph.disclaimer == DISCLAIMER == "an explanation of what happened, not evidence that it is right"
    assert json.loads(graph_json(graph))["disclaimer"] == DISCLAIMER
    assert DISCLAIMER in graph_dot(graph)
    empty = project_graph(TASK.value, [])
    assert empty.nodes == () and DISCLAIMER in graph_dot(empty) and DISCLAIMER in graph_json(empty)


_DOT_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_LINE = re.compile(rf"^  (?:{_DOT_STRING}(?: -> {_DOT_STRING})? \[(?:\w+=(?:{_DOT_STRING}|\w+)(?:, )?)+\];"
                       rf"|label={_DOT_STRING};|labelloc=\"t\";|rankdir=TB;|node \[.*\];)$")


def test_dot_text_escapes_quotes_backslashes_and_line_breaks() -> None:
    graph = project_graph(TASK.value, demo_like_run())
    lines = graph_dot(graph).splitlines()
    assert re.fullmatch(rf"digraph {_DOT_STRING} \{{", lines[0]) and lines[-1] == "}"
    for line in lines[1:-1]:
        assert _DOT_LINE.match(line), line
    task_line = next(line for line in lines if line.startswith('  "task:'))
    assert 'Fix \\"add\\" \\\\ now please' in task_line  # the title's quote and backslash escaped, line break flat
