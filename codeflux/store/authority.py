"""SQL of the authority aggregate: tool requests, decisions, approvals, denials and executions.

Every function works inside the caller's transaction or read view; the authority service composes
them so that one user-visible outcome is one transaction (request + decision + event; decision +
approval/denials + event; intent + allow-once consumption + event; result + event).

Rows leave this module as domain values: the operation parsed back from its canonical JSON (and refused
unless its identity is still the sha256 of that text), the needs with their reasons, and every outcome,
decider, scope, source, state and failure kind as its enum. Each row type has one decoder here; a stored
value outside its vocabulary raises :class:`StoredValueUnknownError`. The JSON text stays inside this
module. Output text must be redacted before it gets here.
"""

from __future__ import annotations

import json

from codeflux.domain.authority import (
    ApprovalRow,
    ApprovalScope,
    ClassifiedNeed,
    Decider,
    DecisionOutcome,
    DecisionRow,
    DenialRow,
    ExecutionResultValues,
    ExecutionRow,
    RequestSource,
    ToolRequestRow,
)
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import ConflictError, InvalidValueError, NotFoundError, StoredValueUnknownError
from codeflux.domain.execution import FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import (
    Operation,
    OperationIdentity,
    canonical_operation_json_and_identity,
    parse_canonical_operation_json,
)
from codeflux.domain.tools import ToolName, parse_tool_name
from codeflux.store.database import ReadView, Row, Transaction, now_us
from codeflux.store.decoding import decode_choice, decode_optional_choice

__all__ = [
    "ApprovalRow",
    "DecisionRow",
    "DenialRow",
    "ExecutionResultValues",
    "ExecutionRow",
    "ToolRequestRow",
    "approval_by_id",
    "approval_for_request",
    "consume_allow_once_approval",
    "decisions_of_request",
    "denials_of_decision",
    "denials_of_task",
    "execution_of_request",
    "insert_approval",
    "insert_decision",
    "insert_denial",
    "insert_execution_intent",
    "insert_tool_request",
    "latest_decision",
    "mark_execution_running",
    "operations_allowed_for_task",
    "pending_requests_of_task",
    "read_tool_request",
    "record_execution_result",
    "task_approvals_of_identity",
    "tool_request_by_key",
    "unfinished_executions",
]

_REQUEST = ("id, task_id, tool, operation_json, operation_identity, needs_json, compound, source,"
            " idempotency_key, requested_at_us")
_DECISION = ("id, request_id, task_id, supersedes_decision_id, outcome, covered_needs_json, decided_by, reason,"
             " approval_id, denial_id, decided_at_us")
_APPROVAL = ("id, task_id, request_id, decision_id, operation_identity, scope, consumed_at_us,"
             " consumed_by_execution_id, revision, created_at_us")
_DENIAL = "id, task_id, capability, resource, decision_id, reason, created_at_us"
_EXECUTION = ("id, request_id, task_id, decision_id, approval_id, operation_identity, state, failure_kind,"
              " message, exit_code, content, stdout, stderr, content_truncated, stdout_truncated,"
              " stderr_truncated, content_sha256, duration_ms, intended_at_us, started_at_us, finished_at_us,"
              " confinement")


def _text(value: object) -> str:
    return str(value)


def _maybe_text(value: object) -> str | None:
    return None if value is None else str(value)


def _maybe_int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _oldest_first(rows: list[Row], *, created_at: int) -> list[Row]:
    """``rows`` (each ending in its ``rowid``) ordered by (creation time, rowid), the rowid dropped.

    Sorted here rather than with ``ORDER BY``: SQLite would build a temporary B-tree for the sort
    (the indexes do not cover the creation time), which costs more than the query on the hot path of
    every tool request, and these lists hold a handful of rows.
    """
    return [row[:-1] for row in sorted(rows, key=lambda row: (int(row[created_at]), int(row[-1])))]


# ─── the JSON columns (encoded and decoded only here) ────────────────────────────────────────────


def _needs_json(needs: tuple[ClassifiedNeed, ...]) -> str:
    return json.dumps([{"need": str(item.need), "reason": item.reason} for item in needs],
                      separators=(",", ":"), ensure_ascii=False)


def _covered_json(needs: tuple[CapabilityNeed, ...]) -> str:
    return json.dumps([str(need) for need in needs], separators=(",", ":"))


def _decode_needs(text: str) -> tuple[ClassifiedNeed, ...]:
    try:
        items = json.loads(text)
        return tuple(ClassifiedNeed(need=CapabilityNeed.parse(str(item["need"])), reason=str(item["reason"]))
                     for item in items)
    except (ValueError, KeyError, TypeError, InvalidValueError):
        raise StoredValueUnknownError(kind="tool request needs", value=text) from None


def _decode_covered(text: str) -> tuple[CapabilityNeed, ...]:
    try:
        items = json.loads(text)
        if not isinstance(items, list):
            raise TypeError
        return tuple(CapabilityNeed.parse(str(item)) for item in items)
    except (ValueError, TypeError, InvalidValueError):
        raise StoredValueUnknownError(kind="decision covered needs", value=text) from None


def _decode_operation(text: str, identity: OperationIdentity) -> Operation:
    """The stored operation, refused unless its identity is still the sha256 of its stored JSON."""
    try:
        operation = parse_canonical_operation_json(text)
    except InvalidValueError:
        raise StoredValueUnknownError(kind="tool request operation", value=text) from None
    if canonical_operation_json_and_identity(operation)[1] != identity:
        raise InvalidValueError(kind="stored tool request", reason="its operation no longer matches its identity")
    return operation


# ─── the row decoders (the row types are the domain's) ──────────────────────────────────────────────────────────────


def _request(row: Row) -> ToolRequestRow:
    identity = OperationIdentity(digest=_text(row[4]))
    return ToolRequestRow(
        request_id=_text(row[0]), task_id=TaskId.parse(_text(row[1])),
        tool=decode_choice(ToolName, row[2], kind="tool name"),
        operation=_decode_operation(_text(row[3]), identity), identity=identity,
        needs=_decode_needs(_text(row[5])), compound=bool(row[6]),
        source=decode_choice(RequestSource, row[7], kind="tool request source"),
        idempotency_key=_text(row[8]), requested_at_us=int(row[9]),
    )


def _decision(row: Row) -> DecisionRow:
    return DecisionRow(
        decision_id=_text(row[0]), request_id=_text(row[1]), task_id=TaskId.parse(_text(row[2])),
        supersedes_decision_id=_maybe_text(row[3]),
        outcome=decode_choice(DecisionOutcome, row[4], kind="decision outcome"),
        covered=_decode_covered(_text(row[5])), decided_by=decode_choice(Decider, row[6], kind="decider"),
        reason=_text(row[7]), approval_id=_maybe_text(row[8]), denial_id=_maybe_text(row[9]),
        decided_at_us=int(row[10]),
    )


def _approval(row: Row) -> ApprovalRow:
    return ApprovalRow(
        approval_id=_text(row[0]), task_id=TaskId.parse(_text(row[1])), request_id=_text(row[2]),
        decision_id=_text(row[3]), identity=OperationIdentity(digest=_text(row[4])),
        scope=decode_choice(ApprovalScope, row[5], kind="approval scope"),
        consumed_at_us=_maybe_int(row[6]), consumed_by_execution_id=_maybe_text(row[7]), revision=int(row[8]),
        created_at_us=int(row[9]),
    )


def _denial(row: Row) -> DenialRow:
    text = _text(row[2]) if row[3] is None else f"{row[2]}:{row[3]}"
    try:
        need = CapabilityNeed.parse(text)
    except InvalidValueError:
        raise StoredValueUnknownError(kind="denied capability", value=text) from None
    return DenialRow(denial_id=_text(row[0]), task_id=TaskId.parse(_text(row[1])), need=need,
                     decision_id=_text(row[4]), reason=_text(row[5]), created_at_us=int(row[6]))


def _execution(row: Row) -> ExecutionRow:
    result = ExecutionResultValues(
        state=decode_choice(ToolExecutionState, row[6], kind="execution state"),
        failure_kind=decode_optional_choice(FailureKind, row[7], kind="execution failure kind"),
        message=_maybe_text(row[8]),
        exit_code=_maybe_int(row[9]), content=_maybe_text(row[10]), stdout=_maybe_text(row[11]),
        stderr=_maybe_text(row[12]), content_truncated=bool(row[13]), stdout_truncated=bool(row[14]),
        stderr_truncated=bool(row[15]), content_sha256=_maybe_text(row[16]), duration_ms=_maybe_int(row[17]),
        confinement=decode_optional_choice(ConfinementMode, row[21], kind="confinement mode"),
    )
    return ExecutionRow(
        execution_id=_text(row[0]), request_id=_text(row[1]), task_id=TaskId.parse(_text(row[2])),
        decision_id=_text(row[3]), approval_id=_maybe_text(row[4]),
        identity=OperationIdentity(digest=_text(row[5])), result=result, intended_at_us=int(row[18]),
        started_at_us=_maybe_int(row[19]), finished_at_us=_maybe_int(row[20]),
    )


# ─── tool requests ────────────────────────────────────────────────────────────────────────────────


def insert_tool_request(
    tx: Transaction,
    *,
    request_id: str,
    operation: Operation,
    needs: tuple[ClassifiedNeed, ...],
    compound: bool,
    source: RequestSource,
    idempotency_key: str,
) -> ToolRequestRow:
    """Record a bound, classified request (its operation as canonical JSON, keyed by its identity).

    The inserts here return rows built from the values they bound rather than ``RETURNING`` them: the
    tables are STRICT (a value is stored exactly as bound or the insert fails), so the two are equal."""
    operation_json, identity = canonical_operation_json_and_identity(operation)
    tool = parse_tool_name(operation.tool)
    requested_at_us = now_us()
    tx.execute(
        f"INSERT INTO tool_requests ({_REQUEST}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
        (request_id, operation.task_id.value, tool.value, operation_json, identity.digest, _needs_json(needs),
         int(compound), source.value, idempotency_key, requested_at_us),
    )
    return ToolRequestRow(request_id=request_id, task_id=operation.task_id, tool=tool, operation=operation,
                          identity=identity, needs=needs, compound=bool(compound), source=source,
                          idempotency_key=idempotency_key, requested_at_us=requested_at_us)


def read_tool_request(view: ReadView, request_id: str) -> ToolRequestRow:
    """The request ``request_id`` or :class:`NotFoundError`."""
    row = view.query_one(f"SELECT {_REQUEST} FROM tool_requests WHERE id = ?", (request_id,))  # noqa: S608
    if row is None:
        raise NotFoundError(kind="tool request", entity_id=request_id[:80])
    return _request(row)


def tool_request_by_key(view: ReadView, *, task_id: TaskId, idempotency_key: str) -> ToolRequestRow | None:
    """The request recorded in ``task_id`` under ``idempotency_key`` (the UNIQUE index), if any."""
    row = view.query_one(
        f"SELECT {_REQUEST} FROM tool_requests WHERE task_id = ? AND idempotency_key = ?",  # noqa: S608
        (task_id.value, idempotency_key),
    )
    return None if row is None else _request(row)


# ─── decisions ────────────────────────────────────────────────────────────────────────────────────


def insert_decision(
    tx: Transaction,
    *,
    decision_id: str,
    request: ToolRequestRow,
    outcome: DecisionOutcome,
    covered: tuple[CapabilityNeed, ...],
    decided_by: Decider,
    reason: str,
    supersedes_decision_id: str | None = None,
    approval_id: str | None = None,
    denial_id: str | None = None,
) -> DecisionRow:
    """Record one immutable decision about ``request`` (its first, or the resolution of its pending one)."""
    decided_at_us = now_us()
    tx.execute(
        f"INSERT INTO authority_decisions ({_DECISION}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
        (decision_id, request.request_id, request.task_id.value, supersedes_decision_id, outcome.value,
         _covered_json(covered), decided_by.value, reason, approval_id, denial_id, decided_at_us),
    )
    return DecisionRow(decision_id=decision_id, request_id=request.request_id, task_id=request.task_id,
                       supersedes_decision_id=supersedes_decision_id, outcome=outcome,
                       covered=covered, decided_by=decided_by, reason=reason,
                       approval_id=approval_id, denial_id=denial_id, decided_at_us=decided_at_us)


def decisions_of_request(view: ReadView, request_id: str) -> list[DecisionRow]:
    """Every decision about ``request_id``, first first."""
    rows = view.query_all(
        f"SELECT {_DECISION} FROM authority_decisions WHERE request_id = ? ORDER BY decided_at_us, rowid",  # noqa: S608
        (request_id,),
    )
    return [_decision(row) for row in rows]


def latest_decision(view: ReadView, request_id: str) -> DecisionRow:
    """The decision in force for ``request_id``: the one no other decision supersedes."""
    row = view.query_one(
        f"SELECT {_DECISION} FROM authority_decisions d WHERE request_id = ?"  # noqa: S608
        " AND NOT EXISTS (SELECT 1 FROM authority_decisions s WHERE s.supersedes_decision_id = d.id)",
        (request_id,),
    )
    if row is None:
        raise NotFoundError(kind="authority decision for tool request", entity_id=request_id[:80])
    return _decision(row)


def pending_requests_of_task(view: ReadView, task_id: TaskId) -> list[tuple[ToolRequestRow, DecisionRow]]:
    """Requests of ``task_id`` whose decision in force is ``pending``, oldest first."""
    request_columns = ", ".join(f"r.{name.strip()}" for name in _REQUEST.split(","))
    decision_columns = ", ".join(f"d.{name.strip()}" for name in _DECISION.split(","))
    rows = view.query_all(
        f"SELECT {request_columns}, {decision_columns} FROM authority_decisions d"  # noqa: S608
        " JOIN tool_requests r ON r.id = d.request_id"
        " WHERE d.task_id = ? AND d.outcome = 'pending'"
        " AND NOT EXISTS (SELECT 1 FROM authority_decisions s WHERE s.supersedes_decision_id = d.id)"
        " ORDER BY r.requested_at_us, r.rowid",
        (task_id.value,),
    )
    width = len(_REQUEST.split(","))
    return [(_request(row[:width]), _decision(row[width:])) for row in rows]


# ─── approvals ────────────────────────────────────────────────────────────────────────────────────


def insert_approval(
    tx: Transaction, *, approval_id: str, request: ToolRequestRow, decision_id: str, scope: ApprovalScope
) -> ApprovalRow:
    """Record an approval of ``request``'s exact operation identity in its task."""
    rows = tx.execute(
        f"INSERT INTO approvals ({_APPROVAL}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, 0, ?) RETURNING {_APPROVAL}",  # noqa: S608
        (approval_id, request.task_id.value, request.request_id, decision_id, request.identity.digest,
         scope.value, now_us()),
    )
    return _approval(rows[0])


def approval_by_id(view: ReadView, approval_id: str) -> ApprovalRow | None:
    row = view.query_one(f"SELECT {_APPROVAL} FROM approvals WHERE id = ?", (approval_id,))  # noqa: S608
    return None if row is None else _approval(row)


def approval_for_request(view: ReadView, request_id: str) -> ApprovalRow | None:
    """The approval a person gave when deciding ``request_id``, if any."""
    row = view.query_one(f"SELECT {_APPROVAL} FROM approvals WHERE request_id = ?", (request_id,))  # noqa: S608
    return None if row is None else _approval(row)


def task_approvals_of_identity(view: ReadView, task_id: TaskId, identity: OperationIdentity) -> list[ApprovalRow]:
    """Approvals recorded in ``task_id`` for exactly ``identity``, oldest first."""
    rows = view.query_all(
        f"SELECT {_APPROVAL}, rowid FROM approvals WHERE task_id = ? AND operation_identity = ?",  # noqa: S608
        (task_id.value, identity.digest),
    )
    return [_approval(row) for row in _oldest_first(rows, created_at=9)]


def operations_allowed_for_task(view: ReadView, task_id: TaskId) -> list[ToolRequestRow]:
    """The requests whose exact operation a person allowed for ``task_id`` (standing allow-for-task
    approvals), oldest first, one per operation identity."""
    rows = view.query_all(
        f"SELECT {', '.join('r.' + column.strip() for column in _REQUEST.split(','))}"  # noqa: S608
        " FROM approvals AS a JOIN tool_requests AS r ON r.id = a.request_id"
        " WHERE a.task_id = ? AND a.scope = ? ORDER BY a.created_at_us, a.rowid",
        (task_id.value, ApprovalScope.ALLOW_FOR_TASK.value),
    )
    seen: set[str] = set()
    found = []
    for row in rows:
        request = _request(row)
        if request.identity.digest not in seen:
            seen.add(request.identity.digest)
            found.append(request)
    return found


def consume_allow_once_approval(tx: Transaction, *, approval_id: str, execution_id: str) -> None:
    """Mark an allow-once approval used by ``execution_id``; :class:`ConflictError` if it already was."""
    rows = tx.execute(
        "UPDATE approvals SET consumed_at_us = ?, consumed_by_execution_id = ?, revision = revision + 1"
        " WHERE id = ? AND scope = 'allow-once' AND consumed_at_us IS NULL RETURNING id",
        (now_us(), execution_id, approval_id),
    )
    if not rows:
        raise ConflictError(f"allow-once approval {approval_id} was already used")


# ─── denials ──────────────────────────────────────────────────────────────────────────────────────


def insert_denial(
    tx: Transaction, *, denial_id: str, task_id: TaskId, need: CapabilityNeed, decision_id: str, reason: str
) -> DenialRow:
    """Record that ``need`` is denied in ``task_id`` (for every tool, wrapper and working directory)."""
    rows = tx.execute(
        f"INSERT INTO denials ({_DENIAL}) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {_DENIAL}",  # noqa: S608
        (denial_id, task_id.value, need.capability.value, need.resource, decision_id, reason, now_us()),
    )
    return _denial(rows[0])


def denials_of_task(view: ReadView, task_id: TaskId) -> list[DenialRow]:
    """Denials standing in ``task_id``, oldest first."""
    rows = view.query_all(
        f"SELECT {_DENIAL}, rowid FROM denials WHERE task_id = ?",  # noqa: S608
        (task_id.value,),
    )
    return [_denial(row) for row in _oldest_first(rows, created_at=6)]


def denials_of_decision(view: ReadView, *, task_id: TaskId, decision_id: str) -> list[DenialRow]:
    """Denials ``decision_id`` recorded in ``task_id``, oldest first (found through the task's denials)."""
    rows = view.query_all(
        f"SELECT {_DENIAL}, rowid FROM denials WHERE task_id = ? AND decision_id = ?",  # noqa: S608
        (task_id.value, decision_id),
    )
    return [_denial(row) for row in _oldest_first(rows, created_at=6)]


# ─── executions ───────────────────────────────────────────────────────────────────────────────────


def insert_execution_intent(
    tx: Transaction,
    *,
    execution_id: str,
    request: ToolRequestRow,
    decision_id: str,
    approval_id: str | None,
) -> ExecutionRow:
    """Record that ``request`` is about to run (state ``intended``); at most one execution per request."""
    intended_at_us = now_us()
    tx.execute(
        "INSERT INTO tool_executions (id, request_id, task_id, decision_id, approval_id, operation_identity,"
        " state, intended_at_us) VALUES (?, ?, ?, ?, ?, ?, 'intended', ?)",
        (execution_id, request.request_id, request.task_id.value, decision_id, approval_id, request.identity.digest,
         intended_at_us),
    )
    return ExecutionRow(execution_id=execution_id, request_id=request.request_id, task_id=request.task_id,
                        decision_id=decision_id, approval_id=approval_id, identity=request.identity,
                        result=ExecutionResultValues(state=ToolExecutionState.INTENDED), intended_at_us=intended_at_us,
                        started_at_us=None, finished_at_us=None)


def execution_of_request(view: ReadView, request_id: str) -> ExecutionRow | None:
    row = view.query_one(f"SELECT {_EXECUTION} FROM tool_executions WHERE request_id = ?", (request_id,))  # noqa: S608
    return None if row is None else _execution(row)


def mark_execution_running(tx: Transaction, *, execution_id: str) -> None:
    """``intended`` → ``running`` (the worker accepted the request)."""
    tx.execute(
        "UPDATE tool_executions SET state = 'running', started_at_us = ? WHERE id = ? AND state = 'intended'",
        (now_us(), execution_id),
    )


def record_execution_result(tx: Transaction, *, execution_id: str, result: ExecutionResultValues) -> ExecutionRow:
    """End an unfinished execution with ``result``; :class:`ConflictError` if it already ended."""
    # Only the columns the update keeps are returned: the result's text (up to a few MB) is not copied
    # back out of SQLite; the STRICT table stores exactly what was bound.
    finished_at_us = now_us()
    rows = tx.execute(
        "UPDATE tool_executions SET state = ?, failure_kind = ?, message = ?, exit_code = ?, content = ?,"
        " stdout = ?, stderr = ?, content_truncated = ?, stdout_truncated = ?, stderr_truncated = ?,"
        " content_sha256 = ?, duration_ms = ?, finished_at_us = ?, confinement = ?"
        " WHERE id = ? AND state IN ('intended', 'running')"
        " RETURNING id, request_id, task_id, decision_id, approval_id, operation_identity, intended_at_us,"
        " started_at_us",
        (result.state.value, None if result.failure_kind is None else result.failure_kind.value,
         result.message, result.exit_code, result.content, result.stdout,
         result.stderr, int(result.content_truncated), int(result.stdout_truncated), int(result.stderr_truncated),
         result.content_sha256, result.duration_ms, finished_at_us,
         None if result.confinement is None else result.confinement.value, execution_id),
    )
    if not rows:
        raise ConflictError(f"execution {execution_id} has already ended")
    row = rows[0]
    return ExecutionRow(
        execution_id=_text(row[0]), request_id=_text(row[1]), task_id=TaskId.parse(_text(row[2])),
        decision_id=_text(row[3]), approval_id=_maybe_text(row[4]), identity=OperationIdentity(digest=_text(row[5])),
        result=result,
        intended_at_us=int(row[6]), started_at_us=_maybe_int(row[7]), finished_at_us=finished_at_us,
    )


def unfinished_executions(view: ReadView) -> list[ExecutionRow]:
    """Executions still ``intended`` or ``running`` (after a crash: their outcome is unknown)."""
    rows = view.query_all(
        f"SELECT {_EXECUTION} FROM tool_executions WHERE state IN ('intended', 'running')"  # noqa: S608
        " ORDER BY intended_at_us, rowid"
    )
    return [_execution(row) for row in rows]
