// The session stream client (ui_devx.md §1.3): idle → connecting → replaying → live, with reconnecting,
// gap, stopped and failed. Sequences are int64 JSON strings; they are compared as BigInt.
//
// Rules: subscribe with after_sequence = the last applied sequence; exactly one replay boundary, whose
// through_sequence must equal the last applied sequence; a sequence ≤ last is a duplicate and is skipped;
// any other sequence than last+1 is a gap → reconnect from last. Retries: 250 ms ×2 up to 4 s, 5 attempts,
// then `failed`. Mutating controls are allowed only while `live`. The stream asks for batches (`batched`): a
// `batch` frame carries a run of contiguous events column by column (a replay of 10,000 events is a few messages),
// turned into events (batchEvents), checked event by event with the same rules and handed over at once (onEvents),
// so the timeline renders it at once.

import { Code } from "./rpc.js";

export const State = Object.freeze({
  IDLE: "idle", CONNECTING: "connecting", REPLAYING: "replaying", LIVE: "live",
  RECONNECTING: "reconnecting", GAP: "gap", STOPPED: "stopped", FAILED: "failed",
});

// The events of a batch frame (SessionEventBatch: one entry per event in every column, sequences from
// firstSequence), as the event objects a single `event` frame carries; null when the columns differ in length.
export function batchEvents(batch) {
  const kinds = batch.kinds || [];
  const created = batch.createdAtUs || [];
  const payloads = batch.payloadsJson || [];
  const eventKinds = batch.eventKinds || [];
  if (created.length !== kinds.length || payloads.length !== kinds.length || eventKinds.length !== kinds.length) {
    return null;
  }
  const first = BigInt(batch.firstSequence || "0");
  const sessionId = batch.sessionId || "";
  return kinds.map((kind, i) => ({
    sessionId, sequence: (first + BigInt(i)).toString(), kind, createdAtUs: created[i], payloadJson: payloads[i],
    eventKind: eventKinds[i],
  }));
}

export const DEFAULT_RETRY = Object.freeze({ attempts: 5, initialMs: 250, factor: 2, capMs: 4000 });

const TERMINAL = new Map([
  [Code.UNAUTHENTICATED, "authentication"],
  [Code.PERMISSION_DENIED, "authentication"],
  [Code.FAILED_PRECONDITION, "incompatible"],
  [Code.UNIMPLEMENTED, "incompatible"],
  [Code.INVALID_ARGUMENT, "protocol"],
  [Code.NOT_FOUND, "protocol"],
]);

export class SessionStream {
  // handlers: onEvent(event) for each new committed event in order, or onEvents(events, info) for each run of
  // them (a batch frame's new events; a single event as a run of one); onState(state, info) on changes.
  constructor(rpc, sessionId, { onEvent, onEvents, onState, retry = DEFAULT_RETRY } = {}) {
    this.rpc = rpc;
    this.sessionId = sessionId;
    this.onEvent = onEvent || (() => {});
    this.onEvents = onEvents || ((events, info) => { for (const event of events) this.onEvent(event, info); });
    this.onStateChange = onState || (() => {});
    this.retry = retry;
    this.state = State.IDLE;
    this.last = 0n;
    this.attempts = 0;
    this.current = null;
    this.timer = null;
    this.generation = 0;
    this.failure = "";
    this.duplicatesSkipped = 0;
    this.wasLive = false; // reached live at least once (a later replay is a reconnect's)
  }

  get live() {
    return this.state === State.LIVE;
  }

  get lastSequence() {
    return this.last.toString();
  }

  setState(state, info = {}) {
    this.state = state;
    this.onStateChange(state, { last: this.lastSequence, attempts: this.attempts, ...info });
  }

  start(afterSequence = "0") {
    this.last = BigInt(afterSequence || "0");
    this.attempts = 0;
    this.connect(State.CONNECTING);
  }

  stop() {
    this.generation += 1;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.current) this.current.cancel();
    this.current = null;
    this.setState(State.STOPPED);
  }

  connect(state) {
    const generation = ++this.generation;
    this.setState(state);
    const request = { sessionId: this.sessionId, afterSequence: this.lastSequence, batched: true };
    this.rpc.stream("SessionService/Subscribe", request,
      (frame) => { if (generation === this.generation) this.receive(frame); },
      (error) => { if (generation === this.generation) this.ended(error); },
    ).then((stream) => {
      if (generation !== this.generation) { stream.cancel(); return; }
      this.current = stream;
      if (this.state === State.CONNECTING || this.state === State.RECONNECTING || this.state === State.GAP) {
        this.setState(State.REPLAYING);
      }
    }).catch((error) => { if (generation === this.generation) this.ended(error); });
  }

  receive(frame) {
    if (frame.event) {
      this.receiveEvents([frame.event]);
    } else if (frame.batch) {
      const events = batchEvents(frame.batch);
      if (events === null) return this.protocolFailure("a batch whose columns differ in length");
      this.receiveEvents(events);
    } else if (frame.replayBoundary !== undefined) {
      const through = BigInt(frame.replayBoundary.throughSequence || "0");
      if (this.state !== State.REPLAYING) return this.protocolFailure("a second replay boundary");
      if (through !== this.last) return this.reconnectAfterGap();
      this.attempts = 0;
      this.wasLive = true;
      this.setState(State.LIVE);
    }
  }

  // Check each event in order; the new ones (up to a gap or a protocol failure, which end the stream) are handed
  // over together.
  receiveEvents(events) {
    const generation = this.generation;
    const fresh = [];
    for (const event of events) {
      this.receiveEvent(event, fresh);
      if (generation !== this.generation) break;
    }
    if (!fresh.length) return;
    if (this.state === State.LIVE) this.attempts = 0;
    this.onEvents(fresh, { replaying: this.state !== State.LIVE });
  }

  receiveEvent(event, fresh) {
    if (event.sessionId && event.sessionId !== this.sessionId) return this.protocolFailure("wrong session");
    const sequence = BigInt(event.sequence || "0");
    if (sequence === 0n) return this.protocolFailure("sequence 0");
    if (sequence <= this.last) {
      this.duplicatesSkipped += 1;
      return undefined;
    }
    if (sequence !== this.last + 1n) return this.reconnectAfterGap();
    this.last = sequence;
    fresh.push(event);
    return undefined;
  }

  reconnectAfterGap() {
    this.generation += 1;
    if (this.current) this.current.cancel();
    this.current = null;
    this.setState(State.GAP);
    this.schedule(0);
  }

  protocolFailure(why) {
    this.generation += 1;
    if (this.current) this.current.cancel();
    this.current = null;
    this.failure = "protocol";
    this.setState(State.FAILED, { kind: "protocol", why });
  }

  ended(error) {
    this.current = null;
    const code = error ? error.code : Code.UNAVAILABLE;
    if (code === Code.CANCELLED && this.state === State.STOPPED) return;
    const terminal = TERMINAL.get(code);
    if (terminal) {
      this.failure = terminal;
      this.setState(State.FAILED, { kind: terminal, why: error ? error.safeMessage : "" });
      return;
    }
    this.setState(State.RECONNECTING);
    this.schedule();
  }

  schedule(forceDelay) {
    if (this.timer) clearTimeout(this.timer);
    if (this.attempts >= this.retry.attempts) {
      this.failure = "disconnected";
      this.setState(State.FAILED, { kind: "disconnected" });
      return;
    }
    const delay = forceDelay ?? Math.min(this.retry.initialMs * this.retry.factor ** this.attempts, this.retry.capMs);
    this.attempts += 1;
    const from = this.state;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect(from === State.GAP ? State.GAP : State.RECONNECTING);
    }, delay);
  }

  // Try again after `failed` (the banner's retry button).
  retryNow() {
    this.attempts = 0;
    this.connect(State.RECONNECTING);
  }
}
