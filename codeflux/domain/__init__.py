"""Pure types and rules: ids, errors, money, operation identity, capabilities, state machines, stages, and
the closed registry of journal event kinds and their typed payloads (``events``).

May import: the standard library only. No apsw, pygit2, grpc, keyring, websockets, httpx, structlog,
pydantic or any other package, and no I/O; clocks and randomness are passed in. A unit test enforces it.
"""
