"""A long task (issue 20 item 5): 10,000 events, written through the product's own write path after a real pending
tool request. The pending approval is answerable before the replay ends — its card is made from the TaskView fetched
as the task opens (the pinned decision is fetched live), not from the replayed `tool-requested` event, whose own
card only holds its place; the page keeps at most 3,000 DOM nodes (the newest cards, "Show earlier events" for the
rest) and reads a tool result only for a result card on the page (≤ 2 calls a shown row)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

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
from tests.fixtures.graph_runs import long_task_events

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
EVENTS = 10_000
MAX_NODES = 3_000

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
    # A long run's events (model calls, messages, commands with output and results, stage verdicts) after the
    # request, through the product's own write path, up to 10,000 in all.
    events = long_task_events(TaskId.parse(task_id), EVENTS - before)
    for start in range(0, len(events), 500):
        def work(tx: Transaction, chunk: list[Any] = events[start:start + 500]) -> None:
            for event in chunk:
                append_event(tx, session_id=session_id, event=event)
        coordinator.db.write(work)

    calls: list[str] = []
    app.page.on("websocket", lambda ws: ws.on("framesent", lambda frame: calls.append(
        "GetToolActivity" if "GetToolActivity" in str(frame) else "other")))
    app.page.add_init_script(RECORD_FIRST_ENABLED)
    app.page.reload()
    pinned = app.testid("needs-you-approvals").locator(
        f'[data-testid="approval-card"][data-request-id="{request_id}"]')
    expect(pinned.get_by_test_id("approval-allow-once")).to_be_enabled(timeout=MS)
    assert app.page.evaluate("window.__enabledDuring") == "replaying"
    expect(pinned.get_by_test_id("approval-deny-meaning")).to_be_visible()
    pinned.get_by_test_id("approval-allow-once").click()
    expect_live(app)
    # Decided: the card leaves "Needs you" for its event's place (among the earlier events here); the decision's
    # own event is on the page.
    decided = app.testid("timeline").get_by_test_id("decision-card").filter(has_text="allowed-once")
    expect(decided.first).to_be_visible(timeout=MS)
    expect(pinned).to_have_count(0)
    nodes = app.page.evaluate("document.getElementsByTagName('*').length")
    assert nodes <= MAX_NODES, nodes
    shown_results = app.page.locator("[data-testid=timeline] [data-testid=tool-result-slot]").count()
    reads = calls.count("GetToolActivity")
    assert shown_results > 0 and reads <= 2 * shown_results, (reads, shown_results)
    sequences = timeline_sequences(app)
    assert sequences == list(range(sequences[0], sequences[0] + len(sequences))), "the newest events, in order"
    assert sequences[-1] >= EVENTS
    # Earlier events page in on demand, still each once and in order.
    app.testid("timeline-show-earlier").click()
    more = timeline_sequences(app)  # the run goes on after the decision: newer events may have come meanwhile
    assert more[0] < sequences[0] and more[-1] >= sequences[-1] and len(more) > len(sequences)
    assert more == list(range(more[0], more[0] + len(more)))
