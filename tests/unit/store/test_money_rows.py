"""Budget ledger entries leave the store with their kind as :class:`LedgerKind`; an unknown kind is refused."""

from __future__ import annotations

import pytest

from codeflux.domain.budget import LedgerKind
from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.money import USD
from codeflux.store import money as rows

TASK = TaskId.from_entropy(bytes(16))
# e.id, e.task_id, e.request_id, e.kind, e.amount_minor, e.currency, e.reason, e.recorded_at_us, a.id
STORED = (7, TASK.value, "mreq_1", "unknown-charge", None, "USD", "no usage reported", 5, None)


def test_an_entry_decodes_to_its_kind_amount_and_acknowledgement() -> None:
    entry = rows._entry(STORED)
    assert entry.kind is LedgerKind.UNKNOWN_CHARGE and entry.amount_minor is None and entry.currency == USD
    assert not entry.acknowledged and rows._entry((*STORED[:8], 1)).acknowledged


def test_an_unknown_ledger_kind_is_refused() -> None:
    with pytest.raises(StoredValueUnknownError) as refused:
        rows._entry((*STORED[:3], "refund", *STORED[4:]))
    assert refused.value.kind == "budget ledger entry kind"
