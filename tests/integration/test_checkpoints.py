"""Checkpoints and delivery decisions with a real repository, real workers and the scripted provider (not a
model): a run leaves a checkpoint at plan approval and after every material edit, each a real commit on a
private ref (checked with the ``git`` CLI) whose tree is what the worktree held, while the task branch never
moves; a checkpoint whose database commit fails leaves no ref; accept and reject record stages 36/37."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.checkpoints import CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.recovery import RecoveryService
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.domain.errors import StoreError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageOutcome
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.checkpoint_refs import read_private_ref
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from codeflux.store.recovery import latest_assessment
from codeflux.store.stage_ledger import ledger_of_attempt
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.reviews import a_running_task_with_worktree
from tests.fixtures.task_runs import FIXED_CALC, Harness, make_harness, run_to_review
from tests.fixtures.tasks import a_repository


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def checkpoints(db: Database, task_id: TaskId) -> list[checkpoint_rows.CheckpointRow]:
    return db.read(lambda view: checkpoint_rows.checkpoints_of_task(view, task_id))


def test_a_run_checkpoints_at_plan_approval_and_after_each_edit_on_private_refs_only(
    harness: Harness, data_location: DataLocation
) -> None:
    task_id = run_to_review(harness)
    task = harness.tasks.show(task_id).task
    rows = checkpoints(harness.db, task_id)

    edit = CheckpointTrigger.MATERIAL_EDIT
    assert [(r.sequence, r.trigger) for r in rows] == [(1, CheckpointTrigger.PLAN_APPROVED), (2, edit), (3, edit)]
    assert all(r.plan_revision == 1 and r.attempt == 1 for r in rows)
    assert len({r.diff_identity for r in rows}) == 3  # nothing, one file, two files
    refs = git(harness.repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/codeflux/").split("\n")
    assert [line for line in refs if line] == [f"{r.ref_name} {r.commit_id}" for r in rows]
    for row in rows:
        assert git(harness.repo, "rev-parse", f"{row.commit_id}^").strip() == task.base_revision
    assert git(harness.repo, "show", f"{rows[0].commit_id}:pkg/calc.py") == BASE_FILES["pkg/calc.py"]
    assert git(harness.repo, "show", f"{rows[1].commit_id}:pkg/calc.py") == FIXED_CALC
    # The task branch never moved and the worktree still reads as uncommitted changes of the task.
    assert git(harness.repo, "rev-parse", f"codeflux/task/{task_id}").strip() == task.base_revision
    assert git(task.worktree, "status", "--porcelain").strip()
    git(harness.repo, "fsck", "--strict")
    events = {r.event_sequence for r in rows}
    assert len(events) == 3

    listed = run_codeflux("inspect", "checkpoints", "--id", task_id.value, data_dir=data_location.directory)
    assert listed.code == 0, listed.err
    assert rows[2].ref_name in listed.out and "material-edit" in listed.out


def test_accept_records_human_acceptance_and_deliver_with_the_landed_commit(harness: Harness) -> None:
    task_id = run_to_review(harness)
    identity = diff_against_base(diff_binding(harness, task_id)).identity

    accepted = ReviewService(harness.db).accept_task(task_id, reviewed_identity=identity)

    delivery = harness.db.read(lambda view: checkpoint_rows.delivery_of_attempt(view, task_id, 1))
    assert delivery is not None and delivery.accepted
    assert delivery.human_acceptance.outcome is StageOutcome.SATISFIED
    assert delivery.deliver.outcome is StageOutcome.SATISFIED
    assert delivery.landed_commit == accepted.outcome.landed_head
    assert git(harness.repo, "rev-parse", "HEAD").strip() == delivery.landed_commit
    assert harness.tasks.show(task_id).task.state is TaskState.COMPLETED
    # The stored rows were not rewritten (fact rows: 36/37 there say the run stopped waiting for a person) ...
    stored = {row.verdict.stage.value: row.verdict.outcome
              for row in harness.db.read(lambda view: ledger_of_attempt(view, task_id, 1))}
    assert stored["human-acceptance"] is StageOutcome.BLOCKED and stored["deliver"] is StageOutcome.BLOCKED
    # ... but the ledger as it is read everywhere carries the decision (issue 14 item 11).
    read = {row.verdict.stage.value: row for row in harness.tasks.ledger(task_id, 1)}
    assert read["human-acceptance"].verdict.outcome is StageOutcome.SATISFIED
    assert read["deliver"].verdict.outcome is StageOutcome.SATISFIED
    assert read["deliver"].evidence["landed_commit"] == delivery.landed_commit
    assert read["deliver"].evidence["when_the_attempt_ended"] == {
        "outcome": "blocked", "reason": stored_reason(harness, task_id, "deliver")}


def stored_reason(harness: Harness, task_id: TaskId, stage: str) -> str | None:
    rows = harness.db.read(lambda view: ledger_of_attempt(view, task_id, 1))
    return next(row.verdict.reason for row in rows if row.verdict.stage.value == stage)


def diff_binding(harness: Harness, task_id: TaskId) -> TaskWorktree:
    binding = task_worktree_binding(harness.tasks.show(task_id).task)
    assert binding is not None
    return binding


def test_reject_records_human_acceptance_failed_with_the_reason_and_deliver_blocked(harness: Harness) -> None:
    task_id = run_to_review(harness)
    identity = diff_against_base(diff_binding(harness, task_id)).identity

    ReviewService(harness.db).reject_task(task_id, reviewed_identity=identity, reason="not this way")

    delivery = harness.db.read(lambda view: checkpoint_rows.delivery_of_attempt(view, task_id, 1))
    assert delivery is not None and not delivery.accepted and delivery.landed_commit is None
    assert delivery.human_acceptance.outcome is StageOutcome.FAILED
    assert "not this way" in (delivery.human_acceptance.gate_evaluation or "")
    assert delivery.deliver.outcome is StageOutcome.BLOCKED and delivery.reason == "not this way"


class _CommitFails(Exception):
    pass


def test_a_checkpoint_whose_database_commit_fails_leaves_no_ref_and_no_row(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    binding = a_running_task_with_worktree(tasks, a_repository(tmp_path / "git"), {"pkg/new.py": "X = 1\n"})

    def fail() -> None:
        raise _CommitFails

    with pytest.raises(_CommitFails):
        CheckpointService(tasks.changes, fault=fail).capture_checkpoint(binding.task_id, CheckpointTrigger.PAUSED)
    assert checkpoints(db, binding.task_id) == []
    assert git(binding.repo_root, "for-each-ref", "refs/codeflux/").strip() == ""

    # A ref left by a process that died before its commit is an orphan no row names: the next capture replaces it.
    orphan = git(binding.repo_root, "rev-parse", binding.base).strip()
    git(binding.repo_root, "update-ref", f"refs/codeflux/checkpoints/{binding.task_id}/1", orphan)
    row = CheckpointService(tasks.changes).capture_checkpoint(binding.task_id, CheckpointTrigger.PAUSED)
    assert row is not None and row.sequence == 1 and row.commit_id != orphan
    assert read_private_ref(binding.repo_root, row.ref_name) == row.commit_id
    assert git(binding.repo_root, "show", f"{row.commit_id}:pkg/new.py") == "X = 1\n"


def test_recovery_names_the_last_checkpoint_as_known_and_reconcile_checkpoints_the_paused_state(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    binding = a_running_task_with_worktree(tasks, a_repository(tmp_path / "git"), {"pkg/new.py": "X = 1\n"})
    taken = CheckpointService(tasks.changes).capture_checkpoint(binding.task_id, CheckpointTrigger.MATERIAL_EDIT)
    assert taken is not None

    recovery = RecoveryService(db)
    recovery.recover_at_startup()
    view = recovery.assess(binding.task_id)
    assert view.task.state is TaskState.RECOVERY_REQUIRED and view.last_checkpoint == taken
    assessment = db.read(lambda v: latest_assessment(v, binding.task_id))
    assert assessment is not None
    assert assessment.known["last_checkpoint"] == {
        "sequence": 1, "trigger": "material-edit", "commit": taken.commit_id, "ref": taken.ref_name,
        "diff_identity": taken.diff_identity, "event_sequence": taken.event_sequence}

    assert recovery.reconcile(binding.task_id).state is TaskState.PAUSED
    last = checkpoints(db, binding.task_id)[-1]
    assert (last.sequence, last.trigger, last.diff_identity) == (2, CheckpointTrigger.PAUSED, taken.diff_identity)


def refused(db: Database, work: Callable[[Transaction], object], because: str) -> None:
    with pytest.raises(StoreError) as raised:
        db.write(work)
    assert because in str(raised.value.__cause__)


def test_checkpoints_and_deliveries_are_facts_the_schema_keeps(harness: Harness) -> None:
    task_id = run_to_review(harness)
    [first, *_] = checkpoints(harness.db, task_id)
    refused(harness.db, lambda tx: tx.execute("UPDATE checkpoints SET trigger_kind = 'shutdown' WHERE id = ?",
                                              (first.checkpoint_id,)), "checkpoints are immutable")
    refused(harness.db, lambda tx: tx.execute("DELETE FROM checkpoints WHERE id = ?", (first.checkpoint_id,)),
            "checkpoints are never deleted")
    refused(harness.db, lambda tx: checkpoint_rows.insert_checkpoint(
        tx, task_id=task_id, sequence=first.sequence, trigger=CheckpointTrigger.SHUTDOWN, commit_id=first.commit_id,
        head_commit=first.head_commit, diff_identity=first.diff_identity, plan_revision=1, attempt=1,
        event_sequence=first.event_sequence, at_us=1), "count up")
    identity = diff_against_base(diff_binding(harness, task_id)).identity
    ReviewService(harness.db).reject_task(task_id, reviewed_identity=identity, reason="no")
    refused(harness.db, lambda tx: tx.execute("DELETE FROM task_deliveries WHERE task_id = ?", (task_id.value,)),
            "task deliveries are never deleted")
