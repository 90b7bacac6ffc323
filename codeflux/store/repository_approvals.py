"""SQL of repository approvals: the approvals, their revocations and the decisions they made.

Rows leave as :class:`~codeflux.domain.repository_approvals.RepositoryApproval`: the operation is the request's
own (parsed from its canonical JSON), and the stored repository identity must still be the sha256 of that
operation scoped to the stored roots, or the row is refused (:class:`StoredValueUnknownError`). Every function
works inside the caller's transaction or read view.
"""

from __future__ import annotations

import json
from typing import Final

from codeflux.domain.authority import ToolRequestRow
from codeflux.domain.errors import InvalidValueError, NotFoundError, StoredValueUnknownError
from codeflux.domain.ids import RepositoryApprovalId, TaskId
from codeflux.domain.operations import parse_canonical_operation_json
from codeflux.domain.repository_approvals import (
    RepositoryApproval,
    RepositoryApprovalRevocation,
    RepositoryOperationIdentity,
    RepositoryRoots,
    canonical_repository_operation_json,
    derive_repository_operation_identity,
)
from codeflux.store.database import ReadView, Row, Transaction, now_us

__all__ = [
    "insert_repository_approval",
    "insert_repository_approval_revocation",
    "insert_repository_approval_use",
    "list_repository_approvals",
    "live_repository_approval",
    "repository_approval_by_id",
    "repository_approval_from_decision",
    "repository_approval_of_decision",
    "task_repository_roots",
]

_APPROVAL: Final = ("a.id, a.repository_roots_json, a.repository_identity, r.operation_json, a.task_id, a.request_id,"
                    " a.decision_id, t.repository_root, a.reason, a.created_at_us, v.id, v.reason, v.revoked_at_us")
_FROM: Final = (" FROM repository_approvals a JOIN tool_requests r ON r.id = a.request_id"
                " JOIN tasks t ON t.id = a.task_id"
                " LEFT JOIN repository_approval_revocations v ON v.repository_approval_id = a.id")


def _roots_json(roots: RepositoryRoots) -> str:
    return json.dumps(list(roots.commits), separators=(",", ":"))


def _decode_roots(text: str) -> RepositoryRoots:
    try:
        items = json.loads(text)
        if not isinstance(items, list):
            raise TypeError
        return RepositoryRoots.of(str(item) for item in items)
    except (ValueError, TypeError, InvalidValueError):
        raise StoredValueUnknownError(kind="repository roots", value=text[:200]) from None


def _approval(row: Row) -> RepositoryApproval:
    roots = _decode_roots(str(row[1]))
    identity = RepositoryOperationIdentity(digest=str(row[2]))
    try:
        operation = parse_canonical_operation_json(str(row[3]))
    except InvalidValueError:
        raise StoredValueUnknownError(kind="repository approval operation", value=str(row[0])) from None
    if derive_repository_operation_identity(operation, roots) != identity:
        raise StoredValueUnknownError(kind="repository approval identity", value=str(row[0]))
    revocation = None if row[10] is None else RepositoryApprovalRevocation(
        revocation_id=str(row[10]), reason=str(row[11]), revoked_at_us=int(str(row[12])))
    return RepositoryApproval(
        approval_id=RepositoryApprovalId.parse(str(row[0])), roots=roots, identity=identity, operation=operation,
        task_id=TaskId.parse(str(row[4])), request_id=str(row[5]), decision_id=str(row[6]),
        repository_root=str(row[7]), reason=str(row[8]), created_at_us=int(str(row[9])), revocation=revocation)


def task_repository_roots(view: ReadView, task_id: TaskId) -> RepositoryRoots | None:
    """The root commits of ``task_id``'s repository; None for a task recorded without a repository."""
    row = view.query_one("SELECT p.root_commits_json FROM tasks t JOIN repositories p ON p.id = t.repository_id"
                         " WHERE t.id = ?", (task_id.value,))
    return None if row is None else _decode_roots(str(row[0]))


def insert_repository_approval(
    tx: Transaction, *, approval_id: RepositoryApprovalId, request: ToolRequestRow, roots: RepositoryRoots,
    decision_id: str, reason: str,
) -> RepositoryApproval:
    """Record that a person allowed ``request``'s operation for the repository ``roots`` by ``decision_id``."""
    identity = derive_repository_operation_identity(request.operation, roots)
    created = now_us()
    tx.execute(
        "INSERT INTO repository_approvals (id, repository_roots_json, repository_identity, operation_json, task_id,"
        " request_id, decision_id, reason, created_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (approval_id.value, _roots_json(roots), identity.digest,
         canonical_repository_operation_json(request.operation, roots), request.task_id.value, request.request_id,
         decision_id, reason, created),
    )
    return repository_approval_by_id(tx, approval_id)


def repository_approval_by_id(view: ReadView, approval_id: RepositoryApprovalId) -> RepositoryApproval:
    """The approval ``approval_id`` (revoked or not), or :class:`NotFoundError`."""
    row = view.query_one(f"SELECT {_APPROVAL}{_FROM} WHERE a.id = ?", (approval_id.value,))
    if row is None:
        raise NotFoundError(kind="repository approval", entity_id=approval_id.value)
    return _approval(row)


def live_repository_approval(view: ReadView, identity: RepositoryOperationIdentity) -> RepositoryApproval | None:
    """The oldest unrevoked approval of exactly ``identity`` (which names the repository), or None."""
    row = view.query_one(f"SELECT {_APPROVAL}{_FROM} WHERE a.repository_identity = ? AND v.id IS NULL"
                         " ORDER BY a.created_at_us, a.rowid LIMIT 1", (identity.digest,))
    return None if row is None else _approval(row)


def list_repository_approvals(view: ReadView, *, roots: RepositoryRoots | None, include_revoked: bool,
                              limit: int) -> list[RepositoryApproval]:
    """Approvals, newest first: of the repository ``roots`` (None: every repository), live only unless
    ``include_revoked``; at most ``limit``."""
    where = []
    params: list[str | int] = []
    if roots is not None:
        where.append("a.repository_roots_json = ?")
        params.append(_roots_json(roots))
    if not include_revoked:
        where.append("v.id IS NULL")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = view.query_all(f"SELECT {_APPROVAL}{_FROM}{clause} ORDER BY a.created_at_us DESC, a.rowid DESC"
                          " LIMIT ?", (*params, limit))
    return [_approval(row) for row in rows]


def insert_repository_approval_revocation(tx: Transaction, *, revocation_id: str,
                                          approval_id: RepositoryApprovalId, reason: str) -> RepositoryApproval:
    """Revoke ``approval_id`` (an immutable row; the UNIQUE column refuses a second revocation)."""
    tx.execute("INSERT INTO repository_approval_revocations (id, repository_approval_id, reason, revoked_at_us)"
               " VALUES (?, ?, ?, ?)", (revocation_id, approval_id.value, reason, now_us()))
    return repository_approval_by_id(tx, approval_id)


def insert_repository_approval_use(tx: Transaction, *, decision_id: str, approval_id: RepositoryApprovalId) -> None:
    """Name ``approval_id`` as the reason the allowed-once decision ``decision_id`` was made automatically."""
    tx.execute("INSERT INTO repository_approval_uses (decision_id, repository_approval_id, used_at_us)"
               " VALUES (?, ?, ?)", (decision_id, approval_id.value, now_us()))


def repository_approval_from_decision(view: ReadView, decision_id: str) -> RepositoryApprovalId | None:
    """The repository approval the person's decision ``decision_id`` recorded, if it recorded one."""
    row = view.query_one("SELECT id FROM repository_approvals WHERE decision_id = ?", (decision_id,))
    return None if row is None else RepositoryApprovalId.parse(str(row[0]))


def repository_approval_of_decision(view: ReadView, decision_id: str) -> RepositoryApprovalId | None:
    """The repository approval that made ``decision_id``, if one did."""
    row = view.query_one("SELECT repository_approval_id FROM repository_approval_uses WHERE decision_id = ?",
                         (decision_id,))
    return None if row is None else RepositoryApprovalId.parse(str(row[0]))
