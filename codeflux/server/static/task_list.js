// The task list (threads) on the left of the workspace: newest first, one page at a time ("Older tasks…"
// loads the next page after the last task shown), and "Find a task", which searches the whole store by id or
// words (TaskService/ListTasks with `query`), not just the tasks loaded so far. The element is kept across
// screens, so the search box keeps what was typed (and its focus) while the list refreshes.

import { badge, clear, el } from "./dom.js";

export const PAGE = 50;
const SEARCH_DELAY_MS = 250;

export class TaskList {
  constructor(app) {
    this.app = app;
    this.tasks = [];      // loaded, newest first
    this.next = "";       // the last loaded task's id when older tasks follow, else ""
    this.query = "";      // the search in force ("" = every task)
    this.generation = 0;  // bumped by every new search: replies of an older one are dropped
    this.searchTimer = null;
    this.drawn = null;
    this.searchBox = el("input", { type: "search", id: "task-search", testid: "task-search", autocomplete: "off",
      maxlength: 500, placeholder: "id or words", oninput: () => this.searchSoon() });
    this.status = el("p", { class: "list-status", testid: "task-list-status", role: "status" });
    this.items = el("ul", { class: "plain", testid: "task-items" });
    this.more = el("div", {});
    this.root = el("nav", { class: "threads", "aria-label": "Tasks", testid: "task-list" },
      el("h2", { text: "Tasks" }),
      el("button", { type: "button", testid: "new-task", onclick: () => app.selectTask(null), text: "New task" }),
      el("form", { class: "task-search", role: "search", testid: "task-search-form",
        onsubmit: (event) => { event.preventDefault(); this.searchNow(); } },
      el("label", { for: "task-search", text: "Find a task" }), " ", this.searchBox),
      this.status, this.items, this.more);
    this.render();
  }

  element() {
    this.render();
    return this.root;
  }

  // The newest page of the search in force. Older pages already shown stay when they still follow on from
  // it (the walk is by creation time, so a task created meanwhile only adds to the top); else the list
  // starts again from this page.
  async refresh() {
    const generation = this.generation;
    const reply = await this.app.rpc.unary("TaskService/ListTasks", { limit: PAGE, query: this.query });
    if (generation !== this.generation) return;
    const fresh = reply.tasks || [];
    const last = fresh.length ? fresh[fresh.length - 1].taskId : null;
    const at = last ? this.tasks.findIndex((t) => t.taskId === last) : -1;
    if (reply.hasMore && at >= 0 && at < this.tasks.length - 1) {
      this.tasks = fresh.concat(this.tasks.slice(at + 1));
    } else {
      this.tasks = fresh;
      this.next = reply.hasMore ? reply.nextBefore : "";
    }
    this.render();
  }

  // The next page: the tasks created before the last one shown.
  async older() {
    if (!this.next) return;
    const generation = this.generation;
    const reply = await this.app.rpc.unary("TaskService/ListTasks", { limit: PAGE, before: this.next, query: this.query });
    if (generation !== this.generation) return;
    const shown = new Set(this.tasks.map((t) => t.taskId));
    this.tasks = this.tasks.concat((reply.tasks || []).filter((t) => !shown.has(t.taskId)));
    this.next = reply.hasMore ? reply.nextBefore : "";
    this.render();
  }

  searchSoon() {
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.searchNow(), SEARCH_DELAY_MS);
  }

  async searchNow() {
    clearTimeout(this.searchTimer);
    const query = this.searchBox.value.trim();
    if (query === this.query) return;
    this.query = query;
    this.generation += 1;
    this.tasks = [];
    this.next = "";
    this.render(true);
    try {
      await this.refresh();
    } catch (error) {
      this.app.showError(error);
    }
  }

  render(searching = false) {
    const app = this.app;
    this.status.textContent = this.describe(searching);
    // Redraw only on a change, so a refresh (one per live event) keeps the focus and costs nothing.
    const drawn = JSON.stringify([app.taskId, this.next, this.tasks.map((t) => [t.taskId, t.title, t.state, t.needsAttention])]);
    if (drawn === this.drawn) return;
    this.drawn = drawn;
    clear(this.items).append(...this.tasks.map((t) => el("li", {},
      el("button", { type: "button", class: `task-item${t.taskId === app.taskId ? " selected" : ""}`,
        testid: "task-item", dataset: { taskId: t.taskId, state: t.state },
        "aria-current": t.taskId === app.taskId ? "true" : undefined, title: t.taskId,
        onclick: () => app.selectTask(t.taskId) },
      el("span", { class: "task-title", text: t.title || t.taskId }), " ", badge(t.state),
      t.needsAttention ? el("span", { class: "attention", text: " needs you" }) : null))));
    clear(this.more);
    if (this.next) {
      const button = el("button", { type: "button", testid: "older-tasks", text: "Older tasks…",
        onclick: async () => {
          button.disabled = true;
          button.textContent = "Loading older tasks…";
          try {
            await this.older();
          } catch (error) {
            app.showError(error);
            button.disabled = false;
            button.textContent = "Older tasks…";
          }
        } });
      this.more.append(button);
    }
  }

  describe(searching) {
    const count = this.tasks.length;
    const shown = `${count} ${count === 1 ? "task" : "tasks"}`;
    if (searching) return `Searching for “${this.query}”…`;
    if (this.query) {
      if (!count) return `No task matches “${this.query}”.`;
      return `${shown} matching “${this.query}”${this.next ? ", newest first; older matches follow" : ""}.`;
    }
    if (!count) return "No tasks yet.";
    return this.next ? `Newest ${shown}; older tasks follow.` : `${shown}, newest first.`;
  }
}
