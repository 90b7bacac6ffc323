"""What one tool execution may use: the worktree, its limits, its deadline and its cancel signal."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import ExecutionLimits, FailureKind
from codeflux.worker.confinement import Confinement
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.executables import ExecutableDigests

__all__ = ["ToolContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The per-execution facts a tool runs with; nothing here comes from the model.

    ``worktree`` is the real path of the task worktree. ``deadline`` is a ``time.monotonic()`` instant.
    ``environment`` is the worker's allow-listed environment (commands add the request's overrides).
    ``executables`` caches the sha256 of pinned programs across executions (the worker shares one).
    ``confinement`` is the box every process of the execution starts in; ``network_granted`` is True only
    when the exact operation's approved needs include ``network`` (the coordinator says so per request).
    """

    worktree: Path
    confinement: Confinement
    limits: ExecutionLimits
    deadline: float
    cancelled: threading.Event
    environment: Mapping[str, str]
    processes: ProcessGroups
    base_commit: str | None = None
    executables: ExecutableDigests = field(default_factory=ExecutableDigests)
    network_granted: bool = False

    def remaining_seconds(self) -> float:
        return self.deadline - time.monotonic()

    def check_still_running(self) -> None:
        """Raise the typed failure if the execution was cancelled or ran past its deadline."""
        if self.cancelled.is_set():
            raise ToolFailedError(failure_kind=FailureKind.CANCELLED, message="cancelled")
        if time.monotonic() >= self.deadline:
            raise ToolFailedError(failure_kind=FailureKind.TIMED_OUT, message="ran past its time limit")
