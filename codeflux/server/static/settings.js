// Settings (providers, endpoint approvals, budget defaults, repository approvals) and diagnostics (doctor, backup).

import { badge, el, facts, mutatingButton, section, textList } from "./dom.js";
import { escapeForDisplay, money } from "./format.js";

// The coordinator's own words for each provider (``detail``): "a key is stored", "no key stored", or
// "unknown: <why>" when the OS credential store cannot say — never turned into "no key" here.
export function providerList(providers, testid) {
  return el("ul", { class: "plain", testid }, (providers || []).map((p) => el("li", { dataset: { provider: p.name } },
    el("strong", { text: p.name }), " — ",
    p.detail || (p.credentialStored ? "a key is stored" : "no key stored"),
    p.referenceRecorded ? "; reference recorded" : "")));
}

export function settingsView(app, settings) {
  const amount = el("input", { id: "default-limit", testid: "default-limit", placeholder: "e.g. 5.00" });
  return section("Settings", "settings-view",
    el("p", { class: "label-scripted", testid: "settings-provider-label", text: `Provider: ${settings.providerLabel || "unknown"}` }),
    el("h3", { text: "Providers" }), providerList(settings.providers, "settings-providers"),
    el("h3", { text: "Endpoint approvals" }),
    textList((settings.endpointApprovals || []).map((e) => `${e.provider}: ${e.baseUrl} (approved ${e.approvedAt})`),
      "No endpoints approved.", "settings-endpoints"),
    el("h3", { text: "Budget defaults" }),
    facts([["Default hard limit", settings.defaultHardLimit ? money(settings.defaultHardLimit) : "none (tasks ask before their first paid call)"]]),
    el("div", { class: "actions" }, el("label", { for: "default-limit", text: "New default (USD)" }), amount,
      mutatingButton("Save default", () => app.setBudgetDefaults(amount.value), "settings-save-default")),
    clarificationPolicy(app, settings),
    repositoryApprovals(app));
}

// What a person allowed for a whole repository (allow-for-repository on an approval card): listed with the exact
// operation and where it came from, each live one revocable (the operation then asks again).
function repositoryApprovals(app) {
  const slot = el("div", { testid: "repository-approvals-slot" }, el("p", { class: "loading", text: "Loading…" }));
  queueMicrotask(() => app.loadRepositoryApprovals(slot));
  return el("div", {},
    el("h3", { text: "Repository approvals" }),
    el("p", { class: "note", text: "Operations allowed for a whole repository run without asking in every task of " +
      "that repository. Revoke one and it asks again." }),
    slot);
}

export function repositoryApprovalList(app, approvals) {
  if (!approvals.length) {
    return el("p", { class: "empty", testid: "repository-approvals-empty", text: "Nothing is allowed for a whole repository." });
  }
  return el("ul", { class: "plain", testid: "repository-approvals" }, approvals.map((a) => {
    const args = (a.arguments || []).map((arg) => `${escapeForDisplay(arg.name)} = ${escapeForDisplay(arg.value)}`).join("; ");
    const state = a.revoked ? `revoked ${a.revokedAt}: ${escapeForDisplay(a.revocationReason)}` : "live";
    return el("li", { testid: "repository-approval", dataset: { approvalId: a.approvalId, state: a.revoked ? "revoked" : "live" } },
      el("p", {}, el("strong", { text: `${escapeForDisplay(a.tool)}: ${args}` }), " ", badge(a.revoked ? "revoked" : "live")),
      facts([["Repository", `${escapeForDisplay(a.repositoryRoot)} (root ${(a.rootCommits || []).map((c) => c.slice(0, 12)).join(", ")})`],
        ["Program", a.program ? escapeForDisplay(a.program) : "none"], ["Working directory", escapeForDisplay(a.cwd)],
        ["Allowed", `${a.createdAt} in task ${a.taskId} (decision ${a.decisionId})`], ["State", state],
        ["Identity", a.repositoryIdentity]], "repository-approval-facts"),
      a.revoked ? null : mutatingButton("Revoke", () => app.revokeRepositoryApproval(a.approvalId, app.main.querySelector(
        '[data-testid="repository-approvals-slot"]')), "repository-approval-revoke"));
  }));
}

// Open questions of a plan: "ask" (approval waits for the person's answers) or "assume" (each question's
// stated reading becomes an assumption of the plan). Applies to plans drafted from then on.
function clarificationPolicy(app, settings) {
  const current = settings.clarificationPolicy || "ask";
  const choice = el("select", { id: "clarification-policy", testid: "clarification-policy" },
    ["ask", "assume"].map((value) => el("option", { value, text: value, selected: value === current })));
  return el("div", {},
    el("h3", { text: "Clarification" }),
    facts([["Open questions of a plan", current === "ask" ? "ask: approval waits for your answers"
      : "assume: each question's stated reading becomes an assumption of the plan"]]),
    el("div", { class: "actions" }, el("label", { for: "clarification-policy", text: "Policy" }), choice,
      mutatingButton("Save policy", () => app.setClarificationPolicy(choice.value), "settings-save-clarification")));
}

export function diagnosticsView(app, report, backup) {
  const checks = report ? el("ul", { class: "plain", testid: "doctor-checks" }, (report.checks || []).map((c) =>
    el("li", {}, badge(c.status), ` ${c.name}`, c.detail ? ` — ${c.detail}` : ""))) : el("p", { class: "empty", text: "Not run yet." });
  return section("Diagnostics", "diagnostics-view",
    el("div", { class: "actions" },
      el("button", { type: "button", testid: "run-doctor", onclick: () => app.runDoctor(), text: "Run the doctor" }),
      mutatingButton("Create a backup", () => app.createBackup(), "create-backup")),
    report ? el("p", { testid: "doctor-summary" }, "Overall: ", badge(report.healthy ? "ok" : "failed")) : null,
    checks,
    backup ? el("p", { testid: "backup-result", text: `Backup written: ${backup.fileName} (${backup.bytes || 0} bytes)` }) : null);
}
