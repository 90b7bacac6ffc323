"""SQL of instruction-file approvals (000014): approvals a person gave and their revocations, both facts.

An approval binds ``(repository, path, sha256)``; it is in force while it has no revocation row. Approving
again after a revocation adds a new approval row, so the history of who decided what, and when, stays whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.ids import RepositoryId
from codeflux.store.database import ReadView, Row, Transaction

__all__ = [
    "InstructionApprovalRow",
    "approval_in_force",
    "approvals_of_repository",
    "insert_instruction_approval",
    "insert_instruction_revocation",
]

_COLUMNS = ("a.id, a.repository_id, a.path, a.sha256, a.approved_by, a.approved_at_us, r.revoked_by,"
            " r.revoked_at_us")
_FROM = "instruction_approvals a LEFT JOIN instruction_revocations r ON r.approval_id = a.id"


@dataclass(frozen=True, slots=True, kw_only=True)
class InstructionApprovalRow:
    approval_id: int
    repository_id: RepositoryId
    path: str
    sha256: str
    approved_by: str
    approved_at_us: int
    revoked_by: str | None
    revoked_at_us: int | None

    @property
    def in_force(self) -> bool:
        return self.revoked_at_us is None


def _row(raw: Row) -> InstructionApprovalRow:
    return InstructionApprovalRow(
        approval_id=int(raw[0]), repository_id=RepositoryId.parse(str(raw[1])), path=str(raw[2]),
        sha256=str(raw[3]), approved_by=str(raw[4]), approved_at_us=int(raw[5]),
        revoked_by=None if raw[6] is None else str(raw[6]), revoked_at_us=None if raw[7] is None else int(raw[7]))


def approvals_of_repository(view: ReadView, repository_id: RepositoryId) -> list[InstructionApprovalRow]:
    """Every approval of the repository's instruction files, revoked ones too, oldest first."""
    rows = view.query_all(f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.repository_id = ? ORDER BY a.id",  # noqa: S608
                          (repository_id.value,))
    return [_row(raw) for raw in rows]


def approval_in_force(view: ReadView, repository_id: RepositoryId, path: str,
                      sha256: str) -> InstructionApprovalRow | None:
    """The newest unrevoked approval of exactly ``(repository, path, sha256)``, if any."""
    raw = view.query_one(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE a.repository_id = ? AND a.path = ? AND a.sha256 = ?"  # noqa: S608
        " AND r.id IS NULL ORDER BY a.id DESC LIMIT 1",
        (repository_id.value, path, sha256))
    return None if raw is None else _row(raw)


def insert_instruction_approval(tx: Transaction, *, repository_id: RepositoryId, path: str, sha256: str,
                                approved_by: str, at_us: int) -> InstructionApprovalRow:
    rows = tx.execute(
        "INSERT INTO instruction_approvals (repository_id, path, sha256, approved_by, approved_at_us)"
        " VALUES (?, ?, ?, ?, ?) RETURNING id",
        (repository_id.value, path, sha256, approved_by, at_us))
    return InstructionApprovalRow(approval_id=int(rows[0][0]), repository_id=repository_id, path=path, sha256=sha256,
                                  approved_by=approved_by, approved_at_us=at_us, revoked_by=None, revoked_at_us=None)


def insert_instruction_revocation(tx: Transaction, *, approval_id: int, revoked_by: str, at_us: int) -> None:
    tx.execute("INSERT INTO instruction_revocations (approval_id, revoked_by, revoked_at_us) VALUES (?, ?, ?)",
               (approval_id, revoked_by, at_us))
