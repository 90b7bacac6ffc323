"""Idempotency records: an identical retry returns the original result; a different request under the
same key is a conflict. The lookup, the effect and the record commit in the caller's transaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping

from codeflux.domain.errors import IdempotencyConflictError, UsageError
from codeflux.store.database import Transaction, now_us

__all__ = ["fingerprint_request", "run_idempotent"]

JsonObject = Mapping[str, object]


def fingerprint_request(request: JsonObject) -> str:
    canonical = json.dumps(dict(request), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def run_idempotent(
    tx: Transaction,
    *,
    scope: str,
    key: str,
    request: JsonObject,
    work: Callable[[], JsonObject],
) -> JsonObject:
    """Run ``work`` once per (scope, key); return the stored result for an identical retry."""
    if not 1 <= len(key) <= 255:
        raise UsageError("an idempotency key must be 1 to 255 characters")
    digest = fingerprint_request(request)
    row = tx.query_one(
        "SELECT request_sha256, result_json FROM idempotency_records WHERE scope = ? AND key = ?", (scope, key)
    )
    if row is not None:
        if row[0] != digest:
            raise IdempotencyConflictError(scope=scope, key=key)
        stored: JsonObject = json.loads(row[1])
        return stored
    result = work()
    tx.execute(
        "INSERT INTO idempotency_records (scope, key, request_sha256, result_json, created_at_us)"
        " VALUES (?, ?, ?, ?, ?)",
        (scope, key, digest, json.dumps(dict(result), sort_keys=True, separators=(",", ":")), now_us()),
    )
    return result
