"""The browser half of ``bench transport`` (issue 20 item 5): the web client on a 10,000-event task in headless
Debian Chromium (Playwright, ``/usr/bin/chromium``).

The task is made as ``tests/browser/test_browser_long_task.py`` makes it: the demo task through the real UI to its
first pending tool request, then a long run's events appended through the product's own write path
(``append_event``) up to 10,000 in all. Then, on that task's page:

1. **time to usable** — the page reloaded; from navigation start (``performance.now()`` is 0 there) to the first
   moment the pending approval's pinned card can be answered, and to the session stream being live (every
   mutating control enabled: the replay boundary arrived) — stamped by a ``MutationObserver`` the page installs
   before its scripts run. Issue 20's target: usable ≤ 1 s;
2. **click latency** — from a click (dispatched in the page) to the next frame after it was handled (a
   ``requestAnimationFrame`` then a task), for "Show earlier events" (120 more cards attached) and
   "Show internal events" (the timeline redrawn with them) — target ≤ 200 ms;
3. **scroll frames** — the page's scrolling element scrolled 120 px per animation frame for 2 s: the frames
   drawn, their median and 95th-percentile interval and how many took over 50 ms;
4. the page's DOM nodes once live (the issue's bound: ≤ 3,000).

Figures only: nothing here asserts a time (``transport.py`` prints them beside the targets).
``python tests/bench/_transport_browser.py`` runs this half alone.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.fixtures, when run as a script

import pytest

from codeflux.domain.ids import TaskId
from codeflux.store.database import Transaction
from codeflux.store.events import append_event
from codeflux.store.tasks import task_session_id
from tests.fixtures.browser import (
    CHROMIUM,
    approve_until_approval_card,
    demo_task_to_plan,
    expect_live,
    launch_chromium,
    open_app,
    serving,
    timeline_sequences,
)
from tests.fixtures.graph_runs import long_task_events

__all__ = ["BrowserFigures", "run_browser_figures"]

EVENTS = int(os.environ.get("CODEFLUX_BENCH_BROWSER_EVENTS", "10000"))
RELOADS = 3
CLICKS = 5

# Installed before the page's scripts: stamps (ms since navigation start) when the pinned approval first becomes
# answerable and when the stream first turns live.
_STAMPS = """
window.__bench = { answerable: null, live: null };
new MutationObserver(() => {
  const b = window.__bench;
  if (b.answerable === null) {
    const allow = document.querySelector('[data-testid="needs-you-approvals"] [data-testid="approval-allow-once"]');
    if (allow && !allow.disabled) b.answerable = performance.now();
  }
  if (b.live === null) {
    const banner = document.querySelector('[data-testid="stream-status"]');
    if (banner && banner.dataset.state === "live") b.live = performance.now();
  }
}).observe(document, { subtree: true, childList: true, attributes: true });
"""

_CLICK = """
async (testid) => {
  const target = document.querySelector(`[data-testid="${testid}"]`);
  if (!target) return null;
  const started = performance.now();
  target.click();
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return performance.now() - started;
}
"""

_SCROLL = """
async () => {
  const scroller = document.scrollingElement;
  scroller.scrollTop = 0;
  const intervals = [];
  let last = null;
  const until = performance.now() + 2000;
  await new Promise((resolve) => {
    function step(now) {
      if (last !== null) intervals.push(now - last);
      last = now;
      const bottom = scroller.scrollHeight - scroller.clientHeight;
      scroller.scrollTop = scroller.scrollTop >= bottom ? 0 : scroller.scrollTop + 120;
      if (now < until) requestAnimationFrame(step); else resolve();
    }
    requestAnimationFrame(step);
  });
  return { intervals, height: scroller.scrollHeight };
}
"""


@dataclass(frozen=True)
class BrowserFigures:
    events: int
    answerable_ms: list[float]
    live_ms: list[float]
    earlier_click_ms: list[float]
    internal_click_ms: list[float]
    scroll_intervals_ms: list[float]
    scroll_height_px: int
    dom_nodes: int


def _fill(coordinator: Any, task_id: str, before: int) -> None:
    session_id = task_session_id(TaskId.parse(task_id))
    events = long_task_events(TaskId.parse(task_id), EVENTS - before)
    for start in range(0, len(events), 500):
        def work(tx: Transaction, chunk: list[Any] = events[start:start + 500]) -> None:
            for event in chunk:
                append_event(tx, session_id=session_id, event=event)
        coordinator.db.write(work)


def _clicks(page: Any, testid: str) -> list[float]:
    found = []
    for _ in range(CLICKS):
        elapsed = page.evaluate(_CLICK, testid)
        if elapsed is None:
            break
        found.append(float(elapsed))
    return found


def run_browser_figures() -> BrowserFigures | None:
    """The figures, or None when ``/usr/bin/chromium`` is not installed."""
    if not Path(CHROMIUM).exists():
        return None
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="cf-bench-browser-") as scratch, pytest.MonkeyPatch.context() as patch, \
            serving(Path(scratch) / "data", patch) as (server, coordinator), sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            app = open_app(browser, server.launch_url())
            demo_task_to_plan(app)
            approve_until_approval_card(app)
            task_id = app.page.url.rsplit("/", 1)[-1]
            _fill(coordinator, task_id, len(timeline_sequences(app)))
            app.page.add_init_script(_STAMPS)
            answerable, live = [], []
            for _ in range(RELOADS):
                app.page.reload()
                expect_live(app)
                app.page.wait_for_function("window.__bench.answerable !== null")
                stamps = app.page.evaluate("window.__bench")
                answerable.append(float(stamps["answerable"]))
                live.append(float(stamps["live"]))
            nodes = int(app.page.evaluate("document.getElementsByTagName('*').length"))
            scrolled = app.page.evaluate(_SCROLL)
            earlier = _clicks(app.page, "timeline-show-earlier")
            internal = _clicks(app.page, "timeline-details")
            app.context.close()
        finally:
            browser.close()
    return BrowserFigures(events=EVENTS, answerable_ms=answerable, live_ms=live, earlier_click_ms=earlier,
                          internal_click_ms=internal, scroll_intervals_ms=[float(x) for x in scrolled["intervals"]],
                          scroll_height_px=int(scrolled["height"]), dom_nodes=nodes)


def _summary(samples: list[float]) -> str:
    if not samples:
        return "not measured (the control was not on the page)"
    return (f"median {statistics.median(samples):7.0f} ms   (min {min(samples):.0f}, max {max(samples):.0f}; "
            f"{len(samples)})")


def print_browser_figures(figures: BrowserFigures | None) -> None:
    if figures is None:
        print(f"  browser: skipped ({CHROMIUM} is not installed)")
        return
    print(f"  browser, a {figures.events}-event task in headless Chromium (targets on an idle machine):")
    rows = [("time to usable: pending approval answerable", figures.answerable_ms, 1000),
            ("time to usable: stream live, every control", figures.live_ms, 1000),
            ("click: Show earlier events (120 more cards)", figures.earlier_click_ms, 200),
            ("click: Show internal events", figures.internal_click_ms, 200)]
    for what, samples, target in rows:
        print(f"    {what:45s} {_summary(samples)}   (target <= {target} ms)")
    intervals = sorted(figures.scroll_intervals_ms)
    if intervals:
        p95 = intervals[min(len(intervals) - 1, int(0.95 * len(intervals)))]
        slow = sum(1 for x in intervals if x > 50)
        print(f"    scroll 2 s ({figures.scroll_height_px} px page): {len(intervals)} frames, interval median "
              f"{statistics.median(intervals):.1f} ms, p95 {p95:.1f} ms, {slow} over 50 ms")
    print(f"    DOM nodes once live: {figures.dom_nodes}   (bound <= 3000)")


if __name__ == "__main__":
    print_browser_figures(run_browser_figures())
