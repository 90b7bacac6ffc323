"""The ``codeflux.v1.Worker`` service's gRPC bindings, built from its descriptor in ``worker.proto``.

Both sides are derived from the one service descriptor protoc generated (``worker_pb2``): the method
paths, which side streams, and the request and reply message types. :func:`worker_handler` serves an
implementation that must define every declared method (registration fails on a missing one, so no RPC
can fall back to a placeholder), and :class:`WorkerStub` is the client the coordinator calls it with.
protoc's ``worker_pb2_grpc`` module is not generated: its servicer base answered every method with
``NotImplementedError``, which only a test kept unreachable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import grpc
from google.protobuf.descriptor import Descriptor, MethodDescriptor

from codeflux.api.v1 import worker_pb2

__all__ = ["HANDLER_FACTORIES", "WORKER_SERVICE", "WorkerStub", "worker_handler"]

WORKER_SERVICE: Final = worker_pb2.DESCRIPTOR.services_by_name["Worker"]

HANDLER_FACTORIES: Final[dict[tuple[bool, bool], Callable[..., grpc.RpcMethodHandler]]] = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}
"""The handler factory for (request streaming, response streaming)."""

_CALLABLES: Final = {
    (False, False): "unary_unary",
    (False, True): "unary_stream",
    (True, False): "stream_unary",
    (True, True): "stream_stream",
}


def _message(descriptor: Descriptor) -> Any:
    return getattr(worker_pb2, descriptor.name)


def _streaming(method: MethodDescriptor) -> tuple[bool, bool]:
    return method.client_streaming, method.server_streaming


def worker_handler(implementation: object) -> grpc.GenericRpcHandler:
    """Serve ``implementation``'s methods named as the service declares them (``Heartbeat``, ``Execute``…).

    Raises ``AttributeError`` if it lacks one."""
    by_name = {
        method.name: HANDLER_FACTORIES[_streaming(method)](
            getattr(implementation, method.name),
            request_deserializer=_message(method.input_type).FromString,
            response_serializer=_message(method.output_type).SerializeToString,
        )
        for method in WORKER_SERVICE.methods
    }
    return grpc.method_handlers_generic_handler(WORKER_SERVICE.full_name, by_name)


class WorkerStub:
    """One multi-callable per declared method, on ``channel`` (``stub.Execute(requests, metadata=…)``)."""

    Heartbeat: Any
    Execute: Any
    Cancel: Any
    Shutdown: Any

    def __init__(self, channel: grpc.Channel) -> None:
        for method in WORKER_SERVICE.methods:
            factory = getattr(channel, _CALLABLES[_streaming(method)])
            setattr(self, method.name, factory(
                f"/{WORKER_SERVICE.full_name}/{method.name}",
                request_serializer=_message(method.input_type).SerializeToString,
                response_deserializer=_message(method.output_type).FromString,
            ))
