"""What the CLI shows of a task is what would run.

* Through the real CLI as separate processes: a tool request whose argument hides a RIGHT-TO-LEFT OVERRIDE is
  printed with ``\\u202e`` in its place, and ``task diff`` lists a written ``conftest.py`` as "changes what runs".
* ``task show`` and ``task diff`` through the method table in this process (the printers are the same over a
  coordinator's socket, see ``test_one_call_path``): the pending request's argument is escaped, the review's
  flags are printed.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.coordinator.tasks.service import TaskService
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.reviews import a_running_task_with_worktree, a_task_awaiting_review
from tests.fixtures.tasks import a_repository
from tests.integration.test_headless_run import cli
from tests.integration.test_task_cli_verbs import DONE, FIX, planned_task, script, turn

DISGUISED = "\u202egnp.exe"  # reads "exe.png" where bidi text is rendered


@pytest.mark.slow
def test_a_bidi_override_argument_is_shown_escaped_and_a_written_conftest_changes_what_runs(tmp_path: Path) -> None:
    conftest = ("write_file", {"path": "calc/conftest.py", "content": "# pytest imports this before the tests\n"})
    disguised = ("run_command", {"argv": ["python3", "-c", "print(1)", DISGUISED]})
    s = script(tmp_path / "s.json", turn("fix", FIX, conftest), turn("look", disguised),
               turn("Every step is done.", DONE))
    _repo, data, task_id = planned_task(tmp_path, s)

    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s))

    assert started.code == 4, started.out + started.err  # run_command is not pre-approved: a recorded denial
    assert "python3 -c 'print(1)' '\\u202egnp.exe'" in started.out, started.out
    assert "\u202e" not in started.out + started.err

    diff = cli(data, "task", "diff", task_id)

    assert diff.code == 0, diff.err
    assert "+# pytest imports this before the tests" in diff.out
    assert "changes what runs: 1 file(s)" in diff.out
    assert "  changes what runs  calc/conftest.py: pytest imports and runs it" in diff.out
    assert "calc/ops.py:" not in diff.out  # the fix itself changes no command


def shown_by_cli(location: DataLocation, *argv: str) -> str:
    """``codeflux ARGV`` in this process, through the method table (the same printers as via a coordinator);
    the shared running lock is held as a coordinator running tasks would hold it, so startup recovery leaves
    the running task alone."""
    out = io.StringIO()
    with shared_running_lock(location):
        code = main(["--data-dir", str(location.directory), *argv], CliContext(stdout=out, stderr=io.StringIO()))
    assert code == 0, out.getvalue()
    return out.getvalue()


def test_show_via_the_coordinator_escapes_a_pending_requests_arguments(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    service = TaskService(db, worktrees_root=tmp_path / "worktrees")
    binding = a_running_task_with_worktree(service, a_repository(tmp_path / "git"), {})
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        pending = driver.submit_tool_request(binding.task_id, "run_command",
                                             {"argv": ["python3", "-c", "print(1)", DISGUISED, "two\nlines"]},
                                             idempotency_key="disguised", source="test")

    shown = shown_by_cli(data_location, "task", "show", binding.task_id.value)

    assert f"waiting      {pending.request_id} run_command" in shown, shown
    # argv travels as JSON text (the newline as JSON's \n), whose backslash the display doubles
    assert "\\u202egnp.exe" in shown and "two\\\\nlines" in shown, shown
    assert "\u202e" not in shown


def test_diff_via_the_coordinator_lists_what_changes_what_runs(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    service = TaskService(db, worktrees_root=tmp_path / "worktrees")
    reviewable = a_task_awaiting_review(service, a_repository(tmp_path / "git"),
                                        {"tests/conftest.py": "import os\n", "pkg/new.py": "X = 1\n"})

    shown = shown_by_cli(data_location, "task", "diff", reviewable.task_id.value)

    assert f"diff identity {reviewable.identity}" in shown
    assert "changes what runs: 1 file(s)" in shown
    assert "  changes what runs  tests/conftest.py: pytest imports and runs it" in shown
    assert "pkg/new.py:" not in shown
