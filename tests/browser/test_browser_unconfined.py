"""Where commands run with no OS box, the approval card says so and offers only "Allow once" — in headless
Chromium against a real coordinator forced to ``CODEFLUX_CONFINEMENT=none`` (scripted provider, not a model)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    approve_until_approval_card,
    demo_task_to_plan,
    serving,
    watched_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.security]
MS = WAIT_S * 1000


@pytest.fixture
def unconfined_page(chromium: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                    request: pytest.FixtureRequest) -> Iterator[AppPage]:
    monkeypatch.setenv("CODEFLUX_CONFINEMENT", "none")
    with serving(tmp_path / "data", monkeypatch) as (server, _), \
            watched_page(chromium, server.launch_url(), request) as page:
        yield page


def test_an_unconfined_command_card_says_unconfined_and_offers_allow_once_only(unconfined_page: AppPage) -> None:
    app = unconfined_page
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)

    expect(card.get_by_test_id("approval-meaning")).to_contain_text(
        "runs code from the task's worktree, which the agent can change; unconfined", timeout=MS)
    expect(card.get_by_test_id("approval-allow-for-task-refusal")).to_contain_text("allowed once")
    expect(card.get_by_test_id("approval-allow-once")).to_be_enabled(timeout=MS)
    allow_for_task = card.get_by_test_id("approval-allow-for-task")
    expect(allow_for_task).to_be_disabled()
    expect(allow_for_task).to_have_attribute("title", "this machine cannot confine programs, so each run of one is "
                                                      "allowed once (see `codeflux doctor`)")
    # Nothing is allowed for a whole repository either: the card says why instead of what it would mean.
    expect(card.get_by_test_id("approval-allow-for-repository-refusal")).to_contain_text(
        "commands run unconfined on this machine (confinement none")
    expect(card.get_by_test_id("approval-allow-for-repository-meaning")).to_have_count(0)
    allow_for_repository = card.get_by_test_id("approval-allow-for-repository")
    expect(allow_for_repository).to_be_disabled()
    expect(allow_for_repository).to_have_attribute("title", re.compile("nothing is allowed for a whole repository"))
