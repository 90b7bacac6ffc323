"""Task rows: the minimal task aggregate the authority engine needs (id, worktree, state, revision).

Each task owns a thread-kind event session ``ses_<task id body>``, created in the same transaction as
the task: the foundation's ``sessions.kind`` admits only ``system`` and ``thread``, and a task's events
(tool requests, decisions, executions, state changes) form exactly such a replayable stream.

State changes here are compare-and-set on ``revision`` and append a ``task-state-changed`` event; the
task service, which owns the transition table, validates *which* changes are allowed before calling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import NotFoundError
from codeflux.domain.events import TaskCreated
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.store.database import ReadView, Transaction, now_us
from codeflux.store.decoding import decode_choice
from codeflux.store.events import append_event

__all__ = [
    "TaskRow",
    "insert_task",
    "read_task",
    "require_task",
    "task_session_id",
]

_COLUMNS = ("id, session_id, repository_root, worktree_path, base_revision, state, revision, created_at_us,"
            " updated_at_us")


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRow:
    """One stored task."""

    task_id: TaskId
    session_id: str
    repository_root: Path
    worktree: Path
    base_revision: str | None
    state: TaskState
    revision: int
    created_at_us: int
    updated_at_us: int


def task_session_id(task_id: TaskId) -> str:
    """The event session of ``task_id``: ``ses_`` followed by the task id's body."""
    return "ses_" + task_id.value.removeprefix("tsk_")


def _row(raw: tuple[object, ...]) -> TaskRow:
    return TaskRow(
        task_id=TaskId.parse(str(raw[0])),
        session_id=str(raw[1]),
        repository_root=Path(str(raw[2])),
        worktree=Path(str(raw[3])),
        base_revision=None if raw[4] is None else str(raw[4]),
        state=decode_choice(TaskState, raw[5], kind="task state"),
        revision=int(str(raw[6])),
        created_at_us=int(str(raw[7])),
        updated_at_us=int(str(raw[8])),
    )


def insert_task(
    tx: Transaction,
    *,
    task_id: TaskId,
    repository_root: Path,
    worktree: Path,
    state: TaskState,
    base_revision: str | None = None,
) -> TaskRow:
    """Create a task, its event session and its ``task-created`` event in the open transaction."""
    at = now_us()
    session_id = task_session_id(task_id)
    tx.execute(
        "INSERT INTO sessions (id, kind, current_sequence, created_at_us) VALUES (?, 'thread', 0, ?)",
        (session_id, at),
    )
    tx.execute(
        f"INSERT INTO tasks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",  # noqa: S608
        (task_id.value, session_id, str(repository_root), str(worktree), base_revision, state.value, at, at),
    )
    append_event(tx, session_id=session_id, event=TaskCreated(task_id=task_id, state=state))
    return TaskRow(task_id=task_id, session_id=session_id, repository_root=repository_root, worktree=worktree,
                   base_revision=base_revision, state=state, revision=0, created_at_us=at, updated_at_us=at)


def read_task(view: ReadView, task_id: TaskId) -> TaskRow | None:
    """The task ``task_id``, or None."""
    raw = view.query_one(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (task_id.value,))  # noqa: S608
    return None if raw is None else _row(raw)


def require_task(view: ReadView, task_id: TaskId) -> TaskRow:
    """The task ``task_id``, or :class:`NotFoundError`."""
    row = read_task(view, task_id)
    if row is None:
        raise NotFoundError(kind="task", entity_id=task_id.value)
    return row

