"""SQL of task cleanups: the intent of removing a finished task's worktree, branch and checkpoint refs,
recorded before anything is removed, and its end (see ``migrations/000011_task_cleanups.sql``). Both tables
are facts: no UPDATE, no DELETE."""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.ids import TaskId
from codeflux.store.database import ReadView, Row, Transaction

__all__ = ["CleanupRow", "insert_cleanup", "insert_cleanup_end", "known_task_ids", "unfinished_cleanups"]

_COLUMNS = "id, task_id, delete_branch, saved_patch_identity, started_at_us"


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupRow:
    """One cleanup as recorded before it started."""

    cleanup_id: int
    task_id: TaskId
    delete_branch: bool
    saved_patch_identity: str | None
    started_at_us: int


def _row(row: Row) -> CleanupRow:
    return CleanupRow(cleanup_id=int(row[0]), task_id=TaskId.parse(str(row[1])), delete_branch=bool(row[2]),
                      saved_patch_identity=None if row[3] is None else str(row[3]), started_at_us=int(row[4]))


def insert_cleanup(tx: Transaction, *, task_id: TaskId, delete_branch: bool, saved_patch_identity: str | None,
                   at_us: int) -> CleanupRow:
    """Record the intent of one cleanup (before anything in the repository is removed)."""
    rows = tx.execute(
        f"INSERT INTO task_cleanups ({_COLUMNS}) VALUES (NULL, ?, ?, ?, ?) RETURNING {_COLUMNS}",  # noqa: S608
        (task_id.value, int(delete_branch), saved_patch_identity, at_us))
    return _row(rows[0])


def insert_cleanup_end(tx: Transaction, *, cleanup_id: int, removed: bool, refusal: str | None, detail: str,
                       at_us: int) -> bool:
    """Record how cleanup ``cleanup_id`` ended; False when an end was already recorded (nothing written)."""
    rows = tx.execute(
        "INSERT INTO task_cleanup_ends (cleanup_id, outcome, refusal, detail, ended_at_us) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (cleanup_id) DO NOTHING RETURNING cleanup_id",
        (cleanup_id, "removed" if removed else "kept", refusal, detail[:2048], at_us))
    return bool(rows)


def unfinished_cleanups(view: ReadView) -> list[CleanupRow]:
    """Every cleanup without an end, oldest first."""
    rows = view.query_all(
        "SELECT c.id, c.task_id, c.delete_branch, c.saved_patch_identity, c.started_at_us FROM task_cleanups c"
        " LEFT JOIN task_cleanup_ends e ON e.cleanup_id = c.id WHERE e.cleanup_id IS NULL ORDER BY c.id")
    return [_row(row) for row in rows]


def known_task_ids(view: ReadView) -> frozenset[str]:
    """Every task id this database holds (what ``repo clean`` must leave alone)."""
    return frozenset(str(row[0]) for row in view.query_all("SELECT id FROM tasks"))
