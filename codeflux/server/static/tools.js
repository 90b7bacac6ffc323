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
// * Recorded, then drawn (timeline.js): every event's effect on a request is recorded here (its live output per
//   stream, how it finished, the results its row shows); a card drawn later — "Show earlier events" — gets them
//   from these records, and a card already drawn is updated as events come.

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
  // drawResult(payload, event): the element a `tool-execution-finished` event adds to its request's row.
  constructor(app, drawResult) {
    this.app = app;
    this.drawResult = drawResult;
    this.requests = new Map(); // request id → its record (entry())
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

  // A request's record (timeline.js records every event; cards are drawn only when shown). Recorded: whether a card
  // of its own shows its activity (`owned`: its tool call row or approval card, else its execution's card) or, with
  // none, its first output entry does (`fallback`); its live output per stream; how it finished; the results its row
  // shows. Drawn: the element showing its activity (`host`; `ownHost` when that is its own row), the live output
  // section there or the pointer that replaced it.
  entry(requestId) {
    let found = this.requests.get(requestId);
    if (!found) {
      found = { owned: false, fallback: false, streams: new Map(), finished: null, results: [], view: null,
        host: null, ownHost: null, live: null, pres: new Map(), pointer: null };
      this.requests.set(requestId, found);
    }
    return found;
  }

  // Whether the request has a card of its own that shows its activity (drawn or not).
  hostOf(requestId) {
    const found = this.requests.get(requestId);
    return Boolean(found && found.owned);
  }

  // Recorded: the request's own card (not drawn yet) shows its activity.
  own(requestId) {
    if (requestId) this.entry(requestId).owned = true;
  }

  // Drawn: `host` (an element in the request's own card) shows its live output and results, recorded and to come.
  attach(requestId, host) {
    if (!requestId) return;
    const entry = this.entry(requestId);
    entry.owned = true;
    this.show(entry, host);
    entry.ownHost = host;
    for (const result of entry.results) {
      if (result.drawn) continue;
      result.drawn = true;
      host.append(this.drawResult(result.payload, result.event));
    }
  }

  // `host` shows the request's live output (or the pointer that replaced it) from now on.
  show(entry, host) {
    entry.host = host;
    if (entry.live) host.append(entry.live);
    else if (entry.pointer) host.append(entry.pointer);
    else if (entry.streams.size && entry.finished) host.append(entry.pointer = this.pointer(entry));
    else if (entry.streams.size) host.append(entry.live = this.liveSection(entry));
  }

  liveSection(entry) {
    const section = el("section", { class: "live-output", testid: "tool-live-output" },
      el("h4", {}, badge("running"), " Live output (streamed, not final)"),
      el("p", { class: "notice", text: "Streamed while the tool runs; the committed result replaces it when it finishes." }));
    entry.pres = new Map();
    for (const [stream, live] of entry.streams) this.liveStream(entry, section, stream, live);
    return section;
  }

  liveStream(entry, section, stream, live) {
    const pre = el("pre", { class: "output live", testid: `tool-live-${stream}`, text: live.parts.join("") });
    section.append(el("h5", { text: `${stream} (live)` }), pre);
    entry.pres.set(stream, pre);
  }

  // A `tool-output` event recorded: its text goes to the request's live output; returns what its own small entry
  // says (outputCard).
  recordOutput(payload) {
    const requestId = typeof payload.request_id === "string" ? payload.request_id : "";
    const stream = payload.stream === "stderr" ? "stderr" : "stdout";
    const text = typeof payload.text === "string" ? payload.text : "";
    const entry = this.entry(requestId);
    let where = "shown in the request's tool card";
    let fallback = false;
    if (entry.finished) {
      where = `arrived after the final result (#${entry.finished.sequence}); not shown as live output`;
    } else {
      if (!entry.owned && !entry.fallback) {
        entry.fallback = fallback = true; // no card of this request: this entry shows it
        where = "shown below";
      }
      this.appendLive(entry, stream, text, payload.offset);
    }
    return { requestId, stream, length: text.length, where, fallback };
  }

  // A `tool-output` event's own small entry: where its text went (and, for a request with no card, the text).
  outputCard(output) {
    const content = el("div", {}, el("p", { class: "chunk",
      text: `${output.length} characters of ${output.stream} (live, not final) — ${output.where}.` }));
    const entry = this.entry(output.requestId);
    if (output.fallback && !entry.host) this.show(entry, content.appendChild(el("div", {})));
    return { title: `Live output: ${output.requestId || "unknown request"}`, testid: "tool-output-chunk", content };
  }

  appendLive(entry, stream, text, offset) {
    let live = entry.streams.get(stream);
    if (!live) {
      live = { length: 0, capped: false, parts: [] };
      entry.streams.set(stream, live);
    }
    if (live.capped) return;
    const at = Number.isFinite(Number(offset)) && offset !== undefined && offset !== null ? Number(offset) : live.length;
    const pieces = [];
    let chunk = text;
    if (at > live.length) pieces.push(`\n[… ${at - live.length} characters not received …]\n`);
    else if (at < live.length) chunk = chunk.slice(live.length - at); // already shown (overlap)
    live.length = Math.max(live.length, at) + chunk.length;
    pieces.push(chunk);
    if (live.length > LIVE_CAP) {
      live.capped = true;
      pieces.push("\n[… live view capped; the final result shows what codeflux stored …]");
    }
    live.parts.push(...pieces);
    if (!entry.host) return; // drawn when its card is
    if (!entry.live) entry.host.append(entry.live = this.liveSection(entry));
    else if (!entry.pres.has(stream)) this.liveStream(entry, entry.live, stream, live);
    else entry.pres.get(stream).append(...pieces);
  }

  // What replaced the live output once the request finished (its state from the event, or the read result's).
  pointer(entry) {
    const { payload, sequence } = entry.finished;
    const view = entry.view;
    if (view) {
      return el("p", { class: "live-replaced", testid: "tool-live-replaced" }, "Final (committed): ",
        badge(view.state || "unknown"), `, ${exitText(view)} — the live output was replaced by the committed result in #${sequence}.`);
    }
    const exit = payload.exit_code === null || payload.exit_code === undefined ? "no exit code reported"
      : `exit code ${payload.exit_code}`;
    return el("p", { class: "live-replaced", testid: "tool-live-replaced" }, "Final (committed): ",
      badge(payload.state || "unknown"), `, ${exit} — the live output was replaced by the committed result (#${sequence}).`);
  }

  // A `tool-execution-finished` event recorded: live output ends (the pointer replaces it); with a row of its own
  // (`hosted`) its result is drawn there, now or when the row is.
  recordFinished(payload, event, hosted) {
    const requestId = typeof payload.request_id === "string" ? payload.request_id : "";
    const entry = this.entry(requestId);
    entry.finished = { payload, sequence: String(event.sequence) };
    if (entry.live) {
      entry.pointer = this.pointer(entry);
      entry.live.replaceWith(entry.pointer);
      entry.live = null;
    }
    if (!hosted) return;
    const result = { payload, event, drawn: false };
    entry.results.push(result);
    if (entry.ownHost) {
      result.drawn = true;
      entry.ownHost.append(this.drawResult(payload, event));
    }
  }

  // The slot of a finished request's committed result, read once it is shown (loadShown).
  slot(payload, event) {
    const requestId = typeof payload.request_id === "string" ? payload.request_id : "";
    const sequence = String(event.sequence);
    const entry = this.entry(requestId);
    const slot = el("div", { class: "tool-result-slot", testid: "tool-result-slot" },
      el("p", { class: "loading", text: "Reading the committed result…" }));
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
