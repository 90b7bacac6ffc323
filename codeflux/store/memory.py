"""SQL of memory entries, their provenance edges, their states and their text index (see
``migrations/000013_memory.sql``); the rules live in :mod:`codeflux.domain.memory`.

Every table is a fact table: an entry, its sources, evidence and edges are written once, with its first state and
its FTS row, in the caller's transaction (:func:`record_memory_entry`). :func:`quarantine_memory_entry` quarantines
an entry and, in the same transaction, everything derived from it transitively and flags what any of them only
influenced ``needs-review`` — one immutable state row each, all naming the entry that started it, written by one
statement (a recursive walk feeding one ``INSERT … SELECT``, no row passing through Python on the way in).
:func:`search_memory_candidates` builds its FTS5 query from words only, each quoted, so text a person typed is never
FTS syntax. Rows leave through one decoder as domain types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError, NotFoundError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import (
    EvidenceKind,
    EvidenceRef,
    MemoryEdge,
    MemoryEdgeKind,
    MemoryEntry,
    MemoryKind,
    MemoryState,
    NewMemoryEntry,
    SourceFile,
    StateCause,
    Toolchain,
    next_memory_state,
    parse_reason,
)
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "DERIVED_CLOSURE_SQL",
    "MAX_SEARCH_TERMS",
    "MemoryInvalidation",
    "MemoryStateRow",
    "confirm_memory_entry",
    "fts_query_of",
    "list_memory_entries",
    "memory_edges_of",
    "memory_entries_by_id",
    "memory_entry",
    "memory_state_history",
    "quarantine_memory_entry",
    "record_memory_entry",
    "search_memory_candidates",
]

MAX_SEARCH_TERMS: Final = 32
_WORD = re.compile(r"\w+", re.UNICODE)

_SELECT: Final = (
    "SELECT e.id, e.kind, e.text, e.body_json, e.root_commit, e.toolchain_json, e.toolchain_hash, e.dependency_hash,"
    " e.learned_at_commit, e.replaces_id, e.created_at_us, st.state, st.cause, st.reason, st.recorded_at_us"
    " FROM memory_entries e JOIN memory_entry_states st ON st.entry_id = e.id"
    " AND st.sequence = (SELECT max(sequence) FROM memory_entry_states WHERE entry_id = e.id)"
)

DERIVED_CLOSURE_SQL: Final = (
    "WITH RECURSIVE closure(id) AS ("
    " SELECT dependent_id FROM memory_edges WHERE source_id = ?1 AND kind = 'derived-from'"
    " UNION SELECT m.dependent_id FROM memory_edges m JOIN closure c ON m.source_id = c.id"
    " WHERE m.kind = 'derived-from')"
)
"""Every entry derived, transitively, from the entry bound to ``?1`` (itself excluded). The baseline of the memory
benchmark: the cascade (:data:`_CASCADE_SQL`) walks exactly these edges, plus the ``influenced-by`` edges leaving
each entry it reaches (read from the same index range)."""

# The whole cascade below the invalidated entry (bound to ?1) as one statement: one walk, one INSERT … SELECT.
# `reached` walks every edge leaving the entry and, recursively, every edge leaving an entry reached through
# `derived-from` edges only; `influenced` is 0 for those (the derived closure) and 1 for an entry reached only
# through a final `influenced-by` edge. `closure` keeps one row per entry (min: derived wins over influenced) and
# drops the invalidated entry itself; `newest` joins each to its newest state, in entry-id order, so the state rows
# and their (entry_id, sequence) index entries are written in index order. Closure entries not yet quarantined get a
# `quarantined` row; the others, when still `active`, a `needs-review` row; the ordering trigger checks each row as
# before. SQLite materializes a SELECT that reads the table it inserts into, so every state read is the one before
# this statement. ?2 / ?3 are the reasons of the two kinds of row, ?4 the time.
_CASCADE_SQL: Final = (
    "WITH RECURSIVE reached(id, influenced) AS ("
    " SELECT dependent_id, kind = 'influenced-by' FROM memory_edges WHERE source_id = ?1"
    " UNION SELECT m.dependent_id, m.kind = 'influenced-by' FROM reached r JOIN memory_edges m ON m.source_id = r.id"
    " WHERE NOT r.influenced),"
    " closure(id, influenced) AS (SELECT id, min(influenced) FROM reached WHERE id <> ?1 GROUP BY id),"
    " newest(id, influenced, sequence, state) AS (SELECT c.id, c.influenced, max(s.sequence), s.state"
    " FROM closure c JOIN memory_entry_states s ON s.entry_id = c.id GROUP BY c.id)"
    " INSERT INTO memory_entry_states (entry_id, sequence, state, cause, cause_entry_id, reason, recorded_at_us)"
    " SELECT id, sequence + 1, iif(influenced, 'needs-review', 'quarantined'),"
    " iif(influenced, 'influenced-by-quarantined', 'derived-from-quarantined'), ?1, iif(influenced, ?3, ?2), ?4"
    " FROM newest WHERE iif(influenced, state = 'active', state <> 'quarantined')"
    " RETURNING entry_id, state"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryStateRow:
    """One state an entry entered (its history is these rows in sequence order)."""

    sequence: int
    state: MemoryState
    cause: StateCause
    cause_entry: MemoryEntryId | None
    reason: str
    recorded_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryInvalidation:
    """What one invalidation did, in one transaction: the entry, the entries quarantined because they were derived
    from it (transitively), and the entries flagged ``needs-review`` because one of those influenced them."""

    entry_id: MemoryEntryId
    quarantined: tuple[MemoryEntryId, ...]
    flagged: tuple[MemoryEntryId, ...]


def _json(document: Mapping[str, object]) -> str:
    return json.dumps(dict(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _entry(row: Row, sources: Sequence[SourceFile], evidence: Sequence[EvidenceRef]) -> MemoryEntry:
    replaces = row[9]
    return MemoryEntry(
        entry_id=MemoryEntryId.parse(str(row[0])), kind=decode_choice(MemoryKind, row[1], kind="memory kind"),
        text=str(row[2]), body=json.loads(str(row[3])), root_commit=str(row[4]),
        toolchain=Toolchain.of(json.loads(str(row[5]))), toolchain_hash=str(row[6]), dependency_hash=str(row[7]),
        learned_at_commit=str(row[8]), replaces=None if replaces is None else MemoryEntryId.parse(str(replaces)),
        created_at_us=int(row[10]), state=decode_choice(MemoryState, row[11], kind="memory state"),
        state_cause=decode_choice(StateCause, row[12], kind="memory state cause"), state_reason=str(row[13]),
        state_since_us=int(row[14]), sources=tuple(sources), evidence=tuple(evidence))


def _decorate(view: ReadView, rows: Sequence[Row]) -> list[MemoryEntry]:
    """Entries of ``rows`` with their sources and evidence (two queries for the whole batch)."""
    if not rows:
        return []
    ids = [str(row[0]) for row in rows]
    marks = ",".join("?" * len(ids))
    sources: dict[str, list[SourceFile]] = {}  # (the IN lists below interpolate "?" marks only)
    for entry_id, path, blob in view.query_all(
            f"SELECT entry_id, path, blob_sha FROM memory_entry_sources WHERE entry_id IN ({marks})"  # noqa: S608
            " ORDER BY entry_id, path", ids):
        sources.setdefault(str(entry_id), []).append(SourceFile(path=str(path), blob_sha=str(blob)))
    evidence: dict[str, list[EvidenceRef]] = {}
    for entry_id, kind, ref in view.query_all(
            f"SELECT entry_id, evidence_kind, evidence_ref FROM memory_entry_evidence WHERE entry_id IN ({marks})"  # noqa: S608
            " ORDER BY entry_id, evidence_kind, evidence_ref", ids):
        evidence.setdefault(str(entry_id), []).append(
            EvidenceRef(kind=decode_choice(EvidenceKind, kind, kind="memory evidence kind"), ref=str(ref)))
    return [_entry(row, sources.get(str(row[0]), ()), evidence.get(str(row[0]), ())) for row in rows]


def memory_entry(view: ReadView, entry_id: MemoryEntryId) -> MemoryEntry:
    """The entry with its newest state; :class:`NotFoundError` when there is none."""
    row = view.query_one(f"{_SELECT} WHERE e.id = ?", (entry_id.value,))
    if row is None:
        raise NotFoundError(kind="memory entry", entity_id=entry_id.value)
    return _decorate(view, [row])[0]


def memory_entries_by_id(view: ReadView, entry_ids: Iterable[MemoryEntryId]) -> dict[MemoryEntryId, MemoryEntry]:
    """The entries that exist among ``entry_ids`` (unknown ids are left out)."""
    ids = sorted({entry_id.value for entry_id in entry_ids})
    found: list[MemoryEntry] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        found += _decorate(view, view.query_all(f"{_SELECT} WHERE e.id IN ({','.join('?' * len(chunk))})", chunk))
    return {entry.entry_id: entry for entry in found}


def list_memory_entries(view: ReadView, *, root_commit: str | None = None, kind: MemoryKind | None = None,
                        state: MemoryState | None = None, limit: int = 200) -> list[MemoryEntry]:
    """Entries, newest first, optionally of one repository, kind or current state; at most ``limit``."""
    where, params = ["1"], []
    if root_commit is not None:
        where.append("e.root_commit = ?")
        params.append(root_commit)
    if kind is not None:
        where.append("e.kind = ?")
        params.append(kind.value)
    if state is not None:
        where.append("st.state = ?")
        params.append(state.value)
    rows = view.query_all(f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY e.created_at_us DESC, e.id LIMIT ?",
                          (*params, max(1, min(limit, 10_000))))
    return _decorate(view, rows)


def memory_edges_of(view: ReadView, entry_id: MemoryEntryId) -> list[MemoryEdge]:
    """Every edge touching the entry: what it depends on and what depends on it."""
    rows = view.query_all(
        "SELECT dependent_id, source_id, kind FROM memory_edges WHERE dependent_id = ?1"
        " UNION SELECT dependent_id, source_id, kind FROM memory_edges WHERE source_id = ?1"
        " ORDER BY 1, 2", (entry_id.value,))
    return [MemoryEdge(dependent=MemoryEntryId.parse(str(r[0])), source=MemoryEntryId.parse(str(r[1])),
                       kind=decode_choice(MemoryEdgeKind, r[2], kind="memory edge kind")) for r in rows]


def memory_state_history(view: ReadView, entry_id: MemoryEntryId) -> list[MemoryStateRow]:
    """Every state the entry entered, oldest first."""
    rows = view.query_all("SELECT sequence, state, cause, cause_entry_id, reason, recorded_at_us"
                          " FROM memory_entry_states WHERE entry_id = ? ORDER BY sequence", (entry_id.value,))
    return [MemoryStateRow(sequence=int(r[0]), state=decode_choice(MemoryState, r[1], kind="memory state"),
                           cause=decode_choice(StateCause, r[2], kind="memory state cause"),
                           cause_entry=None if r[3] is None else MemoryEntryId.parse(str(r[3])),
                           reason=str(r[4]), recorded_at_us=int(r[5])) for r in rows]


def record_memory_entry(tx: Transaction, *, entry_id: MemoryEntryId, entry: NewMemoryEntry,
                        at_us: int) -> MemoryEntry:
    """Write the entry, its sources, evidence, provenance edges, first state (``active``) and text index row.

    Provenance must name existing entries; an entry cannot be derived from one that is quarantined (it would hold
    on nothing). Returns the entry as stored."""
    named = (*entry.derived_from, *entry.influenced_by, *(() if entry.replaces is None else (entry.replaces,)))
    known = memory_entries_by_id(tx, named)
    for source_id in named:
        if source_id not in known:
            raise NotFoundError(kind="memory entry", entity_id=source_id.value)
    for source_id in entry.derived_from:
        if known[source_id].state is MemoryState.QUARANTINED:
            raise InvalidValueError(kind="memory provenance",
                                    reason=f"{source_id.value} is quarantined; nothing can be derived from it")
    rows = tx.execute(
        "INSERT INTO memory_entries (id, kind, text, body_json, root_commit, toolchain_json, toolchain_hash,"
        " dependency_hash, learned_at_commit, replaces_id, created_at_us) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        " RETURNING rowid",
        (entry_id.value, entry.kind.value, entry.text, _json(entry.body), entry.root_commit,
         _json(entry.toolchain.as_dict()), entry.toolchain.digest, entry.dependency_hash, entry.learned_at_commit,
         None if entry.replaces is None else entry.replaces.value, at_us))
    tx.execute("INSERT INTO memory_entry_text (rowid, text) VALUES (?, ?)", (int(rows[0][0]), entry.text))
    tx.execute_many("INSERT INTO memory_entry_sources (entry_id, path, blob_sha) VALUES (?, ?, ?)",
                    [(entry_id.value, s.path, s.blob_sha) for s in entry.sources])
    tx.execute_many("INSERT OR IGNORE INTO memory_entry_evidence (entry_id, evidence_kind, evidence_ref)"
                    " VALUES (?, ?, ?)", [(entry_id.value, e.kind.value, e.ref) for e in entry.evidence])
    edges = [(s, MemoryEdgeKind.DERIVED_FROM) for s in entry.derived_from]
    edges += [(s, MemoryEdgeKind.INFLUENCED_BY) for s in entry.influenced_by]
    tx.execute_many("INSERT OR IGNORE INTO memory_edges (dependent_id, source_id, kind, created_at_us)"
                    " VALUES (?, ?, ?, ?)", [(entry_id.value, s.value, k.value, at_us) for s, k in edges])
    tx.execute("INSERT INTO memory_entry_states (entry_id, sequence, state, cause, cause_entry_id, reason,"
               " recorded_at_us) VALUES (?, 1, 'active', 'learned', NULL, 'learned', ?)", (entry_id.value, at_us))
    return memory_entry(tx, entry_id)


def quarantine_memory_entry(tx: Transaction, *, entry_id: MemoryEntryId, cause: StateCause, reason: str,
                            at_us: int) -> MemoryInvalidation:
    """Quarantine the entry (``cause``: a person, or its evidence changed), everything derived from it
    transitively, and flag ``needs-review`` each active entry any of them influenced — one state row each, all in
    the caller's transaction. An entry already quarantined refuses (:class:`TransitionNotAllowedError`)."""
    if cause not in {StateCause.PERSON, StateCause.EVIDENCE_CHANGED}:
        raise InvalidValueError(kind="memory state cause", reason="a person or changed evidence quarantines")
    why = parse_reason(reason)
    current = memory_entry(tx, entry_id)
    next_memory_state(current.state, MemoryState.QUARANTINED)
    tx.execute("INSERT INTO memory_entry_states (entry_id, sequence, state, cause, cause_entry_id, reason,"
               " recorded_at_us) VALUES (?1, ?2, 'quarantined', ?3, NULL, ?4, ?5)",
               (entry_id.value, _next_sequence(tx, entry_id), cause.value, why, at_us))
    written = tx.execute(_CASCADE_SQL, (
        entry_id.value, f"derived from {entry_id.value}, which was quarantined: {why}"[:1024],
        f"influenced by {entry_id.value} or an entry derived from it, quarantined: {why}"[:1024], at_us))
    by_state: dict[str, list[str]] = {MemoryState.QUARANTINED.value: [], MemoryState.NEEDS_REVIEW.value: []}
    for written_id, state in written:
        by_state[str(state)].append(str(written_id))
    quarantined, flagged = (sorted(by_state[s.value]) for s in (MemoryState.QUARANTINED, MemoryState.NEEDS_REVIEW))
    return MemoryInvalidation(entry_id=entry_id, quarantined=tuple(map(MemoryEntryId.parse, quarantined)),
                              flagged=tuple(map(MemoryEntryId.parse, flagged)))


def _next_sequence(view: ReadView, entry_id: MemoryEntryId) -> int:
    row = view.query_one("SELECT count(*) + 1 FROM memory_entry_states WHERE entry_id = ?", (entry_id.value,))
    return 1 if row is None else int(row[0])


def fts_query_of(text: str) -> str | None:
    """An FTS5 query matching any word of ``text``: each word (letters, digits, underscore) becomes one quoted
    string, so quotes, ``NEAR``, ``*``, ``-``, ``:`` or parentheses a person typed are never FTS syntax. None
    when ``text`` has no word."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:MAX_SEARCH_TERMS]
    if not words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


def search_memory_candidates(view: ReadView, text: str, *, root_commit: str | None = None,
                             kind: MemoryKind | None = None, limit: int = 20) -> list[MemoryEntry]:
    """Entries whose text matches any word of ``text`` (best match first), whatever their state: candidates
    only — whether one may be used is decided by the applicability check, never by this ranking."""
    query = fts_query_of(text)
    if query is None:
        return []
    where, params = ["memory_entry_text MATCH ?"], [query]
    if root_commit is not None:
        where.append("e.root_commit = ?")
        params.append(root_commit)
    if kind is not None:
        where.append("e.kind = ?")
        params.append(kind.value)
    # Rank and cut inside the text index first (joining only the entry row the filters need); the states are read
    # for the survivors alone.
    rows = view.query_all(
        "WITH hits(entry_rowid, score) AS (SELECT t.rowid, bm25(memory_entry_text) FROM memory_entry_text t"  # noqa: S608
        f" JOIN memory_entries e ON e.rowid = t.rowid WHERE {' AND '.join(where)}"
        " ORDER BY 2, e.id LIMIT ?)"
        f" {_SELECT} JOIN hits h ON h.entry_rowid = e.rowid ORDER BY h.score, e.id",
        (*params, max(1, min(limit, 200))))
    return _decorate(view, rows)


def confirm_memory_entry(tx: Transaction, *, entry_id: MemoryEntryId, reason: str, at_us: int) -> MemoryEntry:
    """A person reviewed an entry flagged ``needs-review`` and keeps it: it is active again (one state row, cause
    ``person``, the reason recorded). Any other state refuses (:class:`TransitionNotAllowedError`): an active entry
    needs no review, and a quarantined one never regains authority. Using it still passes the applicability check."""
    why = parse_reason(reason)
    next_memory_state(memory_entry(tx, entry_id).state, MemoryState.ACTIVE)
    tx.execute("INSERT INTO memory_entry_states (entry_id, sequence, state, cause, cause_entry_id, reason,"
               " recorded_at_us) VALUES (?1, ?2, 'active', ?3, NULL, ?4, ?5)",
               (entry_id.value, _next_sequence(tx, entry_id), StateCause.PERSON.value, why, at_us))
    return memory_entry(tx, entry_id)
