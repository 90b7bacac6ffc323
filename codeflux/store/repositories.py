"""SQL of repositories (by stable identity) and of dirty-tree acknowledgements.

A repository row is immutable: its id, canonical root path, identity (sha256 over location and first
commits) and the root commits. An acknowledgement records, for one task, the exact list of uncommitted
changes the person saw and its hash; the newest acknowledgement of a task is the one in force. The JSON
columns stay here: rows carry the root commits and the acknowledged changes decoded (each status as
:class:`ChangeStatus`; an unknown one raises :class:`StoredValueUnknownError`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import NotFoundError, StoredValueUnknownError
from codeflux.domain.ids import RepositoryId, TaskId
from codeflux.domain.working_tree import ChangeStatus
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "AcknowledgedChange",
    "DirtyAcknowledgementRow",
    "RepositoryRow",
    "insert_dirty_acknowledgement",
    "insert_repository",
    "latest_dirty_acknowledgement",
    "list_repositories",
    "repository_by_identity",
    "require_repository",
]

_REPOSITORY = "id, root_path, identity, root_commits_json, first_seen_at_us"
_ACKNOWLEDGEMENT = ("id, task_id, repository_id, dirty_hash, changes_json, acknowledged_by,"
                    " acknowledged_at_us")


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryRow:
    repository_id: RepositoryId
    root: Path
    identity: str
    root_commits: tuple[str, ...]
    first_seen_at_us: int


def _repository(row: Row) -> RepositoryRow:
    return RepositoryRow(repository_id=RepositoryId.parse(str(row[0])), root=Path(str(row[1])),
                         identity=str(row[2]), root_commits=tuple(json.loads(str(row[3]))),
                         first_seen_at_us=int(row[4]))


def insert_repository(
    tx: Transaction, *, repository_id: RepositoryId, root: Path, identity: str, root_commits: Sequence[str],
    at_us: int,
) -> RepositoryRow:
    """Record a repository seen for the first time (its identity must be new)."""
    commits = json.dumps(sorted(root_commits), separators=(",", ":"))
    tx.execute(
        f"INSERT INTO repositories ({_REPOSITORY}) VALUES (?, ?, ?, ?, ?)",  # noqa: S608
        (repository_id.value, str(root), identity, commits, at_us),
    )
    return RepositoryRow(repository_id=repository_id, root=root, identity=identity,
                         root_commits=tuple(sorted(root_commits)), first_seen_at_us=at_us)


def repository_by_identity(view: ReadView, identity: str) -> RepositoryRow | None:
    raw = view.query_one(f"SELECT {_REPOSITORY} FROM repositories WHERE identity = ?", (identity,))  # noqa: S608
    return None if raw is None else _repository(raw)


def require_repository(view: ReadView, repository_id: RepositoryId) -> RepositoryRow:
    """The repository ``repository_id``, or :class:`NotFoundError`."""
    raw = view.query_one(f"SELECT {_REPOSITORY} FROM repositories WHERE id = ?",  # noqa: S608
                         (repository_id.value,))
    if raw is None:
        raise NotFoundError(kind="repository", entity_id=repository_id.value)
    return _repository(raw)


def list_repositories(view: ReadView, *, limit: int) -> list[RepositoryRow]:
    """Repositories, first seen first, at most ``limit``."""
    rows = view.query_all(f"SELECT {_REPOSITORY} FROM repositories"  # noqa: S608
                          " ORDER BY first_seen_at_us, id LIMIT ?", (limit,))
    return [_repository(row) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class AcknowledgedChange:
    """One listed uncommitted change, as acknowledged: path, status and content hash (None: no content)."""

    path: str
    status: ChangeStatus
    content_sha256: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DirtyAcknowledgementRow:
    acknowledgement_id: int
    task_id: TaskId
    repository_id: RepositoryId
    dirty_hash: str
    changes: tuple[AcknowledgedChange, ...]
    acknowledged_by: str
    acknowledged_at_us: int


def _acknowledged_changes(text: str) -> tuple[AcknowledgedChange, ...]:
    try:
        items = json.loads(text)
        return tuple(AcknowledgedChange(path=str(item[0]),
                                        status=decode_choice(ChangeStatus, item[1], kind="acknowledged change status"),
                                        content_sha256=None if item[2] is None else str(item[2]))
                     for item in items)
    except (ValueError, IndexError, TypeError, KeyError):
        raise StoredValueUnknownError(kind="acknowledged changes", value=text) from None


def _acknowledgement(row: Row) -> DirtyAcknowledgementRow:
    changes = _acknowledged_changes(str(row[4]))
    return DirtyAcknowledgementRow(
        acknowledgement_id=int(row[0]), task_id=TaskId.parse(str(row[1])),
        repository_id=RepositoryId.parse(str(row[2])), dirty_hash=str(row[3]), changes=changes,
        acknowledged_by=str(row[5]), acknowledged_at_us=int(row[6]),
    )


def insert_dirty_acknowledgement(
    tx: Transaction, *, task_id: TaskId, repository_id: RepositoryId, dirty_hash: str,
    changes: Sequence[AcknowledgedChange], acknowledged_by: str, at_us: int,
) -> DirtyAcknowledgementRow:
    """Record that the person acknowledged exactly ``changes`` (listed under ``dirty_hash``) for the task."""
    listed = json.dumps([[c.path, c.status.value, c.content_sha256] for c in changes], separators=(",", ":"),
                        ensure_ascii=False)
    rows = tx.execute(
        "INSERT INTO dirty_acknowledgements (task_id, repository_id, dirty_hash, changes_json, acknowledged_by,"
        " acknowledged_at_us) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        (task_id.value, repository_id.value, dirty_hash, listed, acknowledged_by, at_us),
    )
    return DirtyAcknowledgementRow(acknowledgement_id=int(rows[0][0]), task_id=task_id, repository_id=repository_id,
                                   dirty_hash=dirty_hash, changes=tuple(changes), acknowledged_by=acknowledged_by,
                                   acknowledged_at_us=at_us)


def latest_dirty_acknowledgement(view: ReadView, task_id: TaskId) -> DirtyAcknowledgementRow | None:
    """The task's acknowledgement in force (its newest), or None."""
    raw = view.query_one(f"SELECT {_ACKNOWLEDGEMENT} FROM dirty_acknowledgements"  # noqa: S608
                         " WHERE task_id = ? ORDER BY id DESC LIMIT 1", (task_id.value,))
    return None if raw is None else _acknowledgement(raw)
