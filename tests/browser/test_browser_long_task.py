"""A long task (issue 20 item 5): 10,000 events, written through the product's own write path after a real pending
tool request. The pending approval is answerable before the replay ends — its card is made from the TaskView fetched
as the task opens (the pinned decision is fetched live), not from the replayed `tool-requested` event, whose own
card only holds its place; the page keeps at most 3,000 DOM nodes (the newest cards, "Show earlier events" for the
rest) and reads a tool result only for a result card on the page (≤ 2 calls a shown row). Every event is recorded, but
a card is drawn only when it is shown: the page's heap holds no card for the thousands of events never shown, and a
card drawn on demand from the records ("Show earlier events") reads as one drawn as its events arrived."""

from __future__ import annotations

import re
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
from tests.fixtures.graph_runs import long_task_events, long_task_turn

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
EVENTS = 10_000
MAX_NODES = 3_000
WINDOW = 120  # the cards the timeline attaches at once (timeline.js WINDOW)

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


def _fill(app: AppPage, coordinator: Any) -> str:
    """A long run's events (model calls, messages, commands with output and results, stage verdicts) after the open
    task's pending request, through the product's own write path, up to 10,000 in all; returns the session id."""
    task_id = TaskId.parse(app.page.url.rsplit("/", 1)[-1])
    session_id = task_session_id(task_id)
    events = long_task_events(task_id, EVENTS - len(timeline_sequences(app)))
    for start in range(0, len(events), 500):
        def work(tx: Transaction, chunk: list[Any] = events[start:start + 500]) -> None:
            for event in chunk:
                append_event(tx, session_id=session_id, event=event)
        coordinator.db.write(work)
    return session_id


def test_a_pending_approval_is_answerable_before_a_long_replay_ends(
        served_coordinator: tuple[Any, Any], served_page: AppPage) -> None:
    _, coordinator = served_coordinator
    app = served_page
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)
    request_id = card.get_attribute("data-request-id")
    _fill(app, coordinator)

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


def _drawn_cards(app: AppPage) -> int:
    """Every event card the page has made — on the page or not (kept by the timeline) — counted in Chromium's heap
    after a garbage collection: the ``li`` elements with a sequence."""
    cdp = app.page.context.new_cdp_session(app.page)
    try:
        cdp.send("HeapProfiler.collectGarbage")
        prototype = cdp.send("Runtime.evaluate", {"expression": "HTMLLIElement.prototype"})["result"]["objectId"]
        found = cdp.send("Runtime.queryObjects", {"prototypeObjectId": prototype})["objects"]["objectId"]
        count = "function () { return this.filter((n) => n.dataset.seq !== undefined).length; }"
        counted = cdp.send("Runtime.callFunctionOn",
                           {"objectId": found, "returnByValue": True, "functionDeclaration": count})
        return int(counted["result"]["value"])
    finally:
        cdp.detach()


def _words(text: str) -> str:
    """A card's words, its numbers and ids aside (sequences, times and ids differ between two turns)."""
    return re.sub(r"\d+", "N", re.sub(r"[0-9a-f]{32}", "H", text))


def _turn_cards(app: AppPage, request_id: str) -> list[str]:
    """The words of a tool turn's cards — its approval card (the tool's row: the decision, the live output replaced
    by the final pointer, the result) and the cards of its decision, execution, output and end — in timeline order."""
    cards = app.page.eval_on_selector_all(
        "[data-testid=timeline] > [data-seq]",
        """(cards, id) => {
          const at = cards.findIndex((c) => c.dataset.requestId === id);
          return at < 0 ? [] : cards.slice(at, at + 6).map((c) => [c.dataset.kind, c.textContent]);
        }""", request_id)
    return [f"{kind}: {_words(text)}" for kind, text in cards]


def test_a_long_task_draws_only_the_cards_it_shows_and_earlier_ones_alike(
        served_coordinator: tuple[Any, Any], served_page: AppPage) -> None:
    _, coordinator = served_coordinator
    app = served_page
    demo_task_to_plan(app)
    approve_until_approval_card(app)
    session_id = _fill(app, coordinator)
    app.page.reload()
    expect_live(app)
    # Recorded, not drawn: the cards made are the ones attached (the newest WINDOW and the pinned approval) and those
    # a replay batch attached until the next one came — not one per event (10,000 before the record/draw split).
    attached = app.page.locator("li[data-seq]").count()
    drawn = _drawn_cards(app)
    assert attached <= WINDOW + 2 and drawn <= 8 * WINDOW, (attached, drawn)

    # Two turns more, committed one event at a time while the page is live: their cards are drawn as they arrive
    # (a tool row first, its output and result filled in as they come).
    first = 10 ** 6
    for n in (first, first + 1):
        for event in long_task_turn(n):
            coordinator.db.write(lambda tx, event=event: append_event(tx, session_id=session_id, event=event))
    live_request = f"treq_{first + 1:032x}"
    row = app.testid("timeline").locator(f'[data-request-id="{live_request}"]')
    expect(row.get_by_test_id("tool-live-replaced")).to_be_visible(timeout=MS)
    arrived = _turn_cards(app, live_request)
    assert len(arrived) == 6, arrived

    # Earlier events, drawn on demand from the records, read as the ones drawn as their events arrived.
    before = timeline_sequences(app)[0]
    drawn = _drawn_cards(app)
    app.testid("timeline-show-earlier").click()
    # drawn now, but for the few the replay's last batch drew before the live turns pushed them out of the window
    assert WINDOW // 2 <= _drawn_cards(app) - drawn <= WINDOW
    earlier = app.page.eval_on_selector_all(
        "[data-testid=timeline] > [data-kind=tool-requested]", "(cards, below) => cards.filter("
        "(c) => Number(c.dataset.seq) < below).map((c) => c.dataset.requestId)", before)
    assert earlier, "a tool turn among the earlier events"
    on_demand = _turn_cards(app, earlier[-2])
    assert on_demand == arrived
