"""The task state machine: the transition table, its one validator, terminal states and the action matrix."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain import tasks
from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.tasks import (
    AVAILABLE_TASK_ACTIONS,
    TASK_ACTION_TARGETS,
    TASK_TRANSITIONS,
    TERMINAL_TASK_STATES,
    TaskAction,
    TaskActionAvailability,
    TaskState,
    available_task_actions,
    describe_task_action,
    describe_task_actions,
    is_allowed_task_transition,
    is_terminal,
    next_task_states,
    validate_task_transition,
)

S = TaskState
A = TaskAction
OPEN_STATES = [state for state in TaskState if not is_terminal(state)]
ALL_PAIRS = list(itertools.product(TaskState, repeat=2))
REFUSED_PAIRS = [pair for pair in ALL_PAIRS if pair not in TASK_TRANSITIONS]

# The reference's exhaustive table (tasks_memory.md §1.2), minus completed → rolled-back (see the module).
REFERENCE_TRANSITIONS = {
    S.DRAFT: {S.FORECASTING, S.CANCELLED},
    S.FORECASTING: {S.AWAITING_PLAN_APPROVAL, S.PAUSED, S.FAILED, S.CANCELLED},
    S.AWAITING_PLAN_APPROVAL: {S.FORECASTING, S.READY, S.CANCELLED},
    S.READY: {S.RUNNING, S.PAUSED, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.RUNNING: {S.PAUSED, S.AWAITING_AUTHORITY, S.VALIDATING, S.FAILED, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.PAUSED: {S.FORECASTING, S.READY, S.RUNNING, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.AWAITING_AUTHORITY: {S.RUNNING, S.PAUSED, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.VALIDATING: {S.RUNNING, S.AWAITING_REVIEW, S.FAILED, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.AWAITING_REVIEW: {S.RUNNING, S.COMPLETED, S.CANCELLED, S.ROLLED_BACK},
    S.FAILED: {S.READY, S.CANCELLED, S.RECOVERY_REQUIRED},
    S.RECOVERY_REQUIRED: {S.PAUSED, S.READY, S.FAILED, S.CANCELLED, S.ROLLED_BACK},
}


def test_the_table_is_data_a_frozenset_of_state_pairs() -> None:
    assert isinstance(TASK_TRANSITIONS, frozenset)
    assert all(isinstance(a, TaskState) and isinstance(b, TaskState) for a, b in TASK_TRANSITIONS)


def test_every_transition_of_the_reference_is_allowed() -> None:
    for source, targets in REFERENCE_TRANSITIONS.items():
        for target in targets:
            assert is_allowed_task_transition(source, target), (source, target)


def test_the_only_additions_to_the_reference_are_recovery_from_any_open_state_and_pause_while_validating() -> None:
    reference = {(a, b) for a, targets in REFERENCE_TRANSITIONS.items() for b in targets}
    assert TASK_TRANSITIONS - reference == {
        (S.DRAFT, S.RECOVERY_REQUIRED),
        (S.FORECASTING, S.RECOVERY_REQUIRED),
        (S.AWAITING_PLAN_APPROVAL, S.RECOVERY_REQUIRED),
        (S.AWAITING_REVIEW, S.RECOVERY_REQUIRED),
        (S.VALIDATING, S.PAUSED),
    }


@pytest.mark.parametrize(("source", "target"), sorted(TASK_TRANSITIONS), ids=str)
def test_every_pair_in_the_table_validates(source: TaskState, target: TaskState) -> None:
    validate_task_transition(source, target)


@pytest.mark.parametrize(("source", "target"), REFUSED_PAIRS, ids=str)
def test_every_pair_not_in_the_table_raises_with_machine_and_both_states(source: TaskState, target: TaskState) -> None:
    with pytest.raises(TransitionNotAllowedError) as caught:
        validate_task_transition(source, target)
    assert (caught.value.machine, caught.value.from_state, caught.value.to_state) == (
        "task",
        source.value,
        target.value,
    )
    assert str(caught.value) == f"task cannot go from {source.value} to {target.value}"


@given(st.sampled_from(TaskState), st.sampled_from(TaskState))
def test_validation_agrees_with_the_table_for_any_pair(source: TaskState, target: TaskState) -> None:
    if (source, target) in TASK_TRANSITIONS:
        validate_task_transition(source, target)
    else:
        with pytest.raises(TransitionNotAllowedError):
            validate_task_transition(source, target)


def test_staying_in_the_same_state_is_not_a_transition() -> None:
    for state in TaskState:
        assert not is_allowed_task_transition(state, state)


def test_terminal_states_are_completed_cancelled_and_rolled_back_and_nothing_leaves_them() -> None:
    assert {s for s in TaskState if is_terminal(s)} == {S.COMPLETED, S.CANCELLED, S.ROLLED_BACK}
    assert frozenset({S.COMPLETED, S.CANCELLED, S.ROLLED_BACK}) == TERMINAL_TASK_STATES
    for state in TERMINAL_TASK_STATES:
        assert next_task_states(state) == frozenset()


def test_a_landed_change_is_not_rolled_back_by_a_transition() -> None:
    assert not is_allowed_task_transition(S.COMPLETED, S.ROLLED_BACK)


@pytest.mark.parametrize("state", OPEN_STATES, ids=str)
def test_every_open_state_can_be_cancelled(state: TaskState) -> None:
    assert is_allowed_task_transition(state, S.CANCELLED)


@pytest.mark.parametrize("state", [s for s in OPEN_STATES if s is not S.RECOVERY_REQUIRED], ids=str)
def test_recovery_required_is_entered_from_every_other_open_state(state: TaskState) -> None:
    assert is_allowed_task_transition(state, S.RECOVERY_REQUIRED)


def test_recovery_required_is_never_entered_from_a_terminal_state() -> None:
    for state in TERMINAL_TASK_STATES:
        assert not is_allowed_task_transition(state, S.RECOVERY_REQUIRED)


def _reachable_from(start: TaskState) -> set[TaskState]:
    seen, pending = {start}, [start]
    while pending:
        for target in next_task_states(pending.pop()):
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return seen


def test_every_state_is_reachable_from_draft() -> None:
    assert _reachable_from(S.DRAFT) == set(TaskState)


@pytest.mark.parametrize("state", OPEN_STATES, ids=str)
def test_every_open_state_can_still_reach_completed_and_a_terminal_state(state: TaskState) -> None:
    reachable = _reachable_from(state)
    assert S.COMPLETED in reachable
    assert reachable & TERMINAL_TASK_STATES


@given(st.lists(st.integers(min_value=0, max_value=100), max_size=60))
def test_a_random_walk_through_allowed_transitions_is_never_stuck_unless_terminal(choices: list[int]) -> None:
    state = S.DRAFT
    for choice in choices:
        options = sorted(next_task_states(state))
        if not options:
            assert is_terminal(state)
            return
        following = options[choice % len(options)]
        validate_task_transition(state, following)
        state = following
    assert is_terminal(state) or next_task_states(state)


# The action matrix.


def test_every_state_has_its_actions_defined() -> None:
    assert set(AVAILABLE_TASK_ACTIONS) == set(TaskState)
    for state in TaskState:
        described = describe_task_actions(state)
        assert [d.action for d in described] == list(TaskAction)
        for availability in described:
            assert availability.available == (availability.action in available_task_actions(state))
            if not availability.available:
                assert availability.reason
                assert availability.reason.strip() == availability.reason
                assert "\n" not in availability.reason


def test_action_values_are_kebab_case_and_include_the_ones_the_ui_needs() -> None:
    for action in TaskAction:
        assert action.value == action.name.lower().replace("_", "-")
    needed = {"approve-plan", "send-back", "start", "pause", "resume", "cancel", "decide-approval", "accept",
              "reject", "repair", "rollback", "record-outcome", "safe-resume", "reconcile", "preserve-patch",
              "abandon"}  # fmt: skip
    assert needed <= {action.value for action in TaskAction}


def test_every_action_is_available_in_some_state_and_has_its_targets_declared() -> None:
    assert set(TASK_ACTION_TARGETS) == set(TaskAction)
    offered = set().union(*AVAILABLE_TASK_ACTIONS.values())
    assert offered == set(TaskAction)


@pytest.mark.parametrize("state", list(TaskState), ids=str)
def test_an_available_action_only_leads_where_the_transition_table_allows(state: TaskState) -> None:
    for action in available_task_actions(state):
        targets = TASK_ACTION_TARGETS[action]
        if targets:
            assert any(is_allowed_task_transition(state, target) for target in targets), (state, action)


@pytest.mark.parametrize("state", OPEN_STATES, ids=str)
def test_every_open_state_offers_a_person_a_way_to_move_the_task(state: TaskState) -> None:
    moving = [action for action in available_task_actions(state) if TASK_ACTION_TARGETS[action]]
    assert moving, state


def test_terminal_states_offer_no_action_and_say_why() -> None:
    for state in TERMINAL_TASK_STATES:
        assert available_task_actions(state) == frozenset()
        reason = describe_task_action(state, A.CANCEL).reason
        assert reason is not None
        assert state.value in reason


def test_record_outcome_is_available_only_when_recovery_is_required() -> None:
    assert [s for s in TaskState if A.RECORD_OUTCOME in available_task_actions(s)] == [S.RECOVERY_REQUIRED]


def test_the_review_actions_are_available_only_while_awaiting_review() -> None:
    for action in (A.ACCEPT, A.REJECT, A.REPAIR, A.ROLLBACK):
        assert [s for s in TaskState if action in available_task_actions(s)] == [S.AWAITING_REVIEW]


def test_accept_while_running_is_disabled_with_the_reason_the_ui_shows() -> None:
    availability = describe_task_action(S.RUNNING, A.ACCEPT)
    assert not availability.available
    assert availability.reason == "accept needs a finished diff awaiting review; the task is running"


def test_cancel_during_review_points_to_reject_and_during_recovery_to_abandon() -> None:
    assert "reject" in (describe_task_action(S.AWAITING_REVIEW, A.CANCEL).reason or "")
    assert "abandon" in (describe_task_action(S.RECOVERY_REQUIRED, A.CANCEL).reason or "")


def test_plan_approval_and_send_back_happen_only_while_a_plan_awaits_approval() -> None:
    for action in (A.APPROVE_PLAN, A.SEND_BACK):
        assert [s for s in TaskState if action in available_task_actions(s)] == [S.AWAITING_PLAN_APPROVAL]


def test_an_availability_is_either_available_without_reason_or_unavailable_with_one() -> None:
    with pytest.raises(InvalidValueError):
        TaskActionAvailability(action=A.START, available=True, reason="why")
    with pytest.raises(InvalidValueError):
        TaskActionAvailability(action=A.START, available=False, reason="")
    with pytest.raises(InvalidValueError):
        TaskActionAvailability(action=A.START, available=False, reason=None)


def test_all_lists_exactly_the_names_the_module_defines_publicly() -> None:
    tree = ast.parse(Path(tasks.__file__).read_text())
    defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    defined |= {
        node.target.id for node in tree.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    defined |= {
        t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
    }
    assert set(tasks.__all__) == {name for name in defined if not name.startswith("_")}
