// The recovery view: for each task that needs recovery, what is known, what is ambiguous, the
// recommended action and why, and the actions (allowed ones enabled, refused ones with their reason).

import { badge, el, mutatingButton, textList } from "./dom.js";

export function recoveryCard(app, view) {
  const ambiguous = el("ul", { class: "plain", testid: "recovery-ambiguous" },
    (view.ambiguous || []).map((item) => el("li", {},
      el("strong", { text: item.kind }), ` ${item.summary} — `, badge(item.outcome || "unknown"),
      item.outcome ? null : el("span", { class: "actions" },
        mutatingButton("It happened", () => app.recordOutcome(view, item, "happened"), "recovery-happened"),
        mutatingButton("It did not happen", () => app.recordOutcome(view, item, "did-not-happen"), "recovery-did-not-happen")))));
  if (!(view.ambiguous || []).length) ambiguous.append(el("li", { class: "empty", text: "Nothing ambiguous." }));
  const allowed = new Set(view.allowed || []);
  const refused = new Map((view.refused || []).map((r) => [r.action, r.reason]));
  const names = [...new Set([...allowed, ...refused.keys()])];
  const actions = el("div", { class: "action-bar", testid: "recovery-actions" }, names.map((name) => {
    const reason = allowed.has(name) ? "" : refused.get(name) || "not allowed";
    const button = mutatingButton(name, () => app.recoveryAction(view, name), `recovery-action-${name}`,
      { dataset: { mutating: "1", unavailable: reason ? "1" : "", reason } });
    return el("span", { class: "action" }, button, reason ? el("span", { class: "reason", text: reason }) : null);
  }));
  return el("section", { class: "card recovery", testid: "recovery-card", dataset: { taskId: view.taskId } },
    el("h3", {}, `${view.title || view.taskId} `, badge(view.state)),
    el("h4", { text: "Known" }), textList(view.known, "Nothing recorded as known.", "recovery-known"),
    el("h4", { text: "Ambiguous" }), ambiguous,
    el("h4", { text: "Recommended" }),
    el("p", { testid: "recovery-recommended" }, el("strong", { text: view.recommended || "none" }), view.why ? ` — ${view.why}` : ""),
    actions);
}

export function recoveryView(app, reply) {
  const tasks = reply.tasks || [];
  return el("section", { class: "panel", testid: "recovery-view" }, el("h2", { text: "Recovery" }),
    tasks.length ? tasks.map((t) => recoveryCard(app, t)) : el("p", { class: "empty", testid: "recovery-empty", text: "No task needs recovery." }),
    landingsResolved(reply));
}

// One interrupted accept a retry or startup recovery resolved, in words: when, the task, finished (the landed
// commit) or rolled back (where the branch stays), by whom, and why it had stopped.
function landingText(landing) {
  const when = new Date(Number(landing.resolvedAtUs || 0) / 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  const by = landing.by === "recovery" ? "startup recovery" : "a retry of the accept";
  const what = landing.resolution === "finished"
    ? `finished by ${by}: landed on ${landing.branch} at ${(landing.landedHead || "").slice(0, 12)}`
    : `rolled back by ${by}: ${landing.branch} stays at ${(landing.previousHead || "").slice(0, 12)}, the checkout as before`;
  return `${when} — task ${landing.taskId}: ${what} (why: ${landing.reason || "not recorded"})`;
}

// The interrupted accepts resolved since (most recent first, bounded by the service), or nothing when none.
function landingsResolved(reply) {
  const landings = reply.landings || [];
  if (!landings.length) return null;
  const more = Number(reply.landingsMore || 0);
  return el("section", { class: "card", testid: "recovery-landings" },
    el("h3", { text: "Landings recovery resolved (interrupted accepts, most recent first)" }),
    el("ul", { class: "plain" }, landings.map((landing) => el("li", { testid: "recovery-landing", text: landingText(landing) }))),
    more > 0 ? el("p", { testid: "recovery-landings-more", text: `… and ${more} more, older` }) : null);
}
