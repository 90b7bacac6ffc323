"""The authority service against a real migrated database: one transaction per outcome, immutable facts,
identity-bound approvals consumed with the execution intent, capability denials, and reconciliation."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import pytest

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import Decider, DecisionOutcome, UserDecision
from codeflux.authority.service import AuthorityService, RequestView
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.errors import (
    ApprovalRequiredError,
    CapabilityDeniedError,
    DecisionAlreadyRecordedError,
    IdempotencyConflictError,
    StoreError,
    TaskInactiveError,
)
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store.authority import ExecutionResultValues
from codeflux.store.database import Database, Transaction
from codeflux.store.events import find_journal_gaps, read_events_after
from codeflux.store.task_records import change_task_state
from codeflux.store.tasks import insert_task, require_task, task_session_id
from tests.fixtures.journal import count, event_kinds

PIN = ExecutablePin(path="/usr/bin/true", sha256="c" * 64)


def new_task(db: Database, state: TaskState = TaskState.RUNNING) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                    worktree=Path(f"/data/worktrees/repo/{task_id}"), state=state))
    return task_id


def submit(service: AuthorityService, task_id: TaskId, tool: str, key: str, **raw: object) -> RequestView:
    request = bind_tool_request(tool, raw)
    operation = describe_operation(request, task_id=task_id, executable=PIN if tool == "run_command" else None)
    return service.record_request(operation=operation, classification=classify_tool_request(request),
                                  source="test", idempotency_key=key)


@pytest.fixture
def service(db: Database) -> AuthorityService:
    return AuthorityService(db)


def test_a_request_its_first_decision_and_its_event_commit_together(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)

    view = submit(service, task_id, "run_command", "k1", argv=["pytest", "-q"])

    assert view.decision.outcome is DecisionOutcome.PENDING
    assert view.decision.decided_by is Decider.SYSTEM
    assert event_kinds(db, task_id) == ["task-created", "tool-requested"]
    assert [request.request_id for request in service.pending_requests(task_id)] == [view.request_id]
    assert db.read(find_journal_gaps) == []


@pytest.mark.security
def test_the_tool_requested_event_names_the_call_and_never_carries_a_secret_in_it(
        db: Database, service: AuthorityService) -> None:
    """The timeline's row for a call names its command (the event's one-line summary), redacted like any output."""
    task_id = new_task(db)
    key = "sk-ant-api03-" + "Q" * 80
    submit(service, task_id, "run_command", "k1", argv=["pytest", "-q"])
    submit(service, task_id, "run_command", "k2", argv=["curl", "-H", f"x-api-key: {key}", "https://example.com"])
    submit(service, task_id, "read_file", "k3", path="calc/ops.py")
    events = db.read(lambda view: read_events_after(view, session_id=task_session_id(task_id), after_sequence=0,
                                                    limit=100))
    summaries = [json.loads(event.payload_json).get("summary") for event in events if event.kind == "tool-requested"]
    assert summaries[0] == "pytest -q" and summaries[2] == "calc/ops.py"  # the control: a command, a file by name
    assert summaries[1].startswith("curl -H ") and key not in summaries[1] and "Q" * 20 not in summaries[1]


def test_an_automatic_read_still_records_an_immutable_decision_row(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db, TaskState.PAUSED)

    view = submit(service, task_id, "read_file", "k1", path="README.md")

    assert view.decision.outcome is DecisionOutcome.AUTOMATIC
    assert count(db, "authority_decisions") == 1
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE authority_decisions SET outcome = 'denied'"))


def test_an_identical_retry_returns_the_original_request_and_another_request_under_the_key_conflicts(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first = submit(service, task_id, "run_command", "same-key", argv=["ls"])

    again = submit(service, task_id, "run_command", "same-key", argv=["ls"])

    assert again.request_id == first.request_id
    assert count(db, "tool_requests") == 1
    with pytest.raises(IdempotencyConflictError):
        submit(service, task_id, "run_command", "same-key", argv=["ls", "-a"])


def test_allow_for_task_covers_a_later_identical_request_and_names_the_approval(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first = submit(service, task_id, "run_command", "k1", argv=["curl", "https://example.com"])
    decided = service.record_user_decision(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="needed")

    later = submit(service, task_id, "run_command", "k2", argv=["curl", "https://example.com"])
    other = submit(service, task_id, "run_command", "k3", argv=["curl", "https://example.org"])

    assert decided.decision.outcome is DecisionOutcome.ALLOWED_FOR_TASK
    assert later.decision.outcome is DecisionOutcome.ALLOWED_FOR_TASK
    assert later.decision.decided_by is Decider.SYSTEM
    assert later.decision.approval_id is not None
    assert other.decision.outcome is DecisionOutcome.PENDING


def test_allow_once_is_consumed_in_the_intent_transaction(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")

    intent = service.record_execution_intent(view.request_id)

    consumed = db.read(lambda v: v.query_all("SELECT consumed_at_us, consumed_by_execution_id FROM approvals"))
    assert intent.existing is None and intent.consumed_approval_id is not None
    assert consumed[0][0] is not None and consumed[0][1] == intent.execution_id
    assert event_kinds(db, task_id)[-1] == "tool-execution-intended"
    again = service.record_execution_intent(view.request_id)
    assert again.existing is not None and again.execution_id == intent.execution_id
    assert count(db, "tool_executions") == 1


def test_a_consumed_approval_cannot_be_reset_or_consumed_again(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")
    service.record_execution_intent(view.request_id)

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE approvals SET consumed_at_us = NULL, consumed_by_execution_id = NULL,"
                                       " revision = revision + 1"))
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("DELETE FROM tool_executions"))


def test_an_execution_cannot_start_while_its_request_is_pending_and_nothing_is_written(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])

    with pytest.raises(ApprovalRequiredError) as caught:
        service.record_execution_intent(view.request_id)

    assert caught.value.needs == ("process",)
    assert count(db, "tool_executions") == 0


def test_a_denial_refuses_later_requests_and_other_pending_ones_it_covers(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    curl = submit(service, task_id, "run_command", "k1", argv=["curl", "https://example.com"])
    wget = submit(service, task_id, "run_command", "k2", argv=["wget", "https://example.org"])
    ls = submit(service, task_id, "run_command", "k3", argv=["ls"])

    service.record_user_decision(curl.request_id, UserDecision.DENY, reason="no network",
                                 deny=(CapabilityNeed(capability=Capability.NETWORK),))
    later = submit(service, task_id, "run_command", "k4", argv=["sh", "-c", "curl https://example.net"])

    assert service.read_request(curl.request_id).decision.outcome is DecisionOutcome.DENIED
    assert service.read_request(wget.request_id).decision.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY
    assert service.read_request(ls.request_id).decision.outcome is DecisionOutcome.PENDING
    assert later.decision.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY
    assert later.decision.denial_id is not None
    with pytest.raises(CapabilityDeniedError):
        service.record_execution_intent(later.request_id)
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("DELETE FROM denials"))


def test_a_denial_in_one_task_does_not_reach_another(db: Database, service: AuthorityService) -> None:
    denied, other = new_task(db), new_task(db)
    curl = submit(service, denied, "run_command", "k1", argv=["curl", "https://example.com"])
    service.record_user_decision(curl.request_id, UserDecision.DENY, reason="no")

    assert submit(service, other, "run_command", "k1", argv=["curl", "https://example.com"]).decision.outcome is (
        DecisionOutcome.PENDING
    )


def test_a_request_is_decided_once_and_the_same_answer_again_changes_nothing(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")

    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once again")
    with pytest.raises(DecisionAlreadyRecordedError):
        service.record_user_decision(view.request_id, UserDecision.DENY, reason="changed my mind")

    assert count(db, "authority_decisions") == 2
    assert count(db, "approvals") == 1


def test_pausing_the_task_refuses_an_approved_execution(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    service.record_user_decision(view.request_id, UserDecision.ALLOW_FOR_TASK, reason="ok")
    db.write(lambda tx: change_task_state(tx, task_id=task_id, expected_revision=0, state=TaskState.PAUSED,
                                          reason="test"))

    with pytest.raises(TaskInactiveError):
        service.record_execution_intent(view.request_id)
    assert submit(service, task_id, "run_command", "k2", argv=["true"]).decision.outcome is (
        DecisionOutcome.REFUSED_INACTIVE_TASK
    )


def test_an_execution_moves_forward_only_and_is_immutable_once_it_ended(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "read_file", "k1", path="README.md")
    intent = service.record_execution_intent(view.request_id)
    service.mark_execution_running(intent.execution_id)
    task = db.read(lambda v: require_task(v, task_id))

    ended = service.record_execution_result(
        task=task, execution_id=intent.execution_id,
        result=ExecutionResultValues(state=ToolExecutionState.SUCCEEDED, content="hello"))

    assert ended.state == "succeeded" and ended.started_at_us is not None and ended.finished_at_us is not None
    for sql in ("UPDATE tool_executions SET state = 'failed', failure_kind = 'x'",
                "UPDATE tool_executions SET content = 'changed'",
                "UPDATE tool_executions SET state = 'intended', finished_at_us = NULL, content = NULL"):
        with pytest.raises(StoreError):
            db.write(partial(Transaction.execute, sql=sql))


def test_reconciliation_marks_intents_without_a_result_outcome_unknown_and_never_reruns(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="once")
    intent = service.record_execution_intent(view.request_id)

    assert service.reconcile_interrupted_executions() == [intent.execution_id]
    assert service.reconcile_interrupted_executions() == []

    execution = service.read_execution(view.request_id)
    assert execution is not None and execution.state == "outcome-unknown"
    assert service.record_execution_intent(view.request_id).existing is not None
    assert event_kinds(db, task_id)[-1] == "tool-execution-finished"


@pytest.mark.parametrize("table", ["tool_requests", "authority_decisions", "denials"])
def test_fact_tables_refuse_updates_and_deletes(db: Database, service: AuthorityService, table: str) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["curl", "https://example.com"])
    service.record_user_decision(view.request_id, UserDecision.DENY, reason="no")

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute(f"UPDATE {table} SET task_id = task_id"))  # noqa: S608
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute(f"DELETE FROM {table}"))  # noqa: S608


def test_a_second_decision_must_resolve_a_pending_one(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "read_file", "k1", path="a")

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute(
            "INSERT INTO authority_decisions (id, request_id, task_id, supersedes_decision_id, outcome,"
            " covered_needs_json, decided_by, reason, decided_at_us)"
            " VALUES ('dec_0123456789abcdef', ?, ?, ?, 'allowed-once', '[]', 'user', 'late', 1)",
            (view.request_id, task_id.value, view.decision.decision_id),
        ))


def test_an_approval_binds_its_request_identity(db: Database, service: AuthorityService) -> None:
    task_id = new_task(db)
    view = submit(service, task_id, "run_command", "k1", argv=["true"])
    decided = service.record_user_decision(view.request_id, UserDecision.ALLOW_FOR_TASK, reason="ok")

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute(
            "INSERT INTO approvals (id, task_id, request_id, decision_id, operation_identity, scope, created_at_us)"
            " VALUES ('apr_0123456789abcdef', ?, ?, ?, ?, 'allow-for-task', 1)",
            (task_id.value, view.request_id, decided.decision.decision_id, "d" * 64),
        ))


def test_a_task_keeps_its_worktree_and_its_revision_advances_by_one(db: Database) -> None:
    task_id = new_task(db)

    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE tasks SET worktree_path = '/elsewhere', revision = revision + 1"))
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE tasks SET state = 'paused', revision = revision + 2"))
    moved = db.write(lambda tx: change_task_state(tx, task_id=task_id, expected_revision=0, state=TaskState.PAUSED,
                                          reason="test"))
    assert (moved.state, moved.revision) == (TaskState.PAUSED, 1)


def test_a_headless_refusal_denies_that_request_only_and_a_person_denial_blocks_the_capability(
    db: Database, service: AuthorityService
) -> None:
    task_id = new_task(db)
    first = submit(service, task_id, "run_command", "k1", argv=["pytest", "-q"])

    refused = service.record_user_decision(first.request_id, UserDecision.DENY, reason="not pre-approved",
                                           decided_by=Decider.HEADLESS_POLICY)

    assert refused.decision.outcome is DecisionOutcome.DENIED
    assert count(db, "denials") == 0
    again = submit(service, task_id, "run_command", "k2", argv=["pytest", "-q"])
    assert again.decision.outcome is DecisionOutcome.PENDING

    service.record_user_decision(again.request_id, UserDecision.DENY, reason="no processes here")

    assert count(db, "denials") == 1
    later = submit(service, task_id, "run_command", "k3", argv=["ls"])
    assert later.decision.outcome is not DecisionOutcome.PENDING
