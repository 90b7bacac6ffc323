"""Benchmark (part of `cmd/codeflux-dev bench memory`, issue 19): the execution graph of a 10k-event task against a
bare SELECT of the same events, in the same run. Target: the graph ≤ 3× the bare read.

The task's journal is written through the product path (``insert_task`` + ``append_event``,
``tests/fixtures/graph_runs.py``) and is shaped like a real run's: attempts, model calls, tool requests with their
decisions, executions with output chunks, checks while validating, stage verdicts, agent messages. The measured
product path is exactly what ``TaskService.GetTaskGraph`` does after it found the task:
:func:`~codeflux.coordinator.journal.read_session_graph_facts` (one query: each event narrowed in SQLite to the
payload fields the graph shows) then :func:`~codeflux.domain.execution_graph.project_graph`; the JSON rendering is
timed apart. The baseline is one ``SELECT sequence, kind, payload_json`` of the same rows on a read connection of
its own, fetched whole. Printed beside them, not in the ratio: the same SELECT with ``json.loads`` of every payload
(the floor of any reader that parses the payloads in Python), the narrow read alone, and the typed journal read
(``read_typed_journal``, pages of 1000 rows in one read transaction, every payload decoded into its event: what the
graph cost before it read narrow records).
Nothing is asserted on time: the figures go to docs/benchmarks.md.

``tests/bench/memory.py`` calls :func:`run_graph_projection_benchmark`; ``python tests/bench/_graph_projection.py``
runs this part alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.fixtures, when run as a script

from codeflux.coordinator.journal import read_session_graph_facts
from codeflux.domain.execution_graph import graph_json, project_graph
from codeflux.store.connection import open_connection
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.graph_runs import LONG_TASK_ID, read_typed_journal, write_long_task

__all__ = ["run_graph_projection_benchmark"]

EVENTS = int(os.environ.get("CODEFLUX_BENCH_GRAPH_EVENTS", "10000"))
ROUNDS = 9
_BARE = "SELECT sequence, kind, payload_json FROM events WHERE session_id = ? ORDER BY sequence"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run_graph_projection_benchmark(folder: Path | None = None) -> dict[str, float]:
    """Build the task, time every side interleaved ``ROUNDS`` times; print and return the figures (medians)."""
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-graph-") as temp:
        root = folder or Path(temp)
        location = DataLocation(directory=root / "data")
        db = open_store(location, create=True, migrate=True)
        task_id = LONG_TASK_ID.value
        samples: dict[str, list[float]] = {name: [] for name in ("bare", "parsed", "facts", "graph", "typed", "json")}
        try:
            session = write_long_task(db, root, EVENTS)
            bare = open_connection(location.database)
            try:
                for _ in range(ROUNDS):
                    started = time.perf_counter()
                    rows = len(bare.execute(_BARE, (session,)).fetchall())
                    samples["bare"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    for row in bare.execute(_BARE, (session,)):
                        json.loads(row[2])
                    samples["parsed"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    read_session_graph_facts(db, session, LONG_TASK_ID)
                    samples["facts"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    graph = project_graph(task_id, read_session_graph_facts(db, session, LONG_TASK_ID)[0])
                    samples["graph"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    read_typed_journal(db, session)
                    samples["typed"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    graph_json(graph)
                    samples["json"].append(time.perf_counter() - started)
            finally:
                bare.close()
        finally:
            db.close()
    figures = {"events": float(rows), "nodes": float(len(graph.nodes)), "edges": float(len(graph.edges)),
               "bare_select_ms": _median_ms(samples["bare"]), "select_and_parse_ms": _median_ms(samples["parsed"]),
               "narrow_read_ms": _median_ms(samples["facts"]), "graph_ms": _median_ms(samples["graph"]),
               "typed_read_ms": _median_ms(samples["typed"]), "json_ms": _median_ms(samples["json"])}
    figures["ratio"] = figures["graph_ms"] / figures["bare_select_ms"]
    print(f"graph projection: a task of {rows} events → {len(graph.nodes)} nodes, {len(graph.edges)} edges; median "
          f"of {ROUNDS} rounds, interleaved")
    print(f"  bare SELECT of the events          {figures['bare_select_ms']:8.1f} ms")
    print(f"  SELECT + json.loads of each        {figures['select_and_parse_ms']:8.1f} ms   (the floor of a reader "
          "that parses the payloads in Python; not the baseline)")
    print(f"  narrow read (the graph's query)    {figures['narrow_read_ms']:8.1f} ms   (SQLite extracts the fields "
          "the graph shows)")
    print(f"  narrow read + project (the graph)  {figures['graph_ms']:8.1f} ms   ratio {figures['ratio']:.2f}x "
          "(target <= 3x)")
    print(f"  typed journal read (not used)      {figures['typed_read_ms']:8.1f} ms   (every payload decoded: what "
          "the graph paid before, the timeline's replay still does)")
    print(f"  JSON rendering of the graph        {figures['json_ms']:8.1f} ms   (not in the ratio)")
    return figures


if __name__ == "__main__":
    run_graph_projection_benchmark()
