"""Read-only inspection: a closed set of entities, each one fixed parameterized SELECT.

No free SQL reaches the database: the caller names an entity from :data:`INSPECTABLE_ENTITIES`, an
optional id (bound as a parameter, only for entities where an id means something) and a limit of
1..:data:`MAX_INSPECT_LIMIT`. Each query fetches ``limit + 1`` rows so the ``truncated`` flag is exact.
The connection is opened read-only with ``query_only`` on, so inspection can never change the file.

Later features add their entities (tasks, approvals, plans, checkpoints, ...) as entries in the
``_ENTITIES`` tuple below; the mapping is closed at import time and cannot be extended at runtime.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import apsw

from codeflux.domain.errors import (
    DatabaseMissingError,
    DatabaseNeedsMigrationError,
    DatabaseNewerError,
    UsageError,
)
from codeflux.store.connection import open_connection
from codeflux.store.database import ReadView
from codeflux.store.location import DataLocation, refuse_a_file
from codeflux.store.migrations import supported_schema_version

__all__ = [
    "INSPECTABLE_ENTITIES",
    "MAX_INSPECT_LIMIT",
    "NULL_TEXT",
    "InspectableEntity",
    "InspectionResult",
    "find_inspectable_entity",
    "inspect_entity",
    "readonly_database",
]

MAX_INSPECT_LIMIT = 500
NULL_TEXT = "(null)"

IdValue = str | int

_NO_DATABASE = (
    "no codeflux database exists in the data directory yet; check --data-dir or CODEFLUX_HOME "
    "(`codeflux migrate` creates a new one)"
)


@contextlib.contextmanager
def readonly_database(location: DataLocation) -> Iterator[apsw.Connection]:
    """A read-only (``query_only``) connection to the existing database; never creates or migrates.

    Closing it never fails the caller: a read-only connection has nothing to flush or checkpoint, so
    work that completed (a written snapshot, printed rows) is never reported as failed afterwards.
    """
    refuse_a_file(location)
    if not location.database.exists():
        raise DatabaseMissingError(_NO_DATABASE)
    conn = open_connection(location.database, readonly=True)
    try:
        yield conn
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


def _text_id(raw: str) -> IdValue:
    return raw


def _version_id(raw: str) -> IdValue:
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise UsageError("--id for migrations is a migration version number (for example 1)")
    return int(raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectableEntity:
    """One entity: its columns, its fixed query, and (optionally) what ``--id`` filters on.

    ``query`` has a ``{where}`` slot that is either empty or the fixed ``id_filter``; both are
    constants of this module, and the id and limit are always bound parameters.
    """

    name: str
    description: str
    columns: tuple[str, ...]
    query: str
    id_filter: str | None = None
    id_meaning: str | None = None
    parse_id: Callable[[str], IdValue] = _text_id
    since_schema_version: int = 1

    def sql(self, *, with_id: bool) -> str:
        where = self.id_filter if with_id and self.id_filter else ""
        return self.query.format(columns=", ".join(self.columns), where=where)


_ENTITIES: tuple[InspectableEntity, ...] = (
    InspectableEntity(
        name="settings",
        description="stored settings, by key",
        columns=("key", "value_json", "revision", "created_at_us", "updated_at_us"),
        query="SELECT {columns} FROM settings {where} ORDER BY key LIMIT ?",
        id_filter="WHERE key = ?",
        id_meaning="setting key",
    ),
    InspectableEntity(
        name="migrations",
        description="every recorded migration attempt, oldest first",
        columns=("id", "version", "name", "sha256", "result", "at_us", "codeflux_version", "backup_path",
                 "error"),
        query="SELECT {columns} FROM migration_history {where} ORDER BY id LIMIT ?",
        id_filter="WHERE version = ?",
        id_meaning="migration version",
        parse_id=_version_id,
        since_schema_version=0,  # the history exists before the first migration completes
    ),
    InspectableEntity(
        name="events",
        description="journal events by session and sequence",
        columns=("session_id", "sequence", "kind", "payload_version", "payload_json", "created_at_us"),
        query="SELECT {columns} FROM events {where} ORDER BY session_id, sequence LIMIT ?",
        id_filter="WHERE session_id = ?",
        id_meaning="session id",
    ),
    InspectableEntity(
        name="logs",
        description="application log records, newest first",
        columns=("id", "at_us", "level", "event", "fields_json"),
        query="SELECT {columns} FROM app_logs {where} ORDER BY id DESC LIMIT ?",
        id_filter="WHERE id = ?",
        id_meaning="record id, as an internal error's message names it",
    ),
    InspectableEntity(
        name="providers",
        description="provider credential references (the keys stay in the OS credential store)",
        columns=("provider", "credential_ref", "revision", "created_at_us", "updated_at_us"),
        query="SELECT {columns} FROM provider_credentials {where} ORDER BY provider LIMIT ?",
        id_filter="WHERE provider = ?",
        id_meaning="provider name",
    ),
    InspectableEntity(
        name="sessions",
        description="event sessions and their current sequence",
        columns=("id", "kind", "current_sequence", "created_at_us"),
        query="SELECT {columns} FROM sessions {where} ORDER BY id LIMIT ?",
        id_filter="WHERE id = ?",
        id_meaning="session id",
    ),
    InspectableEntity(
        name="tasks",
        description="tasks: worktree, state and revision",
        columns=("id", "session_id", "repository_root", "worktree_path", "base_revision", "state", "revision",
                 "created_at_us", "updated_at_us"),
        query="SELECT {columns} FROM tasks {where} ORDER BY created_at_us, id LIMIT ?",
        id_filter="WHERE id = ?",
        id_meaning="task id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="tool-requests",
        description="tool requests as bound and classified (operation identity and needs), oldest first",
        columns=("id", "task_id", "tool", "operation_identity", "needs_json", "compound", "source",
                 "idempotency_key", "requested_at_us"),
        query="SELECT {columns} FROM tool_requests {where} ORDER BY requested_at_us, id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="decisions",
        description="every authority decision, automatic ones included, oldest first",
        columns=("id", "request_id", "task_id", "supersedes_decision_id", "outcome", "covered_needs_json",
                 "decided_by", "reason", "approval_id", "denial_id", "decided_at_us"),
        query="SELECT {columns} FROM authority_decisions {where} ORDER BY decided_at_us, id LIMIT ?",
        id_filter="WHERE request_id = ?",
        id_meaning="tool request id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="approvals",
        description="approvals of exact operation identities, and when an allow-once was consumed",
        columns=("id", "task_id", "request_id", "decision_id", "operation_identity", "scope", "consumed_at_us",
                 "consumed_by_execution_id", "revision", "created_at_us"),
        query="SELECT {columns} FROM approvals {where} ORDER BY created_at_us, id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="denials",
        description="capability denials (task, capability, resource)",
        columns=("id", "task_id", "capability", "resource", "decision_id", "reason", "created_at_us"),
        query="SELECT {columns} FROM denials {where} ORDER BY created_at_us, id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="executions",
        description="tool executions: intent, state and result summary (output is stored redacted)",
        columns=("id", "request_id", "task_id", "approval_id", "operation_identity", "state", "failure_kind",
                 "message", "exit_code", "content_truncated", "stdout_truncated", "stderr_truncated",
                 "duration_ms", "intended_at_us", "started_at_us", "finished_at_us"),
        query="SELECT {columns} FROM tool_executions {where} ORDER BY intended_at_us, id LIMIT ?",
        id_filter="WHERE request_id = ?",
        id_meaning="tool request id",
        since_schema_version=2,
    ),
    InspectableEntity(
        name="prices",
        description="recorded price revisions (rates as exact fractions of a minor unit per token)",
        columns=("id", "provider", "model", "revision", "source", "source_detail", "currency", "effective_date",
                 "input_num", "input_den", "output_num", "output_den", "cache_read_num", "cache_read_den",
                 "cache_write_num", "cache_write_den", "reasoning_num", "reasoning_den", "recorded_at_us"),
        query="SELECT {columns} FROM price_snapshots {where} ORDER BY provider, model, revision LIMIT ?",
        id_filter="WHERE model = ?",
        id_meaning="model id",
        since_schema_version=3,
    ),
    InspectableEntity(
        name="budgets",
        description="per-task hard budgets (minor units) and their revisions",
        columns=("task_id", "currency", "hard_limit_minor", "warning_minor", "token_limit", "allow_unknown_price",
                 "revision", "created_at_us", "updated_at_us"),
        query="SELECT {columns} FROM budgets {where} ORDER BY created_at_us, task_id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=3,
    ),
    InspectableEntity(
        name="budget-entries",
        description="the budget ledger: reserve, settle, release, overrun, unknown-charge (NULL = unknown)",
        columns=("id", "task_id", "request_id", "kind", "amount_minor", "amount_known", "currency", "reason",
                 "recorded_at_us"),
        query="SELECT {columns} FROM budget_entries {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=3,
    ),
    InspectableEntity(
        name="model-requests",
        description="model calls: intent, state, reservation, reported usage and cost (NULL = unknown)",
        columns=("id", "task_id", "provider", "base_url", "model", "rung", "state", "price_snapshot_id", "currency",
                 "reserved_minor", "reserved_tokens", "input_tokens", "output_tokens", "cache_read_tokens",
                 "cache_write_tokens", "reasoning_tokens", "cost_minor", "cost_known", "cost_reason", "error_kind",
                 "planned_at_us", "started_at_us", "finished_at_us"),
        query="SELECT {columns} FROM model_requests {where} ORDER BY planned_at_us, id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=3,
    ),
    InspectableEntity(
        name="repositories",
        description="repositories by stable identity (location and first commits), first seen first",
        columns=("id", "root_path", "identity", "root_commits_json", "first_seen_at_us"),
        query="SELECT {columns} FROM repositories {where} ORDER BY first_seen_at_us, id LIMIT ?",
        id_filter="WHERE id = ?",
        id_meaning="repository id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="dirty-acknowledgements",
        description="acknowledged lists of uncommitted changes, bound by their hash",
        columns=("id", "task_id", "repository_id", "dirty_hash", "changes_json", "acknowledged_by",
                 "acknowledged_at_us"),
        query="SELECT {columns} FROM dirty_acknowledgements {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="plans",
        description="immutable plan revisions: canonical plan JSON, its sha256, author and forecast range",
        columns=("task_id", "revision", "sha256", "created_by", "feedback", "forecast_json", "plan_json",
                 "created_at_us"),
        query="SELECT {columns} FROM plan_revisions {where} ORDER BY task_id, revision LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="plan-decisions",
        description="the decision on each plan revision (approved or sent back), bound to its sha256",
        columns=("task_id", "revision", "sha256", "decision", "feedback", "decided_by", "decided_at_us"),
        query="SELECT {columns} FROM plan_decisions {where} ORDER BY task_id, revision LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="transitions",
        description="every task state change with its reason, actor and journal event",
        columns=("id", "task_id", "task_revision", "from_state", "to_state", "reason", "actor", "event_session_id",
                 "event_sequence", "at_us"),
        query="SELECT {columns} FROM task_transitions {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="runs",
        description="run attempts: the approved plan revision each ran under, and where it stopped",
        columns=("id", "task_id", "attempt", "plan_revision", "plan_sha256", "started_at_us", "ended_at_us",
                 "stopped_at_stage"),
        query="SELECT {columns} FROM task_runs {where} ORDER BY task_id, attempt LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="stage-ledger",
        description="the stage ledger: one outcome per stage name, per run attempt, in stage order",
        columns=("task_id", "attempt", "stage_number", "stage", "outcome", "gate_evaluation", "reason",
                 "evidence_json", "recorded_at_us"),
        query="SELECT {columns} FROM stage_ledger {where} ORDER BY task_id, attempt, stage_number LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="patches",
        description="patches kept for tasks (rejected or preserved): diff identity, commits and sha256",
        columns=("id", "task_id", "kind", "diff_identity", "base_commit", "head_commit", "patch_sha256", "reason",
                 "recorded_at_us"),
        query="SELECT {columns} FROM task_patches {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=4,
    ),
    InspectableEntity(
        name="recovery-assessments",
        description="assessments of interrupted tasks: known facts, ambiguous effects, the recommended action",
        columns=("id", "task_id", "interrupted_in", "recommended", "diff_identity", "reason", "known_json",
                 "ambiguous_json", "assessed_at_us"),
        query="SELECT {columns} FROM recovery_assessments {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=5,
    ),
    InspectableEntity(
        name="ambiguity-resolutions",
        description="what the person recorded about effects whose outcome was unknown (happened or not)",
        columns=("id", "task_id", "item_kind", "item_id", "outcome", "note", "recorded_by", "recorded_at_us"),
        query="SELECT {columns} FROM ambiguity_resolutions {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=5,
    ),
    InspectableEntity(
        name="checkpoints",
        description="preserved worktree commits on private refs: trigger, commit, diff identity, plan, attempt",
        columns=("id", "task_id", "sequence", "trigger_kind", "commit_id", "ref_name", "head_commit",
                 "diff_identity", "plan_revision", "attempt", "event_sequence", "created_at_us"),
        query="SELECT {columns} FROM checkpoints {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=6,
    ),
    InspectableEntity(
        name="deliveries",
        description="the person's decision on a finished attempt: stages 36 human-acceptance and 37 deliver",
        columns=("id", "task_id", "attempt", "decision", "diff_identity", "human_acceptance", "deliver",
                 "landed_commit", "reason", "decided_by", "decided_at_us"),
        query="SELECT {columns} FROM task_deliveries {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=6,
    ),
    InspectableEntity(
        name="loop-conversations",
        description="the implementation loop's kept conversations: plan revision, opening attempt, when closed",
        columns=("id", "task_id", "plan_revision", "plan_sha256", "opened_in_attempt", "opened_at_us",
                 "closed_at_us", "closed_reason"),
        query="SELECT {columns} FROM loop_conversations {where} ORDER BY id LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=8,
    ),
    InspectableEntity(
        name="loop-messages",
        description="messages of the kept conversations as stored (redacted, bounded), with the steps done",
        columns=("conversation_id", "sequence", "task_id", "attempt", "role", "turn_key", "redacted",
                 "steps_done_json", "parts_json", "recorded_at_us"),
        query="SELECT {columns} FROM loop_messages {where} ORDER BY conversation_id, sequence LIMIT ?",
        id_filter="WHERE task_id = ?",
        id_meaning="task id",
        since_schema_version=8,
    ),
)

INSPECTABLE_ENTITIES: Mapping[str, InspectableEntity] = MappingProxyType({e.name: e for e in _ENTITIES})
"""Every entity ``codeflux inspect`` can show, by name. Closed: extended only by editing ``_ENTITIES``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionResult:
    """Rows of one entity as strings (NULL shown as ``(null)``) and whether more rows exist."""

    entity: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    truncated: bool
    limit: int


def find_inspectable_entity(name: str) -> InspectableEntity:
    """The entity called ``name``, or a UsageError listing the entities (with a did-you-mean)."""
    entity = INSPECTABLE_ENTITIES.get(name)
    if entity is not None:
        return entity
    known = sorted(INSPECTABLE_ENTITIES)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    shown = repr(name) if len(name) <= 40 and name.isprintable() else "(name not shown)"
    raise UsageError(f"unknown entity {shown}; {hint}choose one of: {', '.join(known)}")


def inspect_entity(
    location: DataLocation, *, entity: str, entity_id: str | None, limit: int
) -> InspectionResult:
    """Up to ``limit`` rows of ``entity`` (filtered by ``entity_id`` where meaningful), read-only."""
    chosen = find_inspectable_entity(entity)
    if not 1 <= limit <= MAX_INSPECT_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_INSPECT_LIMIT}")
    params: list[IdValue] = []
    if entity_id is not None:
        if chosen.id_filter is None:
            raise UsageError(f"{chosen.name} cannot be filtered by --id; leave it out")
        params.append(chosen.parse_id(entity_id))
    params.append(limit + 1)
    with readonly_database(location) as conn:
        view = ReadView(conn)
        _require_readable_schema(view, chosen)
        rows = view.query_all(chosen.sql(with_id=entity_id is not None), params)
    return InspectionResult(
        entity=chosen.name,
        columns=chosen.columns,
        rows=tuple(tuple(_as_text(value) for value in row) for row in rows[:limit]),
        truncated=len(rows) > limit,
        limit=limit,
    )


def _require_readable_schema(view: ReadView, entity: InspectableEntity) -> None:
    version = int(view.query_all("PRAGMA user_version")[0][0])
    supported = supported_schema_version()
    if version > supported:
        raise DatabaseNewerError(database_version=version, supported_version=supported)
    if version < entity.since_schema_version:
        raise DatabaseNeedsMigrationError(database_version=version, supported_version=supported)


def _as_text(value: object) -> str:
    if value is None:
        return NULL_TEXT
    if isinstance(value, bytes):
        return f"({len(value)} bytes)"
    return str(value)
