"""The review's diff viewer (issue 20 item 4) in headless Chromium, on the page a real coordinator serves (its strict
CSP, the vendored jsdiff and highlight.js):

* a section per file with its path, status and +/- counts, each collapsible; old and new line numbers; a removed
  ``--`` line and an added ``++`` line coloured and worded as a removal and an addition (never a file header);
  a binary file and a deleted file are sections of their own;
* highlight.js token classes on Python lines, a docstring opened in a hunk coloured on its next line;
* unified and side-by-side layouts, the choice remembered for the tab; line notes under their line in both;
* a long file starts collapsed, saying so, its notes listed until "Expand all" draws them under their lines;
* repository text that looks like markup (``<img src=x onerror=…>``, ``</span><script>``) is drawn as text: no
  element is created, nothing is logged as an error and the CSP reports no violation — with a positive control
  that the same markup put in the page as HTML does create the element and is reported by the CSP; a bidi
  override or isolate in a line is drawn as a marked escape (U+202E as ``\\u202e``), never applied.

The diff of a delivered task staying viewable is proved on the real journey (test_browser_journey.py: after Accept,
"Open review" shows the landed commit's diff).
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import WAIT_S, AppPage

pytestmark = [pytest.mark.browser]
MS = WAIT_S * 1000

DIFF = "\n".join([
    "diff --git a/assets/logo.png b/assets/logo.png",
    "new file mode 100644",
    "index 0000000..88768ef",
    "GIT binary patch",
    "literal 5",
    "McmZQzWMXCj0003J0RR91",
    "",
    "literal 0",
    "HcmV?d00001",
    "",
    "diff --git a/old.txt b/old.txt",
    "deleted file mode 100644",
    "index 2fa992c..0000000",
    "--- a/old.txt",
    "+++ /dev/null",
    "@@ -1 +0,0 @@",
    "-gone",
    "diff --git a/pkg/m.py b/pkg/m.py",
    "index dea01a5..f5b7648 100644",
    "--- a/pkg/m.py",
    "+++ b/pkg/m.py",
    "@@ -10,4 +10,6 @@ def f():",
    " keep = 1",
    "--- a removed line that looks like a header",
    "+++ an added line that looks like a header",
    '+"""A docstring',
    '+still the docstring"""',
    " def g(x):",
    "     return x",
    "\\ No newline at end of file",
    "",
])

NOTES = [{"path": "pkg/m.py", "line": 11, "kind": "control-path", "state": "open", "text": "branch arc x"},
         {"path": "pkg/m.py", "line": 99, "kind": "composition", "state": "open", "text": "far away"}]

MOUNT = ("async ([text, notes]) => { const diff = await import('/static/diff.js');"
         " const slot = document.createElement('div'); slot.id = 'diff-test-slot';"
         " document.getElementById('diff-test-slot')?.remove(); document.body.prepend(slot);"
         " slot.append(diff.diffView(text, false, notes)); }")


def _rows(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#diff-test-slot [data-testid=diff-file][data-path='pkg/m.py'] tr",
        "rows => rows.map((r) => [r.className, r.dataset.oldLine || '', r.dataset.line || '', r.dataset.testid || ''])")


def test_files_line_numbers_colours_highlighting_and_both_layouts(served_page: AppPage) -> None:
    page = served_page.page
    expect(served_page.testid("app")).to_be_visible(timeout=MS)
    page.evaluate("() => window.sessionStorage.removeItem('codeflux.diff.mode')")
    page.evaluate(MOUNT, [DIFF, NOTES])
    view = page.locator("#diff-test-slot")
    files = view.get_by_test_id("diff-file")
    expect(files).to_have_count(3)
    assert files.evaluate_all("fs => fs.map((f) => [f.dataset.path, f.dataset.status])") == [
        ["assets/logo.png", "added, binary"], ["old.txt", "deleted"], ["pkg/m.py", "modified"]]
    module = view.locator("[data-testid=diff-file][data-path='pkg/m.py']")
    expect(module.get_by_test_id("diff-file-counts")).to_have_text("+3 −1 (3 lines added, 1 line removed)")
    expect(view.get_by_test_id("diff-summary")).to_have_text("3 files changed, +3 −2")
    expect(view.locator("[data-path='assets/logo.png']")).to_contain_text("Binary file: no lines to show.")

    # unified: old and new numbers counted through the hunk; "---"/"+++" content is a removal/an addition
    assert _rows(page) == [
        ["diff-line diff-hunk", "", "", ""], ["diff-line diff-context", "10", "10", ""],
        ["diff-line diff-del", "11", "", ""], ["diff-line diff-add", "", "11", ""],
        ["diff-note diff-note-control-path", "", "11", "diff-note"],
        ["diff-line diff-add", "", "12", ""], ["diff-line diff-add", "", "13", ""],
        ["diff-line diff-context", "12", "14", ""], ["diff-line diff-context", "13", "15", ""],
        ["diff-line diff-meta", "", "", ""]]
    removed = module.locator("tr.diff-del")
    added = module.locator("tr.diff-add").first
    expect(removed).to_have_attribute("title", "removed")
    expect(removed.locator(".diff-code")).to_have_text("-- a removed line that looks like a header")
    expect(added).to_have_attribute("title", "added")
    expect(added.locator(".diff-code")).to_have_text("++ an added line that looks like a header")
    assert removed.evaluate("n => getComputedStyle(n).backgroundColor") == "rgb(252, 232, 230)"
    assert added.evaluate("n => getComputedStyle(n).backgroundColor") == "rgb(230, 244, 234)"
    expect(module.locator("tr.diff-line[data-line='11'] td.diff-num-new")).to_have_text("11")
    expect(module.locator("tr.diff-line[data-old-line='13'] td.diff-num-old")).to_have_text("13")

    # highlight.js classes: a keyword, and the docstring's second line still a string (highlighted per hunk side)
    expect(module.locator("tr[data-line='14'] .hljs-keyword")).to_have_text("def")
    expect(module.locator("tr[data-line='13'] .hljs-string")).to_have_text('still the docstring"""')
    assert module.locator("tr[data-line='14'] .hljs-keyword").evaluate("n => getComputedStyle(n).color") \
        != module.locator("tr[data-line='14'] td.diff-code").evaluate("n => getComputedStyle(n).color")
    expect(view.get_by_test_id("diff-notes-elsewhere")).to_contain_text("pkg/m.py:99: far away")

    # collapse one file, then expand it again
    toggle = module.get_by_test_id("diff-file-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    toggle.click()
    module = view.locator("[data-testid=diff-file][data-path='pkg/m.py']")
    expect(module).to_have_attribute("data-open", "no")
    expect(module.locator("tr")).to_have_count(0)
    expect(module.get_by_test_id("diff-file-toggle")).to_have_attribute("aria-expanded", "false")
    expect(view.get_by_test_id("diff-notes-elsewhere")).to_contain_text("pkg/m.py:11: branch arc x")
    module.get_by_test_id("diff-file-toggle").click()
    expect(module.locator("tr.diff-line")).to_have_count(9)

    # side by side: the removal beside the addition, numbers on both sides, the note still under line 11
    view.get_by_test_id("diff-mode-split").click()
    expect(view.get_by_test_id("diff-mode-split")).to_have_attribute("aria-pressed", "true")
    assert _rows(page) == [
        ["diff-line diff-hunk", "", "", ""], ["diff-line diff-split diff-context", "10", "10", ""],
        ["diff-line diff-split diff-change", "11", "11", ""],
        ["diff-note diff-note-control-path", "", "11", "diff-note"],
        ["diff-line diff-split diff-add", "", "12", ""], ["diff-line diff-split diff-add", "", "13", ""],
        ["diff-line diff-split diff-context", "12", "14", ""], ["diff-line diff-split diff-context", "13", "15", ""],
        ["diff-line diff-meta", "", "", ""]]
    change = module.locator("tr.diff-change")
    expect(change.get_by_test_id("diff-old-code")).to_have_text("-- a removed line that looks like a header")
    expect(change.get_by_test_id("diff-new-code")).to_have_text("++ an added line that looks like a header")
    assert change.get_by_test_id("diff-old-code").evaluate("n => getComputedStyle(n).backgroundColor") \
        == "rgb(252, 232, 230)"
    assert change.get_by_test_id("diff-new-code").evaluate("n => getComputedStyle(n).backgroundColor") \
        == "rgb(230, 244, 234)"

    # the layout is remembered for the tab: a new viewer opens side by side
    page.evaluate(MOUNT, [DIFF, NOTES])
    expect(view.get_by_test_id("diff-mode-split")).to_have_attribute("aria-pressed", "true")
    expect(view.locator("tr.diff-split").first).to_be_visible()
    view.get_by_test_id("diff-mode-unified").click()
    expect(view.locator("tr.diff-split")).to_have_count(0)

    # a long file starts collapsed (a long diff stays quick to draw), says so, and its notes are listed meanwhile
    long_file = "".join(f"+line_{i} = {i}\n" for i in range(1600))
    page.evaluate(MOUNT, [DIFF + "diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n"
                          f"+++ b/big.py\n@@ -0,0 +1,1600 @@\n{long_file}",
                          [{"path": "big.py", "line": 7, "kind": "uncovered-arc", "state": "", "text": "arc"}]])
    big = view.locator("[data-testid=diff-file][data-path='big.py']")
    expect(big).to_have_attribute("data-open", "no")
    expect(big.get_by_test_id("diff-file-collapsed")).to_have_text(" collapsed (a large file): expand to show")
    expect(view.get_by_test_id("diff-summary")).to_contain_text("(1 long or late file start collapsed)")
    expect(view.get_by_test_id("diff-notes-elsewhere")).to_contain_text("big.py:7: arc")
    view.get_by_test_id("diff-expand-all").click()
    expect(big.locator("tr.diff-add")).to_have_count(1600)
    expect(big.locator('tr.diff-line[data-line="7"] + [data-testid="diff-note"]')).to_contain_text("line 7: arc")
    expect(view.get_by_test_id("diff-notes-elsewhere")).to_have_count(0)
    assert "null" not in view.inner_text() and "undefined" not in view.inner_text()  # no stray value as a word
    assert served_page.console_errors == []
    assert served_page.foreign_requests == []


HOSTILE = "\n".join([
    "diff --git a/web/page.html b/web/page.html",
    "--- a/web/page.html",
    "+++ b/web/page.html",
    "@@ -1,2 +1,2 @@",
    "-<p>old</p>",
    '+<img src=x onerror="window.__diffPwned=1">',
    " </span><script>window.__diffPwned=2</script>",
    "diff --git a/x.py b/x.py",
    "--- a/x.py",
    "+++ b/x.py",
    "@@ -1 +1,2 @@",
    "-a = 1",
    "+s = '</span><img src=y onerror=\"window.__diffPwned=3\">'",
    "+access = 'user\u202e \u2066# admin\u2069\u2066'\tnext",
    "",
])

WATCH_CSP = ("() => { window.__cspViolations = [];"
             " document.addEventListener('securitypolicyviolation',"
             " (e) => window.__cspViolations.push(e.violatedDirective)); }")


def test_repository_text_that_looks_like_markup_is_drawn_as_text(served_page: AppPage) -> None:
    page = served_page.page
    expect(served_page.testid("app")).to_be_visible(timeout=MS)
    page.evaluate(WATCH_CSP)
    page.evaluate(MOUNT, [HOSTILE, []])
    view = page.locator("#diff-test-slot")
    expect(view.get_by_test_id("diff-file")).to_have_count(2)
    html = view.locator("[data-path='web/page.html']")
    expect(html.locator("tr[data-line='1'] .diff-code")).to_have_text('<img src=x onerror="window.__diffPwned=1">')
    expect(html.locator("tr[data-line='2'] .diff-code")).to_have_text("</span><script>window.__diffPwned=2</script>")
    expect(html.locator("tr[data-line='1'] .hljs-tag").first).to_be_visible()  # highlighted, as text
    python = view.locator("[data-path='x.py']")
    expect(python.locator("tr[data-line='1'] .diff-code")).to_have_text(
        "s = '</span><img src=y onerror=\"window.__diffPwned=3\">'")
    # a bidi override or isolate cannot reorder the line: each is drawn as a marked \\uXXXX; the tab stays a tab
    hidden = python.locator("tr[data-line='2']").get_by_test_id("diff-hidden-char")
    assert hidden.evaluate_all("ns => ns.map((n) => [n.textContent, n.title])") == [
        ["\\u202e", "hidden character U+202E"], ["\\u2066", "hidden character U+2066"],
        ["\\u2069", "hidden character U+2069"], ["\\u2066", "hidden character U+2066"]]
    assert python.locator("tr[data-line='2'] .diff-code").evaluate("n => n.textContent") \
        == "access = 'user\\u202e \\u2066# admin\\u2069\\u2066'\tnext"
    assert view.locator("img, script, p:not(.notice):not(.empty)").count() == 0
    page.wait_for_timeout(300)  # an image error or a blocked inline handler would be reported by now
    assert page.evaluate("() => [window.__diffPwned, window.__cspViolations]") == [None, []]
    assert served_page.console_errors == []

    # positive control: the same markup put in the page as HTML creates the element, and the CSP blocks its
    # handler and says so — the checks above would have seen it
    page.evaluate("() => { const d = document.createElement('div'); d.id = 'control';"
                  " d.innerHTML = '<img src=x onerror=\"window.__diffPwned=1\">'; document.body.append(d); }")
    assert page.locator("#control img").count() == 1
    page.wait_for_function("() => window.__cspViolations.length > 0", timeout=MS)
    assert page.evaluate("() => window.__diffPwned") is None
    assert any("script-src" in v for v in page.evaluate("() => window.__cspViolations"))
