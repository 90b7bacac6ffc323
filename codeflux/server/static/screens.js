// The first-run screen (provider status, the scripted demo) and the repository chooser (path →
// InspectRepository; a dirty tree is listed with its hash and must be acknowledged to start from it; the
// repository's instruction files are shown with their content and an approve / revoke control).

import { badge, el, facts, mutatingButton, section } from "./dom.js";
import { providerList } from "./settings.js";
import { instructionFilesView } from "./instructions.js";

export function providerLabel(overview, testid = "provider-label") {
  return el("p", { class: overview.scripted ? "label-scripted" : "label-provider", testid,
    text: `Provider: ${overview.providerLabel || "none configured"}` });
}

export function firstRunView(app, overview) {
  const repos = overview.repositories || [];
  return section("Welcome to codeflux", "first-run",
    el("p", { text: "codeflux keeps everything on this machine: one SQLite file in your data directory, " +
      "git worktrees for every task, and nothing runs without your approval." }),
    facts([["Version", overview.version], ["Data directory", overview.dataDirectoryName]]),
    providerLabel(overview),
    el("h3", { text: "Providers" }),
    (overview.providers || []).length ? providerList(overview.providers, "provider-status")
      : el("p", { class: "empty", testid: "provider-status", text: "No provider has a stored key." }),
    el("h3", { text: "Try it without a model" }),
    el("p", { text: "The demo creates a small sample repository with one failing test and runs a scripted " +
      "demo — not an AI model — that fixes it, asking you before it runs anything." }),
    el("div", { class: "actions" },
      mutatingButton("Try the demo", () => app.createDemo(), "try-demo"),
      el("button", { type: "button", testid: "choose-repository", onclick: () => app.showView("chooser"),
        text: "Choose a repository instead" })),
    repos.length ? el("p", { text: `${repos.length} known repositories.` }) : null);
}

export function chooserView(app, state) {
  const input = el("input", { id: "repo-path", testid: "repo-path", value: state.path || "", size: 60,
    placeholder: "/path/to/a/git/repository", autocomplete: "off" });
  const inspect = () => app.inspectRepository(input.value);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") inspect(); });
  const known = (app.overview && app.overview.repositories) || [];
  const body = section("Choose a repository", "chooser",
    el("label", { for: "repo-path", text: "Repository path" }), input,
    el("button", { type: "button", testid: "inspect-repository", onclick: inspect, text: "Inspect" }),
    known.length ? el("div", {}, el("h3", { text: "Known repositories" }),
      el("ul", { class: "plain" }, known.map((r) => el("li", {}, el("button", { type: "button", class: "link",
        onclick: () => app.inspectRepository(r.root), text: r.root }))))) : null);
  if (state.view) body.append(repositoryDetail(app, state.view));
  if (state.view && state.instructions && state.instructions.root === state.view.root) {
    body.append(instructionFilesView(app, state.instructions));
  }
  return body;
}

function repositoryDetail(app, repo) {
  const changes = repo.changes || [];
  const detail = el("div", { class: "card", testid: "repository-detail" },
    el("h3", {}, "Repository ", badge(repo.dirty ? "warning" : "ok"), repo.dirty ? " uncommitted changes" : " clean"),
    facts([["Root", repo.root], ["Branch", repo.detached ? "detached HEAD" : repo.branch], ["HEAD", repo.head],
      ["Operations in progress", (repo.operationsInProgress || []).join(", ")]]));
  let ack = null;
  if (repo.dirty) {
    detail.append(el("h4", { text: "Uncommitted changes" }),
      el("ul", { class: "plain", testid: "dirty-changes" }, changes.map((c) => el("li", {}, `${c.status} ${c.path}`))),
      el("p", {}, "Changes hash: ", el("code", { testid: "dirty-hash", text: repo.dirtyHash })));
    ack = el("input", { type: "checkbox", id: "ack-dirty", testid: "ack-dirty" });
    detail.append(el("p", {}, ack, el("label", { for: "ack-dirty",
      text: " I reviewed these uncommitted changes; tasks may start from this exact state (bound to the hash above)." })));
  }
  detail.append(el("div", { class: "actions" }, el("button", { type: "button", testid: "use-repository",
    onclick: () => {
      if (repo.dirty && !ack.checked) { app.showError("Acknowledge the uncommitted changes first."); return; }
      app.useRepository(repo, repo.dirty ? repo.dirtyHash : "");
    }, text: "Use this repository" })));
  return detail;
}
