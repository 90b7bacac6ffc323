// The codeflux web client: one RpcClient (one WebSocket), views per screen, and the selected task's
// session stream. Mutating controls are enabled only while that stream is live.

import { Code, RpcClient, pageKey, rememberReturnTo } from "./rpc.js";
import { SessionStream, State } from "./session.js";
import { clear, el } from "./dom.js";
import { Timeline } from "./timeline.js";
import { commands } from "./commands.js";
import { TaskPanel, composer, streamBanner } from "./workspace.js";
import { TaskList } from "./task_list.js";
import { chooserView, firstRunView, providerLabel } from "./screens.js";
import { ledgerView, retryForm, reviewDrawer } from "./review.js";
import { recoveryView } from "./recovery.js";
import { graphView } from "./graph.js";
import { diagnosticsView, settingsView } from "./settings.js";
import { memoryView } from "./memory.js";
import { incidentsView } from "./incidents.js";


class App {
  constructor(root) {
    this.rpc = new RpcClient();
    this.root = root;
    this.view = "loading";
    this.overview = null;
    this.repository = null;
    this.acknowledgedHash = "";
    this.chooser = { path: "", view: null };
    this.tasks = [];
    this.taskList = new TaskList(this);
    this.taskId = null;
    this.task = null;
    this.session = null;
    this.streamState = { state: State.IDLE, info: {} };
    this.busy = 0;
    this.drawer = null;
    this.refreshTimer = null;
    this.buildShell();
    this.rpc.onConnection((connected) => {
      this.connection.textContent = connected ? "coordinator: connected" : "coordinator: disconnected";
      this.connection.dataset.connected = connected ? "1" : "0";
      if (connected) clear(this.sessionNotice);
    });
    this.rpc.onOpenFailed(() => this.showSessionEnded());
    window.addEventListener("popstate", () => this.route());
  }

  // The socket could not be opened: codeflux stopped, or it restarted and this tab's session (cookie and page
  // key, kept only in the old process's memory) is gone. Either way only a new launch link gets back in.
  showSessionEnded() {
    if (this.sessionNotice.firstChild) return;
    const taskId = taskIdFromPath(location.pathname);
    if (taskId) rememberReturnTo(location.pathname);
    this.connection.textContent = "coordinator: not connected";
    this.sessionNotice.append(el("section", { class: "notice", testid: "session-ended", role: "alert" },
      el("h2", { text: "This tab's codeflux session has ended" }),
      el("p", { text: "codeflux stopped, or it was restarted, so this tab cannot reconnect. Your tasks are kept. "
        + `To get a new link, run \`${openCommand(taskId)}\` in a terminal while codeflux runs, or \`codeflux `
        + "start` if it does not run any more; either prints a one-time link and opens it in your browser." }),
      taskId ? el("p", { text: `\`${openCommand(taskId)}\` opens this task's page; so does a new link opened `
        + "in this tab." }) : null));
  }

  // Follow the address: /tasks/<id> selects that task; anything else shows the screen it was left on.
  route() {
    const taskId = taskIdFromPath(location.pathname);
    if (taskId) {
      if (taskId === this.taskId && this.panel) this.showView("workspace", { push: false });
      else this.selectTask(taskId, { push: false });
      return;
    }
    if (location.pathname === INCIDENTS_PATH) { this.showView("incidents", { push: false }); return; }
    const view = history.state && history.state.view;
    if (view && view !== "workspace") { this.showView(view, { push: false }); return; }
    if (this.taskId) this.selectTask(null, { push: false });
    else this.showView("workspace", { push: false });
  }

  buildShell() {
    const nav = [["workspace", "Workspace"], ["chooser", "Repositories"], ["recovery", "Recovery"],
      ["memory", "Memory"], ["incidents", "Incidents"], ["settings", "Settings"], ["diagnostics", "Diagnostics"]];
    this.connection = el("span", { class: "connection", testid: "connection", text: "coordinator: connecting" });
    this.provider = el("span", { class: "provider" });
    this.errors = el("div", { class: "errors", testid: "error", role: "alert" });
    this.sessionNotice = el("div", { class: "session-notice" });
    this.main = el("main", { id: "main", tabindex: "-1" });
    this.drawerSlot = el("div", { class: "drawer-slot" });
    clear(this.root).append(
      el("header", { class: "appbar" }, el("h1", { text: "codeflux" }), this.provider, this.connection,
        el("nav", { "aria-label": "Screens" }, nav.map(([name, label]) =>
          el("button", { type: "button", testid: `nav-${name}`, onclick: () => this.showView(name), text: label })))),
      this.sessionNotice, this.errors, el("div", { class: "layout" }, this.main, this.drawerSlot));
  }

  async boot() {
    if (!pageKey()) {
      // The page key comes only with a launch link, and stays in the tab that opened it. A new link opened
      // in this tab comes back to the task address it is on.
      const taskId = taskIdFromPath(location.pathname);
      if (taskId) rememberReturnTo(location.pathname);
      this.connection.textContent = "coordinator: not connected";
      clear(this.main).append(el("section", { class: "notice", testid: "needs-launch-link" },
        el("h2", { text: "Open codeflux from its launch link" }),
        el("p", { text: "This tab was not opened through a codeflux launch link, so it cannot connect. "
          + `Run \`${openCommand(taskId)}\` in a terminal for a new link (or \`codeflux start\` if codeflux `
          + "does not run): each link opens codeflux in one tab, and that tab keeps working after a reload." })));
      return;
    }
    try {
      this.overview = await this.rpc.unary("WorkspaceService/GetOverview", {});
    } catch (error) {
      this.showError(error);
      return;
    }
    clear(this.provider).append(providerLabel(this.overview, "appbar-provider"));
    try {
      this.settings = await this.rpc.unary("SettingsService/GetSettings", {});
    } catch (error) {
      this.settings = null;
    }
    const repos = this.overview.repositories || [];
    if (repos.length) this.repository = repos[repos.length - 1];
    await this.loadTasks();
    if (this.view !== "loading") return; // the person already navigated somewhere
    const routed = taskIdFromPath(location.pathname);
    if (routed) { await this.selectTask(routed, { push: false }); return; }
    if (location.pathname === INCIDENTS_PATH) { this.showView("incidents", { push: false }); return; }
    this.showView(this.overview.firstRun && !repos.length && !this.tasks.length ? "first-run" : "workspace");
  }

  // ------------------------------------------------------------------------------------- plumbing

  showNotice(text, testid) {
    clear(this.errors).append(el("p", { testid }, `${text} `,
      el("button", { type: "button", testid: "error-dismiss", onclick: () => clear(this.errors), text: "Dismiss" })));
  }

  showError(error) {
    const text = typeof error === "string" ? error : error.safeMessage || error.message || "something went wrong";
    const code = typeof error === "object" && error.code ? ` (status ${error.code})` : "";
    clear(this.errors).append(el("p", {}, `${text}${code} `,
      el("button", { type: "button", testid: "error-dismiss", onclick: () => clear(this.errors), text: "Dismiss" })));
  }

  // Run one user mutation: disables controls while it settles, shows a safe error on failure. A task
  // mutation sent with a revision the task no longer has is refused (ABORTED / STALE_REVISION): then the
  // task is re-read (`reload`, default: the selected task) and the person is told so, never silently.
  async mutate(work, reload) {
    this.busy += 1;
    this.gate();
    try {
      clear(this.errors);
      return await work();
    } catch (error) {
      if (isStaleRevision(error)) {
        this.showNotice("This task changed since you looked; reloaded. Check it and try again.", "stale-revision");
        await (reload ? reload() : this.refreshTask());
      } else if (error.detail && error.detail.errorType === "UnconfirmedDecisionError") {
        // The card this answered is no longer the one codeflux shows: nothing was decided; show the current one.
        this.showNotice("Nothing was decided: that card is no longer current. Reloaded; check it and decide again.",
          "unconfirmed-decision");
        await (reload ? reload() : this.refreshTask());
      } else {
        this.showError(error);
      }
      return null;
    } finally {
      this.busy -= 1;
      this.gate();
    }
  }

  // Enable a mutating control only when: it is available, no other command is settling and (for a task
  // control) the task's stream is live (for a pinned decision: live or replaying).
  gate() {
    const live = this.session !== null && this.session.live;
    // The first replay only: the TaskView was fetched as the task opened; after a drop it may be stale until live.
    const connected = this.session !== null && this.streamState.state === State.REPLAYING && !this.session.wasLive;
    for (const button of this.root.querySelectorAll("[data-mutating]")) {
      let reason = button.dataset.unavailable === "1" ? button.dataset.reason || "not available" : "";
      if (!reason && button.dataset.scope === "task" && !live) reason = `waiting for the live stream (${this.streamState.state})`;
      // A pinned decision is made on the TaskView fetched live (issue 20 item 5): answerable during the task's
      // first replay too, but not without a connected stream.
      if (!reason && button.dataset.scope === "pinned" && !(live || connected)) {
        reason = `waiting for the task's stream (${this.streamState.state})`;
      }
      if (!reason && this.busy > 0) reason = "another command is settling";
      button.disabled = reason !== "";
      if (reason) button.title = reason;
      else button.removeAttribute("title");
    }
  }

  showView(name, { push = true } = {}) {
    // A screen other than the workspace has no address of its own (but Incidents: /incidents): leave a task's for "/".
    const address = name === "incidents" ? INCIDENTS_PATH : "/";
    if (push && name !== "workspace" && location.pathname !== address) history.pushState({ view: name }, "", address);
    this.view = name;
    this.closeDrawer();
    clear(this.main);
    if (name === "first-run") this.main.append(firstRunView(this, this.overview || {}));
    else if (name === "chooser") this.main.append(chooserView(this, this.chooser));
    else if (name === "workspace") this.renderWorkspace();
    else if (name === "recovery") this.load("RecoveryService/ListRecovery", (r) => recoveryView(this, r));
    else if (name === "settings") {
      this.load("SettingsService/GetSettings", (s) => { this.settings = s; return settingsView(this, s); });
    }
    else if (name === "diagnostics") this.main.append(diagnosticsView(this, null, null));
    else if (name === "memory") this.main.append(memoryView(this));
    else if (name === "incidents") this.main.append(incidentsView(this));
    this.gate();
  }

  async load(method, render) {
    const slot = el("div", { class: "loading", text: "Loading…" });
    this.main.append(slot);
    try {
      const reply = await this.rpc.unary(method, {});
      slot.replaceWith(render(reply));
      this.gate();
    } catch (error) {
      slot.textContent = "Could not load this screen.";
      this.showError(error);
    }
  }

  // ------------------------------------------------------------------------------------ workspace

  renderWorkspace() {
    if (!this.repository && !this.tasks.length) { this.showView("first-run"); return; }
    this.listSlot = this.taskList.element();
    this.bannerSlot = el("div", {});
    this.center = el("div", { class: "center" });
    this.main.append(el("div", { class: "workspace", testid: "workspace" }, this.listSlot,
      el("div", { class: "column" }, this.bannerSlot, this.center)));
    if (this.taskId && this.panel) {
      this.center.append(this.panel.root);
      this.renderBanner();
    } else {
      this.center.append(composer(this));
    }
  }

  // Refresh the task list's newest page (task_list.js keeps older pages and the search).
  async loadTasks() {
    try {
      await this.taskList.refresh();
    } catch (error) {
      this.showError(error);
    }
    if (!this.taskList.query) this.tasks = this.taskList.tasks; // a search with no match is not "no tasks yet"
  }

  // Select a task (null: the composer). `push`: give it its address (/tasks/<id>) in the history, so reload,
  // back and forward land on it; false when following the address (boot, back/forward).
  async selectTask(taskId, { push = true } = {}) {
    if (push) {
      const path = taskId ? taskPath(taskId) : "/";
      if (location.pathname !== path) history.pushState({ taskId }, "", path);
    }
    if (this.session) this.session.stop();
    this.session = null;
    this.task = null;
    this.taskId = taskId;
    this.panel = null;
    this.streamState = { state: State.IDLE, info: {} };
    if (!taskId) { this.showView("workspace"); return; }
    let task;
    try {
      task = await this.rpc.unary("TaskService/GetTask", { taskId });
    } catch (error) {
      if (this.taskId === taskId && (error.code === Code.NOT_FOUND || error.code === Code.INVALID_ARGUMENT)) {
        // An address of a task this codeflux does not have: show the workspace at "/" and say so.
        this.taskId = null;
        history.replaceState(null, "", "/");
        this.showView("workspace", { push: false });
      } else if (this.view === "loading") {
        this.showView("workspace", { push: false });
      }
      this.showError(error);
      return;
    }
    if (this.taskId !== taskId) return;
    this.timeline = new Timeline(this);
    this.panel = new TaskPanel(this, this.timeline);
    this.showView("workspace");
    this.applyTask(task);
    this.session = new SessionStream(this.rpc, task.sessionId, {
      onEvents: (events) => { this.timeline.addMany(events); this.scheduleRefresh(); this.gate(); },
      onState: (state, info) => {
        this.streamState = { state, info };
        this.renderBanner();
        if (state === State.LIVE) { this.scheduleRefresh(); this.timeline.tools.retryFailed(); }
        this.gate();
      },
    });
    this.session.start("0");
    this.loadTasks();
  }

  renderBanner() {
    if (!this.bannerSlot) return;
    clear(this.bannerSlot).append(streamBanner(this.streamState.state, this.streamState.info,
      () => this.session && this.session.retryNow()));
  }

  applyTask(task) {
    this.task = task;
    if (this.panel) this.panel.update(task);
    this.gate();
  }

  scheduleRefresh() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => { this.refreshTimer = null; this.refreshTask(); }, 50);
  }

  async refreshTask() {
    const taskId = this.taskId;
    if (!taskId) return;
    try {
      const task = await this.rpc.unary("TaskService/GetTask", { taskId });
      if (this.taskId === taskId) this.applyTask(task);
    } catch (error) {
      if (error.code !== 14) this.showError(error);
    }
    this.loadTasks();
  }

  // Show a drawer (review, retry, graph, ledger). On a narrow window it sits above the task (app.css), and it is
  // scrolled into view either way, so opening it never leaves it thousands of pixels down.
  showDrawer(name, node) {
    clear(this.drawerSlot).append(node);
    this.drawer = name;
    node.scrollIntoView({ block: "start" });
  }

  closeDrawer() {
    this.drawer = null;
    if (this.drawerSlot) clear(this.drawerSlot);
  }

  async openReview() {
    if (!this.taskId) return;
    try {
      const review = await this.rpc.unary("ReviewService/GetReview", { taskId: this.taskId });
      this.showDrawer("review", reviewDrawer(this, this.task, review));
      this.gate();
    } catch (error) {
      this.showError(error);
    }
  }

  openRetry() {
    if (!this.taskId) return;
    this.showDrawer("retry", el("aside", { class: "drawer", testid: "retry-drawer", "aria-label": "Try again" },
      el("div", { class: "drawer-head" }, el("h2", { text: "Try again" }),
        el("button", { type: "button", onclick: () => this.closeDrawer(), text: "Close" })),
      retryForm(this)));
    this.gate();
  }

  async openGraph() {
    if (!this.taskId) return;
    try {
      const reply = await this.rpc.unary("TaskService/GetTaskGraph", { taskId: this.taskId });
      this.showDrawer("graph", graphView(this, reply));
    } catch (error) {
      this.showError(error);
    }
  }

  async openLedger() {
    if (!this.taskId) return;
    try {
      const reply = await this.rpc.unary("ReviewService/ListStages", { taskId: this.taskId });
      this.showDrawer("ledger", ledgerView(this, reply));
    } catch (error) {
      this.showError(error);
    }
  }

}

const INCIDENTS_PATH = "/incidents";
const TASK_PATH = /^\/tasks\/([A-Za-z0-9_-]{1,128})\/?$/;

function taskIdFromPath(path) {
  const match = TASK_PATH.exec(path);
  return match ? match[1] : null;
}

// The command that prints a new launch link: for a task's page, one that opens that task.
function openCommand(taskId) {
  return taskId ? `codeflux open --task ${taskId}` : "codeflux open";
}

function taskPath(taskId) {
  return `/tasks/${encodeURIComponent(taskId)}`;
}

function isStaleRevision(error) {
  const detail = (error && error.detail) || {};
  return error && error.code === Code.ABORTED && (detail.errorType === "StaleRevisionError" || detail.code === "STALE_REVISION");
}

Object.assign(App.prototype, commands);

const app = new App(document.getElementById("app"));
app.boot();
