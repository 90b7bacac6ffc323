"""Getting back in (issue 20, item 1): a task has its own address, so reload and back land on it and a
second tab that redeems a new link comes back to it, and so does a tab of its own given the link `codeflux
open --task` prints; a tab whose session ended says which command gets a new link."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import WAIT_S, AppPage, demo_task_to_plan, failure_screenshot, task_state

pytestmark = [pytest.mark.browser]
MS = WAIT_S * 1000
TASK_URL = re.compile(r"/tasks/(tsk_[A-Za-z0-9_-]+)$")


def test_a_task_keeps_its_address_and_an_ended_session_names_the_command(
    served_page: AppPage, served_coordinator: tuple[Any, Any], request: pytest.FixtureRequest
) -> None:
    server, _ = served_coordinator
    app, page = served_page, served_page.page
    demo_task_to_plan(app)  # opening a task gives it its address
    expect(page).to_have_url(TASK_URL, timeout=MS)
    task_url = page.url
    task_id = task_url.rsplit("/", 1)[1]
    # the list's status word follows the task (never stale): wait for it before taking the line as the reference
    expect(app.testid("task-item").first).to_have_attribute("data-state", "awaiting-plan-approval", timeout=MS)
    title = app.testid("task-item").first.inner_text()

    page.reload()  # reload lands on the task, not on the new-task form
    expect(page).to_have_url(task_url, timeout=MS)
    task_state(app, "awaiting-plan-approval")
    expect(app.testid("plan-card")).to_be_visible(timeout=MS)
    expect(app.testid("composer")).to_have_count(0, timeout=MS)

    app.testid("new-task").click()  # the composer is "/"; back returns to the task
    expect(page).to_have_url(f"{app.origin}/", timeout=MS)
    expect(app.testid("composer")).to_be_visible(timeout=MS)
    page.go_back()
    expect(page).to_have_url(task_url, timeout=MS)
    task_state(app, "awaiting-plan-approval")
    page.go_forward()
    expect(app.testid("composer")).to_be_visible(timeout=MS)
    page.go_back()
    task_state(app, "awaiting-plan-approval")

    second = app.context.new_page()  # same profile: the cookie, not the first tab's page key
    with failure_screenshot(request, lambda: [page, second]):
        second.goto(task_url)
        notice = second.get_by_test_id("needs-launch-link")
        expect(notice).to_contain_text(f"`codeflux open --task {task_id}`", timeout=MS)
        second.goto(server.launch_url())  # the new link, opened in that tab, comes back to the task
        expect(second).to_have_url(task_url, timeout=MS)
        expect(second.get_by_test_id("task-state")).to_have_attribute("data-state", "awaiting-plan-approval",
                                                                     timeout=MS)
        expect(second.get_by_test_id("task-item").first).to_have_text(title, timeout=MS)
        expect(app.testid("session-ended")).to_have_count(0)  # positive control: nothing ended yet

        # A tab of its own (a bookmark, a browser that opens links in a new tab): the link `codeflux open --task`
        # prints (SessionService/IssueLaunchLink with the task, tests/integration/test_launch_link_rpc.py) lands
        # on the task although this tab never was there.
        third = app.context.new_page()
        third.goto(f"{server.launch_url()}&to=%2Ftasks%2F{task_id}")
        expect(third).to_have_url(task_url, timeout=MS)
        expect(third.get_by_test_id("task-state")).to_have_attribute("data-state", "awaiting-plan-approval",
                                                                    timeout=MS)
        third.close()
        second.close()
        server.stop()  # the coordinator stops: the tab says exactly which command gets a new link
        ended = app.testid("session-ended")
        expect(ended).to_be_visible(timeout=MS)
        expect(ended).to_contain_text(f"`codeflux open --task {task_id}`", timeout=MS)
        expect(ended).to_contain_text("`codeflux start` if it does not run")
        expect(app.testid("connection")).to_have_text("coordinator: not connected", timeout=MS)
    assert app.foreign_requests == []
