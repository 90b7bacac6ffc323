// The review drawer (diff, checks, evidence, what was not examined, spend so far; accept / reject, which needs
// a reason and a confirmation step, with or without another attempt) and the pipeline
// ledger (all 37 stages with their outcome as text and icon). Changed files that change what later
// commands execute (conftest.py, pytest.ini, a Makefile, a .pth file, …) are listed in words as
// "changes what runs" with why, and marked in the file list. Paths are shown escaped (escapeForDisplay).
// The diff viewer (diff.js) draws each file with line numbers and highlighting, unified or side by side, and the
// attempt's obligations and uncovered branch arcs under the lines they belong to; once the worktree is gone it
// shows the landed commit's diff (accepted) or the kept patch (rejected), saying which.
// "Evidence per atom" has a section per atom of the diff: for each atom stage (5, 7–17) what it measured of
// the atom (outcome in words, a sentence, findings, recorded facts) or, in words, why it measured nothing.

import { diffView } from "./diff.js";
import { badge, clear, el, facts, mutatingButton, textList } from "./dom.js";
import { escapeForDisplay, maybeMoney, money } from "./format.js";

const CHANGES_WHAT_RUNS = "changes what runs";

function whatRunsList(flags) {
  const list = el("ul", { class: "plain what-runs", testid: "review-what-runs" },
    flags.map((f) => el("li", { testid: "review-what-runs-item", dataset: { path: f.path || "" } },
      el("strong", { text: `${CHANGES_WHAT_RUNS}: ` }), el("code", { text: escapeForDisplay(f.path) }),
      el("span", { class: "detail", text: ` — ${f.reason || "it configures or runs code"}` }))));
  if (!flags.length) list.append(el("li", { class: "empty", text: "No changed file changes what later commands run." }));
  return list;
}

// The diff viewer (per-file sections, line numbers, highlighting, unified/side by side, line notes) is diff.js.
export { diffView } from "./diff.js";

const DIFF_SOURCES = {
  "landed-commit": "The task's worktree is gone: this is the diff it landed (its base to the task commit, read from "
    + "the repository).",
  "kept-patch": "The task's worktree is gone: this is the patch kept for it (codeflux task patch) — the rejected diff, "
    + "or the change preserved when the task ended.",
};

// What the work under review cost so far (measured) and what is left of the hard limit; unknown is never 0.
function spendFacts(budget) {
  const b = budget || {};
  if (!b.set) return el("p", { class: "empty", testid: "review-spend", text: "No budget is set for this task." });
  return facts([["Spent so far (measured)", maybeMoney(b.spent)], ["Hard limit", money(b.hardLimit)],
    ["Remaining of the hard limit", maybeMoney(b.remaining)], ["Tokens used", String(b.tokensUsed || "0")]],
  "review-spend");
}

// One atom stage's result for one atom: measured (outcome, summary, findings, facts) or why not, in words.
function atomStageItem(item) {
  const head = `${item.number || 0} ${item.measures || item.stage}`;
  if (!item.measured) {
    return el("li", { testid: "atom-stage", dataset: { stage: item.stage || "", measured: "no" } },
      el("strong", { text: `${head}: ` }), el("span", { text: item.notMeasured || "not measured" }));
  }
  const findings = item.findings || [];
  const recorded = (item.facts || []).map((f) => `${escapeForDisplay(f.name)}: ${escapeForDisplay(f.valueJson || "")}`);
  return el("li", { testid: "atom-stage", dataset: { stage: item.stage || "", measured: "yes" } },
    el("strong", { text: `${head}: ` }), badge(item.outcome || "not recorded"), ` (stage ${item.stage})`,
    item.summary ? el("span", { class: "detail", text: ` — ${escapeForDisplay(item.summary)}` }) : null,
    findings.length ? el("ul", { class: "plain", testid: "atom-findings" },
      findings.map((f) => el("li", { text: `finding: ${escapeForDisplay(f)}` }))) : null,
    recorded.length ? el("details", {}, el("summary", { text: `Recorded facts (${recorded.length})` }),
      textList(recorded, "", "atom-facts")) : null);
}

function atomEvidence(atoms) {
  if (!atoms.length) {
    return el("p", { class: "empty", testid: "review-atoms",
      text: "No atom recorded: no atom stage listed a function or method of this diff." });
  }
  return el("div", { testid: "review-atoms" }, atoms.map((atom) => {
    const where = `${escapeForDisplay(atom.path || "path not recorded")}`
      + (atom.firstLine ? `:${atom.firstLine}-${atom.lastLine}` : "");
    return el("section", { class: "atom", testid: "review-atom", dataset: { atom: atom.qualifiedName || "" },
      "aria-label": `Atom ${atom.qualifiedName || ""}` },
      el("h4", { text: `Atom ${escapeForDisplay(atom.qualifiedName || "")}` }),
      el("p", { class: "detail", text: `${where}, ${atom.change || "change not recorded"}` }),
      el("ul", { class: "plain" }, (atom.stages || []).map(atomStageItem)));
  }));
}

export function reviewDrawer(app, task, review) {
  const flags = review.changesWhatRuns || [];
  const flagged = new Set(flags.map((f) => f.path));
  const checks = el("ul", { class: "plain checks", testid: "review-checks" },
    (review.checks || []).map((c) => el("li", { dataset: { outcome: c.outcome || "" } },
      badge(c.outcome || "not recorded"), ` ${c.name}`, c.detail ? el("span", { class: "detail", text: ` — ${c.detail}` }) : null)));
  if (!(review.checks || []).length) checks.append(el("li", { class: "empty", text: "No checks recorded." }));
  const reason = el("input", { id: "reject-reason", testid: "reject-reason", placeholder: "Why reject? (required)" });
  const confirmSlot = el("div", { testid: "reject-confirm-slot" });
  const askReject = (retry) => {
    if (!reason.value.trim()) { app.showError("Say why you reject this diff before rejecting it."); return; }
    clear(confirmSlot).append(rejectConfirmation(app, review, reason.value, retry, () => clear(confirmSlot)));
    app.gate();
  };
  // A check that failed, was blocked or did not run: Accept first says so and needs "Accept anyway".
  const warnings = review.acceptWarnings || [];
  const acceptSlot = el("div", { testid: "accept-confirm-slot" });
  const accept = () => app.accept(review.diffIdentity, review.acceptConfirmation);
  const askAccept = () => {
    if (!warnings.length) { accept(); return; }
    clear(acceptSlot).append(acceptConfirmation(review, warnings, accept, () => clear(acceptSlot)));
    app.gate();
  };
  const canDecide = task.state === "awaiting-review";
  const decide = canDecide ? el("div", { class: "actions" },
    mutatingButton(warnings.length ? "Accept the change…" : "Accept the change", askAccept, "review-accept", { dataset: { mutating: "1", scope: "task" } }),
    acceptSlot,
    el("label", { for: "reject-reason", text: "Reason (required to reject)" }), reason,
    mutatingButton("Reject…", () => askReject(false), "review-reject", { dataset: { mutating: "1", scope: "task" } }),
    mutatingButton("Reject and try again…", () => askReject(true), "review-reject-retry", { dataset: { mutating: "1", scope: "task" } }),
    confirmSlot,
    retryForm(app))
    : el("p", { class: "empty", text: `Review decisions are available when the task awaits review (now: ${task.state}).` });
  return el("aside", { class: "drawer", testid: "review-drawer", "aria-label": "Review" },
    el("div", { class: "drawer-head" }, el("h2", { text: "Review" }),
      el("button", { type: "button", testid: "review-close", onclick: () => app.closeDrawer(), text: "Close" })),
    // The task branch's commit the diff was taken at: the base itself while the change is not committed on the task
    // branch yet (the diff is the worktree's content) — said, so equal hashes never read as "no change".
    facts([["Diff identity", review.diffIdentity], ["Base", review.base], ["Head", review.head && review.head === review.base
      ? `${review.head} (the task branch has no commit of its own yet: the diff is the task worktree's content)` : review.head],
      ["Evidence matches this diff", review.evidenceMatchesDiff ? "yes" : "no"]], "review-facts"),
    spendFacts(review.budget),
    el("h3", { text: "Files" }),
    textList((review.files || []).map((f) => `${f.status}: ${escapeForDisplay(f.path)}`
      + (flagged.has(f.path) ? ` (${CHANGES_WHAT_RUNS})` : "")), "No files changed.", "review-files"),
    el("h3", { text: `Changes what runs (${flags.length})` }),
    flags.length ? el("p", { class: "notice", text: "These files decide what later commands execute (tests, builds, "
      + "git, hooks): an approval of a command covers its argv, not this code. Read them before accepting." }) : null,
    whatRunsList(flags),
    el("h3", { text: "Diff" }),
    DIFF_SOURCES[review.diffSource] ? el("p", { class: "notice", testid: "diff-source",
      dataset: { source: review.diffSource }, text: DIFF_SOURCES[review.diffSource] }) : null,
    diffView(review.unifiedDiff, review.diffTruncated, review.lineNotes),
    (review.lineNotes || []).length ? el("p", { class: "detail", testid: "diff-notes-legend",
      text: "Lines marked ^ carry the attempt's obligations (a call between changed functions, a branch of a changed "
        + "line) with their state, the branch arcs no test takes, the mutants no test caught and the checks' findings "
        + "on that line." }) : null,
    el("h3", { text: "Checks" }), checks,
    el("h3", { text: "Evidence" }), textList(review.evidence, "No evidence recorded.", "review-evidence"),
    el("h3", { text: `Evidence per atom (${(review.atoms || []).length})` }), atomEvidence(review.atoms || []),
    el("h3", { text: "Not examined" }), textList(review.notExamined, "Nothing listed as not examined.", "review-not-examined"),
    decide);
}

// The second step of an Accept while checks failed, were blocked or did not run: lists them; accepts only on
// "Accept anyway".
function acceptConfirmation(review, warnings, accept, cancel) {
  const diff = (review.diffIdentity || "").slice(0, 12);
  const count = warnings.length === 1 ? "1 check" : `${warnings.length} checks`;
  return el("div", { class: "confirm notice", role: "alertdialog", "aria-label": "Confirm accepting despite the checks",
    testid: "accept-confirm" },
  el("p", { testid: "accept-confirm-text",
    text: `Accept diff ${diff} although ${count} failed, were blocked or did not run? Accepting delivers it as it is.` }),
  el("ul", { class: "plain", testid: "accept-warnings" }, warnings.map((w) => el("li", { text: w }))),
  mutatingButton("Accept anyway", accept, "accept-confirm-yes", { dataset: { mutating: "1", scope: "task" } }),
  el("button", { type: "button", testid: "accept-confirm-no", onclick: cancel, text: "No, keep reviewing" }));
}

// The confirmation step of a reject: says what will happen (the patch is kept; the task ends, or another
// attempt on the same plan starts with the reason) and decides only on "Yes".
function rejectConfirmation(app, review, reason, retry, cancel) {
  const diff = (review.diffIdentity || "").slice(0, 12);
  const what = retry
    ? `Reject diff ${diff} and try again? Its patch is kept, and another attempt on the same plan starts now with your reason.`
    : `Reject diff ${diff} and end the task? Its patch is kept (codeflux task patch); the task ends.`;
  return el("div", { class: "confirm notice", role: "alertdialog", "aria-label": "Confirm the rejection", testid: "reject-confirm" },
    el("p", { testid: "reject-confirm-text", text: what }),
    el("p", { class: "detail", text: `Reason: ${reason}` }),
    mutatingButton(retry ? "Yes, reject and try again" : "Yes, reject", () => app.reject(review.diffIdentity, reason,
      review.rejectConfirmation, retry), "reject-confirm-yes", { dataset: { mutating: "1", scope: "task" } }),
    el("button", { type: "button", testid: "reject-confirm-no", onclick: cancel, text: "No, keep reviewing" }));
}

// Another attempt on the same plan, starting with the person's words (a task awaiting review or failed).
export function retryForm(app) {
  const feedback = el("textarea", { id: "retry-feedback", testid: "retry-feedback", rows: "3",
    placeholder: "What should the next attempt change?" });
  return el("div", { class: "retry", testid: "retry-form" },
    el("label", { for: "retry-feedback", text: "Try again on the same plan, with your feedback" }), feedback,
    mutatingButton("Try again with this feedback", () => app.retry(feedback.value), "retry",
      { dataset: { mutating: "1", scope: "task" } }));
}

export function ledgerView(app, reply) {
  const rows = (reply.stages || []).map((s) => el("tr", { dataset: { outcome: s.outcome || "" }, testid: "stage-row" },
    el("td", { text: String(s.number || 0) }), el("td", { text: s.name }), el("td", { text: s.phase }),
    el("td", {}, badge(s.outcome || "not recorded")), el("td", { text: s.gate || "" }), el("td", { text: s.detail || "" })));
  return el("aside", { class: "drawer", testid: "ledger", "aria-label": "Pipeline ledger" },
    el("div", { class: "drawer-head" }, el("h2", { text: `Pipeline ledger — attempt ${reply.attempt || 0}` }),
      el("button", { type: "button", testid: "ledger-close", onclick: () => app.closeDrawer(), text: "Close" })),
    el("p", { text: `${rows.length} stages. Outcomes: passed, failed, skipped, blocked, not-implemented.` }),
    el("table", { class: "ledger" },
      el("thead", {}, el("tr", {}, ["#", "Stage", "Phase", "Outcome", "Gate", "Detail"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows)));
}
