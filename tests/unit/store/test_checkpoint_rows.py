"""Checkpoints and delivery decisions leave the store with their trigger, outcomes, decision and decider as
domain values; an unknown one is refused (a decision other than accepted/rejected is not read as "rejected")."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageOutcome
from codeflux.domain.tasks import Actor
from codeflux.store import checkpoints as rows

TASK = TaskId.from_entropy(bytes(16))
# id, task_id, sequence, trigger_kind, commit_id, ref_name, head_commit, diff_identity, plan_revision, attempt,
# event_sequence, created_at_us
CHECKPOINT = (1, TASK.value, 1, "paused", "a" * 40, "refs/x", "b" * 40, "0" * 64, 1, None, 3, 4)
# id, task_id, attempt, decision, diff_identity, human_acceptance, human_acceptance_evaluation, deliver,
# deliver_evaluation, landed_commit, reason, decided_by, decided_at_us
DELIVERY = (1, TASK.value, 1, "accepted", "0" * 64, "satisfied", "same diff", "satisfied", "landed", "c" * 40, None,
            "user", 5)


def test_checkpoints_and_deliveries_decode_to_domain_values() -> None:
    assert rows._checkpoint(CHECKPOINT).trigger is rows.CheckpointTrigger.PAUSED
    delivery = rows._delivery(DELIVERY)
    assert delivery.accepted and delivery.decided_by is Actor.USER
    assert delivery.human_acceptance.outcome is StageOutcome.SATISFIED
    assert delivery.deliver.outcome is StageOutcome.SATISFIED
    assert not rows._delivery((*DELIVERY[:3], "rejected", *DELIVERY[4:])).accepted


@pytest.mark.parametrize(("index", "kind"), [
    (3, "delivery decision"), (5, "stage outcome"), (7, "stage outcome"), (11, "delivery decider"),
])  # fmt: skip
def test_an_unknown_decision_outcome_or_decider_is_refused(index: int, kind: str) -> None:
    with pytest.raises(StoredValueUnknownError) as refused:
        rows._delivery((*DELIVERY[:index], "maybe", *DELIVERY[index + 1:]))
    assert refused.value.kind == kind


def test_an_unknown_checkpoint_trigger_is_refused() -> None:
    with pytest.raises(StoredValueUnknownError, match="checkpoint trigger"):
        rows._checkpoint((*CHECKPOINT[:3], "whim", *CHECKPOINT[4:]))
