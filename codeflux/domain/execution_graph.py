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
- ``sent-back``: the source was sent back (a plan revision or an attempt to the decision that sent it back);
- ``fixed-by``: an incident (issue 22) and the landing of the task whose acceptance fixed it
  (:func:`with_incidents`: incidents are not in the task's journal, so they are joined after the projection).

Where an event does not name what came before it (a tool request does not name its model call), the edge
follows the journal's order: the model call of the same attempt just before it. That is how codeflux ran
(one loop, one call at a time), but it is the graph's reading, which is one more reason the graph is an
explanation and not proof.

Every event kind is either projected (:data:`PROJECTED_KINDS`) or not shown, with why
(:data:`NOT_SHOWN_KINDS`); a test checks the two cover :class:`~codeflux.domain.events.EventKind` exactly, so a
new kind forces a decision. Events of a kind a newer codeflux wrote are counted in :attr:`ExecutionGraph.not_shown`,
like the kinds not shown.

The projection reads one narrow record per event (:class:`~codeflux.domain.graph_facts.GraphFact`: the sequence,
the kind and the payload fields :data:`~codeflux.domain.graph_facts.GRAPH_FIELDS` names), never typed events:
the store extracts those fields in SQLite for the service, and typed events become the same records
(:func:`~codeflux.domain.graph_facts.graph_facts_of_events`), so there is one projection. A value is taken as it
is stored: one of an unexpected type (a payload the typed decoding would reject) shows as its text, never raises.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from operator import attrgetter
from types import MappingProxyType
from typing import Final, NamedTuple

from codeflux.domain.events import EventKind
from codeflux.domain.graph_facts import FactValue, GraphFact, IncidentLink
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
    "with_incidents",
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
    INCIDENT = "incident"


class EdgeKind(StrEnum):
    CAUSED = "caused"
    USED = "used"
    PRODUCED = "produced"
    SENT_BACK = "sent-back"
    FIXED_BY = "fixed-by"


# Nodes and edges are named tuples, not dataclasses: a long task's graph has thousands of each, built on every
# request, and a tuple is made several times faster (docs/benchmarks.md, "graph projection").
class GraphNode(NamedTuple):
    """One node: ``sequence`` is the event that made it, ``sequences`` every event folded into it."""

    id: str
    kind: NodeKind
    sequence: int
    label: str
    summary: str
    sequences: tuple[int, ...]


class GraphEdge(NamedTuple):
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
    EventKind.INCIDENT_NEW: "an incident's own record, not a step of a task",
    EventKind.INCIDENT_RECURRED: "an incident's own record, not a step of a task",
    EventKind.INCIDENT_REGRESSED: "an incident's own record, not a step of a task",
    EventKind.INCIDENT_DISMISSED: "an incident's own record, not a step of a task",
    EventKind.INCIDENT_TASK_PROPOSED: "an incident's own record; the incident → task link is drawn from the "
                                      "incident's state rows",
    EventKind.INCIDENT_FIXED: "an incident's own record; the incident → task link is drawn from the incident's "
                              "state rows",
})
"""Every event kind the graph leaves out, with why."""

_UNKNOWN_REASON: Final = "an event kind this codeflux does not know (written by a newer one)"
_VALIDATING: Final = TaskState.VALIDATING.value


def _cut(text: FactValue) -> str:
    flat = " ".join(str(text).split()) if text is not None else ""
    return flat if len(flat) <= _MAX_TEXT else flat[: _MAX_TEXT - 1] + "…"


def _head(value: FactValue, length: int) -> str:
    return str(value)[:length]


def _parsed(value: FactValue, opening: str) -> object:
    """The array (``opening`` "[") or object ("{") a fact carries as JSON text, else None."""
    if not isinstance(value, str) or not value.startswith(opening):
        return None
    try:
        return json.loads(value)
    except ValueError:  # a text that only looks like one
        return None


# A run repeats the same few arrays and objects (``["process"]`` as a command's needs, the same verdicts each
# attempt): each distinct text is parsed once.
@functools.lru_cache(maxsize=1024)
def _json_items(value: FactValue) -> tuple[object, ...]:
    """The items of the array a fact carries (empty when it carries no array)."""
    parsed = _parsed(value, "[")
    return tuple(parsed) if isinstance(parsed, list) else ()


@functools.lru_cache(maxsize=1024)
def _json_pairs(value: FactValue) -> tuple[tuple[str, object], ...]:
    """The (key, value) pairs, sorted by key, of the object a fact carries (empty when it carries no object)."""
    parsed = _parsed(value, "{")
    return tuple(sorted(parsed.items())) if isinstance(parsed, dict) else ()


@dataclass(slots=True)
class _Node:
    """A node while the graph is built: its summary grows as text and its sequences as a tuple (no list per node:
    a long task has thousands, and fewer containers keep the garbage collector's passes short)."""

    id: str
    kind: NodeKind
    sequence: int
    label: str
    summary: str
    sequences: tuple[int, ...]

    def fold(self, sequence: int, parts: tuple[str, ...]) -> None:
        """Add ``parts`` (empty ones left out) to the summary and ``sequence`` to the node's events."""
        for part in parts:
            if part:
                self.summary = f"{self.summary}; {part}" if self.summary else part
        if sequence not in self.sequences:
            self.sequences += (sequence,)


@dataclass(slots=True)
class _Builder:
    task_id: str
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: set[tuple[str, str, EdgeKind]] = field(default_factory=set)
    targets: set[str] = field(default_factory=set)  # every node some edge points at
    task_node: str | None = None
    validating: bool = False
    attempt: str | None = None  # the open attempt's node
    last_attempt: str | None = None
    last_model_call: str | None = None  # the latest model call of the open attempt
    last_any_model_call: str | None = None
    planning_calls: list[str] = field(default_factory=list)  # model calls outside an attempt, before a plan
    plan_sent_back: str | None = None  # a plan decision that sent a revision back, not yet followed
    attempt_sent_back: str | None = None
    approvals: dict[FactValue, str] = field(default_factory=dict)  # plan revision → its latest approval decision
    request_decision: dict[str, str] = field(default_factory=dict)  # request node → its latest decision node
    check_executions: list[str] = field(default_factory=list)  # finished check executions since the last verdicts
    verdicts: dict[str, list[str]] = field(default_factory=dict)  # attempt node → its verdict nodes
    last_evidence: str | None = None
    last_delivery: str | None = None

    def node(self, node_id: str, kind: NodeKind, sequence: int, label: str, *parts: str) -> str:
        """Make the node, or fold ``parts`` into it if it exists (empty parts are left out of the summary)."""
        found = self.nodes.get(node_id)
        if found is None:
            self.nodes[node_id] = _Node(node_id, kind, sequence, label, "; ".join(filter(None, parts)), (sequence,))
        else:
            found.fold(sequence, parts)
        return node_id

    def fold(self, node_id: str, sequence: int, *parts: str) -> None:
        self.nodes[node_id].fold(sequence, parts)

    def edge(self, source: str | None, target: str, kind: EdgeKind) -> None:
        if source is not None and source != target and source in self.nodes:
            self.edges.add((source, target, kind))
            self.targets.add(target)

    def origin(self) -> str | None:
        """What a step with no named cause hangs from: the open attempt, else the task."""
        return self.attempt or self.task_node


_Handler = Callable[[_Builder, GraphFact], None]


def _task_created(b: _Builder, fact: GraphFact) -> None:
    seq, _, task_id, state, title = fact[:5]
    title = " ".join(title.split()) if isinstance(title, str) else ""
    label = "task" if not title else f"task: {title if len(title) <= 40 else title[:39] + '…'}"
    b.task_node = b.node(f"task:{task_id}", NodeKind.TASK, seq, label, _cut(title), f"created {state}")


def _state_changed(b: _Builder, fact: GraphFact) -> None:
    seq, _, to_state = fact[:3]
    b.validating = to_state == _VALIDATING
    if b.task_node is not None:
        b.fold(b.task_node, seq, f"→ {to_state}")


def _plan_revision(b: _Builder, fact: GraphFact) -> None:
    seq, _, revision, created_by, sha256 = fact[:5]
    plan = b.node(f"plan:r{revision}", NodeKind.PLAN_REVISION, seq, f"plan revision {revision}",
                  f"by {created_by}", f"sha256 {_head(sha256, 16)}")
    for call in b.planning_calls:
        b.edge(call, plan, EdgeKind.PRODUCED)
    b.planning_calls.clear()
    if b.plan_sent_back is not None:
        b.edge(b.plan_sent_back, plan, EdgeKind.CAUSED)
        b.plan_sent_back = None
    elif plan not in b.targets:
        b.edge(b.task_node, plan, EdgeKind.CAUSED)


def _plan_decided(approved: bool) -> _Handler:
    verb = "approved" if approved else "sent back"

    def decided(b: _Builder, fact: GraphFact) -> None:
        seq, _, revision, by, sha256 = fact[:5]
        decision = b.node(f"plan-decision:s{seq}", NodeKind.DECISION, seq, f"plan revision {revision} {verb}",
                          f"by {by}", f"sha256 {_head(sha256, 16)}")
        plan = f"plan:r{revision}"
        if approved:
            b.edge(plan, decision, EdgeKind.CAUSED)
            b.approvals[revision] = decision
        else:
            b.edge(plan, decision, EdgeKind.SENT_BACK)
            b.plan_sent_back = decision

    return decided


def _attempt_opened(b: _Builder, fact: GraphFact) -> None:
    seq, _, number, run_id, plan_revision = fact[:5]
    attempt = b.node(f"attempt:{number}", NodeKind.ATTEMPT, seq, f"attempt {number}",
                     f"run {run_id} on plan revision {plan_revision}")
    b.edge(f"plan:r{plan_revision}", attempt, EdgeKind.USED)
    if b.attempt_sent_back is not None:
        b.edge(b.attempt_sent_back, attempt, EdgeKind.CAUSED)
        b.attempt_sent_back = None
    else:
        b.edge(b.approvals.get(plan_revision), attempt, EdgeKind.CAUSED)
    b.attempt = b.last_attempt = attempt
    b.last_model_call = None
    b.check_executions.clear()


def _attempt_ended(b: _Builder, fact: GraphFact) -> None:
    seq, _, number, stopped_at, outcomes = fact[:5]
    attempt = f"attempt:{number}"
    counts = ", ".join(f"{outcome} {count}" for outcome, count in _json_pairs(outcomes))
    evidence = b.node(f"evidence:a{number}:s{seq}", NodeKind.EVIDENCE, seq, f"evidence of attempt {number}",
                      f"stopped at {stopped_at}" if stopped_at else "ran every stage",
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


def _verdicts(b: _Builder, fact: GraphFact) -> None:
    seq, _, number, stages = fact[:4]
    pairs = [item for item in _json_items(stages) if isinstance(item, list) and len(item) == 2]
    if not pairs:
        return
    more = f" +{len(pairs) - 1}" if len(pairs) > 1 else ""
    verdict = b.node(f"verdicts:a{number}:s{seq}", NodeKind.STAGE_VERDICTS, seq, f"verdicts: {pairs[0][0]}{more}",
                     "; ".join(f"{stage} {outcome}" for stage, outcome in pairs))
    attempt = f"attempt:{number}"
    b.edge(attempt, verdict, EdgeKind.PRODUCED)
    for execution in b.check_executions:
        b.edge(execution, verdict, EdgeKind.USED)
    b.check_executions.clear()
    b.verdicts.setdefault(attempt, []).append(verdict)


def _attempt_sent_back(b: _Builder, fact: GraphFact) -> None:
    seq, _, number, gate, rung, decision_text, fingerprint = fact[:7]
    decision = b.node(f"sent-back:a{number}:s{seq}", NodeKind.DECISION, seq, f"{gate} sent attempt {number} back",
                      f"rung {rung}", f"ladder: {decision_text}", f"failure {_head(fingerprint, 16)}")
    b.edge(f"attempt:{number}", decision, EdgeKind.SENT_BACK)
    b.attempt_sent_back = decision


def _agent_message(b: _Builder, fact: GraphFact) -> None:
    if b.last_any_model_call is not None:
        b.fold(b.last_any_model_call, fact.sequence, f"said: {_cut(fact.first)}")


def _tool_requested(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, tool, operation, needs_list, decision_id, outcome = fact
    needs = ", ".join(str(need) for need in _json_items(needs_list)) or "nothing"
    request = f"request:{request_id}"
    if b.validating:
        b.node(request, NodeKind.CHECK, seq, f"check: {tool}", f"requested by the pipeline; needs {needs}",
               f"operation {_head(operation, 19)}")
        b.edge(b.origin(), request, EdgeKind.CAUSED)
    else:
        b.node(request, NodeKind.TOOL_REQUEST, seq, str(tool), f"needs {needs}", f"operation {_head(operation, 19)}")
        if b.attempt is not None and b.last_model_call is not None:
            b.edge(b.last_model_call, request, EdgeKind.PRODUCED)
        else:
            b.edge(b.origin(), request, EdgeKind.CAUSED)
    decision = b.node(f"decision:{decision_id}", NodeKind.DECISION, seq, f"decision: {outcome}", "when requested")
    b.edge(request, decision, EdgeKind.CAUSED)
    b.request_decision[request] = decision


def _authority_decided(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, decision_id, outcome, decided_by, denied_list = fact[:7]
    denied = ", ".join(str(item) for item in _json_items(denied_list))
    decision = b.node(f"decision:{decision_id}", NodeKind.DECISION, seq, f"decision: {outcome}",
                      f"by {decided_by}", f"denied: {denied}" if denied else "")
    request = f"request:{request_id}"
    b.edge(request, decision, EdgeKind.CAUSED)
    if request in b.nodes:
        b.request_decision[request] = decision


def _execution_intended(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, execution_id, approval_id = fact[:5]
    request = f"request:{request_id}"
    found = b.nodes.get(request)
    execution = b.node(f"execution:{execution_id}", NodeKind.EXECUTION, seq,
                       f"ran {found.label if found is not None else 'a tool'}", "intended",
                       f"used approval {approval_id}" if approval_id else "")
    b.edge(b.request_decision.get(request, request), execution, EdgeKind.CAUSED)


def _execution_finished(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, execution_id, state, exit_code, failure_kind = fact[:7]
    execution = f"execution:{execution_id}"
    b.node(execution, NodeKind.EXECUTION, seq, "ran a tool", str(state),
           "exit code unknown" if exit_code is None else f"exit code {exit_code}",
           f"failure: {failure_kind}" if failure_kind else "")
    found = b.nodes.get(f"request:{request_id}")
    if found is not None and found.kind is NodeKind.CHECK:
        b.check_executions.append(execution)


def _model_planned(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, provider, model, rung, reserved = fact[:7]
    call = b.node(f"model:{request_id}", NodeKind.MODEL_CALL, seq, f"model call {provider}/{model}",
                  f"rung {rung}", f"reserved {reserved}")
    b.last_any_model_call = call
    if b.attempt is not None:
        b.edge(b.attempt, call, EdgeKind.CAUSED)
        b.last_model_call = call
    else:  # planning: the task asked for it; the next plan revision is what it produced
        b.edge(b.task_node, call, EdgeKind.CAUSED)
        b.planning_calls.append(call)


def _model_started(b: _Builder, fact: GraphFact) -> None:
    b.node(f"model:{fact.first}", NodeKind.MODEL_CALL, fact.sequence, "model call", "started")


def _model_finished(b: _Builder, fact: GraphFact) -> None:
    seq, _, request_id, state, cost = fact[:5]
    b.node(f"model:{request_id}", NodeKind.MODEL_CALL, seq, "model call", str(state), f"cost {cost}")


def _model_reconciled(b: _Builder, fact: GraphFact) -> None:
    b.node(f"model:{fact.first}", NodeKind.MODEL_CALL, fact.sequence, "model call", f"reconciled: {fact.second}")


def _model_refused(b: _Builder, fact: GraphFact) -> None:
    seq, _, refusal, reason = fact[:4]
    call = b.node(f"model-refused:s{seq}", NodeKind.MODEL_CALL, seq, "model call refused", str(refusal),
                  _cut(reason))
    b.edge(b.origin(), call, EdgeKind.CAUSED)


def _delivery(b: _Builder, seq: int, label: str, *parts: str) -> None:
    delivery = b.node(f"delivery:s{seq}", NodeKind.DELIVERY, seq, label, *parts)
    if b.last_delivery is not None:
        b.edge(b.last_delivery, delivery, EdgeKind.CAUSED)
    elif b.last_evidence is not None:
        b.edge(b.last_evidence, delivery, EdgeKind.USED)
    else:
        b.edge(b.last_attempt or b.task_node, delivery, EdgeKind.CAUSED)
    b.last_delivery = delivery


def _patch_stored(b: _Builder, fact: GraphFact) -> None:
    seq, _, kind, size, diff_identity = fact[:5]
    _delivery(b, seq, f"patch kept ({kind})", f"{size} bytes", f"diff {_head(diff_identity, 16)}")


def _accept_conflicted(b: _Builder, fact: GraphFact) -> None:
    seq, _, branch, paths = fact[:4]
    _delivery(b, seq, "accept conflicted", f"branch {branch}", f"{len(_json_items(paths))} conflicting path(s)")


def _accept_started(b: _Builder, fact: GraphFact) -> None:
    seq, _, mode, branch, paths = fact[:5]
    _delivery(b, seq, f"landing started ({mode})", f"branch {branch}", f"{paths} path(s)")


def _accept_resolved(b: _Builder, fact: GraphFact) -> None:
    seq, _, resolution, by, reason = fact[:5]
    _delivery(b, seq, f"landing {resolution}", f"by {by}", _cut(reason))


def _task_accepted(b: _Builder, fact: GraphFact) -> None:
    seq, _, branch, kind, landed_head = fact[:5]
    _delivery(b, seq, f"landed on {branch}", str(kind), f"head {_head(landed_head, 12)}")


def _delivery_recorded(b: _Builder, fact: GraphFact) -> None:
    seq, _, attempt, human_acceptance, deliver = fact[:5]
    _delivery(b, seq, f"delivery of attempt {attempt}", f"human acceptance {human_acceptance}", f"deliver {deliver}")


def _effect_outcome(b: _Builder, fact: GraphFact) -> None:
    seq, _, outcome, kind, item, by = fact[:6]
    decision = b.node(f"effect:s{seq}", NodeKind.DECISION, seq, f"effect {outcome}", f"{kind} {item}", f"by {by}")
    for source in (f"execution:{item}", f"model:{item}"):
        b.edge(source, decision, EdgeKind.CAUSED)


PROJECTED_KINDS: Final[Mapping[EventKind, _Handler]] = MappingProxyType({
    EventKind.TASK_CREATED: _task_created,
    EventKind.TASK_STATE_CHANGED: _state_changed,
    EventKind.PLAN_REVISION_RECORDED: _plan_revision,
    EventKind.PLAN_APPROVED: _plan_decided(approved=True),
    EventKind.PLAN_SENT_BACK: _plan_decided(approved=False),
    EventKind.RUN_ATTEMPT_OPENED: _attempt_opened,
    EventKind.STAGE_VERDICTS_RECORDED: _verdicts,
    EventKind.RUN_ATTEMPT_ENDED: _attempt_ended,
    EventKind.ATTEMPT_SENT_BACK: _attempt_sent_back,
    EventKind.AGENT_MESSAGE: _agent_message,
    EventKind.TOOL_REQUESTED: _tool_requested,
    EventKind.AUTHORITY_DECIDED: _authority_decided,
    EventKind.TOOL_EXECUTION_INTENDED: _execution_intended,
    EventKind.TOOL_EXECUTION_FINISHED: _execution_finished,
    EventKind.PATCH_STORED: _patch_stored,
    EventKind.ACCEPT_CONFLICTED: _accept_conflicted,
    EventKind.ACCEPT_STARTED: _accept_started,
    EventKind.ACCEPT_RESOLVED: _accept_resolved,
    EventKind.TASK_ACCEPTED: _task_accepted,
    EventKind.DELIVERY_RECORDED: _delivery_recorded,
    EventKind.EFFECT_OUTCOME_RECORDED: _effect_outcome,
    EventKind.MODEL_CALL_PLANNED: _model_planned,
    EventKind.MODEL_CALL_STARTED: _model_started,
    EventKind.MODEL_CALL_FINISHED: _model_finished,
    EventKind.MODEL_CALL_RECONCILED: _model_reconciled,
    EventKind.MODEL_CALL_REFUSED: _model_refused,
})
"""Every event kind the graph shows, with the function that projects it (from the fields
:data:`~codeflux.domain.graph_facts.GRAPH_FIELDS` names for it)."""

# A plain dict keyed by the stored kind text: looked up once per event (a mapping proxy's lookup is slower), never
# handed out.
_HANDLERS: Final[dict[str, _Handler]] = {kind.value: handler for kind, handler in PROJECTED_KINDS.items()}
_NOT_SHOWN_REASONS: Final[Mapping[str, str]] = MappingProxyType({kind.value: reason
                                                                for kind, reason in NOT_SHOWN_KINDS.items()})


def project_graph(task_id: str, facts: Iterable[GraphFact]) -> ExecutionGraph:
    """The graph of ``task_id`` from the records of its committed events, in journal order (see the module
    docstring): read from the store (``read_graph_facts``) or made from typed events
    (:func:`~codeflux.domain.graph_facts.graph_facts_of_events`)."""
    builder = _Builder(task_id=task_id)
    handlers = _HANDLERS
    left_out: dict[str, int] = {}  # kinds not shown (or not known), counted
    fact = None
    for fact in facts:
        handler = handlers.get(fact.kind)
        if handler is None:
            left_out[fact.kind] = left_out.get(fact.kind, 0) + 1
        else:
            handler(builder, fact)
    through = 0 if fact is None else fact.sequence  # the last event: facts come in journal order
    nodes = sorted(builder.nodes.values(), key=attrgetter("sequence"))  # stable: nodes of one event stay in order
    return ExecutionGraph(
        task_id=task_id, through_sequence=through,
        nodes=tuple([GraphNode(n.id, n.kind, n.sequence, n.label, n.summary, n.sequences) for n in nodes]),
        edges=tuple(map(GraphEdge._make, sorted(builder.edges))),
        not_shown=tuple(NotShown(kind=kind, count=count, reason=_NOT_SHOWN_REASONS.get(kind, _UNKNOWN_REASON))
                        for kind, count in sorted(left_out.items())))


def with_incidents(graph: ExecutionGraph, links: Iterable[IncidentLink]) -> ExecutionGraph:
    """``graph`` with a node per incident linked to its task: the incident came before the task (it is drawn at
    sequence 0, no event of the task made it), ``caused`` the task when the task was proposed from it, and points
    ``fixed-by`` at the task's landing when accepting the task fixed it. Incidents live outside the task's journal
    (codeflux/store/incidents.py), so they join the graph here, after the projection; ``through_sequence`` still
    counts the task's events only."""
    task = f"task:{graph.task_id}"
    landings = [node.id for node in graph.nodes if node.kind is NodeKind.DELIVERY and node.label.startswith("landed")]
    nodes, edges = list(graph.nodes), set(graph.edges)
    for link in sorted(links, key=attrgetter("incident_id")):
        node = f"incident:{link.incident_id}"
        said = [f"now {link.state}", f"{link.occurrences} occurrence(s)"]
        said += ["this task was proposed from it"] if link.proposed else []
        said += ["accepting this task fixed it"] if link.fixed else []
        said += ["seen again after this task's fix (regressed)"] if link.regressed else []
        label = _cut(f"incident: {link.summary}")
        nodes.append(GraphNode(node, NodeKind.INCIDENT, 0, label if len(label) <= 60 else label[:59] + "…",
                               "; ".join(said), ()))
        if link.proposed or not (link.fixed and landings):
            edges.add(GraphEdge(node, task, EdgeKind.CAUSED))
        if link.fixed and landings:
            edges.add(GraphEdge(node, landings[-1], EdgeKind.FIXED_BY))
    return replace(graph, nodes=tuple(sorted(nodes, key=attrgetter("sequence"))),
                               edges=tuple(sorted(edges)))


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
    NodeKind.EVIDENCE: "cylinder", NodeKind.DELIVERY: "doubleoctagon", NodeKind.INCIDENT: "octagon",
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
