"""The authority service: the rules of ``decide.py`` applied to recorded facts, one transaction per outcome.

* :meth:`AuthorityService.record_request` — request + its first decision + ``tool-requested`` event.
* :meth:`AuthorityService.record_request_with_intent` — the same, and when that first decision already
  allows the request (``automatic``, or ``allowed-for-task`` by a standing approval) also its execution
  intent + ``tool-execution-intended``, in the same transaction: one commit fewer per such tool call.
  A pending request keeps the separate intent transaction below.
* :meth:`AuthorityService.record_user_decision` — the resolving decision + approval or denials (+ the
  refusal of other pending requests the new denials cover; + the repository approval of an
  ``allow-for-repository``) + ``authority-decided`` event.
* :meth:`AuthorityService.record_execution_intent` — re-check, execution intent + allow-once consumption
  + ``tool-execution-intended`` event. If this commit fails, nothing may run.
* :meth:`AuthorityService.record_execution_result` — the end state + ``tool-execution-finished`` event.
* :meth:`AuthorityService.reconcile_interrupted_executions` — intents left without a result become
  ``outcome-unknown`` (never re-run).

Events go to the task's own session (``ses_<task id body>``). Payloads carry ids, tool names, needs
and outcomes — never argument values or output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from codeflux.authority.classify import Classification
from codeflux.authority.decide import (
    Decider,
    DecisionOutcome,
    UserDecision,
    clear_for_execution,
    find_overlapping_denial,
    rule_on_request,
    rule_on_user_decision,
    runs_a_program,
)
from codeflux.authority.intents import ExecutionIntent, refusal_error, write_intent
from codeflux.authority.plan_checks import plan_check_cover
from codeflux.authority.records import (
    DecisionView,
    RequestView,
    classification_of,
    decision_view,
    request_view,
    standing_approval,
    standing_denials,
)
from codeflux.authority.repository_approvals import (
    describe_repository_cover,
    repository_approval_cover,
    repository_approval_refusal,
)
from codeflux.domain.authority import ApprovalScope, DecisionRow, ToolRequestRow
from codeflux.domain.authority import RequestSource as RecordedSource
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.display import operation_summary
from codeflux.domain.errors import (
    DecisionAlreadyRecordedError,
    IdempotencyConflictError,
    InvalidValueError,
    RepositoryApprovalRefusedError,
    UnconfinedStandingApprovalError,
    UsageError,
)
from codeflux.domain.events import AuthorityDecided, ToolExecutionFinished, ToolRequested
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import ApprovalId, DecisionId, RepositoryApprovalId, TaskId, ToolRequestId
from codeflux.domain.operations import Operation, derive_operation_identity
from codeflux.domain.repository_approvals import RepositoryRoots
from codeflux.redact import redact
from codeflux.store import authority as rows
from codeflux.store import repository_approvals as repository_rows
from codeflux.store.database import Database, ReadView, Transaction
from codeflux.store.events import append_event
from codeflux.store.tasks import TaskRow, require_task

__all__ = ["AuthorityService", "DecisionView", "DerivedAllowance", "ExecutionIntent", "RequestSource", "RequestView"]

RequestSource = str
"""Who asked, as a caller names it: a :class:`~codeflux.domain.authority.RequestSource` value — the model (the
implementation loop), a person, a test, or the pipeline itself (a check command)."""
_FINAL_ALLOWING = frozenset({DecisionOutcome.AUTOMATIC, DecisionOutcome.ALLOWED_FOR_TASK})
"""First decisions that allow a request at submission: no person decides later, nothing is consumed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DerivedAllowance:
    """A decision already made that covers a new request: the pipeline's base-revision run of a check
    follows the decision on the same check in the worktree root (docs/security.md, "The base-revision run of
    a check"), and a plan approval covers its checks' exact argv (:mod:`codeflux.authority.plan_checks`,
    derived here for every request). ``decided_by`` is that decision's decider (a person or the headless
    policy); ``reason`` names it.
    """

    decided_by: Decider
    reason: str


class AuthorityService:
    """Records requests, decisions and executions; see the module docstring for the transactions."""

    def __init__(self, db: Database, *, entropy: Callable[[int], bytes] = os.urandom,
                 programs_unconfined: bool = False, unconfined: bool = False) -> None:
        """``programs_unconfined``: programs run with no OS box and the person did not opt in, so a request
        that runs one is never covered by a standing approval and cannot be allowed for the task.
        ``unconfined``: commands run with no OS box at all (confinement ``none``, opt-in or not), so nothing is
        allowed for a repository and repository approvals decide nothing
        (:mod:`codeflux.authority.repository_approvals`)."""
        self._db = db
        self._entropy = entropy
        self._programs_unconfined = programs_unconfined
        self._unconfined = unconfined or programs_unconfined

    @property
    def programs_unconfined(self) -> bool:
        """Programs run with no OS box and the person did not opt in: each is allowed once at a time."""
        return self._programs_unconfined

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
        derived: DerivedAllowance | None = None,
    ) -> RequestView:
        """Record the request, rule on it and append ``tool-requested``; an identical retry with the same
        key returns the original request, a different request under the key is a conflict.

        With ``derived``, a request the rules leave pending is allowed once in the same transaction, by
        ``derived.decided_by`` (its pending first decision is superseded before anything is published, so
        no person is ever asked); a request the rules refuse stays refused."""
        view, _ = self._record_request(operation=operation, classification=classification, source=source,
                                       idempotency_key=idempotency_key, intend=False, before_commit=None,
                                       derived=derived)
        return view

    def record_request_with_intent(
        self,
        *,
        operation: Operation,
        classification: Classification,
        source: RequestSource,
        idempotency_key: str,
        before_commit: Callable[[], None] | None = None,
        derived: DerivedAllowance | None = None,
    ) -> tuple[RequestView, ExecutionIntent | None]:
        """:meth:`record_request`, and in the same transaction the execution intent when the first
        decision allows the request at once (``automatic``, or ``allowed-for-task`` by a standing
        approval) and :func:`clear_for_execution` clears it on the same facts. The intent is then
        committed before anything can run; the caller runs it exactly once (see ``ExecutionIntent``).

        Any other first decision (pending, refused) records no intent: the request goes through
        :meth:`record_execution_intent` after its decision, as before. A retry under the same key
        records nothing new: it returns the original request and, if it has one, its recorded
        execution as ``ExecutionIntent.existing`` (which must not run); an original request without an
        execution returns no intent (execute it through :meth:`record_execution_intent`).
        ``before_commit`` runs last inside the transaction, only when an intent is being written."""
        return self._record_request(operation=operation, classification=classification, source=source,
                                    idempotency_key=idempotency_key, intend=True, before_commit=before_commit,
                                    derived=derived)

    def _record_request(
        self,
        *,
        operation: Operation,
        classification: Classification,
        source: RequestSource,
        idempotency_key: str,
        intend: bool,
        before_commit: Callable[[], None] | None,
        derived: DerivedAllowance | None = None,
    ) -> tuple[RequestView, ExecutionIntent | None]:
        if derived is not None and (derived.decided_by is Decider.SYSTEM or not 1 <= len(derived.reason) <= 2048):
            raise InvalidValueError(kind="derived decision",
                                    reason="a person's or the headless policy's, with a reason")
        try:
            recorded_source = RecordedSource(source)
        except ValueError:
            raise InvalidValueError(kind="tool request source",
                                    reason="must be model, user, test or pipeline") from None
        identity = derive_operation_identity(operation)
        task_id = operation.task_id

        if not 1 <= len(idempotency_key) <= 255:
            raise UsageError("an idempotency key must be 1 to 255 characters")

        def work(tx: Transaction) -> tuple[RequestView, ExecutionIntent | None]:
            task = require_task(tx, task_id)
            # The request row is the idempotency record: UNIQUE (task_id, idempotency_key) holds the key,
            # and the identity + source are what a retry must repeat (no second copy in
            # idempotency_records, one index entry less per submission).
            existing = rows.tool_request_by_key(tx, task_id=task_id, idempotency_key=idempotency_key)
            if existing is not None:
                if existing.identity != identity or existing.source is not recorded_source:
                    raise IdempotencyConflictError(scope=f"tool-request:{task_id.value}", key=idempotency_key)
                return request_view(tx, existing.request_id), (
                    self._recorded_execution(tx, existing, task) if intend else None)
            request = rows.insert_tool_request(
                tx, request_id=ToolRequestId.from_entropy(self._entropy(16)).value, operation=operation,
                needs=classification.needs, compound=classification.compound, source=recorded_source,
                idempotency_key=idempotency_key,
            )
            denials = standing_denials(tx, task_id)
            approval_rows = rows.task_approvals_of_identity(tx, task_id, identity)
            ruling = rule_on_request(task_id=task_id, task_state=task.state, identity=identity,
                                     programs_unconfined=self._programs_unconfined,
                                     classification=classification, denials=denials,
                                     approvals=[standing_approval(row) for row in approval_rows])
            decision = rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=ruling.outcome, covered=ruling.covered,
                decided_by=Decider.SYSTEM, reason=ruling.reason, approval_id=ruling.approval_id,
                denial_id=ruling.denial_id,
            )
            standing: RepositoryApprovalId | None = None
            if ruling.outcome is DecisionOutcome.PENDING:
                decision, standing = self._decide_by_derived_allowance(tx, request, decision, classification, derived)
            append_event(tx, session_id=task.session_id, event=ToolRequested(
                request_id=ToolRequestId.parse(request.request_id), tool=operation.tool, operation=str(identity),
                needs=tuple(str(item.need) for item in classification.needs),
                decision_id=DecisionId.parse(decision.decision_id), outcome=decision.outcome.value,
                repository_approval_id=standing, summary=redact(operation_summary(operation.arguments)),
            ))
            view = RequestView(request_id=request.request_id, task_id=task_id, tool=operation.tool,
                               operation=operation, identity=identity, classification=classification,
                               decision=decision_view(decision))
            if not intend or ruling.outcome not in _FINAL_ALLOWING:
                return view, None
            approval_row = next((row for row in approval_rows if row.approval_id == ruling.approval_id), None)
            clearance = clear_for_execution(
                task_id=task_id, task_state=task.state, classification=classification, outcome=ruling.outcome,
                denials=denials, approval=None if approval_row is None else standing_approval(approval_row),
                identity=identity,
            )
            if not clearance.cleared or clearance.consume_approval:
                return view, None  # cannot happen on the same facts; the intent transaction decides then
            intent = write_intent(tx, execution_id=f"exe_{self._new_body()}", request=request, task=task,
                                  operation=operation, decision_id=decision.decision_id,
                                  approval_id=ruling.approval_id, consume_approval=False,
                                  before_commit=before_commit)
            return view, intent

        return self._db.write(work)

    def _decide_by_derived_allowance(self, tx: Transaction, request: ToolRequestRow, pending: DecisionRow,
                                     classification: Classification, derived: DerivedAllowance | None,
                                     ) -> tuple[DecisionRow, RepositoryApprovalId | None]:
        """``pending`` resolved by a decision already made, if one covers the request: the caller's ``derived``,
        else a plan approval of the exact check argv, else a live repository approval of the exact repository
        identity (named in ``repository_approval_uses``, and returned); ``pending`` itself when none does."""
        if derived is not None:
            return self._allow_once_as_derived(tx, request, pending, classification, derived), None
        operation = request.operation
        cover = plan_check_cover(tx, operation=operation, classification=classification, source=request.source,
                                 programs_unconfined=self._programs_unconfined)
        if cover is not None:
            return self._allow_once_as_derived(tx, request, pending, classification,
                                               DerivedAllowance(decided_by=cover.decided_by, reason=cover.reason)), None
        standing = repository_approval_cover(tx, operation=operation, unconfined=self._unconfined)
        if standing is None:
            return pending, None
        decided = self._allow_once_as_derived(
            tx, request, pending, classification,
            DerivedAllowance(decided_by=Decider.USER, reason=describe_repository_cover(standing)))
        repository_rows.insert_repository_approval_use(tx, decision_id=decided.decision_id,
                                                       approval_id=standing.approval_id)
        return decided, standing.approval_id

    def _allow_once_as_derived(self, tx: Transaction, request: ToolRequestRow, pending: DecisionRow,
                               classification: Classification, derived: DerivedAllowance) -> DecisionRow:
        ruling = rule_on_user_decision(decision=UserDecision.ALLOW_ONCE, classification=classification)
        decided = rows.insert_decision(
            tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
            outcome=ruling.outcome, covered=ruling.covered, decided_by=derived.decided_by, reason=derived.reason,
            supersedes_decision_id=pending.decision_id,
        )
        rows.insert_approval(tx, approval_id=ApprovalId.from_entropy(self._entropy(16)).value, request=request,
                             decision_id=decided.decision_id, scope=ApprovalScope.ALLOW_ONCE)
        return decided

    @staticmethod
    def _recorded_execution(view: ReadView, request: rows.ToolRequestRow, task: TaskRow) -> ExecutionIntent | None:
        execution = rows.execution_of_request(view, request.request_id)
        if execution is None:
            return None
        return ExecutionIntent(execution_id=execution.execution_id, request_id=request.request_id, task=task,
                               operation=request.operation, identity=request.identity,
                               consumed_approval_id=None, existing=execution)

    def read_request(self, request_id: str) -> RequestView:
        """The request and its decision in force."""
        return self._db.read(lambda view: request_view(view, request_id))

    def pending_requests(self, task_id: TaskId) -> list[RequestView]:
        """Requests of ``task_id`` that wait for a person, oldest first."""
        def work(view: ReadView) -> list[RequestView]:
            return [
                RequestView(request_id=request.request_id, task_id=request.task_id, tool=request.tool,
                            operation=request.operation, identity=request.identity,
                            classification=classification_of(request),
                            decision=decision_view(decision))
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
            classification = classification_of(request)
            if decision is UserDecision.ALLOW_FOR_TASK and self._programs_unconfined and runs_a_program(classification):
                raise UnconfinedStandingApprovalError(request_id=request_id)
            roots = self._repository_roots_to_allow(tx, request, decision, decided_by)
            ruling = rule_on_user_decision(decision=decision, classification=classification, deny=deny)
            if decided_by is Decider.HEADLESS_POLICY:
                # The headless policy refuses *this request* because nobody pre-approved it; that is not a
                # person's judgement against a capability, so it records no standing denial. Otherwise a
                # later `resume --allow <this exact operation>` could never run it.
                ruling = replace(ruling, denied=())
            if current.outcome is not DecisionOutcome.PENDING:
                same_scope = (roots is None) == (
                    repository_rows.repository_approval_from_decision(tx, current.decision_id) is None)
                if current.outcome is ruling.outcome and current.decided_by is decided_by and same_scope:
                    return
                raise DecisionAlreadyRecordedError(request_id=request_id, outcome=current.outcome.value)
            task = require_task(tx, request.task_id)
            recorded = rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=ruling.outcome, covered=ruling.covered,
                decided_by=decided_by, reason=reason, supersedes_decision_id=current.decision_id,
            )
            approval_id: ApprovalId | None = None
            if ruling.scope is not None:
                approval = rows.insert_approval(tx, approval_id=ApprovalId.from_entropy(self._entropy(16)).value,
                                                request=request, decision_id=recorded.decision_id,
                                                scope=ruling.scope)
                approval_id = ApprovalId.parse(approval.approval_id)
            repository_approval_id = None
            if roots is not None:
                repository_approval_id = repository_rows.insert_repository_approval(
                    tx, approval_id=RepositoryApprovalId.from_entropy(self._entropy(16)), request=request, roots=roots,
                    decision_id=recorded.decision_id, reason=reason).approval_id
            denial_ids = [
                rows.insert_denial(tx, denial_id=f"dny_{self._new_body()}", task_id=request.task_id, need=need,
                                   decision_id=recorded.decision_id, reason=reason).denial_id
                for need in ruling.denied
            ]
            denied: tuple[str, ...] | None = None
            refused: tuple[ToolRequestId, ...] | None = None
            if denial_ids:
                denied = tuple(str(need) for need in ruling.denied)
                refused = tuple(ToolRequestId.parse(other)
                                for other in self._refuse_pending_covered_by_denials(tx, task))
            append_event(tx, session_id=task.session_id, event=AuthorityDecided(
                request_id=ToolRequestId.parse(request_id), decision_id=DecisionId.parse(recorded.decision_id),
                outcome=recorded.outcome.value, decided_by=recorded.decided_by.value, approval_id=approval_id,
                denied=denied, refused_requests=refused, repository_approval_id=repository_approval_id))

        self._db.write(work)
        return self.read_request(request_id)

    def _repository_roots_to_allow(self, view: ReadView, request: ToolRequestRow, decision: UserDecision,
                                   decided_by: Decider) -> RepositoryRoots | None:
        """The repository an ``allow-for-repository`` allows the request for (None for other decisions), or
        :class:`RepositoryApprovalRefusedError` saying why it cannot."""
        if decision is not UserDecision.ALLOW_FOR_REPOSITORY:
            return None
        if decided_by is not Decider.USER:
            raise InvalidValueError(kind="authority decision", reason="only a person allows for a repository")
        refusal = repository_approval_refusal(view, task_id=request.task_id, unconfined=self._unconfined)
        roots = repository_rows.task_repository_roots(view, request.task_id)
        if refusal or roots is None:
            raise RepositoryApprovalRefusedError(request_id=request.request_id, why=refusal)
        return roots

    def _refuse_pending_covered_by_denials(self, tx: Transaction, task: TaskRow) -> list[str]:
        """Refuse, in this transaction, every other pending request of the task a denial now covers."""
        denials = standing_denials(tx, task.task_id)
        refused = []
        for request, pending in rows.pending_requests_of_task(tx, task.task_id):
            hit = find_overlapping_denial((item.need for item in classification_of(request).needs), denials,
                                          task_id=task.task_id)
            if hit is None:
                continue
            denial, need = hit
            rows.insert_decision(
                tx, decision_id=DecisionId.from_entropy(self._entropy(16)).value, request=request,
                outcome=DecisionOutcome.REFUSED_DENIED_CAPABILITY, covered=(need,),
                decided_by=Decider.SYSTEM, reason=f"{need} is covered by the denial of {denial.need}",
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
            operation = request.operation
            existing = rows.execution_of_request(tx, request_id)
            if existing is not None:
                return ExecutionIntent(execution_id=existing.execution_id, request_id=request_id, task=task,
                                       operation=operation, identity=request.identity, consumed_approval_id=None,
                                       existing=existing)
            decision = rows.latest_decision(tx, request_id)
            approval_row = (rows.approval_by_id(tx, decision.approval_id) if decision.approval_id
                            else rows.approval_for_request(tx, request_id))
            classification = classification_of(request)
            clearance = clear_for_execution(
                task_id=task.task_id, task_state=task.state, classification=classification,
                outcome=decision.outcome, denials=standing_denials(tx, task.task_id),
                approval=None if approval_row is None else standing_approval(approval_row),
                identity=request.identity,
            )
            if clearance.refusal is not None:
                raise refusal_error(tx, request=request, task=task, decision=decision, refusal=clearance.refusal,
                                    denial=clearance.denial, need=clearance.need)
            return write_intent(tx, execution_id=f"exe_{self._new_body()}", request=request, task=task,
                                operation=operation, decision_id=decision.decision_id,
                                approval_id=None if approval_row is None else approval_row.approval_id,
                                consume_approval=clearance.consume_approval, before_commit=before_commit)

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
            append_event(tx, session_id=task.session_id, event=ToolExecutionFinished(
                request_id=ToolRequestId.parse(row.request_id), execution_id=execution_id, state=result.state.value,
                failure_kind=None if result.failure_kind is None else result.failure_kind.value,
                exit_code=result.exit_code,
            ))
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
                    state=ToolExecutionState.OUTCOME_UNKNOWN, failure_kind=FailureKind.INTERRUPTED,
                    message="codeflux stopped before this execution reported a result; it may or may not "
                            "have taken effect, and it is never run again automatically",
                )
                rows.record_execution_result(tx, execution_id=execution.execution_id, result=result)
                append_event(tx, session_id=task.session_id, event=ToolExecutionFinished(
                    request_id=ToolRequestId.parse(execution.request_id), execution_id=execution.execution_id,
                    state=ToolExecutionState.OUTCOME_UNKNOWN.value, failure_kind=FailureKind.INTERRUPTED.value,
                    exit_code=None,
                ))
                return True

            self._db.write(work)
            reconciled.append(execution.execution_id)
        return reconciled

