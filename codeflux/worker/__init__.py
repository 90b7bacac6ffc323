"""The credential-free worker process (`python -m codeflux.worker`) and the tools it executes.

Owns: the worker's startup, its gRPC ``Worker`` service on a 0600 Unix socket (every call checked
against the per-lease token in constant time), its lease watchdog, the one symlink-safe worktree path
resolver (:mod:`codeflux.worker.paths`, also used by the coordinator), the allow-listed environment
(:mod:`codeflux.worker.environment`), child process groups (killed on every exit path), and one module
per tool family under :mod:`codeflux.worker.tools`.

A worker executes requests the coordinator has already authorized; it never decides authority and holds
no credential. :mod:`codeflux.worker.client` is the coordinator's half of the link (it starts workers and
talks to them); nothing else under ``worker/`` imports it (a test enforces it). May import:
codeflux.domain, codeflux.api, codeflux.redact, grpc, google.protobuf and the standard library — never
credentials, store, providers or keyring (a unit test enforces it).
"""
