"""Compare-and-set on aggregate revisions. Table and key column come from a closed list, never input."""

from __future__ import annotations

from codeflux.domain.errors import StaleRevisionError
from codeflux.store.database import Transaction, now_us

__all__ = ["REVISIONED_TABLES", "compare_and_set_revision"]

# table -> (key column, entity kind for messages)
REVISIONED_TABLES: dict[str, tuple[str, str]] = {
    "settings": ("key", "setting"),
    "provider_credentials": ("provider", "provider credential"),
}


def compare_and_set_revision(tx: Transaction, *, table: str, key: str, expected: int) -> int:
    """Advance the aggregate's revision from ``expected`` to ``expected + 1`` or raise StaleRevisionError."""
    if table not in REVISIONED_TABLES:
        raise ValueError(f"{table} is not a revisioned table")
    column, kind = REVISIONED_TABLES[table]
    rows = tx.execute(
        f"UPDATE {table} SET revision = revision + 1, updated_at_us = max(updated_at_us, ?)"  # noqa: S608
        f" WHERE {column} = ? AND revision = ? RETURNING revision",
        (now_us(), key, expected),
    )
    if rows:
        return int(rows[0][0])
    current = tx.query_one(f"SELECT revision FROM {table} WHERE {column} = ?", (key,))  # noqa: S608
    actual = None if current is None else int(current[0])
    raise StaleRevisionError(kind=kind, entity_id=key, expected=expected, actual=actual)
