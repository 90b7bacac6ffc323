"""Obligation states move one step at a time, a discharge always names its stage, and a subject is one line."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.pipeline import StageName
from codeflux.domain.pipeline.obligations import (
    ObligationChange,
    ObligationKind,
    ObligationState,
    ObligationSubject,
    next_state,
)

OPEN, DISCHARGED, REGRESSED = ObligationState.OPEN, ObligationState.DISCHARGED, ObligationState.REGRESSED


@pytest.mark.parametrize(("current", "wanted", "allowed"), [
    (OPEN, DISCHARGED, True), (OPEN, REGRESSED, True), (OPEN, OPEN, False),
    (DISCHARGED, REGRESSED, True), (DISCHARGED, DISCHARGED, False), (DISCHARGED, OPEN, False),
    (REGRESSED, DISCHARGED, True), (REGRESSED, REGRESSED, False), (REGRESSED, OPEN, False),
])
def test_each_state_has_its_next_states(current: ObligationState, wanted: ObligationState, allowed: bool) -> None:
    if allowed:
        assert next_state(current, wanted) is wanted
    else:
        with pytest.raises(InvalidValueError, match=f"an obligation {current} cannot become {wanted}"):
            next_state(current, wanted)


def test_a_discharge_names_its_stage_and_only_a_discharge_does() -> None:
    subject = ObligationSubject("pkg/calc.py:6->8")
    kind = ObligationKind.CONTROL_PATH
    assert ObligationChange(kind=kind, subject=subject, state=DISCHARGED,
                            discharged_by=StageName.CONTROL_FLOW).discharged_by is StageName.CONTROL_FLOW
    with pytest.raises(InvalidValueError, match="names the stage that discharged it"):
        ObligationChange(kind=kind, subject=subject, state=DISCHARGED)
    with pytest.raises(InvalidValueError, match="names the stage that discharged it"):
        ObligationChange(kind=kind, subject=subject, state=REGRESSED, discharged_by=StageName.CONTROL_FLOW)
    with pytest.raises(InvalidValueError, match="opens when it is recorded"):
        ObligationChange(kind=kind, subject=subject, state=OPEN)


@pytest.mark.parametrize("text", ["", "   ", "a\nb", "x" * 1025])
def test_a_subject_is_one_line_of_at_most_1024_characters(text: str) -> None:
    with pytest.raises(InvalidValueError, match="obligation subject"):
        ObligationSubject(text)
