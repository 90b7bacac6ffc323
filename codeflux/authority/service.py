"""The authority service: the rules of ``decide.py`` applied to recorded facts, one transaction per outcome.

* :meth:`AuthorityService.record_request` — request + its first decision + ``tool-requested`` event.
* :meth:`AuthorityService.record_user_decision` — the resolving decision + approval or denials (+ the
  refusal of other pending requests the new denials cover) + ``authority-decided`` event.
* :meth:`AuthorityService.record_execution_intent` — re-check, execution intent + allow-once consumption
  + ``tool-execution-intended`` event. If this commit fails, nothing may run.
* :meth:`AuthorityService.record_execution_result` — the end state + ``tool-execution-finished`` event.
* :meth:`AuthorityService.reconcile_interrupted_executions` — intents left without a result become
  ``outcome-unknown`` (never re-run).

Events go to the task's own session (``ses_<task id body>``). Payloads carry ids, tool names, needs
and outcomes — never argument values or output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import assert_never

from codeflux.authority.classify import Classification, ClassifiedNeed
from codeflux.authority.decide import (
    ApprovalScope,
    Decider,
    DecisionOutcome,
    ExecutionRefusal,
    StandingApproval,
    StandingDenial,
    UserDecision,
    clear_for_execution,
    find_overlapping_denial,
    rule_on_request,
    rule_on_user_decision,
)
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.errors import (
    ApprovalRequiredError,
    CapabilityDeniedError,
    CodefluxError,
    ConflictError,
    DecisionAlreadyRecordedError,
    IdempotencyConflictError,
    InvalidValueError,
    TaskInactiveError,
    UsageError,
)
from codeflux.domain.ids import ApprovalId, DecisionId, TaskId, ToolRequestId
from codeflux.domain.operations import (
    Operation,
    OperationIdentity,
    canonical_operation_json,
    derive_operation_identity,
    parse_canonical_operation_json,
)
from codeflux.domain.tools import parse_tool_name
from codeflux.store import authority as rows
from codeflux.store.database import Database, ReadView, Transaction
from codeflux.store.events import append_event
from codeflux.store.tasks import TaskRow, require_task

__all__ = ["AuthorityService", "DecisionView", "ExecutionIntent", "RequestSource", "RequestView"]

RequestSource = str
_SOURCES = frozenset({"model", "user", "test"})
_UNKNOWN = "outcome-unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionView:
    """One recorded decision in domain terms."""

    decision_id: str
    outcome: DecisionOutcome
    decided_by: Decider
    reason: str
    covered: tuple[CapabilityNeed, ...]
    approval_id: str | None
    denial_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestView:
    """A recorded request with the decision in force."""

    request_id: str
    task_id: TaskId
    tool: str
    operation: Operation
    identity: OperationIdentity
    classification: Classification
    decision: DecisionView


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionIntent:
    """A committed intent: the operation may now run once. ``existing`` is set (and nothing may run)
    when the request already had an execution. ``identity`` is the operation's identity, checked
    against the stored operation in the intent transaction."""

    execution_id: str
    request_id: str
    task: TaskRow
    operation: Operation
    identity: OperationIdentity
    consumed_approval_id: str | None
    existing: rows.ExecutionRow | None


def _needs_json(classification: Classification) -> str:
    return json.dumps([{"need": str(item.need), "reason": item.reason} for item in classification.needs],
                      separators=(",", ":"), ensure_ascii=False)


def _covered_json(needs: tuple[CapabilityNeed, ...]) -> str:
    return json.dumps([str(need) for need in needs], separators=(",", ":"))


def _classification_of(request: rows.ToolRequestRow) -> Classification:
    items = json.loads(request.needs_json)
    needs = tuple(ClassifiedNeed(need=CapabilityNeed.parse(item["need"]), reason=item["reason"]) for item in items)
    return Classification(tool=parse_tool_name(request.tool), needs=needs, compound=request.compound)


def _decision_view(row: rows.DecisionRow) -> DecisionView:
    return DecisionView(
        decision_id=row.decision_id, outcome=DecisionOutcome(row.outcome), decided_by=Decider(row.decided_by),
        reason=row.reason, covered=tuple(CapabilityNeed.parse(text) for text in json.loads(row.covered_needs_json)),
        approval_id=row.approval_id, denial_id=row.denial_id,
    )


def _standing_denials(view: ReadView, task_id: TaskId) -> list[StandingDenial]:
    return [StandingDenial(denial_id=row.denial_id, task_id=row.task_id, need=row.need)
            for row in rows.denials_of_task(view, task_id)]


def _standing_approval(row: rows.ApprovalRow) -> StandingApproval:
    return StandingApproval(approval_id=row.approval_id, task_id=row.task_id, identity=row.identity,
                            scope=ApprovalScope(row.scope), request_id=row.request_id,
                            consumed=row.consumed_at_us is not None)


def _operation_of(request: rows.ToolRequestRow) -> Operation:
    """The stored operation, refused unless its identity is still the sha256 of its stored JSON."""
    operation = parse_canonical_operation_json(request.operation_json)
    if derive_operation_identity(operation) != request.identity:
        raise InvalidValueError(kind="stored tool request", reason="its operation no longer matches its identity")
    return operation


def _request_view(view: ReadView, request_id: str) -> RequestView:
    request = rows.read_tool_request(view, request_id)
    return RequestView(request_id=request.request_id, task_id=request.task_id, tool=request.tool,
                       operation=_operation_of(request), identity=request.identity,
                       classification=_classification_of(request),
                       decision=_decision_view(rows.latest_decision(view, request_id)))


class AuthorityService:
    """Records requests, decisions and executions; see the module docstring for the transactions."""

    def __init__(self, db: Database, *, entropy: Callable[[int], bytes] = os.urandom) -> None:
        self._db = db
        self._entropy = entropy

    def _new_body(self) -> str:
        return self._entropy(16).hex()

    # ─── requests ────────────────────────────────────────────────────────────────────────────────

    def record_request(
        self,
        *,
        operation: Operation,
        classification: Classification,
        source: RequestSource,
        idempotency_key: str,
    ) -> RequestView:
        """Record the request, rule on it and append ``tool-requested``; an identical retry with the same
        key returns the original request, a different request under the key is a conflict."""
        if source not in _SOURCES:
            raise InvalidValueError(kind="tool request source", reason="must be model, user or test")
        operation_json = canonical_operation_json(operation)
        identity = derive_operation_identity(operation)
        task_id = operation.task_id

        if not 1 <= len(idempotency_key) <= 255:
            raise UsageError("an idempotency key must be 1 to 255 characters")

        def work(tx: Transaction) -> RequestView:
            task = require_task(tx, task_id)
            # The request row is the idempotency record: UNIQUE (task_id, idempotency_key) holds the key,
            # and the identity + source are what a retry must repeat (no second copy in
            # idempotency_records, one index entry less per submission).
            existing = rows.tool_request_by_key(tx, task_id=task_id, idempotency_key=idempotency_key)
            if existing is not None:
                if existing.identity != identity or existing.source != source:
                    raise IdempotencyConflictError(scope=f"tool-request:{task_id.value}", key=idempotency_key)
                return _request_view(tx, existing.request_id)
            request = rows.insert_tool_request(
                tx, request_id=ToolRequestId.from_entropy(self._entropy(16)).value, task_id=task_id,
                tool=operation.tool, operation_json=operation_json, identity=identity,
                needs_json=_needs_json(classification), compound=classification.compound, source=source,
                idempotency_key=idempotency_key,
            )
            approvals = [_standing_approval(row) for row in rows.task_approvals_of_identity(tx, task_id, identity)]
            ruling = rule_on_request(task_id=task_id, task_state=task.state, identity=identity,
                                     classification=classification,
                                     denials=_standing_denials(tx, task_id), approvals=approvals)
            decision = rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=ruling.outcome.value, covered_needs_json=_covered_json(ruling.covered),
                decided_by=Decider.SYSTEM.value, reason=ruling.reason, approval_id=ruling.approval_id,
                denial_id=ruling.denial_id,
            )
            append_event(tx, session_id=task.session_id, kind="tool-requested", payload={
                "request_id": request.request_id, "tool": operation.tool, "operation": str(identity),
                "needs": [str(item.need) for item in classification.needs],
                "decision_id": decision.decision_id, "outcome": decision.outcome,
            })
            return RequestView(request_id=request.request_id, task_id=task_id, tool=operation.tool,
                               operation=operation, identity=identity, classification=classification,
                               decision=_decision_view(decision))

        return self._db.write(work)

    def read_request(self, request_id: str) -> RequestView:
        """The request and its decision in force."""
        return self._db.read(lambda view: _request_view(view, request_id))

    def pending_requests(self, task_id: TaskId) -> list[RequestView]:
        """Requests of ``task_id`` that wait for a person, oldest first."""
        def work(view: ReadView) -> list[RequestView]:
            return [
                RequestView(request_id=request.request_id, task_id=request.task_id, tool=request.tool,
                            operation=_operation_of(request), identity=request.identity,
                            classification=_classification_of(request),
                            decision=_decision_view(decision))
                for request, decision in rows.pending_requests_of_task(view, task_id)
            ]

        return self._db.read(work)

    # ─── decisions ───────────────────────────────────────────────────────────────────────────────

    def record_user_decision(
        self,
        request_id: str,
        decision: UserDecision,
        *,
        reason: str,
        decided_by: Decider = Decider.USER,
        deny: tuple[CapabilityNeed, ...] | None = None,
    ) -> RequestView:
        """Resolve a pending request. Deciding it again the same way returns it unchanged; deciding a
        request that is no longer pending otherwise raises :class:`DecisionAlreadyRecordedError`."""
        if decided_by is Decider.SYSTEM:
            raise InvalidValueError(kind="authority decision", reason="a person or the headless policy decides")
        if not 1 <= len(reason) <= 2048:
            raise InvalidValueError(kind="authority decision", reason="the reason must be 1 to 2048 characters")

        def work(tx: Transaction) -> None:
            request = rows.read_tool_request(tx, request_id)
            current = rows.latest_decision(tx, request_id)
            classification = _classification_of(request)
            ruling = rule_on_user_decision(decision=decision, classification=classification, deny=deny)
            if decided_by is Decider.HEADLESS_POLICY:
                # The headless policy refuses *this request* because nobody pre-approved it; that is not a
                # person's judgement against a capability, so it records no standing denial. Otherwise a
                # later `resume --allow <this exact operation>` could never run it.
                ruling = replace(ruling, denied=())
            if current.outcome != DecisionOutcome.PENDING.value:
                if current.outcome == ruling.outcome.value and current.decided_by == decided_by.value:
                    return
                raise DecisionAlreadyRecordedError(request_id=request_id, outcome=current.outcome)
            task = require_task(tx, request.task_id)
            recorded = rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=ruling.outcome.value, covered_needs_json=_covered_json(ruling.covered),
                decided_by=decided_by.value, reason=reason, supersedes_decision_id=current.decision_id,
            )
            payload: dict[str, object] = {"request_id": request_id, "decision_id": recorded.decision_id,
                                          "outcome": recorded.outcome, "decided_by": recorded.decided_by}
            if ruling.scope is not None:
                approval = rows.insert_approval(tx, approval_id=ApprovalId.from_entropy(self._entropy(16)).value,
                                                request=request, decision_id=recorded.decision_id,
                                                scope=ruling.scope.value)
                payload["approval_id"] = approval.approval_id
            denial_ids = [
                rows.insert_denial(tx, denial_id=f"dny_{self._new_body()}", task_id=request.task_id, need=need,
                                   decision_id=recorded.decision_id, reason=reason).denial_id
                for need in ruling.denied
            ]
            if denial_ids:
                payload["denied"] = [str(need) for need in ruling.denied]
                payload["refused_requests"] = self._refuse_pending_covered_by_denials(tx, task)
            append_event(tx, session_id=task.session_id, kind="authority-decided", payload=payload)

        self._db.write(work)
        return self.read_request(request_id)

    def _refuse_pending_covered_by_denials(self, tx: Transaction, task: TaskRow) -> list[str]:
        """Refuse, in this transaction, every other pending request of the task a denial now covers."""
        denials = _standing_denials(tx, task.task_id)
        refused = []
        for request, pending in rows.pending_requests_of_task(tx, task.task_id):
            hit = find_overlapping_denial((item.need for item in _classification_of(request).needs), denials,
                                          task_id=task.task_id)
            if hit is None:
                continue
            denial, need = hit
            rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=DecisionOutcome.REFUSED_DENIED_CAPABILITY.value, covered_needs_json=_covered_json((need,)),
                decided_by=Decider.SYSTEM.value, reason=f"{need} is covered by the denial of {denial.need}",
                supersedes_decision_id=pending.decision_id, denial_id=denial.denial_id,
            )
            refused.append(request.request_id)
        return refused

    # ─── executions ──────────────────────────────────────────────────────────────────────────────

    def record_execution_intent(
        self, request_id: str, *, before_commit: Callable[[], None] | None = None
    ) -> ExecutionIntent:
        """Re-check the request against the facts now, then commit the intent (consuming an allow-once
        approval) and ``tool-execution-intended`` in one transaction. Raises the refusal as an error
        (:class:`ApprovalRequiredError`, :class:`CapabilityDeniedError`, :class:`TaskInactiveError`,
        :class:`ConflictError`); nothing is written then. ``before_commit`` runs last inside the
        transaction (a fault injection point: if it raises, the intent is rolled back)."""

        def work(tx: Transaction) -> ExecutionIntent:
            request = rows.read_tool_request(tx, request_id)
            task = require_task(tx, request.task_id)
            operation = _operation_of(request)
            existing = rows.execution_of_request(tx, request_id)
            if existing is not None:
                return ExecutionIntent(execution_id=existing.execution_id, request_id=request_id, task=task,
                                       operation=operation, identity=request.identity, consumed_approval_id=None,
                                       existing=existing)
            decision = rows.latest_decision(tx, request_id)
            approval_row = (rows.approval_by_id(tx, decision.approval_id) if decision.approval_id
                            else rows.approval_for_request(tx, request_id))
            classification = _classification_of(request)
            clearance = clear_for_execution(
                task_id=task.task_id, task_state=task.state, classification=classification,
                outcome=DecisionOutcome(decision.outcome), denials=_standing_denials(tx, task.task_id),
                approval=None if approval_row is None else _standing_approval(approval_row),
                identity=request.identity,
            )
            if clearance.refusal is not None:
                raise _refusal_error(tx, request=request, task=task, decision=decision, refusal=clearance.refusal,
                                    denial=clearance.denial, need=clearance.need)
            execution_id = f"exe_{self._new_body()}"
            rows.insert_execution_intent(tx, execution_id=execution_id, request=request,
                                         decision_id=decision.decision_id,
                                         approval_id=None if approval_row is None else approval_row.approval_id)
            consumed = None
            if clearance.consume_approval and approval_row is not None:
                rows.consume_allow_once_approval(tx, approval_id=approval_row.approval_id, execution_id=execution_id)
                consumed = approval_row.approval_id
            append_event(tx, session_id=task.session_id, kind="tool-execution-intended", payload={
                "request_id": request_id, "execution_id": execution_id, "operation": str(request.identity),
                "consumed_approval_id": consumed,
            })
            if before_commit is not None:
                before_commit()
            return ExecutionIntent(execution_id=execution_id, request_id=request_id, task=task, operation=operation,
                                   identity=request.identity, consumed_approval_id=consumed, existing=None)

        return self._db.write(work)

    def mark_execution_running(self, execution_id: str) -> None:
        """Record that the worker started the execution (``intended`` → ``running``)."""
        self._db.write(lambda tx: rows.mark_execution_running(tx, execution_id=execution_id))

    def record_execution_result(
        self, *, task: TaskRow, execution_id: str, result: rows.ExecutionResultValues
    ) -> rows.ExecutionRow:
        """Commit the (already redacted) end of an execution and ``tool-execution-finished``."""

        def work(tx: Transaction) -> rows.ExecutionRow:
            row = rows.record_execution_result(tx, execution_id=execution_id, result=result)
            append_event(tx, session_id=task.session_id, kind="tool-execution-finished", payload={
                "request_id": row.request_id, "execution_id": execution_id, "state": result.state,
                "failure_kind": result.failure_kind, "exit_code": result.exit_code,
            })
            return row

        return self._db.write(work)

    def read_execution(self, request_id: str) -> rows.ExecutionRow | None:
        return self._db.read(lambda view: rows.execution_of_request(view, request_id))

    def reconcile_interrupted_executions(self) -> list[str]:
        """Mark every execution left ``intended``/``running`` as ``outcome-unknown`` (one transaction each,
        with a ``tool-execution-finished`` event); returns their ids. Nothing is re-run."""
        reconciled = []
        for execution in self._db.read(rows.unfinished_executions):
            def work(tx: Transaction, execution: rows.ExecutionRow = execution) -> bool:
                task = require_task(tx, execution.task_id)
                result = rows.ExecutionResultValues(
                    state=_UNKNOWN, failure_kind="interrupted",
                    message="codeflux stopped before this execution reported a result; it may or may not "
                            "have taken effect, and it is never run again automatically",
                )
                rows.record_execution_result(tx, execution_id=execution.execution_id, result=result)
                append_event(tx, session_id=task.session_id, kind="tool-execution-finished", payload={
                    "request_id": execution.request_id, "execution_id": execution.execution_id,
                    "state": _UNKNOWN, "failure_kind": "interrupted", "exit_code": None,
                })
                return True

            self._db.write(work)
            reconciled.append(execution.execution_id)
        return reconciled


def _refusal_error(
    view: ReadView,
    *,
    request: rows.ToolRequestRow,
    task: TaskRow,
    decision: rows.DecisionRow,
    refusal: ExecutionRefusal,
    denial: StandingDenial | None,
    need: CapabilityNeed | None,
) -> CodefluxError:
    request_id = request.request_id
    match refusal:
        case ExecutionRefusal.PENDING:
            return ApprovalRequiredError(request_id=request_id, needs=tuple(json.loads(decision.covered_needs_json)))
        case ExecutionRefusal.INACTIVE_TASK:
            return TaskInactiveError(request_id=request_id, task_id=task.task_id.value, state=task.state.value)
        case ExecutionRefusal.DENIED_CAPABILITY | ExecutionRefusal.DENIED:
            if denial is not None and need is not None:
                return CapabilityDeniedError(request_id=request_id, need=str(need), denial_id=denial.denial_id)
            denial_id = decision.denial_id
            if denial_id is None:
                recorded = rows.denials_of_decision(view, task_id=request.task_id, decision_id=decision.decision_id)
                denial_id = recorded[0].denial_id if recorded else decision.decision_id
            shown = ", ".join(json.loads(decision.covered_needs_json)) or "a capability"
            return CapabilityDeniedError(request_id=request_id, need=shown, denial_id=denial_id)
        case ExecutionRefusal.APPROVAL_CONSUMED | ExecutionRefusal.APPROVAL_MISSING:
            return ConflictError(f"tool request {request_id} has no unused approval ({refusal.value}); it does not run")
        case _:
            assert_never(refusal)
