"""The combined commit: a request whose first decision already allows it carries its execution intent in
the submission's transaction; anything that waits for a person, or is refused, records no intent; a retry
under the same key records nothing new and hands back the recorded execution; a failed commit leaves
nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pytest

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import Decider, DecisionOutcome, UserDecision
from codeflux.authority.intents import ExecutionIntent
from codeflux.authority.service import AuthorityService, RequestView
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.errors import ApprovalRequiredError, StoreBusyError
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store.authority import ExecutionResultValues
from codeflux.store.database import Database
from codeflux.store.events import find_journal_gaps
from codeflux.store.tasks import insert_task, require_task
from tests.fixtures.journal import count, event_kinds

PIN = ExecutablePin(path="/usr/bin/curl", sha256="d" * 64)
CURL = ["curl", "https://example.com"]


def new_task(db: Database, state: TaskState = TaskState.RUNNING) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                    worktree=Path(f"/data/worktrees/repo/{task_id}"), state=state))
    return task_id


def submit(service: AuthorityService, task_id: TaskId, tool: str, key: str, *, intend: bool = True,
           before_commit: object = None, **raw: object) -> tuple[RequestView, ExecutionIntent | None]:
    request = bind_tool_request(tool, raw)
    operation = describe_operation(request, task_id=task_id, executable=PIN if tool == "run_command" else None)
    classification = classify_tool_request(request)
    if not intend:
        return service.record_request(operation=operation, classification=classification, source="test",
                                      idempotency_key=key), None
    return service.record_request_with_intent(operation=operation, classification=classification, source="test",
                                              idempotency_key=key, before_commit=before_commit)  # type: ignore[arg-type]


def commits_during(db: Database, action: object) -> int:
    seen: list[int] = []
    remove = db.add_commit_listener(lambda: seen.append(1))
    try:
        action()  # type: ignore[operator]
    finally:
        remove()
    return len(seen)


@pytest.fixture
def service(db: Database) -> AuthorityService:
    return AuthorityService(db)


def test_an_automatic_write_commits_request_decision_and_intent_in_one_transaction(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    made: list[tuple[RequestView, ExecutionIntent | None]] = []

    commits = commits_during(db, lambda: made.append(
        submit(service, task_id, "write_file", "k1", path="a.txt", content="x")))

    view, intent = made[0]
    assert commits == 1
    assert view.decision.outcome is DecisionOutcome.AUTOMATIC
    assert intent is not None and intent.existing is None and intent.consumed_approval_id is None
    assert intent.identity == view.identity and intent.request_id == view.request_id
    stored = service.read_execution(view.request_id)
    assert stored is not None and stored.state == "intended" and stored.execution_id == intent.execution_id
    assert stored.decision_id == view.decision.decision_id
    assert event_kinds(db, task_id) == ["task-created", "tool-requested", "tool-execution-intended"]
    assert db.read(find_journal_gaps) == []


def test_a_standing_allow_for_task_approval_carries_the_intent_without_being_consumed(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first, none = submit(service, task_id, "run_command", "k1", argv=CURL)
    service.record_user_decision(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="needed")
    approval_ids = db.read(lambda v: v.query_all("SELECT id FROM approvals"))

    later, intent = submit(service, task_id, "run_command", "k2", argv=CURL)

    assert none is None and first.decision.outcome is DecisionOutcome.PENDING
    assert later.decision.outcome is DecisionOutcome.ALLOWED_FOR_TASK
    assert intent is not None and intent.consumed_approval_id is None
    stored = service.read_execution(later.request_id)
    assert stored is not None and stored.approval_id == later.decision.approval_id
    assert approval_ids == [(later.decision.approval_id,)]
    consumed = db.read(lambda v: v.query_all("SELECT consumed_at_us FROM approvals"))
    assert consumed == [(None,)]


@pytest.mark.parametrize("tool, raw", [("run_command", {"argv": CURL}),
                                       ("run_command", {"argv": ["sh", "-c", "curl https://example.com"]})])
def test_a_pending_request_records_no_intent_until_its_decision_and_allow_once_is_consumed_then(
    db: Database, service: AuthorityService, tool: str, raw: dict[str, object]
) -> None:
    task_id = new_task(db)

    view, intent = submit(service, task_id, tool, "k1", **raw)

    assert view.decision.outcome is DecisionOutcome.PENDING and intent is None
    assert count(db, "tool_executions") == 0
    with pytest.raises(ApprovalRequiredError):
        service.record_execution_intent(view.request_id)
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")
    later = service.record_execution_intent(view.request_id)
    assert later.consumed_approval_id is not None


def test_an_allow_once_approval_never_lets_a_later_identical_request_intend_at_submission(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first, _ = submit(service, task_id, "run_command", "k1", argv=CURL)
    service.record_user_decision(first.request_id, UserDecision.ALLOW_ONCE, reason="once")

    again, intent = submit(service, task_id, "run_command", "k2", argv=CURL)

    assert again.decision.outcome is DecisionOutcome.PENDING and intent is None


def test_another_operation_or_another_task_gets_no_intent_from_an_allow_for_task_approval(
    db: Database, service: AuthorityService
) -> None:
    task_id, other_task = new_task(db), new_task(db)
    first, _ = submit(service, task_id, "run_command", "k1", argv=CURL)
    service.record_user_decision(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="needed")

    for task, key, argv in ((task_id, "k2", [*CURL, "-s"]), (task_id, "k3", ["curl", "https://example.org"]),
                            (other_task, "k1", CURL)):
        view, intent = submit(service, task, "run_command", key, argv=argv)
        assert view.decision.outcome is DecisionOutcome.PENDING and intent is None
    assert count(db, "tool_executions") == 0


def test_a_denial_or_an_inactive_task_refuses_at_submission_and_records_no_intent(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first, _ = submit(service, task_id, "run_command", "k1", argv=CURL)
    service.record_user_decision(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="needed")
    other, _ = submit(service, task_id, "run_command", "k2", argv=["wget", "https://example.net"])
    service.record_user_decision(other.request_id, UserDecision.DENY, reason="no network",
                                 deny=(CapabilityNeed(capability=Capability.NETWORK),))

    denied, denied_intent = submit(service, task_id, "run_command", "k3", argv=CURL)  # the approval does not help
    paused = new_task(db, TaskState.PAUSED)
    inactive, inactive_intent = submit(service, paused, "write_file", "k1", path="a.txt", content="x")
    read, read_intent = submit(service, paused, "read_file", "k2", path="README.md")

    assert denied.decision.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY and denied_intent is None
    assert inactive.decision.outcome is DecisionOutcome.REFUSED_INACTIVE_TASK and inactive_intent is None
    assert read.decision.outcome is DecisionOutcome.AUTOMATIC and read_intent is not None  # reads still run
    assert count(db, "tool_executions") == 1


def test_a_retry_under_the_same_key_returns_the_recorded_execution_and_intends_nothing_new(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view, intent = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")
    assert intent is not None

    again, retried = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")
    task = db.read(lambda v: require_task(v, task_id))
    service.record_execution_result(task=task, execution_id=intent.execution_id,
                                    result=ExecutionResultValues(state=ToolExecutionState.SUCCEEDED))
    after_result, finished = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")

    assert again.request_id == view.request_id == after_result.request_id
    assert retried is not None and retried.existing is not None
    assert retried.existing.execution_id == intent.execution_id and retried.existing.state == "intended"
    assert finished is not None and finished.existing is not None and finished.existing.state == "succeeded"
    assert service.record_execution_intent(view.request_id).existing is not None
    assert count(db, "tool_executions") == 1 and count(db, "tool_requests") == 1
    assert event_kinds(db, task_id).count("tool-execution-intended") == 1


def test_a_retry_of_a_request_recorded_without_an_intent_records_none_at_submission(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view, _ = submit(service, task_id, "write_file", "k1", intend=False, path="a.txt", content="x")

    again, intent = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")

    assert again.request_id == view.request_id and intent is None
    assert count(db, "tool_executions") == 0
    assert service.record_execution_intent(view.request_id).existing is None  # the ordinary path intends it


def test_if_the_combined_commit_fails_nothing_is_recorded_and_a_retry_starts_afresh(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)

    def fail() -> None:
        raise RuntimeError("injected: the combined transaction fails")

    with pytest.raises(RuntimeError, match="injected"):
        submit(service, task_id, "write_file", "k1", before_commit=fail, path="a.txt", content="x")

    assert (count(db, "tool_requests"), count(db, "authority_decisions"), count(db, "tool_executions")) == (0, 0, 0)
    assert event_kinds(db, task_id) == ["task-created"]
    view, intent = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")
    assert intent is not None and intent.existing is None and view.decision.decided_by is Decider.SYSTEM


def test_a_pending_request_never_reaches_the_fault_point(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)

    def fail() -> None:
        raise RuntimeError("must not be called: no intent is written")

    view, intent = submit(service, task_id, "run_command", "k1", before_commit=fail, argv=CURL)

    assert view.decision.outcome is DecisionOutcome.PENDING and intent is None


def test_if_the_database_is_locked_the_submission_records_nothing(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    holder = apsw.Connection(str(db.path))
    holder.execute("PRAGMA busy_timeout = 0")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusyError):
            submit(service, task_id, "write_file", "k1", path="a.txt", content="x")
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    assert count(db, "tool_requests") == 0 and count(db, "tool_executions") == 0


def test_recovery_marks_a_combined_intent_left_without_a_result_outcome_unknown(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view, intent = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")
    assert intent is not None

    reconciled = service.reconcile_interrupted_executions()
    _, retried = submit(service, task_id, "write_file", "k1", path="a.txt", content="x")

    assert reconciled == [intent.execution_id]
    assert retried is not None and retried.existing is not None
    assert (retried.existing.state, retried.existing.result.failure_kind) == ("outcome-unknown", "interrupted")
    assert service.record_execution_intent(view.request_id).existing is not None
