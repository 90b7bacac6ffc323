"""The long-lived ``Execute`` stream, against real worker processes: many requests per stream, the lease
token on every request, a stream that goes away mid-command, streams reused by the handle, and the
coordinator's own deadline on a stream that never answers."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from codeflux.api.v1 import worker_pb2
from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.worker.client import handle as workers
from codeflux.worker.client.handle import WorkerHandle
from codeflux.worker.client.launch import LaunchedWorker
from codeflux.worker.client.streams import IDLE_STREAMS
from codeflux.worker.client.wire import encode_execution
from codeflux.worker.rpc import WorkerStub
from codeflux.worker.server import LEASE_TOKEN_METADATA
from tests.fixtures.workers import (
    TASK,
    execute_on_one_stream,
    execution_of,
    live_processes_in_group,
    raw_worker,
    running_worker,
    wait_until_group_is_gone,
)
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


@pytest.fixture
def raw(task: TaskWorktree, tmp_path: Path) -> Iterator[LaunchedWorker]:
    with raw_worker(task.worktree, tmp_path / "raw") as launched:
        yield launched


@pytest.fixture
def worker(task: TaskWorktree, tmp_path: Path) -> Iterator[WorkerHandle]:
    with running_worker(task.worktree, tmp_path / "state", base_commit=task.base) as handle:
        yield handle


def command(raw: LaunchedWorker, argv: list[str], *, token: str | None = None) -> worker_pb2.ExecuteRequest:
    return encode_execution(execution_of("run_command", {"argv": argv}),
                            lease_token=raw.lease_token if token is None else token)


def test_one_stream_carries_many_requests_each_answered_by_one_started_and_one_result(
    raw: LaunchedWorker, task: TaskWorktree
) -> None:
    requests = [command(raw, ["sh", "-c", f"echo run {n}; touch ran-{n}"]) for n in range(3)]
    events = execute_on_one_stream(raw, *requests)
    kinds = [event.WhichOneof("event") for event in events]
    assert [kind for kind in kinds if kind != "output"] == ["started", "result"] * 3
    results = [event.result for event in events if event.WhichOneof("event") == "result"]
    assert [result.request_id for result in results] == [request.request_id for request in requests]
    assert all(result.state == worker_pb2.RESULT_STATE_SUCCEEDED for result in results)
    assert sorted(path.name for path in task.worktree.glob("ran-*")) == ["ran-0", "ran-1", "ran-2"]


@pytest.mark.security
@pytest.mark.parametrize("token", ["", "x" * 43, "wrong"])
def test_a_request_without_the_lease_token_ends_the_stream_before_it_runs(raw: LaunchedWorker, task: TaskWorktree,
                                                                          token: str) -> None:
    # The call's metadata is right; the second request on the stream carries a wrong token.
    altered = raw.lease_token[:-1] + ("B" if raw.lease_token[-1] != "B" else "C")
    presented = altered if token == "wrong" else token
    good, bad = command(raw, ["touch", "first"]), command(raw, ["touch", "second"], token=presented)
    channel = grpc.insecure_channel(f"unix:{raw.socket_path}")
    with channel:
        stub = WorkerStub(channel)
        call = stub.Execute(iter([good, bad]), metadata=((LEASE_TOKEN_METADATA, raw.lease_token),), timeout=30)
        events = []
        with pytest.raises(grpc.RpcError) as refused:
            for event in call:
                events.append(event)
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert events[-1].result.state == worker_pb2.RESULT_STATE_SUCCEEDED
    assert (task.worktree / "first").exists() and not (task.worktree / "second").exists()


@pytest.mark.security
def test_a_stream_cancelled_mid_command_kills_the_command(raw: LaunchedWorker) -> None:
    channel = grpc.insecure_channel(f"unix:{raw.socket_path}")
    with channel:
        stub = WorkerStub(channel)
        requests = iter([command(raw, ["sleep", "300"])])
        call = stub.Execute(requests, metadata=((LEASE_TOKEN_METADATA, raw.lease_token),), timeout=60)
        started = next(call)
        group = started.started.process_group_id
        assert group > 1 and live_processes_in_group(group)
        call.cancel()
        assert wait_until_group_is_gone(group) == []


def test_the_handle_reuses_a_finished_stream_and_drops_one_that_ended_without_a_result(
    worker: WorkerHandle
) -> None:
    assert worker.execute(execution_of("run_command", {"argv": ["true"]})).state is ExecutionState.SUCCEEDED
    pool = worker._streams._idle
    assert len(pool) == 1
    kept = pool[0]
    assert worker.execute(execution_of("read_file", {"path": "README.md"})).state is ExecutionState.SUCCEEDED
    assert pool == [kept]

    def refuse(_group: int) -> None:
        raise RuntimeError

    with pytest.raises(RuntimeError):
        worker.execute(execution_of("run_command", {"argv": ["sleep", "300"]}), on_started=refuse)
    assert pool == [] and not kept.usable()
    assert worker.execute(execution_of("run_command", {"argv": ["true"]})).state is ExecutionState.SUCCEEDED
    assert len(pool) == 1 and pool[0] is not kept


def test_concurrent_requests_open_streams_and_the_pool_keeps_only_a_few(worker: WorkerHandle) -> None:
    count = IDLE_STREAMS + 2
    barrier = threading.Barrier(count)
    states: list[ExecutionState] = []

    def run() -> None:
        barrier.wait()
        states.append(worker.execute(execution_of("run_command", {"argv": ["sleep", "0.3"]})).state)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert states == [ExecutionState.SUCCEEDED] * count
    assert len(worker._streams._idle) <= IDLE_STREAMS


@pytest.mark.security
def test_a_worker_that_never_answers_is_unresponsive_past_the_deadline_and_everything_is_killed(
    task: TaskWorktree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "RESULT_GRACE_S", 0.5)
    handle = WorkerHandle.start(task_id=TASK, worktree=task.worktree, state_dir=tmp_path / "state")
    try:
        def freeze(group: int) -> None:
            os.kill(handle.pid, signal.SIGSTOP)  # the worker, not the command: it keeps running

        outcome = handle.execute(execution_of("run_command", {"argv": ["sleep", "300"]}, timeout_ms=300),
                                 on_started=freeze)
        assert (outcome.state, outcome.failure_kind) == (ExecutionState.OUTCOME_UNKNOWN,
                                                         FailureKind.WORKER_UNRESPONSIVE)
        assert outcome.process_group_id > 1
        assert wait_until_group_is_gone(outcome.process_group_id) == []
        assert wait_until_group_is_gone(handle.pid) == []
        assert not handle.is_alive()
    finally:
        handle.stop()
