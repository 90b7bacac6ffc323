"""Memory: what codeflux learned about a repository, and the rules that decide whether it may be used.

An entry (:class:`MemoryEntry`) is one learned thing of a :class:`MemoryKind` — a repository fact, a command a
person reviewed, a file→test map, a convention, a verified atom — with the facts it was true of: the repository
(its root commit), the toolchain (:class:`Toolchain`), the dependency set (a hash) and the files it was derived
from with their git blob hashes (:class:`SourceFile`). It names the evidence it came from (:class:`EvidenceRef`).

**Applicability is checked at every use** (:func:`judge_applicability`): the entry must hold authority (state
``active``), and the repository, toolchain and dependency hash must be the same, and every source file's blob
must be unchanged at the current revision. The verdict carries the first reason that failed; it has no score,
because similarity never equals applicability — search only proposes candidates.

**Provenance**: an edge ``derived-from`` means the dependent holds only while its source does; ``influenced-by``
means the source shaped it. Quarantining an entry quarantines everything derived from it, transitively, and flags
what it only influenced ``needs-review``. **Quarantine is final** (:func:`next_memory_state`): a quarantined entry
never regains authority; only a new entry (naming it in ``replaces``) can take its place. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.ids import MemoryEntryId

__all__ = [
    "MAX_ENTRY_TEXT_CHARS",
    "MAX_REASON_CHARS",
    "ApplicabilityReason",
    "ApplicabilityVerdict",
    "ConventionOrigin",
    "CurrentFacts",
    "EvidenceKind",
    "EvidenceRef",
    "MemoryEdge",
    "MemoryEdgeKind",
    "MemoryEntry",
    "MemoryKind",
    "MemoryState",
    "NewMemoryEntry",
    "SourceFile",
    "StateCause",
    "Toolchain",
    "holds_authority",
    "judge_applicability",
    "next_memory_state",
    "parse_reason",
]

MAX_ENTRY_TEXT_CHARS: Final = 4096
MAX_REASON_CHARS: Final = 1024
MAX_SOURCES: Final = 256
_GIT_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class MemoryKind(StrEnum):
    REPOSITORY_FACT = "repository-fact"  # test command, package layout, interpreter, entry points
    REVIEWED_COMMAND = "reviewed-command"  # an exact operation a person allowed, with the decision it came from
    FILE_TEST_MAP = "file-test-map"  # which tests cover a file/function, from coverage contexts
    CONVENTION = "convention"  # from approved instruction files and review outcomes
    ATOM = "atom"  # a verified function: its contract hash and the revision it was verified at


class MemoryState(StrEnum):
    ACTIVE = "active"  # holds authority (if applicable at the time of use)
    NEEDS_REVIEW = "needs-review"  # something it was influenced by was quarantined: not used until reviewed
    QUARANTINED = "quarantined"  # final: never used again; a new entry may replace it


class StateCause(StrEnum):
    LEARNED = "learned"
    PERSON = "person"  # `codeflux memory invalidate` or the browser
    EVIDENCE_CHANGED = "evidence-changed"  # found inapplicable because a source blob changed or vanished
    DERIVED_FROM_QUARANTINED = "derived-from-quarantined"
    INFLUENCED_BY_QUARANTINED = "influenced-by-quarantined"


class ConventionOrigin(StrEnum):
    """Where a ``convention`` entry came from."""

    INSTRUCTION_FILE = "instruction-file"  # a list item of an instruction file a person approved
    REVIEW = "review"  # the reason a person gave when rejecting a task's diff


class MemoryEdgeKind(StrEnum):
    DERIVED_FROM = "derived-from"
    INFLUENCED_BY = "influenced-by"


class EvidenceKind(StrEnum):
    STAGE_LEDGER = "stage-ledger"
    TASK = "task"
    DECISION = "decision"
    COVERAGE = "coverage"
    REVIEW = "review"
    INSTRUCTION_FILE = "instruction-file"


# Allowed (from, to); quarantined has no way out.
_TRANSITIONS: Final = frozenset({
    (MemoryState.ACTIVE, MemoryState.NEEDS_REVIEW),
    (MemoryState.ACTIVE, MemoryState.QUARANTINED),
    (MemoryState.NEEDS_REVIEW, MemoryState.ACTIVE),
    (MemoryState.NEEDS_REVIEW, MemoryState.QUARANTINED),
})  # fmt: skip


def next_memory_state(current: MemoryState, to: MemoryState) -> MemoryState:
    """``to`` when an entry in ``current`` may enter it; :class:`TransitionNotAllowedError` otherwise. A quarantined
    entry can enter no state: it never regains authority."""
    if (current, to) not in _TRANSITIONS:
        raise TransitionNotAllowedError(machine="memory entry", from_state=current.value, to_state=to.value)
    return to


def holds_authority(state: MemoryState) -> bool:
    """Only an active entry may be used (and only while applicable)."""
    return state is MemoryState.ACTIVE


def parse_reason(text: str) -> str:
    """A person's or a check's reason for a state change: one line, 1..1024 characters."""
    reason = " ".join(text.split())
    if not reason:
        raise InvalidValueError(kind="reason", reason="give a reason (it is recorded with the state change)")
    if len(reason) > MAX_REASON_CHARS or "\x00" in reason:
        raise InvalidValueError(kind="reason", reason=f"at most {MAX_REASON_CHARS} characters, no NUL")
    return reason


def _git_hash(value: str, *, kind: str) -> str:
    if _GIT_HASH.fullmatch(value) is None:
        raise InvalidValueError(kind=kind, reason="must be a lowercase hex git object id")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A repository file an entry was derived from: its path relative to the root and its git blob hash then."""

    path: str
    blob_sha: str

    def __post_init__(self) -> None:
        parts = self.path.split("/")
        if not self.path or self.path.startswith("/") or "\x00" in self.path or any(p in {"", ".", ".."}
                                                                                     for p in parts):
            raise InvalidValueError(kind="memory source path", reason="a relative path inside the repository")
        _git_hash(self.blob_sha, kind="memory source blob")


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceRef:
    """A row an entry came from: a stage-ledger row, a task, a decision, a coverage run, a review …"""

    kind: EvidenceKind
    ref: str

    def __post_init__(self) -> None:
        if not 1 <= len(self.ref) <= 256 or "\x00" in self.ref:
            raise InvalidValueError(kind="memory evidence", reason="a reference of 1..256 characters")


@dataclass(frozen=True, slots=True, kw_only=True)
class Toolchain:
    """The interpreter and tool versions an entry was learned with, as (name, version) pairs sorted by name."""

    tools: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, tools: Mapping[str, str]) -> Toolchain:
        return cls(tools=tuple(sorted((str(name), str(version)) for name, version in tools.items())))

    @property
    def digest(self) -> str:
        """sha256 over the canonical JSON of the pairs: equal toolchains, equal digests."""
        text = json.dumps(dict(self.tools), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def as_dict(self) -> dict[str, str]:
        return dict(self.tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMemoryEntry:
    """What :func:`codeflux.store.memory.record_memory_entry` records. ``derived_from`` and ``influenced_by`` name
    existing entries (a pair in both is refused); ``replaces`` names the entry this one takes the place of."""

    kind: MemoryKind
    text: str
    body: Mapping[str, object]
    root_commit: str
    toolchain: Toolchain
    dependency_hash: str
    learned_at_commit: str
    sources: tuple[SourceFile, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    derived_from: tuple[MemoryEntryId, ...] = ()
    influenced_by: tuple[MemoryEntryId, ...] = ()
    replaces: MemoryEntryId | None = None

    def __post_init__(self) -> None:
        if not self.text.strip() or len(self.text) > MAX_ENTRY_TEXT_CHARS or "\x00" in self.text:
            raise InvalidValueError(kind="memory entry text", reason=f"1..{MAX_ENTRY_TEXT_CHARS} characters, no NUL")
        _git_hash(self.root_commit, kind="root commit")
        _git_hash(self.learned_at_commit, kind="commit")
        if _SHA256.fullmatch(self.dependency_hash) is None:
            raise InvalidValueError(kind="dependency hash", reason="must be a lowercase hex sha256")
        if len(self.sources) > MAX_SOURCES or len({s.path for s in self.sources}) != len(self.sources):
            raise InvalidValueError(kind="memory sources", reason=f"at most {MAX_SOURCES} distinct paths")
        if set(self.derived_from) & set(self.influenced_by):
            raise InvalidValueError(kind="memory provenance",
                                    reason="an entry is either derived from or influenced by another, not both")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEntry:
    """An entry as stored, with its newest state (``state``, why and since when)."""

    entry_id: MemoryEntryId
    kind: MemoryKind
    text: str
    body: Mapping[str, object]
    root_commit: str
    toolchain: Toolchain
    toolchain_hash: str
    dependency_hash: str
    learned_at_commit: str
    replaces: MemoryEntryId | None
    created_at_us: int
    state: MemoryState
    state_cause: StateCause
    state_reason: str
    state_since_us: int
    sources: tuple[SourceFile, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEdge:
    """``dependent`` was derived from / influenced by ``source``."""

    dependent: MemoryEntryId
    source: MemoryEntryId
    kind: MemoryEdgeKind


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentFacts:
    """The facts of the checkout an entry would be used in. ``blobs`` maps each path asked about to its git blob
    hash now, None when the file is not there.

    ``revision`` is None for a checkout as it is on disk now (a task worktree, the person's checkout); a commit id
    when the facts are those of that commit instead — a task's **base revision**, the person's checkout when the
    task started. An entry about a file the task changes is inapplicable in the task's worktree by design (a
    file-test map of ``F`` rests on ``F``); judged at the base it says what it said of the code the task started
    from. Such a verdict proposes; it proves nothing about the worktree."""

    root_commit: str
    toolchain_hash: str
    dependency_hash: str
    blobs: Mapping[str, str | None] = field(default_factory=dict)
    revision: str | None = None

    @property
    def where(self) -> str:
        """How a verdict names where it judged: ``now`` or ``at revision <id>``."""
        return "now" if self.revision is None else f"at revision {self.revision[:12]}"


class ApplicabilityReason(StrEnum):
    APPLICABLE = "applicable"
    QUARANTINED = "quarantined"
    NEEDS_REVIEW = "needs-review"
    OTHER_REPOSITORY = "other-repository"
    OTHER_TOOLCHAIN = "other-toolchain"
    OTHER_DEPENDENCIES = "other-dependencies"
    SOURCE_CHANGED = "source-changed"
    SOURCE_MISSING = "source-missing"
    SOURCE_UNKNOWN = "source-unknown"  # the check was not given the file's current blob: never assumed unchanged


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplicabilityVerdict:
    """Whether an entry may be used now, and why (the first check that failed). No score: see the module doc."""

    applicable: bool
    reason: ApplicabilityReason
    detail: str

    @property
    def evidence_changed(self) -> bool:
        """The entry's own evidence stopped holding (a source blob changed or vanished): grounds to quarantine."""
        return self.reason in {ApplicabilityReason.SOURCE_CHANGED, ApplicabilityReason.SOURCE_MISSING}


def _no(reason: ApplicabilityReason, detail: str) -> ApplicabilityVerdict:
    return ApplicabilityVerdict(applicable=False, reason=reason, detail=detail)


def judge_applicability(entry: MemoryEntry, facts: CurrentFacts) -> ApplicabilityVerdict:
    """The verdict for using ``entry`` with ``facts``: state, then repository, toolchain, dependencies, and every
    source file's blob (sorted by path), the first failure decides."""
    if entry.state is MemoryState.QUARANTINED:
        return _no(ApplicabilityReason.QUARANTINED, f"quarantined: {entry.state_reason}")
    if entry.state is MemoryState.NEEDS_REVIEW:
        return _no(ApplicabilityReason.NEEDS_REVIEW, f"needs review: {entry.state_reason}")
    if entry.root_commit != facts.root_commit:
        return _no(ApplicabilityReason.OTHER_REPOSITORY,
                   f"learned in the repository with root commit {entry.root_commit[:12]}, not this one")
    if entry.toolchain_hash != facts.toolchain_hash:
        return _no(ApplicabilityReason.OTHER_TOOLCHAIN, "learned with another interpreter or tool versions")
    if entry.dependency_hash != facts.dependency_hash:
        return _no(ApplicabilityReason.OTHER_DEPENDENCIES, "learned with another dependency set")
    for source in sorted(entry.sources, key=lambda s: s.path):
        if source.path not in facts.blobs:
            return _no(ApplicabilityReason.SOURCE_UNKNOWN, f"{source.path}: its content {facts.where} was not checked")
        now = facts.blobs[source.path]
        at = "" if facts.revision is None else f" (judged {facts.where})"
        if now is None:
            return _no(ApplicabilityReason.SOURCE_MISSING, f"{source.path} is gone since it was learned{at}")
        if now != source.blob_sha:
            return _no(ApplicabilityReason.SOURCE_CHANGED,
                       f"{source.path} changed since it was learned ({source.blob_sha[:12]} → {now[:12]}){at}")
    unchanged = "every source file unchanged" + ("" if facts.revision is None else f" {facts.where}")
    return ApplicabilityVerdict(applicable=True, reason=ApplicabilityReason.APPLICABLE,
                                detail=f"same repository, toolchain and dependencies; {unchanged}")
