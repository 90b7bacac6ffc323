"""What crosses the worker boundary, in domain terms: :class:`WorkerExecution` in, :class:`WorkerOutcome` out.

Also the conversion to and from the generated ``codeflux.v1`` messages, and the coordinator-side
redaction of everything a worker sends back. The worker pattern-redacts its output; it holds no
credential, so it cannot hide a *loaded* secret. Every chunk, the content and the message are redacted
again here with the process-wide redactor (loaded secrets + patterns), streamed per output stream so a
secret split across chunks is still caught.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Self

from codeflux.api.v1 import worker_pb2
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.execution import ExecutionLimits, ExecutionState, FailureKind
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.domain.operations import ExecutablePin, OperationIdentity
from codeflux.domain.tools import BoundToolRequest, ToolName
from codeflux.redact import StreamRedactor, redact

__all__ = [
    "OutputCollector",
    "WorkerExecution",
    "WorkerOutcome",
    "encode_execution",
    "outcome_from_result",
    "unknown_outcome",
    "unsent_outcome",
]

_STATES: Final = {
    worker_pb2.RESULT_STATE_SUCCEEDED: ExecutionState.SUCCEEDED,
    worker_pb2.RESULT_STATE_FAILED: ExecutionState.FAILED,
    worker_pb2.RESULT_STATE_CANCELLED: ExecutionState.CANCELLED,
    worker_pb2.RESULT_STATE_OUTCOME_UNKNOWN: ExecutionState.OUTCOME_UNKNOWN,
}
_STREAM_NAMES: Final[dict[worker_pb2.OutputStream, str]] = {
    worker_pb2.OUTPUT_STREAM_STDOUT: "stdout",
    worker_pb2.OUTPUT_STREAM_STDERR: "stderr",
}
_FAILURE_KINDS: Final = frozenset(member.value for member in FailureKind)
_MODES: Final = {mode.value: mode for mode in ConfinementMode}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerExecution:
    """One authorized request, exactly as its operation identity was derived.

    ``executable`` is required for ``run_command`` (the pinned program the worker re-hashes before exec)
    and must be None for every other tool. ``env_overrides`` are sorted ``(name, value)`` pairs.
    """

    request_id: ToolRequestId
    task_id: TaskId
    operation_identity: OperationIdentity
    request: BoundToolRequest
    limits: ExecutionLimits
    executable: ExecutablePin | None = None
    env_overrides: tuple[tuple[str, str], ...] = ()
    stdin: bytes = b""
    network_granted: bool = False
    working_directory: str = "."
    """As the operation's identity has it: worktree-relative, or ``$TMPDIR/<path>`` (the worker resolves it under
    its own TMPDIR); only the pipeline's checks leave the worktree root."""

    @classmethod
    def for_request(
        cls,
        *,
        request_id: ToolRequestId,
        task_id: TaskId,
        operation_identity: OperationIdentity,
        request: BoundToolRequest,
        executable: ExecutablePin | None = None,
        env_overrides: Mapping[str, str] | None = None,
        stdin: bytes = b"",
        network_granted: bool = False,
        working_directory: str = ".",
    ) -> Self:
        """An execution with the limits of the request's descriptor (the only place limits come from)."""
        return cls(
            request_id=request_id,
            task_id=task_id,
            operation_identity=operation_identity,
            request=request,
            limits=ExecutionLimits.for_tool(request.descriptor),
            executable=executable,
            env_overrides=tuple(sorted((env_overrides or {}).items())),
            stdin=stdin,
            network_granted=network_granted,
            working_directory=working_directory,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOutcome:
    """How one execution ended, redacted and ready to store.

    ``failure_kind`` is None exactly when ``state`` is ``succeeded``. ``exit_code`` is set for
    ``run_command`` when the worker reported one (``-N`` for signal ``N``). ``stdout``/``stderr`` are the
    streamed output (capped at the descriptor's output limit; ``*_truncated`` say so); ``content`` is the
    tool's result text for the model. ``content_sha256`` is the sha256 of the file read or written.
    ``process_group_id`` is the command's group (0 when no process was started). ``confinement`` is the
    box the worker ran it in, as the worker reported it (None when no worker answered).
    """

    request_id: ToolRequestId
    state: ExecutionState
    failure_kind: FailureKind | None
    message: str
    exit_code: int | None = None
    content: str = ""
    content_truncated: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: int = 0
    content_sha256: str | None = None
    process_group_id: int = 0
    confinement: ConfinementMode | None = None


@dataclass(slots=True)
class OutputCollector:
    """Redacts streamed output per stream (split secrets included), forwards it, and keeps a capped copy."""

    limit: int
    on_output: Callable[[str, str], None] | None
    _redactors: dict[str, StreamRedactor] = field(default_factory=dict)
    _texts: dict[str, list[str]] = field(default_factory=dict)
    _sizes: dict[str, int] = field(default_factory=dict)
    truncated: set[str] = field(default_factory=set)

    def feed(self, stream: worker_pb2.OutputStream, text: str) -> None:
        name = _STREAM_NAMES.get(stream)
        if name is not None:
            self._release(name, self._redactors.setdefault(name, StreamRedactor()).feed(text))

    def finish(self) -> tuple[str, str]:
        """Flush both streams; the full redacted ``(stdout, stderr)`` kept."""
        for name, redactor in self._redactors.items():
            self._release(name, redactor.flush())
        self._redactors.clear()
        return "".join(self._texts.get("stdout", [])), "".join(self._texts.get("stderr", []))

    def _release(self, name: str, text: str) -> None:
        if not text:
            return
        if self.on_output is not None:
            self.on_output(name, text)
        size = self._sizes.get(name, 0)
        room = self.limit - size
        encoded = text.encode("utf-8")
        if len(encoded) > room:
            self.truncated.add(name)
            text = encoded[: max(room, 0)].decode("utf-8", errors="ignore")
        self._sizes[name] = size + len(text.encode("utf-8"))
        self._texts.setdefault(name, []).append(text)


def encode_execution(execution: WorkerExecution, *, lease_token: str) -> worker_pb2.ExecuteRequest:
    """The wire request for ``execution``, carrying the lease's token (checked on every request)."""
    arguments = []
    for argument in execution.request.arguments:
        value = argument.value
        if isinstance(value, bool):
            arguments.append(worker_pb2.ToolArgument(name=argument.name, flag=value))
        elif isinstance(value, int):
            arguments.append(worker_pb2.ToolArgument(name=argument.name, integer=value))
        elif isinstance(value, str):
            arguments.append(worker_pb2.ToolArgument(name=argument.name, text=value))
        else:
            arguments.append(worker_pb2.ToolArgument(name=argument.name, argv=worker_pb2.StringList(items=value)))
    pin = execution.executable
    return worker_pb2.ExecuteRequest(
        request_id=str(execution.request_id),
        task_id=str(execution.task_id),
        operation_identity=str(execution.operation_identity),
        tool=execution.request.tool.value,
        arguments=arguments,
        limits=worker_pb2.ExecutionLimits(timeout_ms=execution.limits.timeout_ms,
                                          max_output_bytes=execution.limits.max_output_bytes,
                                          max_file_bytes=execution.limits.max_file_bytes),
        executable_path="" if pin is None else pin.path,
        executable_sha256="" if pin is None else pin.sha256,
        env_overrides=dict(execution.env_overrides),
        stdin=execution.stdin,
        lease_token=lease_token,
        network_granted=execution.network_granted,
        working_directory=execution.working_directory,
    )


def outcome_from_result(execution: WorkerExecution, result: worker_pb2.ExecutionResult, collector: OutputCollector,
                        *, process_group: int) -> WorkerOutcome:
    """The outcome the worker reported, redacted again with every loaded secret."""
    stdout, stderr = collector.finish()
    state = _STATES.get(result.state, ExecutionState.FAILED)
    kind: FailureKind | None = None
    if state is not ExecutionState.SUCCEEDED:
        known = result.failure_kind in _FAILURE_KINDS
        kind = FailureKind(result.failure_kind) if known else FailureKind.INTERNAL_ERROR
    is_command = execution.request.tool is ToolName.RUN_COMMAND
    return WorkerOutcome(
        request_id=execution.request_id,
        state=state,
        failure_kind=kind,
        message=_redacted(result.message),
        exit_code=result.exit_code if is_command and process_group else None,
        content=_redacted(result.content),
        content_truncated=result.content_truncated,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=result.stdout_truncated or "stdout" in collector.truncated,
        stderr_truncated=result.stderr_truncated or "stderr" in collector.truncated,
        duration_ms=result.duration_ms,
        content_sha256=result.content_sha256 or None,
        process_group_id=process_group,
        confinement=_MODES.get(result.confinement),
    )


def unknown_outcome(execution: WorkerExecution, collector: OutputCollector, *, kind: FailureKind, began: float,
                    process_group: int) -> WorkerOutcome:
    """The request was in flight when the worker was lost: it may or may not have taken effect."""
    stdout, stderr = collector.finish()
    messages = {
        FailureKind.WORKER_UNRESPONSIVE: "the worker gave no result by the deadline and was killed; "
                                         "the effect is unknown",
        FailureKind.WORKER_LOST: "the worker was lost while the request was in flight; the effect is unknown",
    }
    return WorkerOutcome(
        request_id=execution.request_id,
        state=ExecutionState.OUTCOME_UNKNOWN,
        failure_kind=kind,
        message=messages.get(kind, "the effect is unknown"),
        stdout=stdout,
        stderr=stderr,
        stdout_truncated="stdout" in collector.truncated,
        stderr_truncated="stderr" in collector.truncated,
        duration_ms=_elapsed_ms(began),
        process_group_id=process_group,
    )


def unsent_outcome(execution: WorkerExecution, *, began: float,
                   message: str = "the worker is not running; nothing was sent") -> WorkerOutcome:
    """The request never reached a worker that could run it: FAILED, nothing ran."""
    return WorkerOutcome(request_id=execution.request_id, state=ExecutionState.FAILED,
                         failure_kind=FailureKind.WORKER_UNAVAILABLE, message=message,
                         duration_ms=_elapsed_ms(began))


def _redacted(text: str) -> str:
    return redact(text) if text else text


def _elapsed_ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)
