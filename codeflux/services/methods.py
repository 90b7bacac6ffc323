"""The one method table both transports dispatch to: every services module's ``methods(app)`` together.

Building the table only binds handlers to the app (the app was complete when it was built, its
:class:`~codeflux.coordinator.runs.scheduler.BackgroundRuns` included); ``codeflux start`` calls
:func:`shutdown_runs` on SIGINT/SIGTERM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from google.protobuf.message import Message

from codeflux.domain.ids import TaskId
from codeflux.services import (
    approvals,
    budget,
    diagnostics,
    graph,
    incidents,
    instructions,
    memory,
    prices,
    recovery,
    review,
    session,
    settings,
    tasks,
    tool_activity,
    workspace,
)
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import MethodTable, StreamMethod, UnaryMethod

__all__ = ["SERVICE_MODULES", "build_method_table", "shutdown_runs"]

MethodsOf = Callable[[CoordinatorApp], Sequence[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]]

SERVICE_MODULES: Final[tuple[MethodsOf, ...]] = (
    workspace.methods,
    tasks.methods,
    tool_activity.methods,
    graph.methods,
    approvals.methods,
    review.methods,
    recovery.methods,
    settings.methods,
    instructions.methods,
    budget.methods,
    prices.methods,
    diagnostics.methods,
    memory.methods,
    incidents.methods,
    session.methods,
)


def build_method_table(app: CoordinatorApp) -> MethodTable:
    """Every RPC of ``api/codeflux/v1/product.proto``, ``memory.proto`` and ``incidents.proto`` by its full name,
    bound to ``app``."""
    return MethodTable.of(method for methods_of in SERVICE_MODULES for method in methods_of(app))


def shutdown_runs(app: CoordinatorApp, *, timeout: float = 60.0) -> list[TaskId]:
    """``codeflux start`` on SIGINT/SIGTERM: pause every active run between turns, wait (bounded), capture a
    ``shutdown`` checkpoint per active task and stop the workers (:meth:`BackgroundRuns.shutdown`)."""
    return app.runs.shutdown(timeout=timeout)
