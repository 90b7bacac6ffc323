"""The execution graph in headless Chromium (issue 19 item 8): the demo task, run headless and accepted with the
real CLI, opened in the browser; "Execution graph" draws it (dagre's layout, our SVG) with the disclaimer visible,
a node selected shows its kind, sequence and summary, nothing is fetched from elsewhere and the page's CSP holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.domain.execution_graph import graph_document
from codeflux.domain.ids import TaskId
from codeflux.services.graph import task_graph
from tests.fixtures.browser import WAIT_S, serving, watched_page
from tests.fixtures.demo_task import accepted_demo_task

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000


def test_the_demo_tasks_graph_renders_with_the_disclaimer(chromium: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         request: pytest.FixtureRequest) -> None:
    demo = accepted_demo_task(tmp_path)
    with (serving(demo.data, monkeypatch) as (server, served),
          watched_page(chromium, server.launch_url(), request) as app):
        document = graph_document(task_graph(served, TaskId.parse(demo.task_id)))
        csp: list[str] = []

        def policy(response: Any) -> None:
            if response.request.resource_type == "document" or response.url.endswith("/vendor/dagre.esm.js"):
                csp.append(response.headers.get("content-security-policy", ""))

        app.page.on("response", policy)
        app.page.reload()
        app.page.locator(f'[data-testid="task-item"][data-task-id="{demo.task_id}"]').click()
        app.testid("open-graph").click()
        drawer = app.testid("graph-drawer")
        expect(drawer).to_be_visible(timeout=MS)
        expect(drawer.get_by_test_id("graph-disclaimer")).to_be_visible()
        expect(drawer.get_by_test_id("graph-disclaimer")).to_contain_text(
            "an explanation of what happened, not evidence that it is right")
        nodes = drawer.get_by_test_id("graph-node")
        expect(nodes).to_have_count(len(document["nodes"]), timeout=MS)
        assert drawer.locator(".graph-edge").count() == len(document["edges"])
        # dagre placed every node: distinct positions inside the drawing
        spots = app.page.eval_on_selector_all('[data-testid="graph-node"]',
                                              "ns => ns.map(n => n.getAttribute('transform'))")
        assert len(set(spots)) == len(spots)
        box = drawer.get_by_test_id("graph-svg").bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100
        # select the plan revision: its details, in words
        plan = drawer.locator('[data-testid="graph-node"][data-node-id="plan:r1"]')
        plan.click()
        details = drawer.get_by_test_id("graph-details")
        expect(details.get_by_test_id("graph-detail-kind")).to_have_text("plan-revision")
        expected = next(node for node in document["nodes"] if node["id"] == "plan:r1")
        expect(details.get_by_test_id("graph-detail-sequence")).to_contain_text(f"event #{expected['sequence']}")
        expect(details.get_by_test_id("graph-detail-summary")).to_have_text(expected["summary"])
        # and by keyboard: the landing
        landed = next(node for node in document["nodes"] if node["label"].startswith("landed on"))
        target = drawer.locator(f'[data-testid="graph-node"][data-node-id="{landed["id"]}"]')
        target.focus()
        app.page.keyboard.press("Enter")
        expect(details.get_by_test_id("graph-detail-kind")).to_have_text("delivery")
        expect(drawer.get_by_test_id("graph-not-shown")).to_contain_text("tool-output")
        render_ms = drawer.get_attribute("data-render-ms")
        print(f"graph drawer: {len(document['nodes'])} nodes laid out and drawn in {render_ms} ms")
        assert app.foreign_requests == []
        assert app.console_errors == []
        assert csp and all("script-src 'self';" in header and "unsafe" not in header for header in csp)
