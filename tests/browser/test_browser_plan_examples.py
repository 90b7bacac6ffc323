"""Editing the plan's acceptance examples on the plan card (issue 14 item 1), in headless Chromium against a real
coordinator (scripted provider, real git): for the demo requirement without its ACCEPTANCE block, "Edit examples"
opens the plan's examples; removing the last one is refused in the card, a whole test file is refused with the
domain's reason, and an added command example (argv one per line, its expected output, served by the plan's step)
is saved as plan revision 2 "edited by the person in revision 2", which is then approved and runs. With the
block kept, the card says why editing would change nothing and offers no editor."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    approve_until_approval_card,
    demo_requirement,
    expect_live,
    task_state,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000


def planned_demo(app: AppPage, *, keep_block: bool) -> None:
    expect(app.testid("first-run")).to_be_visible(timeout=MS)
    app.testid("try-demo").click()
    expect(app.testid("composer")).to_be_visible(timeout=MS)
    requirement = demo_requirement(app.testid("repo-root").inner_text())
    expect(app.testid("requirement")).to_have_value(requirement, timeout=MS)
    if not keep_block:
        app.testid("requirement").fill(requirement.split("<<<ACCEPTANCE")[0].strip())
    app.testid("create-task").click()
    expect(app.testid("plan-card")).to_have_attribute("data-revision", "1", timeout=MS)
    task_state(app, "awaiting-plan-approval")
    expect_live(app)


def test_examples_are_edited_on_the_plan_card_and_the_edited_revision_is_approved(served_page: AppPage) -> None:
    app = served_page
    planned_demo(app, keep_block=False)
    plan = app.testid("plan-card")
    expect(plan.get_by_test_id("plan-examples")).to_contain_text("test tests/test_ops.py::test_add_negative")

    plan.get_by_test_id("plan-examples-edit").click()
    editor = plan.get_by_test_id("plan-examples-editor")
    rows = editor.get_by_test_id("plan-example-row")
    expect(rows).to_have_count(1)
    expect(rows.first.get_by_test_id("plan-example-test")).to_have_value("tests/test_ops.py::test_add_negative")
    expect(rows.first.get_by_test_id("plan-example-step")).to_be_checked()  # the step that serves it

    rows.first.get_by_test_id("plan-example-remove").click()  # the last one: refused before anything is sent
    expect(rows).to_have_count(0)
    expect(editor.get_by_test_id("plan-examples-save")).to_be_enabled(timeout=MS)
    editor.get_by_test_id("plan-examples-save").click()
    expect(app.page.get_by_text("A plan needs at least one example", exact=False)).to_be_visible(timeout=MS)
    editor.get_by_test_id("plan-examples-cancel").click()
    expect(plan.get_by_test_id("plan-examples-editor")).to_have_count(0)

    plan.get_by_test_id("plan-examples-edit").click()
    rows.first.get_by_test_id("plan-example-test").fill("tests/test_ops.py")
    editor.get_by_test_id("plan-examples-save").click()  # the domain refuses a whole file, nothing recorded
    expect(app.page.get_by_text("a whole file or suite is not an example", exact=False)).to_be_visible(timeout=MS)
    expect(plan).to_have_attribute("data-revision", "1")

    rows.first.get_by_test_id("plan-example-test").fill("tests/test_ops.py::test_add_negative")
    editor.get_by_test_id("plan-example-add").click()
    added = rows.nth(1)
    expect(added).to_contain_text("(new)")
    added.get_by_test_id("plan-example-kind").select_option("command")
    added.get_by_test_id("plan-example-argv").fill("python3\n-c\nfrom calc.ops import add; print(add(-1, -2))")
    added.get_by_test_id("plan-example-expected").fill("-3")
    expect(added.get_by_test_id("plan-example-step")).to_be_checked()  # a one-step plan: that step serves it
    editor.get_by_test_id("plan-examples-save").click()

    edited = app.testid("plan-card")
    expect(edited).to_have_attribute("data-revision", "2", timeout=MS)
    expect(edited.get_by_test_id("plan-author")).to_have_text("Drafted by: you")
    examples = edited.get_by_test_id("plan-examples").locator("li")
    expect(examples).to_have_count(2)
    expect(examples.nth(1)).to_have_text("`python3 -c 'from calc.ops import add; print(add(-1, -2))'` exits 0 and "
                                         "prints exactly: -3 (edited by the person in revision 2)")
    expect(edited.get_by_test_id("plan-examples-source")).to_contain_text("edited by the person in revision 2")
    expect(edited.get_by_test_id("plan-step-trace")).to_have_text("Serves examples: 1, 2 · covers sentences: 1")
    expect(edited.get_by_test_id("plan-examples-editor")).to_have_count(0)

    card = approve_until_approval_card(app)  # the edited revision's own confirmation: approved, and it runs
    expect(card.get_by_test_id("approval-arguments")).not_to_be_empty()


def test_the_card_says_why_the_requirements_own_examples_are_not_edited(served_page: AppPage) -> None:
    app = served_page
    planned_demo(app, keep_block=True)
    plan = app.testid("plan-card")

    expect(plan.get_by_test_id("plan-examples-not-editable")).to_contain_text(
        "ACCEPTANCE blocks (1 example(s)) are the examples this task is checked against")
    expect(plan.get_by_test_id("plan-examples-edit")).to_have_count(0)


def test_cancel_says_in_words_what_it_did(served_page: AppPage) -> None:
    """Issue 16 item 6: the cancel's reply says what happened to a running command and to the worktree; the page
    shows it in words (here: no run ever started, so no command ran and there was no worktree)."""
    app = served_page
    planned_demo(app, keep_block=True)
    app.testid("action-cancel").click()
    result = app.testid("cancel-result")
    expect(result).to_be_visible(timeout=MS)
    expect(result.get_by_test_id("cancel-summary")).to_have_text(
        re.compile(r"^task tsk_[0-9a-f]+ cancelled; it had no worktree$"), timeout=MS)
    task_state(app, "cancelled")
