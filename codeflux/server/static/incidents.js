// The Incidents screen: failures a person reports (a Python traceback or a log excerpt), fingerprinted per
// repository so the same failure reported twice is one incident with two occurrences (IncidentService). The same
// intake as `codeflux incident report`: paste a traceback for a chosen repository. One incident's detail shows its
// occurrences (redacted text only), its state history and the task it proposed or was fixed by (a link to the
// task's page). Dismiss (with a reason) and Propose a task are a person's decisions: each answers the incident's
// card (IncidentDetail.dismissConfirmation / proposeConfirmation). A proposed task is a draft: it never starts by
// itself.

import { badge, clear, el, facts, idempotencyKey, mutatingButton, section, textList } from "./dom.js";

const STATES = ["", "new", "task-proposed", "fixed", "regressed", "dismissed"];

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// A link to a task's page (/tasks/<id>) that opens it in this tab through the app's router.
function taskLink(app, taskId, text, testid) {
  return el("a", { href: `/tasks/${encodeURIComponent(taskId)}`, testid, dataset: { taskId },
    onclick: (event) => { event.preventDefault(); app.selectTask(taskId); }, text: text || taskId });
}

function incidentItem(screen, incident) {
  return el("li", { class: "incident-item", testid: "incident-item", dataset: { incidentId: incident.incidentId, state: incident.state } },
    badge(incident.state), " ",
    el("strong", { testid: "incident-count", text: plural(incident.occurrences || 0, "occurrence") }), " ",
    el("span", { testid: "incident-summary", text: incident.summary }),
    el("div", { class: "reason", text: `${incident.repositoryRoot} · last seen ${incident.lastSeen}` }),
    el("button", { type: "button", testid: "incident-show", onclick: () => screen.show(incident.incidentId),
      text: "Show" }));
}

function historyLine(entry) {
  const task = entry.taskId ? ` (task ${entry.taskId})` : "";
  const reason = entry.reason ? `: ${entry.reason}` : "";
  return `${entry.sequence}. ${entry.recordedAt} ${entry.state} by ${entry.actor}${task}${reason}`;
}

function occurrenceItem(occurrence) {
  return el("li", { testid: "incident-occurrence" },
    el("p", { class: "note", text: `#${occurrence.occurrenceId} reported ${occurrence.reportedAt} from `
      + `${occurrence.source} (shown as stored: redacted)` }),
    el("pre", { text: occurrence.redactedText }));
}

function taskFacts(app, detail) {
  const incident = detail.incident || {};
  const taskIds = [...new Set((detail.history || []).map((h) => h.taskId).filter(Boolean))];
  if (!taskIds.length) return el("p", { class: "empty", testid: "incident-tasks", text: "No task proposed yet." });
  return el("ul", { class: "plain", testid: "incident-tasks" }, taskIds.map((taskId) => el("li", {},
    taskLink(app, taskId, `Open task ${taskId}`, "incident-task-link"),
    taskId === incident.stateTaskId ? ` (${incident.state})` : "")));
}

function decisions(screen, detail) {
  if (!detail.dismissConfirmation && !detail.proposeConfirmation) {
    return el("p", { testid: "incident-final",
      text: `${detail.incident.state}: nothing to decide. A new report of the same failure is still counted here.` });
  }
  const reason = el("input", { id: "incident-reason", testid: "incident-reason", size: 50,
    placeholder: "why this needs no fix (required)" });
  const check = el("input", { id: "incident-check", testid: "incident-check", size: 50,
    placeholder: "e.g. python -m pytest tests/test_calc.py (optional)" });
  // A task-proposed incident gets another task only once the one proposed was cancelled or rolled back.
  const again = detail.incident.state === "task-proposed";
  return el("div", { class: "incident-decisions" },
    detail.proposeConfirmation ? el("div", { class: "actions" },
      el("label", { for: "incident-check", text: "Command that shows the failure" }), check,
      mutatingButton(again ? "Propose another task…" : "Propose a task…", () => screen.propose(detail, check.value),
        "incident-propose")) : null,
    again ? el("p", { class: "note", text: "A task was proposed already: another one is refused while it is open "
      + "or after it was accepted; only once it was cancelled or rolled back." }) : null,
    el("p", { class: "note", text: "A proposed task is a draft: it does not start until you draft and approve its "
      + "plan, and budgets apply as for any task." }),
    detail.dismissConfirmation ? el("div", { class: "actions" },
      el("label", { for: "incident-reason", text: "Reason" }), reason,
      mutatingButton("Dismiss…", () => screen.dismiss(detail, reason.value), "incident-dismiss")) : null);
}

function detailPanel(screen, detail) {
  const incident = detail.incident || {};
  const frames = (incident.frames || []).map((f) => `${f.path}:${f.function}`).join(" → ");
  return el("section", { class: "card", testid: "incident-detail",
    dataset: { incidentId: incident.incidentId, state: incident.state } },
    el("h3", {}, badge(incident.state), " ", incident.summary),
    facts([
      ["Incident", incident.incidentId],
      ["State", `${incident.state} since ${incident.stateSince}${incident.stateReason ? ` (${incident.stateReason})` : ""}`],
      ["Occurrences", String(incident.occurrences || 0)],
      ["First seen", incident.firstSeen],
      ["Last seen", incident.lastSeen],
      ["Repository", incident.repositoryRoot],
      ["Read as", incident.shape],
      ["Exception", incident.exceptionType],
      ["Own frames", frames],
      ["Message (normalised)", incident.message],
      ["Fingerprint", (incident.fingerprint || "").slice(0, 16)],
    ], "incident-facts"),
    el("h4", { text: "Tasks" }), taskFacts(screen.app, detail),
    el("h4", { text: "History" }),
    textList((detail.history || []).map(historyLine), "No history.", "incident-history"),
    el("h4", { text: "Newest occurrences" }),
    (detail.occurrences || []).length
      ? el("ul", { class: "plain", testid: "incident-occurrences" }, detail.occurrences.map(occurrenceItem))
      : el("p", { class: "empty", text: "No occurrence kept." }),
    decisions(screen, detail));
}

class IncidentsScreen {
  constructor(app) {
    this.app = app;
    const known = (app.overview && app.overview.repositories) || [];
    const chosen = app.repository ? app.repository.root : "";
    this.repository = el("select", { id: "incident-repository", testid: "incident-repository" },
      known.length ? known.map((r) => el("option", { value: r.root, text: r.root, selected: r.root === chosen }))
        : el("option", { value: "", text: "no repository yet: choose one under Repositories" }));
    if (chosen) this.repository.value = chosen;
    this.text = el("textarea", { id: "incident-text", testid: "incident-text", rows: 8, cols: 80,
      placeholder: "Traceback (most recent call last):\n  File \"…\", line 3, in …\n…" });
    this.state = el("select", { id: "incident-state", testid: "incident-state" },
      STATES.map((value) => el("option", { value, text: value || "any state" })));
    this.list = el("div", { testid: "incident-list" });
    this.detail = el("div", {});
    this.result = el("div", { role: "status" });
    this.root = section("Incidents", "incidents-view",
      el("p", { testid: "incidents-scope", text: "codeflux sees the failures you paste here or report with "
        + "`codeflux incident report`, and those of `codeflux watch`, which runs an approved check command on the "
        + "branch's HEAD (the last commit) — never on your uncommitted changes. It does not watch logs or crash "
        + "reports. The same failure reported again (other line numbers, paths or ids) is counted on one incident. "
        + "Text is redacted before it is stored." }),
      el("div", { class: "card incident-intake" },
        el("h3", { text: "Report a failure" }),
        el("div", { class: "actions" }, el("label", { for: "incident-repository", text: "Repository" }),
          this.repository),
        el("label", { for: "incident-text", text: "Traceback or log excerpt" }), this.text,
        el("div", { class: "actions" }, mutatingButton("Report", () => this.report(), "incident-report"))),
      this.result,
      el("div", { class: "actions" }, el("label", { for: "incident-state", text: "State" }), this.state,
        el("button", { type: "button", testid: "incident-list-refresh", onclick: () => this.load(), text: "List" })),
      this.list, this.detail);
  }

  async load() {
    try {
      const reply = await this.app.rpc.unary("IncidentService/List", { state: this.state.value, limit: 200 });
      const found = reply.incidents || [];
      clear(this.list).append(found.length
        ? el("ul", { class: "plain" }, found.map((incident) => incidentItem(this, incident)))
        : el("p", { class: "empty", testid: "incidents-empty", text: "No incident reported yet." }));
      this.app.gate();
    } catch (error) {
      this.app.showError(error);
    }
  }

  async show(incidentId) {
    try {
      const detail = await this.app.rpc.unary("IncidentService/Show", { incidentId, occurrences: 5 });
      clear(this.detail).append(detailPanel(this, detail));
      this.app.gate();
    } catch (error) {
      this.app.showError(error);
    }
  }

  report() {
    const root = this.repository.value;
    if (!root) { this.app.showError("Choose a repository first (Repositories)."); return null; }
    if (!this.text.value.trim()) { this.app.showError("Paste a traceback or a log excerpt first."); return null; }
    return this.app.mutate(async () => {
      const done = await this.app.rpc.unary("IncidentService/Report", {
        control: { idempotencyKey: idempotencyKey("incident-report") }, repositoryRoot: root,
        text: this.text.value, source: "browser",
      });
      const incident = done.incident || {};
      const what = done.created ? "New incident" : done.regressed ? "Regressed (it was fixed)" : "Seen again";
      clear(this.result).append(el("p", { testid: "incident-report-result", dataset: { incidentId: incident.incidentId },
        text: `${what}: ${incident.incidentId}, ${plural(incident.occurrences || 0, "occurrence")} — ${incident.summary}` }));
      this.text.value = "";
      await this.load();
      await this.show(incident.incidentId);
    });
  }

  dismiss(detail, reason) {
    const incidentId = detail.incident.incidentId;
    if (!reason.trim()) { this.app.showError("Give a reason to dismiss this incident."); return null; }
    return this.app.mutate(async () => {
      const done = await this.app.rpc.unary("IncidentService/Dismiss", {
        control: { idempotencyKey: idempotencyKey("incident-dismiss") }, incidentId, reason,
        confirmation: detail.dismissConfirmation,
      });
      clear(this.result).append(el("p", { testid: "incident-dismiss-result",
        text: `Dismissed ${incidentId}: ${done.incident.stateReason}` }));
      await this.load();
      clear(this.detail).append(detailPanel(this, done));
      this.app.gate();
    }, () => this.show(incidentId));
  }

  propose(detail, check) {
    const incidentId = detail.incident.incidentId;
    return this.app.mutate(async () => {
      const done = await this.app.rpc.unary("IncidentService/Propose", {
        control: { idempotencyKey: idempotencyKey("incident-propose") }, incidentId, check,
        acknowledgedDirtyHash: this.app.repository && this.app.repository.root === detail.incident.repositoryRoot
          ? this.app.acknowledgedHash || "" : "",
        confirmation: detail.proposeConfirmation,
      });
      clear(this.result).append(el("p", { testid: "incident-propose-result" },
        `Proposed a draft task for ${incidentId}. It does not start by itself: `,
        taskLink(this.app, done.taskId, "open the draft task", "incident-proposed-task"),
        " to draft and approve its plan."));
      await this.load();
      clear(this.detail).append(detailPanel(this, done.detail || {}));
      this.app.gate();
    }, () => this.show(incidentId));
  }
}

export function incidentsView(app) {
  const screen = new IncidentsScreen(app);
  screen.load();
  return screen.root;
}
