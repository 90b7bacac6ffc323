"""Obligations: what a pipeline stage found a change owes, and the rules of their states (issue 18).

An obligation belongs to one attempt of a task and is identified there by its :class:`ObligationKind` and its
subject (:class:`ObligationSubject`): a ``composition`` — a changed atom calling another changed or added atom
(``pkg.calc.total -> pkg.calc.add``, recorded by stage 18) —, a ``control-path`` — a branch arc on a changed line
(``pkg/calc.py:4->7``, recorded by stage 22) —, an ``effect`` or a ``review-finding``. Its state
(:class:`ObligationState`) opens ``open``; ``discharged`` always names the stage that discharged it; ``regressed``
says a discharge no longer holds. :func:`next_state` is the one transition rule (the schema enforces the same
order); the store keeps every state an obligation entered, the newest is its state. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline.stages import StageName

__all__ = [
    "MAX_SUBJECT_CHARS",
    "NewObligation",
    "ObligationChange",
    "ObligationKind",
    "ObligationRecord",
    "ObligationState",
    "ObligationSubject",
    "next_state",
]

MAX_SUBJECT_CHARS: Final = 1024


class ObligationKind(StrEnum):
    COMPOSITION = "composition"
    CONTROL_PATH = "control-path"
    EFFECT = "effect"
    REVIEW_FINDING = "review-finding"


class ObligationState(StrEnum):
    OPEN = "open"
    DISCHARGED = "discharged"
    REGRESSED = "regressed"


_NEXT: Final[Mapping[ObligationState, frozenset[ObligationState]]] = {
    ObligationState.OPEN: frozenset({ObligationState.DISCHARGED, ObligationState.REGRESSED}),
    ObligationState.DISCHARGED: frozenset({ObligationState.REGRESSED}),
    ObligationState.REGRESSED: frozenset({ObligationState.DISCHARGED}),
}


@dataclass(frozen=True, slots=True)
class ObligationSubject:
    """An obligation's identity inside its attempt and kind: one line of text, at most 1024 characters."""

    value: str

    def __post_init__(self) -> None:
        if not self.value.strip() or len(self.value) > MAX_SUBJECT_CHARS or any(
                ord(char) < 32 for char in self.value):
            raise InvalidValueError(kind="obligation subject",
                                    reason=f"one line of 1 to {MAX_SUBJECT_CHARS} characters")

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class NewObligation:
    """An obligation a stage records: its kind, subject and detail (a JSON object: the call site, the arc)."""

    kind: ObligationKind
    subject: ObligationSubject
    recorded_by: StageName
    detail: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ObligationChange:
    """A state an obligation enters: ``discharged_by`` names the stage that discharged it, and is required for
    ``discharged`` and refused otherwise; ``evidence`` says what showed it (the tests that took an arc)."""

    kind: ObligationKind
    subject: ObligationSubject
    state: ObligationState
    discharged_by: StageName | None = None
    evidence: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.state is ObligationState.DISCHARGED) != (self.discharged_by is not None):
            raise InvalidValueError(kind="obligation change",
                                    reason="a discharged obligation names the stage that discharged it, and only then")
        if self.state is ObligationState.OPEN:
            raise InvalidValueError(kind="obligation change", reason="an obligation opens when it is recorded")


@dataclass(frozen=True, slots=True, kw_only=True)
class ObligationRecord:
    """An obligation as stored, with its newest state (``revision``: how many states it entered)."""

    task_id: TaskId
    attempt: int
    kind: ObligationKind
    subject: ObligationSubject
    recorded_by: StageName
    detail: Mapping[str, object]
    state: ObligationState
    discharged_by: StageName | None
    revision: int
    evidence: Mapping[str, object]

    def to_evidence(self) -> dict[str, object]:
        shown: dict[str, object] = {"kind": self.kind.value, "subject": self.subject.value, "state": self.state.value,
                                    **{key: value for key, value in self.detail.items() if key != "subject"}}
        if self.discharged_by is not None:
            shown["discharged_by_stage"] = self.discharged_by.value
        return shown


def next_state(current: ObligationState, wanted: ObligationState) -> ObligationState:
    """``wanted`` when an obligation in ``current`` may enter it (open → discharged or regressed, discharged →
    regressed, regressed → discharged); :class:`InvalidValueError` otherwise."""
    if wanted not in _NEXT[current]:
        raise InvalidValueError(kind="obligation state", reason=f"an obligation {current.value} cannot become "
                                                                f"{wanted.value}")
    return wanted
