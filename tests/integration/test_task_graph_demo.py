"""The execution graph of a real demo task (issue 19 item 8): the real CLI ran it headless and accepted it; the
graph `codeflux task graph` prints is the same when rebuilt — the projection run twice through the service, and
again over the typed events read back from the SQLite file by another reader, in JSON and DOT alike (the service
reads narrow records in SQLite; the typed events become the same records) — it shows every node kind the run had,
and every rendering carries the disclaimer. No gate reads it."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.domain.events import decode_event
from codeflux.domain.execution_graph import DISCLAIMER, ExecutionGraph, graph_dot, graph_json, project_graph
from codeflux.domain.graph_facts import graph_facts_of_events
from codeflux.domain.ids import TaskId
from codeflux.services.graph import methods as graph_methods
from codeflux.services.graph import task_graph
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.demo_task import DemoTask, accepted_demo_task, cli
from tests.fixtures.services import ScriptedDemoAccess, call, service_app
from tests.fixtures.services import refusal as refused

pytestmark = pytest.mark.slow

GET_GRAPH = "/codeflux.v1.TaskService/GetTaskGraph"
CODEFLUX = Path(__file__).resolve().parents[2] / "codeflux"


@dataclass(frozen=True, slots=True)
class Printed:
    """The demo task and what `codeflux task graph` printed for it (each a CLI process of its own)."""

    task: DemoTask
    json_text: str
    dot_text: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    task = accepted_demo_task(tmp_path_factory.mktemp("graph-demo"))
    as_json = cli(task.data, "task", "graph", task.task_id, "--format", "json")
    as_dot = cli(task.data, "task", "graph", task.task_id, "--format", "dot")
    assert as_json.code == 0 and as_dot.code == 0, as_json.err + as_dot.err
    return Printed(task=task, json_text=as_json.out, dot_text=as_dot.out)


def _reread(data: Path, task_id: str) -> ExecutionGraph:
    """The graph projected from the typed events of the journal as another reader (Python's sqlite3, read-only)
    gets it."""
    uri = f"file:{data / 'codeflux.sqlite3'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
        rows = connection.execute(
            "SELECT e.sequence, e.kind, e.payload_json FROM events e JOIN tasks t ON t.session_id = e.session_id"
            " WHERE t.id = ? ORDER BY e.sequence", (task_id,)).fetchall()
    assert rows
    return project_graph(task_id, graph_facts_of_events((seq, decode_event(kind, json.loads(body)))
                                                        for seq, kind, body in rows))


def test_the_demo_tasks_graph_is_identical_when_rebuilt(demo: Printed) -> None:
    task = demo.task
    second = cli(task.data, "task", "graph", task.task_id)  # the default format is json
    assert second.code == 0, second.err
    assert second.out == demo.json_text  # byte for byte, from another process
    reread = _reread(task.data, task.task_id)
    assert demo.json_text == graph_json(reread) and demo.dot_text == graph_dot(reread)
    db = open_store(DataLocation(directory=task.data), create=False, migrate=False)
    try:
        app = service_app(db, DataLocation(directory=task.data), graph_methods, models=ScriptedDemoAccess(db))
        twice = [graph_json(task_graph(app, TaskId.parse(task.task_id))) for _ in range(2)]
        assert twice == [demo.json_text, demo.json_text]
        reply = call(app, GET_GRAPH, pb.GetTaskGraphRequest(task_id=task.task_id))
        assert isinstance(reply, pb.TaskGraph) and reply.disclaimer == DISCLAIMER
        assert len(reply.nodes) == len(json.loads(demo.json_text)["nodes"])
        code, _ = refused(app, GET_GRAPH, pb.GetTaskGraphRequest(task_id="tsk_" + "0" * 32))
        assert code == 5  # NOT_FOUND, as for every task read
    finally:
        db.close()


def test_the_demo_graph_shows_what_the_run_did(demo: Printed) -> None:
    document = json.loads(demo.json_text)
    assert document["disclaimer"] == DISCLAIMER == "an explanation of what happened, not evidence that it is right"
    kinds = {node["kind"] for node in document["nodes"]}
    assert kinds >= {"task", "plan-revision", "decision", "attempt", "model-call", "tool-request", "execution",
                     "check", "stage-verdicts", "evidence", "delivery"}, kinds
    ids = {node["id"] for node in document["nodes"]}
    assert all(edge["from"] in ids and edge["to"] in ids for edge in document["edges"])
    assert ids == {edge["from"] for edge in document["edges"]} | {edge["to"] for edge in document["edges"]}
    edges = {(edge["from"], edge["to"], edge["kind"]) for edge in document["edges"]}
    assert ("plan:r1", "attempt:1", "used") in edges
    landed = [node for node in document["nodes"] if node["kind"] == "delivery" and node["label"].startswith("landed")]
    assert landed, document["nodes"]
    assert {item["kind"] for item in document["not_shown"]} >= {"tool-output", "checkpoint-created"}


def test_the_dot_format_is_graphviz_text_with_the_disclaimer(demo: Printed) -> None:
    lines = demo.dot_text.splitlines()
    assert lines[0] == f'digraph "task {demo.task.task_id}" {{' and lines[-1] == "}"
    assert DISCLAIMER in lines[1]
    assert len([line for line in lines if " -> " in line]) == len(json.loads(demo.json_text)["edges"])


def test_graphviz_reads_the_dot_text_when_it_is_installed(demo: Printed, tmp_path: Path) -> None:
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz (`dot`) is not installed; the DOT text's shape is checked above")
    (tmp_path / "graph.dot").write_text(demo.dot_text, encoding="utf-8")
    done = subprocess.run([dot, "-Tplain", str(tmp_path / "graph.dot")], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len([line for line in done.stdout.splitlines() if line.startswith("node ")]) == len(json.loads(
        demo.json_text)["nodes"])


def _importers(module: str) -> set[str]:
    return {path.relative_to(CODEFLUX).as_posix() for path in CODEFLUX.rglob("*.py")
            if re.search(rf"\b{module} import\b", path.read_text(encoding="utf-8"))}


def test_no_gate_reads_the_graph() -> None:
    """Only the graph's RPC handler and the CLI that prints it import the projection; the pipeline, the coordinator
    and the authority engine never do (so nothing decides on it). Its records are read only on the way to it."""
    assert _importers("execution_graph") == {"services/graph.py", "cli/task.py", "cli/views.py"}
    assert _importers("domain.graph_facts") == {"domain/execution_graph.py", "store/graph_facts.py",
                                                "coordinator/journal.py"}
    assert _importers("store.graph_facts") == {"coordinator/journal.py"}
    readers = {path.relative_to(CODEFLUX).as_posix() for path in CODEFLUX.rglob("*.py")
               if "read_session_graph_facts" in path.read_text(encoding="utf-8")}
    assert readers == {"coordinator/journal.py", "services/graph.py"}
