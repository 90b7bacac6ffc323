// A repository's instruction files (AGENTS.md, CLAUDE.md, … as configured), shown on the repository screen:
// each with its exact content (as text, never markup), its sha256 and its approval state in words. Approving
// binds that exact content (path + sha256); an edited file needs a new approval; an approval can be revoked.

import { badge, el, mutatingButton } from "./dom.js";

const STATES = {
  approved: ["ok", "approved at this content: sent to the model as instructions (they grant no authority)"],
  "changed-since-approval": ["warning", "changed since it was approved: not sent to the model until you approve it again"],
  unapproved: ["pending", "not approved: not sent to the model as instructions"],
};

export function instructionFilesView(app, view) {
  const files = view.files || [];
  return el("div", { class: "card", testid: "instruction-files" },
    el("h3", { text: "Instruction files" }),
    el("p", { text: `Looked for: ${(view.paths || []).join(", ")}. A file reaches the model as instructions only ` +
      "after you approve its exact content; an edited file needs a new approval. Even approved, it is repository " +
      "text: it grants no authority, and every operation still asks you." }),
    view.outcome ? el("p", { testid: "instruction-outcome", text: view.outcome }) : null,
    files.length ? files.map((file) => instructionFile(app, view.root, file))
      : el("p", { class: "empty", testid: "instruction-files-none", text: "No instruction file found." }));
}

function instructionFile(app, root, file) {
  const [status, words] = STATES[file.state] || ["unknown", file.state || "unknown"];
  const approvals = file.approvals || [];
  return el("div", { class: "instruction-file", testid: "instruction-file", dataset: { path: file.path, state: file.state } },
    el("h4", {}, el("code", { text: file.path }), " ", badge(status), " ",
      el("span", { testid: "instruction-state", text: words })),
    file.sha256 ? el("p", {}, "sha256 ", el("code", { testid: "instruction-sha256", text: file.sha256 }),
      ` (${file.size || 0} bytes)`) : null,
    file.problem ? el("p", { testid: "instruction-problem", text: `Cannot be shown as text or approved: ${file.problem}` })
      : el("pre", { class: "instruction-text", testid: "instruction-text", text: file.text || "" }),
    file.approveConfirmation ? el("div", { class: "actions" }, mutatingButton("Approve this exact content",
      () => app.approveInstructionFile(root, file), "approve-instruction-file")) : null,
    approvals.length ? el("ul", { class: "plain", testid: "instruction-approvals" }, approvals.map((approval) =>
      el("li", {}, `Approved by ${approval.approvedBy} at ${approval.approvedAt} for sha256 ${approval.sha256.slice(0, 12)}…`,
        approval.revokedAt ? ` — revoked by ${approval.revokedBy} at ${approval.revokedAt}` : " — in force ",
        approval.revokeConfirmation ? mutatingButton("Revoke", () => app.revokeInstructionFile(root, file, approval),
          "revoke-instruction-file") : null))) : null);
}
