// The review's diff viewer: one section per changed file (path, what happened to it, lines added and removed in
// words, collapse/expand), old and new line numbers, additions and removals by the hunk's own counts (a removed
// "--x" or an added "++x" line is a removal/addition, never a file header), syntax highlighting, and unified or
// side-by-side layout (the choice is remembered for the tab). The attempt's line notes (obligations, uncovered
// arcs, surviving mutants, findings) are drawn under the line of the final tree they belong to in both layouts;
// notes on lines the diff does not show are listed after it.
//
// Parsing: git's output is split into files at its "diff --git" lines (a hunk's lines start with " ", "+", "-" or
// "\", so such a line is always a file boundary); each file's hunks are parsed by jsdiff's parsePatch (vendored,
// vendor/jsdiff/parse.js), which counts each hunk's lines. jsdiff alone would fold a file without "---"/"+++"
// lines (binary, mode-only) into the next file, hence the split. A file jsdiff refuses (the 1 MiB cut can end a
// hunk early) is shown as plain text, saying so.
//
// Highlighting: highlight.js (vendored, vendor/highlightjs/) highlights each hunk's old side (context and removed
// lines) and new side (context and added lines) as one text, so a string or comment opened inside a hunk colours
// its following lines; one opened above the hunk's first line is not known to it. Its markup is parsed in an inert
// <template> and rebuilt here from span class names and text nodes only: no markup of the library, and never any
// repository text, reaches the page as HTML.

import { clear, el, textList } from "./dom.js";
import { escapeForDisplay } from "./format.js";
import { parsePatch } from "./vendor/jsdiff/parse.js";
import hljs from "./vendor/highlightjs/core.js";
import bash from "./vendor/highlightjs/languages/bash.min.js";
import css from "./vendor/highlightjs/languages/css.min.js";
import ini from "./vendor/highlightjs/languages/ini.min.js";
import javascript from "./vendor/highlightjs/languages/javascript.min.js";
import json from "./vendor/highlightjs/languages/json.min.js";
import markdown from "./vendor/highlightjs/languages/markdown.min.js";
import python from "./vendor/highlightjs/languages/python.min.js";
import xml from "./vendor/highlightjs/languages/xml.min.js";
import yaml from "./vendor/highlightjs/languages/yaml.min.js";

for (const [name, grammar] of Object.entries({ bash, css, ini, javascript, json, markdown, python, xml, yaml })) {
  hljs.registerLanguage(name, grammar);
}

const MODE_KEY = "codeflux.diff.mode";
const MODES = { unified: "Unified", split: "Side by side" };
const LARGE_FILE_LINES = 1500; // a file's diff longer than this starts collapsed
const OPEN_LINES_BUDGET = 3000; // files start open in order while their changed lines fit in this; later ones collapsed
const MAX_HIGHLIGHT_CHARS = 200000; // a hunk side longer than this is shown without highlighting

const LANGUAGE_BY_EXTENSION = {
  py: "python", pyi: "python", js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript",
  json: "json", toml: "ini", ini: "ini", cfg: "ini", yaml: "yaml", yml: "yaml", md: "markdown",
  markdown: "markdown", sh: "bash", bash: "bash", css: "css", html: "xml", htm: "xml", xml: "xml", svg: "xml",
};

// The highlight.js language for a path, or null (shown as plain text).
export function languageOf(path) {
  const name = (path || "").split("/").pop();
  if (name === ".bashrc" || name === ".profile") return "bash";
  const dot = name.lastIndexOf(".");
  return dot > 0 ? LANGUAGE_BY_EXTENSION[name.slice(dot + 1).toLowerCase()] || null : null;
}

function storedMode() {
  try {
    const mode = window.sessionStorage.getItem(MODE_KEY);
    return mode in MODES ? mode : "unified";
  } catch {
    return "unified";
  }
}

function storeMode(mode) {
  try { window.sessionStorage.setItem(MODE_KEY, mode); } catch { /* storage refused: the choice lasts this view */ }
}

// git's C-style quoted path ("a/\303\251.txt") decoded to text; an unquoted path unchanged.
function unquote(name) {
  if (!(name.length >= 2 && name.startsWith('"') && name.endsWith('"'))) return name;
  const bytes = [];
  const body = name.slice(1, -1);
  const simple = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, "\\": 92, '"': 34 };
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i];
    if (c !== "\\") { bytes.push(...new TextEncoder().encode(c)); continue; }
    const next = body[i + 1];
    if (/[0-7]/.test(next || "")) { bytes.push(parseInt(body.slice(i + 1, i + 4), 8)); i += 3; }
    else { bytes.push(simple[next] ?? next.charCodeAt(0)); i += 1; }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

function stripSide(name, prefix) {
  const path = unquote((name || "").trim());
  if (!path || path === "/dev/null") return null;
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

// "diff --git a/p b/p": the path when both halves name the same file (binary and mode-only files have no ---/+++).
function pathOfGitHeader(line) {
  const rest = line.slice("diff --git ".length);
  if (rest.startsWith('"')) {
    const end = rest.indexOf('" ', 1);
    return end > 0 ? stripSide(rest.slice(0, end + 1), "a/") : null;
  }
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest[half] === " ") {
    const [a, b] = [rest.slice(0, half), rest.slice(half + 1)];
    if (a.startsWith("a/") && b.startsWith("b/") && a.slice(2) === b.slice(2)) return a.slice(2);
  }
  return stripSide(rest.split(" b/")[0], "a/");
}

function fileStatus(headerLines, oldPath, newPath) {
  const has = (prefix) => headerLines.some((line) => line.startsWith(prefix));
  if (has("Binary files ") || has("GIT binary patch")) {
    return oldPath === null ? "added, binary" : newPath === null ? "deleted, binary" : "modified, binary";
  }
  if (has("new file mode") || (oldPath === null && newPath !== null)) return "added";
  if (has("deleted file mode") || (newPath === null && oldPath !== null)) return "deleted";
  if (has("rename from")) return "renamed";
  if (has("old mode")) return "mode changed";
  return "modified";
}

// The files of a git unified diff: [{ path, oldPath, newPath, status, hunks, additions, deletions, error, raw }].
export function parseDiff(text) {
  const lines = (text || "").split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const chunks = [];
  for (const line of lines) {
    if (line.startsWith("diff --git ") || !chunks.length) chunks.push([]);
    chunks[chunks.length - 1].push(line);
  }
  return chunks.map((chunk) => {
    const header = chunk[0].startsWith("diff --git ") ? pathOfGitHeader(chunk[0]) : null;
    const firstHunk = chunk.findIndex((line) => line.startsWith("@@"));
    const headerLines = firstHunk < 0 ? chunk : chunk.slice(0, firstHunk);
    let parsed = null;
    let error = "";
    try {
      const found = parsePatch(`${chunk.join("\n")}\n`).filter((index) => index.hunks.length || index.oldFileName
        || index.newFileName);
      parsed = found[0] || { hunks: [] };
      for (const extra of found.slice(1)) parsed.hunks.push(...extra.hunks);
    } catch (caught) {
      error = String(caught && caught.message ? caught.message : caught);
    }
    const oldPath = parsed && parsed.oldFileName !== undefined ? stripSide(parsed.oldFileName, "a/")
      : chunk.some((l) => l.startsWith("new file mode") || l.startsWith("Binary files /dev/null")) ? null : header;
    const newPath = parsed && parsed.newFileName !== undefined ? stripSide(parsed.newFileName, "b/")
      : chunk.some((l) => l.startsWith("deleted file mode") || / and \/dev\/null differ$/.test(l)) ? null : header;
    const hunks = parsed ? parsed.hunks : [];
    let additions = 0;
    let deletions = 0;
    for (const hunk of hunks) {
      for (const line of hunk.lines) {
        if (line[0] === "+") additions += 1;
        else if (line[0] === "-") deletions += 1;
      }
    }
    return { path: newPath ?? oldPath ?? header ?? "(unnamed)", oldPath, newPath,
      status: error ? "could not be read" : fileStatus(headerLines, oldPath, newPath),
      hunks, additions, deletions, error, raw: chunk };
  });
}

// highlight.js markup → per line, a list of [text, [class names outermost first]]. The markup is parsed in an
// inert <template> (no script runs, nothing loads) and only text and span class names are taken from it.
function markupLines(markup) {
  const template = document.createElement("template");
  template.innerHTML = markup; // highlight.js's own escaped output for this text, never inserted in the page
  const lines = [[]];
  const walk = (node, classes) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        child.data.split("\n").forEach((part, index) => {
          if (index > 0) lines.push([]);
          if (part) lines[lines.length - 1].push([part, classes]);
        });
      } else if (child.nodeType === Node.ELEMENT_NODE) {
        const own = child.tagName === "SPAN" ? (child.getAttribute("class") || "").split(/\s+/)
          .filter((name) => /^[A-Za-z0-9_-]+$/.test(name)) : [];
        walk(child, own.length ? [...classes, own.join(" ")] : classes);
      }
    }
  };
  walk(template.content, []);
  return lines;
}

function plainLines(texts) {
  return texts.map((text) => (text ? [[text, []]] : []));
}

// The tokens of each line of one side of a hunk.
function highlightSide(texts, language) {
  const joined = texts.join("\n");
  if (!language || joined.length > MAX_HIGHLIGHT_CHARS) return plainLines(texts);
  try {
    const lines = markupLines(hljs.highlight(joined, { language, ignoreIllegals: true }).value);
    return lines.length === texts.length ? lines : plainLines(texts);
  } catch {
    return plainLines(texts);
  }
}

// Characters that would hide or reorder what a line says (controls but the tab, bidi overrides and other format
// characters, private use, unassigned, separators but the ASCII space): drawn as a marked \uXXXX, never raw.
const HIDDEN_IN_CODE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\p{Zs}]/u;

function codeText(text) {
  if (!HIDDEN_IN_CODE.test(text.replace(/[\t ]/g, ""))) return [document.createTextNode(text)];
  const nodes = [];
  let plain = "";
  for (const character of text) {
    if (character === "\t" || character === " " || !HIDDEN_IN_CODE.test(character)) { plain += character; continue; }
    if (plain) nodes.push(document.createTextNode(plain));
    plain = "";
    const code = character.codePointAt(0).toString(16).padStart(4, "0");
    nodes.push(el("span", { class: "diff-hidden-char", testid: "diff-hidden-char",
      title: `hidden character U+${code.toUpperCase()}`, text: `\\u${code}` }));
  }
  if (plain) nodes.push(document.createTextNode(plain));
  return nodes;
}

function codeCell(tokens, testid) {
  const code = el("code", { class: "diff-code-text" });
  for (const [text, classes] of tokens || []) {
    let node = codeText(text);
    for (const name of [...classes].reverse()) node = [el("span", { class: name }, node)];
    code.append(...node);
  }
  return el("td", { class: "diff-code", testid }, code);
}

// One hunk's lines with their numbers and tokens: { kind: add|del|context|meta, old, new, text, tokens }.
function hunkRows(hunk, language) {
  const rows = [];
  let oldLine = hunk.oldStart;
  let newLine = hunk.newStart;
  for (const line of hunk.lines) {
    const sign = line[0];
    const text = line.slice(1);
    if (sign === "+") { rows.push({ kind: "add", old: null, new: newLine, text }); newLine += 1; }
    else if (sign === "-") { rows.push({ kind: "del", old: oldLine, new: null, text }); oldLine += 1; }
    else if (sign === "\\") rows.push({ kind: "meta", old: null, new: null, text: line });
    else { rows.push({ kind: "context", old: oldLine, new: newLine, text }); oldLine += 1; newLine += 1; }
  }
  const oldSide = rows.filter((row) => row.kind === "del" || row.kind === "context");
  const newSide = rows.filter((row) => row.kind === "add" || row.kind === "context");
  const oldTokens = highlightSide(oldSide.map((row) => row.text), language);
  const newTokens = highlightSide(newSide.map((row) => row.text), language);
  oldSide.forEach((row, index) => { row.oldTokens = oldTokens[index]; });
  newSide.forEach((row, index) => { row.newTokens = newTokens[index]; });
  return rows;
}

const SIGN = { add: "+", del: "-", context: " " };
const WORD = { add: "added", del: "removed", context: "unchanged" };

// A dataset without the keys whose value is undefined (el() would store the word "undefined").
function defined(values) {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}

function numberCell(value, side) {
  return el("td", { class: `diff-num diff-num-${side}`, text: value === null || value === undefined ? "" : String(value) });
}

function hunkHeader(hunk, columns) {
  const counts = `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
  return el("tr", { class: "diff-line diff-hunk" }, el("td", { class: "diff-hunk-text", colspan: String(columns),
    text: counts }));
}

function metaRow(row, columns) {
  return el("tr", { class: "diff-line diff-meta" }, el("td", { class: "diff-meta-text", colspan: String(columns),
    text: row.text }));
}

function unifiedRow(row) {
  return el("tr", { class: `diff-line diff-${row.kind}`, title: WORD[row.kind],
    dataset: defined({ line: row.new === null ? undefined : String(row.new),
      oldLine: row.old === null ? undefined : String(row.old) }) },
  numberCell(row.old, "old"), numberCell(row.new, "new"),
  el("td", { class: "diff-sign", "aria-label": WORD[row.kind], text: SIGN[row.kind] }),
  codeCell(row.kind === "del" ? row.oldTokens : row.newTokens));
}

// Side by side: a run of removals beside the run of additions that follows it, context on both sides.
function splitRows(rows) {
  const pairs = [];
  for (let i = 0; i < rows.length;) {
    const row = rows[i];
    if (row.kind === "context" || row.kind === "meta") { pairs.push({ left: row, right: row, meta: row.kind === "meta" }); i += 1; continue; }
    const removed = [];
    const added = [];
    while (i < rows.length && rows[i].kind === "del") { removed.push(rows[i]); i += 1; }
    while (i < rows.length && rows[i].kind === "add") { added.push(rows[i]); i += 1; }
    for (let k = 0; k < Math.max(removed.length, added.length); k += 1) {
      pairs.push({ left: removed[k] || null, right: added[k] || null });
    }
  }
  return pairs;
}

function splitRow(pair) {
  const { left, right } = pair;
  const kind = left && right && left === right ? "context" : left && right ? "change" : left ? "del" : "add";
  const leftCells = left ? [numberCell(left.old, "old"),
    el("td", { class: `diff-sign diff-side-${left.kind}`, "aria-label": WORD[left.kind], text: SIGN[left.kind] }),
    codeCell(left.oldTokens, "diff-old-code")]
    : [numberCell(null, "old"), el("td", { class: "diff-sign diff-empty" }), el("td", { class: "diff-code diff-empty" })];
  const rightCells = right ? [numberCell(right.new, "new"),
    el("td", { class: `diff-sign diff-side-${right.kind}`, "aria-label": WORD[right.kind], text: SIGN[right.kind] }),
    codeCell(right.newTokens, "diff-new-code")]
    : [numberCell(null, "new"), el("td", { class: "diff-sign diff-empty" }), el("td", { class: "diff-code diff-empty" })];
  if (left) leftCells[2].classList.add(`diff-side-${left.kind}`);
  if (right) rightCells[2].classList.add(`diff-side-${right.kind}`);
  return el("tr", { class: `diff-line diff-split diff-${kind}`,
    dataset: defined({ line: right && right.new !== null ? String(right.new) : undefined,
      oldLine: left && left.old !== null ? String(left.old) : undefined }) }, leftCells, rightCells);
}

function noteRow(note, columns) {
  return el("tr", { class: `diff-note diff-note-${note.kind || "other"}`, testid: "diff-note",
    dataset: { kind: note.kind || "", state: note.state || "", path: note.path || "", line: String(note.line || 0) } },
  el("td", { colspan: String(columns), class: "diff-note-text",
    text: `^ line ${note.line}: ${escapeForDisplay(note.text || "")}` }));
}

// The table of one file in `mode`; each note under its line of the final tree (`shown` collects the keys drawn).
function fileTable(file, mode, byLine, shown) {
  const columns = mode === "split" ? 6 : 4;
  const table = el("table", { class: `diff-table diff-table-${mode}`, testid: "diff-table",
    "aria-label": `${mode === "split" ? "Side-by-side" : "Unified"} diff of ${escapeForDisplay(file.path)}` });
  table.append(el("colgroup", {}, mode === "split"
    ? [el("col", { class: "diff-col-num" }), el("col", { class: "diff-col-sign" }), el("col", { class: "diff-col-code" }),
      el("col", { class: "diff-col-num" }), el("col", { class: "diff-col-sign" }), el("col", { class: "diff-col-code" })]
    : [el("col", { class: "diff-col-num" }), el("col", { class: "diff-col-num" }), el("col", { class: "diff-col-sign" }),
      el("col", { class: "diff-col-code" })]));
  const body = el("tbody", {});
  const language = languageOf(file.newPath || file.oldPath);
  const notesAfter = (line) => {
    const key = `${file.newPath}\u0000${line}`;
    if (file.newPath === null || line === null || line === undefined || !byLine.has(key) || shown.has(key)) return;
    shown.add(key);
    for (const note of byLine.get(key)) body.append(noteRow(note, columns));
  };
  for (const hunk of file.hunks) {
    body.append(hunkHeader(hunk, columns));
    const rows = hunk.rows || (hunk.rows = hunkRows(hunk, language));
    if (mode === "split") {
      for (const pair of splitRows(rows)) {
        body.append(pair.meta ? metaRow(pair.left, columns) : splitRow(pair));
        if (pair.right && !pair.meta) notesAfter(pair.right.new);
      }
    } else {
      for (const row of rows) {
        body.append(row.kind === "meta" ? metaRow(row, columns) : unifiedRow(row));
        if (row.kind !== "del") notesAfter(row.new);
      }
    }
  }
  table.append(body);
  return table;
}

function fileBody(file, mode, byLine, shown) {
  if (file.error) {
    return el("div", {},
      el("p", { class: "notice", text: `This file's diff could not be read as a unified diff (${file.error}); shown as text.` }),
      el("pre", { class: "diff-raw", testid: "diff-raw", text: file.raw.join("\n") }));
  }
  if (!file.hunks.length) {
    return el("p", { class: "empty", text: file.status.includes("binary") ? "Binary file: no lines to show."
      : `No line changed (${file.status}).` });
  }
  return fileTable(file, mode, byLine, shown);
}

function countsText(file) {
  const lines = (n) => (n === 1 ? "1 line" : `${n} lines`);
  return `+${file.additions} −${file.deletions} (${lines(file.additions)} added, ${lines(file.deletions)} removed)`;
}

// The review's line notes by "path NUL line" of the final tree.
function notesByLine(notes) {
  const byLine = new Map();
  for (const note of notes) {
    const key = `${note.path}\u0000${note.line}`;
    byLine.set(key, [...(byLine.get(key) || []), note]);
  }
  return byLine;
}

// The diff viewer for `text` (a git unified diff); `truncated`: the server cut it at 1 MiB; `notes`: line notes.
export function diffView(text, truncated, notes) {
  const allNotes = notes || [];
  if (!text) return el("div", {}, el("p", { class: "empty", testid: "diff-empty", text: "The diff is empty." }));
  const byLine = notesByLine(allNotes);
  const files = parseDiff(text);
  const state = { mode: storedMode(), open: initiallyOpen(files) };
  const viewer = el("div", { class: "diff", testid: "diff-viewer", "aria-label": "Diff by file" });
  const elsewhereSlot = el("div", {});
  const modeButtons = Object.entries(MODES).map(([mode, label]) => el("button", { type: "button",
    testid: `diff-mode-${mode}`, class: "diff-mode", onclick: () => { state.mode = mode; storeMode(mode); draw(); },
    text: label }));
  const setAll = (open) => { state.open = state.open.map(() => open); draw(); };
  const toolbar = el("div", { class: "diff-toolbar actions", role: "group", "aria-label": "Diff layout" },
    el("span", { testid: "diff-summary", text: summaryText(files) }), ...modeButtons,
    el("button", { type: "button", testid: "diff-expand-all", onclick: () => setAll(true), text: "Expand all" }),
    el("button", { type: "button", testid: "diff-collapse-all", onclick: () => setAll(false), text: "Collapse all" }));

  function draw() {
    const shown = new Set();
    for (const button of modeButtons) {
      const active = button.dataset.testid === `diff-mode-${state.mode}`;
      button.setAttribute("aria-pressed", active ? "true" : "false");
      button.classList.toggle("diff-mode-active", active);
    }
    viewer.dataset.mode = state.mode;
    clear(viewer).append(...files.map((file, index) => {
      const open = state.open[index];
      const toggle = el("button", { type: "button", class: "diff-file-toggle", testid: "diff-file-toggle",
        "aria-expanded": open ? "true" : "false", onclick: () => { state.open[index] = !state.open[index]; draw(); } },
      el("span", { "aria-hidden": "true", text: open ? "▾ " : "▸ " }),
      el("span", { class: "diff-file-path", testid: "diff-file-path", text: escapeForDisplay(file.path) }),
      file.oldPath && file.newPath && file.oldPath !== file.newPath
        ? el("span", { class: "detail", text: ` (from ${escapeForDisplay(file.oldPath)})` }) : null);
      return el("section", { class: "diff-file", testid: "diff-file",
        dataset: { path: file.path, status: file.status, open: open ? "yes" : "no" } },
      el("header", { class: "diff-file-head" }, toggle,
        el("span", { class: "diff-file-status", testid: "diff-file-status", text: file.status }),
        el("span", { class: "diff-file-counts", testid: "diff-file-counts", text: countsText(file) }),
        open ? null : el("span", { class: "detail", testid: "diff-file-collapsed",
          text: file.additions + file.deletions > LARGE_FILE_LINES ? " collapsed (a large file): expand to show"
            : " collapsed" })),
      open ? fileBody(file, state.mode, byLine, shown) : null);
    }));
    const elsewhere = allNotes.filter((note) => !shown.has(`${note.path}\u0000${note.line}`));
    clear(elsewhereSlot);
    if (elsewhere.length) elsewhereSlot.append(el("div", { testid: "diff-notes-elsewhere" },
      el("p", { class: "notice", text: `${elsewhere.length} note(s) on lines the diff does not show here`
        + " (a collapsed file, or an unchanged line):" }),
      textList(elsewhere.map((note) => `${escapeForDisplay(note.path)}:${note.line}: ${escapeForDisplay(note.text)}`),
        "", "diff-notes-elsewhere-list")));
  }

  draw();
  return el("div", { class: "diff-view", testid: "diff-view" }, toolbar, viewer,
    truncated ? el("p", { class: "notice", text: "The diff was cut at 1 MiB; the full change is larger." }) : null,
    elsewhereSlot);
}

// Which files start open: in order, while their changed lines fit in OPEN_LINES_BUDGET, none longer than
// LARGE_FILE_LINES (a long diff stays quick to draw; each file opens on a click, and "Expand all" opens every one).
function initiallyOpen(files) {
  let left = OPEN_LINES_BUDGET;
  return files.map((file) => {
    const size = file.additions + file.deletions;
    const open = size <= LARGE_FILE_LINES && size <= left;
    if (open) left -= size;
    return open;
  });
}

function summaryText(files) {
  const added = files.reduce((sum, f) => sum + f.additions, 0);
  const removed = files.reduce((sum, f) => sum + f.deletions, 0);
  const closed = initiallyOpen(files).filter((open) => !open).length;
  return `${files.length} file${files.length === 1 ? "" : "s"} changed, +${added} −${removed}`
    + (closed ? ` (${closed} long or late file${closed === 1 ? "" : "s"} start collapsed)` : "");
}
