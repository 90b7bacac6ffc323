"""RecoveryService through its method table after a simulated interruption: a real tool execution stops right
after its intent commit (its outcome unknown), startup recovery marks the task, and the person records what
happened and picks an action — against a real SQLite file and a real git worktree."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.tasks.recovery import RecoveryService, exclusive_startup_lock
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.services import recovery
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code
from codeflux.store.accept_landings import LandingEndedBy, LandingOutcome, insert_landing, insert_landing_end
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from tests.fixtures.reviews import a_running_task_with_worktree, an_interrupted_tool_execution
from tests.fixtures.services import call, control, refusal, service_app
from tests.fixtures.tasks import a_draft, a_repository

LIST, RECORD = "/codeflux.v1.RecoveryService/ListRecovery", "/codeflux.v1.RecoveryService/RecordOutcome"
ACTION = "/codeflux.v1.RecoveryService/TakeAction"


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, recovery.methods)


@pytest.fixture
def interrupted(db: Database, data_location: DataLocation, tmp_path: Path) -> tuple[TaskId, str]:
    """A running task whose tool execution was interrupted, marked recovery-required by startup recovery."""
    binding = a_running_task_with_worktree(TaskService(db, worktrees_root=data_location.worktrees),
                                           a_repository(tmp_path / "git"), {"pkg/new.py": "X = 1\n"})
    item = an_interrupted_tool_execution(db, binding.task_id, tmp_path / "state")
    with exclusive_startup_lock(data_location) as alone:
        assert alone
        RecoveryService(db).recover_at_startup()
    return binding.task_id, item


def test_an_interrupted_task_is_listed_as_known_ambiguous_and_recommended(
    app: CoordinatorApp, interrupted: tuple[TaskId, str], tmp_path: Path
) -> None:
    task_id, item = interrupted

    listed = call(app, LIST, pb.ListRecoveryRequest())

    assert isinstance(listed, pb.ListRecoveryReply)
    [view] = listed.tasks
    assert view.task_id == task_id.value and view.state == "recovery-required" and view.revision > 0
    assert view.known[0] == "interrupted while running" and any(line.startswith("worktree: changed")
                                                                 for line in view.known)
    assert [(e.item_id, e.kind, e.outcome) for e in view.ambiguous] == [(item, "tool-execution", "")]
    assert view.recommended and view.why and not view.allowed
    assert {r.action for r in view.refused} == {"safe-resume", "reconcile", "preserve-patch", "abandon"}
    # one task's view (what `codeflux task show` asks for): the same, and nothing for a task that needs none
    only = call(app, LIST, pb.ListRecoveryRequest(task_id=task_id.value))
    assert isinstance(only, pb.ListRecoveryReply) and list(only.tasks) == [view]
    other = a_draft(TaskService(app.db, worktrees_root=app.location.worktrees), a_repository(tmp_path / "other"))
    none = call(app, LIST, pb.ListRecoveryRequest(task_id=other.task_id.value))
    assert isinstance(none, pb.ListRecoveryReply) and not none.tasks


def test_actions_wait_for_the_outcome_then_reconcile_pauses_the_task(
    app: CoordinatorApp, interrupted: tuple[TaskId, str]
) -> None:
    task_id, item = interrupted
    code, message = refusal(app, ACTION, pb.RecoveryActionRequest(control=control("x-1"), task_id=task_id.value,
                                                                   action="safe-resume"))
    assert code == Code.FAILED_PRECONDITION and item in message

    recorded = call(app, RECORD, pb.RecordOutcomeRequest(control=control("o-1"), task_id=task_id.value,
                                                         item_id=item, outcome="happened", note="I looked"))
    assert isinstance(recorded, pb.RecoveryView) and recorded.ambiguous[0].outcome == "happened"
    assert recorded.recommended == "reconcile" and "reconcile" in recorded.allowed

    stale = pb.RecoveryActionRequest(control=control("x-2", revision=recorded.revision - 1), task_id=task_id.value,
                                     action="reconcile")
    assert refusal(app, ACTION, stale)[0] == Code.ABORTED
    request = pb.RecoveryActionRequest(control=control("x-3", revision=recorded.revision), task_id=task_id.value,
                                       action="reconcile")
    done = call(app, ACTION, request)
    assert isinstance(done, pb.RecoveryView) and done.state == "paused"
    assert call(app, ACTION, request) == done  # a retry replays the reply; nothing is done twice
    listed = call(app, LIST, pb.ListRecoveryRequest())
    assert isinstance(listed, pb.ListRecoveryReply) and not listed.tasks


def test_preserve_patch_then_abandon(app: CoordinatorApp, interrupted: tuple[TaskId, str], db: Database,
                                     data_location: DataLocation) -> None:
    task_id, item = interrupted
    call(app, RECORD, pb.RecordOutcomeRequest(control=control("o-1"), task_id=task_id.value, item_id=item,
                                              outcome="did-not-happen"))

    kept = call(app, ACTION, pb.RecoveryActionRequest(control=control("p-1"), task_id=task_id.value,
                                                      action="preserve-patch"))
    assert isinstance(kept, pb.RecoveryView) and kept.state == "recovery-required"
    assert any(line.endswith("(stored as a patch)") for line in kept.known)
    [patch] = TaskService(db, worktrees_root=data_location.worktrees).patches(task_id)
    assert patch.kind == "preserved" and b"pkg/new.py" in patch.patch

    ended = call(app, ACTION, pb.RecoveryActionRequest(control=control("p-2"), task_id=task_id.value,
                                                       action="abandon"))
    assert isinstance(ended, pb.RecoveryView) and ended.state == "cancelled"


def test_bad_recovery_input_is_refused_with_typed_statuses(app: CoordinatorApp,
                                                           interrupted: tuple[TaskId, str]) -> None:
    task_id, item = interrupted
    task = task_id.value
    for action in ("resume", "", "ABANDON"):
        code, _ = refusal(app, ACTION, pb.RecoveryActionRequest(control=control("k"), task_id=task, action=action))
        assert code == Code.INVALID_ARGUMENT
    assert refusal(app, ACTION, pb.RecoveryActionRequest(task_id=task, action="abandon"))[0] == Code.INVALID_ARGUMENT
    assert refusal(app, RECORD, pb.RecordOutcomeRequest(control=control("k"), task_id=task, item_id=item,
                                                        outcome="maybe"))[0] == Code.INVALID_ARGUMENT
    assert refusal(app, RECORD, pb.RecordOutcomeRequest(control=control("k2"), task_id=task, item_id="exe_nope",
                                                        outcome="happened"))[0] == Code.NOT_FOUND
    unknown = "tsk_" + "0" * 32
    assert refusal(app, ACTION, pb.RecoveryActionRequest(control=control("k3"), task_id=unknown,
                                                         action="abandon"))[0] == Code.NOT_FOUND
    call(app, RECORD, pb.RecordOutcomeRequest(control=control("k4"), task_id=task, item_id=item, outcome="happened"))
    code, _ = refusal(app, RECORD, pb.RecordOutcomeRequest(control=control("k5"), task_id=task, item_id=item,
                                                           outcome="did-not-happen"))
    assert code == Code.ABORTED  # what happened is recorded once


def test_landing_resolutions_are_listed_most_recent_first_bounded_and_per_task(
    app: CoordinatorApp, db: Database, tmp_path: Path
) -> None:
    """ListRecovery's ``landings``: what retries and startup recovery resolved, from the accept journal (rows
    recorded as the landing code records them); an accept's own end is not a resolution."""
    tasks = TaskService(db, worktrees_root=app.location.worktrees)
    first = a_draft(tasks, a_repository(tmp_path / "one")).task_id
    second = a_draft(tasks, a_repository(tmp_path / "two")).task_id

    def landing(task_id: TaskId, n: int, outcome: LandingOutcome, by: LandingEndedBy) -> None:
        def work(tx: Transaction) -> None:
            row = insert_landing(
                tx, task_id=task_id, diff_identity="d" * 64, mode="fast-forward", work_tree="/w", git_dir="/w/.git",
                common_dir="/w/.git", branch_ref="refs/heads/main", previous_head=f"{n:040x}",
                previous_tree="a" * 40, landed_head=f"{n + 1000:040x}", landed_tree="b" * 40, task_commit="c" * 40,
                task_branch_ref=None, paths_json="[]", locks=(), token=f"t{n}", at_us=n * 10)
            insert_landing_end(tx, landing_id=row.landing_id, outcome=outcome, ended_by=by, detail=f"why {n}",
                               at_us=n * 10 + 5)
        db.write(work)

    for n in range(1, 26):
        landing(first, n, LandingOutcome.ROLLED_BACK if n % 2 else LandingOutcome.LANDED, LandingEndedBy.RECOVERY)
    landing(first, 26, LandingOutcome.LANDED, LandingEndedBy.ACCEPT)  # landed by its own accept: not listed
    landing(second, 27, LandingOutcome.ROLLED_BACK, LandingEndedBy.RETRY)

    listed = call(app, LIST, pb.ListRecoveryRequest())

    assert isinstance(listed, pb.ListRecoveryReply) and not listed.tasks
    assert len(listed.landings) == 20 and listed.landings_more == 6
    newest = listed.landings[0]
    assert (newest.task_id, newest.resolution, newest.by, newest.branch, newest.reason, newest.resolved_at_us) == (
        second.value, "rolled-back", "retry", "main", "why 27", 275)
    assert [r.resolved_at_us for r in listed.landings] == sorted((r.resolved_at_us for r in listed.landings),
                                                                reverse=True)
    finished = listed.landings[2]  # landing 24
    assert (finished.resolution, finished.by, finished.landed_head) == ("finished", "recovery", f"{1024:040x}")
    bounded = call(app, LIST, pb.ListRecoveryRequest(landings_limit=3))
    assert isinstance(bounded, pb.ListRecoveryReply)
    assert len(bounded.landings) == 3 and bounded.landings_more == 23
    only = call(app, LIST, pb.ListRecoveryRequest(task_id=second.value))
    assert isinstance(only, pb.ListRecoveryReply) and not only.tasks
    assert [r.task_id for r in only.landings] == [second.value] and only.landings_more == 0
