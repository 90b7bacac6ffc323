// Tool activity in the timeline.
//
// * Live output: `tool-output` events ({request_id, execution_id, stream, text, offset}) are appended to
//   the request's tool card (its execution card, else its request / approval card) under "Live output
//   (streamed, not final)". Each event still has its own small entry (one entry per sequence) that says
//   where its text went.
// * Final result: when `tool-execution-finished` is committed (live or on replay), the tool call's row says how
//   it ended (from the event) and, once that row is expanded, reads the committed result with
//   TaskService.GetToolActivity and shows it, labelled final: the state in words (never colour alone), the exit
//   code or why there is none, stdout / stderr / content with "(truncated)" markers, the message. A result is read
//   only while its slot is on the page (the timeline attaches only its newest cards, timeline.js WINDOW) and not
//   inside a collapsed row, so a long task costs one call per result someone opens. The live output of that
//   request is then replaced by a pointer to the final result; output that arrives after it is not shown as live.

import { badge, clear, el, facts } from "./dom.js";
import { escapeForDisplay } from "./format.js";

const FILE_TOOLS = new Set(["read_file", "list_directory", "glob", "grep", "write_file", "edit_file", "apply_patch",
  "delete_file"]);
const STATE_NOTES = {
  succeeded: "it finished and reported success",
  failed: "it finished and reported a failure",
  cancelled: "it was stopped before it finished",
  "outcome-unknown": "codeflux does not know whether it took effect; it is never run again automatically",
  intended: "recorded as about to run", running: "still running",
};
const LIVE_CAP = 256 * 1024; // characters per stream kept in the live view
const MAX_LOADS = 4; // concurrent GetToolActivity calls (a replayed timeline may hold hundreds of results)

export function exitText(view) {
  if (view.exitCodeKnown) return `exit code ${view.exitCode || 0}`;
  if (view.tool === "run_command") return "no exit code (not reported)";
  return FILE_TOOLS.has(view.tool) ? "no exit code (file tool)" : "no exit code (not a command)";
}

function outputBlock(name, text, truncated, always) {
  if (!text && !truncated && !always) return null;
  return el("div", { class: "output-block", dataset: { stream: name } },
    el("h4", {}, name, truncated ? el("span", { class: "truncated", testid: `truncated-${name}`, text: " (truncated)" }) : null),
    text ? el("pre", { class: "output", testid: `tool-${name}`, text }) : el("p", { class: "empty", testid: `tool-${name}`, text: "(empty)" }),
    truncated ? el("p", { class: "notice", text: `(truncated) codeflux stored only the first part of ${name}.` }) : null);
}

// The committed result of one request (a ToolActivityView), labelled final.
export function resultView(view) {
  const state = view.state || "";
  const command = view.tool === "run_command";
  const args = el("ol", { class: "arguments" }, (view.arguments || []).map((a) =>
    el("li", {}, el("code", { text: escapeForDisplay(a.name) }), " = ", el("code", { text: escapeForDisplay(a.value) }))));
  return el("div", { class: "tool-final", testid: "tool-activity", dataset: { state, final: "1" } },
    el("p", { testid: "tool-state" }, el("strong", { text: "Final result (committed): " }), badge(state || "not run"),
      STATE_NOTES[state] ? ` — ${STATE_NOTES[state]}` : ""),
    facts([["Tool", escapeForDisplay(view.tool)], ["Exit code", exitText(view)],
      ["Decision", `${view.decision || "none"}${view.decisionReason ? ` — ${escapeForDisplay(view.decisionReason)}` : ""}`],
      ["Failure", view.failureKind || "none"],
      ["Duration", view.durationKnown ? `${view.durationMs || "0"} ms (measured)` : "not measured"],
      ["Confinement", view.confinement ? `${view.confinement} — ${view.confinementMeaning}` : "not recorded (no worker ran it)"],
      ["Operation identity", view.operationIdentity]], "tool-facts"),
    view.message ? el("p", { testid: "tool-message" }, el("strong", { text: "Message: " }), view.message) : null,
    outputBlock("stdout", view.stdout, view.stdoutTruncated, command),
    outputBlock("stderr", view.stderr, view.stderrTruncated, command),
    outputBlock("content", view.content, view.contentTruncated, false),
    el("details", {}, el("summary", { text: "Operation (exact arguments, in order)" }), args));
}

// On the page and not inside a collapsed row: a result slot is read only then.
function shown(slot) {
  return slot.isConnected && slot.closest("details:not([open])") === null;
}

export class ToolActivity {
  constructor(app) {
    this.app = app;
    this.requests = new Map(); // request id → { host, live, streams, finishedSeq, view, pointer }
    this.failed = new Map(); // finished sequence → retry()
    this.queue = [];
    this.loading = 0;
    this.unread = new Map(); // result slot → load, until the slot is attached to the page
  }

  // Read the results whose cards are now attached (called after the timeline attaches cards, and when the stream
  // turns live). Not while replaying: a replay batch's newest cards are attached only until the next batch comes.
  loadShown() {
    if (this.app.session && this.app.session.state === "replaying") return;
    for (const [slot, load] of this.unread) {
      if (!shown(slot)) continue;
      this.unread.delete(slot);
      // Still attached when its turn comes? Else it waits again.
      this.enqueue(() => (shown(slot) ? load() : Promise.resolve(this.unread.set(slot, load))));
    }
  }

  enqueue(load) {
    this.queue.push(load);
    this.pump();
  }

  pump() {
    while (this.loading < MAX_LOADS && this.queue.length) {
      const next = this.queue.shift();
      this.loading += 1;
      next().finally(() => { this.loading -= 1; this.pump(); });
    }
  }

  entry(requestId) {
    let found = this.requests.get(requestId);
    if (!found) {
      found = { host: null, live: null, streams: new Map(), finishedSeq: "", view: null, pointer: null };
      this.requests.set(requestId, found);
    }
    return found;
  }

  // The element of the request's own card (its tool call row or approval card) that shows its activity, if any.
  hostOf(requestId) {
    const found = this.requests.get(requestId);
    return found && found.host && !found.hostIsFallback ? found.host : null;
  }

  // `host` (an element in the request's card) shows the request's live output from now on.
  attach(requestId, host) {
    if (!requestId) return;
    const entry = this.entry(requestId);
    entry.host = host;
    if (entry.live) host.append(entry.live);
  }

  // A `tool-output` event: returns its own small entry; the text goes to the request's tool card.
  output(payload, event) {
    const requestId = typeof payload.request_id === "string" ? payload.request_id : "";
    const stream = payload.stream === "stderr" ? "stderr" : "stdout";
    const text = typeof payload.text === "string" ? payload.text : "";
    const entry = this.entry(requestId);
    const line = el("p", { class: "chunk" });
    const content = el("div", {}, line);
    let where = "shown in the request's tool card";
    if (entry.finishedSeq) {
      where = `arrived after the final result (#${entry.finishedSeq}); not shown as live output`;
    } else {
      if (!entry.host) {
        entry.host = content.appendChild(el("div", {})); // no card of this request: show it here
        entry.hostIsFallback = true;
        where = "shown below";
      }
      this.appendLive(entry, stream, text, payload.offset);
    }
    line.append(`${text.length} characters of ${stream} (live, not final) — ${where}.`);
    return { title: `Live output: ${requestId || "unknown request"}`, testid: "tool-output-chunk", content };
  }

  appendLive(entry, stream, text, offset) {
    if (!entry.live) {
      entry.live = el("section", { class: "live-output", testid: "tool-live-output" },
        el("h4", {}, badge("running"), " Live output (streamed, not final)"),
        el("p", { class: "notice", text: "Streamed while the tool runs; the committed result replaces it when it finishes." }));
      entry.host.append(entry.live);
    }
    let live = entry.streams.get(stream);
    if (!live) {
      live = { length: 0, capped: false, pre: el("pre", { class: "output live", testid: `tool-live-${stream}` }) };
      entry.live.append(el("h5", { text: `${stream} (live)` }), live.pre);
      entry.streams.set(stream, live);
    }
    if (live.capped) return;
    const at = Number.isFinite(Number(offset)) && offset !== undefined && offset !== null ? Number(offset) : live.length;
    let chunk = text;
    if (at > live.length) live.pre.append(`\n[… ${at - live.length} characters not received …]\n`);
    else if (at < live.length) chunk = chunk.slice(live.length - at); // already shown (overlap)
    live.length = Math.max(live.length, at) + chunk.length;
    live.pre.append(chunk);
    if (live.length > LIVE_CAP) {
      live.capped = true;
      live.pre.append("\n[… live view capped; the final result shows what codeflux stored …]");
    }
  }

  // A `tool-execution-finished` event: a card body whose result is read from the coordinator.
  finished(payload, event) {
    const requestId = typeof payload.request_id === "string" ? payload.request_id : "";
    const sequence = String(event.sequence);
    const entry = this.entry(requestId);
    entry.finishedSeq = sequence;
    const slot = el("div", { class: "tool-result-slot", testid: "tool-result-slot" },
      el("p", { class: "loading", text: "Reading the committed result…" }));
    if (entry.live) {
      const exit = payload.exit_code === null || payload.exit_code === undefined ? "no exit code reported"
        : `exit code ${payload.exit_code}`;
      entry.pointer = el("p", { class: "live-replaced", testid: "tool-live-replaced" }, "Final (committed): ",
        badge(payload.state || "unknown"), `, ${exit} — the live output was replaced by the committed result (#${sequence}).`);
      entry.live.replaceWith(entry.pointer);
      entry.live = null;
    }
    const taskId = this.app.taskId;
    const load = async () => {
      this.failed.delete(sequence);
      try {
        const view = await this.app.rpc.unary("TaskService/GetToolActivity", { taskId, requestId });
        entry.view = view;
        clear(slot).append(resultView(view));
        if (entry.pointer) {
          clear(entry.pointer).append(`Final (committed): `, badge(view.state || "unknown"), `, ${exitText(view)} — `,
            `the live output was replaced by the committed result in #${sequence}.`);
        }
      } catch (error) {
        this.failed.set(sequence, load);
        clear(slot).append(el("p", { class: "notice", testid: "tool-result-error" },
          `Could not read the committed result (${error.safeMessage || "no answer"}); it is retried when the stream is live. `,
          el("button", { type: "button", onclick: () => this.enqueue(load), text: "Try again" })));
      }
    };
    this.unread.set(slot, load);
    return slot;
  }

  // After a reconnect: read again the results that could not be read.
  retryFailed() {
    for (const load of [...this.failed.values()]) this.enqueue(load);
    this.loadShown();
  }
}
