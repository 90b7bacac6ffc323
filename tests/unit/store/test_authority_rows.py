"""The authority rows leave the store as domain values: the operation parsed (and checked against its
identity), the needs with their reasons, and every outcome, decider, scope, source, state and failure kind
as its enum. A stored value outside its vocabulary is refused with a typed error, never coerced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.authority import ApprovalScope, ClassifiedNeed, Decider, DecisionOutcome, RequestSource
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError, StoredValueUnknownError
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import Operation, derive_operation_identity
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import ToolName
from codeflux.store import authority as rows
from codeflux.store.database import Database, Transaction
from codeflux.store.tasks import insert_task

NEEDS = (ClassifiedNeed(need=CapabilityNeed(capability=Capability.PROCESS), reason="runs a program"),
         ClassifiedNeed(need=CapabilityNeed(capability=Capability.NETWORK, resource="example.com"),
                        reason="curl names example.com"))


def _request(db: Database, tmp_path: Path) -> rows.ToolRequestRow:
    task_id = TaskId.from_entropy(os.urandom(16))
    operation = Operation(task_id=task_id, tool="read_file", arguments=(("path", "README.md"),))

    def work(tx: Transaction) -> rows.ToolRequestRow:
        insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                    state=TaskState.RUNNING)
        return rows.insert_tool_request(tx, request_id="treq_" + os.urandom(16).hex(), operation=operation,
                                        needs=NEEDS, compound=False, source=RequestSource.MODEL,
                                        idempotency_key="k1")

    return db.write(work)


def test_a_stored_request_and_its_decision_read_back_as_domain_values(db: Database, tmp_path: Path) -> None:
    inserted = _request(db, tmp_path)

    def decide(tx: Transaction) -> rows.DecisionRow:
        return rows.insert_decision(tx, decision_id="dec_" + os.urandom(16).hex(), request=inserted,
                                    outcome=DecisionOutcome.PENDING, covered=(NEEDS[1].need,),
                                    decided_by=Decider.SYSTEM, reason="asks a person")

    db.write(decide)
    request = db.read(lambda view: rows.read_tool_request(view, inserted.request_id))
    decision = db.read(lambda view: rows.latest_decision(view, inserted.request_id))

    assert request == inserted
    assert request.tool is ToolName.READ_FILE and request.source is RequestSource.MODEL
    assert request.needs == NEEDS and request.identity == derive_operation_identity(request.operation)
    assert decision.outcome is DecisionOutcome.PENDING and decision.decided_by is Decider.SYSTEM
    assert decision.covered == (NEEDS[1].need,)


def test_an_approval_and_an_execution_read_back_with_their_enums(db: Database, tmp_path: Path) -> None:
    request = _request(db, tmp_path)

    def work(tx: Transaction) -> tuple[rows.ApprovalRow, rows.ExecutionRow]:
        pending = rows.insert_decision(tx, decision_id="dec_" + os.urandom(16).hex(), request=request,
                                       outcome=DecisionOutcome.PENDING, covered=(), decided_by=Decider.SYSTEM,
                                       reason="asks a person")
        decision = rows.insert_decision(tx, decision_id="dec_" + os.urandom(16).hex(), request=request,
                                        outcome=DecisionOutcome.ALLOWED_ONCE, covered=(), decided_by=Decider.USER,
                                        reason="yes", supersedes_decision_id=pending.decision_id)
        approval = rows.insert_approval(tx, approval_id="apr_" + os.urandom(16).hex(), request=request,
                                        decision_id=decision.decision_id, scope=ApprovalScope.ALLOW_ONCE)
        intent = rows.insert_execution_intent(tx, execution_id="exe_" + os.urandom(16).hex(), request=request,
                                              decision_id=decision.decision_id, approval_id=approval.approval_id)
        rows.record_execution_result(tx, execution_id=intent.execution_id, result=rows.ExecutionResultValues(
            state=ToolExecutionState.FAILED, failure_kind=FailureKind.NOT_FOUND, confinement=ConfinementMode.NONE))
        return approval, intent

    approval, intent = db.write(work)
    stored = db.read(lambda view: rows.execution_of_request(view, request.request_id))

    assert approval.scope is ApprovalScope.ALLOW_ONCE and intent.state is ToolExecutionState.INTENDED
    assert stored is not None and stored.state is ToolExecutionState.FAILED
    assert stored.result.failure_kind is FailureKind.NOT_FOUND and stored.result.confinement is ConfinementMode.NONE


@pytest.mark.parametrize(("where", "value", "kind"), [
    (("authority_decisions", "outcome"), "maybe", "decision outcome"),
    (("authority_decisions", "decided_by"), "someone", "decider"),
    (("authority_decisions", "covered_needs_json"), '["teleport"]', "decision covered needs"),
    (("tool_requests", "source"), "oracle", "tool request source"),
    (("tool_requests", "needs_json"), '[{"need":"network"}]', "tool request needs"),
    (("tool_requests", "operation_json"), "{}", "tool request operation"),
])  # fmt: skip
def test_an_unknown_stored_value_is_refused_not_coerced(
    db: Database, tmp_path: Path, where: tuple[str, str], value: str, kind: str
) -> None:
    table, column = where
    request = _request(db, tmp_path)
    db.write(lambda tx: rows.insert_decision(tx, decision_id="dec_" + os.urandom(16).hex(), request=request,
                                             outcome=DecisionOutcome.AUTOMATIC, covered=(), decided_by=Decider.SYSTEM,
                                             reason="automatic"))
    # The schema's CHECK constraints keep most unknown values out; the decoder must refuse one all the same
    # (a newer or damaged database), so the row is read raw and the value swapped in before decoding.
    if table == "tool_requests":
        raw = db.read(lambda view: view.query_one(
            f"SELECT {rows._REQUEST} FROM tool_requests WHERE id = ?", (request.request_id,)))  # noqa: S608
        assert raw is not None
        swapped = tuple(value if name.strip() == column else cell
                        for name, cell in zip(rows._REQUEST.split(","), raw, strict=True))
        decode = rows._request
    else:
        raw = db.read(lambda view: view.query_one(
            f"SELECT {rows._DECISION} FROM authority_decisions WHERE request_id = ?", (request.request_id,)))  # noqa: S608
        assert raw is not None
        swapped = tuple(value if name.strip() == column else cell
                        for name, cell in zip(rows._DECISION.split(","), raw, strict=True))
        decode = rows._decision  # type: ignore[assignment]

    with pytest.raises(StoredValueUnknownError) as refused:
        decode(swapped)
    assert refused.value.kind == kind


def test_an_execution_with_an_unknown_state_or_failure_kind_is_refused(db: Database, tmp_path: Path) -> None:
    request = _request(db, tmp_path)

    def work(tx: Transaction) -> rows.ExecutionRow:
        decision = rows.insert_decision(tx, decision_id="dec_" + os.urandom(16).hex(), request=request,
                                        outcome=DecisionOutcome.AUTOMATIC, covered=(), decided_by=Decider.SYSTEM,
                                        reason="automatic")
        return rows.insert_execution_intent(tx, execution_id="exe_" + os.urandom(16).hex(), request=request,
                                            decision_id=decision.decision_id, approval_id=None)

    db.write(work)
    raw = db.read(lambda view: view.query_one(
        f"SELECT {rows._EXECUTION} FROM tool_executions WHERE request_id = ?", (request.request_id,)))  # noqa: S608
    assert raw is not None and rows._execution(raw).state is ToolExecutionState.INTENDED

    for index, value in ((6, "half-done"), (7, "gremlins")):
        with pytest.raises(StoredValueUnknownError):
            rows._execution((*raw[:index], value, *raw[index + 1:]))


def test_a_stored_operation_that_no_longer_matches_its_identity_is_refused(db: Database, tmp_path: Path) -> None:
    request = _request(db, tmp_path)
    raw = db.read(lambda view: view.query_one(
        f"SELECT {rows._REQUEST} FROM tool_requests WHERE id = ?", (request.request_id,)))  # noqa: S608
    assert raw is not None

    with pytest.raises(InvalidValueError, match="no longer matches its identity"):
        rows._request((*raw[:4], "0" * 64, *raw[5:]))
