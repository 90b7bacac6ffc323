"""The floor under `bench authority`: the worker's gRPC service with none of the product's work in it.

`python tests/bench/_minimal_worker.py SOCKET` serves `codeflux.v1.Worker/Execute` on a Unix socket
the way the real worker does (a synchronous `grpc.server` with a thread pool, one long-lived stream
carrying one request at a time: `started`, then `result`), but each request only
starts its `argv` with piped output in a new session and waits for it. No token, no validation, no
executable pin, no environment screening, no process-group kill or sweep, no redaction: this is a
benchmark instrument that measures what the transport and a piped spawn cost by themselves, never a
worker. It prints `ready` once it serves and stops when its stdin closes.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc

from codeflux.api.v1 import worker_pb2
from codeflux.worker.rpc import WORKER_SERVICE


class MinimalWorker:
    def Execute(
        self, requests: Iterator[worker_pb2.ExecuteRequest], context: grpc.ServicerContext
    ) -> Iterator[worker_pb2.ExecuteEvent]:
        for request in requests:
            argv = next(list(argument.argv.items) for argument in request.arguments if argument.name == "argv")
            process = subprocess.Popen(argv, executable=request.executable_path, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            yield worker_pb2.ExecuteEvent(started=worker_pb2.ExecutionStarted(
                request_id=request.request_id, process_group_id=process.pid))
            process.communicate()
            yield worker_pb2.ExecuteEvent(result=worker_pb2.ExecutionResult(
                request_id=request.request_id, state=worker_pb2.RESULT_STATE_SUCCEEDED,
                exit_code=process.returncode))


def main() -> int:
    server = grpc.server(ThreadPoolExecutor(max_workers=16))
    execute = grpc.stream_stream_rpc_method_handler(MinimalWorker().Execute,
                                                   request_deserializer=worker_pb2.ExecuteRequest.FromString,
                                                   response_serializer=worker_pb2.ExecuteEvent.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(WORKER_SERVICE.full_name,
                                                                          {"Execute": execute}),))
    server.add_insecure_port(f"unix:{sys.argv[1]}")
    server.start()
    print("ready", flush=True)
    stopped = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stopped.set()), daemon=True).start()
    stopped.wait()
    server.stop(grace=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
