"""Allow for this repository in headless Chromium against a real coordinator (scripted provider, not a model):
the approval card says what the option means before the click and that nothing was allowed before; the person
allows the command for the repository; Settings lists the repository approval, and revoking it there says so."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import WAIT_S, AppPage, approve_until_approval_card, demo_task_to_plan

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.security]
MS = WAIT_S * 1000


def test_a_command_allowed_for_the_repository_is_listed_in_settings_and_revoked_there(
    served_page: AppPage, served_coordinator: tuple[Any, Any]
) -> None:
    app = served_page
    _, coordinator = served_coordinator
    if coordinator.runs is None or _unconfined():
        pytest.skip("this machine cannot confine programs: allow-for-repository is never offered")
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)

    expect(card.get_by_test_id("approval-allowed-before")).to_have_text("Not allowed before on this repository.",
                                                                       timeout=MS)
    meaning = card.get_by_test_id("approval-allow-for-repository-meaning")
    expect(meaning).to_contain_text("runs without asking in this task and in every later task of this repository")
    expect(meaning).to_contain_text("rop_")
    expect(card.get_by_test_id("approval-allow-for-repository-refusal")).to_have_count(0)
    allow = card.get_by_test_id("approval-allow-for-repository")
    expect(allow).to_be_enabled(timeout=MS)
    allow.click()
    expect(card.get_by_test_id("approval-outcome")).to_contain_text("allowed-for-task", timeout=MS)
    expect(app.testid("allowed-for-repository").first).to_contain_text("Also allowed for this repository (rap_",
                                                                       timeout=MS)

    app.testid("nav-settings").click()
    listed = app.page.locator('[data-testid="repository-approval"]')
    expect(listed).to_have_count(1, timeout=MS)
    expect(listed).to_have_attribute("data-state", "live")
    expect(listed).to_contain_text("run_command")
    revoke = listed.get_by_test_id("repository-approval-revoke")
    expect(revoke).to_be_enabled(timeout=MS)
    revoke.click()
    expect(listed).to_have_attribute("data-state", "revoked", timeout=MS)
    expect(listed).to_contain_text("revoked in the codeflux UI settings")
    expect(listed.get_by_test_id("repository-approval-revoke")).to_have_count(0)
    assert not app.foreign_requests and not app.console_errors


def _unconfined() -> bool:
    from codeflux.domain.confinement import ConfinementMode
    from codeflux.worker.client.confinement import choose_confinement

    return choose_confinement().mode is ConfinementMode.NONE
