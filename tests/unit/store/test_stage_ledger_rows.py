"""Attempts and ledger rows leave the store with stage names and outcomes as enums and the evidence as its
JSON object; an unknown stage or outcome is refused."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import RunId, TaskId
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.store import stage_ledger as rows

TASK = TaskId.from_entropy(bytes(16))
RUN = RunId.from_entropy(bytes(16))
# id, task_id, attempt, plan_revision, plan_sha256, started_at_us, ended_at_us, stopped_at_stage
ATTEMPT = (RUN.value, TASK.value, 1, 1, "0" * 64, 1, 2, "human-acceptance")
# task_id, attempt, stage_number, stage, outcome, gate_evaluation, reason, evidence_json, recorded_at_us
LEDGER = (TASK.value, 1, 26, "assembly", "satisfied", "it builds", None, '{"diff_identity":"abc"}', 3)


def test_attempts_and_ledger_rows_decode_to_their_enums_and_evidence() -> None:
    assert rows._attempt(ATTEMPT).stopped_at is StageName.HUMAN_ACCEPTANCE
    assert rows._attempt((*ATTEMPT[:7], None)).stopped_at is None
    stored = rows._ledger(LEDGER)
    assert stored.verdict.stage is StageName.ASSEMBLY and stored.verdict.outcome is StageOutcome.SATISFIED
    assert stored.evidence == {"diff_identity": "abc"}


@pytest.mark.parametrize(("index", "kind"), [(3, "stage name"), (4, "stage outcome")])
def test_an_unknown_stage_or_outcome_in_the_ledger_is_refused(index: int, kind: str) -> None:
    with pytest.raises(StoredValueUnknownError) as refused:
        rows._ledger((*LEDGER[:index], "passed-mostly", *LEDGER[index + 1:]))
    assert refused.value.kind == kind


def test_an_attempt_stopped_at_an_unknown_stage_is_refused() -> None:
    with pytest.raises(StoredValueUnknownError, match="stage name"):
        rows._attempt((*ATTEMPT[:7], "stage-38"))
