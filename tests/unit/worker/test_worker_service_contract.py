"""The worker's gRPC bindings come from ``worker.proto``'s descriptor and cover every RPC it declares.

No servicer is generated (its base answered every method with ``NotImplementedError``): the server
registers ``WorkerService``'s own methods by the descriptor's names, so a method the contract declares
and the worker lacks fails registration instead of falling back to a placeholder.
"""

from __future__ import annotations

import grpc
import pytest

from codeflux.worker.rpc import WORKER_SERVICE, WorkerStub, worker_handler
from codeflux.worker.service import WorkerService

DECLARED = ["Heartbeat", "Execute", "Cancel", "Shutdown"]


def test_the_contract_declares_the_four_rpcs_and_the_worker_defines_each() -> None:
    assert [method.name for method in WORKER_SERVICE.methods] == DECLARED
    for name in DECLARED:
        assert callable(getattr(WorkerService, name)), name


def test_a_missing_method_fails_registration() -> None:
    class Partial:
        def Heartbeat(self) -> None: ...

    with pytest.raises(AttributeError):
        worker_handler(Partial())


def test_the_stub_has_one_callable_of_the_declared_kind_per_rpc() -> None:
    channel = grpc.insecure_channel("unix:/nonexistent/codeflux-contract-test.sock")
    try:
        stub = WorkerStub(channel)
        assert isinstance(stub.Execute, grpc.StreamStreamMultiCallable)
        for name in ("Heartbeat", "Cancel", "Shutdown"):
            assert isinstance(getattr(stub, name), grpc.UnaryUnaryMultiCallable), name
    finally:
        channel.close()
