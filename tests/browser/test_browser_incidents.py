"""The Incidents screen in headless Chromium against a real coordinator, database and git repository: a traceback
pasted twice (other paths and line numbers) is one incident counted twice, another failure is dismissed with a
reason, and a task proposed from the first lands on the draft task's page, which does not start by itself. A
failure a `codeflux watch` tick recorded (source ``watch``, as ``IncidentService/WatchTick`` reports it) is listed
and opens with its occurrence saying it came from the watch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.coordinator.incidents import ReportedRepository, report_incident
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.incidents import IncidentSource
from codeflux.gitwork.repository import open_repository
from codeflux.gitwork.tracked_paths import tracked_paths_at_head
from tests.fixtures.browser import WAIT_S, AppPage
from tests.fixtures.repos import make_repository

pytestmark = [pytest.mark.browser]
MS = WAIT_S * 1000


def traceback(*, prefix: str, line: int, function: str = "add") -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "{prefix}/tests/test_calc.py", line {line + 3}, in test_add\n'
            "    assert add(1, 2) == 3\n"
            f'  File "{prefix}/pkg/calc.py", line {line}, in {function}\n'
            "    return a + b\n"
            f"TypeError: unsupported operand after {line} retries\n")


def test_the_incidents_screen_counts_a_repeated_failure_dismisses_one_and_proposes_a_draft_task(
    served_coordinator: tuple[Any, Any], served_page: AppPage, tmp_path: Path,
) -> None:
    _, coordinator = served_coordinator
    repo = make_repository(tmp_path / "calc").path
    TaskService(coordinator.db, worktrees_root=coordinator.location.worktrees).register_repository(
        open_repository(repo))
    app = served_page
    app.page.goto(f"{app.origin}/incidents")  # the screen's own address (the tab keeps its page key)
    expect(app.testid("incidents-scope")).to_contain_text("does not watch logs", timeout=MS)
    expect(app.testid("incidents-scope")).to_contain_text("branch's HEAD (the last commit) — never on your "
                                                          "uncommitted changes", timeout=MS)
    expect(app.testid("incident-repository")).to_have_value(str(repo), timeout=MS)
    expect(app.testid("incidents-empty")).to_be_visible()

    def report(text: str, expected: str) -> None:
        app.testid("incident-text").fill(text)
        app.testid("incident-report").click()
        expect(app.testid("incident-report-result")).to_contain_text(expected, timeout=MS)

    report(traceback(prefix="/home/dev/calc", line=2), "New incident")
    report(traceback(prefix="/srv/ci/build-77", line=40), "Seen again")
    first = app.page.locator("li[data-testid='incident-item'][data-state='new']")
    expect(first).to_have_count(1, timeout=MS)
    expect(first.get_by_test_id("incident-count")).to_have_text("2 occurrences")
    expect(app.testid("incident-detail").get_by_test_id("incident-occurrence")).to_have_count(2)

    report(traceback(prefix="/home/dev/calc", line=2, function="sub"), "New incident")  # another own frame
    expect(app.testid("incident-item")).to_have_count(2, timeout=MS)
    second = app.testid("incident-detail")
    expect(second.get_by_test_id("incident-facts")).to_contain_text("pkg/calc.py:sub")
    second.get_by_test_id("incident-reason").fill("the flaky CI machine, not our code")
    second.get_by_test_id("incident-dismiss").click()
    expect(app.testid("incident-detail")).to_have_attribute("data-state", "dismissed", timeout=MS)
    expect(app.testid("incident-history")).to_contain_text("dismissed by user: the flaky CI machine, not our code")
    expect(app.testid("incident-final")).to_be_visible()
    expect(app.page.locator("li[data-testid='incident-item'][data-state='dismissed']")).to_have_count(1, timeout=MS)

    first.get_by_test_id("incident-show").click()
    detail = app.testid("incident-detail")
    expect(detail).to_have_attribute("data-state", "new", timeout=MS)
    detail.get_by_test_id("incident-check").fill("python -m pytest tests/test_calc.py")
    detail.get_by_test_id("incident-propose").click()
    expect(app.testid("incident-detail")).to_have_attribute("data-state", "task-proposed", timeout=MS)
    link = app.testid("incident-proposed-task")
    task_id = link.get_attribute("data-task-id")
    assert task_id and task_id.startswith("tsk_")
    expect(app.testid("incident-task-link")).to_have_attribute("data-task-id", task_id)
    link.click()
    expect(app.page).to_have_url(re.compile(rf"/tasks/{task_id}$"), timeout=MS)
    expect(app.testid("task-state")).to_have_attribute("data-state", "draft", timeout=MS)
    app.page.wait_for_timeout(500)  # it must not start by itself
    expect(app.testid("task-state")).to_have_attribute("data-state", "draft")

    # a watch tick's failure (what WatchTick records after the check command failed) shows beside the others
    snapshot = open_repository(repo)
    watched = report_incident(
        coordinator.db, snapshot=ReportedRepository(root=snapshot.root, identity=snapshot.identity,
                                                    root_commits=tuple(snapshot.root_commits)),
        repository_files=tracked_paths_at_head(snapshot.root), source=IncidentSource.WATCH, idempotency_key="tick-1",
        text=traceback(prefix="/tmp/watch/tree", line=5, function="mul").replace("TypeError", "ValueError"))
    app.page.goto(f"{app.origin}/incidents")
    item = app.page.locator(f"li[data-testid='incident-item'][data-incident-id='{watched.incident.incident_id.value}']")
    expect(item.get_by_test_id("incident-summary")).to_contain_text("ValueError", timeout=MS)
    expect(app.testid("incident-item")).to_have_count(3)
    item.get_by_test_id("incident-show").click()
    opened = app.testid("incident-detail")
    expect(opened).to_have_attribute("data-state", "new", timeout=MS)
    expect(opened.get_by_test_id("incident-facts")).to_contain_text("pkg/calc.py:mul")
    expect(opened.get_by_test_id("incident-occurrence")).to_contain_text("from watch (shown as stored: redacted)")
    assert app.foreign_requests == [] and app.console_errors == []
