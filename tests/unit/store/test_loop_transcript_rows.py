"""Loop messages leave the store with their role as :class:`Role`; an unknown role is refused; reasoning parts
keep what their provider needs back (an OpenAI reasoning item its id)."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.models import Message, ReasoningPart, Role, TextPart
from codeflux.store import loop_transcripts as rows

TASK = TaskId.from_entropy(bytes(16))
PARTS = rows.message_to_json(Message(role=Role.ASSISTANT, parts=(TextPart(text="done"),)))
# conversation_id, sequence, task_id, attempt, role, turn_key, parts_json, steps_done_json, redacted, recorded_at_us
STORED = (1, 2, TASK.value, 1, "assistant", None, PARTS, "[1]", 0, 5)


def test_a_message_decodes_with_its_role() -> None:
    row = rows._message(STORED)
    assert row.message.role is Role.ASSISTANT and row.steps_done == (1,)


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(StoredValueUnknownError, match="message role"):
        rows._message((*STORED[:4], "narrator", *STORED[5:]))


def test_reasoning_parts_of_both_providers_round_trip_and_older_rows_still_read() -> None:
    message = Message(role=Role.ASSISTANT, parts=(
        ReasoningPart(text="thinking", signature="sig"),
        ReasoningPart(text="", signature="gAAAAB==", item_id="rs_1"),
        TextPart(text="done"),
    ))  # fmt: skip
    stored = rows.message_to_json(message)
    assert '"item_id":"rs_1"' in stored and stored.count("item_id") == 1
    assert rows.message_from_json(Role.ASSISTANT, stored) == message
    older = '[{"type":"reasoning","text":"t","signature":"s","redacted":false},{"type":"text","text":"x"}]'
    assert rows.message_from_json(Role.ASSISTANT, older).parts[0] == ReasoningPart(text="t", signature="s")
