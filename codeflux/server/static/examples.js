// The plan card's "Edit examples" (issue 14 item 1): the person changes, removes and adds the plan's acceptance
// examples, and the step(s) serving each, before approving. Saving records a new plan revision, by the person
// (TaskService/EditPlanExamples); that revision is the one approved. Like sending a plan back, it decides
// nothing, so it needs no card confirmation; Save is a mutating control (enabled only while the stream is live).
//
// Every read of the task rebuilds the plan card, so the unsaved edit is kept on the app (`app.examplesDraft`),
// bound to the revision and hash it edits; a new revision discards it.

import { clear, el, mutatingButton } from "./dom.js";
import { escapeForDisplay } from "./format.js";

const TASK_SCOPE = { mutating: "1", scope: "task" };

const draftKey = (plan) => `${plan.revision}:${plan.sha256}`;

function newDraft(plan) {
  return {
    key: draftKey(plan),
    rows: (plan.planExamples || []).map((example) => ({
      number: example.number, kind: example.test ? "test" : "command", test: example.test || "",
      argv: (example.argv || []).join("\n"), expected: (example.expected || []).join("\n"),
      steps: [...(example.steps || [])],
    })),
  };
}

// The edit section under the examples: a button to start, the editor while a draft is open, or why the
// examples cannot be edited.
export function examplesEditing(app, task, plan) {
  const undecided = (plan.decision || "undecided") === "undecided";
  if (!undecided) return null;
  if (!plan.examplesEditable || task.state !== "awaiting-plan-approval") {
    return plan.examplesEditNote
      ? el("p", { class: "note", testid: "plan-examples-not-editable", text: `Editing the examples: ${plan.examplesEditNote}` })
      : null;
  }
  const slot = el("div", { testid: "plan-examples-editing" });
  const render = () => {
    const draft = app.examplesDraft && app.examplesDraft.key === draftKey(plan) ? app.examplesDraft : null;
    clear(slot).append(draft ? editor(app, plan, draft, render)
      : el("button", { type: "button", testid: "plan-examples-edit", text: "Edit examples",
        onclick: () => { app.examplesDraft = newDraft(plan); render(); } }));
    app.gate();
  };
  render();
  return slot;
}

function editor(app, plan, draft, render) {
  const addRow = () => {
    draft.rows.push({ number: 0, kind: "test", test: "", argv: "", expected: "", steps: (plan.steps || []).length === 1 ? [1] : [] });
    render();
  };
  return el("div", { class: "examples-editor", testid: "plan-examples-editor" },
    el("p", { class: "note", text: "Saving records a new plan revision by you, which you then approve. A command is given one "
      + "argument per line (it is never run by a shell); its expected output one line per line." }),
    el("ol", { class: "example-rows" }, draft.rows.map((row, index) => rowEditor(plan, draft, row, index, render))),
    el("div", { class: "actions" },
      el("button", { type: "button", testid: "plan-example-add", text: "Add an example", onclick: addRow }),
      mutatingButton("Save examples", () => app.editPlanExamples(plan, draft), "plan-examples-save", { dataset: TASK_SCOPE }),
      el("button", { type: "button", testid: "plan-examples-cancel", text: "Discard the edit",
        onclick: () => { app.examplesDraft = null; render(); } })));
}

function rowEditor(plan, draft, row, index, render) {
  const id = (name) => `plan-example-${index + 1}-${name}`;
  const was = row.number ? `was example ${row.number}` : "new";
  const kind = el("select", { id: id("kind"), testid: "plan-example-kind",
    onchange: (event) => { row.kind = event.target.value; render(); } },
  el("option", { value: "test", text: "a named test (pytest node id)" }),
  el("option", { value: "command", text: "a command and its expected output" }));
  kind.value = row.kind;
  const fields = row.kind === "test"
    ? [el("label", { for: id("test"), text: "Test (path::name)" }),
      el("input", { id: id("test"), testid: "plan-example-test", value: row.test, size: 60,
        placeholder: "tests/test_calc.py::test_add_negative", oninput: (event) => { row.test = event.target.value; } })]
    : [el("label", { for: id("argv"), text: "Command, one argument per line" }),
      el("textarea", { id: id("argv"), testid: "plan-example-argv", rows: 3, value: row.argv,
        oninput: (event) => { row.argv = event.target.value; } }),
      el("label", { for: id("expected"), text: "Expected output, one line per line (empty: only exit 0 is checked)" }),
      el("textarea", { id: id("expected"), testid: "plan-example-expected", rows: 2, value: row.expected,
        oninput: (event) => { row.expected = event.target.value; } })];
  return el("li", { testid: "plan-example-row", dataset: { number: String(row.number) } },
    el("p", {}, el("strong", { text: `Example ${index + 1}` }), ` (${was}) `,
      el("button", { type: "button", testid: "plan-example-remove", text: "Remove",
        onclick: () => { draft.rows.splice(index, 1); render(); } })),
    el("label", { for: id("kind"), text: "Kind" }), kind, ...fields, plan.traced ? stepPicker(plan, row, id) : null);
}

// Which steps serve the example (the plan's trace); approval refuses an example no step serves.
function stepPicker(plan, row, id) {
  return el("fieldset", { class: "example-steps", testid: "plan-example-steps" },
    el("legend", { text: "Served by step(s)" }),
    (plan.steps || []).map((step, index) => {
      const number = index + 1;
      const box = el("input", { type: "checkbox", id: id(`step-${number}`), testid: "plan-example-step",
        checked: row.steps.includes(number), dataset: { step: String(number) },
        onchange: (event) => {
          row.steps = row.steps.filter((n) => n !== number);
          if (event.target.checked) row.steps.push(number);
        } });
      return el("span", { class: "step-choice" }, box,
        el("label", { for: id(`step-${number}`), text: ` ${number}. ${escapeForDisplay(step.title)} ` }));
    }));
}

const lines = (text) => text.replace(/\r/g, "").split("\n");

// The draft as EditPlanExamples entries, or the first problem the person can fix here.
export function exampleEntries(plan, draft) {
  if (!draft.rows.length) return { problem: "A plan needs at least one example: add one before removing the last." };
  const examples = [];
  for (const [index, row] of draft.rows.entries()) {
    const steps = [...row.steps].sort((a, b) => a - b);
    if (plan.traced && !steps.length) return { problem: `Example ${index + 1}: pick the step(s) that serve it.` };
    const entry = { number: row.number, steps };
    if (row.kind === "test") {
      if (!row.test.trim()) return { problem: `Example ${index + 1}: name the test (path::name).` };
      entry.test = row.test.trim();
    } else {
      entry.argv = lines(row.argv).filter((part) => part !== "");
      if (!entry.argv.length) return { problem: `Example ${index + 1}: give the command, one argument per line.` };
      const expected = row.expected === "" ? [] : lines(row.expected);
      while (expected.length && expected[expected.length - 1] === "") expected.pop();
      entry.expected = expected;
    }
    examples.push(entry);
  }
  return { examples };
}
