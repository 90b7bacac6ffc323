"""Reviewed commands in memory and the approval card's "allowed before" read through it (real SQLite, git and
worker processes): a person's allowance in one task becomes a ``reviewed-command`` entry and the next task's card
for exactly that operation says so; quarantining the entry takes the line away; other arguments are never shown;
the headless policy's answer is not remembered; after the repository's dependency set changed (pyproject edited
and committed) the entry is refused as inapplicable and the card no longer claims it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.reviewed_commands import allowed_before
from codeflux.coordinator.runs.tool_driver import SubmittedRequest, ToolDriver
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.authority import Decider
from codeflux.domain.ids import TaskId
from codeflux.domain.memory import ApplicabilityReason, EvidenceKind, EvidenceRef, MemoryEntry, MemoryKind, StateCause
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.memory.recall import invalidate_memory_entry
from codeflux.services import approvals
from codeflux.services.app import CoordinatorApp
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.memory import list_memory_entries
from tests.fixtures.repos import commit_all, write_files
from tests.fixtures.reviews import a_running_task_with_worktree, move
from tests.fixtures.services import call, service_app
from tests.fixtures.tasks import a_repository

_keys = itertools.count(1)
PYTEST = ("pytest", "-q")  # not the plan's check (`python -m pytest -q`), which its approval allows
PYPROJECT = '[project]\nname = "calc"\nversion = "0.1.0"\ndependencies = [{pins}]\n'


@pytest.fixture
def driver(confined_driver: ToolDriver) -> ToolDriver:
    return confined_driver


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, approvals.methods)


def start(tasks: TaskService, snapshot: RepositorySnapshot) -> TaskId:
    return a_running_task_with_worktree(tasks, snapshot, {}).task_id


def run(driver: ToolDriver, task_id: TaskId, *argv: str) -> SubmittedRequest:
    submitted = driver.submit_tool_request(task_id, "run_command", {"argv": list(argv)},
                                           idempotency_key=f"k{next(_keys)}", source="test")
    assert submitted.outcome is DecisionOutcome.PENDING
    return submitted


def card(app: CoordinatorApp, task_id: TaskId, request: SubmittedRequest) -> pb.PendingApproval:
    listed = call(app, "/codeflux.v1.ApprovalService/ListPending", pb.ListPendingRequest(task_id=task_id.value))
    assert isinstance(listed, pb.ListPendingReply)
    [pending] = [p for p in listed.pending if p.request_id == request.request_id]
    return pending


def earlier(app: CoordinatorApp, task_id: TaskId, request: SubmittedRequest) -> list[tuple[str, str]]:
    return [(e.task_id, e.outcome) for e in card(app, task_id, request).allowed_before]


def reviewed(db: Database) -> list[MemoryEntry]:
    return db.read(lambda view: list_memory_entries(view, kind=MemoryKind.REVIEWED_COMMAND))


def with_dependencies(repository: Path, *pins: str) -> RepositorySnapshot:
    write_files(repository, {"pyproject.toml": PYPROJECT.format(pins=", ".join(f'"{pin}"' for pin in pins))})
    commit_all(repository, f"dependencies {' '.join(pins)}")
    return open_repository(repository)


def test_a_person_s_allowance_is_remembered_and_the_next_card_reads_it_from_memory_for_exactly_that_operation(
    app: CoordinatorApp, driver: ToolDriver, db: Database, data_location: DataLocation, tmp_path: Path,
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    snapshot = with_dependencies(a_repository(tmp_path / "git").root, "attrs>=22")

    first = start(tasks, snapshot)
    asked = run(driver, first, *PYTEST)
    first_card = card(app, first, asked)
    assert list(first_card.allowed_before) == [] and reviewed(db) == []
    driver.decide(asked.request_id, UserDecision.ALLOW_ONCE, reason="run the tests")
    [entry] = reviewed(db)
    decision_id = driver.read_request(asked.request_id).decision.decision_id
    assert entry.body["repository_identity"] == first_card.repository_identity
    assert entry.body["operation_identity"] == str(asked.operation_identity)
    assert entry.body["argv"] == list(PYTEST) and entry.body["allowed"] == "allowed-once"
    assert set(entry.evidence) == {EvidenceRef(kind=EvidenceKind.DECISION, ref=decision_id),
                                   EvidenceRef(kind=EvidenceKind.TASK, ref=first.value)}
    assert "command pytest -q" in entry.text
    move(tasks, first, TaskState.PAUSED)

    second = start(tasks, snapshot)
    again = run(driver, second, *PYTEST)
    other = run(driver, second, *PYTEST, "tests")  # the same program, other arguments
    assert earlier(app, second, again) == [(first.value, "allowed-once")]  # positive control: through memory
    assert card(app, second, again).repository_identity == first_card.repository_identity
    assert earlier(app, second, other) == []  # similar text, another operation: never shown

    # The headless policy's answer is no person's review: not remembered (the person's above was).
    driver.decide(other.request_id, UserDecision.ALLOW_ONCE, reason="pre-approved", decided_by=Decider.HEADLESS_POLICY)
    assert [e.entry_id for e in reviewed(db)] == [entry.entry_id]

    invalidate_memory_entry(db, entry.entry_id, cause=StateCause.PERSON, reason="do not trust this any more")
    assert earlier(app, second, again) == []  # the quarantined entry no longer speaks
    assert [text.split(":")[0] for text in card(app, second, again).allowed_before_refused] == ["quarantined"]
    assert [reason for reason, _ in allowed_before(db, again.request_id).refused] == [ApplicabilityReason.QUARANTINED]

    driver.decide(again.request_id, UserDecision.ALLOW_FOR_TASK, reason="tests again")
    move(tasks, second, TaskState.PAUSED)
    third = start(tasks, snapshot)
    asked_third = run(driver, third, *PYTEST)
    assert earlier(app, third, asked_third) == [(second.value, "allowed-for-task")]  # control for the change below
    stale = "other-dependencies: learned with another dependency set"
    assert stale not in card(app, third, asked_third).allowed_before_refused
    move(tasks, third, TaskState.PAUSED)

    changed = with_dependencies(snapshot.root, "attrs>=23")
    fourth = start(tasks, changed)
    asked_fourth = run(driver, fourth, *PYTEST)
    fourth_card = card(app, fourth, asked_fourth)
    assert fourth_card.repository_identity == first_card.repository_identity  # the same operation …
    assert list(fourth_card.allowed_before) == []  # … but learned with another dependency set: not claimed
    assert "other-dependencies: learned with another dependency set" in fourth_card.allowed_before_refused
    refused = allowed_before(db, asked_fourth.request_id).refused
    assert (ApplicabilityReason.OTHER_DEPENDENCIES, "learned with another dependency set") in refused


def test_the_decision_stands_when_memory_cannot_be_written(
    app: CoordinatorApp, driver: ToolDriver, db: Database, data_location: DataLocation, tmp_path: Path,
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    snapshot = a_repository(tmp_path / "git")
    task = start(tasks, snapshot)
    asked = run(driver, task, *PYTEST)
    (snapshot.root / ".git").rename(snapshot.root / "moved-git")  # the checkout memory binds to is unreadable
    assert list(card(app, task, asked).allowed_before) == []  # the card is still shown, claiming nothing
    decided = driver.decide(asked.request_id, UserDecision.ALLOW_ONCE, reason="run the tests")
    assert decided.outcome is DecisionOutcome.ALLOWED_ONCE
    assert driver.read_request(asked.request_id).outcome is DecisionOutcome.ALLOWED_ONCE
    assert reviewed(db) == []  # nothing remembered (the first test shows a readable checkout is remembered)
