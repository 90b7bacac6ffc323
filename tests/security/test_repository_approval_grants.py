"""Allow for this repository, against real worker processes, real git repositories and the real task service:
the approval decides the exact operation in the next task of the same repository and nothing else; revoked, it
decides nothing; unconfined, it can neither be given nor used; a denial in the next task still wins."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.authority.repository_approvals import RepositoryApprovals
from codeflux.coordinator.journal import read_session_events
from codeflux.coordinator.runs.tool_driver import SubmittedRequest, ToolDriver
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import CapabilityDeniedError, RepositoryApprovalRefusedError, StoreError
from codeflux.domain.events import AuthorityDecided, ToolRequested
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.repository_approvals import RepositoryRoots
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.store.database import Database
from codeflux.store.events import JournalEvent
from codeflux.store.location import DataLocation
from codeflux.store.tasks import task_session_id
from codeflux.worker.client.confinement import choose_confinement
from tests.fixtures.repos import commit_all, git, write_files
from tests.fixtures.reviews import a_running_task_with_worktree, move
from tests.fixtures.tasks import a_repository

pytestmark = pytest.mark.security

_keys = itertools.count(1)


@pytest.fixture
def tasks(db: Database, data_location: DataLocation) -> TaskService:
    return TaskService(db, worktrees_root=data_location.worktrees)


@pytest.fixture
def driver(confined_driver: ToolDriver) -> ToolDriver:
    return confined_driver


def start(tasks: TaskService, snapshot: RepositorySnapshot) -> TaskId:
    return a_running_task_with_worktree(tasks, snapshot, {}).task_id


def run(driver: ToolDriver, task_id: TaskId, *argv: str) -> SubmittedRequest:
    return driver.submit_tool_request(task_id, "run_command", {"argv": list(argv)},
                                      idempotency_key=f"k{next(_keys)}", source="test")


def journal(db: Database, task_id: TaskId) -> list[JournalEvent]:
    return read_session_events(db, session_id=task_session_id(task_id), after_sequence=0, limit=1000)


def another_repository(root: Path) -> RepositorySnapshot:
    """A repository with a history of its own (another root commit)."""
    repo = root / "other"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    write_files(repo, {"README.md": "another project\n", "pkg/__init__.py": ""})
    commit_all(repo, "another initial commit")
    return open_repository(repo)


def submit(driver: ToolDriver, task_id: TaskId, tool: str, **raw: object) -> SubmittedRequest:
    return driver.submit_tool_request(task_id, tool, raw, idempotency_key=f"k{next(_keys)}", source="test")


def allowed_for_repository(driver: ToolDriver, tasks: TaskService, snapshot: RepositorySnapshot,
                           *argv: str, also: tuple[tuple[str, dict[str, object]], ...] = ()) -> TaskId:
    """A first task of ``snapshot`` that asks for ``argv`` (and each of ``also``: the positive control, it is
    asked), allows each for the repository, runs it, and is paused; returns that task."""
    first = start(tasks, snapshot)
    for tool, raw in (("run_command", {"argv": list(argv)}), *also):
        asked = submit(driver, first, tool, **raw)
        assert asked.decision.outcome is DecisionOutcome.PENDING
        driver.decide(asked.request_id, UserDecision.ALLOW_FOR_REPOSITORY, reason="the person allowed it for the repo")
        assert driver.execute(asked.request_id).state is ToolExecutionState.SUCCEEDED
    move(tasks, first, TaskState.PAUSED)
    return first


def test_allow_for_repository_decides_the_exact_operation_in_the_next_task_and_only_that_one(
    driver: ToolDriver, tasks: TaskService, db: Database, tmp_path: Path
) -> None:
    snapshot = a_repository(tmp_path / "git")
    first = allowed_for_repository(driver, tasks, snapshot, "echo", "hello", "repository", also=(
        ("write_file", {"path": ".netrc", "content": "machine example.invalid\n"}),))
    approvals = RepositoryApprovals(db).list_approvals()
    assert [approval.task_id for approval in approvals] == [first, first]
    approvals = [a for a in approvals if a.operation.tool == "run_command"]

    second = start(tasks, snapshot)
    same = run(driver, second, "echo", "hello", "repository")
    assert same.decision.outcome is DecisionOutcome.ALLOWED_ONCE
    assert str(approvals[0].approval_id) in same.decision.reason
    assert RepositoryApprovals(db).decision_rested_on(same.decision.decision_id) == approvals[0].approval_id
    ran = driver.execute(same.request_id)
    assert ran.state is ToolExecutionState.SUCCEEDED
    assert ran.stdout == "hello repository\n"
    # the journals say why: the person's decision recorded the approval, the later request names it
    decided = [e.event for e in journal(db, first) if isinstance(e.event, AuthorityDecided)]
    recorded = {a.approval_id for a in RepositoryApprovals(db).list_approvals()}
    assert {d.repository_approval_id for d in decided} == recorded
    [requested] = [e.event for e in journal(db, second) if isinstance(e.event, ToolRequested)]
    assert requested.repository_approval_id == approvals[0].approval_id and requested.outcome == "allowed-once"

    for argv in (("echo", "hello", "other"), ("echo", "repository", "hello"), ("printf", "hello repository"),
                 ("echo", "hello", "repository", "extra")):
        assert run(driver, second, *argv).decision.outcome is DecisionOutcome.PENDING, argv
    assert submit(driver, second, "write_file", path=".netrc", content="machine example.invalid\n") \
        .decision.outcome is DecisionOutcome.ALLOWED_ONCE  # control: the other approved operation
    assert submit(driver, second, "read_file", path=".netrc").decision.outcome is DecisionOutcome.PENDING
    assert submit(driver, second, "write_file", path=".netrc", content="machine other.invalid\n") \
        .decision.outcome is DecisionOutcome.PENDING

    move(tasks, second, TaskState.PAUSED)
    elsewhere = start(tasks, another_repository(tmp_path / "git2"))
    assert run(driver, elsewhere, "echo", "hello", "repository").decision.outcome is DecisionOutcome.PENDING


def test_a_revoked_repository_approval_asks_again(
    driver: ToolDriver, tasks: TaskService, db: Database, tmp_path: Path
) -> None:
    snapshot = a_repository(tmp_path / "git")
    allowed_for_repository(driver, tasks, snapshot, "echo", "revocable")
    approvals = RepositoryApprovals(db)
    [approval] = approvals.list_approvals()
    second = start(tasks, snapshot)
    assert run(driver, second, "echo", "revocable").decision.outcome is DecisionOutcome.ALLOWED_ONCE  # control

    revoked = approvals.revoke(approval.approval_id, reason="no longer wanted")
    assert revoked.revocation is not None
    assert approvals.revoke(approval.approval_id, reason="again").revocation == revoked.revocation
    assert approvals.list_approvals() == []
    assert [a.approval_id for a in approvals.list_approvals(include_revoked=True)] == [approval.approval_id]
    assert run(driver, second, "echo", "revocable").decision.outcome is DecisionOutcome.PENDING


def test_a_denial_in_the_next_task_still_blocks_a_repository_approved_operation(
    driver: ToolDriver, tasks: TaskService, tmp_path: Path
) -> None:
    snapshot = a_repository(tmp_path / "git")
    allowed_for_repository(driver, tasks, snapshot, "echo", "denied", "later")
    second = start(tasks, snapshot)
    asked = run(driver, second, "ls", "-la")
    driver.decide(asked.request_id, UserDecision.DENY, reason="no programs in this task")
    refused = run(driver, second, "echo", "denied", "later")
    assert refused.decision.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY
    with pytest.raises(CapabilityDeniedError):
        driver.execute(refused.request_id)


def test_unconfined_commands_can_neither_give_nor_use_a_repository_approval(
    driver: ToolDriver, tasks: TaskService, db: Database, tmp_path: Path
) -> None:
    snapshot = a_repository(tmp_path / "git")
    allowed_for_repository(driver, tasks, snapshot, "echo", "boxed")
    second = start(tasks, snapshot)
    assert run(driver, second, "echo", "boxed").decision.outcome is DecisionOutcome.ALLOWED_ONCE  # control

    with ToolDriver(db, state_dir=tmp_path / "bare", confinement=choose_confinement("none"),
                    allow_unconfined=True) as unconfined:
        asked = run(unconfined, second, "echo", "boxed")
        assert asked.decision.outcome is DecisionOutcome.PENDING
        other = run(unconfined, second, "echo", "never", "standing")
        with pytest.raises(RepositoryApprovalRefusedError, match="unconfined"):
            unconfined.decide(other.request_id, UserDecision.ALLOW_FOR_REPOSITORY, reason="try")
        assert unconfined.read_request(other.request_id).decision.outcome is DecisionOutcome.PENDING
    roots = RepositoryRoots.of(snapshot.root_commits)
    assert len(RepositoryApprovals(db).list_approvals(roots=roots)) == 1


def test_repository_approvals_their_revocations_and_uses_are_facts_the_schema_guards(
    driver: ToolDriver, tasks: TaskService, db: Database, tmp_path: Path
) -> None:
    snapshot = a_repository(tmp_path / "git")
    first = allowed_for_repository(driver, tasks, snapshot, "echo", "fact")
    approvals = RepositoryApprovals(db)
    [approval] = approvals.list_approvals()
    second = start(tasks, snapshot)
    used = run(driver, second, "echo", "fact")
    assert used.decision.outcome is DecisionOutcome.ALLOWED_ONCE
    once = [run(driver, second, "echo", "allowed", str(n)) for n in (1, 2)]
    decisions = [driver.decide(r.request_id, UserDecision.ALLOW_ONCE, reason="once").decision.decision_id for r in once]
    use = ("INSERT INTO repository_approval_uses (decision_id, repository_approval_id, used_at_us) VALUES (?, ?, 0)")
    db.write(lambda tx: tx.execute(use, (decisions[0], approval.approval_id.value)))  # control: live, allowed-once
    approvals.revoke(approval.approval_id, reason="facts only")
    with pytest.raises(StoreError):  # a revoked approval decides nothing, even written directly
        db.write(lambda tx: tx.execute(use, (decisions[1], approval.approval_id.value)))

    for statement in ("UPDATE repository_approvals SET reason = 'other'", "DELETE FROM repository_approvals",
                      "UPDATE repository_approval_revocations SET reason = 'other'",
                      "DELETE FROM repository_approval_revocations",
                      "UPDATE repository_approval_uses SET used_at_us = 0", "DELETE FROM repository_approval_uses"):
        with pytest.raises(StoreError):
            db.write(lambda tx, statement=statement: tx.execute(statement))
    # an approval cannot come from a decision that is not a person's allowed-for-task decision on its request
    pending = run(driver, second, "echo", "fact")
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute(
            "INSERT INTO repository_approvals (id, repository_roots_json, repository_identity, operation_json, task_id,"
            " request_id, decision_id, reason, created_at_us) SELECT 'rap_' || lower(hex(randomblob(16))),"
            " repository_roots_json, repository_identity, operation_json, ?, ?, ?, 'forged', 0"
            " FROM repository_approvals",
            (second.value, pending.request_id, pending.decision.decision_id)))
    assert [a.task_id for a in approvals.list_approvals(include_revoked=True)] == [first]
