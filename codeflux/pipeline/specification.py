"""Phase A, the stages codeflux performs: 1 instructions and 3 atomic-instructions.

**instructions** holds when the task has at least one executable acceptance example
(:mod:`codeflux.domain.acceptance`): the person's own ``<<<ACCEPTANCE`` blocks in the requirement when it
has any, else the examples the planner proposed with the plan revision the person approved. The evidence
says which, lists them, and lists every block that did not parse (never guessed at).

**atomic-instructions** reads the approved plan revision: every step must name the files it expects to
create or change (the implementation loop counts a step done only when a write to one of them
succeeded, so a step without files could never be shown done), and no two steps may share a title.
The evidence records the revision, its hash and each step; the tie of each step to the requirement is
the person's approval of that exact revision, which the evidence names.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.acceptance import AcceptanceSource, acceptance_of
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.ports import TaskFacts

__all__ = [
    "StageResult",
    "acceptance_for",
    "evaluate_atomic_instructions",
    "evaluate_instructions",
    "stage_result",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResult:
    """A stage's verdict and the evidence recorded with it (a JSON object)."""

    verdict: StageVerdict
    evidence: dict[str, object]


def stage_result(stage: StageName, outcome: StageOutcome, text: str, evidence: dict[str, object]) -> StageResult:
    """A stage's result: ``text`` is the reason of a stage that did not run (blocked, skipped), else what its
    gate evaluated."""
    if outcome in (StageOutcome.BLOCKED, StageOutcome.SKIPPED):
        return StageResult(verdict=StageVerdict(stage=stage, outcome=outcome, reason=text), evidence=evidence)
    return StageResult(verdict=StageVerdict(stage=stage, outcome=outcome, gate_evaluation=text), evidence=evidence)


def acceptance_for(facts: TaskFacts) -> AcceptanceSource:
    """The examples this task is checked against (stages 1 and 29), and where they came from."""
    return acceptance_of(facts.requirement, facts.plan.examples, plan_revision=facts.plan_revision)


def evaluate_instructions(facts: TaskFacts) -> StageResult:
    """Stage 1: at least one executable acceptance example, from the requirement or the approved plan."""
    found = acceptance_for(facts)
    evidence: dict[str, object] = {"source": found.source,
                                   "examples": [example.to_document() for example in found.examples],
                                   "problems": list(found.problems)}
    seen = f"{len(found.examples)} acceptance example(s); source: {found.source}"
    if found.problems:
        seen += f"; {len(found.problems)} ACCEPTANCE block(s) did not parse"
    outcome = StageOutcome.SATISFIED if found.examples else StageOutcome.FAILED
    if not found.examples:
        seen += ("; send the plan back asking for an example (a test to add or make pass, or a command and its "
                 "output), or write an <<<ACCEPTANCE block")
    verdict = StageVerdict(stage=StageName.INSTRUCTIONS, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)


def evaluate_atomic_instructions(facts: TaskFacts) -> StageResult:
    """Stage 3: the approved plan's steps are single-purpose units with their expected files."""
    steps = facts.plan.steps
    without_files = [step.title for step in steps if not step.expected_files]
    titles = [step.title for step in steps]
    repeated = sorted({title for title in titles if titles.count(title) > 1})
    evidence: dict[str, object] = {
        "plan_revision": facts.plan_revision, "plan_sha256": facts.plan_sha256,
        "approved_by": "the person who approved this exact revision and hash",
        "steps": [{"title": step.title, "expected_files": list(step.expected_files)} for step in steps],
        "steps_without_files": without_files, "repeated_titles": repeated,
    }
    seen = (f"plan revision {facts.plan_revision} has {len(steps)} step(s); "
            f"{len(steps) - len(without_files)} name their expected files")
    if repeated:
        seen += f"; repeated step titles: {', '.join(repeated)}"
    outcome = StageOutcome.FAILED if without_files or repeated else StageOutcome.SATISFIED
    verdict = StageVerdict(stage=StageName.ATOMIC_INSTRUCTIONS, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)
