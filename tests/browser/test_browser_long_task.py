"""A long task (issue 20 item 5): a pending approval is answerable before the replay of thousands of events ends —
its card is made from the TaskView fetched as the task opens (the pinned decision is fetched live), not from the
replayed `tool-requested` event; the event's own card then only holds its place."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.domain.events import AgentMessage
from codeflux.domain.ids import TaskId
from codeflux.store.database import Transaction
from codeflux.store.events import append_event
from codeflux.store.tasks import task_session_id
from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    approve_until_approval_card,
    demo_task_to_plan,
    expect_live,
    timeline_sequences,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
FILLER = 5000

# Records the stream state the banner shows at the moment the pinned card's "Allow once" is first enabled (the
# banner and the gate change in the same task, before observers run).
RECORD_FIRST_ENABLED = """
window.__enabledDuring = null;
new MutationObserver(() => {
  if (window.__enabledDuring !== null) return;
  const button = document.querySelector('[data-testid="needs-you-approvals"] [data-testid="approval-allow-once"]');
  const banner = document.querySelector('[data-testid="stream-status"]');
  if (button && banner && !button.disabled) window.__enabledDuring = banner.dataset.state;
}).observe(document, { subtree: true, childList: true, attributes: true });
"""


def test_a_pending_approval_is_answerable_before_a_long_replay_ends(
        served_coordinator: tuple[Any, Any], served_page: AppPage) -> None:
    _, coordinator = served_coordinator
    app = served_page
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)
    request_id = card.get_attribute("data-request-id")
    task_id = app.page.url.rsplit("/", 1)[-1]
    session_id = task_session_id(TaskId.parse(task_id))
    before = len(timeline_sequences(app))
    # Thousands of committed events after the request, through the product's own write path.
    for start in range(0, FILLER, 500):
        def work(tx: Transaction, first: int = start) -> None:
            for n in range(first, first + 500):
                append_event(tx, session_id=session_id, event=AgentMessage(
                    conversation_id=1, attempt=1, text=f"working on it ({n})", truncated=False, redacted=False))
        coordinator.db.write(work)

    app.page.add_init_script(RECORD_FIRST_ENABLED)
    app.page.reload()
    pinned = app.testid("needs-you-approvals").locator(
        f'[data-testid="approval-card"][data-request-id="{request_id}"]')
    expect(pinned.get_by_test_id("approval-allow-once")).to_be_enabled(timeout=MS)
    assert app.page.evaluate("window.__enabledDuring") == "replaying"
    expect(pinned.get_by_test_id("approval-deny-meaning")).to_be_visible()
    pinned.get_by_test_id("approval-allow-once").click()
    expect_live(app)
    card = app.page.locator(f'[data-testid="approval-card"][data-request-id="{request_id}"]')
    expect(card.get_by_test_id("approval-outcome")).to_contain_text("allowed-once", timeout=MS)
    assert card.count() == 1  # one card for the request: the event's own card only held its place
    sequences = timeline_sequences(app)
    assert len(sequences) >= before + FILLER
    assert sequences == list(range(1, len(sequences) + 1)), "each event once, in order"
