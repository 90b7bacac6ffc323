"""The coordinator's long-lived ``Execute`` streams to one worker, and the deadlines of what runs on them.

A new gRPC call per request costs about as much as the whole rest of the transport (call set-up on both
sides), so a :class:`~codeflux.worker.client.handle.WorkerHandle` keeps its ``Execute`` streams open and
sends one request at a time on each: a request :meth:`StreamPool.board`\\ s an idle stream (or opens a
new one, so concurrent requests run side by side) and :meth:`StreamPool.land`\\ s it when it is done.
Only a stream whose request ended with a result goes back to the pool (at most :data:`IDLE_STREAMS`);
any other ending — a lost worker, an overdue result, a callback that raised — cancels the stream, and
the worker cancels what was running on it (its process group is killed).

A stream has no per-request gRPC deadline, so the pool keeps each request's own: the handle's lease
thread calls :meth:`StreamPool.watch`, which cancels every overdue stream (its ``execute`` then reports
``worker-unresponsive``) and says when to wake next; boarding a request whose deadline comes before
that wake-up calls ``wake``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Final

from codeflux.api.v1 import worker_pb2
from codeflux.worker.rpc import WorkerStub

__all__ = ["IDLE_STREAMS", "ExecuteStream", "Flight", "StreamPool"]

IDLE_STREAMS: Final = 2
"""How many finished streams the pool keeps open for the next requests."""


class ExecuteStream:
    """One long-lived ``Execute`` call: requests are queued for gRPC's sender thread; the events are read
    by iterating :attr:`call` on the caller's own thread, one request at a time."""

    def __init__(self, stub: WorkerStub, metadata: tuple[tuple[str, str], ...]) -> None:
        self._requests: queue.SimpleQueue[worker_pb2.ExecuteRequest | None] = queue.SimpleQueue()
        self.call = stub.Execute(iter(self._requests.get, None), metadata=metadata)

    def send(self, request: worker_pb2.ExecuteRequest) -> None:
        self._requests.put(request)

    def usable(self) -> bool:
        return not self.call.done()

    def close(self) -> None:
        """End the stream (idempotent); a request still running on it is cancelled by the worker."""
        self._requests.put(None)  # ends the sender thread's iteration
        self.call.cancel()


class Flight:
    """A request on its way through ``stream``; ``expired`` once its deadline passed without a result."""

    __slots__ = ("deadline", "expired", "stream")

    def __init__(self, stream: ExecuteStream, deadline: float) -> None:
        self.stream = stream
        self.deadline = deadline
        self.expired = False


class StreamPool:
    """The streams of one worker handle: the idle ones, and the in-flight ones by request id (thread-safe)."""

    def __init__(self, open_stream: Callable[[], ExecuteStream], *, wake: Callable[[], None]) -> None:
        self._open = open_stream
        self._wake = wake
        self._lock = threading.Lock()
        self._idle: list[ExecuteStream] = []
        self._flights: dict[str, Flight] = {}
        self._closed = False
        self._planned_wake = 0.0

    def board(self, key: str, *, deadline: float) -> Flight | None:
        """A stream registered for request ``key`` (reused or new); None once the pool is closed."""
        with self._lock:
            if self._closed:
                return None
            stream = None
            while self._idle and stream is None:
                candidate = self._idle.pop()
                if candidate.usable():
                    stream = candidate
                else:
                    candidate.close()
            flight = Flight(stream or self._open(), deadline)
            self._flights[key] = flight
            wake = deadline < self._planned_wake
        if wake:
            self._wake()
        return flight

    def land(self, key: str, flight: Flight, *, finished: bool) -> None:
        """Unregister ``key``; its stream goes back to the pool only if the request ended with a result."""
        with self._lock:
            self._flights.pop(key, None)
            keep = finished and not (self._closed or flight.expired) and len(self._idle) < IDLE_STREAMS
            if keep:
                self._idle.append(flight.stream)
        if not keep:
            flight.stream.close()

    def watch(self, now: float, *, until: float) -> float:
        """Cancel the streams of overdue requests; when to wake next: ``until`` or the earliest deadline
        left, whichever comes first (a later :meth:`board` with an earlier deadline calls ``wake``)."""
        overdue = []
        with self._lock:
            at = until
            for flight in self._flights.values():
                if flight.expired:
                    continue
                if flight.deadline <= now:
                    flight.expired = True
                    overdue.append(flight.stream)
                else:
                    at = min(at, flight.deadline)
            self._planned_wake = at
        for stream in overdue:
            stream.call.cancel()
        return at

    def close(self, *, in_flight: bool = True) -> None:
        """Board no more and close the idle streams — and, unless ``in_flight`` is False, the in-flight
        ones too (a blocked ``execute`` sees its call cancelled). Idempotent.

        An open stream keeps the worker's server from stopping until its grace period ends, so a handle
        that shuts the worker down closes the idle streams first, and the in-flight ones only after the
        worker had its chance to answer them (``cancelled``)."""
        with self._lock:
            self._closed = True
            streams = list(self._idle)
            self._idle.clear()
            if in_flight:
                streams += [flight.stream for flight in self._flights.values()]
        for stream in streams:
            stream.close()
