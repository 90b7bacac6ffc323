"""The records a task's screens are built from, read for the services: the repositories codeflux knows,
whether any task exists yet, and one run attempt of a task.

The task service (:mod:`codeflux.coordinator.tasks.service`) hands out the task, its plan decision and its
stage ledger (domain records: :class:`~codeflux.domain.tasks.TaskRecord`,
:class:`~codeflux.domain.plans.PlanDecisionRow`, :class:`~codeflux.domain.pipeline.ledger.LedgerRow`); this
module holds the reads that need no task service. Reads only.
"""

from __future__ import annotations

from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline.ledger import RunAttemptRow
from codeflux.store import repositories as repository_rows
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store import task_records
from codeflux.store.database import Database
from codeflux.store.repositories import RepositoryRow

__all__ = [
    "RepositoryRow",
    "has_any_task",
    "known_repositories",
    "known_repository",
    "require_run_attempt",
]


def known_repositories(db: Database, *, limit: int) -> list[RepositoryRow]:
    """The repositories codeflux knows, first seen first, at most ``limit``."""
    return db.read(lambda view: repository_rows.list_repositories(view, limit=limit))


def known_repository(db: Database, identity: str) -> RepositoryRow | None:
    """The known repository with this identity (see :class:`~codeflux.gitwork.repository.RepositorySnapshot`);
    None when codeflux never registered it."""
    return db.read(lambda view: repository_rows.repository_by_identity(view, identity))


def has_any_task(db: Database) -> bool:
    """Whether any task was ever created (a first run has none)."""
    return bool(db.read(lambda view: task_records.list_task_records(view, limit=1, repository_id=None)))


def require_run_attempt(db: Database, task_id: TaskId, attempt: int) -> RunAttemptRow:
    """Attempt ``attempt`` of the task, or :class:`~codeflux.domain.errors.NotFoundError`."""
    return db.read(lambda view: ledger_rows.require_run_attempt(view, task_id, attempt))
