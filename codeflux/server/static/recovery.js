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
    tasks.length ? tasks.map((t) => recoveryCard(app, t)) : el("p", { class: "empty", testid: "recovery-empty", text: "No task needs recovery." }));
}
