"""Accept and reject against real repositories and real worktrees: what lands on the user's branch (seen
with the git CLI), what is stored, the task's recorded state, and whether the worktree is gone or kept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeflux.coordinator.tasks.recovery import RecoveryService
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import DiffChangedError, TaskActionUnavailableError
from codeflux.domain.recovery import EffectOutcome
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.accept import AcceptKind
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store.database import Database
from codeflux.store.task_records import transitions_of_task
from tests.fixtures.repos import commit_all, git, write_files
from tests.fixtures.reviews import (
    a_running_task_with_worktree,
    a_task_awaiting_review,
    an_interrupted_tool_execution,
    move,
)
from tests.fixtures.tasks import a_repository

FIX = {"pkg/calc.py": "def add(a, b):\n    return a + b  # reviewed\n\n\ndef sub(a, b):\n    return a - b\n",
       "pkg/extra.py": "VALUE = 1\n"}


@pytest.fixture
def snapshot(tmp_path: Path) -> RepositorySnapshot:
    return a_repository(tmp_path / "git")


@pytest.fixture
def service(db: Database, tmp_path: Path) -> TaskService:
    return TaskService(db, worktrees_root=tmp_path / "worktrees")


def worktrees_of(repo: Path) -> str:
    return git(repo, "worktree", "list", "--porcelain")


def test_accept_fast_forwards_the_branch_completes_the_task_and_removes_the_worktree(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    task = a_task_awaiting_review(service, snapshot, FIX)

    result = ReviewService(db).accept_task(task.task_id, reviewed_identity=task.identity)

    assert result.outcome.kind is AcceptKind.FAST_FORWARD
    assert result.change is not None and result.change.state is TaskState.COMPLETED
    repo = snapshot.root
    assert (repo / "pkg/extra.py").read_text() == "VALUE = 1\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD").strip() == result.outcome.landed_head
    git(repo, "fsck", "--no-progress")  # raises unless the repository is sound
    assert result.worktree is not None and result.worktree.removed and result.worktree.branch_deleted
    assert str(task.worktree.path) not in worktrees_of(repo) and not task.worktree.path.exists()
    last = db.read(lambda view: transitions_of_task(view, task.task_id))[-1]
    assert (last.from_state, last.to_state, last.actor) == (TaskState.AWAITING_REVIEW, TaskState.COMPLETED, "user")


def test_accept_makes_a_merge_commit_when_the_branch_moved_on(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    task = a_task_awaiting_review(service, snapshot, FIX)
    write_files(snapshot.root, {"docs.md": "written meanwhile\n"})
    moved = commit_all(snapshot.root, "the user moved on")

    result = ReviewService(db).accept_task(task.task_id, reviewed_identity=task.identity)

    assert result.outcome.kind is AcceptKind.MERGE_COMMIT
    parents = git(snapshot.root, "rev-list", "--parents", "-n", "1", "HEAD").split()
    assert parents[1] == moved and len(parents) == 3
    assert (snapshot.root / "docs.md").exists() and (snapshot.root / "pkg/extra.py").exists()
    assert git(snapshot.root, "status", "--porcelain") == ""
    assert service.show(task.task_id).task.state is TaskState.COMPLETED


def test_a_conflict_changes_nothing_and_the_task_still_awaits_review(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    task = a_task_awaiting_review(service, snapshot, FIX)
    write_files(snapshot.root, {"pkg/calc.py": "def add(a, b):\n    return b + a  # theirs\n"})
    before = commit_all(snapshot.root, "a conflicting change")
    revision = service.show(task.task_id).task.revision

    result = ReviewService(db).accept_task(task.task_id, reviewed_identity=task.identity)

    assert result.conflicted and result.outcome.conflicting_paths == ("pkg/calc.py",)
    assert result.change is None and result.worktree is None
    assert git(snapshot.root, "rev-parse", "HEAD").strip() == before
    assert git(snapshot.root, "status", "--porcelain") == ""
    shown = service.show(task.task_id).task
    assert (shown.state, shown.revision) == (TaskState.AWAITING_REVIEW, revision)
    assert task.worktree.path.exists()


def test_accept_of_a_stale_identity_is_refused_and_nothing_changes(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    task = a_task_awaiting_review(service, snapshot, FIX)
    head = git(snapshot.root, "rev-parse", "HEAD")

    with pytest.raises(DiffChangedError):
        ReviewService(db).accept_task(task.task_id, reviewed_identity="0" * 64)

    assert git(snapshot.root, "rev-parse", "HEAD") == head
    assert service.show(task.task_id).task.state is TaskState.AWAITING_REVIEW


def test_reject_stores_the_patch_retrievable_later_cancels_the_task_and_removes_the_worktree(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    task = a_task_awaiting_review(service, snapshot, FIX)
    head = git(snapshot.root, "rev-parse", "HEAD")

    result = ReviewService(db).reject_task(task.task_id, reviewed_identity=task.identity, reason="not this way")

    assert result.change.state is TaskState.CANCELLED and result.matches_review
    assert result.patch.diff_identity == task.identity and result.patch.kind == "rejected"
    assert result.worktree is not None and result.worktree.removed and not task.worktree.path.exists()
    assert git(snapshot.root, "rev-parse", "HEAD") == head  # the user's branch is untouched
    patch = ReviewService(db).task_patch(task.task_id).patch
    assert patch == result.patch.patch and b"pkg/extra.py" in patch
    applied = subprocess.run(["git", "apply", "--check", "-"], input=patch, cwd=snapshot.root, capture_output=True,
                             check=False)
    assert applied.returncode == 0, applied.stderr
    with pytest.raises(TaskActionUnavailableError):
        ReviewService(db).accept_task(task.task_id, reviewed_identity=task.identity)


def test_the_worktree_is_kept_at_a_terminal_state_while_an_outcome_is_ambiguous(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, tmp_path: Path
) -> None:
    binding = a_running_task_with_worktree(service, snapshot, FIX)
    execution = an_interrupted_tool_execution(db, binding.task_id, tmp_path / "state")
    move(service, binding.task_id, TaskState.VALIDATING, TaskState.AWAITING_REVIEW)
    identity = RecoveryService(db).assess(binding.task_id).known.diff_identity
    assert identity is not None

    result = ReviewService(db).reject_task(binding.task_id, reviewed_identity=identity, reason="unsure")

    assert result.worktree is not None and not result.worktree.removed
    assert result.worktree.refusal == "outcome-ambiguous" and execution in result.worktree.detail
    assert binding.path.exists() and str(binding.path) in worktrees_of(snapshot.root)

    RecoveryService(db).record_outcome(binding.task_id, item_id=execution, outcome=EffectOutcome.DID_NOT_HAPPEN)


def test_review_of_a_task_that_is_not_awaiting_review_is_refused_with_the_reason(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    binding = a_running_task_with_worktree(service, snapshot, FIX)

    with pytest.raises(TaskActionUnavailableError, match="accept needs a finished diff awaiting review"):
        ReviewService(db).accept_task(binding.task_id, reviewed_identity="0" * 64)
