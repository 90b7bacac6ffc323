"""The loopback HTTP + WebSocket server: the HTTP policy, the upgrade gate and the envelope per connection.

Authentication is bound to the connection object: the upgrade gate (run in ``process_request``, before
the handshake) checks Host, Origin, the session cookie and the tab's page key
(:func:`codeflux.server.http.upgrade_refusal`), then the server's connection cap and upgrade rate (429),
and only then records *this connection object* as authenticated. The connection handler serves the
envelope only to a recorded connection; nothing downstream looks at a header. The method table the
browser reaches is guarded by :class:`~codeflux.server.confirmations.CardConfirmations`: decisions must
send back the value of the card they answer.
"""

from __future__ import annotations

import asyncio
import secrets
import weakref
from collections.abc import Iterable

from websockets.asyncio.server import Server, ServerConnection
from websockets.asyncio.server import serve as websockets_serve
from websockets.http11 import Request, Response

from codeflux.server.assets import StaticFiles
from codeflux.server.confirmations import CardConfirmations
from codeflux.server.envelope import SUBPROTOCOLS, EnvelopeConnection
from codeflux.server.http import (
    RequestHeadConnection,
    make_process_request,
    to_response,
    too_many,
    transport_logger,
    upgrade_refusal,
)
from codeflux.server.launch import LaunchTokens
from codeflux.server.limits import TransportLimits, UpgradeRate
from codeflux.services.registry import CallContext, MethodTable

__all__ = ["CLOSE_DROPPED", "WebSocketTransport", "bound_port"]

CLOSE_POLICY: int = 1008
CLOSE_DROPPED: int = 1012  # "service restart": the client reconnects and resumes


class WebSocketTransport:
    """One server's state: which connections are authenticated, the caps, and the method table."""

    def __init__(
        self,
        table: MethodTable,
        tokens: LaunchTokens,
        *,
        ui_name: str,
        confirmations: CardConfirmations | None = None,
        limits: TransportLimits | None = None,
        static: StaticFiles | None = None,
    ) -> None:
        """``ui_name``: the UI's host name (``cf-<label>.localhost``, or the loopback address with ``--ip-host``);
        every request must name it in ``Host``."""
        self._confirmations = confirmations or CardConfirmations()
        self._table = self._confirmations.guard(table)
        self._tokens = tokens
        self._ui_name = ui_name
        self._limits = limits or TransportLimits()
        self._static = static
        self._rate = UpgradeRate(self._limits.upgrades_per_minute)
        self._authenticated: weakref.WeakSet[ServerConnection] = weakref.WeakSet()
        self._open: set[ServerConnection] = set()
        # The idempotency scope: one per server, i.e. per launch session (every connection of it shares
        # the one session cookie), so a mutation retried after a reconnect is still recognised.
        self._scope = f"browser-{secrets.token_hex(8)}"

    @property
    def limits(self) -> TransportLimits:
        return self._limits

    @property
    def ui_name(self) -> str:
        return self._ui_name

    def _admit_upgrade(self, connection: ServerConnection, request: Request, ui_host: str) -> Response | None:
        raw = list(request.headers.raw_items())
        refusal = upgrade_refusal(request.method, request.path, raw, ui_host=ui_host, tokens=self._tokens)
        if refusal is not None:
            return to_response(refusal)
        host = ui_host
        if len(self._open) + len(self._pending()) >= self._limits.max_connections:
            return to_response(too_many(host, "codeflux already has as many browser connections as it allows."))
        if not self._rate.admit():
            return to_response(too_many(host, "codeflux refused a burst of reconnections."))
        self._authenticated.add(connection)
        return None

    def _pending(self) -> list[ServerConnection]:
        return [connection for connection in self._authenticated if connection not in self._open]

    async def handle(self, connection: ServerConnection) -> None:
        """The connection handler websockets runs after a successful handshake."""
        if connection not in self._authenticated:
            await connection.close(CLOSE_POLICY, "not authenticated")
            return
        subprotocol = connection.subprotocol
        if subprotocol not in SUBPROTOCOLS:
            await connection.close(CLOSE_POLICY, "no codeflux subprotocol")
            return
        self._open.add(connection)
        try:
            context = CallContext(transport="websocket", connection_id=self._scope)
            await EnvelopeConnection(
                connection, self._table, subprotocol=str(subprotocol), limits=self._limits, context=context
            ).run()
        finally:
            self._open.discard(connection)
            self._authenticated.discard(connection)

    def connections(self) -> Iterable[ServerConnection]:
        return tuple(self._open)

    async def drop_connections(self, *, code: int = CLOSE_DROPPED) -> int:
        """Close every open WebSocket connection (1012 by default); returns how many. The reconnect test
        hook, and what a clean shutdown does (with 1001)."""
        connections = tuple(self._open)
        await asyncio.gather(
            *(connection.close(code, "the server closed the connection") for connection in connections),
            return_exceptions=True,
        )
        return len(connections)

    def serve(self, host: str, port: int) -> Server:
        """The websockets server (an async context manager) for ``host:port`` (0 picks a free port)."""
        return websockets_serve(
            self.handle,
            host,
            port,
            process_request=make_process_request(self._tokens, ui_name=self._ui_name, upgrade=self._admit_upgrade,
                                                 static=self._static),
            subprotocols=[*SUBPROTOCOLS],  # type: ignore[list-item]
            max_size=self._limits.max_message_bytes,
            max_queue=16,
            write_limit=self._limits.write_buffer_bytes,
            ping_interval=self._limits.ping_interval,
            ping_timeout=self._limits.ping_timeout,
            close_timeout=self._limits.close_timeout,
            compression=None,
            server_header=None,
            logger=transport_logger(),
            create_connection=RequestHeadConnection,
        )


def bound_port(server: Server) -> int:
    for sock in server.sockets:
        return int(sock.getsockname()[1])
    raise RuntimeError("the server has no listening socket")

