// Cards built from the TaskView: the plan, the budget and the task's actions.

import { badge, el, facts, mutatingButton, textList } from "./dom.js";
import { countRange, escapeForDisplay, maybeMoney, money, moneyRange } from "./format.js";
import { examplesEditing } from "./examples.js";

// Paths and argv the model wrote, escaped for display (format.js escapeForDisplay).
const shownList = (items) => (items || []).map(escapeForDisplay).join(", ");

const TASK_SCOPE = { mutating: "1", scope: "task" };

// The functions and methods a step declares it will add or change (stage 5 checks the diff against them).
function declaredAtoms(step) {
  const atoms = step.atoms || [];
  if (!atoms.length) {
    return el("p", { class: "atoms", testid: "plan-step-atoms", text: "Declares no function or method." });
  }
  return el("div", { class: "atoms", testid: "plan-step-atoms" },
    el("p", { text: "Declares these functions and methods:" }),
    el("ul", {}, atoms.map((atom) => el("li", {
      text: `${escapeForDisplay(atom.name)}: ${escapeForDisplay(atom.signature)} — ` +
        ((atom.effects || []).length ? `effects: ${atom.effects.join(", ")}` : "pure (no effects)") }))));
}

export function planCard(app, task) {
  const plan = task.plan;
  if (!plan || !plan.revision) {
    return el("section", { class: "card plan", testid: "plan-card-missing" },
      el("h3", { text: "Plan" }), el("p", { class: "empty", text: "No plan has been drafted yet." }));
  }
  const decision = plan.decision || "undecided";
  const author = plan.authorLabel ? el("p", { class: "label-scripted", testid: "plan-author", text: `Drafted by: ${plan.authorLabel}` }) : null;
  const forecast = plan.forecast || {};
  const steps = el("ol", { class: "steps", testid: "plan-steps" }, (plan.steps || []).map((step) =>
    el("li", {}, el("strong", { text: step.title }), step.detail ? el("p", { text: step.detail }) : null,
      el("p", { class: "files", testid: "plan-step-files" }, "Files the planner expects to touch (a hint): ",
        (step.expectedFiles || []).length ? shownList(step.expectedFiles) : "none listed"),
      declaredAtoms(step),
      plan.traced ? el("p", { class: "trace", testid: "plan-step-trace",
        text: `Serves examples: ${numbers(step.servesExamples)} · covers sentences: ${numbers(step.coversSentences)}` }) : null)));
  const checks = textList((plan.checks || []).map((c) => `${escapeForDisplay(c.name)}: ${(c.argv || []).map(escapeForDisplay).join(" ")}`),
    "No checks listed.", "plan-checks");
  const permissions = textList((plan.permissions || []).map((p) => `${p.capability} on ${p.resource || "any"} — ${p.reason || "no reason given"}`),
    "No permissions requested.", "plan-permissions");
  const body = el("section", { class: "card plan", testid: "plan-card", dataset: { revision: String(plan.revision), decision } },
    el("h3", {}, `Plan revision ${plan.revision} `, badge(decision)), author,
    el("h4", { text: "Scope" }), el("p", { testid: "plan-scope", text: plan.scopeSummary || "No scope summary." }),
    facts([["Paths", shownList(plan.scopePaths)], ["Excluded", shownList(plan.scopeExcluded)],
      ["Task class", plan.taskClass]]),
    el("h4", { text: "Acceptance examples" }),
    el("p", { class: "note", testid: "plan-examples-source", text: plan.examplesSource || "" }),
    textList((plan.examples || []).map(escapeForDisplay),
      "No executable example: this plan cannot be approved. Add one with Edit examples, or send it back saying which test should pass or which command should print what.",
      "plan-examples"),
    examplesEditing(app, task, plan),
    el("h4", { text: "Steps" }), steps, coverage(plan), questions(app, task, plan),
    el("h4", { text: "Checks" }), checks,
    el("h4", { text: "Permissions" }), permissions,
    el("h4", { text: "Assumptions" }), textList(plan.assumptions, "None stated."),
    el("h4", { text: "Forecast" }),
    el("p", { class: "estimate", testid: "forecast-label", text: forecast.label || "Estimate, not a promise." }),
    facts([["Cost (estimate)", moneyRange(forecast.cost)], ["Tokens (estimate)", countRange(forecast.tokens, "tokens")],
      ["Wall time (estimate)", countRange(forecast.wallSeconds, "s")], ["Method", forecast.heuristic]], "forecast"),
    textList(forecast.uncertainty, "No uncertainty notes.", "forecast-uncertainty"),
    planningSpend(plan));
  if (decision === "undecided" && task.state === "awaiting-plan-approval") {
    const feedback = el("textarea", { id: "plan-feedback", testid: "plan-feedback", rows: 2,
      placeholder: "What should change in the plan?" });
    body.append(el("div", { class: "actions" },
      mutatingButton("Approve plan and start", () => app.approvePlan(plan), "plan-approve", { dataset: TASK_SCOPE }),
      el("label", { for: "plan-feedback", text: "Feedback" }), feedback,
      mutatingButton("Send back", () => app.sendBackPlan(plan, feedback.value), "plan-send-back", { dataset: TASK_SCOPE })));
  }
  return body;
}

// What drafting this plan took: the planner's calls and their measured cost (unknown says why, never 0).
function planningSpend(plan) {
  const spend = plan.planning;
  if (!spend) return null;
  return el("div", { testid: "plan-planning" }, el("h4", { text: "Planning" }),
    facts([["Model calls", String(spend.modelCalls || 0)], ["Read-only tool calls", String(spend.toolCalls || 0)],
      ["Cost (measured)", maybeMoney(spend.cost)]], "plan-planning-facts"));
}

const numbers = (items) => (items || []).length ? items.join(", ") : "none";

// Stage 4: the requirement's numbered sentences and what no step names (completeness only, not meaning).
function coverage(plan) {
  if (!plan.traced) {
    return el("p", { class: "note", testid: "plan-trace", text: "No trace: which step serves which example is not measured." });
  }
  const gaps = [];
  if ((plan.uncoveredExamples || []).length) {
    gaps.push(`No step serves example(s) ${numbers(plan.uncoveredExamples)}: this plan cannot be approved; send it back.`);
  }
  if ((plan.uncoveredSentences || []).length) gaps.push(`No step names sentence(s) ${numbers(plan.uncoveredSentences)}.`);
  return el("div", { testid: "plan-trace" },
    el("h4", { text: "Requirement sentences (numbered for the trace)" }),
    el("ol", { class: "sentences", testid: "plan-sentences" }, (plan.sentences || []).map((s) => el("li", { text: s }))),
    textList(gaps, "Every example and sentence is named by a step (completeness only; meaning is not judged).", "plan-coverage"));
}

// Stage 2: each question with its status in words; an open one gets an answer box (answering records a new
// revision, which is then approved).
function questions(app, task, plan) {
  const list = plan.questions || [];
  if (!list.length) return null;
  const answering = (plan.decision || "undecided") === "undecided" && task.state === "awaiting-plan-approval";
  return el("div", { testid: "plan-questions" },
    el("h4", { text: `Questions (clarification policy: ${plan.clarificationPolicy || "not recorded"})` }),
    el("ol", { class: "questions" }, list.map((q) => {
      const item = el("li", { testid: "plan-question", dataset: { number: String(q.number), status: q.status } },
        el("p", { text: `${q.question} (${q.status}; raised by ${q.origin})` }));
      if (q.status === "answered") item.append(el("p", { text: `Answer: ${q.answer}` }));
      if (q.status === "assumed") item.append(el("p", { text: `Assumed: ${q.assumption}` }));
      if (q.status === "open" && answering) {
        const id = `plan-answer-${q.number}`;
        const box = el("textarea", { id, testid: "plan-answer", rows: 2, placeholder: q.assumption });
        item.append(el("p", { class: "note", text: "Approval waits for your answer." }),
          el("label", { for: id, text: `Answer to question ${q.number}` }), box,
          mutatingButton("Answer", () => app.answerQuestion(plan, q.number, box.value), "plan-answer-send", { dataset: TASK_SCOPE }));
      }
      return item;
    })));
}

export function budgetCard(app, task) {
  const b = task.budget || {};
  const rows = [
    ["Hard limit", b.set ? money(b.hardLimit) : "not set (the task asks before its first paid call)"],
    ["Warning at", b.warning ? money(b.warning) : "none"],
    ["Spent (measured)", maybeMoney(b.spent)],
    ["Reserved (estimate)", maybeMoney(b.reserved)],
    ["Remaining", maybeMoney(b.remaining)],
    ["Tokens used", String(b.tokensUsed || "0")],
    ["Token limit", b.tokenLimitSet ? String(b.tokenLimit || "0") : "none"],
  ];
  const amount = el("input", { id: "budget-amount", testid: "budget-amount", inputmode: "decimal", placeholder: "e.g. 2.50" });
  const currency = b.hardLimit && b.hardLimit.currency ? b.hardLimit.currency : "USD";
  const choices = el("div", { class: "actions", testid: "budget-choices" },
    el("label", { for: "budget-amount", text: `New hard limit (${currency})` }), amount,
    mutatingButton(b.exhausted ? "Raise the limit" : "Set the limit", () => app.setBudget("set", amount.value, currency), "budget-raise", { dataset: TASK_SCOPE }));
  if (b.exhausted) {
    choices.append(
      mutatingButton("Finish (allow reserved calls, then stop)", () => app.setBudget("finish", "", currency), "budget-finish", { dataset: TASK_SCOPE }),
      mutatingButton("Stop at the budget", () => app.setBudget("stop", "", currency), "budget-stop", { dataset: TASK_SCOPE }));
  }
  return el("section", { class: "card budget", testid: "budget-card" },
    el("h3", {}, "Cost and budget ", b.exhausted ? badge("blocked") : null),
    b.exhausted ? el("p", { class: "notice", text: "The hard budget is exhausted: raise it, finish, or stop." }) : null,
    facts(rows, "budget-facts"), textList(b.lines, "", "budget-lines"),
    (b.prices || []).length ? el("h4", { text: "Prices the calls were charged at" }) : null,
    textList((b.prices || []).map((p) => p.line), "", "budget-prices"), choices);
}

const ACTION_LABELS = {
  plan: "Draft a plan", "approve-plan": "Approve plan", "send-back": "Send plan back", "change-budget": "Change budget",
  start: "Start", pause: "Pause", resume: "Resume", "decide-approval": "Decide the tool request", accept: "Accept",
  reject: "Reject", repair: "Try again with feedback", rollback: "Roll back", retry: "Try again", "safe-resume": "Safe resume",
  reconcile: "Reconcile", "preserve-patch": "Preserve patch", "record-outcome": "Record an outcome",
  abandon: "Abandon", cancel: "Cancel the task",
};

// Every action of the task's state: available ones are buttons; unavailable ones are disabled with
// their reason in the button's title and as visible text.
export function actionBar(app, task) {
  const bar = el("div", { class: "action-bar", testid: "task-actions", role: "group", "aria-label": "Task actions" });
  const actions = task.actions || [];
  // Only what applies now is in reach; the rest (each with why it is not available) behind one toggle.
  const later = el("div", { class: "action-bar" });
  let unavailable = 0;
  for (const action of actions) {
    const handler = app.actionHandler(action.action);
    let reason = action.available ? "" : action.reason || "not available now";
    if (!reason && !handler) reason = "not offered by the browser client yet";
    const button = el("button", {
      type: "button", testid: `action-${action.action}`, class: "mutating",
      dataset: { mutating: "1", scope: "task", unavailable: reason ? "1" : "", action: action.action },
      onclick: handler || undefined,
    }, ACTION_LABELS[action.action] || action.action);
    if (reason) button.dataset.reason = reason;
    const item = el("span", { class: "action" }, button,
      reason ? el("span", { class: "reason", testid: `reason-${action.action}`, text: reason }) : null);
    if (reason) { later.append(item); unavailable += 1; } else bar.append(item);
  }
  if (unavailable === actions.length) bar.append(el("p", { class: "empty", text: "No action applies now." }));
  if (unavailable) {
    bar.append(el("details", { class: "unavailable-actions", testid: "task-actions-unavailable" },
      el("summary", { text: `${unavailable} other action(s) do not apply now` }), later));
  }
  return bar;
}
