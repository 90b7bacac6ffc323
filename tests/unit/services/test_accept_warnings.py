"""What Accept warns about before it delivers (issue 20 item 3): every check before the person's acceptance that
failed, was blocked or did not run; a skipped stage (unnecessary, with its reason) is not a warning, nor are the
acceptance and delivery stages, which wait for this very decision."""

from __future__ import annotations

from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict, stage_named
from codeflux.domain.pipeline.ledger import LedgerRow
from codeflux.services.review import accept_warnings

TASK = TaskId.parse("tsk_0123456789abcdef")


def row(stage: StageName, outcome: StageOutcome, said: str = "why") -> LedgerRow:
    evaluated = outcome in (StageOutcome.SATISFIED, StageOutcome.FAILED)
    verdict = StageVerdict.as_recorded(stage=stage, outcome=outcome, gate_evaluation=said if evaluated else None,
                                       reason=None if evaluated else said)
    return LedgerRow(task_id=TASK, attempt=1, number=stage_named(stage.value).number, verdict=verdict,
                     evidence={}, recorded_at_us=1)


def test_failed_blocked_and_not_run_checks_are_warnings_in_order() -> None:
    rows = [
        row(StageName.CONTRACTS, StageOutcome.SATISFIED, "declared"),
        row(StageName.ATOM_CASE_SYNTHESIS, StageOutcome.FAILED, "3 of 12 rungs exercised"),
        row(StageName.ATOM_OPTIMIZATION, StageOutcome.SKIPPED, "no simpler rewrite"),
        row(StageName.INTEGRATION_TESTS, StageOutcome.BLOCKED, "process is denied in this task"),
        row(StageName.PLATFORM_MATRIX, StageOutcome.NOT_IMPLEMENTED, "one platform here"),
        row(StageName.HUMAN_ACCEPTANCE, StageOutcome.BLOCKED, "waits for the person"),
        row(StageName.DELIVER, StageOutcome.BLOCKED, "waits for acceptance"),
    ]
    assert accept_warnings(rows) == [
        "atom-case-synthesis failed: 3 of 12 rungs exercised",
        "integration-tests was blocked (it did not run): process is denied in this task",
        "platform-matrix did not run: one platform here",
    ]


def test_satisfied_and_skipped_checks_need_no_warning() -> None:
    rows = [row(StageName.CONTRACTS, StageOutcome.SATISFIED), row(StageName.ADVERSARIAL, StageOutcome.SKIPPED),
            row(StageName.HUMAN_ACCEPTANCE, StageOutcome.BLOCKED)]
    assert accept_warnings(rows) == []


def test_no_check_at_all_is_a_warning() -> None:
    assert accept_warnings([]) == ["no check was recorded for this diff: nothing was checked"]
    assert accept_warnings([row(StageName.DELIVER, StageOutcome.BLOCKED)]) == [
        "no check was recorded for this diff: nothing was checked"]
