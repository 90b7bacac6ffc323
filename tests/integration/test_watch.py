"""``codeflux watch`` as a person runs it (the real CLI entry, in-process channel), on the demo repository with
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
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from codeflux.coordinator.demo import DEMO_TEST_COMMAND, create_sample_repository
from codeflux.coordinator.incidents import list_incidents, show_incident
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.runs.watch import run_watch_tick
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.incidents import IncidentSource, IncidentState
from codeflux.domain.tasks import Actor, TaskState
from codeflux.domain.watch import WatchTickOutcome
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
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


def _watch(data: Path, repo: Path, *flags: str, command: str = DEMO_TEST_COMMAND) -> tuple[int, str, str]:
    """``codeflux watch`` (by default with the demo's test command), run by the real CLI entry in this process (its
    workers are real processes in the real box); returns the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["--data-dir", str(data), "watch", "--repo", str(repo), "--command", command,
                 "--every", "1s", *flags], CliContext(stdout=out, stderr=err))
    return code, out.getvalue(), err.getvalue()


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
    code, _, err = _watch(data_location.directory, repo, "--ticks", "1")
    assert code == 4, err
    assert "not allowed for the repository calc" in err and "--allow-for-repository" in err
    assert list((data_location.directory / "watch").iterdir()) == []  # the scratch is gone, no worker started
    assert list_incidents(db, repository_id=None, state=None, limit=10) == []

    _allow_for_repository(confined_driver, tasks, repo, argv)
    # the checkout is dirty: without the acknowledgement the failure is recorded but no task can be drafted yet
    code, out, err = _watch(data_location.directory, repo, "--ticks", "1")
    assert code == 0, err
    assert "tick 1:" in out and "new incident" in out and "not acknowledged" in out, out
    assert "proposed draft task" not in out
    code, out, err = _watch(data_location.directory, repo, "--ticks", "2", "--acknowledge-dirty",
                            open_repository(repo).dirty_hash)
    assert code == 0, err
    assert len(re.findall(r"tick \d: [0-9a-f]{12} failed \(exit 1, bubblewrap\)", out)) == 2, out
    assert out.count("proposed draft task") == 1 and "plan revision" not in out, out  # --propose-only by default
    assert "seen 3 times" in out and "no new proposal" in out, out
    assert list((data_location.directory / "watch").iterdir()) == []  # each tick's scratch went with it
    [incident] = list_incidents(db, repository_id=None, state=None, limit=10)
    assert incident.occurrences == 3
    assert incident.state.state is IncidentState.TASK_PROPOSED
    detail = show_incident(db, incident.incident_id, occurrences=3)
    assert {o.source for o in detail.occurrences} == {IncidentSource.WATCH}
    assert all("test_add_negative" in o.redacted_text for o in detail.occurrences)
    # nobody pressed Propose: the watch did (the history said "task-proposed by user" before)
    assert [(h.state, h.actor, h.reason.endswith("by `codeflux watch`")) for h in detail.history][-1] == (
        IncidentState.TASK_PROPOSED, Actor.SYSTEM, True)
    proposed = incident.state.task_id
    assert proposed is not None
    task = tasks.show(proposed).task
    assert task.state is TaskState.DRAFT  # proposal, never action
    # the draft carries the failing test and, as its acceptance example, the watched command
    assert "FAILED tests/test_ops.py::test_add_negative" in task.requirement
    assert f"Acceptance example: `{shlex.join(argv)}` fails now" in task.requirement
    drafts = [t.task_id for t in tasks.list_tasks(limit=50) if t.state is TaskState.DRAFT]
    assert drafts == [proposed]  # exactly one proposal for three failing ticks


def test_auto_plan_drafts_the_plan_against_the_budget_and_stops_at_plan_approval(
    confined_driver: ToolDriver, tasks: TaskService, db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    repo = create_sample_repository(tmp_path / "calc")
    argv = ["python3", "-c", "raise SystemExit('ValueError: the watched check failed')"]  # quick to fail
    _allow_for_repository(confined_driver, tasks, repo, argv)
    code, out, err = _watch(data_location.directory, repo, "--ticks", "1", "--auto-plan", "--budget", "0.50",
                            command=shlex.join(argv))
    assert code == 0, err
    assert "plan revision 1 drafted" in out and "it waits for your approval" in out, out
    [incident] = list_incidents(db, repository_id=None, state=None, limit=10)
    proposed = incident.state.task_id
    assert proposed is not None
    shown = tasks.show(proposed)
    assert shown.task.state is TaskState.AWAITING_PLAN_APPROVAL and shown.plan_decision is None  # never approved
    assert BudgetService(db).summary(proposed).hard_limit.minor == 50  # the planning calls were reserved against it
    assert shown.plan is not None


def test_the_scratch_is_read_only_and_only_the_watch_tmpdir_is_writable(
    confined_driver: ToolDriver, tasks: TaskService, db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    """A probe that proves it ran: writing into the scratch copy fails in the box, writing into $TMPDIR works."""
    repo = create_sample_repository(tmp_path / "calc")
    probe = ("import os, pathlib\n"
             "for where in ('.', os.environ['TMPDIR']):\n"
             "    try:\n"
             "        pathlib.Path(where, 'probe.txt').write_text('x')\n"
             "        print('wrote', 'scratch' if where == '.' else 'tmpdir')\n"
             "    except OSError as error:\n"
             "        print('refused', 'scratch' if where == '.' else 'tmpdir', error.errno)\n"
             "raise SystemExit(1)\n")
    argv = ["python3", "-c", probe]
    _allow_for_repository(confined_driver, tasks, repo, argv)
    tick = run_watch_tick(db, data_dir=data_location.directory, snapshot=open_repository(repo), argv=argv)
    assert tick.outcome is WatchTickOutcome.FAILED and tick.confinement == "bubblewrap"
    assert "refused scratch 30" in tick.output and "wrote tmpdir" in tick.output, tick.output  # 30: EROFS
    assert not (repo / "probe.txt").exists()


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


def test_ctrl_c_stops_the_watch_cleanly_between_ticks(
    confined_driver: ToolDriver, tasks: TaskService, data_location: DataLocation, tmp_path: Path
) -> None:
    """The console entry as a process: a passing tick, then SIGINT while it waits for the next → exit 0, said so."""
    repo = create_sample_repository(tmp_path / "calc")
    argv = ["python3", "-c", "print('all good')"]
    _allow_for_repository(confined_driver, tasks, repo, argv)
    process = subprocess.Popen(
        [sys.executable, "-m", "codeflux", "--data-dir", str(data_location.directory), "watch", "--repo", str(repo),
         "--command", shlex.join(argv), "--every", "1h"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("tick 1:"):
                break
        assert re.match(r"tick 1: [0-9a-f]{12} passed \(\d+ ms, bubblewrap, under rap_[0-9a-z]+\)", lines[-1]), lines
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "stopping after the tick under way" in err
    assert "watch stopped after 1 tick(s) (SIGINT)" in out
