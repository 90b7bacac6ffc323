"""What the browser shows of a tool request is what would run, in headless Chromium against a real coordinator
(scripted provider — not a model — with a script of this test, real git, real workers):

* an approval card whose argument hides a RIGHT-TO-LEFT OVERRIDE shows ``\\u202e`` in its place, never the
  character itself — and so does the plan card's declared atom signature;
* the review lists a ``conftest.py`` the agent wrote as "changes what runs", with why, in words;
* the web client's ``escapeForDisplay`` and the Python ``escape_for_display`` show the same text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.domain.display import escape_for_display
from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    allow_once_until_review,
    approve_until_approval_card,
    demo_plan,
    demo_task_to_plan,
    scripted_page,
    task_state,
    write_demo_script,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
DISGUISED = "\u202egnp.exe"  # reads "exe.png" where bidi text is rendered


@pytest.fixture
def app(served_coordinator: tuple[Any, Any], served_page: AppPage, tmp_path: Path) -> AppPage:
    """The demo's plan (its atom's signature disguised); then the fix and a conftest.py, a command with a disguised
    argument, and finish."""
    plan = demo_plan()
    plan[0]["json"]["steps"][0]["atoms"][0]["signature"] = f"def add(a: int, b: int) -> int  # {DISGUISED}"
    fix = [("edit_file", {"path": "calc/ops.py", "old_text": "    return abs(a) + abs(b)\n",
                          "new_text": "    return a + b\n"}),
           ("write_file", {"path": "calc/conftest.py", "content": "# pytest imports this before the tests\n"})]
    look = [("run_command", {"argv": ["python3", "-c", "print(1)", DISGUISED]})]
    script = write_demo_script(tmp_path / "script.json", [("fix", fix), ("look", look)],
                               summary="add() fixed; a conftest added.", plan=plan)
    return scripted_page(served_coordinator, served_page, script)


def test_a_bidi_override_argument_is_escaped_and_a_written_conftest_changes_what_runs(app: AppPage) -> None:
    demo_task_to_plan(app)
    declared = app.testid("plan-card").get_by_test_id("plan-step-atoms")  # a declared signature is model text too
    expect(declared).to_contain_text("# \\u202egnp.exe — pure (no effects)", timeout=MS)
    assert "\u202e" not in (declared.text_content() or "")
    card = approve_until_approval_card(app)
    arguments = card.get_by_test_id("approval-arguments")

    expect(arguments).to_contain_text("\\u202egnp.exe", timeout=MS)
    assert "\u202e" not in (card.text_content() or "")
    card.get_by_test_id("approval-allow-once").click()
    expect(card.get_by_test_id("approval-outcome")).to_contain_text("allowed-once", timeout=MS)
    allow_once_until_review(app)
    task_state(app, "awaiting-review")

    app.testid("open-review").click()
    drawer = app.testid("review-drawer")
    expect(drawer).to_be_visible(timeout=MS)
    flags = drawer.get_by_test_id("review-what-runs-item")
    expect(flags).to_have_count(1)
    expect(flags.first).to_contain_text("changes what runs: calc/conftest.py")
    expect(flags.first).to_contain_text("pytest imports and runs it")
    expect(drawer.get_by_test_id("review-files")).to_contain_text("calc/conftest.py (changes what runs)")
    expect(drawer.get_by_test_id("review-files")).not_to_contain_text("calc/ops.py (changes what runs)")
    assert app.foreign_requests == []


def test_the_web_client_escapes_exactly_as_the_python_rule(served_page: AppPage) -> None:
    samples = [
        "plain text", "a\\b", "\\u202e", "invoice\u202etxt.exe", "\u2066x\u2069\u200b\u200e\u200f\u061c",
        "tab\there\nnext\r\n", "\x00\x1b[2J\x7f\x85\x9f", "\u2028\u2029\u00a0\u3000 ", "\ufeff\u2060\u00ad",
        "tag\U000e0041\U000e007f", "naïve 日本語 🙂", "\ue000 private",
        "".join(chr(c) for c in range(0x0000, 0x0400)), "".join(chr(c) for c in range(0x2000, 0x2070)),
        "".join(chr(c) for c in range(0xFE00, 0xFF00)),
    ]
    expect(served_page.testid("app")).to_be_visible(timeout=MS)

    shown = served_page.page.evaluate(
        "async (samples) => { const format = await import('/static/format.js');"
        " return samples.map((s) => format.escapeForDisplay(s)); }", samples)

    assert shown == [escape_for_display(sample) for sample in samples]
