"""Benchmark: memory's applicability lookup at 100k entries, and the invalidation cascade over 10k derived entries
against a bare recursive CTE over the same edges, in the same run.

Run with `cmd/codeflux-dev bench memory`. The database is a real migrated codeflux file (WAL, synchronous=FULL)
filled through the product path (:func:`record_memory_entry`, in batches). The facts of the checkout are read once
from a real git repository (:func:`current_facts`), as a recall does once per batch of candidates.

* **lookup**: one entry by id (its newest state, sources and evidence) + :func:`judge_applicability`; and a recall
  batch: FTS5 candidates for two words (20) + their verdicts. p50/p99 over random entries.
* **cascade**: :func:`quarantine_memory_entry` of a root with 10k entries derived from it (a random tree), in one
  transaction, against a bare ``WITH RECURSIVE`` walk of the same edges (the store's own
  ``DERIVED_CLOSURE_SQL``, counting the closure), and against the same walk inserting the same number of state rows
  into a plain table and committing (a raw apsw connection, same pragmas) — once with no index, once in index order
  into a table with the state table's ``UNIQUE (entry_id, sequence)`` index over as many rows, so the index's share
  is measured in the same run. Target: cascade <= 2x the bare walk; both ratios are printed (a read-only walk cannot
  be matched by durable writes; see docs/benchmarks.md).

* **graph**: the execution graph of a 10k-event task against a bare SELECT of the same events, in a module of its
  own (``_graph_projection.py``; target <= 3x), run after the memory parts.

Nothing is asserted on time: the figures go to docs/benchmarks.md. ``CODEFLUX_BENCH_MEMORY_ENTRIES`` and
``CODEFLUX_BENCH_MEMORY_DERIVED`` change the sizes.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _graph_projection import run_graph_projection_benchmark

from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import (
    CurrentFacts,
    MemoryKind,
    NewMemoryEntry,
    SourceFile,
    StateCause,
    Toolchain,
    judge_applicability,
)
from codeflux.memory.checkout import current_facts, dependency_hash_of, head_commit_of, root_commit_of
from codeflux.store.connection import open_connection
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from codeflux.store.memory import (
    DERIVED_CLOSURE_SQL,
    memory_entry,
    quarantine_memory_entry,
    record_memory_entry,
    search_memory_candidates,
)
from codeflux.store.opening import open_store

ENTRIES = int(os.environ.get("CODEFLUX_BENCH_MEMORY_ENTRIES", "100000"))
DERIVED = int(os.environ.get("CODEFLUX_BENCH_MEMORY_DERIVED", "10000"))
LOOKUPS = 2000
RECALLS = 300
ROUNDS = 3
BATCH = 5000
TOOLS = Toolchain.of({"python": "3.11.7", "pytest": "8.3.1"})
WORDS = ["pytest", "layout", "command", "convention", "coverage", "atom", "module", "fixture", "entry", "lint"]


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _git(repo: Path, *args: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-C", str(repo), *args], env=env, check=True,
                   capture_output=True)


def _repository(folder: Path) -> Path:
    repo = folder / "repo"
    (repo / "pkg").mkdir(parents=True)
    for n in range(50):
        (repo / "pkg" / f"m{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "bench"\ndependencies = ["attrs>=22"]\n')
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "bench")
    return repo


def _new(rng: random.Random, repo_facts: tuple[str, str, str], blobs: dict[str, str | None], n: int, *,
         derived_from: tuple[MemoryEntryId, ...] = ()) -> NewMemoryEntry:
    root, head, dependencies = repo_facts
    paths = rng.sample(sorted(blobs), 2)
    return NewMemoryEntry(
        kind=MemoryKind.REPOSITORY_FACT, text=f"{rng.choice(WORDS)} {rng.choice(WORDS)} fact number {n}",
        body={"n": n}, root_commit=root, toolchain=TOOLS, dependency_hash=dependencies, learned_at_commit=head,
        sources=tuple(SourceFile(path=p, blob_sha=str(blobs[p])) for p in paths), derived_from=derived_from)


def _fill(db: Database, rng: random.Random, repo_facts: tuple[str, str, str], blobs: dict[str, str | None],
          count: int) -> list[MemoryEntryId]:
    ids = [MemoryEntryId.from_entropy(rng.randbytes(16)) for _ in range(count)]
    for start in range(0, count, BATCH):
        def work(tx: Transaction, start: int = start) -> None:
            for n in range(start, min(start + BATCH, count)):
                record_memory_entry(tx, entry_id=ids[n], entry=_new(rng, repo_facts, blobs, n), at_us=n)
        db.write(work)
    return ids


def _tree(db: Database, rng: random.Random, repo_facts: tuple[str, str, str], blobs: dict[str, str | None],
          size: int) -> MemoryEntryId:
    """A root and ``size`` entries derived from it: each from a random earlier member of the tree."""
    ids = [MemoryEntryId.from_entropy(rng.randbytes(16)) for _ in range(size + 1)]

    def work(tx: Transaction) -> None:
        record_memory_entry(tx, entry_id=ids[0], entry=_new(rng, repo_facts, blobs, 0), at_us=1)
        for n in range(1, size + 1):
            parent = ids[rng.randrange(max(0, n - 50), n)]  # shallow and deep branches alike
            record_memory_entry(tx, entry_id=ids[n], entry=_new(rng, repo_facts, blobs, n, derived_from=(parent,)),
                                at_us=n)

    db.write(work)
    return ids[0]


def _lookups(db: Database, rng: random.Random, ids: list[MemoryEntryId], facts: CurrentFacts) -> list[float]:
    samples = []
    for _ in range(LOOKUPS):
        entry_id = rng.choice(ids)
        started = time.perf_counter()
        entry = db.read(lambda view, entry_id=entry_id: memory_entry(view, entry_id))
        verdict = judge_applicability(entry, facts)
        samples.append(time.perf_counter() - started)
        if not verdict.applicable:
            raise SystemExit(f"benchmark set-up is wrong: {verdict.detail}")
    return samples


def _recalls(db: Database, rng: random.Random, root_commit: str, facts: CurrentFacts) -> list[float]:
    samples = []
    for _ in range(RECALLS):
        query = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
        started = time.perf_counter()
        candidates = db.read(lambda view, q=query: search_memory_candidates(view, q, root_commit=root_commit))
        usable = [c for c in candidates if judge_applicability(c, facts).applicable]
        samples.append(time.perf_counter() - started)
        if not usable:
            raise SystemExit("benchmark set-up is wrong: no usable candidate")
    return samples


def _bare_walk(db: Database, root: MemoryEntryId) -> tuple[float, int]:
    sql = f"{DERIVED_CLOSURE_SQL} SELECT count(*) FROM closure"  # noqa: S608 (a constant)
    started = time.perf_counter()
    count = db.read(lambda view: int(view.query_all(sql, (root.value,))[0][0]))
    return time.perf_counter() - started, count


def _bare_walk_and_insert(path: Path, root: MemoryEntryId, *, indexed: bool) -> tuple[float, int]:
    """The same walk writing one state row per entry it reaches into a plain table (no trigger, no foreign key, no
    flags; ``indexed``: with the state table's ``UNIQUE (entry_id, sequence)`` index, else none), committed: the
    durable work of a cascade with nothing of the product around it."""
    table = "bare_states_indexed" if indexed else "bare_states"
    conn = open_connection(path)
    try:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (entry_id TEXT NOT NULL, sequence INTEGER NOT NULL,"
                     " state TEXT NOT NULL, cause TEXT NOT NULL, cause_entry_id TEXT, reason TEXT NOT NULL,"
                     f" recorded_at_us INTEGER NOT NULL{', UNIQUE (entry_id, sequence)' if indexed else ''}) STRICT")
        if indexed:  # as many index entries as the state table has, so the new ones land among as many others
            conn.execute("INSERT OR IGNORE INTO bare_states_indexed SELECT entry_id, -sequence, state, cause,"
                         " cause_entry_id, reason, recorded_at_us FROM memory_entry_states")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"{DERIVED_CLOSURE_SQL} INSERT INTO {table} SELECT id, 2, 'quarantined',"  # noqa: S608
                     f" 'derived-from-quarantined', ?1, 'benchmark', 1 FROM closure{' ORDER BY id' if indexed else ''}",
                     (root.value,))
        written = conn.changes()
        conn.execute("COMMIT")
        return time.perf_counter() - started, written
    finally:
        conn.close()


def _cascade(db: Database, root: MemoryEntryId) -> tuple[float, int]:
    started = time.perf_counter()
    done = db.write(lambda tx: quarantine_memory_entry(tx, entry_id=root, cause=StateCause.PERSON,
                                                       reason="benchmark", at_us=10**15))
    return time.perf_counter() - started, len(done.quarantined)


def main() -> int:
    rng = random.Random(20261203)
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-memory-") as tmp:
        folder = Path(tmp)
        repo = _repository(folder)
        paths = [f"pkg/m{n}.py" for n in range(50)]
        facts = current_facts(repo, paths, toolchain=TOOLS)
        repo_facts = (root_commit_of(repo), head_commit_of(repo), dependency_hash_of(repo))
        db = open_store(DataLocation(directory=folder / "data"), create=True, migrate=True)
        try:
            started = time.perf_counter()
            ids = _fill(db, rng, repo_facts, dict(facts.blobs), ENTRIES)
            fill_s = time.perf_counter() - started
            lookups = _lookups(db, rng, ids, facts)
            recalls = _recalls(db, rng, repo_facts[0], facts)
            bare: list[float] = []
            bare_write: list[float] = []
            bare_indexed: list[float] = []
            product: list[float] = []
            for _ in range(ROUNDS):  # a fresh tree each round (quarantine is final)
                root = _tree(db, rng, repo_facts, dict(facts.blobs), DERIVED)
                db.checkpoint_wal()  # neither side pays for checkpointing the tree's pages
                walk_s, walked = _bare_walk(db, root)
                write_s, written = _bare_walk_and_insert(folder / "data" / "codeflux.sqlite3", root, indexed=False)
                db.checkpoint_wal()
                indexed_s, indexed = _bare_walk_and_insert(folder / "data" / "codeflux.sqlite3", root, indexed=True)
                db.checkpoint_wal()
                cascade_s, quarantined = _cascade(db, root)
                if not walked == written == indexed == quarantined == DERIVED:
                    raise SystemExit(f"benchmark set-up is wrong: walked {walked}, quarantined {quarantined}")
                bare.append(walk_s)
                bare_write.append(write_s)
                bare_indexed.append(indexed_s)
                product.append(cascade_s)
        finally:
            db.close()
    ratio = statistics.median(product) / statistics.median(bare)
    write_ratio = statistics.median(product) / statistics.median(bare_write)
    print(f"memory benchmark: {ENTRIES} entries (filled through record_memory_entry in {fill_s:.1f} s), "
          f"cascade over {DERIVED} derived entries x{ROUNDS}")
    print(f"  lookup by id + verdict    p50 {_percentile(lookups, 0.5) * 1e3:6.3f} ms   "
          f"p99 {_percentile(lookups, 0.99) * 1e3:6.3f} ms   ({LOOKUPS} lookups)")
    print(f"  recall (FTS5 20 + verdicts) p50 {_percentile(recalls, 0.5) * 1e3:6.3f} ms   "
          f"p99 {_percentile(recalls, 0.99) * 1e3:6.3f} ms   ({RECALLS} queries)")
    print(f"  bare recursive CTE walk   median {statistics.median(bare) * 1e3:8.1f} ms")
    print(f"  quarantine cascade        median {statistics.median(product) * 1e3:8.1f} ms   (one transaction: "
          f"{DERIVED + 1} state rows through their trigger, flags, commit)")
    print(f"  bare walk + INSERT, commit median {statistics.median(bare_write) * 1e3:8.1f} ms   (the same rows into a "
          "plain table: no trigger, no index, no flags)")
    print(f"  ... into an indexed table  median {statistics.median(bare_indexed) * 1e3:8.1f} ms   (the same in index "
          "order, with the state table's UNIQUE (entry_id, sequence) index over as many rows)")
    print(f"  cascade ratio (product / bare walk)           {ratio:.2f}x   target <= 2.00x   "
          f"{'met' if ratio <= 2.0 else 'NOT met'}")
    print(f"  cascade ratio (product / bare walk + insert)  {write_ratio:.2f}x   target <= 2.00x   "
          f"{'met' if write_ratio <= 2.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    status = main()
    run_graph_projection_benchmark()
    sys.exit(status)
