"""Migration 000008 rebuilds ``tool_requests`` (a CHECK constraint changes only by a rebuild) to add the
``pipeline`` source: a version-7 database full of authority rows migrates with every row kept, its
foreign keys intact and the table's triggers back; the new source is accepted, any other refused. A
rebuild migration that would break a foreign key is rolled back like any failed migration."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import apsw
import pytest

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import UserDecision
from codeflux.authority.service import AuthorityService
from codeflux.domain.errors import InvalidValueError, MigrationFailedError, StoreError
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from codeflux.store.migrations import (
    REBUILDS_TABLES_DIRECTIVE,
    load_shipped_migrations,
    migrate_database,
    rebuilds_tables,
)
from codeflux.store.opening import open_store
from codeflux.store.tasks import insert_task

PIN = ExecutablePin(path="/usr/bin/true", sha256="c" * 64)
AUTHORITY_TABLES = ("tool_requests", "authority_decisions", "approvals", "tool_executions")
REPO_MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def rows(location: DataLocation, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(location.database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def version_7_with_authority_rows(location: DataLocation) -> TaskId:
    """A database at schema 7 holding a task with requests, decisions, an approval and executions."""
    migrate_database(location, migrations=load_shipped_migrations()[:7])
    db = Database.open(location.database)  # open_store would refuse schema 7
    try:
        task_id = TaskId.from_entropy(os.urandom(16))
        db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                        worktree=Path("/worktree"), state=TaskState.RUNNING))
        service = AuthorityService(db)
        for number, source in enumerate(("model", "user", "test")):
            request = bind_tool_request("run_command", {"argv": ["true", str(number)]})
            view = service.record_request(operation=describe_operation(request, task_id=task_id, executable=PIN),
                                          classification=classify_tool_request(request), source=source,
                                          idempotency_key=f"k{number}")
            service.record_user_decision(view.request_id, UserDecision.ALLOW_ONCE, reason="allowed")
            db.write(lambda tx, request_id=view.request_id: _executed_as_at_schema_7(tx, request_id))
    finally:
        db.close()
    return task_id


def _executed_as_at_schema_7(tx: Transaction, request_id: str) -> None:
    """The intent and result as a schema-7 coordinator wrote them (today's service reads and writes the
    `confinement` column of migration 000009, which a schema-7 file does not have)."""
    request = authority_rows.read_tool_request(tx, request_id)
    approval = authority_rows.approval_for_request(tx, request_id)
    assert approval is not None
    execution_id = f"exe_{os.urandom(16).hex()}"
    authority_rows.insert_execution_intent(tx, execution_id=execution_id, request=request,
                                           decision_id=authority_rows.latest_decision(tx, request_id).decision_id,
                                           approval_id=approval.approval_id)
    authority_rows.consume_allow_once_approval(tx, approval_id=approval.approval_id, execution_id=execution_id)
    tx.execute("UPDATE tool_executions SET state = 'succeeded', exit_code = 0, stdout = 'ok', finished_at_us = ?"
               " WHERE id = ?", (request.requested_at_us + 1, execution_id))


def test_a_version_7_database_migrates_with_every_authority_row_kept(data_location: DataLocation) -> None:
    task_id = version_7_with_authority_rows(data_location)
    before = {table: rows(data_location, f"SELECT * FROM {table} ORDER BY 1") for table in AUTHORITY_TABLES}  # noqa: S608
    assert len(before["tool_requests"]) == 3 and len(before["tool_executions"]) == 3

    report = migrate_database(data_location, migrations=load_shipped_migrations()[:8])

    assert report.applied == (8,) and report.backup_path is not None
    after = {table: rows(data_location, f"SELECT * FROM {table} ORDER BY 1") for table in AUTHORITY_TABLES}  # noqa: S608
    assert after == before
    assert rows(data_location, "PRAGMA foreign_key_check") == []
    assert rows(data_location, "PRAGMA integrity_check") == [("ok",)]
    triggers = {name for (name,) in rows(data_location, "SELECT name FROM sqlite_schema WHERE type = 'trigger'"
                                                        " AND tbl_name = 'tool_requests'")}
    assert triggers == {"tool_requests_are_immutable", "tool_requests_are_never_deleted"}
    assert rows(data_location, "SELECT count(*) FROM sqlite_schema WHERE name = 'tool_requests_rebuilt'") == [(0,)]

    migrate_database(data_location)  # the migrations after 8 too, so today's store opens it
    db = open_store(data_location, create=False, migrate=False)
    try:
        service = AuthorityService(db)
        request = bind_tool_request("run_command", {"argv": ["true", "checks"]})
        operation = describe_operation(request, task_id=task_id, executable=PIN)
        recorded = service.record_request(operation=operation, classification=classify_tool_request(request),
                                          source="pipeline", idempotency_key="check")
        assert service.read_request(recorded.request_id).request_id == recorded.request_id
        with pytest.raises(InvalidValueError, match="model, user, test or pipeline"):
            service.record_request(operation=operation, classification=classify_tool_request(request),
                                   source="someone", idempotency_key="other")
        with pytest.raises(StoreError):  # the schema refuses what the service would refuse
            db.write(lambda tx: tx.execute("UPDATE tool_requests SET source = 'someone'"))
        with pytest.raises(StoreError):  # the rebuilt table kept its triggers and its foreign keys
            db.write(lambda tx: tx.execute("DELETE FROM tool_requests"))
    finally:
        db.close()
    assert rows(data_location, "SELECT source FROM tool_requests ORDER BY requested_at_us") == [
        ("model",), ("user",), ("test",), ("pipeline",)]


def test_a_rebuild_that_breaks_a_foreign_key_is_rolled_back(tmp_path: Path, data_location: DataLocation) -> None:
    version_7_with_authority_rows(data_location)
    migrate_database(data_location)
    folder = tmp_path / "migrations"
    shutil.copytree(REPO_MIGRATIONS, folder)
    lossy = "\n".join([
        REBUILDS_TABLES_DIRECTIVE,
        "CREATE TABLE tool_requests_rebuilt (id TEXT PRIMARY KEY, task_id TEXT NOT NULL) STRICT;",
        "DROP TABLE tool_requests;",  # the rows are not copied: decisions and executions lose their parent
        "PRAGMA legacy_alter_table = ON;",
        "ALTER TABLE tool_requests_rebuilt RENAME TO tool_requests;",
        "PRAGMA legacy_alter_table = OFF;",
    ])
    latest = len(load_shipped_migrations())
    (folder / f"{latest + 1:06d}_lossy.sql").write_text(lossy + "\n")
    shipped = load_shipped_migrations(folder)
    assert rebuilds_tables(shipped[-1]) and not rebuilds_tables(shipped[0])

    with pytest.raises(MigrationFailedError, match="foreign key"):
        migrate_database(data_location, migrations=shipped)

    assert rows(data_location, "PRAGMA user_version") == [(latest,)]
    assert rows(data_location, "SELECT count(*) FROM tool_requests") == [(3,)]
    assert rows(data_location, "PRAGMA foreign_key_check") == []
    db = open_store(data_location, create=False, migrate=False)  # the connection policy (foreign keys on) holds
    db.close()
