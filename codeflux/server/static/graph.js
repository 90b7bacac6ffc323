// The execution graph drawer: TaskService.GetTaskGraph laid out by dagre (vendor/dagre.esm.js, MIT, see
// docs/graph.md) and drawn here as SVG from dagre's coordinates — elements made with createElementNS, text with
// textContent, geometry as SVG attributes (no inline style: the CSP forbids it; the look is in app.css).
// Selecting a node (click, or Enter/Space on the focused node) shows its kind, sequence and summary. The
// disclaimer is always shown: the graph explains what happened; it is not evidence that it is right.

import dagre from "./vendor/dagre.esm.js";
import { clear, el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const MAX_LABEL = 34;
const CHAR_WIDTH = 7;
const NODE_HEIGHT = 40;
const PADDING = 16;
// Above this many nodes dagre ranks with "tight-tree" instead of its default "network-simplex": a little less
// compact, several times faster on long tasks (network-simplex grows much faster than linearly).
const COMPACT_RANKING_LIMIT = 300;

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = String(value);
    else if (key === "testid") node.setAttribute("data-testid", value);
    else if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function shortLabel(text) {
  const flat = String(text || "");
  return flat.length <= MAX_LABEL ? flat : `${flat.slice(0, MAX_LABEL - 1)}…`;
}

function kindClass(kind) {
  return `graph-node graph-kind-${String(kind || "unknown").replace(/[^a-z-]/g, "")}`;
}

// dagre's layout of the reply: node boxes and edge polylines, in graph coordinates.
export function layoutGraph(reply) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  const ranker = (reply.nodes || []).length > COMPACT_RANKING_LIMIT ? "tight-tree" : "network-simplex";
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, edgesep: 12, marginx: PADDING, marginy: PADDING, ranker });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of reply.nodes || []) {
    const label = shortLabel(node.label);
    const caption = `${node.kind} #${node.sequence}`;
    const width = Math.max(label.length, caption.length) * CHAR_WIDTH + 2 * PADDING;
    g.setNode(node.id, { width, height: NODE_HEIGHT, label, caption, node });
  }
  for (const edge of reply.edges || []) {
    if (!g.hasNode(edge.source) || !g.hasNode(edge.target)) continue;
    g.setEdge(edge.source, edge.target, { kind: edge.kind, width: edge.kind.length * 6, height: 12, labelpos: "c" },
      `${edge.source}→${edge.target}→${edge.kind}`);
  }
  dagre.layout(g);
  return g;
}

function details(node) {
  if (!node) return el("p", { class: "empty", testid: "graph-details", text: "Select a node to see what it was." });
  return el("dl", { class: "facts graph-details", testid: "graph-details", dataset: { nodeId: node.id } },
    el("dt", { text: "Kind" }), el("dd", { testid: "graph-detail-kind", text: node.kind }),
    el("dt", { text: "Sequence" }), el("dd", { testid: "graph-detail-sequence", text: `event #${node.sequence}` +
      ((node.sequences || []).length > 1 ? ` (and ${node.sequences.slice(1).map((s) => `#${s}`).join(", ")})` : "") }),
    el("dt", { text: "What" }), el("dd", { testid: "graph-detail-label", text: node.label }),
    el("dt", { text: "Summary" }), el("dd", { testid: "graph-detail-summary", text: node.summary || "nothing more recorded" }));
}

function drawing(g, onSelect) {
  const box = g.graph();
  const width = Math.ceil(box.width || 0) + 1;
  const height = Math.ceil(box.height || 0) + 1;
  const root = svg("svg", { class: "graph-svg", testid: "graph-svg", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "group", "aria-label": "Execution graph: nodes are steps, arrows what led to what" });
  root.append(svg("defs", {}, svg("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "graph-arrowhead" }))));
  const edges = svg("g", { class: "graph-edges" });
  for (const e of g.edges()) {
    const data = g.edge(e);
    const points = data.points || [];
    if (!points.length) continue;
    const d = points.map((p, i) => `${i ? "L" : "M"} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" ");
    edges.append(svg("g", { class: `graph-edge graph-edge-${data.kind}`, "data-source": e.v, "data-target": e.w, "data-kind": data.kind },
      svg("path", { d, "marker-end": "url(#graph-arrow)" }),
      typeof data.x === "number" ? svg("text", { x: data.x.toFixed(1), y: data.y.toFixed(1), class: "graph-edge-label", "text-anchor": "middle", text: data.kind }) : null));
  }
  root.append(edges);
  const nodes = svg("g", { class: "graph-nodes" });
  for (const id of g.nodes()) {
    const n = g.node(id);
    const x = n.x - n.width / 2;
    const y = n.y - n.height / 2;
    const item = svg("g", { class: kindClass(n.node.kind), transform: `translate(${x.toFixed(1)} ${y.toFixed(1)})`,
      tabindex: "0", role: "button", testid: "graph-node", "data-node-id": id, "data-kind": n.node.kind,
      "aria-label": `${n.node.kind} at event ${n.node.sequence}: ${n.node.label}` },
    svg("title", { text: `${n.node.label} — ${n.node.summary || ""}` }),
    svg("rect", { width: n.width.toFixed(1), height: n.height, rx: 5, ry: 5 }),
    svg("text", { x: PADDING, y: 16, class: "graph-node-label", text: n.label }),
    svg("text", { x: PADDING, y: 31, class: "graph-node-caption", text: n.caption }));
    const choose = () => onSelect(id, item);
    item.addEventListener("click", choose);
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); choose(); }
    });
    nodes.append(item);
  }
  root.append(nodes);
  return root;
}

// The drawer: disclaimer, counts, the drawing, the selected node's details and what the graph leaves out.
export function graphView(app, reply) {
  const started = performance.now();
  const byId = new Map((reply.nodes || []).map((n) => [n.id, n]));
  const detailSlot = el("div", { class: "graph-detail-slot" }, details(null));
  let selected = null;
  const select = (id, item) => {
    if (selected) selected.classList.remove("graph-selected");
    selected = item;
    item.classList.add("graph-selected");
    item.setAttribute("aria-pressed", "true");
    clear(detailSlot).append(details(byId.get(id)));
  };
  const nodes = reply.nodes || [];
  const picture = nodes.length
    ? el("div", { class: "graph-scroll", testid: "graph-scroll" }, drawing(layoutGraph(reply), select))
    : el("p", { class: "empty", testid: "graph-empty", text: "No step of this task has been recorded yet." });
  const notShown = (reply.notShown || []).map((item) => el("li", { text: `${item.count} × ${item.kind}: ${item.reason}` }));
  const view = el("aside", { class: "drawer graph-drawer", testid: "graph-drawer", "aria-label": "Execution graph" },
    el("div", { class: "drawer-head" }, el("h2", { text: "Execution graph" }),
      el("button", { type: "button", testid: "graph-close", onclick: () => app.closeDrawer(), text: "Close" })),
    el("p", { class: "notice graph-disclaimer", testid: "graph-disclaimer",
      text: `This graph is ${reply.disclaimer || "an explanation of what happened, not evidence that it is right"}.` }),
    el("p", { class: "note", testid: "graph-counts",
      text: `${nodes.length} node(s), ${(reply.edges || []).length} edge(s), through event #${reply.throughSequence || 0}. ` +
        "Arrows point from what came first; their words say how the two relate (caused, used, produced, sent back)." }),
    picture, detailSlot,
    notShown.length ? el("details", { class: "graph-not-shown", testid: "graph-not-shown" },
      el("summary", { text: "Events not shown in the graph" }), el("ul", { class: "plain" }, notShown)) : null);
  view.dataset.renderMs = String(Math.round(performance.now() - started));
  return view;
}
