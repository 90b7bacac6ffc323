"""Memory as the person sees it (``codeflux memory``, the browser's Memory screen): entries with their verdicts,
provenance and history, a person's invalidation, and the export.

A verdict shown here is judged against the entry's repository as its checkout is now — the checkout codeflux
knows for that root commit (a repository opened before) — without recording anything: only a use
(:func:`codeflux.memory.recall.recall`) invalidates an entry whose evidence stopped holding. Where no known checkout
of the repository exists, the verdict is "not checked", never "applicable".
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.errors import GitOperationFailedError, RepositoryNotUsableError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import ApplicabilityVerdict, MemoryEdge, MemoryEntry, MemoryKind, MemoryState, StateCause
from codeflux.memory.recall import check_memory_entries, invalidate_memory_entry
from codeflux.store.database import Database, ReadView
from codeflux.store.memory import (
    MemoryInvalidation,
    MemoryStateRow,
    confirm_memory_entry,
    list_memory_entries,
    memory_edges_of,
    memory_entries_by_id,
    memory_entry,
    memory_state_history,
    search_memory_candidates,
)
from codeflux.store.repositories import list_repositories

__all__ = [
    "EXPORT_FORMAT",
    "MemoryDetail",
    "ShownEntry",
    "export_memory",
    "invalidate_memory_by_person",
    "list_memory",
    "show_memory",
]

EXPORT_FORMAT: Final = "codeflux-memory-export"
_MAX_REPOSITORIES: Final = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ShownEntry:
    """An entry and its verdict now; ``verdict`` is None when no checkout of its repository could be checked."""

    entry: MemoryEntry
    verdict: ApplicabilityVerdict | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryDetail:
    shown: ShownEntry
    edges: tuple[MemoryEdge, ...]
    others: dict[MemoryEntryId, MemoryEntry]  # the entries at the other ends of ``edges``
    history: tuple[MemoryStateRow, ...]


def _checkouts(view: ReadView) -> dict[str, Path]:
    """Root commit → the first known checkout that still exists."""
    found: dict[str, Path] = {}
    for row in list_repositories(view, limit=_MAX_REPOSITORIES):
        if row.root.is_dir():
            for commit in row.root_commits:
                found.setdefault(commit, row.root)
    return found


def _with_verdicts(db: Database, entries: Sequence[MemoryEntry]) -> list[ShownEntry]:
    checkouts = db.read(_checkouts)
    verdicts: dict[MemoryEntryId, ApplicabilityVerdict] = {}
    for root_commit in {entry.root_commit for entry in entries}:
        root = checkouts.get(root_commit)
        if root is None:
            continue
        batch = [entry for entry in entries if entry.root_commit == root_commit]
        try:
            checked = check_memory_entries(db, root, batch, invalidate=False)
        except (RepositoryNotUsableError, GitOperationFailedError):
            continue  # the checkout is gone or broken now: shown as not checked
        verdicts.update({c.entry.entry_id: c.verdict for c in checked})
    return [ShownEntry(entry=entry, verdict=verdicts.get(entry.entry_id)) for entry in entries]


def list_memory(db: Database, *, kind: MemoryKind | None = None, state: MemoryState | None = None,
                query: str = "", limit: int = 100) -> list[ShownEntry]:
    """Entries newest first (or best match first with ``query``), with their verdicts now."""
    bounded = max(1, min(limit, 500))
    if query.strip():
        entries = db.read(lambda view: search_memory_candidates(view, query, kind=kind, limit=min(bounded, 200)))
        entries = [entry for entry in entries if state is None or entry.state is state]
    else:
        entries = db.read(lambda view: list_memory_entries(view, kind=kind, state=state, limit=bounded))
    return _with_verdicts(db, entries)


def show_memory(db: Database, entry_id: MemoryEntryId) -> MemoryDetail:
    """One entry with its verdict now, its provenance edges (and the entries at their other ends) and history."""
    def read(view: ReadView) -> tuple[MemoryEntry, list[MemoryEdge], dict[MemoryEntryId, MemoryEntry],
                                      list[MemoryStateRow]]:
        entry = memory_entry(view, entry_id)
        edges = memory_edges_of(view, entry_id)
        others = memory_entries_by_id(view, [e.source if e.dependent == entry_id else e.dependent for e in edges])
        return entry, edges, others, memory_state_history(view, entry_id)

    entry, edges, others, history = db.read(read)
    [shown] = _with_verdicts(db, [entry])
    return MemoryDetail(shown=shown, edges=tuple(edges), others=others, history=tuple(history))


def invalidate_memory_by_person(db: Database, entry_id: MemoryEntryId, *, reason: str) -> MemoryInvalidation:
    """A person's invalidation: the entry and everything derived from it quarantined, what they influenced
    flagged, one transaction, ``reason`` recorded on each state row."""
    return invalidate_memory_entry(db, entry_id, cause=StateCause.PERSON, reason=reason)


def confirm_memory_by_person(db: Database, entry_id: MemoryEntryId, *, reason: str) -> None:
    """A person reviewed an entry flagged ``needs-review`` and keeps it (active again; ``reason`` recorded). Only a
    flagged entry can be confirmed; a quarantined one is final."""
    at_us = time.time_ns() // 1000
    db.write(lambda tx: confirm_memory_entry(tx, entry_id=entry_id, reason=reason, at_us=at_us))


def _entry_document(entry: MemoryEntry, history: Sequence[MemoryStateRow]) -> dict[str, object]:
    return {
        "id": entry.entry_id.value, "kind": entry.kind.value, "text": entry.text, "body": dict(entry.body),
        "root_commit": entry.root_commit, "toolchain": entry.toolchain.as_dict(),
        "toolchain_hash": entry.toolchain_hash, "dependency_hash": entry.dependency_hash,
        "learned_at_commit": entry.learned_at_commit,
        "replaces": None if entry.replaces is None else entry.replaces.value, "created_at_us": entry.created_at_us,
        "sources": [{"path": s.path, "blob_sha": s.blob_sha} for s in entry.sources],
        "evidence": [{"kind": e.kind.value, "ref": e.ref} for e in entry.evidence],
        "states": [{"sequence": h.sequence, "state": h.state.value, "cause": h.cause.value,
                    "cause_entry": None if h.cause_entry is None else h.cause_entry.value, "reason": h.reason,
                    "recorded_at_us": h.recorded_at_us} for h in history],
    }


def export_memory(db: Database, *, limit: int = 10_000) -> tuple[str, int]:
    """Every entry (newest first, at most ``limit``) with its sources, evidence and state history, and every edge
    between them, as canonical JSON text; and how many entries it holds."""
    def read(view: ReadView) -> tuple[list[dict[str, object]], list[dict[str, str]]]:
        entries = list_memory_entries(view, limit=limit)
        documents = [_entry_document(e, memory_state_history(view, e.entry_id)) for e in entries]
        edges: dict[tuple[str, str], dict[str, str]] = {}
        for entry in entries:
            for edge in memory_edges_of(view, entry.entry_id):
                edges[(edge.dependent.value, edge.source.value)] = {
                    "dependent": edge.dependent.value, "source": edge.source.value, "kind": edge.kind.value}
        return documents, [edges[key] for key in sorted(edges)]

    entries, edges = db.read(read)
    document = {"format": EXPORT_FORMAT, "version": 1, "entries": entries, "edges": edges}
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n", len(entries)
