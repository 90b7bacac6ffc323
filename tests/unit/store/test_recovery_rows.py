"""Recovery assessments leave the store with the interrupted state and the recommended action as enums;
an unknown one is refused."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import RecoveryAction
from codeflux.domain.tasks import TaskState
from codeflux.store import recovery as rows

TASK = TaskId.from_entropy(bytes(16))
# id, task_id, interrupted_in, known_json, ambiguous_json, recommended, diff_identity, reason, assessed_at_us
STORED = (1, TASK.value, "running", '{"plan_revision":2}', "[]", "safe-resume", None, "stopped", 4)


def test_an_assessment_decodes_to_its_state_action_and_snapshot() -> None:
    row = rows._assessment(STORED)
    assert row.interrupted_in is TaskState.RUNNING and row.recommended is RecoveryAction.SAFE_RESUME
    assert row.known == {"plan_revision": 2} and list(row.ambiguous) == []


@pytest.mark.parametrize(("index", "kind"), [(2, "task state"), (5, "recovery action")])
def test_an_unknown_state_or_action_is_refused(index: int, kind: str) -> None:
    with pytest.raises(StoredValueUnknownError) as refused:
        rows._assessment((*STORED[:index], "retry-everything", *STORED[index + 1:]))
    assert refused.value.kind == kind
