// The workspace: the task list (threads, task_list.js) on the left, the selected task (header, actions, plan,
// budget, timeline of cards) in the middle, the composer below, and a drawer for review / ledger.

import { badge, clear, el, mutatingButton } from "./dom.js";
import { actionBar, budgetCard, planCard } from "./cards.js";

// The composer. A codeflux sample repository suggests its TASK.md as the requirement (prefilled, editable);
// the budget is prefilled with the default hard limit, else with a visible, editable suggestion of 1.00.
export const SUGGESTED_BUDGET = "1.00";

export function composer(app) {
  const repo = app.repository;
  app.composerSuggest = null;
  if (!repo) {
    return el("section", { class: "composer", testid: "composer" },
      el("p", { text: "Choose a repository to describe a task." }),
      el("button", { type: "button", onclick: () => app.showView("chooser"), text: "Choose a repository" }));
  }
  const title = el("input", { id: "task-title", testid: "task-title", placeholder: "Short title (optional)" });
  const text = el("textarea", { id: "requirement", testid: "requirement", rows: 6,
    placeholder: "Describe the outcome you want, e.g. 'make the failing test pass'" });
  const origin = el("span", { class: "suggested", testid: "requirement-origin" });
  let typed = false;
  text.addEventListener("input", () => { typed = true; });
  const suggest = (suggestion) => {
    if (!suggestion || typed || text.value !== "") return;
    text.value = suggestion;
    origin.textContent = "prefilled from the sample's TASK.md — edit it as you like";
    text.dataset.prefilled = "1";
  };
  if (repo.suggestedRequirement !== undefined) suggest(repo.suggestedRequirement);
  else { app.composerSuggest = (suggestion) => { if (text.isConnected) suggest(suggestion); }; app.loadSuggestion(repo); }
  const preset = app.settings && app.settings.defaultHardLimit ? decimalOf(app.settings.defaultHardLimit) : "";
  const budget = el("input", { id: "task-budget", testid: "task-budget", inputmode: "decimal", value: preset || SUGGESTED_BUDGET,
    placeholder: "e.g. 2.00" });
  const presetFrom = app.settings && app.settings.defaultHardLimitSource;
  const budgetNote = preset ? el("span", { class: "suggested", testid: "budget-origin",
    text: !presetFrom || presetFrom === "settings" ? "your default hard limit" : `your default hard limit (${presetFrom})` })
    : el("span", { class: "suggested", testid: "budget-origin", text: "suggested — no default budget is set; edit it as you like" });
  // Which provider this task will use, before it starts (Settings → Providers chooses it unless a start flag does).
  // The overview is re-read whenever the provider changes here (the demo, Settings → Providers), so it is current.
  const settings = app.settings || {};
  const overview = app.overview || {};
  const providerText = overview.providerLabel || settings.providerLabel || "unknown";
  const scripted = Boolean(overview.scripted) || providerText === "scripted demo — not an AI model";
  const providerLine = el("p", { class: scripted ? "label-scripted" : "provider-line", testid: "composer-provider",
    dataset: { source: settings.providerSource || "" } },
  "Provider for this task: ", el("strong", { testid: "composer-provider-label", text: providerText }),
  settings.providerSource === "flag" ? " (set by the --provider flag of codeflux start)"
    : settings.providerSource === "environment" ? " (set by CODEFLUX_PROVIDER in the environment of codeflux start)" : "",
  " ",
  el("button", { type: "button", class: "link", testid: "composer-change-provider", onclick: () => app.showView("settings"),
    text: ["flag", "environment"].includes(settings.providerSource) ? "Settings → Providers"
      : "Change in Settings → Providers" }));
  return el("section", { class: "composer", testid: "composer" },
    el("h2", { text: "Describe the outcome" }),
    providerLine,
    el("p", { class: "repo-line" }, "Repository: ", el("code", { testid: "repo-root", text: repo.root }),
      app.acknowledgedHash ? " (starting from acknowledged uncommitted changes)" : "", " ",
      el("button", { type: "button", class: "link", testid: "show-instruction-files",
        onclick: () => app.inspectRepository(repo.root), text: "Instruction files (AGENTS.md, …)" })),
    el("label", { for: "task-title", text: "Title" }), title,
    el("label", { for: "requirement" }, "Requirement ", origin), text,
    el("label", { for: "task-budget", text: "Hard budget (USD) — a plan is drafted only once the task has one" }),
    el("p", { class: "budget-line" }, budget, budgetNote),
    el("div", { class: "actions" }, mutatingButton("Create task and draft a plan",
      () => app.createTask(text.value, title.value, budget.value), "create-task")));
}

// Money → the decimal text SetBudget takes ("2.50"), exact from integer minor units.
function decimalOf(m) {
  const places = Number(m.decimalPlaces || 0);
  const text = String(m.minorUnits || "0").padStart(places + 1, "0");
  return places ? `${text.slice(0, -places)}.${text.slice(-places)}` : text;
}

// The task panel keeps its timeline node across refreshes; the other parts re-render only when their
// data changed (so typed feedback or a budget amount is not lost).
export class TaskPanel {
  constructor(app, timeline) {
    this.app = app;
    this.timeline = timeline;
    this.header = el("div", { class: "task-header", testid: "task-header" });
    this.actions = el("div", {});
    this.plan = el("div", {});
    this.budget = el("div", {});
    this.keys = { plan: "", budget: "", actions: "", needs: "" };
    // What waits for the person, first: pending tool requests (the timeline moves their cards here while they wait)
    // and a line for each other decision (the plan, a question, the review, a recovery) with the way to it.
    this.needsLines = el("ul", { class: "plain", testid: "needs-you-items" });
    this.pinned = el("ol", { class: "timeline pinned", testid: "needs-you-approvals" });
    this.needsYou = el("section", { class: "card needs-you", testid: "needs-you", "aria-label": "Needs you",
      dataset: { count: "0" } }, el("h3", { text: "Needs you" }), this.needsLines, this.pinned);
    timeline.pinInto(this.pinned);
    this.root = el("section", { class: "task", testid: "task-panel" }, this.header, this.needsYou, this.actions,
      this.plan, this.budget, el("h3", { text: "Timeline" }), timeline.controls, timeline.root);
  }

  // The lines of "Needs you" other than pending tool requests (those are their own cards, pinned by the timeline).
  needs(task) {
    const plan = task.plan || {};
    const lines = [];
    const deciding = task.state === "awaiting-plan-approval" && (plan.decision || "undecided") === "undecided";
    const open = (plan.questions || []).filter((q) => q.status === "open").length;
    // The endpoint the task pinned, not approved yet: nothing is sent to it (its drafts and runs pause) until a person
    // approves exactly that URL. The click answers the card of the newest read (its single-use confirmation).
    const endpoint = task.endpointApproval;
    if (endpoint && endpoint.baseUrl) {
      lines.push(["endpoint", `This task's provider sends to ${endpoint.baseUrl} (${endpoint.provider}), an endpoint ` +
        `nobody approved: nothing is sent there until you approve exactly this endpoint` +
        `${task.state === "paused" ? ", then resume the task" : ""}.`,
      "Approve this endpoint", null, () => this.app.approveEndpoint(task.taskId), true]);
    }
    if (deciding && open) {
      lines.push(["question", `The planner asks ${open} question(s); approval waits for your answer.`,
        "Go to the questions", () => this.plan.querySelector("[data-testid='plan-questions']")]);
    }
    if (deciding && plan.revision) {
      lines.push(["plan", `Plan revision ${plan.revision} waits for your approval (scope, steps, examples, cost range).`,
        "Go to the plan", () => this.plan.firstElementChild]);
    }
    if (task.state === "awaiting-review") {
      lines.push(["review", "The change is ready for your review: accept it, reject it, or send it back.",
        "Open review", null, () => this.app.openReview()]);
    }
    if (task.state === "recovery-required") {
      lines.push(["recovery", "The task was interrupted and needs your recovery decision.", "Open recovery", null,
        () => this.app.showView("recovery")]);
    }
    return lines;
  }

  updateNeeds(task) {
    const lines = this.needs(task);
    const key = JSON.stringify(lines.map(([kind, text]) => [kind, text]));
    if (key !== this.keys.needs) {
      this.keys.needs = key;
      clear(this.needsLines).append(...lines.map(([kind, text, label, target, action, mutating]) =>
        el("li", { testid: "needs-you-item", dataset: { need: kind } }, `${text} `,
          mutating ? mutatingButton(label, action, `needs-you-${kind}`)
            : el("button", { type: "button", testid: `needs-you-${kind}`, text: label,
              onclick: action || (() => { const node = target(); if (node) node.scrollIntoView({ block: "start" }); }) }))));
    }
    const count = lines.length + this.pinned.childElementCount;
    this.needsYou.dataset.count = String(count);
    this.needsYou.hidden = count === 0;
  }

  update(task) {
    clear(this.header).append(
      el("h2", {}, el("span", { testid: "task-title-text", text: task.title || task.taskId }), " "),
      el("p", {}, "State: ", el("span", { testid: "task-state", dataset: { state: task.state } }, badge(task.state)),
        task.runActive ? el("span", { class: "running", testid: "run-active", text: " (the coordinator is running it)" }) : "",
        task.lastOutcome ? ` — the last background run ended: ${task.lastOutcome}` : ""),
      task.providerLabel ? el("p", { class: "label-scripted", testid: "task-provider-label", text: `Provider: ${task.providerLabel}` }) : null,
      task.providerReason ? el("p", { class: "note", testid: "task-provider-why", dataset: { source: task.providerSource || "" },
        text: `Pinned when the task was created, because of ${task.providerReason}` +
          `${task.providerBasis === "used" ? "; shown above: the provider its newest model call went to" : ""}.` }) : null,
      el("p", { class: "requirement", text: task.requirement || "" }),
      el("p", { class: "repo-line" }, "Repository: ", el("code", { testid: "task-repository", text: task.repositoryRoot || "unknown" }),
        task.baseRevision ? ` at ${task.baseRevision.slice(0, 12)}` : ""),
      el("div", { class: "actions" },
        el("button", { type: "button", testid: "open-review", onclick: () => this.app.openReview(), text: "Open review" }),
        el("button", { type: "button", testid: "open-ledger", onclick: () => this.app.openLedger(), text: "Pipeline ledger" }),
        el("button", { type: "button", testid: "open-graph", onclick: () => this.app.openGraph(), text: "Execution graph" })));
    const actionsKey = JSON.stringify(task.actions || []);
    if (actionsKey !== this.keys.actions) {
      this.keys.actions = actionsKey;
      clear(this.actions).append(actionBar(this.app, task));
    }
    const planKey = JSON.stringify([task.plan || null, task.state]);
    if (planKey !== this.keys.plan) {
      this.keys.plan = planKey;
      clear(this.plan).append(planCard(this.app, task));
    }
    const budgetKey = JSON.stringify(task.budget || null);
    if (budgetKey !== this.keys.budget) {
      this.keys.budget = budgetKey;
      clear(this.budget).append(budgetCard(this.app, task));
    }
    this.timeline.updateApprovals(task);
    this.updateNeeds(task);
  }
}

export function streamBanner(state, info, onRetry) {
  const texts = {
    idle: "Not subscribed.", connecting: "Connecting to the task's stream…",
    replaying: "Replaying committed events… controls are disabled until the stream is live.",
    live: "Live: showing committed events as they happen.",
    reconnecting: `Reconnecting (attempt ${info.attempts || 0})… controls are disabled; the task may still be running.`,
    gap: "Missed an event: catching up from the last one shown… controls are disabled.",
    stopped: "Not following this task.",
    failed: "disconnected — the task may still be running",
  };
  const banner = el("div", { class: `stream stream-${state}`, testid: "stream-status", dataset: { state },
    role: state === "failed" ? "alert" : "status" }, badge(state === "failed" ? "denied" : state === "live" ? "live" : "pending"),
  ` ${texts[state] || state}`);
  if (state === "failed") {
    if (info.kind && info.kind !== "disconnected") banner.append(` (${info.kind})`);
    banner.append(" ", el("button", { type: "button", testid: "stream-retry", onclick: onRetry, text: "Try again" }));
  }
  return banner;
}
