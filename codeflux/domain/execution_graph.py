"""The execution graph of a task: a projection of its committed events into nodes and edges (issue 19 item 8).

The graph explains a run: which plan revision an attempt used, which model call was followed by which tool
request, who decided it, which execution ran, which checks came before which stage verdicts, and what was
delivered. It is **an explanation of what happened, not evidence that it is right** (:data:`DISCLAIMER`, carried
by every rendering); no gate reads it.

It is rebuilt from the events alone, deterministically: the same events give the same graph, byte for byte
(:func:`graph_json`). Node ids come from the ids the events carry (``treq_…``, ``exe_…``, ``mreq_…``,
``dec_…``) or from the event's sequence, never from a clock or a counter of this process; nodes are sorted by
the event that made them (in the order one event made them), edges by (source, target, kind).

Nodes (:class:`NodeKind`): the task, plan revisions, attempts, model calls, tool requests, decisions (of the
authority engine, on a plan, of a gate that sent an attempt back, of a person about an ambiguous effect),
executions, checks (tool requests the pipeline made while the task was validating), stage verdicts (one node
per recorded batch), evidence (an attempt's ledger outcomes when it ended) and delivery (patches kept,
landings, acceptance).

Edges (:class:`EdgeKind`), always from the earlier node to the later one:

- ``caused``: the source led to the target (a request to its decision, a decision to its execution);
- ``used``: the target used the source (an attempt its plan revision, a stage verdict the checks before it);
- ``produced``: the source produced the target (a model call the tool requests after it, an attempt its
  verdicts);
- ``sent-back``: the source was sent back (a plan revision or an attempt to the decision that sent it back).

Where an event does not name what came before it (a tool request does not name its model call), the edge
follows the journal's order: the model call of the same attempt just before it. That is how codeflux ran
(one loop, one call at a time), but it is the graph's reading, which is one more reason the graph is an
explanation and not proof.

Every event kind is either projected (:data:`PROJECTED_KINDS`) or not shown, with why
(:data:`NOT_SHOWN_KINDS`); a test checks the two cover :class:`~codeflux.domain.events.EventKind` exactly, so a
new kind forces a decision. Events a newer codeflux wrote (:class:`~codeflux.domain.events.UnknownEvent`) are
counted in :attr:`ExecutionGraph.not_shown`, like the kinds not shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from codeflux.domain.events import (
    AcceptConflicted,
    AcceptResolved,
    AcceptStarted,
    AgentMessage,
    AttemptSentBack,
    AuthorityDecided,
    DecodedEvent,
    DeliveryRecorded,
    EffectOutcomeRecorded,
    EventKind,
    ModelCallFinished,
    ModelCallPlanned,
    ModelCallReconciled,
    ModelCallRefused,
    ModelCallStarted,
    PatchStored,
    PlanApproved,
    PlanRevisionRecorded,
    PlanSentBack,
    RunAttemptEnded,
    RunAttemptOpened,
    StageVerdictsRecorded,
    TaskAccepted,
    TaskCreated,
    TaskStateChanged,
    ToolExecutionFinished,
    ToolExecutionIntended,
    ToolRequested,
    UnknownEvent,
)
from codeflux.domain.tasks import TaskState

__all__ = [
    "DISCLAIMER",
    "NOT_SHOWN_KINDS",
    "PROJECTED_KINDS",
    "EdgeKind",
    "ExecutionGraph",
    "GraphEdge",
    "GraphNode",
    "NodeKind",
    "NotShown",
    "graph_document",
    "graph_dot",
    "graph_json",
    "project_graph",
]

DISCLAIMER: Final = "an explanation of what happened, not evidence that it is right"
_MAX_TEXT: Final = 300


class NodeKind(StrEnum):
    TASK = "task"
    PLAN_REVISION = "plan-revision"
    ATTEMPT = "attempt"
    MODEL_CALL = "model-call"
    TOOL_REQUEST = "tool-request"
    DECISION = "decision"
    EXECUTION = "execution"
    CHECK = "check"
    STAGE_VERDICTS = "stage-verdicts"
    EVIDENCE = "evidence"
    DELIVERY = "delivery"


class EdgeKind(StrEnum):
    CAUSED = "caused"
    USED = "used"
    PRODUCED = "produced"
    SENT_BACK = "sent-back"


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphNode:
    """One node: ``sequence`` is the event that made it, ``sequences`` every event folded into it."""

    id: str
    kind: NodeKind
    sequence: int
    label: str
    summary: str
    sequences: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphEdge:
    source: str
    target: str
    kind: EdgeKind


@dataclass(frozen=True, slots=True, kw_only=True)
class NotShown:
    """``count`` events of ``kind`` are in the journal but not in the graph (``reason`` says why)."""

    kind: str
    count: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionGraph:
    task_id: str
    through_sequence: int
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    not_shown: tuple[NotShown, ...]
    disclaimer: str = DISCLAIMER


NOT_SHOWN_KINDS: Final[Mapping[EventKind, str]] = MappingProxyType({
    EventKind.REPOSITORY_REGISTERED: "a repository, not a step of the task",
    EventKind.DIRTY_TREE_ACKNOWLEDGED: "an acknowledgement before the task started, shown on the task screen",
    EventKind.CHECKPOINT_CREATED: "a recovery point, not a step of the run",
    EventKind.TOOL_OUTPUT: "live output; the execution node carries the result",
    EventKind.RECOVERY_ASSESSED: "a recovery assessment, shown on the recovery screen",
    EventKind.WORKTREE_REMOVED: "housekeeping of the task's worktree",
    EventKind.WORKTREE_KEPT: "housekeeping of the task's worktree",
    EventKind.BUDGET_SET: "money, shown with the budget",
    EventKind.BUDGET_ACKNOWLEDGED: "money, shown with the budget",
    EventKind.BUDGET_WARNING: "money, shown with the budget",
    EventKind.BUDGET_EXHAUSTED: "money, shown with the budget",
    EventKind.BUDGET_DEFAULT_SET: "a setting, not part of a task",
    EventKind.CLARIFICATION_POLICY_SET: "a setting, not part of a task",
    EventKind.PRICE_SET: "a setting, not part of a task",
    EventKind.ENDPOINT_APPROVED: "a setting, not part of a task",
    EventKind.LADDER_RUNG_APPROVED: "money, shown with the budget",
    EventKind.BROWSER_DECISION_REFUSED: "a refused browser request: nothing was decided",
    EventKind.INSTRUCTION_FILE_APPROVED: "a repository's instruction file approved: it belongs to the repository, "
                                         "not to one task's run",
    EventKind.INSTRUCTION_FILE_REVOKED: "an instruction file's approval revoked: it belongs to the repository, not to "
                                        "one task's run",
    EventKind.PROVIDER_CREDENTIAL_STORED: "a credential event, not part of a task",
    EventKind.PROVIDER_CREDENTIAL_DELETED: "a credential event, not part of a task",
    EventKind.LOGS_PURGED: "housekeeping, not part of a task",
    EventKind.STORE_DAMAGE_DETECTED: "about the store, not part of a task",
})
"""Every event kind the graph leaves out, with why."""

_UNKNOWN_REASON: Final = "an event kind this codeflux does not know (written by a newer one)"


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_TEXT else flat[: _MAX_TEXT - 1] + "…"


@dataclass(slots=True)
class _Node:
    id: str
    kind: NodeKind
    sequence: int
    label: str
    parts: list[str]
    sequences: list[int]


@dataclass(slots=True)
class _Builder:
    task_id: str
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: set[tuple[str, str, EdgeKind]] = field(default_factory=set)
    not_shown: dict[str, int] = field(default_factory=dict)
    task_node: str | None = None
    validating: bool = False
    attempt: str | None = None  # the open attempt's node
    last_attempt: str | None = None
    last_model_call: str | None = None  # the latest model call of the open attempt
    last_any_model_call: str | None = None
    planning_calls: list[str] = field(default_factory=list)  # model calls outside an attempt, before a plan
    plan_sent_back: str | None = None  # a plan decision that sent a revision back, not yet followed
    attempt_sent_back: str | None = None
    approvals: dict[int, str] = field(default_factory=dict)  # plan revision → its latest approval decision
    request_decision: dict[str, str] = field(default_factory=dict)  # request node → its latest decision node
    check_executions: list[str] = field(default_factory=list)  # finished check executions since the last verdicts
    verdicts: dict[str, list[str]] = field(default_factory=dict)  # attempt node → its verdict nodes
    last_evidence: str | None = None
    last_delivery: str | None = None

    def node(self, node_id: str, kind: NodeKind, sequence: int, label: str, *parts: str) -> str:
        found = self.nodes.get(node_id)
        if found is None:
            self.nodes[node_id] = _Node(node_id, kind, sequence, label, [p for p in parts if p], [sequence])
        else:
            self.fold(node_id, sequence, *parts)
        return node_id

    def fold(self, node_id: str, sequence: int, *parts: str) -> None:
        found = self.nodes[node_id]
        found.parts.extend(p for p in parts if p)
        if sequence not in found.sequences:
            found.sequences.append(sequence)

    def edge(self, source: str | None, target: str, kind: EdgeKind) -> None:
        if source is not None and source in self.nodes and source != target:
            self.edges.add((source, target, kind))

    def origin(self) -> str | None:
        """What a step with no named cause hangs from: the open attempt, else the task."""
        return self.attempt or self.task_node


_Handler = Callable[[_Builder, int, DecodedEvent], None]


def _task_created(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if isinstance(event, TaskCreated):
        title = " ".join((event.title or "").split())
        label = "task" if not title else f"task: {title if len(title) <= 40 else title[:39] + '…'}"
        b.task_node = b.node(f"task:{event.task_id}", NodeKind.TASK, seq, label, _cut(title),
                             f"created {event.state.value}")


def _state_changed(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if isinstance(event, TaskStateChanged):
        b.validating = event.to_state is TaskState.VALIDATING
        if b.task_node is not None:
            b.fold(b.task_node, seq, f"→ {event.to_state.value}")


def _plan_revision(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, PlanRevisionRecorded):
        return
    plan = b.node(f"plan:r{event.revision}", NodeKind.PLAN_REVISION, seq, f"plan revision {event.revision}",
                  f"by {event.created_by}", f"sha256 {event.sha256[:16]}")
    for call in b.planning_calls:
        b.edge(call, plan, EdgeKind.PRODUCED)
    b.planning_calls.clear()
    if b.plan_sent_back is not None:
        b.edge(b.plan_sent_back, plan, EdgeKind.CAUSED)
        b.plan_sent_back = None
    elif not any(target == plan for _, target, _ in b.edges):
        b.edge(b.task_node, plan, EdgeKind.CAUSED)


def _plan_decided(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, (PlanApproved, PlanSentBack)):
        return
    approved = isinstance(event, PlanApproved)
    verb = "approved" if approved else "sent back"
    decision = b.node(f"plan-decision:s{seq}", NodeKind.DECISION, seq, f"plan revision {event.revision} {verb}",
                      f"by {event.by}", f"sha256 {event.sha256[:16]}")
    plan = f"plan:r{event.revision}"
    if approved:
        b.edge(plan, decision, EdgeKind.CAUSED)
        b.approvals[event.revision] = decision
    else:
        b.edge(plan, decision, EdgeKind.SENT_BACK)
        b.plan_sent_back = decision


def _attempt_opened(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, RunAttemptOpened):
        return
    attempt = b.node(f"attempt:{event.attempt}", NodeKind.ATTEMPT, seq, f"attempt {event.attempt}",
                     f"run {event.run_id} on plan revision {event.plan_revision}")
    b.edge(f"plan:r{event.plan_revision}", attempt, EdgeKind.USED)
    if b.attempt_sent_back is not None:
        b.edge(b.attempt_sent_back, attempt, EdgeKind.CAUSED)
        b.attempt_sent_back = None
    else:
        b.edge(b.approvals.get(event.plan_revision), attempt, EdgeKind.CAUSED)
    b.attempt = b.last_attempt = attempt
    b.last_model_call = None
    b.check_executions.clear()


def _attempt_ended(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, RunAttemptEnded):
        return
    attempt = f"attempt:{event.attempt}"
    counts = ", ".join(f"{outcome.value} {count}" for outcome, count in sorted(event.outcomes.items()))
    evidence = b.node(f"evidence:a{event.attempt}:s{seq}", NodeKind.EVIDENCE, seq,
                      f"evidence of attempt {event.attempt}",
                      f"stopped at {event.stopped_at}" if event.stopped_at else "ran every stage",
                      f"ledger outcomes: {counts}" if counts else "no ledger rows")
    verdicts = b.verdicts.get(attempt, [])
    for verdict in verdicts:
        b.edge(verdict, evidence, EdgeKind.USED)
    if not verdicts:
        b.edge(attempt, evidence, EdgeKind.PRODUCED)
    b.last_evidence = evidence
    if b.attempt == attempt:
        b.attempt = None
    b.validating = False


def _verdicts(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, StageVerdictsRecorded) or not event.stages:
        return
    first = event.stages[0][0]
    more = f" +{len(event.stages) - 1}" if len(event.stages) > 1 else ""
    verdict = b.node(f"verdicts:a{event.attempt}:s{seq}", NodeKind.STAGE_VERDICTS, seq, f"verdicts: {first}{more}",
                     "; ".join(f"{stage} {outcome.value}" for stage, outcome in event.stages))
    attempt = f"attempt:{event.attempt}"
    b.edge(attempt, verdict, EdgeKind.PRODUCED)
    for execution in b.check_executions:
        b.edge(execution, verdict, EdgeKind.USED)
    b.check_executions.clear()
    b.verdicts.setdefault(attempt, []).append(verdict)


def _attempt_sent_back(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, AttemptSentBack):
        return
    decision = b.node(f"sent-back:a{event.attempt}:s{seq}", NodeKind.DECISION, seq,
                      f"{event.gate} sent attempt {event.attempt} back",
                      f"rung {event.rung}", f"ladder: {event.decision}", f"failure {event.fingerprint[:16]}")
    b.edge(f"attempt:{event.attempt}", decision, EdgeKind.SENT_BACK)
    b.attempt_sent_back = decision


def _agent_message(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if isinstance(event, AgentMessage) and b.last_any_model_call is not None:
        b.fold(b.last_any_model_call, seq, f"said: {_cut(event.text)}")


def _tool_requested(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, ToolRequested):
        return
    needs = ", ".join(event.needs) or "nothing"
    if b.validating:
        request = b.node(f"request:{event.request_id}", NodeKind.CHECK, seq, f"check: {event.tool}",
                         f"requested by the pipeline; needs {needs}", f"operation {event.operation[:19]}")
        b.edge(b.origin(), request, EdgeKind.CAUSED)
    else:
        request = b.node(f"request:{event.request_id}", NodeKind.TOOL_REQUEST, seq, event.tool,
                         f"needs {needs}", f"operation {event.operation[:19]}")
        if b.attempt is not None and b.last_model_call is not None:
            b.edge(b.last_model_call, request, EdgeKind.PRODUCED)
        else:
            b.edge(b.origin(), request, EdgeKind.CAUSED)
    decision = b.node(f"decision:{event.decision_id}", NodeKind.DECISION, seq, f"decision: {event.outcome}",
                      "when requested")
    b.edge(request, decision, EdgeKind.CAUSED)
    b.request_decision[request] = decision


def _authority_decided(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, AuthorityDecided):
        return
    denied = f"denied: {', '.join(event.denied)}" if event.denied else ""
    decision = b.node(f"decision:{event.decision_id}", NodeKind.DECISION, seq, f"decision: {event.outcome}",
                      f"by {event.decided_by}", denied)
    request = f"request:{event.request_id}"
    b.edge(request, decision, EdgeKind.CAUSED)
    if request in b.nodes:
        b.request_decision[request] = decision


def _execution_intended(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, ToolExecutionIntended):
        return
    request = f"request:{event.request_id}"
    tool = b.nodes[request].label if request in b.nodes else "a tool"
    approval = f"used approval {event.consumed_approval_id}" if event.consumed_approval_id else ""
    execution = b.node(f"execution:{event.execution_id}", NodeKind.EXECUTION, seq, f"ran {tool}",
                       "intended", approval)
    b.edge(b.request_decision.get(request, request), execution, EdgeKind.CAUSED)


def _execution_finished(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, ToolExecutionFinished):
        return
    execution = f"execution:{event.execution_id}"
    exit_code = "exit code unknown" if event.exit_code is None else f"exit code {event.exit_code}"
    failure = f"failure: {event.failure_kind}" if event.failure_kind else ""
    b.node(execution, NodeKind.EXECUTION, seq, "ran a tool", event.state, exit_code, failure)
    request = f"request:{event.request_id}"
    if request in b.nodes and b.nodes[request].kind is NodeKind.CHECK:
        b.check_executions.append(execution)


def _model_planned(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, ModelCallPlanned):
        return
    call = b.node(f"model:{event.request_id}", NodeKind.MODEL_CALL, seq, f"model call {event.provider}/{event.model}",
                  f"rung {event.rung}", f"reserved {event.reserved}")
    b.last_any_model_call = call
    if b.attempt is not None:
        b.edge(b.attempt, call, EdgeKind.CAUSED)
        b.last_model_call = call
    else:  # planning: the task asked for it; the next plan revision is what it produced
        b.edge(b.task_node, call, EdgeKind.CAUSED)
        b.planning_calls.append(call)


def _model_progress(b: _Builder, seq: int, event: DecodedEvent) -> None:
    parts: tuple[str, ...]
    if isinstance(event, ModelCallStarted):
        request_id, parts = event.request_id, ("started",)
    elif isinstance(event, ModelCallFinished):
        request_id, parts = event.request_id, (event.state, f"cost {event.cost}")
    elif isinstance(event, ModelCallReconciled):
        request_id, parts = event.request_id, (f"reconciled: {event.state}",)
    else:
        return
    b.node(f"model:{request_id}", NodeKind.MODEL_CALL, seq, "model call", *parts)


def _model_refused(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if isinstance(event, ModelCallRefused):
        call = b.node(f"model-refused:s{seq}", NodeKind.MODEL_CALL, seq, "model call refused",
                      event.refusal, _cut(event.reason))
        b.edge(b.origin(), call, EdgeKind.CAUSED)


def _delivery(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if isinstance(event, PatchStored):
        label, parts = f"patch kept ({event.kind})", (f"{event.bytes} bytes", f"diff {event.diff_identity[:16]}")
    elif isinstance(event, AcceptConflicted):
        label, parts = "accept conflicted", (f"branch {event.branch}",
                                             f"{len(event.conflicting_paths)} conflicting path(s)")
    elif isinstance(event, AcceptStarted):
        label, parts = f"landing started ({event.mode})", (f"branch {event.branch}", f"{event.paths} path(s)")
    elif isinstance(event, AcceptResolved):
        label, parts = f"landing {event.resolution}", (f"by {event.by}", _cut(event.reason))
    elif isinstance(event, TaskAccepted):
        label, parts = f"landed on {event.branch}", (event.kind, f"head {event.landed_head[:12]}")
    elif isinstance(event, DeliveryRecorded):
        label, parts = f"delivery of attempt {event.attempt}", (
            f"human acceptance {event.human_acceptance.value}", f"deliver {event.deliver.value}")
    else:
        return
    delivery = b.node(f"delivery:s{seq}", NodeKind.DELIVERY, seq, label, *parts)
    if b.last_delivery is not None:
        b.edge(b.last_delivery, delivery, EdgeKind.CAUSED)
    elif b.last_evidence is not None:
        b.edge(b.last_evidence, delivery, EdgeKind.USED)
    else:
        b.edge(b.last_attempt or b.task_node, delivery, EdgeKind.CAUSED)
    b.last_delivery = delivery


def _effect_outcome(b: _Builder, seq: int, event: DecodedEvent) -> None:
    if not isinstance(event, EffectOutcomeRecorded):
        return
    decision = b.node(f"effect:s{seq}", NodeKind.DECISION, seq, f"effect {event.outcome}",
                      f"{event.kind} {event.item}", f"by {event.by}")
    for source in (f"execution:{event.item}", f"model:{event.item}"):
        b.edge(source, decision, EdgeKind.CAUSED)


PROJECTED_KINDS: Final[Mapping[EventKind, _Handler]] = MappingProxyType({
    EventKind.TASK_CREATED: _task_created,
    EventKind.TASK_STATE_CHANGED: _state_changed,
    EventKind.PLAN_REVISION_RECORDED: _plan_revision,
    EventKind.PLAN_APPROVED: _plan_decided,
    EventKind.PLAN_SENT_BACK: _plan_decided,
    EventKind.RUN_ATTEMPT_OPENED: _attempt_opened,
    EventKind.STAGE_VERDICTS_RECORDED: _verdicts,
    EventKind.RUN_ATTEMPT_ENDED: _attempt_ended,
    EventKind.ATTEMPT_SENT_BACK: _attempt_sent_back,
    EventKind.AGENT_MESSAGE: _agent_message,
    EventKind.TOOL_REQUESTED: _tool_requested,
    EventKind.AUTHORITY_DECIDED: _authority_decided,
    EventKind.TOOL_EXECUTION_INTENDED: _execution_intended,
    EventKind.TOOL_EXECUTION_FINISHED: _execution_finished,
    EventKind.PATCH_STORED: _delivery,
    EventKind.ACCEPT_CONFLICTED: _delivery,
    EventKind.ACCEPT_STARTED: _delivery,
    EventKind.ACCEPT_RESOLVED: _delivery,
    EventKind.TASK_ACCEPTED: _delivery,
    EventKind.DELIVERY_RECORDED: _delivery,
    EventKind.EFFECT_OUTCOME_RECORDED: _effect_outcome,
    EventKind.MODEL_CALL_PLANNED: _model_planned,
    EventKind.MODEL_CALL_STARTED: _model_progress,
    EventKind.MODEL_CALL_FINISHED: _model_progress,
    EventKind.MODEL_CALL_RECONCILED: _model_progress,
    EventKind.MODEL_CALL_REFUSED: _model_refused,
})
"""Every event kind the graph shows, with the function that projects it."""


def project_graph(task_id: str, events: Iterable[tuple[int, DecodedEvent]]) -> ExecutionGraph:
    """The graph of ``task_id`` from its committed events, given as ``(sequence, decoded event)`` in journal
    order (see the module docstring)."""
    builder = _Builder(task_id=task_id)
    through = 0
    unknown: dict[str, int] = {}
    for sequence, event in events:
        through = max(through, sequence)
        if isinstance(event, UnknownEvent):
            unknown[event.kind] = unknown.get(event.kind, 0) + 1
            continue
        kind = event.KIND
        handler = PROJECTED_KINDS.get(kind)
        if handler is None:
            builder.not_shown[kind.value] = builder.not_shown.get(kind.value, 0) + 1
        else:
            handler(builder, sequence, event)
    nodes = tuple(sorted((GraphNode(id=n.id, kind=n.kind, sequence=n.sequence, label=n.label,
                                    summary="; ".join(n.parts), sequences=tuple(n.sequences))
                          for n in builder.nodes.values()), key=lambda n: n.sequence))
    edges = tuple(GraphEdge(source=s, target=t, kind=k) for s, t, k in sorted(builder.edges))
    not_shown = [NotShown(kind=k, count=c, reason=NOT_SHOWN_KINDS[EventKind(k)])
                 for k, c in builder.not_shown.items()]
    not_shown += [NotShown(kind=k, count=c, reason=_UNKNOWN_REASON) for k, c in unknown.items()]
    return ExecutionGraph(task_id=task_id, through_sequence=through, nodes=nodes, edges=edges,
                          not_shown=tuple(sorted(not_shown, key=lambda item: item.kind)))


# ─── renderings ─────────────────────────────────────────────────────────────────────────────────────


def graph_document(graph: ExecutionGraph) -> dict[str, object]:
    """The graph as one JSON-able document (``codeflux task graph --format json``)."""
    return {
        "disclaimer": graph.disclaimer,
        "task_id": graph.task_id,
        "through_sequence": graph.through_sequence,
        "nodes": [{"id": n.id, "kind": n.kind.value, "sequence": n.sequence, "label": n.label, "summary": n.summary,
                   "sequences": list(n.sequences)} for n in graph.nodes],
        "edges": [{"from": e.source, "to": e.target, "kind": e.kind.value} for e in graph.edges],
        "not_shown": [{"kind": item.kind, "count": item.count, "reason": item.reason} for item in graph.not_shown],
    }


def graph_json(graph: ExecutionGraph) -> str:
    """:func:`graph_document` as canonical JSON text (sorted keys, two-space indent, ASCII): same graph, same
    bytes."""
    return json.dumps(graph_document(graph), indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def _dot_string(text: str) -> str:
    """``text`` as a Graphviz double-quoted string: backslashes and quotes escaped, line breaks as ``\\n``,
    other control characters dropped."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(" ")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_DOT_SHAPES: Final[Mapping[NodeKind, str]] = MappingProxyType({
    NodeKind.TASK: "house", NodeKind.PLAN_REVISION: "note", NodeKind.ATTEMPT: "box3d",
    NodeKind.MODEL_CALL: "ellipse", NodeKind.TOOL_REQUEST: "box", NodeKind.DECISION: "diamond",
    NodeKind.EXECUTION: "component", NodeKind.CHECK: "box", NodeKind.STAGE_VERDICTS: "folder",
    NodeKind.EVIDENCE: "cylinder", NodeKind.DELIVERY: "doubleoctagon",
})


def graph_dot(graph: ExecutionGraph) -> str:
    """The graph as Graphviz DOT text (``codeflux task graph --format dot``), the disclaimer as its label."""
    lines = [f"digraph {_dot_string('task ' + graph.task_id)} {{",
             f"  label={_dot_string(f'{graph.task_id} through event {graph.through_sequence}: {graph.disclaimer}')};",
             '  labelloc="t";', "  rankdir=TB;", '  node [fontname="sans-serif", fontsize=10];']
    for node in graph.nodes:
        label = f"{node.label}\n{node.kind.value} #{node.sequence}"
        lines.append(f"  {_dot_string(node.id)} [label={_dot_string(label)}, shape={_DOT_SHAPES[node.kind]},"
                     f" tooltip={_dot_string(node.summary)}];")
    for edge in graph.edges:
        lines.append(f"  {_dot_string(edge.source)} -> {_dot_string(edge.target)}"
                     f" [label={_dot_string(edge.kind.value)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
