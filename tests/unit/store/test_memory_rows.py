"""Memory rows in a real migrated SQLite file: an entry is written with its first state and text row in one
transaction; the cascade quarantines a derived chain and flags influenced entries in one transaction; states are
immutable facts; FTS queries built from hostile text are safe."""

from __future__ import annotations

import os

import apsw
import pytest

from codeflux.domain.errors import InvalidValueError, StoreError, TransitionNotAllowedError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import MemoryKind, MemoryState, NewMemoryEntry, SourceFile, StateCause, Toolchain
from codeflux.store.database import Database
from codeflux.store.memory import (
    fts_query_of,
    memory_entry,
    memory_state_history,
    quarantine_memory_entry,
    record_memory_entry,
    search_memory_candidates,
)

TOOLS = Toolchain.of({"python": "3.11.2"})


def _record(db: Database, text: str, *, derived_from: tuple[MemoryEntryId, ...] = (),
            influenced_by: tuple[MemoryEntryId, ...] = (), root: str = "a" * 40) -> MemoryEntryId:
    entry_id = MemoryEntryId.from_entropy(os.urandom(16))
    new = NewMemoryEntry(kind=MemoryKind.REPOSITORY_FACT, text=text, body={"fact": text}, root_commit=root,
                         toolchain=TOOLS, dependency_hash="d" * 64, learned_at_commit="c" * 40,
                         sources=(SourceFile(path="pyproject.toml", blob_sha="1" * 40),),
                         derived_from=derived_from, influenced_by=influenced_by)
    db.write(lambda tx: record_memory_entry(tx, entry_id=entry_id, entry=new, at_us=1))
    return entry_id


def _state(db: Database, entry_id: MemoryEntryId) -> MemoryState:
    return db.read(lambda view: memory_entry(view, entry_id)).state


def test_invalidating_a_root_quarantines_its_derived_chain_and_flags_what_it_influenced_in_one_transaction(
    db: Database,
) -> None:
    root = _record(db, "test command: pytest -q")
    child = _record(db, "child", derived_from=(root,))
    grandchild = _record(db, "grandchild", derived_from=(child,))
    great = _record(db, "great-grandchild", derived_from=(grandchild,))
    influenced = _record(db, "influenced by the grandchild", influenced_by=(grandchild,))
    unrelated = _record(db, "unrelated")
    assert {_state(db, e) for e in (root, child, grandchild, great, influenced, unrelated)} == {MemoryState.ACTIVE}

    done = db.write(lambda tx: quarantine_memory_entry(tx, entry_id=root, cause=StateCause.PERSON,
                                                       reason="the test command changed", at_us=2))

    assert set(done.quarantined) == {child, grandchild, great} and done.flagged == (influenced,)
    assert [_state(db, e) for e in (root, child, grandchild, great)] == [MemoryState.QUARANTINED] * 4
    assert _state(db, influenced) is MemoryState.NEEDS_REVIEW and _state(db, unrelated) is MemoryState.ACTIVE
    history = db.read(lambda view: memory_state_history(view, great))
    assert [(h.state, h.cause, h.cause_entry) for h in history] == [
        (MemoryState.ACTIVE, StateCause.LEARNED, None),
        (MemoryState.QUARANTINED, StateCause.DERIVED_FROM_QUARANTINED, root)]
    assert "the test command changed" in history[-1].reason


def test_a_quarantined_entry_can_never_be_made_active_again_only_replaced(db: Database) -> None:
    entry = _record(db, "fact")
    db.write(lambda tx: quarantine_memory_entry(tx, entry_id=entry, cause=StateCause.PERSON, reason="wrong", at_us=2))

    with pytest.raises(TransitionNotAllowedError):
        db.write(lambda tx: quarantine_memory_entry(tx, entry_id=entry, cause=StateCause.PERSON, reason="again",
                                                    at_us=3))
    with pytest.raises(StoreError) as final:  # the schema refuses it as well
        db.write(lambda tx: tx.execute(
            "INSERT INTO memory_entry_states (entry_id, sequence, state, cause, reason, recorded_at_us)"
            " VALUES (?, 3, 'active', 'person', 'revalidate', 4)", (entry.value,)))
    assert isinstance(final.value.__cause__, apsw.ConstraintError) and "final" in str(final.value.__cause__)
    with pytest.raises(StoreError) as immutable:
        db.write(lambda tx: tx.execute("UPDATE memory_entry_states SET state = 'active' WHERE entry_id = ?",
                                       (entry.value,)))
    assert "immutable" in str(immutable.value.__cause__)
    with pytest.raises(InvalidValueError, match="quarantined"):
        _record(db, "derived from a quarantined entry", derived_from=(entry,))
    assert _state(db, entry) is MemoryState.QUARANTINED

    replacement = MemoryEntryId.from_entropy(os.urandom(16))  # only a new entry takes its place
    new = NewMemoryEntry(kind=MemoryKind.REPOSITORY_FACT, text="fact, learned again", body={}, root_commit="a" * 40,
                         toolchain=TOOLS, dependency_hash="d" * 64, learned_at_commit="c" * 40, replaces=entry)
    stored = db.write(lambda tx: record_memory_entry(tx, entry_id=replacement, entry=new, at_us=5))
    assert (stored.state, stored.replaces) == (MemoryState.ACTIVE, entry)
    assert _state(db, entry) is MemoryState.QUARANTINED


@pytest.mark.parametrize("hostile", ['"', 'pytest" OR "x', "NEAR(pytest command, 2)", "py*", "-pytest", "text:x",
                                     "(", "AND", "^pytest", "'; DROP TABLE memory_entries; --", "{text}: pytest"])
def test_search_text_is_never_fts_syntax(db: Database, hostile: str) -> None:
    wanted = _record(db, "test command: pytest -q")
    results = db.read(lambda view: search_memory_candidates(view, hostile))
    assert all(entry.entry_id == wanted for entry in results)
    query = fts_query_of(hostile)
    assert query is None or all(part.startswith('"') and part.endswith('"') for part in query.split(" OR "))


def test_search_proposes_matching_entries_of_the_repository_asked_for(db: Database) -> None:
    here = _record(db, "test command: pytest -q")
    _record(db, "test command: pytest -q", root="b" * 40)
    _record(db, "package layout: src")
    found = db.read(lambda view: search_memory_candidates(view, "which PYTEST command?", root_commit="a" * 40))
    assert [entry.entry_id for entry in found] == [here]
    assert db.read(lambda view: search_memory_candidates(view, "  --  ")) == []
