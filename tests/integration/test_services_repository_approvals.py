"""Allow for this repository through the method table and the CLI (real SQLite, git and worker processes): the
card says who allowed the operation before (task, date) and offers the option; Decide records it; the next task
runs exactly that operation unasked; ListRepositoryApprovals / RevokeRepositoryApproval and `codeflux approvals
list|revoke` list and end it; unconfined, the card says why the option is unavailable and Decide refuses it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.tool_driver import SubmittedRequest, ToolDriver
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.services import approvals
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.cli import run_codeflux
from tests.fixtures.reviews import a_running_task_with_worktree, move
from tests.fixtures.services import call, control, refusal, service_app
from tests.fixtures.tasks import a_repository

_keys = itertools.count(1)
ECHO = ("echo", "from", "the", "card")


@pytest.fixture
def driver(confined_driver: ToolDriver) -> ToolDriver:
    return confined_driver


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, approvals.methods)


@pytest.fixture
def tasks(db: Database, data_location: DataLocation) -> TaskService:
    return TaskService(db, worktrees_root=data_location.worktrees)


def start(tasks: TaskService, snapshot: RepositorySnapshot) -> TaskId:
    return a_running_task_with_worktree(tasks, snapshot, {}).task_id


def run(driver: ToolDriver, task_id: TaskId, *argv: str) -> SubmittedRequest:
    return driver.submit_tool_request(task_id, "run_command", {"argv": list(argv)},
                                      idempotency_key=f"k{next(_keys)}", source="test")


def card(app: CoordinatorApp, task_id: TaskId) -> pb.PendingApproval:
    listed = call(app, "/codeflux.v1.ApprovalService/ListPending", pb.ListPendingRequest(task_id=task_id.value))
    assert isinstance(listed, pb.ListPendingReply)
    [pending] = listed.pending
    return pending


def test_the_card_says_allowed_before_and_allow_for_repository_runs_it_unasked_in_the_next_task(
    app: CoordinatorApp, driver: ToolDriver, db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    snapshot = a_repository(tmp_path / "git")
    first = start(tasks, snapshot)
    asked = run(driver, first, *ECHO)
    first_card = card(app, first)
    assert list(first_card.allowed_before) == [] and first_card.allow_for_repository_refusal == ""
    assert first_card.repository_identity.startswith("rop_")
    driver.decide(asked.request_id, UserDecision.ALLOW_ONCE, reason="once")
    move(tasks, first, TaskState.PAUSED)

    second = start(tasks, snapshot)
    again = run(driver, second, *ECHO)
    assert again.decision.outcome is DecisionOutcome.PENDING  # allow-once never carries over
    second_card = card(app, second)
    [earlier] = second_card.allowed_before
    assert earlier.task_id == first.value and earlier.outcome == "allowed-once"
    assert earlier.decided_at.endswith("Z") and second_card.repository_identity == first_card.repository_identity

    decided = call(app, "/codeflux.v1.ApprovalService/Decide", pb.DecideRequest(
        control=control("decide-repo"), task_id=second.value, request_id=again.request_id,
        decision="allow-for-repository", reason="fine in this repository"))
    assert isinstance(decided, pb.DecideReply) and decided.outcome == "allowed-for-task"
    move(tasks, second, TaskState.PAUSED)

    third = start(tasks, snapshot)
    assert run(driver, third, *ECHO).decision.outcome is DecisionOutcome.ALLOWED_ONCE
    assert run(driver, third, "echo", "something", "else").decision.outcome is DecisionOutcome.PENDING

    listed = call(app, "/codeflux.v1.ApprovalService/ListRepositoryApprovals",
                  pb.ListRepositoryApprovalsRequest(repository_path=str(snapshot.root)))
    assert isinstance(listed, pb.ListRepositoryApprovalsReply)
    [approval] = listed.approvals
    assert approval.task_id == second.value and approval.tool == "run_command" and not approval.revoked
    assert approval.repository_identity == first_card.repository_identity
    assert [a.name for a in approval.arguments] == ["argv"] and '"card"' in approval.arguments[0].value

    move(tasks, third, TaskState.PAUSED)  # the CLI's startup recovery would take a running task as interrupted
    shown = run_codeflux("approvals", "list", "--repo", str(snapshot.root), data_dir=data_location.directory)
    assert shown.code == 0, shown.err
    assert approval.approval_id in shown.out and "live" in shown.out
    revoked = run_codeflux("approvals", "revoke", approval.approval_id, "--reason", "not any more",
                           data_dir=data_location.directory)
    assert revoked.code == 0, revoked.err
    assert "revoked" in revoked.out and "not any more" in revoked.out
    empty = call(app, "/codeflux.v1.ApprovalService/ListRepositoryApprovals", pb.ListRepositoryApprovalsRequest())
    assert isinstance(empty, pb.ListRepositoryApprovalsReply) and list(empty.approvals) == []
    fourth = start(tasks, snapshot)
    assert run(driver, fourth, *ECHO).decision.outcome is DecisionOutcome.PENDING
    # The card reads memory: the third task's run was allowed by the approval, not reviewed by a person, so it is
    # not a reviewed command (docs/memory.md, "Reviewed commands and 'allowed before'").
    assert [(e.task_id, e.outcome) for e in card(app, fourth).allowed_before] == [
        (second.value, "allowed-for-repository"), (first.value, "allowed-once")]


def test_unconfined_the_card_says_why_and_decide_refuses_allow_for_repository(
    app: CoordinatorApp, driver: ToolDriver, tasks: TaskService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = start(tasks, a_repository(tmp_path / "git"))
    asked = run(driver, task, *ECHO)
    assert card(app, task).allow_for_repository_refusal == ""  # control: offered under a box

    monkeypatch.setenv("CODEFLUX_CONFINEMENT", "none")
    unconfined = card(app, task)
    assert "unconfined" in unconfined.allow_for_repository_refusal and unconfined.repository_identity == ""
    code, message = refusal(app, "/codeflux.v1.ApprovalService/Decide", pb.DecideRequest(
        control=control("decide-unconfined"), task_id=task.value, request_id=asked.request_id,
        decision="allow-for-repository"))
    assert code == Code.PERMISSION_DENIED and "unconfined" in message
    assert card(app, task).request_id == asked.request_id  # still pending: nothing was decided
