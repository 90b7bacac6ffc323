// Settings (providers, endpoint approvals, budget defaults, repository approvals) and diagnostics (doctor, backup).

import { badge, clear, el, facts, mutatingButton, section, textList } from "./dom.js";
import { escapeForDisplay, money } from "./format.js";

// The coordinator's own words for each provider (``detail``): "a key is stored", "no key stored", or
// "unknown: <why>" when the OS credential store cannot say — never turned into "no key" here; and where the key
// a call sends comes from (``keySource``): "environment (ANTHROPIC_API_KEY)", "OS credential store" or "none".
export function providerList(providers, testid) {
  return el("ul", { class: "plain", testid }, (providers || []).map((p) => el("li", { dataset: { provider: p.name } },
    el("strong", { text: p.name }), " — ",
    p.detail || (p.credentialStored ? "a key is stored" : "no key stored"),
    p.referenceRecorded ? "; reference recorded" : "",
    p.keySource ? `; key from: ${p.keySource}` : "")));
}

export function settingsView(app, settings) {
  const amount = el("input", { id: "default-limit", testid: "default-limit", placeholder: "e.g. 5.00" });
  return section("Settings", "settings-view",
    el("p", { class: "label-scripted", testid: "settings-provider-label", text: `Provider: ${settings.providerLabel || "unknown"}` }),
    providersSection(app, settings),
    el("h3", { text: "Endpoint approvals" }),
    textList((settings.endpointApprovals || []).map((e) => `${e.provider}: ${e.baseUrl} (approved ${e.approvedAt})`),
      "No endpoints approved.", "settings-endpoints"),
    el("h3", { text: "Budget defaults" }),
    facts([["Default hard limit", settings.defaultHardLimit
      ? money(settings.defaultHardLimit) + (settings.defaultHardLimitSource && settings.defaultHardLimitSource !== "settings"
        ? ` (from ${settings.defaultHardLimitSource}; saving one here wins over it)` : "")
      : "none (tasks ask before their first paid call)"]]),
    el("div", { class: "actions" }, el("label", { for: "default-limit", text: "New default (USD)" }), amount,
      mutatingButton("Save default", () => app.setBudgetDefaults(amount.value), "settings-save-default")),
    clarificationPolicy(app, settings),
    repositoryApprovals(app));
}

// Settings → Providers: which provider new tasks use and why (a start flag, the choice stored here, the demo or the
// built-in default), every provider with its key status (never a key) and its models' rates in force, a chooser
// (provider + models, stored in SQLite) and a form that sends a key once to the OS credential store.
const SCRIPTED_NOTE = "not an AI model: replays a fixed script offline, costs nothing, needs no key";

function rateLine(r) {
  const aliases = (r.aliases || []).length ? ` (${r.aliases.join(", ")})` : "";
  return `${r.model}${aliases}: input ${r.input || "unknown"}, output ${r.output || "unknown"} ${r.currency} per million ` +
    `tokens (${r.source === "user" ? "your rate" : "shipped rate"}, ${r.effectiveDate})`;
}

export function providersSection(app, settings) {
  const statuses = new Map((settings.providers || []).map((p) => [p.name, p]));
  const prices = settings.prices || [];
  const names = settings.choosableProviders || ["scripted"];
  const real = names.filter((n) => n !== "scripted");
  const options = el("ul", { class: "plain", testid: "provider-options" }, names.map((name) => {
    if (name === "scripted") {
      return el("li", { testid: "provider-option", dataset: { provider: name } }, el("strong", { text: "scripted" }),
        ` — ${SCRIPTED_NOTE}`);
    }
    const status = statuses.get(name);
    const key = status ? (status.detail || (status.credentialStored ? "a key is stored" : "no key stored")) : "unknown";
    const models = prices.filter((r) => r.provider === name);
    return el("li", { testid: "provider-option", dataset: { provider: name } },
      el("strong", { text: name }), " — key from: ",
      el("span", { testid: "provider-key-source", text: status && status.keySource ? status.keySource : "unknown" }),
      " (stored key: ", el("span", { testid: "provider-key-status", text: key }), ")",
      models.length ? el("ul", { class: "plain", testid: "provider-models" }, models.map((r) => el("li", { text: rateLine(r) })))
        : el("p", { class: "note", text: "No rates recorded: any model name is accepted and its cost is unknown " +
          "(record one with `codeflux prices set`)." }));
  }));
  const why = settings.providerSource === "flag"
    ? el("p", { class: "note", testid: "provider-flag-wins", text: "A choice saved here is stored, but the --provider flag " +
      "`codeflux start` was given wins until codeflux is started without it." })
    : settings.providerSource === "environment"
      ? el("p", { class: "note", testid: "provider-flag-wins", text: "A choice saved here is stored, but CODEFLUX_PROVIDER " +
        "in the environment `codeflux start` was given wins (it stands for the --provider flag) until codeflux is " +
        "started without it." }) : null;
  const chosen = settings.chosenProvider || "";
  const provider = el("select", { id: "provider-choice", testid: "provider-choice" },
    names.map((n) => el("option", { value: n, text: n === "scripted" ? "scripted (not an AI model)" : n, selected: n === (chosen || "scripted") })));
  const modelList = el("datalist", { id: "provider-model-names" });
  const cheap = el("input", { id: "provider-cheap-model", testid: "provider-cheap-model", list: "provider-model-names",
    placeholder: "model, e.g. claude-haiku-4-5", value: settings.chosenCheapModel || "", autocomplete: "off" });
  const capable = el("input", { id: "provider-capable-model", testid: "provider-capable-model", list: "provider-model-names",
    placeholder: "optional: defaults to the first", value: settings.chosenCapableModel || "", autocomplete: "off" });
  const models = el("span", { class: "provider-models" },
    el("label", { for: "provider-cheap-model", text: "Model" }), cheap,
    el("label", { for: "provider-capable-model", text: "Capable model" }), capable);
  // openai-compatible only: the server's base URL (https, or http for this machine only) and whether it takes a key.
  const baseUrl = el("input", { id: "provider-base-url", testid: "provider-base-url", type: "url", autocomplete: "off",
    spellcheck: "false", placeholder: "e.g. http://127.0.0.1:4000/v1", value: settings.chosenBaseUrl || "" });
  const noKey = el("input", { id: "provider-no-key", testid: "provider-no-key", type: "checkbox" });
  noKey.checked = Boolean(settings.chosenNoKey);
  const endpoint = el("span", { class: "provider-endpoint", testid: "provider-endpoint-fields" },
    el("label", { for: "provider-base-url", text: "Base URL" }), baseUrl,
    noKey, el("label", { for: "provider-no-key", text: "The server takes no key" }));
  const refresh = () => {
    const scripted = provider.value === "scripted";
    models.hidden = scripted;
    endpoint.hidden = provider.value !== "openai-compatible";
    clear(modelList).append(prices.filter((r) => r.provider === provider.value).map((r) => el("option", { value: r.model })));
  };
  provider.addEventListener("change", refresh);
  refresh();
  // The stored choice's endpoint, shown back as codeflux normalized it (a non-default one is approved before a call).
  const waiting = settings.chosenEndpointApproval && settings.chosenEndpointApproval.baseUrl;
  const chosenEndpoint = settings.chosenBaseUrl ? el("div", {},
    el("p", { class: "note", testid: "provider-chosen-endpoint", dataset: { approved: waiting ? "0" : "1" },
      text: `Stored endpoint: ${settings.chosenBaseUrl}` +
      `${settings.chosenNoKey ? " (no key is sent)" : " (the openai-compatible key is sent)"}; ` +
      (waiting ? "not approved: nothing is sent to it until you approve exactly this endpoint."
        : "approved (or the provider's default).") }),
    waiting ? mutatingButton("Approve this endpoint", () => app.approveEndpoint(null), "provider-approve-endpoint")
      : null) : null;
  // The endpoint new tasks' provider calls now when it is not the stored choice's: a `start --base-url` flag's (or
  // CODEFLUX_BASE_URL's, or the config file's), for any provider; nothing is sent to it before it is approved.
  const current = settings.currentEndpointApproval && settings.currentEndpointApproval.baseUrl
    ? settings.currentEndpointApproval : null;
  const currentEndpoint = current ? el("div", { testid: "provider-current-endpoint" },
    el("p", { class: "note", testid: "provider-current-endpoint-text",
      text: `New tasks' provider (${current.provider}) sends to ${current.baseUrl}, an endpoint nobody approved ` +
        "(given to `codeflux start`, not stored here): nothing is sent there until you approve exactly this endpoint." }),
    mutatingButton("Approve this endpoint", () => app.approveEndpoint(null, "current"),
      "provider-approve-current-endpoint")) : null;
  const keyProvider = el("select", { id: "key-provider", testid: "key-provider" },
    real.map((n) => el("option", { value: n, text: n })));
  const key = el("input", { id: "provider-key", testid: "provider-key", type: "password", autocomplete: "off",
    spellcheck: "false", placeholder: "paste the key" });
  const keyResult = el("p", { testid: "provider-key-result", role: "status" });
  const sendKey = async () => {
    const value = key.value;
    key.value = ""; // sent once; never kept in the page
    keyResult.textContent = "";
    await app.storeProviderKey(keyProvider.value, value); // re-renders this screen with the reply's words
  };
  return el("div", { testid: "settings-providers-section" },
    el("h3", { text: "Providers" }),
    el("p", { testid: "provider-current" }, "New tasks use: ", el("strong", { testid: "provider-current-label",
      text: settings.providerLabel || "unknown" }), ` — because of ${settings.providerReason || "how codeflux was started"}.`),
    why,
    currentEndpoint,
    options,
    el("h4", { text: "Choose the provider for new tasks" }),
    el("p", { class: "note", text: "Stored in codeflux's database; tasks created afterwards use it (a task keeps the " +
      "provider it was created with for its plans and runs). Precedence: a `codeflux start --provider` flag, then " +
      "this choice, then the config file, then the scripted default." }),
    el("div", { class: "actions" }, el("label", { for: "provider-choice", text: "Provider" }), provider, models, modelList,
      endpoint,
      mutatingButton("Save provider", () => {
        const compatible = provider.value === "openai-compatible";
        return app.setProviderChoice(provider.value, provider.value === "scripted" ? "" : cheap.value,
          provider.value === "scripted" ? "" : capable.value, compatible ? baseUrl.value : "", compatible && noKey.checked);
      }, "provider-save")),
    chosenEndpoint,
    el("h4", { text: "Store a key" }),
    el("p", { class: "note", text: "Sent once over this session's connection and written to the OS credential store " +
      "(as `codeflux provider set` does); codeflux keeps only a reference, never shows the key again and does not " +
      "contact the provider." }),
    el("div", { class: "actions" }, el("label", { for: "key-provider", text: "Provider" }), keyProvider,
      el("label", { for: "provider-key", text: "Key" }), key, mutatingButton("Store key", sendKey, "provider-store-key")),
    keyResult);
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
