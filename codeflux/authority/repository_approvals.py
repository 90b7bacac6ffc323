"""Allow for this repository: the rules and reads around repository approvals.

A person answering a pending request with ``allow-for-repository`` allows it for the task (as
``allow-for-task``) and records a *repository approval* of its repository operation identity
(:mod:`codeflux.domain.repository_approvals`), in the same transaction
(:meth:`~codeflux.authority.service.AuthorityService.record_user_decision`). From then on, in every task of the
same repository (the same root commits), a request the rules leave pending whose repository identity is exactly
that one is allowed once automatically, by a decision that names the approval (``repository_approval_uses``);
another argument, tool, binary or repository is another identity and asks. Nothing overrides the rules that come
first: a denial of the task, or an inactive task, still refuses.

**Confinement.** Where commands run unconfined (confinement ``none``: no bubblewrap, no Landlock), a standing
approval across tasks would let code the agent wrote in one task run unasked in the next with the person's full
rights. So while the mode is ``none`` — opt-in or not — ``allow-for-repository`` is refused
(:class:`~codeflux.domain.errors.RepositoryApprovalRefusedError`, and the card says why the option is
unavailable) and existing repository approvals decide nothing: every such request asks.

Revoking writes an immutable revocation row; a revoked approval never covers again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import RepositoryApprovalId, TaskId
from codeflux.domain.operations import Operation
from codeflux.domain.repository_approvals import (
    EarlierAllowance,
    RepositoryApproval,
    RepositoryOperationIdentity,
    RepositoryRoots,
    derive_repository_operation_identity,
)
from codeflux.store import authority as authority_rows
from codeflux.store import repository_approvals as rows
from codeflux.store.database import Database, ReadView, Transaction

__all__ = [
    "UNCONFINED_REFUSAL",
    "RepositoryApprovals",
    "RepositoryCardFacts",
    "describe_repository_cover",
    "live_repository_approval_of",
    "repository_approval_cover",
    "repository_approval_refusal",
    "repository_card_facts",
]

UNCONFINED_REFUSAL: Final = ("commands run unconfined on this machine (confinement none, see `codeflux doctor`), "
                             "so nothing is allowed for a whole repository; allow it once or for this task")
_NO_REPOSITORY: Final = "this task was recorded without a repository, so there is no repository to allow it for"
_MAX_REASON: Final = 2048
_MAX_LISTED: Final = 1000


def repository_approval_refusal(view: ReadView, *, task_id: TaskId, unconfined: bool) -> str:
    """Why ``allow-for-repository`` is not offered for a request of ``task_id`` (empty when it is)."""
    if unconfined:
        return UNCONFINED_REFUSAL
    if rows.task_repository_roots(view, task_id) is None:
        return _NO_REPOSITORY
    return ""


def repository_approval_cover(view: ReadView, *, operation: Operation, unconfined: bool) -> RepositoryApproval | None:
    """The live repository approval of exactly ``operation``'s repository identity, or None (always None while
    commands run unconfined, and for a task without a repository)."""
    if unconfined:
        return None
    roots = rows.task_repository_roots(view, operation.task_id)
    if roots is None:
        return None
    return rows.live_repository_approval(view, derive_repository_operation_identity(operation, roots))


def _day(at_us: int) -> str:
    return datetime.fromtimestamp(at_us / 1_000_000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def describe_repository_cover(approval: RepositoryApproval) -> str:
    """The reason recorded on a decision a repository approval made: which approval, from which decision."""
    return (f"allowed for this repository by {approval.approval_id} (a person's decision {approval.decision_id} "
            f"in task {approval.task_id}, {_day(approval.created_at_us)}): exactly this operation on the repository "
            f"with root commits {approval.roots}")[:_MAX_REASON]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryCardFacts:
    """What a pending request's approval card says about its repository: who allowed it before (task, date),
    whether allow-for-repository is offered (``refusal`` empty) and the identity it would bind."""

    allowed_before: tuple[EarlierAllowance, ...]
    refusal: str
    identity: RepositoryOperationIdentity | None
    not_applicable: tuple[str, ...] = ()


def repository_card_facts(view: ReadView, request_id: str, *, unconfined: bool,
                          allowed_before: Sequence[EarlierAllowance] = (),
                          not_applicable: Sequence[str] = ()) -> RepositoryCardFacts:
    """:class:`RepositoryCardFacts` of the recorded request ``request_id``; ``allowed_before`` is what the caller's
    memory lookup found (:func:`codeflux.coordinator.runs.reviewed_commands.allowed_before`), ``not_applicable``
    why the earlier allowances it refused do not apply now."""
    request = authority_rows.read_tool_request(view, request_id)
    refusal = repository_approval_refusal(view, task_id=request.task_id, unconfined=unconfined)
    roots = rows.task_repository_roots(view, request.task_id)
    identity = None if refusal or roots is None else derive_repository_operation_identity(request.operation, roots)
    return RepositoryCardFacts(allowed_before=tuple(allowed_before), refusal=refusal,
                               identity=identity, not_applicable=tuple(not_applicable))


class RepositoryApprovals:
    """Listing and revoking repository approvals (one transaction per revocation)."""

    def __init__(self, db: Database, *, entropy: Callable[[int], bytes] = os.urandom) -> None:
        self._db = db
        self._entropy = entropy

    def list_approvals(self, *, roots: RepositoryRoots | None = None,
                       include_revoked: bool = False) -> list[RepositoryApproval]:
        """Approvals of the repository ``roots`` (None: all), newest first; revoked ones only if asked."""
        return self._db.read(lambda view: rows.list_repository_approvals(
            view, roots=roots, include_revoked=include_revoked, limit=_MAX_LISTED))

    def show(self, approval_id: RepositoryApprovalId) -> RepositoryApproval:
        return self._db.read(lambda view: rows.repository_approval_by_id(view, approval_id))

    def revoke(self, approval_id: RepositoryApprovalId, *, reason: str) -> RepositoryApproval:
        """Revoke ``approval_id``: from the commit on it covers nothing. Revoking a revoked approval returns it
        unchanged (the first revocation stands)."""
        if not 1 <= len(reason) <= _MAX_REASON:
            raise InvalidValueError(kind="revocation", reason="the reason must be 1 to 2048 characters")

        def work(tx: Transaction) -> RepositoryApproval:
            current = rows.repository_approval_by_id(tx, approval_id)
            if current.revocation is not None:
                return current
            return rows.insert_repository_approval_revocation(
                tx, revocation_id=f"rvk_{self._entropy(16).hex()}", approval_id=approval_id, reason=reason)

        return self._db.write(work)

    def decision_rested_on(self, decision_id: str) -> RepositoryApprovalId | None:
        """The repository approval that made ``decision_id`` automatically, if one did (the evidence's "why")."""
        return self._db.read(lambda view: rows.repository_approval_of_decision(view, decision_id))

    def card_facts(self, request_id: str, *, unconfined: bool,
                   allowed_before: Sequence[EarlierAllowance] = (),
                   not_applicable: Sequence[str] = ()) -> RepositoryCardFacts:
        """:func:`repository_card_facts` of ``request_id``, read now."""
        return self._db.read(lambda view: repository_card_facts(view, request_id, unconfined=unconfined,
                                                                allowed_before=allowed_before,
                                                                not_applicable=not_applicable))


def live_repository_approval_of(db: Database, identity: RepositoryOperationIdentity) -> RepositoryApproval | None:
    """The live repository approval of exactly ``identity``, read now (``codeflux watch`` runs only under one)."""
    return db.read(lambda view: rows.live_repository_approval(view, identity))
