// Small DOM helpers: every node is built with createElement and textContent, never innerHTML.

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key === "testid") node.dataset.testid = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "checked" || key === "disabled" || key === "value") node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// A heading + body section with a test id.
export function section(title, testid, ...children) {
  return el("section", { class: "panel", testid }, el("h2", { text: title }), ...children);
}

// A definition list from [label, value] pairs; empty values show "none" (never a blank).
export function facts(pairs, testid) {
  const list = el("dl", { class: "facts", testid });
  for (const [label, value] of pairs) {
    list.append(el("dt", { text: label }), el("dd", { text: value === "" || value === undefined ? "none" : value }));
  }
  return list;
}

// A list of text items; an empty list says so instead of rendering nothing.
export function textList(items, emptyText, testid) {
  if (!items || items.length === 0) return el("p", { class: "empty", testid, text: emptyText });
  return el("ul", { class: "plain", testid }, items.map((item) => el("li", { text: item })));
}

// Status shown by text and an icon, never by colour alone.
const ICONS = {
  passed: "✓", ok: "✓", satisfied: "✓", succeeded: "✓", completed: "✓", "allowed-once": "✓",
  "allowed-for-task": "✓", automatic: "✓", "refused-denied-capability": "⛔", cancelled: "■", "outcome-unknown": "?", failed: "✗", skipped: "↷", blocked: "⛔", "not-implemented": "∅",
  warning: "!", unknown: "?", pending: "…", running: "▶", live: "●", denied: "⛔", revoked: "■",
};

export function badge(status, testid) {
  const word = status || "not recorded";
  const icon = ICONS[word] || "•";
  return el("span", { class: `badge badge-${word.replace(/[^a-z-]/g, "")}`, testid, title: word },
    el("span", { class: "badge-icon", "aria-hidden": "true", text: icon }), ` ${word}`);
}

// A button that changes something. `app.gate` enables it only while the task's stream is live.
export function mutatingButton(label, onclick, testid, extra = {}) {
  return el("button", { type: "button", class: "mutating", dataset: { mutating: "1" }, testid, onclick, ...extra },
    label);
}

let keyCounter = 0;
// A fresh idempotency key for one user action (1..128 of [A-Za-z0-9-_.:]).
export function idempotencyKey(prefix) {
  keyCounter += 1;
  const random = new Uint8Array(8);
  crypto.getRandomValues(random);
  const hex = Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
  return `web-${prefix}-${Date.now()}-${keyCounter}-${hex}`;
}
