"""Restart the coordinator mid-task: `codeflux start` in a child process is killed with SIGKILL while a
task waits for a decision; a new `codeflux start` on the same data directory runs startup recovery and
the browser's recovery card shows what is known, what is ambiguous, and the recommended action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import (
    WAIT_S,
    ProcessCoordinator,
    approve_until_approval_card,
    demo_task_to_plan,
    failure_screenshot,
    open_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000


def test_a_killed_coordinator_leaves_a_recovery_card(chromium: Any, tmp_path: Path,
                                                      request: pytest.FixtureRequest) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    pages: list[Any] = []
    with failure_screenshot(request, lambda: pages):
        first = ProcessCoordinator(data, home, demo=True)
        try:
            app = open_app(chromium, first.launch_url())
            pages.append(app.page)
            demo_task_to_plan(app, from_first_run=False)
            approve_until_approval_card(app)
            first.kill()
            expect(app.testid("stream-status")).not_to_have_attribute("data-state", "live", timeout=MS)
        finally:
            first.kill()
            first.stop()

        second = ProcessCoordinator(data, home)
        try:
            assert "need recovery" in second.output()
            again = open_app(chromium, second.launch_url())
            pages.append(again.page)
            again.testid("nav-recovery").click()
            card = again.testid("recovery-card").first
            expect(card).to_be_visible(timeout=MS)
            expect(card.get_by_test_id("recovery-known")).to_be_visible()
            expect(card.get_by_test_id("recovery-ambiguous")).to_be_visible()
            expect(card.get_by_test_id("recovery-recommended")).not_to_be_empty()
            expect(card.get_by_test_id("recovery-actions")).to_be_visible()
            assert again.foreign_requests == []
        finally:
            second.stop()
