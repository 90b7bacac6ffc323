"""``TaskService.GetTaskGraph``: the task's execution graph, projected from its committed events.

The events are read in one query (a snapshot of the journal), each narrowed to the fields the graph shows
(:func:`~codeflux.coordinator.journal.read_session_graph_facts`: no payload is decoded into its typed event), and
projected by :func:`codeflux.domain.execution_graph.project_graph`: same events, same graph. The reply carries the
disclaimer "an explanation of what happened, not evidence that it is right"; no gate reads the graph. An unknown task
is NOT_FOUND (as for every task read). Incidents whose state rows name the task (issue 22: proposed it, fixed by
it) join the graph as nodes before the task (:func:`~codeflux.domain.execution_graph.with_incidents`).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.journal import read_session_graph_facts
from codeflux.domain.execution_graph import ExecutionGraph, project_graph, with_incidents
from codeflux.domain.ids import TaskId
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import task_service

__all__ = ["graph_view", "methods", "task_graph"]

_SERVICE: Final = "TaskService"


def task_graph(app: CoordinatorApp, task_id: TaskId) -> ExecutionGraph:
    """The graph of ``task_id`` through its last committed event, with the incidents that name it."""
    session = task_service(app).show(task_id).task.session_id  # NOT_FOUND for an unknown task
    facts, incidents = read_session_graph_facts(app.db, session, task_id)
    return with_incidents(project_graph(task_id.value, facts), incidents)


def graph_view(graph: ExecutionGraph) -> pb.TaskGraph:
    """The graph as the contract carries it (field for field)."""
    return pb.TaskGraph(
        task_id=graph.task_id, through_sequence=graph.through_sequence, disclaimer=graph.disclaimer,
        nodes=[pb.GraphNode(id=n.id, kind=n.kind.value, sequence=n.sequence, label=n.label, summary=n.summary,
                            sequences=list(n.sequences)) for n in graph.nodes],
        edges=[pb.GraphEdge(source=e.source, target=e.target, kind=e.kind.value) for e in graph.edges],
        not_shown=[pb.GraphNotShown(kind=item.kind, count=item.count, reason=item.reason)
                   for item in graph.not_shown])


def _get(app: CoordinatorApp, ctx: CallContext, request: pb.GetTaskGraphRequest) -> pb.TaskGraph:
    return graph_view(task_graph(app, parse_task_id(request.task_id)))


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    def get(ctx: CallContext, request: pb.GetTaskGraphRequest) -> pb.TaskGraph:
        return _get(app, ctx, request)

    return [UnaryMethod(name=method_name(_SERVICE, "GetTaskGraph"), request_type=pb.GetTaskGraphRequest,
                        response_type=pb.TaskGraph, handler=get)]
