"""Cleanup is finished (issue 16 item 3): the worktree, the ``codeflux/task/<id>`` branch and the checkpoint refs
of an ended task are removed by a journaled step — intent before, end after — and a cleanup interrupted
part-way (the worktree gone, the branch not) is finished by the next command's startup recovery, against a
real repository, a real SQLite file and the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.coordinator.tasks.checkpoints import CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.gitwork.worktrees import CleanupFault
from codeflux.store import task_cleanups as cleanup_rows
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.task_records import require_task_record
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import git
from tests.fixtures.reviews import Reviewable, a_task_awaiting_review
from tests.fixtures.tasks import a_repository

FIX = {"pkg/calc.py": "def add(a, b):\n    return a + b  # reviewed\n"}


class Killed(BaseException):
    """Raised by the fault hook: the process 'dies' there."""


@pytest.fixture
def snapshot(tmp_path: Path) -> RepositorySnapshot:
    return a_repository(tmp_path / "git")


@pytest.fixture
def service(db: Database, tmp_path: Path) -> TaskService:
    return TaskService(db, worktrees_root=tmp_path / "worktrees")


def dying_at(point: CleanupFault):
    def fault(reached: CleanupFault) -> None:
        if reached is point:
            raise Killed(point.value)
    return fault


def disposals(db: Database, reviewable: Reviewable) -> list[dict[str, object]]:
    session = db.read(lambda view: require_task_record(view, reviewable.task_id)).session_id
    events = db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=1000))
    return [{"kind": e.kind, **e.payload} for e in events if e.kind in {"worktree-removed", "worktree-kept"}]


def task_branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/codeflux/", "refs/codeflux/").split()


@pytest.mark.parametrize("point", list(CleanupFault))
def test_an_accept_cleanup_interrupted_part_way_is_finished_by_the_next_commands_startup_recovery(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation,
    point: CleanupFault,
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    CheckpointService(service.changes).capture_checkpoint(reviewable.task_id, CheckpointTrigger.MATERIAL_EDIT)
    repo = snapshot.root
    with pytest.raises(Killed):
        ReviewService(db, cleanup_fault=dying_at(point)).accept_task(
            reviewable.task_id, reviewed_identity=reviewable.identity)
    assert service.show(reviewable.task_id).task.state is TaskState.COMPLETED  # the accept itself committed
    assert not reviewable.worktree.path.exists()  # the fault fired after the worktree went (positive control)
    unfinished = db.read(cleanup_rows.unfinished_cleanups)
    assert [row.task_id for row in unfinished] == [reviewable.task_id] and unfinished[0].delete_branch
    if point is CleanupFault.WORKTREE_REMOVED:
        assert f"refs/heads/codeflux/task/{reviewable.task_id}" in task_branches(repo)  # left part-way
        assert any(ref.startswith("refs/codeflux/checkpoints/") for ref in task_branches(repo))
    assert disposals(db, reviewable) == []  # no end recorded yet

    listed = run_codeflux("task", "list", data_dir=data_location.directory)

    assert listed.code == 0, listed.err
    assert f"the interrupted cleanup of task {reviewable.task_id} was finished: worktree removed" in listed.err
    assert task_branches(repo) == []  # branch and checkpoint refs gone
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # only the user's checkout
    assert db.read(cleanup_rows.unfinished_cleanups) == []
    [removed] = disposals(db, reviewable)
    assert removed["kind"] == "worktree-removed" and "startup recovery" in str(removed["detail"])
    again = run_codeflux("task", "list", data_dir=data_location.directory)
    assert "interrupted cleanup" not in again.err  # done: never run a second time


def test_a_cleanup_that_ends_records_its_end_with_the_event_and_leaves_nothing_unfinished(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert result.worktree is not None and result.worktree.removed and result.worktree.branch_deleted
    assert db.read(cleanup_rows.unfinished_cleanups) == []
    assert [d["kind"] for d in disposals(db, reviewable)] == ["worktree-removed"]
    assert task_branches(snapshot.root) == []
