"""Task states: the fourteen stored values, and which states may run tools beyond reads."""

from __future__ import annotations

import pytest

from codeflux.domain.tasks import TaskState, is_active_for_tools

ARCHITECTURE_STATES = (
    "draft, forecasting, awaiting-plan-approval, ready, running, paused, awaiting-authority, validating, "
    "awaiting-review, completed, failed, cancelled, rolled-back, recovery-required"
)


def test_there_are_exactly_the_fourteen_states_of_the_architecture_in_its_order() -> None:
    assert [state.value for state in TaskState] == ARCHITECTURE_STATES.split(", ")


def test_stored_values_are_kebab_case() -> None:
    for state in TaskState:
        assert state.value == state.name.lower().replace("_", "-")


@pytest.mark.parametrize("state", [TaskState.RUNNING, TaskState.VALIDATING])
def test_a_running_or_validating_task_may_run_tools(state: TaskState) -> None:
    assert is_active_for_tools(state)


@pytest.mark.parametrize(
    "state", [s for s in TaskState if s not in {TaskState.RUNNING, TaskState.VALIDATING}], ids=str
)
def test_every_other_state_denies_all_but_reads_including_paused_and_awaiting_authority(state: TaskState) -> None:
    assert not is_active_for_tools(state)


def test_an_unknown_state_value_does_not_parse() -> None:
    with pytest.raises(ValueError, match="not a valid TaskState"):
        TaskState("Running")
