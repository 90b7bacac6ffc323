"""Stage outcomes and the rules of the stage ledger (ARCHITECTURE §8.2).

Exactly five outcomes, never folded into one another:

* ``satisfied`` — the gate was evaluated and held; the evaluation (what was checked, what was seen) is
  recorded as its evidence.
* ``failed`` — the gate was evaluated and did not hold; the evaluation is recorded.
* ``skipped`` — this run's facts make the stage unnecessary; the reason is recorded.
* ``blocked`` — a prerequisite did not hold, or the run stopped before the stage; it did not run and
  has no evidence, only the reason.
* ``not-implemented`` — codeflux cannot perform the stage; no evidence. Only for stages the catalog
  marks not performable, and a stage that is not performable can only be ``not-implemented`` or
  ``blocked``: a verdict never claims a check codeflux cannot make.

Blocked propagation: a stage with a prerequisite that ``failed`` or is ``blocked`` is itself
``blocked`` — whatever else was recorded for it, since its gate presupposed that prerequisite. A
``skipped`` prerequisite does not block (the run's facts made it unnecessary), and neither does a
``not-implemented`` one: a check codeflux cannot perform is reported as unexamined in the evidence
bundle, it does not veto the checks it can perform. Blocked always wins over ``not-implemented``.

Finalizing a run fills every stage nobody recorded: ``not-implemented`` for a stage codeflux cannot
perform that the run reached, ``blocked`` for everything after the point where a run stopped early
(never ``not-implemented``: the reference's ledger mislabelled those), and ``blocked`` for a performable
stage the run ended without deciding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.pipeline.stages import STAGES, StageName, stage_named

__all__ = [
    "NOT_IMPLEMENTED_REASON",
    "StageOutcome",
    "StageVerdict",
    "finalize_run",
    "propagate_blocked",
    "unmet_prerequisite",
]

NOT_IMPLEMENTED_REASON: Final = "codeflux cannot perform this stage yet"


class StageOutcome(StrEnum):
    """The five outcomes a stage can have in the ledger."""

    SATISFIED = "satisfied"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"
    NOT_IMPLEMENTED = "not-implemented"


_EVALUATED: Final = frozenset({StageOutcome.SATISFIED, StageOutcome.FAILED})
_NEEDS_REASON: Final = frozenset({StageOutcome.SKIPPED, StageOutcome.BLOCKED, StageOutcome.NOT_IMPLEMENTED})
_NOT_RUN: Final = frozenset({StageOutcome.BLOCKED, StageOutcome.NOT_IMPLEMENTED})
# A prerequisite with one of these outcomes did not hold, so the stages after it cannot run.
_DID_NOT_HOLD: Final = frozenset({StageOutcome.FAILED, StageOutcome.BLOCKED})


@dataclass(frozen=True, slots=True, kw_only=True)
class StageVerdict:
    """The outcome of one stage in one run, with the evaluation or reason its outcome requires.

    ``gate_evaluation`` says what was checked and what was seen; ``satisfied`` and ``failed`` need it,
    ``skipped`` may keep it, ``blocked`` and ``not-implemented`` must not have it (they did not run).
    ``reason`` says why a stage was ``skipped``, ``blocked`` or ``not-implemented``, and is required for
    those. Construction raises :class:`InvalidValueError` when the pair does not fit the outcome, or when
    the outcome does not fit what codeflux can perform for that stage.
    """

    stage: StageName
    outcome: StageOutcome
    gate_evaluation: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        problem = _verdict_problem(self)
        if problem is not None:
            raise InvalidValueError(kind="stage verdict", reason=f"{self.stage.value} {self.outcome.value}: {problem}")

    @classmethod
    def as_recorded(cls, *, stage: StageName, outcome: StageOutcome, gate_evaluation: str | None,
                    reason: str | None) -> StageVerdict:
        """A verdict read back from the ledger: checked like a new one, except against what codeflux performs
        *today* — a row an older codeflux recorded ``not-implemented`` for a stage it performs now is still
        the truth about that attempt."""
        verdict = object.__new__(cls)
        for name, value in (("stage", stage), ("outcome", outcome), ("gate_evaluation", gate_evaluation),
                            ("reason", reason)):
            object.__setattr__(verdict, name, value)
        problem = _verdict_problem(verdict, against_catalog=False)
        if problem is not None:
            raise InvalidValueError(kind="stage verdict", reason=f"{stage.value} {outcome.value}: {problem}")
        return verdict


def _verdict_problem(verdict: StageVerdict, *, against_catalog: bool = True) -> str | None:
    outcome = verdict.outcome
    if outcome in _EVALUATED and not (verdict.gate_evaluation or "").strip():
        return "needs the gate evaluation (what was checked and what was seen)"
    if outcome in _NEEDS_REASON and not (verdict.reason or "").strip():
        return "needs a reason"
    if outcome in _NOT_RUN and verdict.gate_evaluation is not None:
        return "did not run, so it cannot carry a gate evaluation"
    if not against_catalog:
        return None
    performable = stage_named(verdict.stage).performable
    if outcome is StageOutcome.NOT_IMPLEMENTED and performable:
        return "codeflux performs this stage, so it cannot be recorded as not implemented"
    if outcome not in _NOT_RUN and not performable:
        return "codeflux cannot perform this stage; it is not-implemented or blocked"
    return None


def unmet_prerequisite(stage: StageName, outcomes: Mapping[StageName, StageOutcome]) -> StageName | None:
    """The first prerequisite of ``stage`` (in catalog order) that failed or is blocked, else None.

    A prerequisite with no outcome yet does not count as unmet: the run has not decided it.
    """
    for prerequisite in stage_named(stage).prerequisites:
        if outcomes.get(prerequisite) in _DID_NOT_HOLD:
            return prerequisite
    return None


def propagate_blocked(outcomes: Mapping[StageName, StageOutcome]) -> dict[StageName, StageOutcome]:
    """``outcomes`` with every stage whose prerequisite did not hold turned ``blocked``, transitively.

    Stages without an outcome stay absent unless a prerequisite makes them blocked. The result is in
    stage order; applying the function twice changes nothing more.
    """
    result: dict[StageName, StageOutcome] = {}
    for stage in STAGES:  # prerequisites point to earlier stages, so one pass in order suffices
        if unmet_prerequisite(stage.name, result) is not None:
            result[stage.name] = StageOutcome.BLOCKED
        elif stage.name in outcomes:
            result[stage.name] = outcomes[stage.name]
    return result


def finalize_run(verdicts: Iterable[StageVerdict], *, stopped_at: StageName | None) -> tuple[StageVerdict, ...]:
    """The complete verdicts of a run that ended, one per stage in stage order.

    ``verdicts`` are those the run recorded (at most one per stage). ``stopped_at`` is the stage during
    which the run stopped early (a question for the user, a stall at the top of the ladder, a
    cancellation), or None when it went through every stage. Stages after ``stopped_at`` — and
    ``stopped_at`` itself when nothing was recorded for it — become ``blocked``; a stage recorded after
    the stop point is refused as inconsistent. A recorded verdict whose prerequisite did not hold is
    replaced by ``blocked`` naming that prerequisite (blocked propagation wins). Raises
    :class:`InvalidValueError` for a stage recorded twice.
    """
    recorded = _index_verdicts(verdicts)
    stop_number = None if stopped_at is None else stage_named(stopped_at).number
    if stop_number is not None:
        late = [name.value for name in recorded if stage_named(name).number > stop_number]
        if late:
            raise InvalidValueError(
                kind="stage ledger", reason=f"the run stopped at {stopped_at} but recorded {', '.join(late)}"
            )
    finished: dict[StageName, StageVerdict] = {}
    outcomes: dict[StageName, StageOutcome] = {}
    for stage in STAGES:
        unmet = unmet_prerequisite(stage.name, outcomes)
        after_stop = stop_number is not None and stage.number > stop_number
        if unmet is None and stage.name in recorded:
            verdict = recorded[stage.name]
        elif after_stop:
            verdict = _blocked(stage.name, f"the run stopped at {stopped_at} before this stage")
        elif unmet is not None:
            verdict = _blocked(stage.name, f"prerequisite {unmet} did not hold ({outcomes[unmet]})")
        elif stage.number == stop_number:
            verdict = _blocked(stage.name, "the run stopped during this stage before it was decided")
        elif stage.performable:
            verdict = _blocked(stage.name, "the run ended without deciding this stage")
        else:
            verdict = StageVerdict(
                stage=stage.name, outcome=StageOutcome.NOT_IMPLEMENTED, reason=NOT_IMPLEMENTED_REASON
            )
        finished[stage.name] = verdict
        outcomes[stage.name] = verdict.outcome
    return tuple(finished.values())


def _blocked(stage: StageName, reason: str) -> StageVerdict:
    return StageVerdict(stage=stage, outcome=StageOutcome.BLOCKED, reason=reason)


def _index_verdicts(verdicts: Iterable[StageVerdict]) -> dict[StageName, StageVerdict]:
    indexed: dict[StageName, StageVerdict] = {}
    for verdict in verdicts:
        if verdict.stage in indexed:
            raise InvalidValueError(kind="stage ledger", reason=f"{verdict.stage} is recorded twice")
        indexed[verdict.stage] = verdict
    return indexed
