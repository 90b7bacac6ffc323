"""``codeflux watch`` as a person runs it (the real CLI process, in-process channel), on the demo repository with
real workers in the real box: the demo's test command, allowed for the repository by a person in a task, is run
on the branch's HEAD each tick; the fix reverted by hand → ticks failing the same way make one incident counting
every tick and exactly one draft task whose requirement carries the failing test and the command as its example.
Without the repository approval nothing runs (exit 4, naming how to grant it); ``--auto-plan`` without ``--budget``
is a usage error."""

from __future__ import annotations

import io
import itertools
import re
import shlex
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from codeflux.coordinator.demo import DEMO_TEST_COMMAND, create_sample_repository
from codeflux.coordinator.incidents import list_incidents, show_incident
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.incidents import IncidentSource, IncidentState
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import commit_all, git
from tests.fixtures.reviews import a_running_task_with_worktree, move

_keys = itertools.count(1)
_FIXED = ('"""Small arithmetic helpers."""\n\n\ndef add(a: int, b: int) -> int:\n'
          '    """Return the sum of a and b."""\n    return a + b\n\n\n'
          'def mul(a: int, b: int) -> int:\n    """Return the product of a and b."""\n    return a * b\n')


@pytest.fixture
def tasks(db: Database, data_location: DataLocation) -> TaskService:
    return TaskService(db, worktrees_root=data_location.worktrees)


def _allow_for_repository(driver: ToolDriver, tasks: TaskService, repo: Path, argv: list[str]) -> None:
    """A person allows exactly ``argv`` for the repository in a first task (then paused): what the watch needs."""
    first = a_running_task_with_worktree(tasks, open_repository(repo), {}).task_id
    asked = driver.submit_tool_request(first, "run_command", {"argv": argv}, idempotency_key=f"k{next(_keys)}",
                                       source="test")
    assert asked.decision.outcome is DecisionOutcome.PENDING
    driver.decide(asked.request_id, UserDecision.ALLOW_FOR_REPOSITORY, reason="the person allowed it for the repo")
    move(tasks, first, TaskState.PAUSED)


def _demo_with_the_fix_reverted(root: Path) -> Path:
    """The demo repository with its fix committed, then reverted by hand (a commit): HEAD fails again."""
    repo = create_sample_repository(root)
    (repo / "calc" / "ops.py").write_text(_FIXED)
    commit_all(repo, "fix add() for negative numbers")
    git(repo, "revert", "--no-edit", "HEAD")
    return repo


def test_a_failing_watch_makes_one_incident_counting_each_tick_and_one_proposal(
    confined_driver: ToolDriver, tasks: TaskService, db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    repo = _demo_with_the_fix_reverted(tmp_path / "calc")
    argv = shlex.split(DEMO_TEST_COMMAND)
    (repo / "calc" / "ops.py").write_text(_FIXED)  # an uncommitted fix: the watch sees HEAD, not this
    refused = run_codeflux("watch", "--repo", str(repo), "--command", DEMO_TEST_COMMAND, "--every", "1s",
                           "--ticks", "1", data_dir=data_location.directory)
    assert refused.code == 4, refused.err
    assert "not allowed for the repository calc" in refused.err and "--allow-for-repository" in refused.err
    assert list((data_location.directory / "watch").iterdir()) == []  # the scratch is gone, no worker started
    assert list_incidents(db, repository_id=None, state=None, limit=10) == []

    _allow_for_repository(confined_driver, tasks, repo, argv)
    watched = run_codeflux("watch", "--repo", str(repo), "--command", DEMO_TEST_COMMAND, "--every", "1s",
                           "--ticks", "3", "--acknowledge-dirty", open_repository(repo).dirty_hash,
                           data_dir=data_location.directory)
    assert watched.code == 0, watched.err
    assert len(re.findall(r"tick \d: [0-9a-f]{12} failed \(exit 1, bubblewrap\)", watched.out)) == 3, watched.out
    assert watched.out.count("proposed draft task") == 1, watched.out
    [incident] = list_incidents(db, repository_id=None, state=None, limit=10)
    assert incident.occurrences == 3
    assert incident.state.state is IncidentState.TASK_PROPOSED
    detail = show_incident(db, incident.incident_id, occurrences=3)
    assert {o.source for o in detail.occurrences} == {IncidentSource.WATCH}
    assert all("test_add_negative" in o.redacted_text for o in detail.occurrences)
    proposed = incident.state.task_id
    assert proposed is not None
    task = tasks.show(proposed).task
    assert task.state is TaskState.DRAFT  # proposal, never action
    # the draft carries the failing test and, as its acceptance example, the watched command
    assert "FAILED tests/test_ops.py::test_add_negative" in task.requirement
    assert f"Acceptance example: `{shlex.join(argv)}` fails now" in task.requirement
    drafts = [t.task_id for t in tasks.list_tasks(limit=50) if t.state is TaskState.DRAFT]
    assert drafts == [proposed]  # exactly one proposal for three failing ticks


@pytest.mark.parametrize(("flags", "said"), [
    (("--every", "30s", "--auto-plan"), "--auto-plan needs --budget AMOUNT"),
    (("--every", "30s", "--budget", "1.00"), "--budget is for --auto-plan"),
    (("--every", "5 minutes"), "--every must be a whole number with a unit: s, m or h"),
    (("--every", "0s"), "--every must be between 1s and 24h"),
    (("--every", "30s", "--ticks", "0"), "--ticks must be a whole number"),
])
def test_usage_errors_are_refused_before_anything_opens(tmp_path: Path, flags: tuple[str, ...], said: str) -> None:
    data, err = tmp_path / "data", io.StringIO()
    code = main(["--data-dir", str(data), "watch", "--repo", str(tmp_path), "--command", "python3 -m pytest",
                 *flags], CliContext(stdout=io.StringIO(), stderr=err))
    assert code == 2
    assert said in err.getvalue()
    assert not data.exists()  # refused before anything was opened or created
