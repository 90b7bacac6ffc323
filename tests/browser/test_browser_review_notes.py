"""The review shows the attempt's obligations and uncovered branch arcs next to the diff lines they belong to (issue
18), in headless Chromium against a real coordinator (scripted provider — not a model — with a script of this test,
real git, real workers, the real pipeline):

* the demo's ``add()`` gains a branch no test takes and a new ``double()`` calling it: the review draws, under the
  ``if`` line, the control-path obligation (open) and stage 25's uncovered arc; under ``double()``'s call the
  composition obligation (open) — in words, with the line number;
* the web client's diff viewer reads a hunk by its counts: a removed line starting ``--`` is a removal (not a file
  header), line numbers of the final tree are counted through the hunk, and a note on a line the diff does not show
  is listed after it (the viewer's files, layouts and highlighting: test_browser_diff.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    allow_once_until_review,
    approve_until_approval_card,
    demo_task_to_plan,
    scripted_page,
    task_state,
    write_demo_script,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
BRANCHY = ('    """Return the sum of a and b."""\n'
           "    if a == 0:\n"
           "        return b\n"
           "    return a + b\n"
           "\n\n"
           "def double(a: int) -> int:\n"
           '    """Return a added to itself."""\n'
           "    return add(a, a)\n")


@pytest.fixture
def app(served_coordinator: tuple[Any, Any], served_page: AppPage, tmp_path: Path) -> AppPage:
    """The demo's plan; then a fix of add() with a branch the tests never take and a double() calling it."""
    fix = ("edit_file", {"path": "calc/ops.py", "new_text": BRANCHY,
                         "old_text": '    """Return the sum of a and b."""\n    return abs(a) + abs(b)\n'})
    script = write_demo_script(tmp_path / "script.json", [("fix", [fix])], summary="add() fixed; double() added.")
    return scripted_page(served_coordinator, served_page, script)


def test_the_review_draws_obligations_and_uncovered_arcs_under_their_lines(app: AppPage) -> None:
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)
    card.get_by_test_id("approval-allow-once").click()
    expect(card.get_by_test_id("approval-outcome")).to_contain_text("allowed-once", timeout=MS)
    allow_once_until_review(app)
    task_state(app, "awaiting-review")

    app.testid("open-review").click()
    drawer = app.testid("review-drawer")
    viewer = drawer.get_by_test_id("diff-viewer")
    expect(viewer).to_be_visible(timeout=MS)
    branch = viewer.locator('[data-testid="diff-note"][data-kind="control-path"]')
    expect(branch.first).to_contain_text("line 6: branch arc calc/ops.py:6->7: open")
    uncovered = viewer.locator('[data-testid="diff-note"][data-kind="uncovered-arc"]')
    expect(uncovered).to_have_count(1)
    expect(uncovered).to_contain_text("line 6: uncovered: no test takes the branch arc calc/ops.py:6->7 (stage 25)")
    composition = viewer.locator('[data-testid="diff-note"][data-kind="composition"]')
    expect(composition).to_have_count(1)
    expect(composition).to_contain_text("line 13: composition calc.ops.double -> calc.ops.add: open")
    # each note sits right under its own line of the final tree
    under_if = viewer.locator('.diff-line[data-line="6"] + [data-testid="diff-note"]')
    expect(under_if.first).to_have_attribute("data-line", "6")
    expect(viewer.locator('.diff-line[data-line="13"]')).to_contain_text("return add(a, a)")
    expect(drawer.get_by_test_id("diff-notes-legend")).to_be_visible()
    assert app.foreign_requests == []


DIFF = "\n".join([
    "diff --git a/pkg/m.py b/pkg/m.py",
    "--- a/pkg/m.py",
    "+++ b/pkg/m.py",
    "@@ -10,3 +10,3 @@ def f():",
    " keep = 1",
    "--- a removed line that looks like a header",
    "+++ an added line that looks like a header",
    " tail = 2",
    "\\ No newline at end of file",
    "",
])


def test_the_diff_viewer_reads_hunks_by_their_counts_and_places_notes(served_page: AppPage) -> None:
    expect(served_page.testid("app")).to_be_visible(timeout=MS)
    notes = [{"path": "pkg/m.py", "line": 11, "kind": "control-path", "state": "open", "text": "branch arc x"},
             {"path": "pkg/m.py", "line": 99, "kind": "composition", "state": "open", "text": "far away"}]

    drawn = served_page.page.evaluate(
        "async ([text, notes]) => { const review = await import('/static/review.js');"
        " const view = review.diffView(text, false, notes);"
        " return { lines: [...view.querySelectorAll('.diff-line')].map((n) => [n.className, n.dataset.line || '']),"
        " notes: [...view.querySelectorAll('[data-testid=diff-note]')].map((n) => n.previousSibling.dataset.line),"
        " elsewhere: view.querySelector('[data-testid=diff-notes-elsewhere]')?.textContent || '' }; }",
        [DIFF, notes])

    assert drawn["lines"] == [
        ["diff-line diff-hunk", ""], ["diff-line diff-context", "10"], ["diff-line diff-del", ""],
        ["diff-line diff-add", "11"], ["diff-line diff-context", "12"], ["diff-line diff-meta", ""]]
    assert drawn["notes"] == ["11"]  # under the added line 11, not the removal that looks like a header
    assert "pkg/m.py:99: far away" in drawn["elsewhere"]
