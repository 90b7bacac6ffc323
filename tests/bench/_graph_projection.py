"""Benchmark (part of `cmd/codeflux-dev bench memory`, issue 19): the execution graph of a 10k-event task against a
bare SELECT of the same events, in the same run. Target: the graph ≤ 3× the bare read.

The task's journal is written through the product path (``insert_task`` + ``append_event``) and is shaped like a
real run's: attempts, model calls, tool requests with their decisions, executions with output chunks, checks while
validating, stage verdicts, agent messages. The measured product path is exactly what ``TaskService.GetTaskGraph``
does after it found the task: :func:`~codeflux.coordinator.journal.read_whole_session` (one read transaction, pages
of 1000, every payload decoded through the registry) then
:func:`~codeflux.domain.execution_graph.project_graph`; the JSON rendering is timed apart. The baseline is one
``SELECT sequence, kind, payload_json`` of the same rows on a read connection of its own, fetched whole; the same
SELECT with ``json.loads`` of every payload is printed too (not the target's baseline: the floor any reader of the
payloads pays), and the journal read alone (``read_whole_session``: the typed events, before the projection).
Nothing is asserted on time: the figures go to docs/benchmarks.md.

``tests/bench/memory.py`` calls :func:`run_graph_projection_benchmark`; ``python tests/bench/_graph_projection.py``
runs this part alone.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from codeflux.coordinator.journal import read_whole_session
from codeflux.domain.events import (
    AgentMessage,
    AuthorityDecided,
    EventPayload,
    ModelCallFinished,
    ModelCallPlanned,
    ModelCallStarted,
    PlanApproved,
    PlanRevisionRecorded,
    RunAttemptEnded,
    RunAttemptOpened,
    SettlementMove,
    StageVerdictsRecorded,
    TaskStateChanged,
    ToolExecutionFinished,
    ToolExecutionIntended,
    ToolOutput,
    ToolRequested,
)
from codeflux.domain.execution_graph import graph_json, project_graph
from codeflux.domain.ids import ApprovalId, DecisionId, RunId, TaskId, ToolRequestId
from codeflux.domain.pipeline.outcomes import StageOutcome
from codeflux.domain.tasks import TaskState
from codeflux.store.connection import open_connection
from codeflux.store.database import Transaction
from codeflux.store.events import append_event
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.tasks import insert_task

__all__ = ["run_graph_projection_benchmark"]

EVENTS = int(os.environ.get("CODEFLUX_BENCH_GRAPH_EVENTS", "10000"))
ROUNDS = 7
_BATCH = 500


def _hex(prefix: str, n: int) -> str:
    return f"{prefix}_{n:032x}"


def _turn(n: int, attempt: int, *, validating: bool) -> list[EventPayload]:
    """One loop turn: a model call, what the agent said, a command it asked for, decided, run, with output."""
    call, request, execution = _hex("mreq", n), ToolRequestId.parse(_hex("treq", n)), _hex("exe", n)
    approval = ApprovalId.parse(_hex("apr", n))
    turn: list[EventPayload] = []
    if not validating:
        turn += [ModelCallPlanned(request_id=call, provider="scripted", model="m", rung="cheap:low", reserved="$0.01",
                                  reserved_minor=1, currency="USD", price_snapshot_id=1),
                 ModelCallStarted(request_id=call),
                 ModelCallFinished(request_id=call, state="succeeded", cost="$0.01",
                                   ledger=(SettlementMove(kind="settle", amount_minor=1),), spent="$0.10",
                                   remaining="$9.90"),
                 AgentMessage(conversation_id=1, attempt=attempt, text=f"turn {n}: running the tests " + "x" * 120,
                              truncated=False, redacted=False)]
    turn += [ToolRequested(request_id=request, tool="run_command", operation=_hex("op", n), needs=("process",),
                           decision_id=DecisionId.parse(_hex("dec", n)), outcome="pending"),
             AuthorityDecided(request_id=request, decision_id=DecisionId.parse(_hex("dec", n + 10**9)),
                              outcome="allowed-once", decided_by="user", approval_id=approval),
             ToolExecutionIntended(request_id=request, execution_id=execution, operation=_hex("op", n),
                                   consumed_approval_id=approval),
             ToolOutput(request_id=request, execution_id=execution, stream="stdout", text="." * 400, offset=0),
             ToolOutput(request_id=request, execution_id=execution, stream="stdout", text="3 passed\n", offset=400),
             ToolExecutionFinished(request_id=request, execution_id=execution, state="succeeded", failure_kind=None,
                                   exit_code=0)]
    return turn


def task_events(task_id: TaskId, count: int) -> list[EventPayload]:
    """About ``count`` events of a long task (after its ``task-created``), attempts of 40 turns each."""
    s = TaskState
    events: list[EventPayload] = [
        TaskStateChanged(task_id=task_id, from_state=s.DRAFT, to_state=s.FORECASTING, revision=1),
        PlanRevisionRecorded(task_id=task_id, revision=1, sha256="a" * 64, created_by="scripted"),
        PlanApproved(task_id=task_id, revision=1, sha256="a" * 64, by="user")]
    attempt, n = 0, 0
    while len(events) < count:
        attempt += 1
        events += [TaskStateChanged(task_id=task_id, from_state=s.READY, to_state=s.RUNNING, revision=attempt * 3),
                   RunAttemptOpened(task_id=task_id, attempt=attempt, run_id=RunId.parse(_hex("run", attempt)),
                                    plan_revision=1, plan_sha256="a" * 64)]
        for _ in range(30):
            n += 1
            events += _turn(n, attempt, validating=False)
        events.append(TaskStateChanged(task_id=task_id, from_state=s.RUNNING, to_state=s.VALIDATING,
                                       revision=attempt * 3 + 1))
        for stage in range(10):
            n += 1
            events += _turn(n, attempt, validating=True)
            events.append(StageVerdictsRecorded(task_id=task_id, attempt=attempt,
                                                stages=((f"stage-{stage}", StageOutcome.SATISFIED),)))
        events.append(RunAttemptEnded(task_id=task_id, attempt=attempt, stopped_at="human-acceptance",
                                      outcomes={StageOutcome.SATISFIED: 37}))
    return events[:count]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run_graph_projection_benchmark(folder: Path | None = None) -> dict[str, float]:
    """Build the task, time both sides interleaved ``ROUNDS`` times; print and return the figures."""
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-graph-") as temp:
        root = folder or Path(temp)
        location = DataLocation(directory=root / "data")
        db = open_store(location, create=True, migrate=True)
        task_id = TaskId.parse(_hex("tsk", 1))
        try:
            session = db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=root / "repo",
                                                      worktree=root / "wt", state=TaskState.DRAFT)).session_id
            events = task_events(task_id, EVENTS - 1)
            for start in range(0, len(events), _BATCH):
                def append(tx: Transaction, chunk: list[EventPayload] = events[start:start + _BATCH]) -> None:
                    for event in chunk:
                        append_event(tx, session_id=session, event=event)

                db.write(append)
            bare = open_connection(location.database)
            bare_s, parsed_s, decoded_s, graph_s, render_s = [], [], [], [], []
            nodes = edges = rows = 0
            try:
                for _ in range(ROUNDS):
                    started = time.perf_counter()
                    fetched = bare.execute("SELECT sequence, kind, payload_json FROM events WHERE session_id = ?"
                                           " ORDER BY sequence", (session,)).fetchall()
                    bare_s.append(time.perf_counter() - started)
                    rows = len(fetched)
                    started = time.perf_counter()
                    for row in bare.execute("SELECT sequence, kind, payload_json FROM events WHERE session_id = ?"
                                            " ORDER BY sequence", (session,)):
                        json.loads(row[2])
                    parsed_s.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    read_whole_session(db, session)
                    decoded_s.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    journal = read_whole_session(db, session)
                    graph = project_graph(task_id.value, ((e.sequence, e.event) for e in journal))
                    graph_s.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    graph_json(graph)
                    render_s.append(time.perf_counter() - started)
                    nodes, edges = len(graph.nodes), len(graph.edges)
            finally:
                bare.close()
        finally:
            db.close()
    figures = {"events": float(rows), "nodes": float(nodes), "edges": float(edges),
               "bare_select_ms": _median_ms(bare_s), "select_and_parse_ms": _median_ms(parsed_s),
               "read_and_decode_ms": _median_ms(decoded_s), "graph_ms": _median_ms(graph_s),
               "json_ms": _median_ms(render_s)}
    figures["ratio"] = figures["graph_ms"] / figures["bare_select_ms"]
    print(f"graph projection: a task of {rows} events → {nodes} nodes, {edges} edges; median of {ROUNDS} rounds, "
          "interleaved")
    print(f"  bare SELECT of the events       {figures['bare_select_ms']:8.1f} ms")
    print(f"  SELECT + json.loads of each     {figures['select_and_parse_ms']:8.1f} ms   (the floor of any reader of "
          "the payloads; not the target's baseline)")
    print(f"  read + decode (the journal read) {figures['read_and_decode_ms']:7.1f} ms   (what every reader of the "
          "typed events pays: the timeline's replay too)")
    print(f"  read + decode + project (graph) {figures['graph_ms']:8.1f} ms   ratio {figures['ratio']:.2f}x "
          "(target <= 3x)")
    print(f"  JSON rendering of the graph     {figures['json_ms']:8.1f} ms (not in the ratio)")
    return figures


if __name__ == "__main__":
    run_graph_projection_benchmark()
