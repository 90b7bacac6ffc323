"""Every statement the authority store runs finds its rows through an index (EXPLAIN QUERY PLAN), and the
authority tables carry exactly the indexes those statements and the triggers need (000007 dropped the
rest: each index is one more WAL page per commit on the tool round trip)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import UserDecision
from codeflux.authority.service import AuthorityService, RequestView
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.errors import CapabilityDeniedError, IdempotencyConflictError
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store import authority as rows
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.recovery import ambiguous_effects_of_task
from codeflux.store.tasks import insert_task

PIN = ExecutablePin(path="/usr/bin/true", sha256="c" * 64)
AUTHORITY_TABLES = ("tool_requests", "authority_decisions", "approvals", "denials", "tool_executions")
_MENTIONS = re.compile(r"\b(" + "|".join(AUTHORITY_TABLES) + r")\b")

# name → (table, indexed columns, partial-index WHERE or None). Autoindexes come from PRIMARY KEY/UNIQUE.
EXPECTED_INDEXES = {
    "authority_decisions_by_request": ("authority_decisions", ("request_id", "decided_at_us"), None),
    "authority_decisions_pending_by_task": ("authority_decisions", ("task_id",), "outcome = 'pending'"),
    "approvals_by_identity": ("approvals", ("task_id", "operation_identity"), None),
    "denials_by_task": ("denials", ("task_id", "capability"), None),
    "tool_executions_unfinished": ("tool_executions", ("state",), "state IN ('intended', 'running')"),
    "tool_executions_unknown_by_task": ("tool_executions", ("task_id",), "state = 'outcome-unknown'"),
}

# The lookups the triggers of 000002 (and 000005's resolution trigger) make, as the statements they run.
TRIGGER_LOOKUPS = (
    ("SELECT task_id FROM tool_requests WHERE id = ?", ("treq_x",)),
    ("SELECT 1 FROM authority_decisions WHERE request_id = ?", ("treq_x",)),
    ("SELECT 1 FROM authority_decisions WHERE id = ? AND request_id = ? AND outcome = 'pending'", ("dec_x", "treq_x")),
    ("SELECT 1 FROM tool_requests WHERE id = ? AND task_id = ? AND operation_identity = ?", ("treq_x", "t", "i")),
    ("SELECT 1 FROM approvals WHERE id = ? AND task_id = ? AND operation_identity = ?"
     " AND (scope = 'allow-for-task' OR (consumed_at_us IS NULL AND request_id = ?))", ("apr_x", "t", "i", "r")),
    ("SELECT 1 FROM tool_executions WHERE id = ? AND task_id = ? AND state = 'outcome-unknown'", ("exe_x", "t")),
)


def _submit(service: AuthorityService, task_id: TaskId, key: str, argv: list[str]) -> RequestView:
    request = bind_tool_request("run_command", {"argv": argv})
    operation = describe_operation(request, task_id=task_id, executable=PIN)
    return service.record_request(operation=operation, classification=classify_tool_request(request),
                                  source="test", idempotency_key=key)


@pytest.fixture
def traced(data_location: DataLocation) -> Iterator[tuple[Database, list[tuple[str, tuple[object, ...]]]]]:
    """A migrated database whose connections record every statement that names an authority table."""
    statements: list[tuple[str, tuple[object, ...]]] = []
    recording: list[bool] = []  # empty while the migrations run

    def tracer(_cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        if recording and _MENTIONS.search(sql):
            statements.append((sql, tuple(bindings) if isinstance(bindings, (tuple, list)) else ()))
        return True

    def hook(conn: apsw.Connection) -> None:
        conn.exec_trace = tracer

    apsw.connection_hooks.append(hook)
    try:
        database = open_store(data_location, create=True, migrate=True)
    finally:
        apsw.connection_hooks.remove(hook)
    recording.append(True)
    try:
        yield database, statements
    finally:
        database.close()


def _exercise(db: Database) -> None:
    """Every authority store function, through the service where it has a caller."""
    service = AuthorityService(db)
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                    worktree=Path(f"/data/worktrees/repo/{task_id}"), state=TaskState.RUNNING))
    allowed = _submit(service, task_id, "k1", ["curl", "https://example.com"])
    _submit(service, task_id, "k1", ["curl", "https://example.com"])
    with pytest.raises(IdempotencyConflictError):
        _submit(service, task_id, "k1", ["curl", "https://example.org"])
    service.record_user_decision(allowed.request_id, UserDecision.ALLOW_FOR_TASK, reason="needed")
    covered = _submit(service, task_id, "k2", ["curl", "https://example.com"])
    once = _submit(service, task_id, "k3", ["true"])
    _submit(service, task_id, "k4", ["wget", "https://example.org"])
    assert [view.request_id for view in service.pending_requests(task_id)] != []
    service.record_user_decision(once.request_id, UserDecision.ALLOW_ONCE, reason="once")
    intent = service.record_execution_intent(once.request_id)
    service.record_execution_intent(once.request_id)
    service.record_execution_result(task=intent.task, execution_id=intent.execution_id,
                                    result=rows.ExecutionResultValues(state=ToolExecutionState.SUCCEEDED, exit_code=0))
    service.record_execution_intent(covered.request_id)
    service.reconcile_interrupted_executions()
    denied = _submit(service, task_id, "k5", ["nc", "example.net", "80"])
    service.record_user_decision(denied.request_id, UserDecision.DENY, reason="no network",
                                 deny=(CapabilityNeed(capability=Capability.NETWORK),))
    with pytest.raises(CapabilityDeniedError):
        service.record_execution_intent(denied.request_id)
    decision = service.read_request(denied.request_id).decision
    db.read(lambda view: rows.denials_of_decision(view, task_id=task_id, decision_id=decision.decision_id))
    db.read(lambda view: rows.decisions_of_request(view, denied.request_id))
    db.read(lambda view: ambiguous_effects_of_task(view, task_id))
    service.read_execution(once.request_id)


def _plan(conn: apsw.Connection, sql: str, bindings: tuple[object, ...]) -> list[str]:
    return [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", bindings)]


def _full_scans(plan: list[str]) -> list[str]:
    """Plan lines that read a whole table or a whole full index (a scan of a partial index reads only
    the rows it holds, so it counts as a lookup)."""
    partial = tuple(name for name, (_, _, where) in EXPECTED_INDEXES.items() if where)
    return [line for line in plan
            if line.startswith("SCAN ") and not line.startswith("SCAN CONSTANT ROW")
            and not any(f"INDEX {name}" in line for name in partial)]


def test_every_authority_statement_and_trigger_lookup_uses_an_index(
    traced: tuple[Database, list[tuple[str, tuple[object, ...]]]],
) -> None:
    db, statements = traced
    _exercise(db)
    seen = {sql: bindings for sql, bindings in statements}
    assert len(seen) >= 15, sorted(seen)
    conn = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        problems = {}
        for sql, bindings in [*seen.items(), *TRIGGER_LOOKUPS]:
            if sql.lstrip().upper().startswith("INSERT"):
                continue  # an INSERT finds no rows; its triggers' lookups are checked through TRIGGER_LOOKUPS
            scans = _full_scans(_plan(conn, sql, bindings))
            if scans:
                problems[sql] = scans
    finally:
        conn.close()
    assert problems == {}


def test_the_authority_tables_carry_exactly_the_indexes_their_queries_need(
    traced: tuple[Database, list[tuple[str, tuple[object, ...]]]],
) -> None:
    db, _ = traced
    conn = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = {}
        for name, table, sql in conn.execute(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
            " AND tbl_name IN (?, ?, ?, ?, ?)", AUTHORITY_TABLES,
        ):
            columns = tuple(str(row[2]) for row in conn.execute(f"PRAGMA index_info({name})"))
            where = re.search(r"\bWHERE\s+(.*)$", str(sql), re.DOTALL)
            found[str(name)] = (str(table), columns, None if where is None else where.group(1).strip())
    finally:
        conn.close()
    assert found == EXPECTED_INDEXES
