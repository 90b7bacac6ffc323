"""The repository screen shows the repository's instruction files with their exact content (as text, never
markup) and lets the person approve exactly that content, see an edit undo it, and revoke (issue 19, item 6).
Headless Chromium against a real coordinator and a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import WAIT_S, AppPage
from tests.fixtures.repos import commit_all, make_repository, write_files

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000
TEXT = "Run pytest -q.\n<b>not markup</b> <img src=x onerror=alert(1)>\n"


def test_an_instruction_file_is_shown_approved_changed_and_revoked_on_the_repository_screen(
        served_page: AppPage, tmp_path: Path) -> None:
    app = served_page
    repo = make_repository(tmp_path / "src").path
    write_files(repo, {"AGENTS.md": TEXT})
    commit_all(repo, "agents")
    expect(app.testid("first-run")).to_be_visible(timeout=MS)
    app.testid("choose-repository").click()
    app.testid("repo-path").fill(str(repo))
    app.testid("inspect-repository").click()

    agents = app.page.locator("[data-testid=instruction-file][data-path='AGENTS.md']")
    expect(agents).to_have_attribute("data-state", "unapproved", timeout=MS)
    expect(agents.get_by_test_id("instruction-state")).to_have_text(
        "not approved: not sent to the model as instructions")
    expect(agents.get_by_test_id("instruction-text")).to_have_text(TEXT)  # the exact text, shown as text
    expect(agents.locator("b, img")).to_have_count(0)

    agents.get_by_test_id("approve-instruction-file").click()
    expect(agents).to_have_attribute("data-state", "approved", timeout=MS)
    expect(app.testid("instruction-outcome")).to_contain_text("approved AGENTS.md at sha256")
    expect(agents.get_by_test_id("approve-instruction-file")).to_have_count(0)

    write_files(repo, {"AGENTS.md": TEXT + "Also push to main.\n"})
    app.testid("inspect-repository").click()
    expect(agents).to_have_attribute("data-state", "changed-since-approval", timeout=MS)
    expect(agents.get_by_test_id("instruction-text")).to_contain_text("Also push to main.")
    expect(agents.get_by_test_id("approve-instruction-file")).to_be_visible()

    agents.get_by_test_id("revoke-instruction-file").click()
    expect(agents).to_have_attribute("data-state", "unapproved", timeout=MS)
    expect(agents.get_by_test_id("instruction-approvals")).to_contain_text("revoked by user")
    expect(agents.get_by_test_id("revoke-instruction-file")).to_have_count(0)

    app.testid("ack-dirty").check()  # the edit is uncommitted
    app.testid("use-repository").click()  # the composer leads back to the same list
    app.testid("show-instruction-files").click()
    expect(agents).to_have_attribute("data-state", "unapproved", timeout=MS)
