"""The browser's Recovery screen lists the interrupted accepts startup recovery resolved (issue 16 item 1): an
accept killed part-way (an in-process fault at the durable step after the files were written, against a real
repository and SQLite file), then a coordinator whose startup recovery rolls it back; the screen says so in
words, read from the accept journal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.gitwork.landing import LandingFault
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.browser import WAIT_S, serving, watched_page
from tests.fixtures.reviews import a_task_awaiting_review
from tests.fixtures.tasks import a_repository
from tests.integration.test_accept_journal import FIX, Killed, failing_at

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MS = WAIT_S * 1000


def test_the_recovery_screen_lists_an_accept_startup_recovery_rolled_back(
        chromium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    location = DataLocation(directory=tmp_path / "data")
    db = open_store(location, create=True, migrate=True)
    try:
        reviewable = a_task_awaiting_review(TaskService(db, worktrees_root=location.worktrees),
                                            a_repository(tmp_path / "git"), FIX)
        with pytest.raises(Killed):
            ReviewService(db, landing_fault=failing_at(LandingFault.FILES_WRITTEN, Killed())).accept_task(
                reviewable.task_id, reviewed_identity=reviewable.identity)
    finally:
        db.close()

    with serving(location.directory, monkeypatch) as (server, _app), \
            watched_page(chromium, server.launch_url(), request) as app:  # its startup recovery rolls it back
        app.testid("nav-recovery").click()
        landings = app.testid("recovery-landings")
        expect(landings).to_be_visible(timeout=MS)
        expect(landings).to_contain_text("Landings recovery resolved")
        expect(landings.get_by_test_id("recovery-landing")).to_have_text(re.compile(
            rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC — task {reviewable.task_id}: rolled back by startup recovery: "
            r"main stays at [0-9a-f]{12}, the checkout as before \(why: codeflux stopped during the accept\)$"))
        assert app.foreign_requests == []
