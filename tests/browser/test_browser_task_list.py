"""The task list at scale in headless Chromium (issue 20, item 5): 1,001 tasks created through the task service's
write path; the list shows the newest page first, "Older tasks…" pages down to the oldest task (which opens), and
"Find a task" reaches the 1,000th task by its id or its words from the store while only the first page is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.coordinator.tasks.service import TaskService
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.browser import WAIT_S, serving, watched_page
from tests.fixtures.tasks import a_repository, keys

pytestmark = [pytest.mark.browser]
MS = WAIT_S * 1000
TASKS = 1001
PAGE = 50  # task_list.js


def create_tasks(root: Path, count: int) -> list[str]:
    """``count`` draft tasks, oldest first (their ids), as ``CreateTask`` records them."""
    location = DataLocation(directory=root / "data")
    db = open_store(location, create=True, migrate=True)
    try:
        tasks = TaskService(db, worktrees_root=location.worktrees)
        snapshot = a_repository(root / "repo")
        return [tasks.create_task(snapshot, f"Requirement of task {n}: make item-{n}-ready work", title=f"Task {n}",
                                  idempotency_key=keys()).task_id.value for n in range(1, count + 1)]
    finally:
        db.close()


def shown_ids(app: Any) -> list[str]:
    return list(app.page.eval_on_selector_all('[data-testid="task-item"]', "items => items.map(i => i.dataset.taskId)"))


def test_1001_tasks_page_newest_first_to_the_oldest_and_a_search_finds_the_1000th(
    chromium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    created = create_tasks(tmp_path, TASKS)
    newest_first = list(reversed(created))
    with (serving(tmp_path / "data", monkeypatch) as (server, _),
          watched_page(chromium, server.launch_url(), request) as app):
        items = app.testid("task-item")
        expect(items).to_have_count(PAGE, timeout=MS)
        assert shown_ids(app) == newest_first[:PAGE]
        expect(app.testid("task-list-status")).to_have_text(f"Newest {PAGE} tasks; older tasks follow.")

        # find the 1,000th task (Task 2), which no loaded page holds: the search asks the store
        thousandth = newest_first[999]
        assert thousandth not in shown_ids(app)
        search = app.testid("task-search")
        search.fill(thousandth)
        expect(items).to_have_count(1, timeout=MS)
        assert shown_ids(app) == [thousandth]
        search.fill("ITEM-2 requirement")  # words, any case: item-2, item-20…29 and item-200…299 match
        expect(items).to_have_count(PAGE, timeout=MS)
        expect(app.testid("task-list-status")).to_have_text(
            f"{PAGE} tasks matching “ITEM-2 requirement”, newest first; older matches follow.", timeout=MS)
        app.testid("older-tasks").click()
        expect(items).to_have_count(2 * PAGE, timeout=MS)
        app.testid("older-tasks").click()
        expect(items).to_have_count(111, timeout=MS)
        expect(app.testid("older-tasks")).to_have_count(0)
        search.fill("requirement item-2-ready")
        expect(items).to_have_count(1, timeout=MS)
        expect(items.first).to_contain_text("Task 2")
        items.first.click()
        expect(app.page).to_have_url(f"{app.origin}/tasks/{thousandth}", timeout=MS)
        expect(app.testid("task-state")).to_have_attribute("data-state", "draft", timeout=MS)
        search.fill("nothing-has-these-words")
        expect(app.testid("task-list-status")).to_have_text("No task matches “nothing-has-these-words”.", timeout=MS)
        expect(items).to_have_count(0)

        # back to every task: "Older tasks…" pages to the oldest, each task exactly once, newest first
        search.fill("")
        expect(items).to_have_count(PAGE, timeout=MS)
        for page in range(2, (TASKS + PAGE - 1) // PAGE + 1):
            app.testid("older-tasks").click()
            expect(items).to_have_count(min(page * PAGE, TASKS), timeout=MS)
        expect(app.testid("older-tasks")).to_have_count(0)
        assert shown_ids(app) == newest_first
        expect(app.testid("task-list-status")).to_have_text(f"{TASKS} tasks, newest first.")
        items.last.click()
        expect(app.page).to_have_url(f"{app.origin}/tasks/{created[0]}", timeout=MS)
        expect(app.testid("task-title")).to_have_count(0)  # the task view, not the composer
        expect(items.last).to_have_attribute("aria-current", "true", timeout=MS)
        assert not app.foreign_requests and not app.console_errors
