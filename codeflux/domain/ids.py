"""Distinct identifier types whose string form carries a prefix, so a wrong id fails to parse.

A task id reads ``tsk_`` followed by its body; a run id ``run_…``; and so on. Each kind is its own type,
so a ``RunId`` cannot be passed where a ``TaskId`` is expected (mypy), and ``TaskId.parse("run_…")``
raises :class:`~codeflux.domain.errors.InvalidValueError` (runtime). The body is 8–64 lowercase ASCII
letters or digits: short enough for logs, long enough for 128 random bits (32 hex digits), and free of
characters that would need quoting in a path, a URL or a shell.

New ids are made from entropy the caller passes in (``TaskId.from_entropy(os.urandom(16))``): the
domain reads no clock and no randomness of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Self

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "ApprovalId",
    "CheckpointId",
    "DecisionId",
    "IncidentId",
    "MemoryEntryId",
    "MessageId",
    "PlanId",
    "RepositoryApprovalId",
    "RepositoryId",
    "RunId",
    "TaskId",
    "ThreadId",
    "ToolRequestId",
    "WorkerLeaseId",
]

_BODY = re.compile(r"[0-9a-z]{8,64}")
_ENTROPY_BYTES = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class _PrefixedId:
    """Common shape of every id: ``value`` is the whole string, prefix included."""

    prefix: ClassVar[str] = ""
    kind: ClassVar[str] = "id"

    value: str

    def __post_init__(self) -> None:
        head, separator, body = self.value.partition("_")
        if head != self.prefix or not separator or _BODY.fullmatch(body) is None:
            shown = self.value[:40]
            raise InvalidValueError(
                kind=self.kind,
                reason=f"{shown!r} is not {self.prefix}_ followed by 8–64 lowercase letters or digits",
            )

    @classmethod
    def parse(cls, text: str) -> Self:
        """The id written as ``text``, or :class:`InvalidValueError` (wrong prefix, empty, bad body)."""
        return cls(value=text)

    @classmethod
    def from_entropy(cls, entropy: bytes) -> Self:
        """A new id whose body is the hex of exactly 16 bytes of caller-supplied randomness."""
        if len(entropy) != _ENTROPY_BYTES:
            raise InvalidValueError(kind=cls.kind, reason=f"needs {_ENTROPY_BYTES} bytes of entropy")
        return cls(value=f"{cls.prefix}_{entropy.hex()}")

    def __str__(self) -> str:
        return self.value


class TaskId(_PrefixedId):
    """A task: one outcome the user asked for, run in its own worktree."""

    __slots__ = ()
    prefix = "tsk"
    kind = "task id"


class RunId(_PrefixedId):
    """One run of a task through the pipeline."""

    __slots__ = ()
    prefix = "run"
    kind = "run id"


class ThreadId(_PrefixedId):
    """A conversation thread."""

    __slots__ = ()
    prefix = "thr"
    kind = "thread id"


class MessageId(_PrefixedId):
    """One message in a thread."""

    __slots__ = ()
    prefix = "msg"
    kind = "message id"


class PlanId(_PrefixedId):
    """A plan (its revisions carry their own hashes)."""

    __slots__ = ()
    prefix = "pln"
    kind = "plan id"


class ApprovalId(_PrefixedId):
    """A pending or resolved request for a person's decision."""

    __slots__ = ()
    prefix = "apr"
    kind = "approval id"


class DecisionId(_PrefixedId):
    """One immutable authority decision (automatic, allowed or denied)."""

    __slots__ = ()
    prefix = "dec"
    kind = "decision id"


class RepositoryId(_PrefixedId):
    """A repository the user opened."""

    __slots__ = ()
    prefix = "rep"
    kind = "repository id"


class WorkerLeaseId(_PrefixedId):
    """The lease of one worker process serving one run."""

    __slots__ = ()
    prefix = "lse"
    kind = "worker lease id"


class ToolRequestId(_PrefixedId):
    """One tool request proposed by the model."""

    __slots__ = ()
    prefix = "treq"
    kind = "tool request id"


class CheckpointId(_PrefixedId):
    """A durable checkpoint of a task."""

    __slots__ = ()
    prefix = "chk"
    kind = "checkpoint id"


class MemoryEntryId(_PrefixedId):
    """An entry of memory: one thing learned about a repository (see :mod:`codeflux.domain.memory`)."""

    __slots__ = ()
    prefix = "mem"
    kind = "memory entry id"


class RepositoryApprovalId(_PrefixedId):
    """A person's standing approval of one operation on one repository (every task of it)."""

    __slots__ = ()
    prefix = "rap"
    kind = "repository approval id"


class IncidentId(_PrefixedId):
    """A fingerprinted failure reported for a repository (its occurrences and states carry their own rows)."""

    __slots__ = ()
    prefix = "inc"
    kind = "incident id"
