// Settings (providers, endpoint approvals, budget defaults) and diagnostics (doctor, backup).

import { badge, el, facts, mutatingButton, section, textList } from "./dom.js";
import { money } from "./format.js";

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
    clarificationPolicy(app, settings));
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
