// The Memory screen: what codeflux learned, each entry with its applicability verdict now and why, its
// provenance (derived-from / influenced-by), its quarantine state and history; a person invalidates an entry
// with a reason (a decision: it answers the entry's card, MemoryEntryDetail.invalidateConfirmation); an entry
// flagged needs-review can be kept by a person with a reason (MemoryEntryDetail.confirmConfirmation).

import { badge, clear, el, facts, idempotencyKey, mutatingButton, section, textList } from "./dom.js";

const STATES = ["", "active", "needs-review", "quarantined"];

// The verdict in words, never colour alone: "usable (applicable): …" or "not usable (source-changed): …".
function verdictText(entry) {
  const verdict = entry.verdict || {};
  const word = verdict.applicable ? "usable" : "not usable";
  return `${word} (${verdict.reason || "not-checked"}): ${verdict.detail || ""}`;
}

function entryItem(screen, entry) {
  return el("li", { testid: "memory-entry", dataset: { entryId: entry.entryId, state: entry.state } },
    badge(entry.state), " ", el("strong", { text: entry.kind }), ` ${entry.text} `,
    el("button", { type: "button", testid: "memory-show", onclick: () => screen.show(entry.entryId), text: "Show" }),
    el("div", { class: "reason", testid: "memory-verdict", text: verdictText(entry) }));
}

function edgeLine(entryId, edge) {
  if (edge.dependentId === entryId) {
    return `${edge.kind} ${edge.sourceId} (${edge.otherState || "unknown"}): ${edge.otherText || ""}`;
  }
  return `${edge.dependentId} (${edge.otherState || "unknown"}) is ${edge.kind} this entry: ${edge.otherText || ""}`;
}

function detailPanel(screen, detail) {
  const entry = detail.entry || {};
  const tools = Object.entries(entry.toolchain || {}).sort().map(([name, version]) => `${name} ${version}`).join(", ");
  const reason = el("input", { id: "memory-reason", testid: "memory-reason",
    placeholder: detail.confirmConfirmation ? "why it no longer holds, or why it is still right" : "why it no longer holds" });
  const decision = detail.invalidateConfirmation
    ? el("div", { class: "actions" }, el("label", { for: "memory-reason", text: "Reason" }), reason,
      mutatingButton("Invalidate…", () => screen.invalidate(detail, reason.value), "memory-invalidate"))
    : el("p", { testid: "memory-final", text: "Quarantined: final. It is never used again; only a new entry can replace it." });
  // Needs review: something it was influenced by was quarantined. Not used until a person keeps it (or invalidates it).
  const keep = detail.confirmConfirmation
    ? el("div", { class: "actions", testid: "memory-review" },
      el("p", { class: "notice", text: "Flagged for review: an entry it was influenced by was quarantined. It is not "
        + "used until you keep it (it is still right) or invalidate it. Keeping it does not skip the applicability check." }),
      mutatingButton("Keep (still right)…", () => screen.confirm(detail, reason.value), "memory-confirm"))
    : null;
  return el("section", { class: "card", testid: "memory-detail", dataset: { entryId: entry.entryId, state: entry.state } },
    el("h3", {}, `${entry.kind} `, badge(entry.state)),
    el("p", { testid: "memory-detail-text", text: entry.text }),
    facts([
      ["Verdict now", verdictText(entry)],
      ["State", `${entry.state} since ${entry.stateSince} (${entry.stateCause}: ${entry.stateReason})`],
      ["Repository root commit", entry.rootCommit],
      ["Learned at commit", entry.learnedAtCommit],
      ["Toolchain", tools],
      ["Dependency set", (entry.dependencyHash || "").slice(0, 16)],
      ["Replaces", entry.replacesId || ""],
    ], "memory-facts"),
    el("h4", { text: "Derived from these files (blob at the time)" }),
    textList((entry.sources || []).map((s) => `${s.path} @ ${(s.blobSha || "").slice(0, 12)}`), "No source files.", "memory-sources"),
    el("h4", { text: "Evidence" }),
    textList((entry.evidence || []).map((e) => `${e.kind} ${e.ref}`), "No evidence recorded.", "memory-evidence"),
    el("h4", { text: "Provenance" }),
    textList((detail.edges || []).map((edge) => edgeLine(entry.entryId, edge)), "No provenance edges.", "memory-edges"),
    el("h4", { text: "History" }),
    textList((detail.history || []).map((h) => `${h.sequence}. ${h.recordedAt} ${h.state} (${h.cause}`
      + `${h.causeEntryId ? ` by ${h.causeEntryId}` : ""}): ${h.reason}`), "No history.", "memory-history"),
    decision, keep);
}

class MemoryScreen {
  constructor(app) {
    this.app = app;
    this.query = el("input", { id: "memory-query", testid: "memory-query", placeholder: "words to look for" });
    this.state = el("select", { id: "memory-state", testid: "memory-state" },
      STATES.map((value) => el("option", { value, text: value || "any state" })));
    this.list = el("div", { testid: "memory-list" });
    this.detail = el("div", {});
    this.result = el("div", { role: "status" });
    this.root = section("Memory", "memory-view",
      el("p", { text: "What codeflux learned about your repositories. An entry is used only while it is applicable "
        + "(same repository, toolchain and dependencies, and every file it was derived from unchanged); search only "
        + "proposes candidates." }),
      el("div", { class: "actions" }, el("label", { for: "memory-query", text: "Search" }), this.query,
        el("label", { for: "memory-state", text: "State" }), this.state,
        el("button", { type: "button", testid: "memory-search", onclick: () => this.load(), text: "List" })),
      this.result, this.list, this.detail);
  }

  async load() {
    try {
      const reply = await this.app.rpc.unary("MemoryService/List",
        { query: this.query.value, state: this.state.value, limit: 200 });
      const entries = reply.entries || [];
      clear(this.list).append(entries.length
        ? el("ul", { class: "plain" }, entries.map((entry) => entryItem(this, entry)))
        : el("p", { class: "empty", testid: "memory-empty", text: "Nothing learned yet." }));
    } catch (error) {
      this.app.showError(error);
    }
  }

  async show(entryId) {
    try {
      const detail = await this.app.rpc.unary("MemoryService/Show", { entryId });
      clear(this.detail).append(detailPanel(this, detail));
      this.app.gate();
    } catch (error) {
      this.app.showError(error);
    }
  }

  invalidate(detail, reason) {
    const entry = detail.entry || {};
    return this.app.mutate(async () => {
      const done = await this.app.rpc.unary("MemoryService/Invalidate", {
        control: { idempotencyKey: idempotencyKey("memory-invalidate") }, entryId: entry.entryId, reason,
        confirmation: detail.invalidateConfirmation, stateSinceUs: entry.stateSinceUs,
      });
      const quarantined = done.quarantinedIds || [];
      const flagged = done.flaggedIds || [];
      clear(this.result).append(el("p", { testid: "memory-invalidation-result",
        text: `Quarantined ${entry.entryId} and ${quarantined.length} entr${quarantined.length === 1 ? "y" : "ies"} `
          + `derived from it; ${flagged.length} flagged for review.` }));
      await this.load();
      await this.show(entry.entryId);
    }, () => this.show(entry.entryId));
  }

  confirm(detail, reason) {
    const entry = detail.entry || {};
    return this.app.mutate(async () => {
      await this.app.rpc.unary("MemoryService/Confirm", {
        control: { idempotencyKey: idempotencyKey("memory-confirm") }, entryId: entry.entryId, reason,
        confirmation: detail.confirmConfirmation, stateSinceUs: entry.stateSinceUs,
      });
      clear(this.result).append(el("p", { testid: "memory-confirm-result",
        text: `Kept ${entry.entryId}: active again (still checked for applicability at every use).` }));
      await this.load();
      await this.show(entry.entryId);
    }, () => this.show(entry.entryId));
  }
}

export function memoryView(app) {
  const screen = new MemoryScreen(app);
  screen.load();
  return screen.root;
}
