"""A plan approval pre-approves exactly its checks' argv for its own task (issue 15 item 2), against real
SQLite, a real git worktree and the real tool driver: near misses, another task, a newer revision, a check
that needs the network and an unconfined box are not covered; nothing standing is ever recorded."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.authority.decide import Decider, DecisionOutcome
from codeflux.coordinator.runs.tool_driver import SubmittedRequest, ToolDriver
from codeflux.domain.authority import ApprovalScope
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import PlanAuthor, PlanCheck, PlanDecider, PlanVerdict
from codeflux.store import authority as authority_rows
from codeflux.store import plans as plan_rows
from codeflux.store.database import Database, Transaction
from codeflux.worker.client.confinement import choose_confinement
from tests.fixtures.task_runs import a_plan_with_two_steps
from tests.fixtures.worktrees import TwoRunningTasks, two_running_tasks

pytestmark = pytest.mark.security

CHECK = ("python3", "-m", "pytest", "-q")


@pytest.fixture
def made(db: Database, tmp_path: Path) -> TwoRunningTasks:
    return two_running_tasks(db, tmp_path / "git")


@pytest.fixture
def driver(db: Database, tmp_path: Path) -> Iterator[ToolDriver]:
    with ToolDriver(db, state_dir=tmp_path / "state") as tool_driver:
        yield tool_driver


_keys = iter(range(1_000_000))


def plan_revision(db: Database, task_id: TaskId, *checks: tuple[str, ...], approve: bool = True,
                  by: PlanDecider = PlanDecider.USER) -> tuple[int, str]:
    """Record the task's next plan revision with ``checks`` (and approve it); its number and sha256."""
    plan = dataclasses.replace(a_plan_with_two_steps(), checks=tuple(
        PlanCheck(name=f"check {n}", argv=argv) for n, argv in enumerate(checks, start=1)))

    def work(tx: Transaction) -> tuple[int, str]:
        row = plan_rows.insert_plan_revision(tx, task_id=task_id, plan=plan, created_by=PlanAuthor.SCRIPTED,
                                             feedback=None, at_us=1)
        if approve:
            plan_rows.insert_plan_decision(tx, task_id=task_id, revision=row.revision, sha256=row.sha256,
                                           decision=PlanVerdict.APPROVED, feedback=None, decided_by=by, at_us=2)
        return row.revision, row.sha256

    return db.write(work)


def command(driver: ToolDriver, task_id: TaskId, *argv: str, source: str = "model") -> SubmittedRequest:
    return driver.submit_tool_request(task_id, "run_command", {"argv": list(argv)}, source=source,
                                      idempotency_key=f"plan-check-{next(_keys)}")


def standing_approvals(db: Database, task_id: TaskId, request: SubmittedRequest) -> list[object]:
    identity = driver_identity(db, request)
    return [row for row in db.read(lambda view: authority_rows.task_approvals_of_identity(view, task_id, identity))
            if row.scope is ApprovalScope.ALLOW_FOR_TASK]


def driver_identity(db: Database, request: SubmittedRequest) -> object:
    return db.read(lambda view: authority_rows.read_tool_request(view, request.request_id)).identity


def confined(driver: ToolDriver) -> bool:
    return not driver.programs_unconfined


def test_the_exact_check_is_allowed_by_the_plan_approval_and_nothing_standing_is_recorded(
        db: Database, made: TwoRunningTasks, driver: ToolDriver) -> None:
    revision, sha256 = plan_revision(db, made.first, CHECK)

    first = command(driver, made.first, *CHECK, source="pipeline")
    again = command(driver, made.first, *CHECK, source="pipeline")

    for request in (first, again):
        assert request.outcome is DecisionOutcome.ALLOWED_ONCE
        assert request.decision.decided_by is Decider.USER
        assert f"plan revision {revision} (sha256 {sha256})" in request.decision.reason
        assert "'check 1'" in request.decision.reason
    assert standing_approvals(db, made.first, first) == []  # never standing: each request has its own


@pytest.mark.parametrize("argv", [
    (*CHECK, "-x"),  # an extra argument
    ("python3", "-m", "pytest"),  # one fewer
    ("python3", "-q", "-m", "pytest"),  # another order
    ("sh", "-c", "python3 -m pytest -q"),  # wrapped in a shell
], ids=["extra-argument", "missing-argument", "reordered", "sh-c"])
def test_a_near_miss_is_not_covered(db: Database, made: TwoRunningTasks, driver: ToolDriver,
                                    argv: tuple[str, ...]) -> None:
    plan_revision(db, made.first, CHECK)

    assert command(driver, made.first, *argv, source="pipeline").outcome is DecisionOutcome.PENDING


def test_another_tasks_plan_does_not_cover_the_same_argv(db: Database, made: TwoRunningTasks,
                                                         driver: ToolDriver) -> None:
    plan_revision(db, made.first, CHECK)
    plan_revision(db, made.second, ("python3", "-m", "pytest"))

    assert command(driver, made.second, *CHECK, source="pipeline").outcome is DecisionOutcome.PENDING
    assert command(driver, made.first, *CHECK, source="pipeline").outcome is DecisionOutcome.ALLOWED_ONCE


def test_a_new_revision_whose_checks_changed_does_not_inherit(db: Database, made: TwoRunningTasks,
                                                              driver: ToolDriver) -> None:
    plan_revision(db, made.first, CHECK)
    assert command(driver, made.first, *CHECK, source="pipeline").outcome is DecisionOutcome.ALLOWED_ONCE

    plan_revision(db, made.first, ("python3", "-m", "pytest", "-x"), approve=False)
    assert command(driver, made.first, *CHECK, source="pipeline").outcome is DecisionOutcome.PENDING  # not approved

    plan_revision(db, made.first, ("python3", "-m", "pytest", "-x"))
    assert command(driver, made.first, *CHECK, source="pipeline").outcome is DecisionOutcome.PENDING
    newer = command(driver, made.first, "python3", "-m", "pytest", "-x", source="pipeline")
    assert newer.outcome is DecisionOutcome.ALLOWED_ONCE and "plan revision 3" in newer.decision.reason


def test_a_check_that_needs_the_network_still_asks(db: Database, made: TwoRunningTasks, driver: ToolDriver) -> None:
    fetch = ("curl", "-s", "https://example.com/install.sh")
    plan_revision(db, made.first, fetch)

    assert command(driver, made.first, *fetch, source="pipeline").outcome is DecisionOutcome.PENDING


def test_a_headless_plan_approval_is_recorded_as_the_headless_policys(db: Database, made: TwoRunningTasks,
                                                                      driver: ToolDriver) -> None:
    plan_revision(db, made.first, CHECK, by=PlanDecider.HEADLESS_POLICY)

    request = command(driver, made.first, *CHECK, source="pipeline")

    assert request.outcome is DecisionOutcome.ALLOWED_ONCE
    assert request.decision.decided_by is Decider.HEADLESS_POLICY
    assert "approved by headless-policy" in request.decision.reason


def test_confined_the_models_own_run_of_the_check_is_covered(db: Database, made: TwoRunningTasks,
                                                             driver: ToolDriver) -> None:
    if not confined(driver):
        pytest.skip("this machine runs commands unconfined")
    plan_revision(db, made.first, CHECK)

    request = command(driver, made.first, *CHECK, source="model")

    assert request.outcome is DecisionOutcome.ALLOWED_ONCE
    assert "for this task while the revision is approved (confined)" in request.decision.reason


def test_unconfined_only_codeflux_own_runs_are_covered_once_each(db: Database, made: TwoRunningTasks,
                                                                tmp_path: Path) -> None:
    plan_revision(db, made.first, CHECK)
    with ToolDriver(db, state_dir=tmp_path / "bare", confinement=choose_confinement("none")) as bare:
        assert bare.programs_unconfined
        model = command(bare, made.first, *CHECK, source="model")
        pipeline = command(bare, made.first, *CHECK, source="pipeline")

    assert model.outcome is DecisionOutcome.PENDING  # the model's own run asks, as any program does unboxed
    assert pipeline.outcome is DecisionOutcome.ALLOWED_ONCE
    assert "once, for this run (commands run unconfined: never standing)" in pipeline.decision.reason
    assert standing_approvals(db, made.first, pipeline) == []
