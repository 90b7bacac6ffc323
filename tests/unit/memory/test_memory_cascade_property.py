"""For any provenance graph: invalidating an entry quarantines exactly it and every entry that reaches it through
``derived-from`` edges, and flags ``needs-review`` exactly the other entries that were influenced by one of those —
nothing else changes state (a real migrated SQLite file)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import MemoryKind, MemoryState, NewMemoryEntry, StateCause, Toolchain
from codeflux.store.database import Database, Transaction
from codeflux.store.memory import memory_entries_by_id, quarantine_memory_entry, record_memory_entry

TOOLS = Toolchain.of({"python": "3.11"})

# Entry i may point at entries j < i (provenance names earlier entries): (dependent, source, derived?)
graphs = st.integers(min_value=1, max_value=14).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.booleans()), max_size=3 * n),
    st.integers(0, n - 1)))


def _expected(n: int, edges: dict[tuple[int, int], bool], root: int) -> tuple[set[int], set[int]]:
    quarantined, frontier = {root}, [root]
    while frontier:
        source = frontier.pop()
        for (dependent, src), derived in edges.items():
            if src == source and derived and dependent not in quarantined:
                quarantined.add(dependent)
                frontier.append(dependent)
    flagged = {d for (d, s), derived in edges.items() if not derived and s in quarantined} - quarantined
    return quarantined, flagged


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(graph=graphs)
def test_everything_reachable_by_derived_from_is_quarantined_and_nothing_else(
    db: Database, graph: tuple[int, list[tuple[int, int, bool]], int],
) -> None:
    """One database for every example: each example's entries are new ids, and edges never leave an example."""
    n, raw_edges, root = graph
    edges: dict[tuple[int, int], bool] = {}
    for a, b, derived in raw_edges:
        if a != b:
            edges.setdefault((max(a, b), min(a, b)), derived)  # one kind per pair, pointing at the earlier entry
    ids = [MemoryEntryId.from_entropy(os.urandom(16)) for _ in range(n)]

    def record_all(tx: Transaction) -> None:
        for i in range(n):
            new = NewMemoryEntry(
                kind=MemoryKind.CONVENTION, text=f"entry {i}", body={}, root_commit="a" * 40, toolchain=TOOLS,
                dependency_hash="d" * 64, learned_at_commit="c" * 40,
                derived_from=tuple(ids[s] for (d, s), k in edges.items() if d == i and k),
                influenced_by=tuple(ids[s] for (d, s), k in edges.items() if d == i and not k))
            record_memory_entry(tx, entry_id=ids[i], entry=new, at_us=i)

    db.write(record_all)
    done = db.write(lambda tx: quarantine_memory_entry(tx, entry_id=ids[root], cause=StateCause.PERSON,
                                                       reason="property", at_us=n + 1))
    states = db.read(lambda view: memory_entries_by_id(view, ids))
    quarantined, flagged = _expected(n, edges, root)
    assert {i for i in range(n) if states[ids[i]].state is MemoryState.QUARANTINED} == quarantined
    assert {i for i in range(n) if states[ids[i]].state is MemoryState.NEEDS_REVIEW} == flagged
    assert {ids.index(e) for e in done.quarantined} == quarantined - {root}
    assert {ids.index(e) for e in done.flagged} == flagged
