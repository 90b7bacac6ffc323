"""Tool activity and stale revisions in headless Chromium against a real coordinator (scripted provider,
real git, real workers).

* A finished tool card reads the committed result (GetToolActivity): state in words, the exit code or "no
  exit code (file tool)", stdout / stderr; after a dropped socket and after a page reload (full replay)
  every event still has exactly one card.
* Live output: ``tool-output`` events committed to the task's journal (the kind a streaming worker will
  write; the test appends them with the store's own ``append_event``) show in the request's tool card as
  "live output (streamed, not final)", once each even across a reconnect, and are replaced by the final
  result when the tool finishes.
* A mutation sent with a revision the task no longer has (the test rewrites the browser's outgoing frame
  with ``page.route_web_socket``, as if the person had looked at an older task) is refused by the
  coordinator; the page says the task changed, re-reads it, and the next click works.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.domain.events import ToolOutput
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.services.tool_activity import tool_activity
from codeflux.services.views import task_view
from codeflux.store.events import append_event
from tests.fixtures.browser import (
    WAIT_S,
    AppPage,
    approve_until_approval_card,
    demo_task_to_plan,
    expect_live,
    task_state,
    timeline_sequences,
    wait_for,
    watched_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000


@pytest.fixture
def coordinator(served_coordinator: tuple[Any, Any]) -> tuple[Any, Any]:
    return served_coordinator


@pytest.fixture
def app(served_page: AppPage) -> AppPage:
    return served_page


def finished_card(app: AppPage, request_id: str) -> Any:
    """The tool call's own row, which holds its result once it finished (its finished event's card is internal)."""
    return app.testid("timeline").locator(f'li:has([data-testid="tool-result"][data-request-id="{request_id}"])')


def opened_result(row: Any) -> Any:
    """Expand the row's result (read from the coordinator only then) and return it."""
    row.get_by_test_id("tool-result-details").locator("summary").click()
    return row.get_by_test_id("tool-activity")


def selected_task_id(app: AppPage) -> str:
    return str(app.page.locator('[data-testid="task-item"][aria-current="true"]').get_attribute("data-task-id"))


def drop_and_wait_until_live(server: Any, app: AppPage) -> None:
    """The server drops the socket; wait until the page noticed (stream not live) and is live again."""
    app.page.evaluate("""() => {
      window.__dropped = false;
      new MutationObserver(() => {
        const banner = document.querySelector('[data-testid="stream-status"]');
        if (banner && banner.dataset.state !== "live") window.__dropped = true;
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    }""")
    server.drop_connections()
    wait_for(lambda: app.page.evaluate("window.__dropped"), what="the page to notice the dropped socket")
    expect_live(app)


def assert_one_card_per_sequence(app: AppPage) -> None:
    sequences = timeline_sequences(app)
    assert sequences == list(range(1, len(sequences) + 1)), f"not one card per contiguous sequence: {sequences}"


def test_finished_cards_show_the_committed_result_also_after_reconnect_and_reload(
        app: AppPage, coordinator: tuple[Any, Any]) -> None:
    server, coordinator_app = coordinator
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)
    request_id = str(card.get_attribute("data-request-id"))
    task_id = selected_task_id(app)

    edit = app.testid("timeline").locator('li:has([data-testid="tool-result"])').first
    expect(edit.get_by_test_id("tool-call-outcome")).to_contain_text("succeeded", timeout=MS)
    expect(edit.get_by_test_id("tool-activity")).to_have_count(0)  # collapsed: not read yet
    expect(opened_result(edit)).to_have_attribute("data-state", "succeeded", timeout=MS)
    expect(edit.get_by_test_id("tool-call-summary")).to_contain_text("calc/ops.py")  # the file by name
    expect(edit.get_by_test_id("tool-facts")).to_contain_text("no exit code (file tool)")
    expect(edit.get_by_test_id("tool-facts")).to_contain_text("edit_file")

    card.get_by_test_id("approval-allow-once").click()
    expect(finished_card(app, request_id).get_by_test_id("tool-call-outcome")).to_contain_text("exit code 0",
                                                                                           timeout=MS)
    activity = opened_result(finished_card(app, request_id))
    expect(activity).to_have_attribute("data-state", "succeeded", timeout=MS)
    expect(activity.get_by_test_id("tool-state")).to_contain_text("Final result (committed)")
    expect(activity.get_by_test_id("tool-state")).to_contain_text("succeeded")
    expect(activity.get_by_test_id("tool-facts")).to_contain_text("exit code 0")
    expect(activity.get_by_test_id("tool-facts")).to_contain_text("bubblewrap — confined (bubblewrap): no network")
    expect(activity.get_by_test_id("tool-stdout")).to_contain_text("passed")
    expect(activity.get_by_test_id("tool-stderr")).to_be_visible()
    expect(activity.get_by_test_id("truncated-stdout")).to_have_count(0)
    stored = tool_activity(coordinator_app, TaskId.parse(task_id), request_id)
    assert activity.get_by_test_id("tool-stdout").text_content() == stored.stdout

    drop_and_wait_until_live(server, app)
    assert_one_card_per_sequence(app)
    expect(finished_card(app, request_id)).to_have_count(1)

    app.page.reload()
    app.page.locator(f'[data-testid="task-item"][data-task-id="{task_id}"]').click()
    expect_live(app)
    activity = opened_result(finished_card(app, request_id))
    expect(activity).to_have_attribute("data-state", "succeeded", timeout=MS)
    expect(activity.get_by_test_id("tool-stdout")).to_contain_text("passed")
    assert_one_card_per_sequence(app)
    assert app.foreign_requests == []


def test_live_output_shows_in_the_tool_card_until_the_final_result_replaces_it(
        app: AppPage, coordinator: tuple[Any, Any]) -> None:
    server, coordinator_app = coordinator
    demo_task_to_plan(app)
    card = approve_until_approval_card(app)
    request_id = str(card.get_attribute("data-request-id"))
    session_id = task_view(coordinator_app, TaskId.parse(selected_task_id(app))).session_id

    def emit(stream: str, text: str, offset: int) -> None:
        chunk = ToolOutput(request_id=ToolRequestId.parse(request_id), execution_id="exe_streamed", stream=stream,
                           text=text, offset=offset)
        coordinator_app.db.write(lambda tx: append_event(tx, session_id=session_id, event=chunk))

    emit("stdout", "collecting ...\n", 0)
    emit("stdout", "1 passed\n", 15)
    emit("stderr", "a warning\n", 0)
    live = card.get_by_test_id("tool-live-output")
    expect(live).to_contain_text("Live output (streamed, not final)", timeout=MS)
    expect(live.get_by_test_id("tool-live-stdout")).to_have_text("collecting ...\n1 passed\n", timeout=MS)
    expect(live.get_by_test_id("tool-live-stderr")).to_have_text("a warning\n")
    chunks = app.page.locator('[data-kind="tool-output"]')
    expect(chunks).to_have_count(3)
    expect(chunks.first).to_contain_text("shown in the request's tool card")

    drop_and_wait_until_live(server, app)
    expect(chunks).to_have_count(3)
    expect(app.page.get_by_test_id("tool-live-stdout")).to_have_text("collecting ...\n1 passed\n")
    assert_one_card_per_sequence(app)

    expect(card.get_by_test_id("approval-allow-once")).to_be_enabled(timeout=MS)
    card.get_by_test_id("approval-allow-once").click()
    expect(opened_result(finished_card(app, request_id))).to_have_attribute("data-state", "succeeded", timeout=MS)
    expect(finished_card(app, request_id).get_by_test_id("tool-live-output")).to_have_count(0)
    replaced = finished_card(app, request_id).get_by_test_id("tool-live-replaced")  # in the call's own row
    expect(replaced).to_have_count(1)
    expect(replaced).to_contain_text("Final (committed)", timeout=MS)
    expect(replaced).to_contain_text("exit code 0")

    emit("stdout", "late\n", 24)
    expect(chunks.last).to_contain_text("arrived after the final result", timeout=MS)
    expect(finished_card(app, request_id).get_by_test_id("tool-live-output")).to_have_count(0)
    assert_one_card_per_sequence(app)
    assert app.foreign_requests == []


def test_a_stale_revision_is_refused_and_the_task_is_reloaded(chromium: Any, coordinator: tuple[Any, Any],
                                                              request: pytest.FixtureRequest) -> None:
    server, _ = coordinator
    rewritten: list[str] = []

    def stale_first_approval(page: Any) -> None:
        def route(ws: Any) -> None:
            upstream = ws.connect_to_server()

            def from_page(message: str | bytes) -> None:
                if isinstance(message, str) and not rewritten and "/codeflux.v1.TaskService/ApprovePlan" in message:
                    frame = json.loads(message)
                    control = frame["call"]["request"]["control"]
                    rewritten.append(control.get("expectedRevision", ""))
                    control["expectedRevision"] = "1"  # the person saw the task at its first revision
                    message = json.dumps(frame)
                upstream.send(message)

            ws.on_message(from_page)

        page.route_web_socket(re.compile(r".*/ws$"), route)

    with watched_page(chromium, server.launch_url(), request, prepare=stale_first_approval) as app:
        demo_task_to_plan(app)
        app.testid("plan-approve").click()
        expect(app.testid("stale-revision")).to_contain_text(
            re.compile("this task changed since you looked; reloaded", re.IGNORECASE), timeout=MS)
        assert rewritten and rewritten[0] not in ("", "1"), "the client sends the revision it shows"
        task_state(app, "awaiting-plan-approval")
        expect(app.testid("plan-card")).to_have_attribute("data-decision", "undecided")

        approve_until_approval_card(app)  # the next click carries the current revision and works
        assert len(rewritten) == 1
        assert app.foreign_requests == []
