"""Recovery classification: known, ambiguous and recommended stay apart, and an unresolved effect blocks all."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.recovery import (
    INTERRUPTIBLE_STATES,
    AmbiguousEffect,
    EffectKind,
    EffectOutcome,
    KnownState,
    RecoveryAction,
    WorktreeCondition,
    classify_recovery,
    is_interrupted,
)
from codeflux.domain.tasks import TaskState

BASE = "a" * 40
IDENTITY = "b" * 64


def known(condition: WorktreeCondition = WorktreeCondition.CHANGED, *, patch_stored: bool = False,
          state: TaskState = TaskState.RUNNING) -> KnownState:
    usable = condition in (WorktreeCondition.AT_BASE, WorktreeCondition.CHANGED)
    return KnownState(interrupted_in=state, plan_revision=1, plan_approved=True, attempt=1, last_stage=None,
                      worktree=condition, base=None if condition is WorktreeCondition.NOT_CREATED else BASE,
                      head=BASE if usable else None, diff_identity=IDENTITY if usable else None,
                      patch_stored=patch_stored)


def effect(item: str, kind: EffectKind = EffectKind.TOOL_EXECUTION,
           outcome: EffectOutcome | None = None) -> AmbiguousEffect:
    return AmbiguousEffect(item_id=item, kind=kind, summary=f"{kind} {item}", outcome=outcome)


conditions = st.sampled_from(list(WorktreeCondition))
effects = st.builds(effect, item=st.from_regex(r"(exe|mreq)_[a-z0-9]{4}", fullmatch=True),
                    kind=st.sampled_from(list(EffectKind)), outcome=st.none() | st.sampled_from(list(EffectOutcome)))


@given(condition=conditions, stored=st.booleans(), listed=st.lists(effects, max_size=6))
def test_an_unresolved_effect_always_prevents_safe_resume_and_every_other_action(
    condition: WorktreeCondition, stored: bool, listed: list[AmbiguousEffect]
) -> None:
    advice = classify_recovery(known(condition, patch_stored=stored), [*listed, effect("exe_open")])

    assert RecoveryAction.SAFE_RESUME not in advice.allowed
    assert advice.allowed == frozenset()
    assert "exe_open" in advice.unresolved
    assert all("record what happened" in reason for _, reason in advice.refused)


@given(condition=conditions, stored=st.booleans(), listed=st.lists(effects, max_size=6))
def test_the_recommendation_is_one_action_and_allowed_plus_refused_cover_every_action(
    condition: WorktreeCondition, stored: bool, listed: list[AmbiguousEffect]
) -> None:
    advice = classify_recovery(known(condition, patch_stored=stored), listed)

    assert advice.recommended in RecoveryAction
    assert advice.allowed | {action for action, _ in advice.refused} == set(RecoveryAction)
    assert not advice.allowed & {action for action, _ in advice.refused}
    if not advice.unresolved:
        assert advice.recommended in advice.allowed
        assert RecoveryAction.ABANDON in advice.allowed


def test_nothing_ambiguous_and_a_usable_worktree_recommends_safe_resume() -> None:
    advice = classify_recovery(known(WorktreeCondition.CHANGED), [])

    assert advice.recommended is RecoveryAction.SAFE_RESUME
    assert advice.allowed == set(RecoveryAction)


def test_a_task_interrupted_while_planning_can_resume_without_a_worktree() -> None:
    advice = classify_recovery(known(WorktreeCondition.NOT_CREATED, state=TaskState.FORECASTING), [])

    assert advice.recommended is RecoveryAction.SAFE_RESUME
    assert dict(advice.refused) == {RecoveryAction.PRESERVE_PATCH: "the worktree holds no diff to keep"}


@pytest.mark.parametrize("condition", [WorktreeCondition.MISSING, WorktreeCondition.UNUSABLE])
def test_a_lost_worktree_recommends_abandon_and_refuses_resuming(condition: WorktreeCondition) -> None:
    advice = classify_recovery(known(condition, patch_stored=True), [])

    assert advice.recommended is RecoveryAction.ABANDON
    assert advice.allowed == {RecoveryAction.ABANDON}
    assert "stored patch stays" in advice.why


def test_a_tool_effect_that_happened_recommends_reconcile_but_a_model_call_that_happened_does_not() -> None:
    tool = effect("exe_1", outcome=EffectOutcome.HAPPENED)
    model = effect("mreq_1", EffectKind.MODEL_REQUEST, EffectOutcome.HAPPENED)

    assert classify_recovery(known(), [tool]).recommended is RecoveryAction.RECONCILE
    assert classify_recovery(known(), [model]).recommended is RecoveryAction.SAFE_RESUME
    assert classify_recovery(known(), [effect("exe_2", outcome=EffectOutcome.DID_NOT_HAPPEN)]).recommended \
        is RecoveryAction.SAFE_RESUME


def test_the_recommendation_with_unresolved_effects_names_them_and_what_comes_after() -> None:
    advice = classify_recovery(known(), [effect("exe_1"), effect("mreq_1", EffectKind.MODEL_REQUEST)])

    assert advice.unresolved == ("exe_1", "mreq_1")
    assert advice.why.startswith("first record what happened to exe_1, mreq_1; then:")


def test_preserving_a_patch_is_refused_once_that_diff_is_stored() -> None:
    advice = classify_recovery(known(patch_stored=True), [])

    assert dict(advice.refused) == {RecoveryAction.PRESERVE_PATCH: "its diff is already stored"}


def test_known_state_refuses_a_diff_identity_without_a_usable_worktree() -> None:
    with pytest.raises(InvalidValueError):
        KnownState(interrupted_in=TaskState.RUNNING, plan_revision=None, plan_approved=False, attempt=None,
                   last_stage=None, worktree=WorktreeCondition.MISSING, base=BASE, head=None, diff_identity=IDENTITY,
                   patch_stored=False)


@given(state=st.sampled_from(list(TaskState)))
def test_only_working_states_count_as_interrupted(state: TaskState) -> None:
    assert is_interrupted(state) == (state in INTERRUPTIBLE_STATES)
    assert not (is_interrupted(state) and state in (TaskState.PAUSED, TaskState.READY, TaskState.AWAITING_REVIEW))


@pytest.mark.parametrize("condition", list(WorktreeCondition))
def test_lost_store_data_refuses_safe_resume_and_recommends_inspecting_the_worktree(
    condition: WorktreeCondition,
) -> None:
    advice = classify_recovery(known(condition), [], store_damaged=True)

    assert RecoveryAction.SAFE_RESUME not in advice.allowed
    if condition in (WorktreeCondition.MISSING, WorktreeCondition.UNUSABLE):
        assert advice.recommended is RecoveryAction.ABANDON
    else:
        assert advice.recommended is RecoveryAction.RECONCILE
        assert "inspect the worktree" in advice.why and "nothing is unaccounted for" not in advice.why
    assert advice.recommended in advice.allowed
