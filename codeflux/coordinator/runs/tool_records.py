"""Reading what the tool driver recorded about a task's tool calls: one request with its latest decision and
its execution, and the capabilities a person denied for the task.

The services show these; the tool driver (:mod:`codeflux.coordinator.runs.tool_driver`) writes them through the
authority service. Reads only; each function is one read transaction, so what it returns belongs together.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.errors import NotFoundError
from codeflux.domain.ids import TaskId
from codeflux.store import authority as rows
from codeflux.store.database import Database, ReadView

__all__ = ["RecordedToolCall", "read_denials_of_task", "read_recorded_tool_call"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedToolCall:
    """A recorded tool request, the decision in force for it and its execution (None: it never ran)."""

    request: rows.ToolRequestRow
    decision: rows.DecisionRow
    execution: rows.ExecutionRow | None


def read_recorded_tool_call(db: Database, *, task_id: TaskId, request_id: str) -> RecordedToolCall:
    """The request ``request_id`` of ``task_id`` with its latest decision and execution, read together;
    NotFoundError when the task has no such request (the same error as for an unknown request, so a caller
    learns nothing about other tasks' requests)."""

    def read(view: ReadView) -> RecordedToolCall:
        try:
            request = rows.read_tool_request(view, request_id)
        except NotFoundError:
            request = None
        if request is None or request.task_id != task_id:
            raise NotFoundError(kind=f"tool request of task {task_id.value}", entity_id=request_id)
        # The first decision is recorded with the request (one transaction), so there always is one.
        return RecordedToolCall(request=request, decision=rows.latest_decision(view, request_id),
                                execution=rows.execution_of_request(view, request_id))

    return db.read(read)


def read_denials_of_task(db: Database, task_id: TaskId) -> list[rows.DenialRow]:
    """The capabilities (optionally narrowed to a resource) a person denied for ``task_id``."""
    return db.read(lambda view: rows.denials_of_task(view, task_id))
