"""Applicability at every use, automatic invalidation, and recall.

:func:`check_memory_entries` judges entries against a checkout as it is now (:mod:`codeflux.memory.checkout`).
An active entry found inapplicable because its *own evidence* stopped holding — a source file's blob changed or
the file is gone — is quarantined on the spot with that reason, together with everything derived from it (and
what it influenced is flagged), in one transaction per entry. Another toolchain or dependency set makes an entry
unusable here without invalidating it: it may hold again in the checkout it was learned for.

:func:`covering_tests_at_base` selects a task's tests from ``file-test-map`` entries judged at the task's base
revision, not in its worktree (:mod:`codeflux.domain.covering_tests` has the rule).

:func:`recall` is "search proposes, applicability disposes": FTS5 proposes candidates of this repository, each is
checked, and only applicable entries come back as :class:`RecalledEntry`; every other candidate comes back as a
:class:`RefusedCandidate` carrying its reason, never its body, so it cannot be used by mistake.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.covering_tests import ChangedFile, CoveringTests, FileTestMap, select_covering_tests
from codeflux.domain.errors import TransitionNotAllowedError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import (
    ApplicabilityVerdict,
    MemoryEntry,
    MemoryKind,
    MemoryState,
    StateCause,
    Toolchain,
    judge_applicability,
)
from codeflux.memory.checkout import current_facts, facts_at_revision, root_commit_of
from codeflux.store.database import Database, Transaction
from codeflux.store.memory import (
    MemoryInvalidation,
    memory_entries_by_id,
    memory_entry,
    quarantine_memory_entry,
    search_memory_candidates,
)

__all__ = [
    "CheckedEntry",
    "Recall",
    "RecallContext",
    "RecalledEntry",
    "RefusedCandidate",
    "check_memory_entries",
    "covering_tests_at_base",
    "entries_by_id",
    "invalidate_memory_entry",
    "recall",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedEntry:
    """An entry as it was when checked (after any invalidation the check caused) and its verdict."""

    entry: MemoryEntry
    verdict: ApplicabilityVerdict
    invalidation: MemoryInvalidation | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallContext:
    """Where recalled memory would be used: the checkout (a repository or a task worktree), optionally the
    toolchain the caller's checks run with (else probed), one kind, and how many candidates to consider."""

    root: Path
    toolchain: Toolchain | None = None
    kind: MemoryKind | None = None
    limit: int = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class RecalledEntry:
    """An entry that passed the applicability check now: usable."""

    entry: MemoryEntry
    verdict: ApplicabilityVerdict


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusedCandidate:
    """A candidate search proposed that may not be used, and why. It carries no body on purpose."""

    entry_id: MemoryEntryId
    kind: MemoryKind
    text: str
    verdict: ApplicabilityVerdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Recall:
    usable: tuple[RecalledEntry, ...]
    refused: tuple[RefusedCandidate, ...]


def _now_us() -> int:
    return time.time_ns() // 1000


def invalidate_memory_entry(db: Database, entry_id: MemoryEntryId, *, cause: StateCause, reason: str,
                            at_us: int | None = None) -> MemoryInvalidation:
    """Quarantine the entry and everything derived from it; flag what they influenced — one transaction."""
    when = _now_us() if at_us is None else at_us

    def work(tx: Transaction) -> MemoryInvalidation:
        return quarantine_memory_entry(tx, entry_id=entry_id, cause=cause, reason=reason, at_us=when)

    return db.write(work)


def _invalidate_for_changed_evidence(db: Database, checked: CheckedEntry) -> CheckedEntry:
    try:
        done = invalidate_memory_entry(db, checked.entry.entry_id, cause=StateCause.EVIDENCE_CHANGED,
                                       reason=checked.verdict.detail)
    except TransitionNotAllowedError:  # another check quarantined it meanwhile: the outcome stands
        done = None
    entry = db.read(lambda view: memory_entry(view, checked.entry.entry_id))
    return CheckedEntry(entry=entry, verdict=checked.verdict, invalidation=done)


def _reread(db: Database, entry_id: MemoryEntryId) -> MemoryEntry:
    return db.read(lambda view: memory_entry(view, entry_id))


def check_memory_entries(db: Database, root: Path, entries: Sequence[MemoryEntry], *,
                         toolchain: Toolchain | None = None, invalidate: bool = True,
                         revision: str | None = None) -> list[CheckedEntry]:
    """Each entry's verdict in the checkout at ``root`` now — or, with ``revision``, in that commit of its
    repository (:func:`~codeflux.memory.checkout.facts_at_revision`: a task's base revision) — in the order given;
    entries whose evidence stopped holding are invalidated (see the module docstring) — unless ``invalidate`` is
    False (a view that only shows verdicts). Later entries of the batch are read again after an invalidation, so one
    quarantined by the cascade is judged quarantined."""
    if not entries:
        return []
    paths = {source.path for entry in entries for source in entry.sources}
    facts = current_facts(root, paths, toolchain=toolchain) if revision is None else \
        facts_at_revision(root, revision, paths, toolchain=toolchain)
    checked: list[CheckedEntry] = []
    invalidated = False
    for entry in entries:
        current = _reread(db, entry.entry_id) if invalidated else entry
        verdict = judge_applicability(current, facts)
        result = CheckedEntry(entry=current, verdict=verdict)
        if invalidate and verdict.evidence_changed and current.state is not MemoryState.QUARANTINED:
            result = _invalidate_for_changed_evidence(db, result)
            invalidated = True
        checked.append(result)
    return checked


def recall(db: Database, query: str, context: RecallContext) -> Recall:
    """Candidates of the checkout's repository matching ``query`` (FTS5, any word), each checked now: applicable
    ones are usable, the rest come back refused with their reason."""
    root_commit = root_commit_of(context.root)
    candidates = db.read(lambda view: search_memory_candidates(view, query, root_commit=root_commit,
                                                               kind=context.kind, limit=context.limit))
    checked = check_memory_entries(db, context.root, candidates, toolchain=context.toolchain)
    usable = tuple(RecalledEntry(entry=c.entry, verdict=c.verdict) for c in checked if c.verdict.applicable)
    refused = tuple(RefusedCandidate(entry_id=c.entry.entry_id, kind=c.entry.kind, text=c.entry.text,
                                     verdict=c.verdict) for c in checked if not c.verdict.applicable)
    return Recall(usable=usable, refused=refused)


def entries_by_id(db: Database, entry_ids: Sequence[MemoryEntryId]) -> list[MemoryEntry]:
    """The entries among ``entry_ids`` that exist, in the order given."""
    found = db.read(lambda view: memory_entries_by_id(view, entry_ids))
    return [found[entry_id] for entry_id in entry_ids if entry_id in found]


_MAP_CANDIDATES = 50


def _maps_proposed_for(db: Database, path: str, *, root_commit: str) -> list[MemoryEntry]:
    """The file-test maps of ``path`` FTS5 proposes (matching words, then the exact file), in any state."""
    found = db.read(lambda view: search_memory_candidates(view, path, root_commit=root_commit,
                                                          kind=MemoryKind.FILE_TEST_MAP, limit=_MAP_CANDIDATES))
    return [entry for entry in found if entry.body.get("file") == path]


def covering_tests_at_base(db: Database, root: Path, changed: Sequence[ChangedFile], *, base_commit: str,
                           toolchain: Toolchain | None = None) -> CoveringTests:
    """The tests to measure a task's diff with, from the file-test maps of the checkout at ``root`` (the person's):
    for each changed non-test Python file FTS5 proposes maps naming it (the body's ``file`` must be that path), each
    judged at ``base_commit`` — the task's base revision — where an entry whose sources changed is quarantined as in
    :func:`check_memory_entries`; the applicable ones select (:func:`~codeflux.domain.covering_tests.
    select_covering_tests`). Refused candidates are named with their reason."""
    wanted = sorted({c.path for c in changed if c.path.endswith(".py") and not c.deleted})
    root_commit = root_commit_of(root)
    candidates: dict[MemoryEntryId, MemoryEntry] = {}
    for path in wanted:
        candidates.update({entry.entry_id: entry for entry in _maps_proposed_for(db, path, root_commit=root_commit)})
    checked = check_memory_entries(db, root, list(candidates.values()), toolchain=toolchain, revision=base_commit)
    maps = [FileTestMap(entry_id=c.entry.entry_id.value, file=str(c.entry.body.get("file", "")),
                        tests=tuple(str(test) for test in tests))
            for c in checked if c.verdict.applicable and isinstance(tests := c.entry.body.get("tests"), list)]
    refused = [f"{c.entry.entry_id.value} ({c.entry.body.get('file', '')}): {c.verdict.reason.value}: "
               f"{c.verdict.detail}" for c in checked if not c.verdict.applicable]
    return select_covering_tests(changed, maps, refused=refused)
