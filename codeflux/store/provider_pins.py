"""The provider choice each task was created with (``task_provider_pins``, migration 000018): written once in the
task's creation transaction, never changed; a task created before 000018 has no row."""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.providers import ChoiceSource
from codeflux.store.database import ReadView, Transaction

__all__ = ["ProviderPinRow", "insert_provider_pin", "read_provider_pin"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderPinRow:
    task_id: str
    provider: str
    cheap_model: str
    capable_model: str
    base_url: str
    uses_key: bool
    source: ChoiceSource
    pinned_at_us: int


def insert_provider_pin(tx: Transaction, row: ProviderPinRow) -> None:
    tx.execute(
        "INSERT INTO task_provider_pins (task_id, provider, cheap_model, capable_model, base_url, uses_key, source,"
        " pinned_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (row.task_id, row.provider, row.cheap_model, row.capable_model, row.base_url, int(row.uses_key),
         row.source.value, row.pinned_at_us),
    )


def read_provider_pin(view: ReadView, task_id: str) -> ProviderPinRow | None:
    found = view.query_one(
        "SELECT task_id, provider, cheap_model, capable_model, base_url, uses_key, source, pinned_at_us"
        " FROM task_provider_pins WHERE task_id = ?", (task_id,))
    if found is None:
        return None
    return ProviderPinRow(task_id=str(found[0]), provider=str(found[1]), cheap_model=str(found[2]),
                          capable_model=str(found[3]), base_url=str(found[4]), uses_key=bool(found[5]),
                          source=ChoiceSource(str(found[6])), pinned_at_us=int(found[7]))
