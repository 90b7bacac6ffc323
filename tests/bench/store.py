"""Benchmark: durable event append and online backup, each against a raw apsw baseline in the same run;
and the WAL check every store open does before opening (reading and validating a ``-wal`` file at
SQLite's autocheckpoint size, 1000 pages of 4 KiB — the largest a log normally grows).

Run with `cmd/codeflux-dev bench store`. Prints throughput, p50/p99 latency and the ratios; targets are
journal append >= 0.7x the bare insert+commit rate and backup >= 0.8x a bare `Connection.backup` loop.
Nothing is asserted on time: the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from codeflux.domain.events import AgentMessage
from codeflux.store.backup import write_snapshot
from codeflux.store.connection import open_connection
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.wal import read_wal

EVENTS = int(os.environ.get("CODEFLUX_BENCH_EVENTS", "2000"))
ROUNDS = 3
BACKUP_ROWS = 40_000
EVENT = AgentMessage(conversation_id=1, attempt=1, text="x" * 200, truncated=False, redacted=False)
PAYLOAD = EVENT.to_payload()


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _timed(count: int, step: Callable[[int], object]) -> list[float]:
    latencies = []
    for n in range(count):
        started = time.perf_counter()
        step(n)
        latencies.append(time.perf_counter() - started)
    return latencies


def bare_insert_latencies(folder: Path) -> list[float]:
    """The raw baseline: one apsw connection under the same pragmas, one INSERT + COMMIT per event."""
    conn = open_connection(folder / "bare.sqlite3", create=True)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS events (session_id TEXT NOT NULL, sequence INTEGER NOT NULL, kind TEXT NOT NULL,"
        " payload_json TEXT NOT NULL, created_at_us INTEGER NOT NULL, PRIMARY KEY (session_id, sequence))"
        " STRICT, WITHOUT ROWID"
    )
    offset = conn.execute("SELECT count(*) FROM events").fetchall()[0][0]
    body = json.dumps(PAYLOAD, sort_keys=True, separators=(",", ":"))

    def insert(n: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events VALUES ('ses_bench', ?, 'tool-started', ?, ?)",
                     (offset + n + 1, body, time.time_ns() // 1000))
        conn.execute("COMMIT")

    try:
        return _timed(EVENTS, insert)
    finally:
        conn.close()


def journal_append_latencies(db: Database) -> list[float]:
    """The product path: Database.write + append_event (counter bump, triggers, JSON check) per event."""

    def append(n: int) -> None:
        def work(tx: Transaction) -> None:
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=EVENT)

        db.write(work)

    return _timed(EVENTS, append)


def _fill_for_backup(path: Path) -> int:
    conn = open_connection(path, create=True)
    conn.execute("CREATE TABLE blob_rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO blob_rows (body) VALUES (?)", (("y" * 500,) for _ in range(BACKUP_ROWS)))
    conn.execute("COMMIT")
    conn.close()
    return path.stat().st_size


def bare_backup_seconds(source: Path, target: Path) -> float:
    src = open_connection(source)
    started = time.perf_counter()
    dest = apsw.Connection(str(target))
    with dest.backup("main", src, "main") as job:
        while not job.done:
            job.step(-1)
    dest.close()
    elapsed = time.perf_counter() - started
    src.close()
    return elapsed


def product_backup_seconds(source: Path, target: Path) -> float:
    src = open_connection(source)
    started = time.perf_counter()
    write_snapshot(src, target)
    elapsed = time.perf_counter() - started
    src.close()
    return elapsed


WAL_PAGES = 1000  # SQLite's default wal_autocheckpoint


def wal_check_seconds(folder: Path) -> tuple[float, int]:
    """Median time of :func:`read_wal` over a log of ``WAL_PAGES`` frames written by a live connection."""
    path = folder / "wal-source.sqlite3"
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE pages (body BLOB NOT NULL)")
        for _ in range(WAL_PAGES // 2):
            conn.execute("INSERT INTO pages VALUES (?)", (os.urandom(3000),))
        wal = Path(f"{path}-wal")
        samples = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            report = read_wal(wal)
            samples.append(time.perf_counter() - started)
        frames = 0 if report is None else report.total_frames
    finally:
        conn.close()
    return statistics.median(samples), frames


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as tmp:
        folder = Path(tmp)
        db = open_store(DataLocation(directory=folder / "data"), create=True, migrate=True)
        bare: list[float] = []
        journal: list[float] = []
        try:
            for _ in range(ROUNDS):  # interleaved so drift in the disk hits both sides alike
                bare += bare_insert_latencies(folder)
                journal += journal_append_latencies(db)
        finally:
            db.close()

        size = _fill_for_backup(folder / "backup-source.sqlite3")
        bare_b: list[float] = []
        product_b: list[float] = []
        for n in range(ROUNDS):
            bare_b.append(bare_backup_seconds(folder / "backup-source.sqlite3", folder / f"bare-{n}.sqlite3"))
            product_b.append(product_backup_seconds(folder / "backup-source.sqlite3", folder / f"snap-{n}.sqlite3"))
        wal_seconds, wal_frames = wal_check_seconds(folder)

    bare_rate = len(bare) / sum(bare)
    journal_rate = len(journal) / sum(journal)
    append_ratio = journal_rate / bare_rate
    mib = size / (1024 * 1024)
    bare_tp = mib / statistics.median(bare_b)
    product_tp = mib / statistics.median(product_b)
    backup_ratio = product_tp / bare_tp

    print(f"store benchmark: {EVENTS * ROUNDS} durable appends per side (synchronous=FULL, WAL), "
          f"backup of a {mib:.1f} MiB database x{ROUNDS}")
    print(f"  bare apsw insert+commit   {bare_rate:8.0f} /s   p50 {_percentile(bare, 0.5) * 1e3:6.3f} ms"
          f"   p99 {_percentile(bare, 0.99) * 1e3:6.3f} ms")
    print(f"  journal append_event      {journal_rate:8.0f} /s   p50 {_percentile(journal, 0.5) * 1e3:6.3f} ms"
          f"   p99 {_percentile(journal, 0.99) * 1e3:6.3f} ms")
    print(f"  append ratio (journal / bare)   {append_ratio:.2f}x   target >= 0.70x   "
          f"{'met' if append_ratio >= 0.7 else 'NOT met'}")
    print(f"  bare Connection.backup    {bare_tp:8.1f} MiB/s")
    print(f"  codeflux write_snapshot   {product_tp:8.1f} MiB/s")
    print(f"  backup ratio (codeflux / bare)  {backup_ratio:.2f}x   target >= 0.80x   "
          f"{'met' if backup_ratio >= 0.8 else 'NOT met'}")
    print(f"  WAL check before open     {wal_seconds * 1e3:8.1f} ms for {wal_frames} frames "
          f"({wal_seconds * 1e6 / max(wal_frames, 1):.0f} us a frame; paid only when a -wal file is left and no "
          "other process has the database open, i.e. after a crash)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
