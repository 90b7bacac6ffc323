"""How a command reaches the product: one ``call(method, request, reply_type)``, two channels.

Every command that reads or changes tasks, budgets or prices calls the product's method table — the same
service implementations the browser and the gRPC socket reach. :func:`open_channel` (called once, by
:mod:`codeflux.cli.main`) chooses the channel:

* a coordinator serves the data directory (``codeflux start`` holds its instance lock): the call goes over
  its Unix socket (0600 in a 0700 directory), because that process owns the tasks it runs — their
  conversations, workers and approvals live there — and nothing may change the database behind its back;
* otherwise an in-process channel: the database is opened here, startup recovery runs once (interrupted
  work is marked, never resumed), and the method table is built over it. Requests and replies are
  serialized on the way, exactly as over the socket, so a command prints the same facts either way.

What a command needs is declared by the command (:class:`ChannelUse`); errors keep their codeflux class on
both channels, so the exit code does not depend on the channel either.

Each channel imports what it needs when it is opened — grpc for the socket, the coordinator and the method
table in process — so a command that reaches a running coordinator (``codeflux budget show`` while ``start``
runs) does not load the whole product first.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from google.protobuf.message import Message

import codeflux
from codeflux.api.v1 import common_pb2
from codeflux.cli.context import CliContext
from codeflux.coordinator.instance import coordinator_socket_path, running_coordinator
from codeflux.domain.errors import DatabaseMissingError, UsageError

if TYPE_CHECKING:  # the coordinator, the services and grpc are imported by the channel that needs them
    import grpc

    from codeflux.coordinator.spending.gateway import ModelGateway
    from codeflux.coordinator.spending.model_access import ModelAccess
    from codeflux.services.registry import MethodTable
    from codeflux.store.database import Database
    from codeflux.store.location import DataLocation

__all__ = ["Channel", "ChannelNeeds", "ChannelUse", "control", "open_channel", "startup_recovery"]

M = TypeVar("M", bound=Message)
_PACKAGE: Final = "/codeflux.v1."


class ChannelUse(Enum):
    """What a command needs from :func:`open_channel` when no coordinator runs."""

    COORDINATOR_ONLY = "coordinator-only"  # only a running coordinator (else the command works on its own)
    OPTIONAL = "optional"  # the database if it exists; None when there is none (nothing is created)
    EXISTING = "existing"  # the database must exist
    CREATE = "create"  # create and migrate the database when needed


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelNeeds:
    """A command's declaration: the channel it needs, and the model access an in-process channel uses
    (a command that drafts plans passes its provider flags; the others make no model call)."""

    use: ChannelUse
    models: Callable[[Database], ModelAccess] | None = None


class Channel(Protocol):
    """One way to the method table. ``via`` names the running coordinator, or is None in process."""

    @property
    def via(self) -> str | None: ...

    def call(self, method: str, request: Message, reply_type: type[M], *, timeout: float = 60.0) -> M:
        """Call ``method`` ("TaskService/GetTask") and return its reply; errors are codeflux errors. ``timeout``
        bounds the wait on the coordinator's socket (a call in process runs to its end)."""
        ...


def control() -> common_pb2.MutationControl:
    """A fresh mutation control (a new idempotency key per command run)."""
    return common_pb2.MutationControl(idempotency_key=f"cli-{os.urandom(16).hex()}")


class _SocketChannel:
    def __init__(self, channel: grpc.Channel, holder: str) -> None:
        self._channel, self._holder = channel, holder

    @property
    def via(self) -> str | None:
        return self._holder

    def call(self, method: str, request: Message, reply_type: type[M], *, timeout: float = 60.0) -> M:
        from codeflux.server.client import call_unary  # noqa: PLC0415 (loaded with the socket channel)

        return call_unary(self._channel, _PACKAGE + method, request, reply_type, timeout=timeout)


class _InProcessChannel:
    def __init__(self, table: MethodTable) -> None:
        from codeflux.services.registry import CallContext  # noqa: PLC0415 (loaded with the method table)

        self._table = table
        self._context = CallContext(transport="in-process", connection_id=f"cli-{os.getpid()}-{os.urandom(8).hex()}")

    @property
    def via(self) -> str | None:
        return None

    def call(self, method: str, request: Message, reply_type: type[M], *, timeout: float = 60.0) -> M:
        from codeflux.services.registry import UnaryMethod  # noqa: PLC0415 (loaded with the method table)

        found = self._table.get(_PACKAGE + method)
        if not isinstance(found, UnaryMethod):
            raise UsageError(f"{method} is not a call of this codeflux")
        reply = found.handler(self._context, found.request_type.FromString(request.SerializeToString()))
        decoded: M = reply_type.FromString(reply.SerializeToString())
        return decoded


class _NoModelCalls:
    """The model access of a command that makes no model call: asking for a gateway is a usage error."""

    label: Final = "none (this command makes no model call)"
    scripted: Final = False

    def gateway(self, phases: Sequence[str]) -> ModelGateway:
        raise UsageError("this command makes no model call; `codeflux task plan` takes the provider flags")

    def use_scripted_demo(self) -> None:
        raise UsageError("this command makes no model call")


def startup_recovery(ctx: CliContext, db: Database, location: DataLocation) -> None:
    """What a command that works on tasks in its own process does first (:func:`recover_interrupted`), saying
    on stderr how many tasks it found interrupted."""
    from codeflux.coordinator.tasks.recovery import recover_interrupted  # noqa: PLC0415 (see the imports)

    found = recover_interrupted(db, location)
    for line in () if found is None else (*found.landings, *found.cleanups):
        ctx.warn(line)
    if found is not None and found.tasks:
        ctx.warn(f"{len(found.tasks)} interrupted task(s) now need recovery: `codeflux task recovery`")
    if found is not None and found.store_damaged:
        ctx.warn(f"the database lost committed data (a damaged write-ahead log): what {len(found.store_damaged)} "
                 "open task(s) did since is unknown — `codeflux task recovery`")


@contextlib.contextmanager
def open_channel(ctx: CliContext, needs: ChannelNeeds) -> Iterator[Channel | None]:
    """The channel for one command run (see the module docstring); None when the command works on its own
    (``COORDINATOR_ONLY`` without a coordinator, ``OPTIONAL`` without a database)."""
    location = ctx.location()
    holder = running_coordinator(location)
    if holder is not None:
        from codeflux.server.client import unix_channel  # noqa: PLC0415 (grpc, for the socket channel only)

        with unix_channel(coordinator_socket_path(location)) as channel:
            yield _SocketChannel(channel, holder)
        return
    if needs.use is ChannelUse.COORDINATOR_ONLY:
        yield None
        return
    from codeflux.services.app import CoordinatorApp  # noqa: PLC0415 (the whole product, in this process only)
    from codeflux.services.methods import build_method_table, shutdown_runs  # noqa: PLC0415
    from codeflux.store.opening import open_store  # noqa: PLC0415

    creating = needs.use is ChannelUse.CREATE
    try:
        db = open_store(location, create=creating, migrate=creating)
    except DatabaseMissingError:
        if needs.use is ChannelUse.OPTIONAL:
            yield None
            return
        raise
    try:
        models: ModelAccess = _NoModelCalls() if needs.models is None else needs.models(db)

        def stop_requested() -> str | None:  # read when asked: the command sets it while it drafts
            return ctx.stop_requested()

        app = CoordinatorApp(db=db, location=location, models=models, version=codeflux.__version__,
                             stop_requested=stop_requested)
        startup_recovery(ctx, db, location)
        table = build_method_table(app)
        try:
            yield _InProcessChannel(table)
        finally:
            shutdown_runs(app)
    finally:
        db.close()
