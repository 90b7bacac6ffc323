"""Stored text becomes a member of its vocabulary or a typed error: never a neighbour, never a bare string."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoreCorruptError, StoredValueUnknownError
from codeflux.domain.tasks import TaskState
from codeflux.store.decoding import decode_choice, decode_optional_choice


def test_a_known_value_decodes_to_its_member() -> None:
    assert decode_choice(TaskState, "awaiting-review", kind="task state") is TaskState.AWAITING_REVIEW
    assert decode_optional_choice(TaskState, None, kind="task state") is None


@pytest.mark.parametrize("value", ["Awaiting-Review", "awaiting_review", "", "AWAITING_REVIEW", " paused"])
def test_an_unknown_value_is_refused_with_its_kind(value: str) -> None:
    with pytest.raises(StoredValueUnknownError) as refused:
        decode_choice(TaskState, value, kind="task state")
    assert refused.value.kind == "task state" and refused.value.value == value
    assert isinstance(refused.value, StoreCorruptError)  # exit 1 and `integrity-check` advice, like corruption
    assert "codeflux integrity-check" in str(refused.value)
