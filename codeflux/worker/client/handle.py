"""The coordinator's side of the worker process boundary: start a worker, run authorized tools in it, stop it.

One :class:`WorkerHandle` per active run::

    with WorkerHandle.start(task_id=task, worktree=wt, state_dir=data / "workers" / str(task)) as worker:
        outcome = worker.execute(WorkerExecution.for_request(request_id=..., task_id=task,
                                                             operation_identity=..., request=bound,
                                                             executable=pin),
                                 on_output=lambda stream, text: ...)

- **Start** spawns ``python -I -B -m codeflux.worker`` (see ``worker_launch``): cwd = worktree, own session,
  allow-listed environment, per-task ``HOME``/``TMPDIR`` under ``state_dir``, a fresh lease id and a
  32-byte token sent on stdin; it returns once the worker serves its 0600 Unix socket.
- **Lease.** A background thread heartbeats every ``lease_interval_s``. If the worker dies or misses
  ``LEASE_MISSES_ALLOWED`` intervals the lease is lost: in-flight calls are cut and the worker stops
  itself (it also stops when it misses heartbeats, or when this process dies and its stdin closes).
- **Execute** blocks until the result, calling ``on_started(process_group_id)`` when the worker reports
  the start and ``on_output(stream, text)`` for each redacted chunk (``"stdout"``/``"stderr"``; redacted
  by the worker's patterns and again here with every loaded secret).
  If the worker dies, loses its lease or blows the deadline (the tool's timeout plus a grace period) while
  the request is in flight, the outcome is ``outcome-unknown`` — never retried here — and the command's
  process group is killed. If the worker was already gone before the request was sent, the outcome is
  ``failed``/``worker-unavailable``: nothing ran.
- **Streams.** Requests travel on long-lived ``Execute`` streams, one at a time per stream (see
  ``worker_streams``), so a request pays for no new gRPC call; every request repeats the lease token,
  which the worker checks. The lease thread also enforces each request's deadline: it wakes for the next
  heartbeat or the earliest deadline, whichever comes first (a heartbeat that hangs delays it by at most
  the heartbeat's own timeout), and cancels an overdue request's stream.
- **Stop** (idempotent; also on ``with`` exit and when the handle is garbage collected): ``Shutdown``,
  then ``SIGKILL`` to the worker's whole process group, reap, remove the socket directory.

Thread-safe: ``execute``, ``cancel`` and ``heartbeat`` may be called from several threads.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Self

import grpc

from codeflux.api.v1 import worker_pb2
from codeflux.domain.errors import InvalidValueError, WorkerClosedError
from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.domain.ids import TaskId, ToolRequestId, WorkerLeaseId
from codeflux.worker.client.confinement import ConfinementChoice, box_request, choose_confinement
from codeflux.worker.client.launch import LaunchedWorker, has_exited, launch_worker, reap_worker
from codeflux.worker.client.streams import ExecuteStream, StreamPool
from codeflux.worker.client.wire import (
    OutputCollector,
    WorkerExecution,
    WorkerOutcome,
    encode_execution,
    outcome_from_result,
    unknown_outcome,
    unsent_outcome,
)
from codeflux.worker.environment import worker_search_path
from codeflux.worker.processes import kill_process_group
from codeflux.worker.rpc import WorkerStub
from codeflux.worker.server import LEASE_MISSES_ALLOWED, LEASE_TOKEN_METADATA

__all__ = [
    "DEFAULT_LEASE_INTERVAL_S",
    "RESULT_GRACE_S",
    "ExecutionState",
    "OutputCallback",
    "StartedCallback",
    "WorkerExecution",
    "WorkerHandle",
    "WorkerOutcome",
]

DEFAULT_LEASE_INTERVAL_S: Final = 2.0
RESULT_GRACE_S: Final = 10.0
"""How long past the tool's own timeout the coordinator waits for a result before killing the worker."""

_RPC_TIMEOUT_S: Final = 5.0
_CHANNEL_OPTIONS: Final = (("grpc.enable_http_proxy", 0),)

OutputCallback = Callable[[str, str], None]
StartedCallback = Callable[[int], None]


class WorkerHandle:
    """One running worker process serving one lease of one task. Build it with :meth:`start`."""

    def __init__(self, *, launched: LaunchedWorker, task_id: TaskId, worktree: Path, lease_interval_s: float) -> None:
        self._launched = launched
        self._task_id = task_id
        self._worktree = worktree
        self._interval = lease_interval_s
        self._metadata = ((LEASE_TOKEN_METADATA, launched.lease_token),)
        self._channel = grpc.insecure_channel(f"unix:{launched.socket_path}", options=_CHANNEL_OPTIONS)
        self._stub = WorkerStub(self._channel)
        self._lock = threading.Lock()
        self._stopped = False
        self._lease_lost = False
        self._last_renewal = time.monotonic()
        self._orphan_groups: set[int] = set()
        self._quit = threading.Event()
        self._wake = threading.Event()
        # Nothing here refers to the handle, so the finalizer below does not keep it alive.
        self._streams = StreamPool(functools.partial(ExecuteStream, self._stub, self._metadata), wake=self._wake.set)
        self._finalizer = weakref.finalize(self, _abandon, launched.process.pid, self._streams)
        # The thread holds only a weak reference, so an abandoned handle is still collected (and its
        # finalizer kills the worker's group).
        self._beat = threading.Thread(target=_keep_lease,
                                      args=(weakref.ref(self), self._quit, self._wake, lease_interval_s),
                                      name=f"cf-lease-{launched.process.pid}", daemon=True)
        self._beat.start()

    @classmethod
    def start(
        cls,
        *,
        task_id: TaskId,
        worktree: Path,
        state_dir: Path,
        lease_interval_s: float = DEFAULT_LEASE_INTERVAL_S,
        startup_timeout_s: float = 20.0,
        base_commit: str | None = None,
        base_environment: Mapping[str, str] | None = None,
        repository_root: Path | None = None,
        data_dir: Path | None = None,
        confinement: ConfinementChoice | None = None,
        tools: Path | None = None,
        worktree_readonly: bool = False,
    ) -> Self:
        """Start a worker for ``task_id`` in ``worktree``; :class:`WorkerStartError` if it does not come up.

        ``state_dir`` (created 0700) holds the per-task ``home/``, ``tmp/`` and ``worker.log``.
        ``base_commit`` is what ``inspect_diff`` compares with (HEAD when None). ``base_environment``
        (default: this process's) is filtered through the worker allow-list; nothing else passes.
        Every process the worker starts runs in the box of ``confinement`` (default: the coordinator's
        choice, :func:`choose_confinement`), which hides ``data_dir`` (default: ``state_dir``) and shows
        the git directories of ``repository_root`` (the task's repository as recorded) and, read-only, the
        check-tool overlays in ``tools``; ``worktree_readonly`` keeps the worktree read-only in the box.
        """
        if not 0.1 <= lease_interval_s <= 60:
            raise InvalidValueError(kind="worker lease interval", reason="must be between 0.1 and 60 seconds")
        real_worktree = Path(os.path.realpath(worktree))
        environment = dict(base_environment or os.environ)
        box = box_request(confinement or choose_confinement(), worktree=real_worktree, repository_root=repository_root,
                          data_dir=data_dir or state_dir, search_path=worker_search_path(environment), tools=tools,
                          worktree_readonly=worktree_readonly)
        launched = launch_worker(task_id=task_id, worktree=real_worktree, state_dir=state_dir,
                                 lease_interval_s=lease_interval_s, startup_timeout_s=startup_timeout_s,
                                 base_commit=base_commit, base_environment=environment, box=box)
        return cls(launched=launched, task_id=task_id, worktree=real_worktree, lease_interval_s=lease_interval_s)

    # ----------------------------------------------------------------------------------------- facts

    @property
    def task_id(self) -> TaskId:
        return self._task_id

    @property
    def lease_id(self) -> WorkerLeaseId:
        return self._launched.lease_id

    @property
    def pid(self) -> int:
        """The worker's pid, which is also its process group id (it leads its own session)."""
        return self._launched.process.pid

    @property
    def worktree(self) -> Path:
        return self._worktree

    @property
    def log_path(self) -> Path:
        return self._launched.log_path

    def is_alive(self) -> bool:
        """True while the worker runs, holds its lease and has not been stopped."""
        return not (self._stopped or self._lease_lost or has_exited(self._launched.process))

    # ------------------------------------------------------------------------------------ operations

    def heartbeat(self) -> bool:
        """Renew the lease now; True if the worker answered for this lease."""
        if self._stopped or has_exited(self._launched.process):
            return False
        try:
            reply = self._stub.Heartbeat(worker_pb2.HeartbeatRequest(lease_id=str(self.lease_id)),
                                         metadata=self._metadata, timeout=max(self._interval, 1.0))
        except grpc.RpcError:
            return False
        if reply.lease_id != str(self.lease_id) or reply.worker_pid != self.pid:
            return False
        self._last_renewal = time.monotonic()
        return True

    def execute(self, execution: WorkerExecution, *, on_output: OutputCallback | None = None,
                on_started: StartedCallback | None = None) -> WorkerOutcome:
        """Run one authorized request in the worker and return how it ended (see the module docstring).

        ``on_started(process_group_id)`` is called once, when the worker's ``ExecutionStarted`` arrives
        (the group id is 0 for tools that start no process, and for a request the worker refused before
        starting anything); it is not called when the worker never answered. ``on_output`` and
        ``on_started`` must not raise; if one does, the execution is cancelled and the error propagates.
        Both run on the calling thread, in the middle of the call: keep them short.
        """
        self._check_open()
        if execution.task_id != self._task_id:
            raise InvalidValueError(kind="worker execution", reason="belongs to another task than this worker")
        began = time.monotonic()
        if not self.is_alive():
            return unsent_outcome(execution, began=began)
        key = str(execution.request_id)
        flight = self._streams.board(key, deadline=began + execution.limits.timeout_ms / 1000 + RESULT_GRACE_S)
        if flight is None:  # stopped or lost meanwhile
            return unsent_outcome(execution, began=began)
        collector = OutputCollector(limit=execution.limits.max_output_bytes, on_output=on_output)
        process_group = 0
        finished = False
        try:
            flight.stream.send(encode_execution(execution, lease_token=self._launched.lease_token))
            for event in flight.stream.call:
                kind = event.WhichOneof("event")
                if kind == "started":
                    process_group = event.started.process_group_id
                    if on_started is not None:
                        on_started(process_group)
                elif kind == "output":
                    collector.feed(event.output.stream, event.output.text)
                elif kind == "result":
                    finished = True
                    return outcome_from_result(execution, event.result, collector, process_group=process_group)
            return self._lost(execution, collector, process_group, began, FailureKind.WORKER_LOST)
        except grpc.RpcError as error:
            return self._failed_call(execution, collector, process_group, began, error, expired=flight.expired)
        finally:
            self._streams.land(key, flight, finished=finished)

    def cancel(self, request_id: ToolRequestId) -> bool:
        """Ask the worker to cancel an in-flight request (its process group is killed); True if it ran."""
        if self._stopped:
            return False
        try:
            reply = self._stub.Cancel(worker_pb2.CancelRequest(request_id=str(request_id)),
                                      metadata=self._metadata, timeout=_RPC_TIMEOUT_S)
        except grpc.RpcError:
            return False
        return bool(reply.was_running)

    def stop(self) -> None:
        """Shut the worker down and kill its whole process group; idempotent, safe on every exit path."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._quit.set()
        self._wake.set()
        self._streams.close(in_flight=False)
        if not has_exited(self._launched.process):
            # Already gone or hung: the group kill below ends it either way.
            with contextlib.suppress(grpc.RpcError):
                self._stub.Shutdown(worker_pb2.ShutdownRequest(reason="stop"), metadata=self._metadata,
                                    timeout=_RPC_TIMEOUT_S)
            _wait_for_exit(self._launched, timeout_s=_RPC_TIMEOUT_S)
        self._streams.close()
        reap_worker(self._launched)
        for group in self._orphan_groups:
            kill_process_group(group)
        self._channel.close()
        self._finalizer.detach()
        if threading.current_thread() is not self._beat:
            self._beat.join(timeout=_RPC_TIMEOUT_S)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------------- inner

    def _check_open(self) -> None:
        if self._stopped:
            raise WorkerClosedError()

    def _renew_or_lose_lease(self) -> bool:
        """One heartbeat tick; False once the lease is lost (the worker died or stayed silent too long)."""
        if self.heartbeat():
            return True
        silent = time.monotonic() - self._last_renewal > LEASE_MISSES_ALLOWED * self._interval
        if has_exited(self._launched.process) or silent:
            self._lose_lease()
            return False
        return True

    def _lose_lease(self) -> None:
        with self._lock:
            self._lease_lost = True
        self._streams.close()  # a blocked execute() returns outcome-unknown

    def _failed_call(self, execution: WorkerExecution, collector: OutputCollector, process_group: int,
                     began: float, error: grpc.RpcError, *, expired: bool) -> WorkerOutcome:
        code = error.code() if isinstance(error, grpc.Call) else None
        if code is grpc.StatusCode.UNAUTHENTICATED:
            return unsent_outcome(execution, began=began, message="the worker refused the lease token; nothing ran")
        if expired or code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return self._lost(execution, collector, process_group, began, FailureKind.WORKER_UNRESPONSIVE)
        return self._lost(execution, collector, process_group, began, FailureKind.WORKER_LOST)

    def _lost(self, execution: WorkerExecution, collector: OutputCollector, process_group: int, began: float,
              kind: FailureKind) -> WorkerOutcome:
        """The request was in flight and the worker can no longer say what happened: outcome unknown.

        The command's group is killed now (the worker can no longer do it), and so is the worker when it
        stopped answering: a worker we cannot trust to report is not given another request.
        """
        if process_group > 1:
            with self._lock:
                self._orphan_groups.add(process_group)
            kill_process_group(process_group)
        if kind is FailureKind.WORKER_UNRESPONSIVE or has_exited(self._launched.process) or self._lease_lost:
            with self._lock:
                self._lease_lost = True
            kill_process_group(self.pid)
        return unknown_outcome(execution, collector, kind=kind, began=began, process_group=process_group)


def _keep_lease(handle_ref: weakref.ref[WorkerHandle], quit_: threading.Event, wake: threading.Event,
                interval_s: float) -> None:
    """Heartbeat every ``interval_s`` and cancel overdue executions, waking for whichever comes first."""
    next_beat = time.monotonic() + interval_s
    while not quit_.is_set():
        handle = handle_ref()
        if handle is None:
            return
        now = time.monotonic()
        if now >= next_beat:
            if not handle._renew_or_lose_lease():
                return
            next_beat = time.monotonic() + interval_s
        at = handle._streams.watch(now, until=next_beat)
        del handle
        wake.wait(max(at - time.monotonic(), 0.0))
        wake.clear()


def _abandon(pid: int, streams: StreamPool) -> None:
    """The finalizer of a handle that was never stopped: kill the worker's group, close its streams."""
    kill_process_group(pid)
    streams.close()


def _wait_for_exit(launched: LaunchedWorker, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not has_exited(launched.process) and time.monotonic() < deadline:
        time.sleep(0.02)
