"""Reconnect: the server drops the WebSocket mid-stream; the client replays from its last sequence,
mutating controls are disabled until the stream is live again, and no card appears twice."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    approve_until_approval_card,
    demo_task_to_plan,
    expect_live,
    timeline_sequences,
    wait_for,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000

# Records, for every stream state the banner shows, whether each mutating task control was disabled
# at that moment (the banner and the gate are updated in the same task, before observers run).
RECORD_STATES = """() => {
  window.__states = [];
  const observer = new MutationObserver(() => {
    const banner = document.querySelector('[data-testid="stream-status"]');
    if (!banner) return;
    // A pinned decision's buttons ("pinned") are answerable during a task's first replay only, never a reconnect's.
    const controls = [...document.querySelectorAll(
      '[data-mutating][data-scope="task"], [data-mutating][data-scope="pinned"]')];
    const last = window.__states[window.__states.length - 1];
    const entry = { state: banner.dataset.state, controls: controls.length,
                    enabled: controls.filter((c) => !c.disabled).length };
    if (!last || last.state !== entry.state || last.enabled !== entry.enabled) window.__states.push(entry);
  });
  observer.observe(document.body, { subtree: true, childList: true, attributes: true });
}"""


@pytest.fixture
def served(served_coordinator: tuple[Any, Any], served_page: AppPage) -> tuple[Any, AppPage]:
    return served_coordinator[0], served_page


def _drop_and_recover(server: Any, app: AppPage) -> list[dict[str, Any]]:
    before = timeline_sequences(app)
    app.page.evaluate(RECORD_STATES)
    server.drop_connections()
    wait_for(lambda: any(s["state"] != "live" for s in app.page.evaluate("window.__states")),
             what="the client to notice the dropped connection")
    expect_live(app)
    states: list[dict[str, Any]] = app.page.evaluate("window.__states")
    after = timeline_sequences(app)
    assert len(after) == len(set(after)), f"a card appears twice: {after}"
    assert after[: len(before)] == before
    assert after == list(range(1, len(after) + 1)), f"cards are not one per contiguous sequence: {after}"
    return states


def test_a_dropped_socket_replays_without_duplicates_and_gates_controls(served: tuple[Any, AppPage]) -> None:
    server, app = served
    demo_task_to_plan(app)

    states = _drop_and_recover(server, app)
    not_live = [s for s in states if s["state"] != "live"]
    assert not_live, states
    assert all(s["enabled"] == 0 for s in not_live), f"a control was enabled while not live: {states}"
    assert {"reconnecting", "replaying"} & {s["state"] for s in not_live}, states
    expect(app.testid("plan-approve")).to_be_enabled(timeout=MS)

    card = approve_until_approval_card(app)
    states = _drop_and_recover(server, app)
    assert all(s["enabled"] == 0 for s in states if s["state"] != "live"), states
    expect(card.get_by_test_id("approval-allow-once")).to_be_enabled(timeout=MS)
    assert app.page.locator('[data-testid="approval-card"]').count() == 1
    card.get_by_test_id("approval-allow-once").click()
    expect(card.get_by_test_id("approval-outcome")).to_contain_text("allowed-once", timeout=MS)
    assert app.foreign_requests == []
