"""SQL of the task service's records: tasks with their requirement, state transitions, stored patches.

:func:`record_task_transition` is the one write of a state change made by the task service: the
compare-and-set on the task's revision, its ``task-state-changed`` journal event (with reason and
actor) and the immutable ``task_transitions`` row pointing at that event — all in the caller's
transaction, so either all three are committed or none is. The caller validated the transition.

The active-task limits are read here (:func:`tasks_in_states`) and enforced by the service in the same
transaction; the schema refuses a fifth active task or a second one in a repository on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import ConflictError, NotFoundError, StaleRevisionError
from codeflux.domain.events import TaskCreated, TaskStateChanged
from codeflux.domain.ids import RepositoryId, TaskId
from codeflux.domain.tasks import Actor, PatchKind, TaskRecord, TaskState
from codeflux.store.database import ReadView, Row, SqlValue, Transaction, now_us
from codeflux.store.decoding import decode_choice
from codeflux.store.events import JournalEvent, append_event
from codeflux.store.tasks import TaskRow, require_task, task_session_id

__all__ = [
    "TaskPatchRow",
    "TaskRecord",
    "TransitionRow",
    "change_task_state",
    "insert_task_patch",
    "insert_task_record",
    "list_task_records",
    "patches_of_task",
    "read_task_record",
    "record_task_transition",
    "require_task_record",
    "tasks_in_states",
    "transitions_of_task",
]

_TASK = ("id, session_id, repository_id, repository_root, worktree_path, base_revision, title, requirement,"
         " state, revision, created_at_us, updated_at_us")
_TRANSITION = ("id, task_id, task_revision, from_state, to_state, reason, actor, event_session_id, event_sequence,"
               " at_us")
_PATCH = ("id, task_id, kind, diff_identity, base_commit, head_commit, patch, patch_sha256, reason,"
          " recorded_at_us")


def _task(row: Row) -> TaskRecord:
    return TaskRecord(
        task_id=TaskId.parse(str(row[0])), session_id=str(row[1]),
        repository_id=None if row[2] is None else RepositoryId.parse(str(row[2])),
        repository_root=Path(str(row[3])), worktree=Path(str(row[4])),
        base_revision=None if row[5] is None else str(row[5]), title=None if row[6] is None else str(row[6]),
        requirement=None if row[7] is None else str(row[7]),
        state=decode_choice(TaskState, row[8], kind="task state"), revision=int(row[9]),
        created_at_us=int(row[10]), updated_at_us=int(row[11]),
    )


def insert_task_record(
    tx: Transaction, *, task_id: TaskId, repository_id: RepositoryId, repository_root: Path, worktree: Path,
    title: str, requirement: str, at_us: int,
) -> tuple[TaskRecord, JournalEvent]:
    """Create a ``draft`` task with its event session and its ``task-created`` event."""
    session_id = task_session_id(task_id)
    tx.execute("INSERT INTO sessions (id, kind, current_sequence, created_at_us) VALUES (?, 'thread', 0, ?)",
               (session_id, at_us))
    tx.execute(
        f"INSERT INTO tasks ({_TASK}) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, 0, ?, ?)",  # noqa: S608
        (task_id.value, session_id, repository_id.value, str(repository_root), str(worktree), title, requirement,
         TaskState.DRAFT.value, at_us, at_us),
    )
    event = append_event(tx, session_id=session_id, event=TaskCreated(
        task_id=task_id, repository_id=repository_id, state=TaskState.DRAFT, title=title,
    ))
    return require_task_record(tx, task_id), event


def read_task_record(view: ReadView, task_id: TaskId) -> TaskRecord | None:
    raw = view.query_one(f"SELECT {_TASK} FROM tasks WHERE id = ?", (task_id.value,))  # noqa: S608
    return None if raw is None else _task(raw)


def require_task_record(view: ReadView, task_id: TaskId) -> TaskRecord:
    """The task ``task_id``, or :class:`NotFoundError`."""
    record = read_task_record(view, task_id)
    if record is None:
        raise NotFoundError(kind="task", entity_id=task_id.value)
    return record


def list_task_records(
    view: ReadView, *, limit: int, repository_id: RepositoryId | None = None, before: TaskId | None = None,
    words: Sequence[str] = (),
) -> list[TaskRecord]:
    """Tasks, newest first (of one repository when given), at most ``limit``: one page of a keyset walk.

    ``before`` continues the walk after that task (the last one of the previous page): only tasks created before
    it are listed, ordered by ``(created_at_us, id)`` descending, so a task created between two pages never
    shifts a later page (no task is listed twice or skipped). ``words`` (already lower-cased) keeps the tasks
    whose id, title or requirement contains every one of them (ASCII letters compared case-insensitively).
    :class:`NotFoundError` when ``before`` names no task.
    """
    if limit < 1:
        return []
    clauses: list[str] = []
    params: list[SqlValue] = []
    if before is not None:
        cursor = view.query_one("SELECT created_at_us, id FROM tasks WHERE id = ?", (before.value,))
        if cursor is None:
            raise NotFoundError(kind="task", entity_id=before.value)
        clauses.append("(created_at_us, id) < (?, ?)")
        params.extend((int(cursor[0]), str(cursor[1])))
    if repository_id is not None:
        clauses.append("repository_id = ?")
        params.append(repository_id.value)
    for word in words:
        clauses.append("instr(lower(id || ' ' || coalesce(title, '') || ' ' || coalesce(requirement, '')), ?) > 0")
        params.append(word)
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    rows = view.query_all(f"SELECT {_TASK} FROM tasks {where}"  # noqa: S608 - fixed clauses, values bound
                          "ORDER BY created_at_us DESC, id DESC LIMIT ?", (*params, limit))
    return [_task(row) for row in rows]


def tasks_in_states(view: ReadView, states: Iterable[TaskState]) -> list[TaskRecord]:
    """Every task whose state is one of ``states``, oldest first."""
    values = sorted({state.value for state in states})
    if not values:
        return []
    marks = ", ".join("?" for _ in values)
    rows = view.query_all(f"SELECT {_TASK} FROM tasks WHERE state IN ({marks})"  # noqa: S608
                          " ORDER BY created_at_us, id", values)
    return [_task(row) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransitionRow:
    transition_id: int
    task_id: TaskId
    task_revision: int
    from_state: TaskState
    to_state: TaskState
    reason: str
    actor: Actor
    event_session_id: str
    event_sequence: int
    at_us: int


def _transition(row: Row) -> TransitionRow:
    return TransitionRow(
        transition_id=int(row[0]), task_id=TaskId.parse(str(row[1])), task_revision=int(row[2]),
        from_state=decode_choice(TaskState, row[3], kind="task state"),
        to_state=decode_choice(TaskState, row[4], kind="task state"), reason=str(row[5]),
        actor=decode_choice(Actor, row[6], kind="task actor"),
        event_session_id=str(row[7]), event_sequence=int(row[8]), at_us=int(row[9]),
    )


def record_task_transition(
    tx: Transaction, *, task_id: TaskId, expected_revision: int, to_state: TaskState, reason: str, actor: Actor,
    at_us: int, base_revision: str | None = None,
) -> tuple[TaskRecord, TransitionRow, JournalEvent]:
    """Move the task to ``to_state`` if it is still at ``expected_revision``; event and transition row too.

    ``base_revision`` is recorded when the task has none yet (a run starting from that commit). Raises
    :class:`StaleRevisionError` when the task moved on, :class:`NotFoundError` when it does not exist.
    """
    before = require_task_record(tx, task_id)
    rows = tx.execute(
        "UPDATE tasks SET state = ?, revision = revision + 1, updated_at_us = max(updated_at_us, ?),"
        " base_revision = coalesce(base_revision, ?) WHERE id = ? AND revision = ? RETURNING revision",
        (to_state.value, at_us, base_revision, task_id.value, expected_revision),
    )
    if not rows:
        raise StaleRevisionError(kind="task", entity_id=task_id.value, expected=expected_revision,
                                 actual=before.revision)
    revision = int(rows[0][0])
    event = append_event(tx, session_id=before.session_id, event=TaskStateChanged(
        task_id=task_id, from_state=before.state, to_state=to_state, revision=revision, reason=reason,
        actor=actor.value,
    ))
    inserted = tx.execute(
        f"INSERT INTO task_transitions ({_TRANSITION}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  # noqa: S608
        f" RETURNING {_TRANSITION}",
        (task_id.value, revision, before.state.value, to_state.value, reason, actor.value, event.session_id,
         event.sequence, at_us),
    )
    return require_task_record(tx, task_id), _transition(inserted[0]), event



def change_task_state(
    tx: Transaction, *, task_id: TaskId, expected_revision: int, state: TaskState, reason: str,
    actor: Actor = Actor.SYSTEM,
) -> TaskRow:
    """Move the task to ``state`` (the caller validated the move) through :func:`record_task_transition`,
    so every state change — budget pauses and resumes included — has its event *and* its transition row."""
    record_task_transition(tx, task_id=task_id, expected_revision=expected_revision, to_state=state, reason=reason,
                           actor=actor, at_us=now_us())
    return require_task(tx, task_id)

def transitions_of_task(view: ReadView, task_id: TaskId) -> list[TransitionRow]:
    """Every recorded state change of the task, oldest first."""
    rows = view.query_all(f"SELECT {_TRANSITION} FROM task_transitions WHERE task_id = ?"  # noqa: S608
                          " ORDER BY task_revision", (task_id.value,))
    return [_transition(row) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskPatchRow:
    patch_id: int
    task_id: TaskId
    kind: PatchKind
    diff_identity: str
    base_commit: str
    head_commit: str
    patch: bytes
    patch_sha256: str
    reason: str
    recorded_at_us: int


def _patch(row: Row) -> TaskPatchRow:
    return TaskPatchRow(
        patch_id=int(row[0]), task_id=TaskId.parse(str(row[1])),
        kind=decode_choice(PatchKind, row[2], kind="task patch kind"), diff_identity=str(row[3]),
        base_commit=str(row[4]), head_commit=str(row[5]), patch=bytes(row[6]), patch_sha256=str(row[7]),
        reason=str(row[8]), recorded_at_us=int(row[9]),
    )


def insert_task_patch(
    tx: Transaction, *, task_id: TaskId, kind: PatchKind, diff_identity: str, base_commit: str, head_commit: str,
    patch: bytes, reason: str, at_us: int,
) -> tuple[TaskPatchRow, bool]:
    """Store ``patch`` once per (task, kind, diff identity); returns the row and whether it is new.

    Storing the same bytes again returns the stored row; other bytes under the same identity are a
    :class:`ConflictError` (an identity names exactly one diff).
    """
    digest = hashlib.sha256(patch).hexdigest()
    existing = tx.query_one(
        f"SELECT {_PATCH} FROM task_patches WHERE task_id = ? AND kind = ? AND diff_identity = ?",  # noqa: S608
        (task_id.value, kind.value, diff_identity),
    )
    if existing is not None:
        row = _patch(existing)
        if row.patch_sha256 != digest:
            raise ConflictError(f"task {task_id} already keeps a different {kind} patch under diff identity "
                                f"{diff_identity[:12]}")
        return row, False
    inserted = tx.execute(
        f"INSERT INTO task_patches ({_PATCH}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {_PATCH}",  # noqa: S608
        (task_id.value, kind.value, diff_identity, base_commit, head_commit, patch, digest, reason, at_us),
    )
    return _patch(inserted[0]), True


def patches_of_task(view: ReadView, task_id: TaskId) -> list[TaskPatchRow]:
    """Every patch kept for the task, oldest first."""
    rows = view.query_all(f"SELECT {_PATCH} FROM task_patches WHERE task_id = ? ORDER BY id",  # noqa: S608
                          (task_id.value,))
    return [_patch(row) for row in rows]
