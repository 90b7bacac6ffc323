"""The task service against a real database file and real git repositories: tasks, dirty-tree
acknowledgements, plan revisions and their approval, transitions with events in one transaction, CAS,
idempotency, and the 4-active / 1-per-repository limits — including starts racing from real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.tasks.service import Actor, PatchKind, PlanAuthor, TaskFault, TaskService
from codeflux.domain.errors import (
    CheckoutNotCleanError,
    ConflictError,
    DetachedHeadError,
    DirtyTreeNotAcknowledgedError,
    IdempotencyConflictError,
    InvalidValueError,
    PlanChangedError,
    PlanNotApprovedError,
    RepositoryChangedError,
    StaleRevisionError,
    StoreError,
    TaskLimitReachedError,
    TransitionNotAllowedError,
    UsageError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import plan_sha256
from codeflux.domain.tasks import TaskAction, TaskState
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.store import plans as plan_rows
from codeflux.store import repositories as repository_rows
from codeflux.store import task_records as records
from codeflux.store.database import Database
from codeflux.store.events import JournalEvent, read_events_after
from tests.fixtures.repos import RepoState
from tests.fixtures.tasks import a_draft, a_plan, a_ready_task, a_repository, a_running_task, keys

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def published() -> list[JournalEvent]:
    return []


@pytest.fixture
def service(db: Database, tmp_path: Path, published: list[JournalEvent]) -> TaskService:
    return TaskService(db, worktrees_root=tmp_path / "worktrees", publish=published.append)


@pytest.fixture
def repo(tmp_path: Path) -> RepositorySnapshot:
    return a_repository(tmp_path / "one")


def state_of(db: Database, task_id: TaskId) -> tuple[TaskState, int]:
    record = db.read(lambda view: records.require_task_record(view, task_id))
    return record.state, record.revision


def events_of(db: Database, task_id: TaskId) -> list[JournalEvent]:
    session = db.read(lambda view: records.require_task_record(view, task_id)).session_id
    return db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=1000))


def count_tasks(db: Database) -> int:
    return len(db.read(lambda view: records.list_task_records(view, limit=500)))


# ─── creating tasks ─────────────────────────────────────────────────────────────────────────────────


def test_a_task_is_created_as_a_draft_of_its_repository_with_its_requirement(
    db: Database, service: TaskService, repo: RepositorySnapshot, tmp_path: Path
) -> None:
    change = service.create_task(repo, "Fix add()\n\nIt breaks on negatives.", idempotency_key=keys())

    record = db.read(lambda view: records.require_task_record(view, change.task_id))
    repository = db.read(lambda view: repository_rows.require_repository(view, record.repository_id))  # type: ignore[arg-type]
    assert (change.state, change.revision, change.replayed) == (TaskState.DRAFT, 0, False)
    assert record.title == "Fix add()" and record.requirement == "Fix add()\n\nIt breaks on negatives."
    assert repository.identity == repo.identity and repository.root == repo.root
    assert record.worktree == tmp_path / "worktrees" / repository.repository_id.value / change.task_id.value
    assert [e.kind for e in events_of(db, change.task_id)] == ["task-created"]


def test_registering_a_repository_again_returns_the_same_row(service: TaskService, repo: RepositorySnapshot) -> None:
    assert service.register_repository(repo) == service.register_repository(repo)


def test_an_identical_retry_returns_the_first_task_and_another_request_under_the_key_conflicts(
    db: Database, service: TaskService, repo: RepositorySnapshot
) -> None:
    first = service.create_task(repo, "Fix add", idempotency_key="create-1")
    again = service.create_task(repo, "Fix add", idempotency_key="create-1")

    assert again.task_id == first.task_id and again.replayed
    with pytest.raises(IdempotencyConflictError):
        service.create_task(repo, "Fix sub", idempotency_key="create-1")
    assert count_tasks(db) == 1


def test_a_dirty_tree_needs_an_acknowledgement_of_exactly_its_list(db: Database, service: TaskService,
                                                                    tmp_path: Path) -> None:
    dirty = a_repository(tmp_path / "dirty", RepoState.DIRTY)

    with pytest.raises(DirtyTreeNotAcknowledgedError) as refused:
        service.create_task(dirty, "Fix add", idempotency_key=keys())
    assert refused.value.acknowledged_hash is None and refused.value.current_hash == dirty.dirty_hash
    assert count_tasks(db) == 0

    change = service.create_task(dirty, "Fix add", acknowledged_dirty_hash=dirty.dirty_hash, idempotency_key=keys())
    acknowledged = db.read(lambda view: repository_rows.latest_dirty_acknowledgement(view, change.task_id))
    assert acknowledged is not None and acknowledged.dirty_hash == dirty.dirty_hash
    assert [(c.path, c.status) for c in acknowledged.changes] == [(c.path, str(c.status)) for c in dirty.changes]


def test_a_stale_acknowledgement_is_refused_at_creation_and_at_start(
    db: Database, service: TaskService, tmp_path: Path
) -> None:
    seen = a_repository(tmp_path / "dirty", RepoState.DIRTY)
    (seen.root / "notes.txt").write_text("edited after the person looked\n")
    now = open_repository(seen.root)

    with pytest.raises(DirtyTreeNotAcknowledgedError) as refused:
        service.create_task(now, "Fix add", acknowledged_dirty_hash=seen.dirty_hash, idempotency_key=keys())
    assert refused.value.acknowledged_hash == seen.dirty_hash and "changed since" in str(refused.value)

    ready = a_ready_task(service, now)  # acknowledged the list as it is now …
    (seen.root / "notes.txt").write_text("and edited once more\n")  # … which then changes again
    later = open_repository(seen.root)
    with pytest.raises(DirtyTreeNotAcknowledgedError):
        service.start_run(ready.task_id, later, expected_revision=ready.revision, idempotency_key=keys())
    assert state_of(db, ready.task_id) == (TaskState.READY, ready.revision)

    service.acknowledge_dirty_tree(ready.task_id, later, acknowledged_hash=later.dirty_hash, idempotency_key=keys())
    started = service.start_run(ready.task_id, later, expected_revision=ready.revision, idempotency_key=keys())
    assert started.state is TaskState.RUNNING


@pytest.mark.parametrize(("state", "error"), [(RepoState.DETACHED, DetachedHeadError),
                                              (RepoState.MID_MERGE, CheckoutNotCleanError)])
def test_a_checkout_with_no_branch_or_an_operation_in_progress_is_refused(
    db: Database, service: TaskService, tmp_path: Path, state: RepoState, error: type[Exception]
) -> None:
    snapshot = a_repository(tmp_path / "odd", state)

    with pytest.raises(error):
        service.create_task(snapshot, "Fix add", acknowledged_dirty_hash=snapshot.dirty_hash, idempotency_key=keys())
    assert count_tasks(db) == 0


# ─── plans ──────────────────────────────────────────────────────────────────────────────────────────


def planning(service: TaskService, repo: RepositorySnapshot) -> tuple[TaskId, int]:
    draft = a_draft(service, repo)
    moved = service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                               reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())
    return draft.task_id, moved.revision


def test_approval_binds_to_the_revision_and_its_hash(db: Database, service: TaskService,
                                                     repo: RepositorySnapshot) -> None:
    task_id, revision = planning(service, repo)
    plan = a_plan()
    drafted = service.record_plan_revision(task_id, plan, created_by=PlanAuthor.MODEL, expected_revision=revision,
                                           idempotency_key=keys())
    assert (drafted.state, drafted.plan_revision) == (TaskState.AWAITING_PLAN_APPROVAL, 1)

    for offered_revision, offered_sha in ((1, "0" * 64), (2, plan_sha256(plan))):
        with pytest.raises(PlanChangedError):
            service.approve_plan(task_id, revision=offered_revision, sha256=offered_sha, idempotency_key=keys())
    assert state_of(db, task_id)[0] is TaskState.AWAITING_PLAN_APPROVAL

    approved = service.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys())

    decision = db.read(lambda view: plan_rows.plan_decision(view, task_id, 1))
    assert approved.state is TaskState.READY
    assert decision is not None and decision.approved and decision.sha256 == plan_sha256(plan)
    stored = db.read(lambda view: plan_rows.latest_plan_revision(view, task_id))
    assert stored is not None and stored.plan == plan and stored.created_by == "model"
    with pytest.raises(ConflictError):
        service.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys())


def test_sending_back_needs_a_new_revision_and_a_new_approval_before_work_goes_on(
    db: Database, service: TaskService, repo: RepositorySnapshot
) -> None:
    task_id, revision = planning(service, repo)
    first, second = a_plan(), a_plan("Handle negatives and zero")
    drafted = service.record_plan_revision(task_id, first, created_by=PlanAuthor.SCRIPTED,
                                           expected_revision=revision, idempotency_key=keys())

    back = service.send_back(task_id, revision=1, sha256=plan_sha256(first), feedback="also cover zero",
                             idempotency_key=keys())
    assert back.state is TaskState.FORECASTING and service.pending_feedback(task_id) == "also cover zero"
    with pytest.raises(ConflictError, match="sent-back"):  # a revision sent back is never approved later
        service.approve_plan(task_id, revision=1, sha256=plan_sha256(first), idempotency_key=keys())

    redrafted = service.record_plan_revision(task_id, second, created_by=PlanAuthor.SCRIPTED,
                                             feedback="also cover zero", expected_revision=back.revision,
                                             idempotency_key=keys())
    assert redrafted.plan_revision == 2 and drafted.plan_revision == 1
    view = service.show(task_id)
    assert view.plan is not None and view.plan.feedback == "also cover zero" and not view.plan_approved
    with pytest.raises(PlanChangedError):
        service.approve_plan(task_id, revision=1, sha256=plan_sha256(first), idempotency_key=keys())

    approved = service.approve_plan(task_id, revision=2, sha256=plan_sha256(second), idempotency_key=keys())
    assert approved.state is TaskState.READY and service.show(task_id).plan_approved


def test_a_plan_state_change_is_only_made_by_its_own_method(db: Database, service: TaskService,
                                                            repo: RepositorySnapshot) -> None:
    task_id, revision = planning(service, repo)
    drafted = service.record_plan_revision(task_id, a_plan(), created_by=PlanAuthor.USER, expected_revision=revision,
                                           idempotency_key=keys())

    with pytest.raises(UsageError, match="approve the plan"):
        service.transition(task_id, TaskState.READY, expected_revision=drafted.revision, reason="skip approval",
                           actor=Actor.USER, idempotency_key=keys())
    assert state_of(db, task_id) == (TaskState.AWAITING_PLAN_APPROVAL, drafted.revision)


def test_becoming_ready_without_an_approved_plan_is_refused(db: Database, service: TaskService,
                                                            repo: RepositorySnapshot) -> None:
    task_id, revision = planning(service, repo)
    paused = service.transition(task_id, TaskState.PAUSED, expected_revision=revision, reason="pause",
                                actor=Actor.USER, idempotency_key=keys())

    with pytest.raises(PlanNotApprovedError):
        service.transition(task_id, TaskState.READY, expected_revision=paused.revision, reason="resume",
                           actor=Actor.USER, idempotency_key=keys())
    assert state_of(db, task_id) == (TaskState.PAUSED, paused.revision)


def test_headless_decisions_are_recorded_as_such_and_codeflux_never_decides(
    db: Database, service: TaskService, repo: RepositorySnapshot
) -> None:
    task_id, revision = planning(service, repo)
    plan = a_plan()
    service.record_plan_revision(task_id, plan, created_by=PlanAuthor.SCRIPTED, expected_revision=revision,
                                 idempotency_key=keys())

    with pytest.raises(InvalidValueError):
        service.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), decided_by=Actor.SYSTEM,
                             idempotency_key=keys())
    service.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), decided_by=Actor.HEADLESS_POLICY,
                         idempotency_key=keys())
    decision = db.read(lambda view: plan_rows.plan_decision(view, task_id, 1))
    assert decision is not None and decision.decided_by == "headless-policy"


# ─── transitions ────────────────────────────────────────────────────────────────────────────────────


def test_a_transition_writes_its_state_event_and_row_together(db: Database, service: TaskService,
                                                               repo: RepositorySnapshot,
                                                               published: list[JournalEvent]) -> None:
    draft = a_draft(service, repo)
    published.clear()

    change = service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                                actor=Actor.SYSTEM, idempotency_key=keys())

    rows = db.read(lambda view: records.transitions_of_task(view, draft.task_id))
    event = next(e for e in events_of(db, draft.task_id) if e.sequence == rows[0].event_sequence)
    assert [(r.from_state, r.to_state, r.reason, r.actor, r.task_revision) for r in rows] == [
        (TaskState.DRAFT, TaskState.FORECASTING, "planning", "system", change.revision)]
    assert event.kind == "task-state-changed"
    assert event.payload == {"task_id": draft.task_id.value, "from": "draft", "to": "forecasting",
                             "revision": change.revision, "reason": "planning", "actor": "system"}
    assert [e.sequence for e in published] == [event.sequence]


def test_a_failure_after_the_transition_row_leaves_neither_state_nor_event_nor_row(
    db: Database, repo: RepositorySnapshot, tmp_path: Path
) -> None:
    faults: list[TaskFault] = [TaskFault.BEFORE_COMMIT]

    def inject(point: TaskFault) -> None:
        if point in faults:
            raise RuntimeError(f"injected at {point}")

    service = TaskService(db, worktrees_root=tmp_path / "worktrees", fault=inject)
    faults.clear()
    draft = a_draft(service, repo)
    before_events = events_of(db, draft.task_id)
    faults.append(TaskFault.BEFORE_COMMIT)

    with pytest.raises(RuntimeError, match="injected"):
        service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                           actor=Actor.SYSTEM, idempotency_key="the-key")

    assert state_of(db, draft.task_id) == (TaskState.DRAFT, 0)
    assert events_of(db, draft.task_id) == before_events
    assert db.read(lambda view: records.transitions_of_task(view, draft.task_id)) == []
    faults.clear()  # nothing was recorded under the key either: the same request now goes through
    change = service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                                actor=Actor.SYSTEM, idempotency_key="the-key")
    assert change.state is TaskState.FORECASTING and not change.replayed


def test_events_are_committed_before_they_are_published(db: Database, repo: RepositorySnapshot,
                                                        tmp_path: Path) -> None:
    seen: list[JournalEvent] = []
    crash = [True]

    def inject(point: TaskFault) -> None:
        if point is TaskFault.AFTER_COMMIT_BEFORE_PUBLISH and crash[0]:
            raise RuntimeError("crashed before publishing")

    service = TaskService(db, worktrees_root=tmp_path / "worktrees", publish=seen.append, fault=inject)

    with pytest.raises(RuntimeError, match="crashed"):
        service.create_task(repo, "Fix add", idempotency_key="create")

    assert seen == [] and count_tasks(db) == 1  # committed, replayable from the journal, never shown first
    crash[0] = False
    task_id = service.create_task(repo, "Fix add", idempotency_key="create").task_id
    committed = events_of(db, task_id)
    service.transition(task_id, TaskState.FORECASTING, expected_revision=0, reason="planning", actor=Actor.SYSTEM,
                       idempotency_key=keys())
    assert [e.sequence for e in seen] == [events_of(db, task_id)[-1].sequence]
    assert committed[0].kind == "task-created"


def test_a_stale_revision_is_refused_and_changes_nothing(db: Database, service: TaskService,
                                                         repo: RepositorySnapshot) -> None:
    draft = a_draft(service, repo)
    service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                       actor=Actor.SYSTEM, idempotency_key=keys())

    with pytest.raises(StaleRevisionError) as stale:
        service.transition(draft.task_id, TaskState.CANCELLED, expected_revision=0, reason="stop",
                           actor=Actor.USER, idempotency_key=keys())

    assert (stale.value.expected, stale.value.actual) == (0, 1)
    assert state_of(db, draft.task_id) == (TaskState.FORECASTING, 1)


def test_an_identical_transition_retry_is_replayed_once(db: Database, service: TaskService,
                                                        repo: RepositorySnapshot) -> None:
    draft = a_draft(service, repo)
    first = service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                               actor=Actor.SYSTEM, idempotency_key="move")
    again = service.transition(draft.task_id, TaskState.FORECASTING, expected_revision=0, reason="planning",
                               actor=Actor.SYSTEM, idempotency_key="move")

    assert (again.state, again.revision, again.replayed) == (first.state, first.revision, True)
    assert len(db.read(lambda view: records.transitions_of_task(view, draft.task_id))) == 1
    with pytest.raises(IdempotencyConflictError):
        service.transition(draft.task_id, TaskState.CANCELLED, expected_revision=1, reason="stop",
                           actor=Actor.USER, idempotency_key="move")


def test_a_transition_the_domain_table_refuses_changes_nothing(db: Database, service: TaskService,
                                                               repo: RepositorySnapshot) -> None:
    draft = a_draft(service, repo)

    with pytest.raises(TransitionNotAllowedError):
        service.transition(draft.task_id, TaskState.COMPLETED, expected_revision=0, reason="done?",
                           actor=Actor.USER, idempotency_key=keys())
    assert state_of(db, draft.task_id) == (TaskState.DRAFT, 0)


def test_available_actions_follow_the_domain_matrix(service: TaskService, repo: RepositorySnapshot) -> None:
    ready = a_ready_task(service, repo)

    actions = {a.action: a for a in service.available_actions(ready.task_id)}

    assert actions[TaskAction.START].available and actions[TaskAction.CANCEL].available
    assert not actions[TaskAction.APPROVE_PLAN].available and actions[TaskAction.APPROVE_PLAN].reason


# ─── starting runs and the limits ───────────────────────────────────────────────────────────────────


def test_a_start_records_the_base_commit_and_opens_attempt_one(db: Database, service: TaskService,
                                                               repo: RepositorySnapshot) -> None:
    started = a_running_task(service, repo)

    record = db.read(lambda view: records.require_task_record(view, started.task_id))
    assert (started.state, started.attempt, started.plan_revision) == (TaskState.RUNNING, 1, 1)
    assert record.base_revision == repo.head
    view = service.show(started.task_id)
    assert view.attempt is not None and view.attempt.is_open and view.attempt.plan_revision == 1


def test_a_task_started_twice_is_refused_and_left_as_it_was(db: Database, service: TaskService,
                                                            repo: RepositorySnapshot) -> None:
    started = a_running_task(service, repo)

    with pytest.raises(TransitionNotAllowedError):
        service.start_run(started.task_id, repo, expected_revision=started.revision, idempotency_key=keys())
    assert state_of(db, started.task_id) == (TaskState.RUNNING, started.revision)


def test_a_draft_cannot_start(db: Database, service: TaskService, repo: RepositorySnapshot) -> None:
    draft = a_draft(service, repo)

    with pytest.raises(TransitionNotAllowedError):
        service.start_run(draft.task_id, repo, expected_revision=0, idempotency_key=keys())
    assert state_of(db, draft.task_id) == (TaskState.DRAFT, 0)


def test_a_start_from_another_repository_is_refused(db: Database, service: TaskService, repo: RepositorySnapshot,
                                                    tmp_path: Path) -> None:
    ready = a_ready_task(service, repo)
    other = a_repository(tmp_path / "other")

    with pytest.raises(RepositoryChangedError):
        service.start_run(ready.task_id, other, expected_revision=ready.revision, idempotency_key=keys())
    assert state_of(db, ready.task_id) == (TaskState.READY, ready.revision)


def test_a_fifth_start_is_refused_naming_the_four_active_tasks(db: Database, service: TaskService,
                                                               tmp_path: Path) -> None:
    repos = [a_repository(tmp_path / f"r{n}") for n in range(5)]
    running = [a_running_task(service, snapshot) for snapshot in repos[:4]]
    fifth = a_ready_task(service, repos[4])

    with pytest.raises(TaskLimitReachedError) as refused:
        service.start_run(fifth.task_id, repos[4], expected_revision=fifth.revision, idempotency_key=keys())

    assert refused.value.limit == "active-tasks"
    assert set(refused.value.holders) == {r.task_id.value for r in running}
    assert all(r.task_id.value in str(refused.value) for r in running)
    assert state_of(db, fifth.task_id) == (TaskState.READY, fifth.revision)

    paused = service.transition(running[0].task_id, TaskState.PAUSED, expected_revision=running[0].revision,
                                reason="make room", actor=Actor.USER, idempotency_key=keys())
    assert paused.state is TaskState.PAUSED
    assert service.start_run(fifth.task_id, repos[4], expected_revision=fifth.revision,
                             idempotency_key=keys()).state is TaskState.RUNNING


def test_a_second_active_task_in_one_repository_is_refused_naming_the_holder(
    db: Database, service: TaskService, repo: RepositorySnapshot
) -> None:
    holder = a_running_task(service, repo)
    second = a_ready_task(service, repo)

    with pytest.raises(TaskLimitReachedError) as refused:
        service.start_run(second.task_id, repo, expected_revision=second.revision, idempotency_key=keys())

    assert (refused.value.limit, refused.value.holders) == ("repository", (holder.task_id.value,))
    assert holder.task_id.value in str(refused.value)
    assert state_of(db, second.task_id) == (TaskState.READY, second.revision)

    service.transition(holder.task_id, TaskState.CANCELLED, expected_revision=holder.revision, reason="stop",
                       actor=Actor.USER, idempotency_key=keys())
    assert service.start_run(second.task_id, repo, expected_revision=second.revision,
                             idempotency_key=keys()).state is TaskState.RUNNING


def test_resuming_a_paused_task_needs_a_free_slot_too(db: Database, service: TaskService,
                                                      repo: RepositorySnapshot) -> None:
    first = a_running_task(service, repo)
    paused = service.transition(first.task_id, TaskState.PAUSED, expected_revision=first.revision, reason="pause",
                                actor=Actor.USER, idempotency_key=keys())
    second = a_running_task(service, repo)

    with pytest.raises(TaskLimitReachedError) as refused:
        service.transition(first.task_id, TaskState.RUNNING, expected_revision=paused.revision, reason="resume",
                           actor=Actor.USER, idempotency_key=keys())

    assert refused.value.holders == (second.task_id.value,)
    assert state_of(db, first.task_id) == (TaskState.PAUSED, paused.revision)


def test_the_schema_refuses_the_limits_even_when_the_service_is_bypassed(
    db: Database, service: TaskService, tmp_path: Path
) -> None:
    repos = [a_repository(tmp_path / f"r{n}") for n in range(5)]
    holder = a_running_task(service, repos[0])
    same_repo = a_ready_task(service, repos[0])

    def force_running(task_id: TaskId, revision: int) -> None:
        db.write(lambda tx: records.record_task_transition(
            tx, task_id=task_id, expected_revision=revision, to_state=TaskState.RUNNING, reason="bypass",
            actor=Actor.SYSTEM, at_us=1))

    with pytest.raises(StoreError):
        force_running(same_repo.task_id, same_repo.revision)
    for snapshot in repos[1:4]:
        a_running_task(service, snapshot)
    fifth = a_ready_task(service, repos[4])
    with pytest.raises(StoreError):
        force_running(fifth.task_id, fifth.revision)
    assert state_of(db, holder.task_id)[0] is TaskState.RUNNING
    assert state_of(db, fifth.task_id)[0] is TaskState.READY


# ─── concurrent starts from real processes ──────────────────────────────────────────────────────────

_STARTER = r"""
import json, sys, time
from pathlib import Path
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import CodefluxError
from codeflux.domain.ids import TaskId
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database

database, worktrees, task, revision, repository, go, ready = sys.argv[1:8]
db = Database.open(Path(database))
try:
    service = TaskService(db, worktrees_root=Path(worktrees))
    snapshot = open_repository(Path(repository))
    Path(ready).touch()
    deadline = time.monotonic() + 60
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.0005)
    try:
        service.start_run(TaskId.parse(task), snapshot, expected_revision=int(revision), idempotency_key="race")
        print(json.dumps({"task": task, "started": True}))
    except CodefluxError as error:
        print(json.dumps({"task": task, "started": False, "error": type(error).__name__,
                          "holders": list(getattr(error, "holders", ()))}))
finally:
    db.close()
"""


def race_starts(db: Database, tmp_path: Path, starts: list[tuple[TaskId, int, Path]]) -> Iterator[dict[str, object]]:
    """Start every (task, revision, repository) from its own process at once; yield each process's report."""
    go = tmp_path / "go"
    children = []
    for index, (task_id, revision, repository) in enumerate(starts):
        ready = tmp_path / f"ready-{index}"
        argv = [sys.executable, "-B", "-c", _STARTER, str(db.path), str(tmp_path / "worktrees"), task_id.value,
                str(revision), str(repository), str(go), str(ready)]
        children.append((ready, subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 text=True)))
    try:
        deadline = time.monotonic() + 60
        while not all(ready.exists() for ready, _ in children) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        for _, child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, err
            yield json.loads(out)
    finally:
        for _, child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_two_processes_starting_tasks_of_one_repository_at_once_cannot_both_pass(
    db: Database, service: TaskService, repo: RepositorySnapshot, tmp_path: Path
) -> None:
    tasks = [a_ready_task(service, repo) for _ in range(2)]

    reports = list(race_starts(db, tmp_path, [(t.task_id, t.revision, repo.root) for t in tasks]))

    winners = [r["task"] for r in reports if r["started"]]
    losers = [r for r in reports if not r["started"]]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0]["error"] == "TaskLimitReachedError" and losers[0]["holders"] == winners
    states = sorted(state_of(db, t.task_id)[0] for t in tasks)
    assert states == sorted([TaskState.RUNNING, TaskState.READY])


def test_five_processes_starting_at_once_leave_exactly_four_active(
    db: Database, service: TaskService, tmp_path: Path
) -> None:
    repos = [a_repository(tmp_path / f"r{n}") for n in range(5)]
    tasks = [a_ready_task(service, snapshot) for snapshot in repos]

    reports = list(race_starts(db, tmp_path, [(t.task_id, t.revision, s.root) for t, s in zip(tasks, repos,
                                                                                                 strict=True)]))

    winners = {r["task"] for r in reports if r["started"]}
    losers = [r for r in reports if not r["started"]]
    assert len(winners) == 4 and len(losers) == 1
    assert losers[0]["error"] == "TaskLimitReachedError" and set(losers[0]["holders"]) == winners  # type: ignore[arg-type]
    assert sum(state_of(db, t.task_id)[0] is TaskState.RUNNING for t in tasks) == 4


# ─── patches ────────────────────────────────────────────────────────────────────────────────────────


def test_a_rejected_patch_is_kept_once_per_identity(db: Database, service: TaskService,
                                                    repo: RepositorySnapshot) -> None:
    task = a_running_task(service, repo)
    patch = b"diff --git a/pkg/calc.py b/pkg/calc.py\n\xff binary-safe\n"
    stored = service.store_patch(task.task_id, kind=PatchKind.REJECTED, diff_identity="a" * 64, patch=patch,
                                 base_commit=repo.head, head_commit="b" * 40, reason="the person rejected it")

    again = service.store_patch(task.task_id, kind=PatchKind.REJECTED, diff_identity="a" * 64, patch=patch,
                                base_commit=repo.head, head_commit="b" * 40, reason="retried")

    assert again == stored and stored.patch == patch
    assert [e.kind for e in events_of(db, task.task_id)].count("patch-stored") == 1
    with pytest.raises(ConflictError):
        service.store_patch(task.task_id, kind=PatchKind.REJECTED, diff_identity="a" * 64, patch=b"other",
                            base_commit=repo.head, head_commit="b" * 40, reason="different bytes")
    with pytest.raises(InvalidValueError):
        service.store_patch(task.task_id, kind=PatchKind.PRESERVED, diff_identity="not-an-identity", patch=patch,
                            base_commit=repo.head, head_commit="b" * 40, reason="bad identity")
    assert db.read(lambda view: records.patches_of_task(view, task.task_id)) == [stored]
