"""Ledger rules: what each outcome must carry, blocked propagation, and finalizing a run."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.pipeline import (
    NOT_IMPLEMENTED_REASON,
    STAGES,
    StageName,
    StageOutcome,
    StageVerdict,
    finalize_run,
    propagate_blocked,
    stage_named,
    transitive_prerequisites,
    unmet_prerequisite,
)

N = StageName
SO = StageOutcome
DID_NOT_HOLD = {SO.FAILED, SO.BLOCKED}


def satisfied(stage: StageName) -> StageVerdict:
    return StageVerdict(stage=stage, outcome=SO.SATISFIED, gate_evaluation="checked; it held")


def failed(stage: StageName) -> StageVerdict:
    return StageVerdict(stage=stage, outcome=SO.FAILED, gate_evaluation="checked; it did not hold")


# What each outcome must carry.


def test_satisfied_and_failed_need_the_gate_evaluation() -> None:
    for outcome in (SO.SATISFIED, SO.FAILED):
        with pytest.raises(InvalidValueError, match="needs the gate evaluation"):
            StageVerdict(stage=N.ASSEMBLY, outcome=outcome)
        with pytest.raises(InvalidValueError, match="needs the gate evaluation"):
            StageVerdict(stage=N.ASSEMBLY, outcome=outcome, gate_evaluation="  ")


def test_skipped_blocked_and_not_implemented_need_a_reason() -> None:
    for stage, outcome in ((N.ASSEMBLY, SO.SKIPPED), (N.ASSEMBLY, SO.BLOCKED), (N.ATOM_FUZZ, SO.NOT_IMPLEMENTED)):
        with pytest.raises(InvalidValueError, match="needs a reason"):
            StageVerdict(stage=stage, outcome=outcome)
    skipped = StageVerdict(stage=N.ASSEMBLY, outcome=SO.SKIPPED, reason="no Python package changed")
    assert skipped.reason == "no Python package changed"


def test_a_stage_that_did_not_run_carries_no_gate_evaluation() -> None:
    with pytest.raises(InvalidValueError, match="did not run"):
        StageVerdict(stage=N.ASSEMBLY, outcome=SO.BLOCKED, reason="r", gate_evaluation="e")
    with pytest.raises(InvalidValueError, match="did not run"):
        StageVerdict(stage=N.ATOM_FUZZ, outcome=SO.NOT_IMPLEMENTED, reason="r", gate_evaluation="e")


def test_a_skipped_stage_may_keep_the_facts_that_made_it_unnecessary() -> None:
    verdict = StageVerdict(stage=N.INTEGRATION_TESTS, outcome=SO.SKIPPED, reason="no tests", gate_evaluation="0 found")
    assert verdict.gate_evaluation == "0 found"


def test_not_implemented_is_refused_for_a_stage_codeflux_performs() -> None:
    with pytest.raises(InvalidValueError, match="cannot be recorded as not implemented"):
        StageVerdict(stage=N.ASSEMBLY, outcome=SO.NOT_IMPLEMENTED, reason=NOT_IMPLEMENTED_REASON)


@pytest.mark.parametrize("stage", list(StageName))
def test_every_stage_is_performed_now_so_none_can_be_recorded_as_not_implemented(stage: StageName) -> None:
    """Stage 6 recall was the last one codeflux could not perform (issue 19); the rule stays for any stage the
    catalog ever marks as not performable."""
    with pytest.raises(InvalidValueError, match="cannot be recorded as not implemented"):
        StageVerdict(stage=stage, outcome=SO.NOT_IMPLEMENTED, reason=NOT_IMPLEMENTED_REASON)


def test_a_performable_stage_can_be_blocked() -> None:
    assert StageVerdict(stage=N.RECALL, outcome=SO.BLOCKED, reason="r").outcome is SO.BLOCKED


# Blocked propagation.


def test_a_failed_assembly_blocks_everything_that_presupposes_it() -> None:
    result = propagate_blocked({N.ASSEMBLY: SO.FAILED, N.INTEGRATION_TESTS: SO.SATISFIED})
    assert result[N.ASSEMBLY] is SO.FAILED
    for name in (N.PROGRAM, N.INTEGRATION_TESTS, N.END_TO_END_TESTS, N.REPETITION, N.NON_FUNCTIONAL):
        assert result[name] is SO.BLOCKED, name
    assert N.EVIDENCE_BUNDLE not in result


def test_skipped_and_not_implemented_prerequisites_do_not_block() -> None:
    result = propagate_blocked({N.CONTROL_FLOW: SO.NOT_IMPLEMENTED, N.PROGRAM: SO.SKIPPED})
    assert N.ASSEMBLY not in result
    assert N.INTEGRATION_TESTS not in result
    assert unmet_prerequisite(N.ASSEMBLY, result) is None


def test_blocked_wins_over_not_implemented() -> None:
    result = propagate_blocked({N.INSTRUCTIONS: SO.FAILED, N.CLARIFICATION: SO.NOT_IMPLEMENTED})
    assert result[N.CLARIFICATION] is SO.BLOCKED
    assert all(result[s.name] is SO.BLOCKED for s in STAGES[1:])


def test_the_unmet_prerequisite_is_the_first_one_in_catalog_order() -> None:
    outcomes = {N.INSTRUCTIONS: SO.SATISFIED, N.ASSEMBLY: SO.FAILED}
    assert unmet_prerequisite(N.END_TO_END_TESTS, outcomes) is N.ASSEMBLY
    assert unmet_prerequisite(N.END_TO_END_TESTS, {N.INSTRUCTIONS: SO.BLOCKED, N.ASSEMBLY: SO.FAILED}) is N.INSTRUCTIONS
    assert unmet_prerequisite(N.END_TO_END_TESTS, {N.INSTRUCTIONS: SO.SATISFIED, N.PROGRAM: SO.BLOCKED}) is None
    assert unmet_prerequisite(N.END_TO_END_TESTS, {}) is None


OUTCOME_MAPS = st.dictionaries(st.sampled_from(StageName), st.sampled_from(StageOutcome))


@given(OUTCOME_MAPS, st.sets(st.sampled_from(StageName)))
def test_blocked_propagation_is_monotone(outcomes: dict[StageName, StageOutcome], worse: set[StageName]) -> None:
    """Making more stages fail never unblocks anything: whatever did not hold still does not."""
    worsened = {**outcomes, **dict.fromkeys(worse, SO.FAILED)}
    before, after = propagate_blocked(outcomes), propagate_blocked(worsened)
    for name, outcome in before.items():
        if outcome is SO.BLOCKED:
            assert after[name] in DID_NOT_HOLD, name
    did_not_hold_before = {n for n, o in before.items() if o in DID_NOT_HOLD}
    assert did_not_hold_before <= {n for n, o in after.items() if o in DID_NOT_HOLD}


@given(OUTCOME_MAPS)
def test_blocked_propagation_is_complete_idempotent_and_invents_nothing(
    outcomes: dict[StageName, StageOutcome],
) -> None:
    result = propagate_blocked(outcomes)
    assert propagate_blocked(result) == result
    for stage in STAGES:
        if unmet_prerequisite(stage.name, result) is not None:
            assert result[stage.name] is SO.BLOCKED
        elif stage.name in outcomes:
            assert result[stage.name] is outcomes[stage.name]
        else:
            assert stage.name not in result
    assert all(o is not SO.NOT_IMPLEMENTED or outcomes.get(n) is SO.NOT_IMPLEMENTED for n, o in result.items())


@given(OUTCOME_MAPS)
def test_a_stage_is_blocked_whenever_a_transitive_prerequisite_failed(outcomes: dict[StageName, StageOutcome]) -> None:
    result = propagate_blocked(outcomes)
    for stage in STAGES:
        if any(outcomes.get(p) is SO.FAILED for p in transitive_prerequisites(stage.name)):
            assert result[stage.name] is SO.BLOCKED


# Finalizing a run.


def test_a_complete_run_records_every_stage_as_decided_and_none_as_not_implemented() -> None:
    recorded = [satisfied(s.name) for s in STAGES if s.performable]
    final = finalize_run(recorded, stopped_at=None)
    assert [v.stage for v in final] == list(StageName)
    assert all(verdict.outcome is SO.SATISFIED for verdict in final)
    assert final[5].stage is N.RECALL and final[5].gate_evaluation  # 6 recall: decided, not "cannot perform"


def test_a_run_stopped_by_a_question_marks_the_rest_blocked_not_not_implemented() -> None:
    asked = StageVerdict(stage=N.CLARIFICATION, outcome=SO.BLOCKED, reason="waiting for an answer")
    final = finalize_run([satisfied(N.INSTRUCTIONS), asked], stopped_at=N.CLARIFICATION)
    assert final[0].outcome is SO.SATISFIED
    assert final[1] == asked
    for verdict in final[2:]:
        assert verdict.outcome is SO.BLOCKED, verdict.stage


def test_a_run_that_stopped_mid_stage_blocks_that_stage_and_names_where_it_stopped() -> None:
    specification = [satisfied(N.INSTRUCTIONS), satisfied(N.CLARIFICATION), satisfied(N.ATOMIC_INSTRUCTIONS),
                     satisfied(N.DECOMPOSITION_COVERAGE)]
    final = {v.stage: v for v in finalize_run(specification, stopped_at=N.ASSEMBLY)}
    assert final[N.CONTRACTS].outcome is SO.BLOCKED and "without deciding" in (final[N.CONTRACTS].reason or "")
    assert final[N.ASSEMBLY].outcome is SO.BLOCKED
    assert final[N.ASSEMBLY].reason == "the run stopped during this stage before it was decided"
    assert final[N.DELIVER].reason == "the run stopped at assembly before this stage"


def test_a_failed_prerequisite_is_named_in_the_blocked_reason() -> None:
    recorded = [satisfied(N.INSTRUCTIONS), satisfied(N.CLARIFICATION), satisfied(N.ATOMIC_INSTRUCTIONS),
                failed(N.ASSEMBLY)]
    final = {v.stage: v for v in finalize_run([*recorded, satisfied(N.EVIDENCE_BUNDLE)], stopped_at=None)}
    assert final[N.PROGRAM].reason == "prerequisite assembly did not hold (failed)"
    assert final[N.INTEGRATION_TESTS].reason == "prerequisite assembly did not hold (failed)"
    assert final[N.EVIDENCE_BUNDLE].outcome is SO.SATISFIED  # the bundle reports the failure, it is not blocked by it


def test_after_a_stop_the_reason_names_where_the_run_stopped() -> None:
    recorded = [satisfied(N.INSTRUCTIONS), satisfied(N.CLARIFICATION), satisfied(N.ATOMIC_INSTRUCTIONS),
                failed(N.ASSEMBLY)]
    final = {v.stage: v for v in finalize_run(recorded, stopped_at=N.ASSEMBLY)}
    assert final[N.ASSEMBLY].outcome is SO.FAILED
    assert final[N.PROGRAM].reason == "the run stopped at assembly before this stage"
    assert final[N.EVIDENCE_BUNDLE].outcome is SO.BLOCKED


def test_a_performable_stage_the_run_never_decided_is_blocked() -> None:
    recorded = [satisfied(N.INSTRUCTIONS), satisfied(N.CLARIFICATION)]
    final = {v.stage: v for v in finalize_run(recorded, stopped_at=None)}
    assert final[N.ATOMIC_INSTRUCTIONS].outcome is SO.BLOCKED
    assert final[N.ATOMIC_INSTRUCTIONS].reason == "the run ended without deciding this stage"
    assert final[N.ASSEMBLY].outcome is SO.BLOCKED
    assert final[N.ASSEMBLY].reason == "prerequisite atomic-instructions did not hold (blocked)"


def test_a_verdict_recorded_after_the_stop_point_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="stopped at assembly but recorded deliver"):
        finalize_run([satisfied(N.DELIVER)], stopped_at=N.ASSEMBLY)


def test_a_stage_recorded_twice_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="instructions is recorded twice"):
        finalize_run([satisfied(N.INSTRUCTIONS), failed(N.INSTRUCTIONS)], stopped_at=None)


@st.composite
def recorded_runs(draw: st.DrawFn) -> tuple[list[StageVerdict], StageName | None]:
    stopped_at = draw(st.none() | st.sampled_from(StageName))
    limit = 37 if stopped_at is None else stage_named(stopped_at).number
    verdicts = []
    for stage in STAGES[:limit]:
        if not draw(st.booleans()):
            continue
        if stage.performable:
            outcome = draw(st.sampled_from([SO.SATISFIED, SO.FAILED, SO.SKIPPED, SO.BLOCKED]))
        else:
            outcome = draw(st.sampled_from([SO.NOT_IMPLEMENTED, SO.BLOCKED]))
        evaluation = "seen" if outcome in {SO.SATISFIED, SO.FAILED} else None
        reason = None if outcome in {SO.SATISFIED, SO.FAILED} else "because"
        verdicts.append(StageVerdict(stage=stage.name, outcome=outcome, gate_evaluation=evaluation, reason=reason))
    return verdicts, stopped_at


@given(recorded_runs())
def test_finalize_never_records_not_implemented_for_a_performable_stage_or_after_a_stop(
    run: tuple[list[StageVerdict], StageName | None],
) -> None:
    verdicts, stopped_at = run
    final = finalize_run(verdicts, stopped_at=stopped_at)
    recorded = {v.stage for v in verdicts}
    assert [v.stage for v in final] == list(StageName)
    stop_number = 38 if stopped_at is None else stage_named(stopped_at).number
    for verdict in final:
        stage = stage_named(verdict.stage)
        if verdict.outcome is SO.NOT_IMPLEMENTED:
            assert not stage.performable
            assert stage.number <= stop_number
        if stage.number > stop_number or (stage.number == stop_number and verdict.stage not in recorded):
            assert verdict.outcome is SO.BLOCKED


@given(recorded_runs())
def test_a_finalized_run_is_its_own_blocked_propagation(run: tuple[list[StageVerdict], StageName | None]) -> None:
    verdicts, stopped_at = run
    outcomes = {v.stage: v.outcome for v in finalize_run(verdicts, stopped_at=stopped_at)}
    assert propagate_blocked(outcomes) == outcomes
    recorded = {v.stage: v for v in verdicts}
    for name, outcome in outcomes.items():
        if name in recorded and unmet_prerequisite(name, outcomes) is None:
            assert outcome is recorded[name].outcome
