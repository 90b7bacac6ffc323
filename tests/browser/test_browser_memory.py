"""The Memory screen in headless Chromium against a real coordinator, database and git repository: entries with
their verdicts in words, a changed source file turning a verdict to "not usable (source-changed)", provenance, and
a person's invalidation with a reason quarantining a derived entry and flagging an influenced one, which a person
then keeps with a reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.memory import MemoryKind
from codeflux.gitwork.repository import open_repository
from codeflux.memory.learn import learn, learn_file_test_map, learn_repository_fact
from tests.fixtures.browser import WAIT_S, AppPage
from tests.fixtures.repos import make_repository, write_files

pytestmark = [pytest.mark.browser]
MS = WAIT_S * 1000


def test_the_memory_screen_shows_verdicts_and_provenance_and_a_person_invalidates_with_a_reason(
    served_coordinator: tuple[Any, Any], served_page: AppPage, tmp_path: Path,
) -> None:
    _, coordinator = served_coordinator
    repo = make_repository(tmp_path / "learned").path
    TaskService(coordinator.db, worktrees_root=coordinator.location.worktrees).register_repository(
        open_repository(repo))
    mapping = learn_file_test_map(coordinator.db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"])
    derived = learn_repository_fact(coordinator.db, root=repo, topic="test-command", fact="pytest tests/test_calc.py",
                                    derived_from=[mapping.entry_id])
    influenced = learn(coordinator.db, root=repo, kind=MemoryKind.CONVENTION, text="convention: tests beside code",
                       body={}, influenced_by=[mapping.entry_id])
    app = served_page

    app.testid("nav-memory").click()
    entries = app.testid("memory-entry")
    expect(entries).to_have_count(3, timeout=MS)
    row = app.page.locator(f"[data-entry-id='{mapping.entry_id.value}']")
    expect(row.get_by_test_id("memory-verdict")).to_contain_text("usable (applicable)")  # positive control

    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    app.testid("memory-search").click()
    expect(row.get_by_test_id("memory-verdict")).to_contain_text("not usable (source-changed): pkg/calc.py changed",
                                                                 timeout=MS)
    row.get_by_test_id("memory-show").click()
    detail = app.testid("memory-detail")
    expect(detail.get_by_test_id("memory-edges")).to_contain_text(f"{derived.entry_id.value} (active) is derived-from",
                                                                  timeout=MS)
    expect(detail.get_by_test_id("memory-sources")).to_contain_text("pkg/calc.py @")

    detail.get_by_test_id("memory-reason").fill("calc.py was rewritten")
    detail.get_by_test_id("memory-invalidate").click()

    expect(app.testid("memory-invalidation-result")).to_contain_text("1 entry derived from it; 1 flagged for review",
                                                                     timeout=MS)
    expect(app.testid("memory-detail")).to_have_attribute("data-state", "quarantined", timeout=MS)
    expect(app.testid("memory-final")).to_be_visible()
    expect(app.testid("memory-detail").get_by_test_id("memory-history")).to_contain_text("calc.py was rewritten")
    expect(app.page.locator(f"[data-entry-id='{derived.entry_id.value}'][data-state='quarantined']")).to_have_count(1)
    expect(app.page.locator(f"[data-entry-id='{influenced.entry_id.value}'][data-state='needs-review']")).to_have_count(1)

    # The flagged entry has a way out: a person keeps it with a reason (it is still checked at every use).
    flagged = app.page.locator(f"li[data-entry-id='{influenced.entry_id.value}']")
    flagged.get_by_test_id("memory-show").click()
    expect(app.testid("memory-detail")).to_have_attribute("data-state", "needs-review", timeout=MS)
    app.testid("memory-detail").get_by_test_id("memory-reason").fill("still how this repository is laid out")
    app.testid("memory-detail").get_by_test_id("memory-confirm").click()
    expect(app.testid("memory-confirm-result")).to_contain_text(f"Kept {influenced.entry_id.value}", timeout=MS)
    expect(app.testid("memory-detail")).to_have_attribute("data-state", "active", timeout=MS)
    expect(app.testid("memory-detail").get_by_test_id("memory-history")).to_contain_text(
        "active (person): still how this repository is laid out")
    expect(app.testid("memory-review")).to_have_count(0)
