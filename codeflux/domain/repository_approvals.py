"""Repository-scoped operation identity and the standing approvals bound to it.

A person who allowed an operation in one task can allow it **for this repository**: every later task of
the same repository (the same root commits) then runs exactly that operation without asking. The approval
binds a *repository operation identity*: the task's canonical operation document (see
:mod:`codeflux.domain.operations`) with its ``task_id`` key replaced by ``repository_roots`` — the sorted
root commits of the repository — serialized the same canonical way and hashed with sha256::

    {"args":[…],"cwd":".","effects":[…],"env":[…],"executable":{…}|null,
     "repository_roots":["<40 or 64 hex>",…],"schema":1,"stdin_sha256":…|null,"tool":"…"}

It is a distinct identity kind. A task identity's document always has the key ``task_id`` and never
``repository_roots``; a repository identity's document the other way round. The two canonical texts
therefore never coincide (the encoding is injective), so no task identity equals a repository identity
(barring a sha256 collision), and the types differ too (``op_…`` versus ``rop_…``), so code cannot
compare one with the other by mistake. Everything else of the operation — tool, every argument in order,
working directory, effects, the pinned executable (path and content hash), environment overrides, stdin
digest — stays in the identity: another argument, tool, binary or repository is another identity.

Nothing here decides; :mod:`codeflux.authority` applies the rules (denials win, confinement ``none``
refuses) and the store records approvals and their revocations as immutable rows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Self

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import RepositoryApprovalId, TaskId
from codeflux.domain.operations import Operation, canonical_json_text, operation_document

__all__ = [
    "REPOSITORY_ROOTS_KEY",
    "EarlierAllowance",
    "RepositoryApproval",
    "RepositoryApprovalRevocation",
    "RepositoryOperationIdentity",
    "RepositoryRoots",
    "canonical_repository_operation_json",
    "derive_repository_operation_identity",
]

REPOSITORY_ROOTS_KEY: Final = "repository_roots"
"""The key that replaces ``task_id`` in a repository-scoped operation document."""

_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryRoots:
    """The root commits of a repository's history (sorted, distinct, at least one): what names it.

    Two clones of one history share their roots; an unrelated repository has other roots.
    """

    commits: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.commits:
            raise InvalidValueError(kind="repository roots", reason="a repository has at least one root commit")
        for commit in self.commits:
            if not isinstance(commit, str) or _COMMIT.fullmatch(commit) is None:
                raise InvalidValueError(kind="repository roots", reason="a root commit is 40 or 64 lowercase hex")
        object.__setattr__(self, "commits", tuple(sorted(set(self.commits))))

    @classmethod
    def of(cls, commits: Iterable[str]) -> Self:
        return cls(commits=tuple(commits))

    def __str__(self) -> str:
        return ",".join(commit[:12] for commit in self.commits)


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryOperationIdentity:
    """The sha256 (lowercase hex) of a repository-scoped operation document; written ``rop_<hex>``."""

    digest: str

    def __post_init__(self) -> None:
        if _SHA256_HEX.fullmatch(self.digest) is None:
            raise InvalidValueError(kind="repository operation identity", reason="must be 64 lowercase hex digits")

    @classmethod
    def parse(cls, text: str) -> Self:
        """``rop_<64 hex>`` back into an identity; :class:`InvalidValueError` otherwise."""
        prefix, separator, digest = text.partition("_")
        if prefix != "rop" or not separator:
            raise InvalidValueError(kind="repository operation identity", reason="must start with rop_")
        return cls(digest=digest)

    def __str__(self) -> str:
        return f"rop_{self.digest}"


def canonical_repository_operation_json(operation: Operation, roots: RepositoryRoots) -> str:
    """The canonical JSON of ``operation`` scoped to the repository ``roots`` instead of its task."""
    document = operation_document(operation)
    del document["task_id"]
    document[REPOSITORY_ROOTS_KEY] = list(roots.commits)
    return canonical_json_text(document)


def derive_repository_operation_identity(operation: Operation, roots: RepositoryRoots) -> RepositoryOperationIdentity:
    """sha256 of :func:`canonical_repository_operation_json`."""
    text = canonical_repository_operation_json(operation, roots)
    return RepositoryOperationIdentity(digest=hashlib.sha256(text.encode("ascii")).hexdigest())


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryApprovalRevocation:
    """The immutable record that ended a repository approval."""

    revocation_id: str
    reason: str
    revoked_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryApproval:
    """A person's approval of exactly one operation on one repository, and the decision it came from.

    ``operation`` is the operation as it was allowed in ``task_id`` (shown to people: tool, arguments, cwd);
    ``identity`` binds the approval. Live until ``revocation`` is set; a revoked approval never covers again
    (a new decision makes a new approval).
    """

    approval_id: RepositoryApprovalId
    roots: RepositoryRoots
    identity: RepositoryOperationIdentity
    operation: Operation
    task_id: TaskId
    request_id: str
    decision_id: str
    repository_root: str
    reason: str
    created_at_us: int
    revocation: RepositoryApprovalRevocation | None

    @property
    def is_live(self) -> bool:
        return self.revocation is None


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlierAllowance:
    """A recorded decision by a person that allowed the same repository identity before: which task, when, and how
    (``allowed-once``, ``allowed-for-task``, ``allowed-for-repository``, ``allowed-by-repository-approval``)."""

    task_id: TaskId
    request_id: str
    decision_id: str
    outcome: str
    decided_at_us: int
