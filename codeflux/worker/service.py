"""The worker's gRPC ``Worker`` service: heartbeat, execute, cancel, shutdown.

This is the worker's RPC edge. Every request is decoded from the wire here and every outcome encoded
back. An ``Execute`` stream lives for many requests, run one after the other: for each, the stream
carries exactly one ``started`` (process group id, 0 for tools that start no process), any number of
redacted ``output`` chunks, then exactly one ``result``. Every request repeats the lease token, compared
in constant time before anything of it runs (the call's metadata was checked when the stream opened); a
mismatch ends the stream with UNAUTHENTICATED. Expected failures are values (see ``tools.dispatch``); the
one bare ``except Exception`` below turns a bug into a FAILED ``internal-error`` result with a safe
message, so a worker never dies mid-stream.

If the coordinator goes away mid-stream (its RPC is cancelled), the execution in progress is cancelled:
the tool's process group is killed before the handler returns.
"""

from __future__ import annotations

import dataclasses
import hmac
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import grpc

from codeflux.api.v1 import worker_pb2
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.execution import ExecutionLimits, ExecutionState, FailureKind
from codeflux.domain.ids import TaskId, ToolRequestId, WorkerLeaseId
from codeflux.domain.operations import OperationIdentity
from codeflux.redact import redact
from codeflux.worker.confinement import Confinement
from codeflux.worker.environment import ScreenedEnvironment
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.command import CommandOutput, CommandPin, CommandStarted
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.dispatch import execute_tool
from codeflux.worker.tools.executables import ExecutableDigests
from codeflux.worker.tools.results import ToolResult, failed_result

__all__ = ["LeaseClock", "WorkerService"]

_CHUNK_CHARS: Final = 16 * 1024
_STATES: Final = {
    ExecutionState.SUCCEEDED: worker_pb2.RESULT_STATE_SUCCEEDED,
    ExecutionState.FAILED: worker_pb2.RESULT_STATE_FAILED,
    ExecutionState.CANCELLED: worker_pb2.RESULT_STATE_CANCELLED,
    ExecutionState.OUTCOME_UNKNOWN: worker_pb2.RESULT_STATE_OUTCOME_UNKNOWN,
}
_STREAMS: Final = {"stdout": worker_pb2.OUTPUT_STREAM_STDOUT, "stderr": worker_pb2.OUTPUT_STREAM_STDERR}


class LeaseClock:
    """When the coordinator last renewed the lease (a heartbeat); read by the watchdog."""

    def __init__(self, *, interval_s: float) -> None:
        self.interval_s = interval_s
        self._renewed = time.monotonic()

    def renew(self) -> None:
        self._renewed = time.monotonic()

    def silent_for(self) -> float:
        return time.monotonic() - self._renewed


@dataclass(slots=True)
class _InFlight:
    cancelled: threading.Event = field(default_factory=threading.Event)


class _StreamState:
    """The execution an ``Execute`` stream is running now; cancelled if the stream ends under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: _InFlight | None = None
        self._ended = False

    def begin(self, flight: _InFlight) -> None:
        with self._lock:
            self._current = flight
            if self._ended:
                flight.cancelled.set()

    def done(self) -> None:
        with self._lock:
            self._current = None

    def end(self) -> None:
        """The RPC terminated (the client cancelled, went away, or the stream finished)."""
        with self._lock:
            self._ended = True
            if self._current is not None:
                self._current.cancelled.set()


class WorkerService:
    """Serves one lease of one task in one worktree (every RPC of ``worker.proto``; see ``worker.rpc``)."""

    def __init__(
        self,
        *,
        lease_id: WorkerLeaseId,
        task_id: TaskId,
        worktree: Path,
        base_commit: str | None,
        environment: Mapping[str, str],
        processes: ProcessGroups,
        lease: LeaseClock,
        stop: threading.Event,
        lease_token: str,
        confinement: Confinement,
    ) -> None:
        self._lease_id = lease_id
        self._token = lease_token.encode("ascii")
        self._task_id = task_id
        self._worktree = worktree
        self._base_commit = base_commit
        self._environment = ScreenedEnvironment(environment)  # screened once; overrides per request
        self._processes = processes
        self._lease = lease
        self._stop = stop
        self._lock = threading.Lock()
        self._in_flight: dict[str, _InFlight] = {}
        self._executables = ExecutableDigests()
        self._confinement = confinement

    def Heartbeat(
        self, request: worker_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> worker_pb2.HeartbeatReply:
        if request.lease_id != str(self._lease_id):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "this worker serves another lease")
        self._lease.renew()
        with self._lock:
            in_flight = sorted(self._in_flight)
        return worker_pb2.HeartbeatReply(lease_id=str(self._lease_id), worker_pid=os.getpid(),
                                         in_flight_request_ids=in_flight)

    def Cancel(
        self, request: worker_pb2.CancelRequest, context: grpc.ServicerContext
    ) -> worker_pb2.CancelReply:
        with self._lock:
            flight = self._in_flight.get(request.request_id)
        if flight is not None:
            flight.cancelled.set()
        return worker_pb2.CancelReply(was_running=flight is not None)

    def Shutdown(
        self, request: worker_pb2.ShutdownRequest, context: grpc.ServicerContext
    ) -> worker_pb2.ShutdownReply:
        killed = self.cancel_all()
        self._stop.set()
        return worker_pb2.ShutdownReply(killed_process_groups=killed)

    def cancel_all(self) -> int:
        """Mark every execution in flight cancelled, then kill every process group; the count killed.

        The mark comes first, so a program killed here is reported ``cancelled`` — by codeflux, on a shutdown
        or a lapsed lease — never as its own failure (``killed by SIGKILL``)."""
        with self._lock:
            for flight in self._in_flight.values():
                flight.cancelled.set()
        return self._processes.kill_all()

    def Execute(
        self, requests: Iterator[worker_pb2.ExecuteRequest], context: grpc.ServicerContext
    ) -> Iterator[worker_pb2.ExecuteEvent]:
        stream = _StreamState()
        if not context.add_callback(stream.end):  # the coordinator went away: stop the running tool
            stream.end()
        try:
            for request in requests:
                if not self._token_matches(request.lease_token):
                    context.abort(grpc.StatusCode.UNAUTHENTICATED, "lease token refused")
                yield from self._serve_one(request, stream)
        except grpc.RpcError:
            return  # the stream was cancelled while it waited for the next request

    def _token_matches(self, presented: str) -> bool:
        return presented.isascii() and hmac.compare_digest(presented.encode("ascii"), self._token)

    def _serve_one(self, request: worker_pb2.ExecuteRequest,
                   stream: _StreamState) -> Iterator[worker_pb2.ExecuteEvent]:
        began = time.monotonic()
        flight = _InFlight()
        refusal = self._admit(request, flight)
        if refusal is not None:
            yield _started(request.request_id, 0)
            yield _result(request.request_id, refusal, began, confinement=self._confinement.mode)
            return
        stream.begin(flight)
        try:
            yield from self._execute(request, flight, began)
        finally:
            stream.done()
            with self._lock:
                self._in_flight.pop(request.request_id, None)

    def _admit(self, request: worker_pb2.ExecuteRequest, flight: _InFlight) -> ToolResult | None:
        try:
            ToolRequestId.parse(request.request_id)
            OperationIdentity.parse(request.operation_identity)
            task_id = TaskId.parse(request.task_id)
        except InvalidValueError as error:
            return failed_result(FailureKind.INVALID_REQUEST, str(error))
        if task_id != self._task_id:
            return failed_result(FailureKind.WRONG_TASK, "this worker serves another task")
        if self._stop.is_set():
            return failed_result(FailureKind.CANCELLED, "the worker is shutting down")
        with self._lock:
            if request.request_id in self._in_flight:
                return failed_result(FailureKind.DUPLICATE_REQUEST, "this request id is already running")
            self._in_flight[request.request_id] = flight
        return None

    def _execute(self, request: worker_pb2.ExecuteRequest, flight: _InFlight,
                 began: float) -> Iterator[worker_pb2.ExecuteEvent]:
        request_id = request.request_id
        sent_started = process_started = False
        try:
            arguments, limits = _decode_arguments(request), _decode_limits(request.limits)
        except InvalidValueError as error:
            yield _started(request_id, 0)
            yield _result(request_id, failed_result(FailureKind.INVALID_REQUEST, str(error)), began,
                          confinement=self._confinement.mode)
            return
        context = ToolContext(worktree=self._worktree, limits=limits, deadline=began + limits.timeout_ms / 1000,
                              cancelled=flight.cancelled, environment=self._environment,
                              processes=self._processes, base_commit=self._base_commit,
                              executables=self._executables, confinement=self._confinement,
                              network_granted=request.network_granted)
        pin = CommandPin(executable_path=request.executable_path, executable_sha256=request.executable_sha256,
                         env_overrides=dict(request.env_overrides), stdin=bytes(request.stdin),
                         working_directory=request.working_directory or ".")
        events = execute_tool(tool=request.tool, raw_arguments=arguments, context=context, pin=pin)
        try:
            while True:
                try:
                    event = next(events)
                except StopIteration as stop:
                    result: ToolResult = stop.value
                    break
                if isinstance(event, CommandStarted):
                    sent_started = process_started = True
                    yield _started(request_id, event.process_group_id)
                    continue
                if not sent_started:
                    sent_started = True
                    yield _started(request_id, 0)
                yield from _output(event)
        except Exception as error:  # the RPC edge: a bug becomes a FAILED result, never a dead stream
            print(f"codeflux worker: internal error in {request.tool[:40]!r}: {type(error).__name__}",
                  file=sys.stderr, flush=True)
            result = failed_result(FailureKind.INTERNAL_ERROR, "the worker hit an internal error; nothing more ran")
            if process_started:  # the program ran for a while: what it did is not known
                result = dataclasses.replace(result, state=ExecutionState.OUTCOME_UNKNOWN)
        finally:
            events.close()  # a command's process group is killed here if it is still running
        if not sent_started:
            yield _started(request_id, 0)
        yield _result(request_id, result, began, confinement=self._confinement.mode)


def _decode_arguments(request: worker_pb2.ExecuteRequest) -> dict[str, object]:
    arguments: dict[str, object] = {}
    for argument in request.arguments:
        if argument.name in arguments:
            raise InvalidValueError(kind="tool request", reason="repeats an argument name")
        kind = argument.WhichOneof("value")
        if kind == "text":
            arguments[argument.name] = argument.text
        elif kind == "integer":
            arguments[argument.name] = argument.integer
        elif kind == "flag":
            arguments[argument.name] = argument.flag
        elif kind == "argv":
            arguments[argument.name] = list(argument.argv.items)
        else:
            raise InvalidValueError(kind="tool request", reason="an argument carries no value")
    return arguments


def _decode_limits(limits: worker_pb2.ExecutionLimits) -> ExecutionLimits:
    if limits.max_file_bytes:
        return ExecutionLimits(timeout_ms=limits.timeout_ms, max_output_bytes=limits.max_output_bytes,
                               max_file_bytes=limits.max_file_bytes)
    return ExecutionLimits(timeout_ms=limits.timeout_ms, max_output_bytes=limits.max_output_bytes)


def _started(request_id: str, process_group_id: int) -> worker_pb2.ExecuteEvent:
    return worker_pb2.ExecuteEvent(
        started=worker_pb2.ExecutionStarted(request_id=request_id, process_group_id=process_group_id)
    )


def _output(event: CommandOutput) -> Iterator[worker_pb2.ExecuteEvent]:
    stream = _STREAMS[event.stream]
    for start in range(0, len(event.text), _CHUNK_CHARS):
        chunk = worker_pb2.OutputChunk(stream=stream, text=event.text[start : start + _CHUNK_CHARS])
        yield worker_pb2.ExecuteEvent(output=chunk)


def _result(request_id: str, result: ToolResult, began: float, *,
            confinement: ConfinementMode) -> worker_pb2.ExecuteEvent:
    return worker_pb2.ExecuteEvent(
        result=worker_pb2.ExecutionResult(
            request_id=request_id,
            state=_STATES[result.state],
            failure_kind=result.failure_kind,
            message=redact(result.message),
            exit_code=result.exit_code,
            content=result.content,
            content_truncated=result.content_truncated,
            stdout_truncated=result.stdout_truncated,
            stderr_truncated=result.stderr_truncated,
            duration_ms=int((time.monotonic() - began) * 1000),
            content_sha256=result.content_sha256,
            confinement=confinement.value,
        )
    )
