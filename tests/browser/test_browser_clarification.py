"""Stage 2 and 4 on the plan card in headless Chromium against a real coordinator (scripted provider, real git):
the demo requirement, edited to name a file the sample repository lacks, gets a plan with an open question and
its trace (step → examples and sentences); approving is refused with the reason shown; the answer box records
the answer as plan revision 2, which is then approved and runs to its first approval card."""

from __future__ import annotations

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


def test_an_open_question_is_answered_on_the_plan_card_then_the_answered_plan_runs(served_page: AppPage) -> None:
    app = served_page
    expect(app.testid("first-run")).to_be_visible(timeout=MS)
    app.testid("try-demo").click()
    expect(app.testid("composer")).to_be_visible(timeout=MS)
    requirement = demo_requirement(app.testid("repo-root").inner_text())
    expect(app.testid("requirement")).to_have_value(requirement, timeout=MS)
    app.testid("requirement").fill(requirement.replace("numbers.", "numbers, as `docs/NOTES.md` says."))
    app.testid("create-task").click()
    plan = app.testid("plan-card")
    expect(plan).to_have_attribute("data-revision", "1", timeout=MS)
    task_state(app, "awaiting-plan-approval")
    expect_live(app)

    expect(plan.get_by_test_id("plan-step-trace")).to_have_text("Serves examples: 1 · covers sentences: 1")
    expect(plan.get_by_test_id("plan-sentences")).to_contain_text("docs/NOTES.md")
    question = plan.get_by_test_id("plan-question")
    expect(question).to_have_attribute("data-status", "open")
    expect(question).to_contain_text("`docs/NOTES.md`")
    expect(question).to_contain_text("Approval waits for your answer.")

    app.testid("plan-approve").click()  # refused: the question is open; nothing starts
    expect(app.page.get_by_text("open question", exact=False).first).to_be_visible(timeout=MS)
    task_state(app, "awaiting-plan-approval")

    question.get_by_test_id("plan-answer").fill("No such file; ignore the note.")
    question.get_by_test_id("plan-answer-send").click()

    expect(plan).to_have_attribute("data-revision", "2", timeout=MS)
    answered = app.testid("plan-card").get_by_test_id("plan-question")
    expect(answered).to_have_attribute("data-status", "answered")
    expect(answered).to_contain_text("Answer: No such file; ignore the note.")
    expect(answered.get_by_test_id("plan-answer")).to_have_count(0)

    card = approve_until_approval_card(app)
    expect(card.get_by_test_id("approval-arguments")).not_to_be_empty()


def test_the_clarification_policy_is_set_on_the_settings_screen(served_page: AppPage) -> None:
    app = served_page
    expect(app.testid("first-run")).to_be_visible(timeout=MS)
    app.testid("nav-settings").click()
    view = app.testid("settings-view")
    expect(view).to_contain_text("ask: approval waits for your answers", timeout=MS)

    app.testid("clarification-policy").select_option("assume")
    save = app.testid("settings-save-clarification")
    expect(save).to_be_enabled(timeout=MS)
    save.click()

    expect(app.testid("settings-view")).to_contain_text("assume: each question's stated reading", timeout=MS)
    expect(app.testid("clarification-policy")).to_have_value("assume")
