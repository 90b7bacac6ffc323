"""One printer per view: a task, its plan, a budget, a recovery assessment, a price list.

Every printer takes the reply the method table gave (:mod:`codeflux.cli.channel`), so a command prints the
same lines whether a coordinator answered over its socket or the call ran in this process. Arguments, paths
and check argv are shown escaped (:func:`codeflux.domain.display.escape_for_display`): a bidi override or a
newline cannot disguise itself or what follows it.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Sequence
from typing import Final

from codeflux.api.v1 import common_pb2, incidents_pb2, memory_pb2, product_pb2
from codeflux.cli.context import CliContext
from codeflux.domain.display import escape_for_display
from codeflux.domain.execution_graph import EdgeKind, ExecutionGraph, GraphEdge, GraphNode, NodeKind, NotShown

__all__ = [
    "EVIDENCE_FORMAT",
    "evidence_document",
    "execution_graph_of",
    "landing_resolution_text",
    "planning_line",
    "print_budget",
    "print_evidence",
    "print_incident_detail",
    "print_incident_list",
    "print_incident_proposal",
    "print_incident_report",
    "print_instruction_files",
    "print_landing_resolutions",
    "print_memory_detail",
    "print_memory_invalidation",
    "print_memory_list",
    "print_plan",
    "print_prices",
    "print_providers",
    "print_recovery",
    "print_repository_approvals",
    "print_task",
    "worktree_disposal_text",
    "write_bytes",
]

_MAX_ARGUMENTS: Final = 200
_UNKNOWN: Final = "unknown: "
_PRICE_COLUMNS: Final = ("provider", "model", "input", "output", "cache read", "cache write", "cache write 1h",
                         "currency", "effective", "source")


def _amount(value: common_pb2.MaybeMoney) -> str:
    return value.amount.display if value.known else "unknown"


def print_plan(ctx: CliContext, plan: product_pb2.PlanView, *, indent: str = "  ") -> None:
    """A plan revision: its hash and decision, scope, steps (with the files they expect) and checks."""
    author = f"; drafted by {plan.author_label}" if plan.author_label else ""
    ctx.say(f"{indent}plan         revision {plan.revision} sha256 {plan.sha256} ({plan.decision}{author})")
    ctx.say(f"{indent}  scope      {escape_for_display(plan.scope_summary)}")
    for number, step in enumerate(plan.steps, start=1):
        ctx.say(f"{indent}  step {number:<6}{escape_for_display(step.title)}")
        if step.expected_files:
            ctx.say(f"{indent}    files the planner expects to touch (a hint): "
                    f"{', '.join(escape_for_display(f) for f in step.expected_files)}")
        for atom in step.atoms:
            effects = f"effects: {', '.join(atom.effects)}" if atom.effects else "pure (no effects)"
            ctx.say(f"{indent}    declares {escape_for_display(atom.name)}: {escape_for_display(atom.signature)}; "
                    f"{effects}")
        if plan.traced:
            ctx.say(f"{indent}    serves   examples {_numbers(step.serves_examples)}; "
                    f"sentences {_numbers(step.covers_sentences)}")
    for check in plan.checks:
        argv = shlex.join(escape_for_display(a) for a in check.argv)
        ctx.say(f"{indent}  check      {escape_for_display(check.name)}: {argv}")
    ctx.say(f"{indent}  examples   {escape_for_display(plan.examples_source)}")
    for number, example in enumerate(plan.examples, start=1):
        ctx.say(f"{indent}    {number}. {escape_for_display(example)}")
    if plan.decision == "undecided" and plan.examples_edit_note:
        ctx.say(f"{indent}    (not editable: {escape_for_display(plan.examples_edit_note)})")
    _print_trace_and_questions(ctx, plan, indent)
    if plan.HasField("planning"):
        ctx.say(f"{indent}  planning   {planning_line(plan.planning)}")
    if plan.decision == "sent-back" and plan.feedback:
        ctx.say(f"{indent}  feedback   {escape_for_display(plan.feedback)}")


def planning_line(spend: product_pb2.PlanningSpendView) -> str:
    """What drafting the plan took, in one line: ``2 model calls, 1 read-only tool call; cost $0.01``."""
    calls = "call" if spend.model_calls == 1 else "calls"
    tools = "call" if spend.tool_calls == 1 else "calls"
    reason = escape_for_display(spend.cost.unknown_reason)
    cost = spend.cost.amount.display if spend.cost.known else f"unknown ({reason})"
    return f"{spend.model_calls} model {calls}, {spend.tool_calls} read-only tool {tools}; cost {cost}"


def _numbers(values: Sequence[int]) -> str:
    return ", ".join(str(value) for value in values) or "none"


def _print_trace_and_questions(ctx: CliContext, plan: product_pb2.PlanView, indent: str) -> None:
    """Stage 4's coverage (what no step names) and stage 2's questions with their answers or assumptions."""
    if plan.traced:
        for number, sentence in enumerate(plan.sentences, start=1):
            ctx.say(f"{indent}  sentence {number:<2}{escape_for_display(sentence)}")
        if plan.uncovered_examples:
            ctx.say(f"{indent}  uncovered  no step serves example(s) {_numbers(plan.uncovered_examples)}: "
                    "the plan cannot be approved; send it back")
        if plan.uncovered_sentences:
            ctx.say(f"{indent}  unnamed    no step names sentence(s) {_numbers(plan.uncovered_sentences)}")
    elif plan.revision:
        ctx.say(f"{indent}  trace      none: coverage of the examples by steps is not measured")
    for question in plan.questions:
        ctx.say(f"{indent}  question {question.number} [{question.status}, {question.origin}] "
                f"{escape_for_display(question.question)}")
        if question.status == "answered":
            ctx.say(f"{indent}    answer   {escape_for_display(question.answer)}")
        elif question.status == "assumed":
            ctx.say(f"{indent}    assumed  {escape_for_display(question.assumption)}")
        else:
            ctx.say(f"{indent}    open     approval waits for your answer (`codeflux task answer`); the planner "
                    f"would otherwise assume: {escape_for_display(question.assumption)}")


_PROVIDER_BASES: Final = {"used": "its newest model call went there",
                          "pinned": "pinned when the task was created; its plans and runs use it"}


def _print_provider(ctx: CliContext, view: product_pb2.TaskView) -> None:
    """The task's provider, why its pin was in force, and the pinned endpoint still waiting for its approval."""
    if view.provider_basis in _PROVIDER_BASES:  # "current" (a task created before pins) depends on who asks: not said
        ctx.say(f"  provider     {escape_for_display(view.provider_label)} ({_PROVIDER_BASES[view.provider_basis]})")
    if view.provider_reason:
        ctx.say(f"  pinned by    {view.provider_reason}")
    if view.HasField("endpoint_approval"):
        card = view.endpoint_approval
        ctx.say(f"  endpoint     {escape_for_display(card.base_url)} is not approved: nothing is sent to it until "
                f"`codeflux provider approve-endpoint --name {card.provider} --base-url "
                f"{shlex.quote(card.base_url)}`")


def print_task(ctx: CliContext, view: product_pb2.TaskView,
               recovery: product_pb2.RecoveryView | None = None) -> None:
    """Everything about a task: state, repository, base, worktree, plan, attempt, budget, what waits for a
    decision, every action (the unavailable ones with why) and, when it needs recovery, the assessment."""
    ctx.say(f"task {view.task_id}  {escape_for_display(view.title)}")
    ctx.say(f"  state        {view.state} (revision {view.revision})")
    ctx.say(f"  repository   {escape_for_display(view.repository_root)}")
    _print_provider(ctx, view)
    ctx.say(f"  base         {view.base_revision or '(not started)'}")
    if view.HasField("worktree_disposal"):
        status = f"  ({worktree_disposal_text(view.worktree_disposal)})"
    else:
        status = "" if view.worktree_exists else "  (not created yet)"
    ctx.say(f"  worktree     {escape_for_display(view.worktree)}{status}")
    if view.HasField("plan"):
        print_plan(ctx, view.plan)
    else:
        ctx.say("  plan         none yet")
    if view.HasField("attempt"):
        ended = "open" if view.attempt.open else f"ended at {view.attempt.stopped_at or 'the end'}"
        ctx.say(f"  attempt      {view.attempt.attempt} under plan revision {view.attempt.plan_revision} ({ended})")
    if view.budget.set:
        ctx.say(f"  spend        {view.budget.spend_line}")
        for line in view.budget.lines:
            ctx.say(f"  {line}")
        for use in view.budget.prices:
            ctx.say(f"  prices       {escape_for_display(use.line)}")
    else:
        ctx.say("  budget       none set (`codeflux budget set --task ID --limit AMOUNT`)")
    for pending in view.pending_approvals:
        _print_pending(ctx, pending)
    ctx.say("  actions")
    for action in view.actions:
        ctx.say(f"    {action.action:<15} " + ("available" if action.available else f"no: {action.reason}"))
    if recovery is not None:
        print_recovery(ctx, recovery)


def _print_pending(ctx: CliContext, pending: product_pb2.PendingApproval) -> None:
    arguments = " ".join(f"{a.name}={escape_for_display(a.value)}" for a in pending.arguments)
    shown = arguments if len(arguments) <= _MAX_ARGUMENTS else arguments[:_MAX_ARGUMENTS] + " … (cut)"
    ctx.say(f"  waiting      {pending.request_id} {pending.tool} {shown} [{', '.join(pending.capabilities)}]")
    if pending.meaning:
        ctx.say(f"    approving means: {pending.meaning}")
    if pending.allow_for_task_refusal:
        ctx.say(f"    allow-for-task is not offered: {pending.allow_for_task_refusal}")
    if pending.deny_meaning:
        ctx.say(f"    denying {pending.deny_meaning}")


def worktree_disposal_text(disposal: product_pb2.WorktreeDisposalView) -> str:
    """``removed with its branch; 2 checkpoint ref(s) deleted`` or ``kept (refusal): detail``."""
    if not disposal.removed:
        return f"kept ({disposal.refusal}): {disposal.detail}"
    refs = f"; {disposal.checkpoint_refs_deleted} checkpoint ref(s) deleted" if disposal.checkpoint_refs_deleted else ""
    return "removed" + (" with its branch" if disposal.branch_deleted else "") + refs


LANDINGS_HEADING: Final = "landings recovery resolved (interrupted accepts, most recent first)"


def landing_resolution_text(landing: product_pb2.LandingResolutionView) -> str:
    """When, which task, finished (the landed commit) or rolled back (where the branch stays), by whom, and why
    the landing had stopped — one line."""
    when = dt.datetime.fromtimestamp(landing.resolved_at_us / 1_000_000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    by = "startup recovery" if landing.by == "recovery" else "a retry of the accept"
    branch = escape_for_display(landing.branch)
    if landing.resolution == "finished":
        what = f"finished by {by}: landed on {branch} at {landing.landed_head[:12]}"
    else:
        what = f"rolled back by {by}: {branch} stays at {landing.previous_head[:12]}, the checkout as before"
    return f"{when}  task {landing.task_id}  {what} (why: {escape_for_display(landing.reason)})"


def print_landing_resolutions(ctx: CliContext, landings: Sequence[product_pb2.LandingResolutionView], more: int, *,
                              indent: str = "") -> None:
    """The interrupted accept landings a retry or startup recovery resolved, under one heading (nothing when
    there are none), and how many older ones are not listed."""
    if not landings:
        return
    ctx.say(f"{indent}{LANDINGS_HEADING}")
    for landing in landings:
        ctx.say(f"{indent}  {landing_resolution_text(landing)}")
    if more > 0:
        ctx.say(f"{indent}  … and {more} more, older")


def print_recovery(ctx: CliContext, view: product_pb2.RecoveryView) -> None:
    """What is known about an interrupted task, what is ambiguous and what is recommended (three things)."""
    ctx.say(f"task {view.task_id}  {view.state}  {escape_for_display(view.title)}")
    ctx.say("  known")
    for line in view.known:
        ctx.say(f"    {line}")
    ctx.say("  ambiguous" + ("" if view.ambiguous else "  nothing"))
    for effect in view.ambiguous:
        outcome = "UNRESOLVED" if not effect.outcome else f"recorded: {effect.outcome}"
        if effect.kind == "store-damage":
            outcome = "unknown: inspect the worktree"
        ctx.say(f"    {effect.item_id}  {effect.kind}  {escape_for_display(effect.summary)}  [{outcome}]")
    ctx.say(f"  recommended  {view.recommended}: {view.why}")
    for refused in view.refused:
        ctx.say(f"    {refused.action:<15} no: {refused.reason}")
    if any(not effect.outcome for effect in view.ambiguous):
        ctx.say(f"  next: codeflux task record-outcome {view.task_id} --item ITEM --happened|--did-not-happen")


def print_budget(ctx: CliContext, report: product_pb2.BudgetReport) -> None:
    """A task's budget figures (unknown is never written as 0), its state and, when asked, the ledger."""
    if report.outcome:
        ctx.say(report.outcome)
    for line in report.budget.lines:
        ctx.say(line)
    ctx.say(f"  task state   {report.task_state}")
    for entry in report.entries:
        ack = "  acknowledged" if entry.acknowledged else ""
        reason = f"  ({entry.reason})" if entry.reason else ""
        ctx.say(f"  entry {entry.entry_id}  {entry.request_id}  {entry.kind:<14} {_amount(entry.amount)}{reason}{ack}")


def print_prices(ctx: CliContext, prices: product_pb2.PriceList) -> None:
    """The rates in force as a table; a rate nobody published is ``unknown``, never 0."""
    if prices.outcome:
        ctx.say(prices.outcome)
        return
    table = [_PRICE_COLUMNS, *(_price_cells(row) for row in prices.prices)]
    widths = [max(len(row[i]) for row in table) for i in range(len(_PRICE_COLUMNS))]
    for row in table:
        ctx.say("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    ctx.say("rates: major units per million tokens; unknown = no published rate (a call using it has an "
            "unknown cost)")


def _price_cells(row: product_pb2.PriceRow) -> tuple[str, ...]:
    source = row.source if not row.revision or row.source == "shipped" else f"user r{row.revision}"
    model = row.model + (f" ({', '.join(row.aliases)})" if row.aliases else "")
    rates = (row.input, row.output, row.cache_read, row.cache_write, row.cache_write_1h)
    return (row.provider, model, *(rate or "unknown" for rate in rates), row.currency, row.effective_date, source)


def print_providers(ctx: CliContext, statuses: Sequence[product_pb2.ProviderStatus]) -> None:
    """Each provider: whether a key is in the OS credential store (never the key), whether codeflux
    recorded a reference to it, and where the key a call sends comes from (an environment variable wins);
    ``unknown`` with why when the credential store could not be asked."""
    unknown_because = ""
    for status in statuses:
        unknown = status.detail.startswith(_UNKNOWN)
        unknown_because = status.detail[len(_UNKNOWN):] if unknown else unknown_because
        stored = "unknown" if unknown else ("yes" if status.credential_stored else "no")
        recorded = "yes" if status.reference_recorded else "no"
        source = f"  key from: {status.key_source}" if status.key_source else ""
        ctx.say(f"{status.name:<18} stored: {stored:<7} reference recorded: {recorded:<3}{source}")
    if unknown_because:
        ctx.say(f"provider: {unknown_because}")


def execution_graph_of(view: product_pb2.TaskGraph) -> ExecutionGraph:
    """The graph the coordinator sent, back as the domain's value (its renderings are the domain's)."""
    return ExecutionGraph(
        task_id=view.task_id, through_sequence=view.through_sequence, disclaimer=view.disclaimer,
        nodes=tuple(GraphNode(id=n.id, kind=NodeKind(n.kind), sequence=n.sequence, label=n.label, summary=n.summary,
                              sequences=tuple(n.sequences)) for n in view.nodes),
        edges=tuple(GraphEdge(source=e.source, target=e.target, kind=EdgeKind(e.kind)) for e in view.edges),
        not_shown=tuple(NotShown(kind=item.kind, count=item.count, reason=item.reason) for item in view.not_shown))


def write_bytes(ctx: CliContext, data: bytes) -> None:
    """Exact bytes to standard output (a diff or a patch is not re-encoded)."""
    buffer = getattr(ctx.stdout, "buffer", None)
    if buffer is None:
        ctx.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        ctx.stdout.flush()
        buffer.write(data)
        buffer.flush()


EVIDENCE_FORMAT: Final = 1
"""The version of :func:`evidence_document`'s JSON (``codeflux task evidence --json``, docs/using.md)."""


def _fact_value(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def evidence_document(view: product_pb2.EvidenceView) -> dict[str, object]:
    """The stable JSON document of ``codeflux task evidence --json`` (keys documented in docs/using.md)."""
    return {
        "format": EVIDENCE_FORMAT, "task_id": view.task_id, "attempt": view.attempt,
        "diff_identity": view.diff_identity or None, "source": view.source, "atom_count": view.atom_count,
        "atoms": [{
            "qualified_name": atom.qualified_name, "path": atom.path or None,
            "lines": [atom.first_line, atom.last_line] if atom.first_line else None, "change": atom.change or None,
            "stages": [{
                "number": item.number, "stage": item.stage, "measures": item.measures, "outcome": item.outcome or None,
                "measured": item.measured, "not_measured": item.not_measured or None, "summary": item.summary,
                "findings": list(item.findings),
                "facts": {fact.name: _fact_value(fact.value_json) for fact in item.facts},
            } for item in atom.stages],
        } for atom in view.atoms],
        "files_not_examined": list(view.files_not_examined),
        "stages": [{"number": stage.number, "stage": stage.name, "phase": stage.phase, "outcome": stage.outcome or None,
                    "detail": stage.detail} for stage in view.stages],
    }


def _fact_text(text: str) -> str:
    value = _fact_value(text)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def print_evidence(ctx: CliContext, view: product_pb2.EvidenceView, *, max_fact_chars: int = 300) -> None:
    """One attempt's evidence: per atom, each atom stage's result in words (or why it measured nothing), then every
    stage with its outcome."""
    source = ("the evidence bundle (stage 35)" if view.source == "evidence-bundle"
              else "the attempt's ledger rows (no evidence bundle recorded)")
    identity = f" on diff {view.diff_identity[:12]}" if view.diff_identity else ""
    ctx.say(f"task {view.task_id}: attempt {view.attempt}{identity}; per-atom evidence from {source}")
    if not view.atoms:
        ctx.say("  no atom recorded: no atom stage listed a function or method of this attempt's diff")
    elif view.atom_count > len(view.atoms):
        ctx.say(f"  {len(view.atoms)} of {view.atom_count} atoms shown")
    for atom in view.atoms:
        lines = f":{atom.first_line}-{atom.last_line}" if atom.first_line else ""
        change = atom.change or "change not recorded"
        ctx.say(f"  atom {escape_for_display(atom.qualified_name)}  "
                f"({escape_for_display(atom.path or 'path not recorded')}{lines}, {change})")
        for item in atom.stages:
            head = f"    {item.number:>2} {item.measures:<30}"
            if not item.measured:
                ctx.say(f"{head}{escape_for_display(item.not_measured)}")
                continue
            said = f": {escape_for_display(item.summary)}" if item.summary else ""
            ctx.say(f"{head}{item.outcome} (stage {item.stage}){said}")
            for finding in item.findings:
                ctx.say(f"         finding: {escape_for_display(finding)}")
            for fact in item.facts:
                text = escape_for_display(_fact_text(fact.value_json))
                shown = text if len(text) <= max_fact_chars else text[:max_fact_chars - 1] + "…"
                ctx.say(f"         {escape_for_display(fact.name)}: {shown}")
    for line in view.files_not_examined:
        ctx.say(f"  atoms not listed from {escape_for_display(line)}")
    ctx.say("stages:")
    for stage in view.stages:
        outcome = stage.outcome or "not recorded"
        detail = f"  {escape_for_display(stage.detail)}" if stage.detail else ""
        ctx.say(f"  {stage.number:>2} {stage.name:<26} {outcome}{detail}")


# ─── memory ──────────────────────────────────────────────────────────────────────────────────────────

def _verdict_line(entry: memory_pb2.MemoryEntryView) -> str:
    verdict = entry.verdict
    word = "usable" if verdict.applicable else "not usable"
    return f"{word} ({verdict.reason}): {verdict.detail}"


def print_memory_list(ctx: CliContext, listing: memory_pb2.MemoryList) -> None:
    """Each entry: id, kind, state, text, and its verdict now with the reason."""
    if not listing.entries:
        ctx.say("no memory entries")
        return
    for entry in listing.entries:
        ctx.say(f"{entry.entry_id}  {entry.kind}  {entry.state}  {entry.text}")
        ctx.say(f"    {_verdict_line(entry)}")


def print_memory_detail(ctx: CliContext, detail: memory_pb2.MemoryEntryDetail) -> None:
    """One entry with what it was true of, its evidence, provenance and state history."""
    entry = detail.entry
    ctx.say(f"{entry.entry_id}  {entry.kind}")
    ctx.say(f"text: {entry.text}")
    ctx.say(f"state: {entry.state} since {entry.state_since} ({entry.state_cause}: {entry.state_reason})")
    ctx.say(f"verdict: {_verdict_line(entry)}")
    ctx.say(f"repository root commit: {entry.root_commit}; learned at {entry.learned_at_commit}")
    tools = ", ".join(f"{name} {version}" for name, version in sorted(entry.toolchain.items())) or "none recorded"
    ctx.say(f"toolchain: {tools}; dependency set {entry.dependency_hash[:16]}")
    ctx.say(f"body: {entry.body_json}")
    if entry.replaces_id:
        ctx.say(f"replaces: {entry.replaces_id}")
    for source in entry.sources:
        ctx.say(f"source: {source.path} @ {source.blob_sha[:12]}")
    for evidence in entry.evidence:
        ctx.say(f"evidence: {evidence.kind} {evidence.ref}")
    for edge in detail.edges:
        if edge.dependent_id == entry.entry_id:
            ctx.say(f"{edge.kind} {edge.source_id} ({edge.other_state}): {edge.other_text}")
        else:
            ctx.say(f"{edge.dependent_id} ({edge.other_state}) is {edge.kind} this: {edge.other_text}")
    for state in detail.history:
        cause = f" by {state.cause_entry_id}" if state.cause_entry_id else ""
        ctx.say(f"  {state.sequence}. {state.recorded_at} {state.state} ({state.cause}{cause}): {state.reason}")


def print_memory_invalidation(ctx: CliContext, done: memory_pb2.MemoryInvalidationView) -> None:
    """What one invalidation quarantined and flagged."""
    ctx.say(f"quarantined {done.entry_id}")
    for entry_id in done.quarantined_ids:
        ctx.say(f"quarantined {entry_id} (derived from it)")
    for entry_id in done.flagged_ids:
        ctx.say(f"needs review {entry_id} (influenced by it)")
_INSTRUCTION_STATES: Final = {
    "approved": "approved at this content: sent to the model as instructions (they grant no authority)",
    "changed-since-approval": "changed since it was approved: NOT sent to the model until approved again",
    "unapproved": "not approved: NOT sent to the model as instructions",
}


def print_instruction_files(ctx: CliContext, view: product_pb2.InstructionFilesView, *, show_content: bool) -> None:
    """Each instruction file: path, state in words, sha256 and size, its approvals; with ``show_content`` its
    text, each line escaped (a control character cannot hide what follows)."""
    if view.outcome:
        ctx.say(escape_for_display(view.outcome))
    if not view.root:
        return
    ctx.say(f"instruction files of {escape_for_display(view.root)} (looked for: {', '.join(view.paths)})")
    if not view.files:
        ctx.say("  none found")
    for file in view.files:
        ctx.say(f"{escape_for_display(file.path)}: {_INSTRUCTION_STATES.get(file.state, file.state)}")
        if file.problem:
            ctx.say(f"  cannot be approved or sent: {file.problem}")
        if file.sha256:
            ctx.say(f"  sha256 {file.sha256}  ({file.size} bytes)")
        for approval in file.approvals:
            revoked = f", revoked by {approval.revoked_by} at {approval.revoked_at}" if approval.revoked_at else ""
            ctx.say(f"  approved by {approval.approved_by} at {approval.approved_at} for sha256 "
                    f"{approval.sha256[:12]}…{revoked}")
        if show_content and file.text:
            ctx.say(f"  ----- {escape_for_display(file.path)} -----")
            _say_quoted(ctx, file.text)
            ctx.say("  ----- end -----")


def print_repository_approvals(ctx: CliContext, approvals: list[product_pb2.RepositoryApprovalView]) -> None:
    """Repository approvals, one block each: id and state, the exact operation, the repository, its origin."""
    if not approvals:
        ctx.say("no repository approvals")
        return
    for approval in approvals:
        state = (f"revoked {approval.revoked_at}: {escape_for_display(approval.revocation_reason)}"
                 if approval.revoked else "live")
        ctx.say(f"{approval.approval_id}  {state}")
        arguments = ", ".join(f"{escape_for_display(a.name)}={escape_for_display(a.value)}"
                              for a in approval.arguments)
        ctx.say(f"  operation  {approval.tool}({arguments}) in {escape_for_display(approval.cwd)}")
        if approval.program:
            ctx.say(f"  program    {escape_for_display(approval.program)}")
        ctx.say(f"  repository {escape_for_display(approval.repository_root)} "
                f"(root {', '.join(commit[:12] for commit in approval.root_commits)})")
        ctx.say(f"  allowed    {approval.created_at} in task {approval.task_id} (decision {approval.decision_id})")
        ctx.say(f"  identity   {approval.repository_identity}")


def _incident_line(incident: incidents_pb2.IncidentView) -> str:
    seen = "once" if incident.occurrences == 1 else f"{incident.occurrences} times"
    return (f"{incident.incident_id}  {incident.state}  seen {seen} (last {incident.last_seen})  "
            f"{escape_for_display(incident.summary)}")


def print_incident_report(ctx: CliContext, report: incidents_pb2.IncidentReport) -> None:
    """What a report did (new incident, one more occurrence, or a regression) and the incident's line."""
    incident = report.incident
    if report.created:
        ctx.say(f"new incident {incident.incident_id} in {escape_for_display(incident.repository_root)}")
    elif report.regressed:
        ctx.say(f"incident {incident.incident_id} REGRESSED: seen again after the fix of task "
                f"{incident.state_task_id or 'unknown'}")
    else:
        ctx.say(f"known incident {incident.incident_id}: occurrence {incident.occurrences}")
    ctx.say(f"  {_incident_line(incident)}")


def print_incident_list(ctx: CliContext, listing: incidents_pb2.IncidentList) -> None:
    """Each incident on one line: id, state, how often and when last seen, the fingerprint's summary."""
    if not listing.incidents:
        ctx.say("no incidents")
        return
    for incident in listing.incidents:
        ctx.say(_incident_line(incident))


def print_incident_detail(ctx: CliContext, detail: incidents_pb2.IncidentDetail) -> None:
    """One incident: repository, fingerprint parts, every state it entered, newest occurrences (redacted text)."""
    incident = detail.incident
    ctx.say(f"{incident.incident_id}  {incident.state}")
    ctx.say(f"repository: {escape_for_display(incident.repository_root)} ({incident.repository_id})")
    ctx.say(f"seen {incident.occurrences} time(s): first {incident.first_seen}, last {incident.last_seen}")
    ctx.say(f"fingerprint {incident.fingerprint[:16]} ({incident.shape}): "
            f"{escape_for_display(incident.exception_type)}")
    for frame in incident.frames:
        ctx.say(f"  frame {escape_for_display(frame.path)}:{escape_for_display(frame.function)}")
    ctx.say(f"  message {escape_for_display(incident.message)}")
    for state in detail.history:
        task = f" task {state.task_id}" if state.task_id else ""
        ctx.say(f"state {state.sequence}: {state.state} at {state.recorded_at} by {state.actor}{task}: "
                f"{escape_for_display(state.reason)}")
    for occurrence in detail.occurrences:
        ctx.say(f"occurrence {occurrence.occurrence_id} ({occurrence.source}, {occurrence.reported_at}), redacted:")
        _say_quoted(ctx, occurrence.redacted_text)


def print_incident_proposal(ctx: CliContext, proposal: incidents_pb2.IncidentProposal) -> None:
    """The draft task created from the incident, what to do next, and the incident's new state."""
    ctx.say(f"task {proposal.task_id} created (draft) from incident {proposal.detail.incident.incident_id}; "
            f"it starts only after you approve its plan: codeflux task plan {proposal.task_id}")
    ctx.say(f"incident {proposal.detail.incident.incident_id} is now {proposal.detail.incident.state}")


def _say_quoted(ctx: CliContext, text: str) -> None:
    """Text a person or a repository wrote, one ``  | `` line per line, hidden characters escaped."""
    for line in text.splitlines():
        ctx.say(f"  | {escape_for_display(line)}")
