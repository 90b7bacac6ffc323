"""The real ``codeflux task`` CLI as a separate process, against a real database and real repositories."""

from __future__ import annotations

import re
from pathlib import Path

from codeflux.coordinator.tasks.service import Actor, PlanAuthor, TaskService
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import plan_sha256
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import RepoState, make_repository
from tests.fixtures.reviews import a_task_awaiting_review
from tests.fixtures.tasks import a_plan, a_repository, keys


def created_task(out: str) -> TaskId:
    found = re.search(r"task (tsk_[0-9a-z]+) created", out)
    assert found, out
    return TaskId.parse(found.group(1))


def test_a_dirty_repository_needs_the_printed_hash_then_the_task_is_created_and_shown(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    repo = make_repository(tmp_path / "dirty", RepoState.DIRTY).path
    dirty_hash = open_repository(repo).dirty_hash

    refused = run_codeflux("task", "create", "--repo", str(repo), "--requirement", "Fix add",
                           data_dir=data_location.directory)

    assert refused.code == 4, refused.err
    assert f"dirty hash {dirty_hash}" in refused.out and "pkg/calc.py" in refused.out
    assert run_codeflux("task", "list", data_dir=data_location.directory).out == ""

    created = run_codeflux("task", "create", "--repo", str(repo), "--requirement", "Fix add",
                           "--acknowledge-dirty", dirty_hash, data_dir=data_location.directory)

    assert created.code == 0, created.err
    task_id = created_task(created.out)
    shown = run_codeflux("task", "show", task_id.value, data_dir=data_location.directory)
    assert shown.code == 0, shown.err
    assert "state        draft (revision 0)" in shown.out
    assert "approve-plan    no: approve-plan needs a plan waiting for approval; the task is draft" in shown.out
    assert "budget       none set" in shown.out
    listed = run_codeflux("task", "list", data_dir=data_location.directory)
    assert task_id.value in listed.out and "draft" in listed.out


def test_approving_with_a_stale_hash_is_refused_and_the_current_one_is_approved(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    service = TaskService(db, worktrees_root=data_location.worktrees)
    snapshot = a_repository(tmp_path / "clean")
    created = run_codeflux("task", "create", "--repo", str(snapshot.root), "--requirement", "Fix add",
                           data_dir=data_location.directory)
    task_id = created_task(created.out)
    planning = service.transition(task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                                  actor=Actor.SYSTEM, idempotency_key=keys())
    plan = a_plan()
    service.record_plan_revision(task_id, plan, created_by=PlanAuthor.SCRIPTED, expected_revision=planning.revision,
                                 idempotency_key=keys())

    stale = run_codeflux("task", "approve-plan", task_id.value, "--revision", "1", "--sha256", "0" * 64,
                         data_dir=data_location.directory)
    assert stale.code == 1 and "codeflux task:" in stale.err
    assert service.show(task_id).task.state is TaskState.AWAITING_PLAN_APPROVAL

    approved = run_codeflux("task", "approve-plan", task_id.value, "--revision", "1", "--sha256",
                            plan_sha256(plan), data_dir=data_location.directory)
    assert approved.code == 0, approved.err
    assert service.show(task_id).task.state is TaskState.READY
    shown = run_codeflux("task", "show", task_id.value, data_dir=data_location.directory)
    assert f"revision 1 sha256 {plan_sha256(plan)} (approved; drafted by " in shown.out
    assert "step 1     Fix add" in shown.out


def test_reject_then_patch_prints_the_kept_patch_and_accept_afterwards_is_refused_by_state(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    service = TaskService(db, worktrees_root=data_location.worktrees)
    task = a_task_awaiting_review(service, a_repository(tmp_path / "clean"), {"pkg/new.py": "X = 1\n"})

    rejected = run_codeflux("task", "reject", task.task_id.value, "--identity", task.identity, "--reason", "no",
                            data_dir=data_location.directory)
    assert rejected.code == 0, rejected.err
    assert "worktree removed" in rejected.out

    patch = run_codeflux("task", "patch", task.task_id.value, data_dir=data_location.directory)
    assert patch.code == 0, patch.err
    assert "+++ b/pkg/new.py" in patch.out and "+X = 1" in patch.out

    again = run_codeflux("task", "accept", task.task_id.value, "--identity", task.identity,
                         data_dir=data_location.directory)
    assert again.code == 3 and "cancelled, which is final" in again.err
    assert run_codeflux("task", "recovery", data_dir=data_location.directory).out == "no task needs recovery\n"


def test_usage_errors_exit_2(data_location: DataLocation, db: Database) -> None:
    assert run_codeflux("task", "show", "not-a-task-id", data_dir=data_location.directory).code == 2
    assert run_codeflux("task", "record-outcome", "tsk_0123456789abcdef", "--item", "exe_x",
                        data_dir=data_location.directory).code == 2
