// The user's commands (every mutation goes through app.mutate: one at a time, safe errors), mixed into
// the App class of app.js. `this` is the App.

import { clear, el, idempotencyKey } from "./dom.js";
import { settingsView, diagnosticsView, repositoryApprovalList } from "./settings.js";
import { providerLabel } from "./screens.js";
import { exampleEntries } from "./examples.js";

// A mutation's control: a fresh idempotency key and, for a task mutation, the task revision the person
// saw (the service refuses a stale one with ABORTED / STALE_REVISION; see app.mutate).
const control = (prefix, revision) => {
  const made = { idempotencyKey: idempotencyKey(prefix) };
  if (revision !== undefined && revision !== null && String(revision) !== "0") made.expectedRevision = String(revision);
  return made;
};

export const commands = {
  // ------------------------------------------------------------------------------------- commands

  createDemo() {
    return this.mutate(async () => {
      const repo = await this.rpc.unary("WorkspaceService/CreateDemoRepository", { control: control("demo") });
      this.overview = await this.rpc.unary("WorkspaceService/GetOverview", {});
      clear(this.provider).append(providerLabel(this.overview, "appbar-provider"));
      this.useRepository(repo, "");
    });
  },

  // The repository's suggested requirement (a codeflux sample's TASK.md), read once with
  // InspectRepository when the repository came from the overview list (which carries only root and id).
  async loadSuggestion(repo) {
    if (!repo || repo.suggestionLoaded || repo.suggestedRequirement !== undefined) return;
    repo.suggestionLoaded = true;
    try {
      const view = await this.rpc.unary("WorkspaceService/InspectRepository", { path: repo.root });
      repo.suggestedRequirement = view.suggestedRequirement || "";
    } catch {
      repo.suggestedRequirement = "";
    }
    if (this.repository === repo && this.composerSuggest) this.composerSuggest(repo.suggestedRequirement);
  },

  async inspectRepository(path) {
    this.chooser.path = path;
    this.chooser.instructions = null;
    try {
      this.chooser.view = await this.rpc.unary("WorkspaceService/InspectRepository", { path });
      this.chooser.instructions = await this.rpc.unary("InstructionService/ListInstructionFiles",
        { repositoryPath: this.chooser.view.root });
    } catch (error) {
      if (!this.chooser.view || !this.chooser.view.root) this.chooser.view = null;
      this.showError(error);
    }
    this.showView("chooser");
  },

  async loadInstructions(root) {
    try {
      this.chooser.instructions = await this.rpc.unary("InstructionService/ListInstructionFiles",
        { repositoryPath: root });
    } catch (error) {
      this.showError(error);
    }
    this.showView("chooser");
  },

  // A person's decision on one instruction file at one content: it sends back the card's value.
  approveInstructionFile(root, file) {
    return this.mutate(async () => {
      this.chooser.instructions = await this.rpc.unary("InstructionService/ApproveInstructionFile", {
        control: control("instructions"), repositoryPath: root, path: file.path, sha256: file.sha256,
        confirmation: file.approveConfirmation });
      this.showView("chooser");
    }, () => this.loadInstructions(root));
  },

  revokeInstructionFile(root, file, approval) {
    return this.mutate(async () => {
      this.chooser.instructions = await this.rpc.unary("InstructionService/RevokeInstructionFile", {
        control: control("instructions"), repositoryPath: root, path: file.path, sha256: approval.sha256,
        confirmation: approval.revokeConfirmation });
      this.showView("chooser");
    }, () => this.loadInstructions(root));
  },

  useRepository(repo, acknowledgedHash) {
    // A full RepositoryView (it has a HEAD) carries its suggestion; proto3 JSON omits an empty one.
    if (repo.head && repo.suggestedRequirement === undefined) repo.suggestedRequirement = "";
    this.repository = repo;
    this.acknowledgedHash = acknowledgedHash;
    this.taskId = null;
    this.showView("workspace");
  },

  createTask(requirement, title, hardLimit) {
    if (!requirement.trim()) { this.showError("Describe the outcome first."); return null; }
    return this.mutate(async () => {
      const request = { control: control("create"), repositoryPath: this.repository.root, requirement };
      if (title.trim()) request.title = title.trim();
      if (this.acknowledgedHash) request.acknowledgedDirtyHash = this.acknowledgedHash;
      let task = await this.rpc.unary("TaskService/CreateTask", request);
      await this.selectTask(task.taskId);
      if (hardLimit.trim()) {
        task = await this.rpc.unary("TaskService/SetBudget", { control: control("budget", task.revision),
          taskId: task.taskId, choice: "set", hardLimit: hardLimit.trim(), currency: "USD" });
      }
      const drafted = await this.rpc.unary("TaskService/DraftPlan",
        { control: control("draft", task.revision), taskId: task.taskId });
      if (this.taskId === task.taskId) this.applyTask(drafted);
    });
  },

  draftPlan() {
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("TaskService/DraftPlan",
        { control: control("draft", this.task.revision), taskId: this.taskId }));
    });
  },

  approvePlan(plan) {
    return this.mutate(async () => {
      const taskId = this.taskId;
      const approved = await this.rpc.unary("TaskService/ApprovePlan",
        { control: control("approve", this.task.revision), taskId, revision: plan.revision, sha256: plan.sha256,
          confirmation: plan.confirmation || "" });
      const task = await this.rpc.unary("TaskService/StartTask",
        { control: control("start", approved.revision), taskId, planRevision: plan.revision });
      this.applyTask(task);
    });
  },

  sendBackPlan(plan, feedback) {
    if (!feedback.trim()) { this.showError("Say what should change before sending the plan back."); return null; }
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("TaskService/SendBackPlan",
        { control: control("sendback", this.task.revision), taskId: this.taskId, revision: plan.revision, sha256: plan.sha256,
          feedback }));
    });
  },

  answerQuestion(plan, number, text) {
    if (!text.trim()) { this.showError(`Write an answer to question ${number} first.`); return null; }
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("TaskService/AnswerQuestion",
        { control: control("answer", this.task.revision), taskId: this.taskId, revision: plan.revision, sha256: plan.sha256,
          question: number, text }));
    });
  },

  // The plan card's example editor: the whole new list, as a new revision by the person (examples.js).
  editPlanExamples(plan, draft) {
    const made = exampleEntries(plan, draft);
    if (made.problem) { this.showError(made.problem); return null; }
    return this.mutate(async () => {
      const task = await this.rpc.unary("TaskService/EditPlanExamples",
        { control: control("examples", this.task.revision), taskId: this.taskId, revision: plan.revision, sha256: plan.sha256,
          examples: made.examples });
      this.examplesDraft = null;
      this.applyTask(task);
    });
  },

  taskCommand(method, prefix) {
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary(method, { control: control(prefix, this.task.revision), taskId: this.taskId }));
    });
  },

  // The cancel says in words what it did: a running command stopped (or still stopping) and the worktree
  // removed, kept (why) or left to the run, which removes it once the command has stopped.
  cancelTask() {
    return this.mutate(async () => {
      const task = await this.rpc.unary("TaskService/CancelTask",
        { control: control("cancel", this.task.revision), taskId: this.taskId });
      this.applyTask(task);
      const outcome = task.cancelOutcome || {};
      clear(this.drawerSlot).append(el("aside", { class: "drawer", testid: "cancel-result", "aria-label": "Task cancelled" },
        el("h2", { text: "Task cancelled" }),
        el("p", { testid: "cancel-summary", text: outcome.summary || `task ${task.taskId} cancelled` }),
        el("button", { type: "button", onclick: () => this.closeDrawer(), text: "Close" })));
    });
  },

  decide(requestId, decision) {
    return this.mutate(async () => {
      // The card's confirmation: issued by the coordinator with the pending request, used up by this decision.
      const card = ((this.task && this.task.pendingApprovals) || []).find((a) => a.requestId === requestId);
      const reply = await this.rpc.unary("ApprovalService/Decide",
        { control: control("decide", this.task.revision), taskId: this.taskId, requestId, decision,
          confirmation: (card && card.confirmation) || "" });
      if (reply.task) this.applyTask(reply.task);
    });
  },

  setBudget(choice, amount, currency) {
    return this.mutate(async () => {
      const request = { control: control("budget", this.task.revision), taskId: this.taskId, choice, currency };
      if (choice === "set") request.hardLimit = amount.trim();
      this.applyTask(await this.rpc.unary("TaskService/SetBudget", request));
    });
  },

  accept(diffIdentity, confirmation) {
    return this.mutate(async () => {
      const reply = await this.rpc.unary("ReviewService/AcceptChange",
        { control: control("accept"), taskId: this.taskId, diffIdentity, confirmation: confirmation || "" });
      if (reply.task) this.applyTask(reply.task);
      clear(this.drawerSlot).append(el("aside", { class: "drawer", testid: "accept-result" },
        el("h2", { text: "Change accepted" }),
        el("p", { text: `${reply.kind || "landed"} on ${reply.branch || "the branch"}: ${reply.landedHead || "unknown head"}` }),
        (reply.conflictingPaths || []).length ? el("p", { text: `Conflicts: ${reply.conflictingPaths.join(", ")}` }) : null,
        el("button", { type: "button", onclick: () => this.closeDrawer(), text: "Close" })));
    });
  },

  retry(feedback) {
    if (!feedback.trim()) { this.showError("Say what the next attempt should change before trying again."); return null; }
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("TaskService/RetryTask",
        { control: control("retry", this.task.revision), taskId: this.taskId, feedback }));
      this.closeDrawer();
    });
  },

  // A reject answers the review's card (its single-use confirmation); `retry` starts another attempt on the same
  // plan with the reason as its feedback, the patch kept.
  reject(diffIdentity, reason, confirmation, retry) {
    if (!reason.trim()) { this.showError("Say why you reject this diff before rejecting it."); return null; }
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("ReviewService/RejectChange",
        { control: control(retry ? "reject-retry" : "reject"), taskId: this.taskId, diffIdentity, reason,
          retry: Boolean(retry), confirmation: confirmation || "" }));
      this.closeDrawer();
    });
  },

  recoveryAction(view, action) {
    return this.mutate(async () => {
      await this.rpc.unary("RecoveryService/TakeAction",
        { control: control("recover", view.revision), taskId: view.taskId, action });
      this.showView("recovery");
    }, () => this.showView("recovery"));
  },

  recordOutcome(view, item, outcome) {
    return this.mutate(async () => {
      await this.rpc.unary("RecoveryService/RecordOutcome",
        { control: control("outcome"), taskId: view.taskId, itemId: item.itemId, outcome });
      this.showView("recovery");
    });
  },

  setBudgetDefaults(amount) {
    return this.mutate(async () => {
      const settings = await this.rpc.unary("SettingsService/SetBudgetDefaults",
        { control: control("defaults"), hardLimit: amount.trim(), currency: "USD" });
      clear(this.main).append(settingsView(this, settings));
    });
  },

  // Settings' repository approvals: every one (revoked ones say so), each live one with a Revoke button.
  async loadRepositoryApprovals(slot) {
    try {
      const reply = await this.rpc.unary("ApprovalService/ListRepositoryApprovals", { includeRevoked: true });
      clear(slot).append(repositoryApprovalList(this, reply.approvals || []));
    } catch (error) {
      clear(slot).append(el("p", { class: "error", testid: "repository-approvals-error",
        text: `Could not list repository approvals: ${error.safeMessage || error.message}` }));
    }
    this.gate();
  },

  revokeRepositoryApproval(approvalId, slot) {
    return this.mutate(async () => {
      await this.rpc.unary("ApprovalService/RevokeRepositoryApproval",
        { control: control("revoke"), approvalId, reason: "revoked in the codeflux UI settings" });
      await this.loadRepositoryApprovals(slot);
    });
  },

  // Settings → Providers: the stored choice (applies to work started afterwards); the app bar and the composer
  // follow it.
  // openai-compatible also sends its base URL and whether it takes no key (validated by the coordinator).
  setProviderChoice(provider, cheapModel, capableModel, baseUrl = "", noKey = false) {
    return this.mutate(async () => {
      const settings = await this.rpc.unary("SettingsService/SetProviderChoice",
        { control: control("provider"), provider, cheapModel: cheapModel.trim(), capableModel: capableModel.trim(),
          baseUrl: baseUrl.trim(), noKey });
      this.settings = settings;
      this.overview = await this.rpc.unary("WorkspaceService/GetOverview", {});
      clear(this.provider).append(providerLabel(this.overview, "appbar-provider"));
      clear(this.main).append(settingsView(this, settings));
    });
  },

  // A non-default endpoint approved by a person, answering its card: the task's (taskId) or, in Settings → Providers
  // (no taskId), the stored choice's or ("current") the one new tasks' provider calls now (a start flag's). The newest
  // read's card carries the single-use confirmation sent back.
  approveEndpoint(taskId, which) {
    return this.mutate(async () => {
      const shown = this.settings || {};
      const card = (taskId ? (this.task || {}).endpointApproval
        : which === "current" ? shown.currentEndpointApproval : shown.chosenEndpointApproval) || {};
      const settings = await this.rpc.unary("SettingsService/ApproveEndpoint", { control: control("endpoint"),
        provider: card.provider || "", baseUrl: card.baseUrl || "", confirmation: card.confirmation || "",
        taskId: taskId || "" });
      this.settings = settings;
      if (!taskId) clear(this.main).append(settingsView(this, settings));
      else if (this.taskId === taskId) this.applyTask(await this.rpc.unary("TaskService/GetTask", { taskId }));
    });
  },

  // A key, sent once; the reply says only "stored"/"updated". The key statuses are re-read into the screen.
  storeProviderKey(provider, key) {
    return this.mutate(async () => {
      const reply = await this.rpc.unary("SettingsService/StoreProviderKey", { control: control("key"), provider, key });
      this.settings = await this.rpc.unary("SettingsService/GetSettings", {});
      clear(this.main).append(settingsView(this, this.settings));
      const result = this.main.querySelector('[data-testid="provider-key-result"]');
      if (result) result.textContent = `${reply.provider}: key ${reply.outcome} in the OS credential store`;
      return reply;
    });
  },

  setClarificationPolicy(policy) {
    return this.mutate(async () => {
      const settings = await this.rpc.unary("SettingsService/SetClarificationPolicy",
        { control: control("clarification"), policy });
      clear(this.main).append(settingsView(this, settings));
    });
  },

  async runDoctor() {
    try {
      const report = await this.rpc.unary("DiagnosticsService/RunDoctor", {});
      clear(this.main).append(diagnosticsView(this, report, null));
      this.gate();
    } catch (error) {
      this.showError(error);
    }
  },

  createBackup() {
    return this.mutate(async () => {
      const backup = await this.rpc.unary("DiagnosticsService/CreateBackup", { control: control("backup") });
      clear(this.main).append(diagnosticsView(this, null, backup));
    });
  },

  // The handler for a TaskView action, or null when the browser does not offer it.
  actionHandler(action) {
    const plan = () => (this.task && this.task.plan) || {};
    const pending = () => ((this.task && this.task.pendingApprovals) || [])[0];
    const focus = (testid) => () => { const node = this.root.querySelector(`[data-testid="${testid}"]`); if (node) node.focus(); };
    const table = {
      plan: () => this.draftPlan(),
      "approve-plan": () => this.approvePlan(plan()),
      "send-back": focus("plan-feedback"),
      "change-budget": focus("budget-amount"),
      start: () => this.taskCommandStart(),
      pause: () => this.taskCommand("TaskService/PauseTask", "pause"),
      resume: () => this.taskCommand("TaskService/ResumeTask", "resume"),
      cancel: () => this.cancelTask(),
      "decide-approval": () => pending() && focus("approval-allow-once")(),
      accept: () => this.openReview(),
      reject: () => this.openReview(),
      repair: () => this.openReview(),
      retry: () => this.openRetry(),
      "safe-resume": () => this.recoveryAction(this.task, "safe-resume"),
      reconcile: () => this.recoveryAction(this.task, "reconcile"),
      "preserve-patch": () => this.recoveryAction(this.task, "preserve-patch"),
      abandon: () => this.recoveryAction(this.task, "abandon"),
      "record-outcome": () => this.showView("recovery"),
    };
    return table[action] || null;
  },

  taskCommandStart() {
    return this.mutate(async () => {
      this.applyTask(await this.rpc.unary("TaskService/StartTask",
        { control: control("start", this.task.revision), taskId: this.taskId, planRevision: (this.task.plan || {}).revision || 0 }));
    });
  },
};
