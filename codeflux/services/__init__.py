"""The product's service implementations behind ``api/codeflux/v1/product.proto``.

One implementation per RPC, registered in a :class:`~codeflux.services.registry.MethodTable` that both
transports dispatch to: the browser's WebSocket envelope and the gRPC server on the Unix socket
(:mod:`codeflux.server`). Handlers are thin: they validate the request, call the coordinator and turn
its records into protobuf views. May import the coordinator and the lower floors (never ``server`` or
``cli``); from ``codeflux.store`` only ``database``, ``location`` and ``opening`` — the rest of the store is
reached through coordinator functions.
"""
