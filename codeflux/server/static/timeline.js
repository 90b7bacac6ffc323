// The task's timeline: ONE card per committed event, keyed by its sequence, never duplicated on replay or
// reconnect. It reads as a conversation: what the agent said, each tool call as one row (its command or file by
// name; its live output and committed result expand inside that row), check results, the person's decisions and
// the task's state. Every other event (execution records, model calls, checkpoints, system decisions — the ids
// and internal keys) is internal: its card is shown only with "Show internal events". Approval cards (a tool
// request waiting for a person) get their exact operation from the TaskView's pending approvals, can be answered
// only while that TaskView shows the task awaiting authority with the request pending, and lose their buttons once
// an `authority-decided` event resolves them. Tool results and live output: tools.js. Kinds are named only through
// event_kinds.js, which is generated from the event registry (codeflux/domain/events.py); a test fails on a kind or
// payload key the registry lacks. While a request waits for the person, its card is pinned at the top of the task
// ("Needs you", workspace.js) and a placeholder holds its place in the timeline; once decided it goes back.
//
// Record, then draw (issue 20 item 5): every event is RECORDED as it arrives (RECORDERS: the calls, approvals,
// decisions and operations it names, which request row shows a tool's activity, the live output and results in
// tools.js), but a card is DRAWN (CARD_BUILDERS, from those records only) just when it is attached — the newest
// WINDOW, then WINDOW more per "Show earlier events" — or when a waiting approval is pinned. A 10,000-event replay
// draws a few hundred cards (the newest WINDOW of each batch), not 10,000 (building every card took ~1.1 s).

import { badge, clear, el, facts, mutatingButton, textList } from "./dom.js";
import { EventKind, STAGE_PHASES } from "./event_kinds.js";
import { escapeForDisplay, parsePayload, timeOf } from "./format.js";
import { ToolActivity } from "./tools.js";

const WAITING = "waiting for the task to ask for this decision";
// Cards attached to the page at once: the newest WINDOW, and WINDOW more per "Show earlier events" (a task of
// 10,000 events keeps a few thousand DOM nodes). Older events are recorded (they still count) but not drawn.
export const WINDOW = 120;

export class Timeline {
  constructor(app) {
    this.app = app;
    // Every event's record, oldest first: { sequence, event, payload, node } — `node` is what stands at its place in
    // the timeline once drawn (its card, or the placeholder of a card pinned under "Needs you").
    this.entries = [];
    this.bySequence = new Map();
    this.approvals = new Map(); // request id → { at (its entry), card, detail, buttons, resolved, pinned, ... }
    this.decisions = new Map();
    this.operations = new Map();
    this.tools = new ToolActivity(app, (payload, event) => resultRow.call(this, payload, event));
    this.root = el("ol", { class: "timeline", testid: "timeline", "aria-live": "polite", dataset: { details: "0" } });
    this.calls = new Map(); // request id → { tool, summary } from its tool-requested event
    const toggle = el("input", { type: "checkbox", testid: "timeline-details",
      onchange: () => { this.root.dataset.details = toggle.checked ? "1" : "0"; } });
    this.controls = el("p", { class: "timeline-controls" }, el("label", {}, toggle,
      " Show internal events (execution records, model calls, checkpoints, ids)"));
    this.empty = el("li", { class: "empty", testid: "timeline-empty", text: "No events yet." });
    this.root.append(this.empty);
    this.limit = WINDOW; // how many of the newest entries are attached
    this.shown = 0; // the index of the oldest attached entry (the ones before it wait under "Show earlier events")
    this.earlierCount = el("span", {});
    this.earlier = el("li", { class: "card earlier", testid: "timeline-earlier" }, this.earlierCount, " ",
      el("button", { type: "button", testid: "timeline-show-earlier", onclick: () => this.showEarlier(),
        text: "Show earlier events" }));
  }

  updateEarlier() {
    if (this.shown) {
      this.earlierCount.textContent = `${this.shown} earlier event(s) not shown.`;
      if (!this.earlier.isConnected) this.root.prepend(this.earlier);
    } else if (this.earlier.isConnected) {
      this.earlier.remove();
    }
  }

  // What stands at an entry's place in the timeline, drawn from the records the first time it is needed.
  nodeOf(entry) {
    if (!entry.node) entry.node = this.render(entry);
    return entry.node;
  }

  showEarlier() {
    const from = Math.max(0, this.shown - WINDOW);
    if (from === this.shown) return;
    const nodes = this.entries.slice(from, this.shown).map((entry) => this.nodeOf(entry));
    this.limit += this.shown - from;
    this.shown = from;
    this.earlier.after(...nodes);
    this.updateEarlier();
    this.tools.loadShown();
  }

  // Where pending approval cards are shown while they wait (the task panel's "Needs you").
  pinInto(container) {
    this.pinned = container;
  }

  // An approval's card, drawn if it was not yet (a waiting request's card is pinned wherever its event is).
  approvalCard(approval) {
    if (!approval.card && approval.at) this.nodeOf(approval.at);
    return approval.card;
  }

  // Move a waiting request's card under "Needs you" (a placeholder keeps its place), or back once decided. A card
  // made from the TaskView before replay reached its event is already there; once decided it takes its event's
  // place (it stays pinned until replay reaches that event).
  pin(approval, waiting) {
    if (!this.pinned) return;
    if (waiting && !approval.pinned) {
      const card = this.approvalCard(approval);
      if (!card) return;
      const placeholder = el("li", { class: "card placeholder", testid: "approval-pinned-placeholder",
        text: "A tool request waits for your decision: its card is pinned at the top of the task, under Needs you.",
        dataset: { pinnedSeq: card.dataset.seq || "" } });
      if (card.isConnected) card.replaceWith(placeholder);
      if (approval.at) approval.at.node = placeholder;
      this.pinned.append(card);
      approval.pinned = true;
    } else if (!waiting && approval.pinned && approval.at) {
      const card = approval.card;
      if (!card.dataset.seq) card.dataset.seq = approval.at.sequence; // a card made from the TaskView
      const holder = approval.at.node;
      if (holder && holder.isConnected) holder.replaceWith(card);
      else card.remove(); // its place is among the earlier events not shown: it waits there
      approval.at.node = card;
      approval.pinned = false;
    }
  }

  // A pending approval the TaskView shows before replay reached its `tool-requested` event (the pinned decision
  // is fetched live, ARCHITECTURE §11 as amended by issue 20 item 5): its card is made from the TaskView and
  // pinned at once, answerable before the replay boundary.
  pinEarly(detail) {
    if (!this.pinned) return;
    const requestId = detail.requestId;
    const parts = approvalParts.call(this, requestId, detail.tool, approvalDetail(detail));
    const card = el("li", { class: "card card-tool-requested", testid: "approval-card", dataset: { requestId } },
      el("div", { class: "card-meta" }, el("span", { class: "committed", text: "pending — from the task's current view" })),
      el("h3", { text: `Approval needed: ${detail.tool || "tool"}` }), parts.content);
    this.approvals.set(requestId, { at: null, card, detail: parts.detail, buttons: parts.buttons, resolved: false,
      detailShown: true, pinned: true, early: true });
    this.tools.attach(requestId, parts.content);
    this.pinned.append(card);
  }

  has(sequence) {
    return this.bySequence.has(String(sequence));
  }

  add(event) {
    this.addMany([event]);
  }

  // A run of events (a replay batch): each is recorded; only those among the newest `limit` are drawn, off the page,
  // and attached in one go (the attached ones that fall out of the window are detached).
  addMany(events) {
    const before = this.entries.length;
    for (const event of events) {
      const sequence = String(event.sequence);
      if (this.bySequence.has(sequence)) continue;
      const entry = { sequence, event, payload: parsePayload(event), node: null };
      this.bySequence.set(sequence, entry);
      this.entries.push(entry);
      const recorder = RECORDERS[event.kind];
      if (recorder) recorder.call(this, entry.payload, entry);
    }
    if (this.entries.length === before) return;
    if (this.empty.isConnected) this.empty.remove();
    const from = Math.max(0, this.entries.length - this.limit);
    for (let i = this.shown; i < Math.min(from, before); i += 1) this.entries[i].node.remove();
    const fragment = document.createDocumentFragment();
    for (let i = Math.max(from, before); i < this.entries.length; i += 1) fragment.append(this.nodeOf(this.entries[i]));
    this.root.append(fragment);
    this.shown = from;
    this.updateEarlier();
    this.tools.loadShown();
  }

  // An entry's card, drawn from the records (a builder may say what to do with the card once it is made: `drawn`).
  render(entry) {
    const { event, payload } = entry;
    const builder = CARD_BUILDERS[event.kind] || genericCard;
    const body = builder.call(this, payload, event, entry);
    const internal = body.internal === undefined ? !CONVERSATION.has(event.kind) : body.internal;
    const card = el("li", { class: `card card-${event.kind}${internal ? " internal" : ""}`, testid: body.testid || "timeline-card",
      dataset: internal ? { internal: "1", seq: entry.sequence, kind: event.kind } : { seq: entry.sequence, kind: event.kind } },
      el("div", { class: "card-meta" },
        el("span", { class: "seq", text: `#${event.sequence}` }),
        el("span", { class: "committed", text: "committed" }),
        el("time", { text: timeOf(event.createdAtUs) })),
      el("h3", { text: body.title }),
      body.content);
    if (body.drawn) body.drawn(card);
    return card;
  }

  // Fill approval cards from TaskView.pending_approvals (the exact ordered arguments etc.); their buttons
  // are available only while the TaskView shows the task awaiting authority with this request pending
  // (so a decision is sent with the revision at which the task asked).
  updateApprovals(task) {
    const pending = new Map((task.pendingApprovals || []).map((a) => [a.requestId, a]));
    for (const [requestId, detail] of pending) if (!this.approvals.has(requestId)) this.pinEarly(detail);
    for (const [requestId, entry] of this.approvals) {
      const detail = pending.get(requestId);
      if (detail && !entry.detailShown && this.approvalCard(entry)) {
        clear(entry.detail).append(approvalDetail(detail));
        entry.detailShown = true;
      }
      if (!entry.resolved && !detail && this.decisions.has(requestId)) this.resolve(requestId);
      this.pin(entry, Boolean(detail) && !entry.resolved);
      // Not drawn yet (its buttons are set when it is) or answered (no buttons left).
      if (!entry.buttons || entry.resolved) continue;
      const asking = Boolean(detail) && task.state === "awaiting-authority";
      for (const button of entry.buttons.querySelectorAll("button")) {
        // Allow-for-task is not offered where programs run with no OS box, allow-for-repository not while commands
        // run unconfined at all (the card says why).
        const refusals = detail ? { "approval-allow-for-task": detail.allowForTaskRefusal,
          "approval-allow-for-repository": detail.allowForRepositoryRefusal } : {};
        const refused = refusals[button.dataset.testid] || "";
        button.dataset.unavailable = asking && !refused ? "" : "1";
        button.dataset.reason = refused || (asking ? "" : `${WAITING} (the task is ${task.state || "unknown"})`);
      }
    }
    this.app.gate();
  }

  // Once per turn of the event loop, however many approval cards a replay batch made: each card's own refresh of
  // every approval card and every button made a 10,000-event replay quadratic.
  scheduleApprovals() {
    if (this.approvalsScheduled) return;
    this.approvalsScheduled = true;
    queueMicrotask(() => {
      this.approvalsScheduled = false;
      if (this.app.task) this.updateApprovals(this.app.task);
    });
  }

  resolve(requestId) {
    const entry = this.approvals.get(requestId);
    const decision = this.decisions.get(requestId);
    if (!entry || !decision || entry.resolved) return;
    entry.resolved = true;
    if (entry.card) showResolved(entry, decision);
    this.pin(entry, false);
  }
}

// A decided approval card: its buttons give way to the outcome.
function showResolved(approval, decision) {
  approval.card.dataset.resolved = decision.outcome;
  clear(approval.buttons).append(
    el("p", { class: "outcome", testid: "approval-outcome" }, "Resolved: ", badge(decision.outcome),
      decision.decided_by ? ` by ${decision.decided_by}` : ""));
}

// Arguments, the working directory, the scope (which names the program's path) and the reason (which may
// quote the operation) are shown escaped (format.js escapeForDisplay): a bidi override or a zero-width
// character reads as \u202e / \u200b, never as reordered or hidden text.
function approvalDetail(a) {
  const args = el("ol", { class: "arguments", testid: "approval-arguments" },
    (a.arguments || []).map((arg) => el("li", {}, el("code", { text: escapeForDisplay(arg.name) }), " = ",
      el("code", { text: escapeForDisplay(arg.value) }))));
  const meaning = a.meaning
    ? el("p", { class: "notice", testid: "approval-meaning" }, el("strong", { text: "Approving means: " }), a.meaning)
    : null;
  // What Deny records is said before the click: a denial binds to the task and the capability, not the tool.
  const deny = a.denyMeaning
    ? el("p", { class: "notice", testid: "approval-deny-meaning", dataset: { blocks: (a.denyBlocks || []).join(" ") } },
      el("strong", { text: "Deny " }), a.denyMeaning, ".")
    : null;
  const refusal = a.allowForTaskRefusal
    ? el("p", { testid: "approval-allow-for-task-refusal" }, `Allow for this task is not offered: ${a.allowForTaskRefusal}`)
    : null;
  const repository = a.allowForRepositoryRefusal
    ? el("p", { testid: "approval-allow-for-repository-refusal" },
      `Allow for this repository is not offered: ${a.allowForRepositoryRefusal}`)
    : el("p", { class: "notice", testid: "approval-allow-for-repository-meaning" },
      el("strong", { text: "Allow for this repository means: " }),
      "this exact operation (every argument, the program and the working directory; repository identity " +
      `${a.repositoryIdentity || "unknown"}) then runs without asking in this task and in every later task of ` +
      "this repository, until you revoke it in Settings or with `codeflux approvals revoke`. Any other argument, " +
      "program or repository still asks, and a capability you deny in a task still wins.");
  return el("div", {}, meaning, deny, refusal, allowedBefore(a.allowedBefore, a.allowedBeforeRefused), repository,
    facts([["Tool", escapeForDisplay(a.tool)], ["Operation identity", a.operationIdentity],
      ["Scope", escapeForDisplay(a.scope)], ["Working directory", escapeForDisplay(a.cwd)],
      ["Reason", escapeForDisplay(a.reason)]], "approval-facts"),
    el("h4", { text: "Arguments (exact, in order; hidden characters escaped as \\uXXXX, a backslash as \\\\)" }), args,
    el("h4", { text: "Capabilities" }), textList(a.capabilities, "none", "approval-capabilities"));
}

// Earlier decisions by a person that allowed exactly this operation on this repository (task, date), and the
// earlier allowances memory refused now, each with the applicability check's reason (never counted as allowed).
function allowedBefore(earlier, refused) {
  const stale = (refused || []).length
    ? el("p", { testid: "approval-allowed-before-refused", dataset: { count: String(refused.length) } },
      `${refused.length} earlier allowance(s) of this operation no longer apply: `, refused.join("; "))
    : null;
  if (!(earlier || []).length) {
    return el("div", {}, el("p", { testid: "approval-allowed-before", dataset: { count: "0" },
      text: "Not allowed before on this repository." }), stale);
  }
  return el("div", {}, el("p", { class: "notice", testid: "approval-allowed-before",
    dataset: { count: String(earlier.length) } },
  el("strong", { text: "Allowed before on this repository: " }),
  earlier.map((e) => `in task ${e.taskId} on ${e.decidedAt} (${e.outcome})`).join("; ")), stale);
}

// What a row calls a tool call: its tool, and its command or file by name (an event recorded before codeflux
// kept the summary shows the tool alone).
function callLine(call, testid) {
  return el("p", { class: "tool-call-line" }, el("strong", { text: call.tool }), call.summary ? " " : "",
    call.summary ? el("code", { testid, text: call.summary }) : null);
}

function identity(pairs) {
  return el("details", { class: "ids" }, el("summary", { text: "Identity (ids)" }), facts(pairs));
}

// What a row calls a tool call (from its tool-requested event).
function callOf(payload) {
  return { tool: payload.tool || "unknown tool", summary: typeof payload.summary === "string" ? payload.summary : "" };
}

// Recorded for every tool-requested event: its call, that its row shows the request's activity, and for a pending
// one its approval (drawn when shown or pinned).
function recordToolRequested(payload, entry) {
  const requestId = payload.request_id;
  this.calls.set(requestId, callOf(payload));
  if (payload.outcome !== "pending") {
    this.tools.own(requestId);
    return;
  }
  const early = this.approvals.get(requestId);
  if (early && early.early) {
    // Its card was made from the TaskView and pinned before replay got here: this event's card only holds its place.
    entry.early = true;
    early.at = entry;
    queueMicrotask(() => { if (early.resolved) this.pin(early, false); });
    return;
  }
  this.tools.own(requestId);
  entry.approval = { at: entry, card: null, detail: null, buttons: null, resolved: false, detailShown: false,
    pinned: false, early: false };
  this.approvals.set(requestId, entry.approval);
  queueMicrotask(() => {
    this.resolve(requestId);
    this.scheduleApprovals();
  });
}

function toolRequested(payload, event, entry) {
  const call = callOf(payload);
  const requestId = payload.request_id;
  if (payload.outcome !== "pending") {
    const content = el("div", { class: "tool-call" }, callLine(call, "tool-call-summary"),
      el("p", {}, "Decision: ", badge(payload.outcome || "unknown")),
      payload.repository_approval_id ? el("p", { testid: "decided-by-repository-approval" },
        `Allowed for this repository earlier (${payload.repository_approval_id}); no card was needed.`) : null,
      identity([["Operation", payload.operation], ["Request", payload.request_id],
        ["Needs", (payload.needs || []).join(", ")]]));
    this.tools.attach(requestId, content);
    return { title: "Tool call", testid: "tool-card", content };
  }
  if (entry.early) {
    return { title: `Approval requested: ${payload.tool || "tool"}`, testid: "approval-pinned-placeholder",
      content: el("p", { text: "Waiting — pinned above, under Needs you." }),
      drawn: (card) => { card.dataset.requestId = requestId; } };
  }
  const approval = entry.approval;
  const detail = el("div", { class: "approval-detail" }, callLine(call, "tool-call-summary"),
    facts([["Tool", payload.tool], ["Operation", payload.operation], ["Needs", (payload.needs || []).join(", ")]]));
  const parts = approvalParts.call(this, requestId, payload.tool, detail);
  this.tools.attach(requestId, parts.content);
  return { title: `Approval needed: ${payload.tool || "tool"}`, testid: "approval-card", content: parts.content,
    drawn: (card) => {
      card.dataset.requestId = requestId;
      Object.assign(approval, { card, detail, buttons: parts.buttons });
      if (approval.resolved) showResolved(approval, this.decisions.get(requestId));
      else this.scheduleApprovals(); // its buttons' state
    } };
}

// The body of an approval card: what it asks, its detail and its buttons. The buttons' scope is "pinned": they are
// answerable while the task's stream is connected, before its replay boundary too (app.js gate), because the
// decision is made on the TaskView fetched live (its revision and the card's confirmation go with it).
function approvalParts(requestId, tool, detail) {
  const buttons = el("div", { class: "actions", testid: "approval-buttons" },
    ["allow-once", "allow-for-task", "allow-for-repository", "deny"].map((decision) => mutatingButton(
      { "allow-once": "Allow once", "allow-for-task": "Allow for this task",
        "allow-for-repository": "Allow for this repository", deny: "Deny" }[decision],
      () => this.app.decide(requestId, decision), `approval-${decision}`,
      { dataset: { mutating: "1", scope: "pinned", unavailable: "1", reason: WAITING } })));
  const content = el("div", { class: "approval", dataset: { requestId } },
    el("p", { class: "notice", text: "The agent asks to run this exact operation. Nothing runs until you decide." }),
    detail, buttons);
  return { content, detail, buttons };
}

function recordAuthorityDecided(payload) {
  this.decisions.set(payload.request_id, payload);
  queueMicrotask(() => this.resolve(payload.request_id));
}

function authorityDecided(payload) {
  const denied = payload.denied && payload.denied.length
    ? el("p", { testid: "denied-capabilities" }, `Blocked for this task: ${payload.denied.join(", ")}`) : null;
  const repository = payload.repository_approval_id
    ? el("p", { testid: "allowed-for-repository" },
      `Also allowed for this repository (${payload.repository_approval_id}): this exact operation runs without asking ` +
      "in every later task of it until revoked in Settings.") : null;
  const call = this.calls.get(payload.request_id);
  return {
    title: "Decision recorded",
    testid: "decision-card",
    // The rules' own rulings are bookkeeping; a person's (or the headless policy's) decision is part of the story.
    internal: payload.decided_by === "system",
    content: el("div", {}, call ? callLine(call) : null,
      el("p", {}, "Outcome: ", badge(payload.outcome), ` (by ${payload.decided_by || "unknown"})`), denied, repository),
  };
}

// A request without a row of its own shows its activity in its execution's card.
function recordExecutionIntended(payload, entry) {
  this.operations.set(payload.execution_id, payload.operation);
  if (payload.request_id && !this.tools.hostOf(payload.request_id)) {
    this.tools.own(payload.request_id);
    entry.hosts = true;
  }
}

function executionIntended(payload, event, entry) {
  const content = el("div", {}, facts([["Operation", payload.operation], ["Execution", payload.execution_id],
    ["Used approval", payload.consumed_approval_id || "none"]]));
  if (entry.hosts) this.tools.attach(payload.request_id, content); // no row of its own
  return { title: "Tool execution started", testid: "tool-card", content };
}

// The event says how it ended; its result goes into the tool call's own row (one row per call) — drawn there, now or
// when that row is — collapsed: the committed result is read when it is expanded (tools.js). Without that row (never
// on a whole replay) it stays here.
function recordExecutionFinished(payload, entry) {
  entry.hosted = this.tools.hostOf(payload.request_id || "");
  this.tools.recordFinished(payload, entry.event, entry.hosted);
}

function resultRow(payload, event) {
  const known = payload.exit_code !== null && payload.exit_code !== undefined;
  const requestId = payload.request_id || "";
  const details = el("details", { class: "tool-result-details", testid: "tool-result-details",
    ontoggle: () => this.tools.loadShown() }, el("summary", { text: "Output and committed result" }),
  this.tools.slot(payload, event));
  return el("div", { testid: "tool-result", dataset: { requestId } },
    el("p", { class: "tool-call-outcome", testid: "tool-call-outcome" }, "Ended: ", badge(payload.state || "unknown"),
      known ? `, exit code ${payload.exit_code}` : "", payload.failure_kind ? ` — ${payload.failure_kind}` : ""),
    details);
}

function executionFinished(payload, event, entry) {
  const requestId = payload.request_id || "";
  const ids = identity([["Operation", this.operations.get(payload.execution_id) || "unknown"],
    ["Execution", payload.execution_id], ["Request", requestId]]);
  if (entry.hosted) {
    return { title: "Tool execution finished", testid: "tool-card", internal: true,
      content: el("div", {}, el("p", { text: "Its result is shown in the tool call's row." }), ids) };
  }
  const call = this.calls.get(requestId);
  return { title: "Tool call finished", testid: "tool-card", internal: false,
    content: el("div", {}, call ? callLine(call) : null, resultRow.call(this, payload, event), ids) };
}

function modelCall(payload, event) {
  const pairs = [["Request", payload.request_id], ["State", payload.state], ["Model", payload.model]];
  if ("cost" in payload) pairs.push(["Cost (measured)", payload.cost]);
  if ("reserved" in payload) pairs.push(["Reserved (estimate)", payload.reserved]);
  if ("spent" in payload) pairs.push(["Spent so far", payload.spent]);
  if ("remaining" in payload) pairs.push(["Remaining", payload.remaining]);
  return { title: event.kind.replaceAll("-", " "), testid: "cost-card",
    content: facts(pairs.filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => [k, String(v)])) };
}

function stateChanged(payload) {
  return { title: `Task state: ${payload.to}`, testid: "state-card",
    content: el("p", {}, badge(payload.from), " → ", badge(payload.to), payload.reason ? ` — ${payload.reason}` : "") };
}

// "3 satisfied · 1 failed" for a list of [stage, outcome] pairs.
function outcomeCounts(stages) {
  const counts = new Map();
  for (const [, outcome] of stages) counts.set(outcome, (counts.get(outcome) || 0) + 1);
  return [...counts].map(([outcome, count]) => `${count} ${outcome}`).join(" · ");
}

// A step's [stage, outcome] pairs under their phases' names ("B · Atoms"), in stage order; a stage this client
// does not know (a newer coordinator's) is listed under "Other stages".
function byPhase(stages) {
  const groups = new Map();
  for (const pair of stages) {
    const known = STAGE_PHASES[pair[0]];
    const phase = known ? `${known[1]} · ${known[2]}` : "Other stages";
    groups.set(phase, [...(groups.get(phase) || []), pair]);
  }
  return [...groups];
}

// One pipeline step's verdicts: counted by outcome in the title, what did not pass named with its phase, every stage
// on demand grouped by phase.
function stagesRecorded(payload) {
  const stages = payload.stages || [];
  const summary = outcomeCounts(stages) || "no stages";
  const notable = stages.filter(([, outcome]) => outcome !== "satisfied" && outcome !== "skipped");
  const phaseOf = (name) => (STAGE_PHASES[name] ? ` (phase ${STAGE_PHASES[name][1]} · ${STAGE_PHASES[name][2]})` : "");
  return { title: `Checks (attempt ${payload.attempt}): ${summary}`, testid: "stages-card",
    content: el("div", {},
      notable.length ? el("ul", { class: "plain", testid: "stages-notable" },
        notable.map(([name, outcome]) => el("li", {}, badge(outcome), ` ${name}${phaseOf(name)}`))) : null,
      el("details", {}, el("summary", { text: `Every stage of this step (${stages.length}), by phase` }),
        byPhase(stages).map(([phase, pairs]) => el("div", { testid: "stages-phase", dataset: { phase } },
          el("p", { class: "detail", text: `${phase}: ${outcomeCounts(pairs)}` }),
          textList(pairs.map(([name, outcome]) => `${name}: ${outcome}`), "no stages")))),
      el("button", { type: "button", onclick: () => this.app.openLedger(), text: "Open the pipeline ledger" })) };
}

function recoveryAssessed(payload) {
  return { title: "Recovery needed", testid: "timeline-card",
    content: el("div", {}, facts([["Recommended", payload.recommended]]),
      el("button", { type: "button", onclick: () => this.app.showView("recovery"), text: "Open recovery" })) };
}

function agentMessage(payload) {
  const notes = [];
  if (payload.truncated) notes.push("(cut for the timeline)");
  if (payload.redacted) notes.push("(secrets redacted before it was stored)");
  return { title: "The agent said", testid: "agent-message-card",
    content: el("div", {}, el("p", { class: "agent-text" }, payload.text || ""),
      notes.length ? el("p", { class: "note" }, notes.join(" ")) : null,
      el("p", { class: "note" }, `attempt ${payload.attempt} · committed`)) };
}

const REFUSED_DECISION = { "approve-plan": "An approval of the plan", decide: "An answer to a tool request",
  accept: "An accept of the change" };

function browserDecisionRefused(payload) {
  const what = REFUSED_DECISION[payload.decision] || "A decision";
  return { title: "A decision was refused", testid: "decision-refused-card",
    content: el("div", {}, el("p", { text: `${what} reached codeflux's browser connection without the `
      + `confirmation of the card it answers (${payload.reason}), so nothing was decided. If you did not just `
      + "click an outdated card, something else holds this browser session: see docs/security.md." }),
    facts([["Answered", payload.subject]])) };
}

function genericCard(payload, event) {
  const summary = Object.entries(payload).slice(0, 8).map(([key, value]) =>
    [key, typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)]);
  return { title: event.kind.replaceAll("-", " "), testid: "timeline-card", content: facts(summary) };
}

const minorUnits = (minor) => (minor === undefined || minor === null ? "unknown" : `${minor} minor units (e.g. cents)`);

function planEvent(title) {
  return (payload) => ({ title: `${title} (revision ${payload.revision})`, testid: "plan-event-card",
    content: el("div", {}, payload.by || payload.created_by ? el("p", { text: `by ${payload.by || payload.created_by}` }) : null,
      identity([["Plan digest", payload.sha256]])) });
}

// The kinds that make the conversation; every other kind's card is internal (see the top of this file).
const CONVERSATION = new Set([
  EventKind.AGENT_MESSAGE, EventKind.TOOL_REQUESTED, EventKind.TOOL_EXECUTION_FINISHED, EventKind.AUTHORITY_DECIDED,
  EventKind.TASK_CREATED, EventKind.TASK_STATE_CHANGED, EventKind.STAGE_VERDICTS_RECORDED,
  EventKind.PLAN_REVISION_RECORDED, EventKind.PLAN_APPROVED, EventKind.PLAN_SENT_BACK, EventKind.ATTEMPT_SENT_BACK,
  EventKind.TASK_ACCEPTED, EventKind.ACCEPT_CONFLICTED, EventKind.DELIVERY_RECORDED, EventKind.RECOVERY_ASSESSED,
  EventKind.MODEL_CALL_REFUSED, EventKind.BUDGET_WARNING, EventKind.BUDGET_EXHAUSTED,
  EventKind.BROWSER_DECISION_REFUSED,
]);

const CARD_BUILDERS = {
  [EventKind.PLAN_REVISION_RECORDED]: planEvent("Plan drafted"),
  [EventKind.PLAN_APPROVED]: planEvent("Plan approved"),
  [EventKind.PLAN_SENT_BACK]: planEvent("Plan sent back"),
  [EventKind.ATTEMPT_SENT_BACK]: (payload) => ({ title: `Attempt ${payload.attempt} sent back`, testid: "timeline-card",
    content: el("div", {}, el("p", { text: `at the ${payload.gate} gate; the next rung: ${payload.rung} (${payload.decision})` }),
      identity([["Failure fingerprint", payload.fingerprint]])) }),
  [EventKind.ACCEPT_CONFLICTED]: (payload) => ({ title: "Accept stopped: the branch moved and conflicts",
    testid: "timeline-card", content: el("div", {}, el("p", { text: `branch ${payload.branch}` }),
      textList(payload.conflicting_paths || [], "no paths recorded")) }),
  [EventKind.BUDGET_WARNING]: (payload) => ({ title: "Budget warning", testid: "timeline-card",
    content: el("p", { text: `spent ${minorUnits(payload.spent_minor)}; the warning is at ${minorUnits(payload.warning_minor)}` }) }),
  [EventKind.BUDGET_EXHAUSTED]: (payload) => ({ title: "Budget exhausted: no more model calls", testid: "timeline-card",
    content: facts([["Spent", String(payload.spent ?? "unknown")], ["Remaining", String(payload.remaining ?? "unknown")]]) }),
  [EventKind.TOOL_REQUESTED]: toolRequested,
  [EventKind.AUTHORITY_DECIDED]: authorityDecided,
  [EventKind.TOOL_EXECUTION_INTENDED]: executionIntended,
  [EventKind.TOOL_EXECUTION_FINISHED]: executionFinished,
  [EventKind.TOOL_OUTPUT]: function toolOutput(payload, event, entry) { return this.tools.outputCard(entry.output); },
  [EventKind.MODEL_CALL_PLANNED]: modelCall,
  [EventKind.MODEL_CALL_FINISHED]: modelCall,
  [EventKind.MODEL_CALL_REFUSED]: modelCall,
  [EventKind.TASK_STATE_CHANGED]: stateChanged,
  [EventKind.STAGE_VERDICTS_RECORDED]: stagesRecorded,
  [EventKind.TASK_CREATED]: (payload) => ({ title: "Task created", testid: "timeline-card",
    content: facts([["Title", payload.title]].filter(([, v]) => v)) }),
  [EventKind.TASK_ACCEPTED]: (payload) => ({ title: "Change accepted", testid: "accepted-card",
    content: facts([["Branch", payload.branch], ["Landed", payload.landed_head], ["How", payload.kind]]) }),
  [EventKind.RECOVERY_ASSESSED]: recoveryAssessed,
  [EventKind.AGENT_MESSAGE]: agentMessage,
  [EventKind.BROWSER_DECISION_REFUSED]: browserDecisionRefused,
};

// What an event changes in the timeline's records, whether or not its card is ever drawn (see the top of this file).
const RECORDERS = {
  [EventKind.TOOL_REQUESTED]: recordToolRequested,
  [EventKind.AUTHORITY_DECIDED]: recordAuthorityDecided,
  [EventKind.TOOL_EXECUTION_INTENDED]: recordExecutionIntended,
  [EventKind.TOOL_EXECUTION_FINISHED]: recordExecutionFinished,
  [EventKind.TOOL_OUTPUT]: function recordOutput(payload, entry) { entry.output = this.tools.recordOutput(payload); },
};
