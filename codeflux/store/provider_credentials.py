"""References to provider keys held in the OS credential store. The key itself never reaches SQLite."""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.events import ProviderCredentialDeleted, ProviderCredentialStored
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import SYSTEM_SESSION_ID, append_event

__all__ = [
    "ProviderCredentialRow",
    "delete_provider_credential_reference",
    "list_provider_credential_references",
    "record_provider_credential_reference",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCredentialRow:
    provider: str
    credential_ref: str
    revision: int
    updated_at_us: int


def record_provider_credential_reference(db: Database, *, provider: str, credential_ref: str) -> bool:
    """Record (or rotate) the reference; returns True when one already existed (an update)."""

    def record(tx: Transaction) -> bool:
        at = now_us()
        existing = tx.query_one("SELECT revision FROM provider_credentials WHERE provider = ?", (provider,))
        if existing is None:
            tx.execute(
                "INSERT INTO provider_credentials (provider, credential_ref, revision, created_at_us, updated_at_us)"
                " VALUES (?, ?, 0, ?, ?)",
                (provider, credential_ref, at, at),
            )
        else:
            tx.execute(
                "UPDATE provider_credentials SET revision = revision + 1, updated_at_us = max(updated_at_us, ?)"
                " WHERE provider = ?",
                (at, provider),
            )
        append_event(
            tx, session_id=SYSTEM_SESSION_ID,
            event=ProviderCredentialStored(provider=provider, rotated=existing is not None),
        )
        return existing is not None

    return db.write(record)


def delete_provider_credential_reference(db: Database, *, provider: str) -> bool:
    """Forget the reference; idempotent. Returns True when a reference was removed."""

    def delete(tx: Transaction) -> bool:
        tx.execute("DELETE FROM provider_credentials WHERE provider = ?", (provider,))
        removed = tx.changes() > 0
        if removed:
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=ProviderCredentialDeleted(provider=provider))
        return removed

    return db.write(delete)


def list_provider_credential_references(db: Database) -> list[ProviderCredentialRow]:
    rows = db.read(
        lambda view: view.query_all(
            "SELECT provider, credential_ref, revision, updated_at_us FROM provider_credentials ORDER BY provider"
        )
    )
    return [
        ProviderCredentialRow(provider=r[0], credential_ref=r[1], revision=int(r[2]), updated_at_us=int(r[3]))
        for r in rows
    ]
