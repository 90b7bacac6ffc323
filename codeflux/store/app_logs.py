"""Application log records in SQLite, kept apart from evidence and events.

Records arrive already redacted by the logging pipeline. Purging deletes from ``app_logs`` only and
records the purge as an event in the system journal (counts only), in the same transaction.
"""

from __future__ import annotations

from codeflux.domain.events import LogsPurged
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event

__all__ = ["LOG_LEVELS", "append_app_log", "count_app_logs", "purge_app_logs"]

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def append_app_log(db: Database, *, level: str, event: str, fields_json: str, at_us: int,
                   busy_timeout_ms: int | None = None) -> int:
    """Insert one record and return its id; ``busy_timeout_ms`` bounds the wait for the write lock
    (StoreBusyError after it)."""
    if level not in LOG_LEVELS:
        level = "info"
    rows = db.write(
        lambda tx: tx.execute(
            "INSERT INTO app_logs (at_us, level, event, fields_json) VALUES (?, ?, ?, ?) RETURNING id",
            (at_us, level, event[:200] or "log", fields_json),
        ),
        busy_timeout_ms=busy_timeout_ms,
    )
    return int(rows[0][0])


def count_app_logs(db: Database) -> int:
    return db.read(lambda view: int(view.query_all("SELECT count(*) FROM app_logs")[0][0]))


def purge_app_logs(db: Database, *, before_us: int | None) -> int:
    """Delete application log rows (all, or those older than ``before_us``); returns how many."""

    def purge(tx: Transaction) -> int:
        if before_us is None:
            tx.execute("DELETE FROM app_logs")
        else:
            tx.execute("DELETE FROM app_logs WHERE at_us < ?", (before_us,))
        deleted = tx.changes()
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=LogsPurged(deleted=deleted, before_us=before_us))
        return deleted

    return db.write(purge)
