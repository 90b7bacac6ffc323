"""Phase A, the stages codeflux performs: 1 instructions, 2 clarification, 3 atomic-instructions and 4
decomposition-coverage.

**instructions** holds when the task has at least one executable acceptance example
(:mod:`codeflux.domain.acceptance`): the person's own ``<<<ACCEPTANCE`` blocks in the requirement when it
has any, else the examples the planner proposed with the plan revision the person approved. The evidence
says which, lists them, and lists every block that did not parse (never guessed at).

**atomic-instructions** reads the approved plan revision: no two steps may share a title. The files a step
names (``expected_files``) are the planner's hint, shown to the person with the plan: a step without them
still holds (the evidence lists such steps as a finding, not a failure), since the work is judged by its
checks and examples, not by which files it wrote. The evidence records the revision, its hash and each
step; the tie of each step to the requirement is the person's approval of that exact revision, which the
evidence names.

**clarification** reads what the planner recorded in the approved revision (:mod:`codeflux.domain.clarification`):
the policy, the commit the named paths and identifiers were looked up in (the checkout's HEAD when the plan was
drafted; the evidence says so when the task's base differs), the names checked, and every question with its
answer or its stated assumption. It holds when no question is left open (approval is
refused while one is, so after approval it holds). A revision that records no clarification check (not
drafted by the planner) is ``skipped`` with that reason — the check was not run, so nothing is claimed.
The evidence says that the meaning of the requirement is not judged.

**decomposition-coverage** reads the approved revision's trace: every acceptance example (numbered in the
order :func:`~codeflux.domain.acceptance.acceptance_of` gives) must be served by at least one step, else it
``failed`` naming the uncovered examples; requirement sentences no step names are listed as findings, not a
failure. A revision without a trace (not drafted by the planner, or recorded before traces existed) is
``skipped`` with the reason "no trace: coverage was not measured" — never ``failed`` (nothing was measured)
and never ``satisfied`` (nothing was shown). The stage is advisory: a failed coverage is visible in the ledger
and the evidence bundle but does not stop the run — and approval already refuses a trace that misses an
example, so it fails only for a revision approved some other way. The evidence says that only completeness
is checked, never whether a step really serves what it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.acceptance import AcceptanceSource, acceptance_of
from codeflux.domain.clarification import requirement_sentences, trace_coverage
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.ports import TaskFacts

__all__ = [
    "StageResult",
    "acceptance_for",
    "evaluate_atomic_instructions",
    "evaluate_clarification",
    "evaluate_decomposition_coverage",
    "evaluate_instructions",
    "stage_result",
]

_CLARIFICATION_CHECKS = (
    "every path or identifier the requirement names explicitly (backticked, or a path-like token) exists in "
    "the repository at the base commit, or a plan step creates it",
    "no two acceptance examples run the same command expecting different output",
    "the planner's own questions",
)
_NOT_JUDGED_MEANING = ("whether the requirement is ambiguous in meaning: no meaning or vagueness check ran, only "
                       "the checks listed")
_NOT_JUDGED_SERVING = ("whether a step really serves the examples and sentences it names: only the trace's "
                       "completeness was checked")


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResult:
    """A stage's verdict and the evidence recorded with it (a JSON object)."""

    verdict: StageVerdict
    evidence: dict[str, object]


def stage_result(stage: StageName, outcome: StageOutcome, text: str, evidence: dict[str, object]) -> StageResult:
    """A stage's result: ``text`` is the reason of a stage that did not run (blocked, skipped), else what its
    gate evaluated. A ``blocked`` stage carries no evidence (the ledger refuses any: its reason says what did not
    hold), whatever ``evidence`` holds."""
    if outcome is StageOutcome.BLOCKED:
        return StageResult(verdict=StageVerdict(stage=stage, outcome=outcome, reason=text), evidence={})
    if outcome is StageOutcome.SKIPPED:
        return StageResult(verdict=StageVerdict(stage=stage, outcome=outcome, reason=text), evidence=evidence)
    return StageResult(verdict=StageVerdict(stage=stage, outcome=outcome, gate_evaluation=text), evidence=evidence)


def acceptance_for(facts: TaskFacts) -> AcceptanceSource:
    """The examples this task is checked against (stages 1 and 29), and where they came from."""
    return acceptance_of(facts.requirement, facts.plan.examples, plan_revision=facts.plan_revision,
                         edited_in=facts.plan.examples_edited_in)


def evaluate_instructions(facts: TaskFacts) -> StageResult:
    """Stage 1: at least one executable acceptance example, from the requirement or the approved plan."""
    found = acceptance_for(facts)
    evidence: dict[str, object] = {"source": found.source,
                                   "examples": [{**example.to_document(), "origin": origin}
                                                for example, origin in zip(found.examples, found.origins, strict=True)],
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
    """Stage 3: the approved plan's steps are distinct units; the files they name are a hint, not required."""
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
            f"{len(steps) - len(without_files)} name the files they expect to touch (a hint, not required)")
    if repeated:
        seen += f"; repeated step titles: {', '.join(repeated)}"
    outcome = StageOutcome.FAILED if repeated else StageOutcome.SATISFIED
    verdict = StageVerdict(stage=StageName.ATOMIC_INSTRUCTIONS, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)


def evaluate_clarification(facts: TaskFacts) -> StageResult:
    """Stage 2: the approved revision's clarification check ran and left no question open (see the module
    docstring); ``skipped`` when the revision records no check."""
    plan = facts.plan
    if plan.clarity is None:
        verdict = StageVerdict(stage=StageName.CLARIFICATION, outcome=StageOutcome.SKIPPED,
                               reason=f"plan revision {facts.plan_revision} records no clarification check (it was "
                                      "not drafted by the planner): nothing was checked, so nothing is claimed")
        return StageResult(verdict=verdict, evidence={"plan_revision": facts.plan_revision, "checked": False})
    questions = [{"number": number, "origin": q.origin.value, "question": q.question,
                  "status": "answered" if q.answer is not None else "assumed" if q.assumed else "open",
                  "answer": q.answer, "assumption": q.assumption if q.assumed else None}
                 for number, q in enumerate(plan.questions, start=1)]
    evidence: dict[str, object] = {
        "plan_revision": facts.plan_revision, "plan_sha256": facts.plan_sha256, "checked": True,
        "policy": plan.clarity.policy.value, "base_commit": plan.clarity.base_commit,
        "task_base_revision": facts.worktree.base,
        "checks": list(_CLARIFICATION_CHECKS), "names_checked": list(plan.clarity.names), "questions": questions,
        "assumptions": [f"question {q['number']}: {q['assumption']}" for q in questions if q["status"] == "assumed"],
        "not_judged": _NOT_JUDGED_MEANING,
    }
    open_numbers = [str(q["number"]) for q in questions if q["status"] == "open"]
    counts = {status: sum(1 for q in questions if q["status"] == status) for status in ("answered", "assumed")}
    seen = (f"{len(plan.clarity.names)} named path(s)/identifier(s) looked up at {plan.clarity.base_commit[:12]}, "
            f"examples compared; {len(questions)} question(s): {counts['answered']} answered, {counts['assumed']} "
            f"assumed (policy {plan.clarity.policy.value}); meaning not judged")
    if facts.worktree.base != plan.clarity.base_commit:
        seen += (f"; the names were looked up when the plan was drafted, at {plan.clarity.base_commit[:12]}, not at "
                 f"the task's base {facts.worktree.base[:12]}")
    if open_numbers:
        seen += f"; open: {', '.join(open_numbers)}"
    outcome = StageOutcome.FAILED if open_numbers else StageOutcome.SATISFIED
    return StageResult(verdict=StageVerdict(stage=StageName.CLARIFICATION, outcome=outcome, gate_evaluation=seen),
                       evidence=evidence)


def evaluate_decomposition_coverage(facts: TaskFacts) -> StageResult:
    """Stage 4: the approved revision's trace serves every acceptance example (see the module docstring);
    ``skipped`` for a revision without a trace."""
    plan = facts.plan
    if plan.trace is None:
        verdict = StageVerdict(stage=StageName.DECOMPOSITION_COVERAGE, outcome=StageOutcome.SKIPPED,
                               reason=f"plan revision {facts.plan_revision} has no trace (it was not drafted by the "
                                      "planner): coverage was not measured")
        return StageResult(verdict=verdict, evidence={"plan_revision": facts.plan_revision, "trace": None})
    examples = acceptance_for(facts).examples
    sentences = requirement_sentences(facts.requirement)
    coverage = trace_coverage([(t.examples, t.sentences) for t in plan.trace], examples=len(examples),
                              sentences=len(sentences))
    evidence: dict[str, object] = {
        "plan_revision": facts.plan_revision, "plan_sha256": facts.plan_sha256,
        "trace": [{"step": number, "title": step.title, "examples": list(t.examples), "sentences": list(t.sentences)}
                  for number, (step, t) in enumerate(zip(plan.steps, plan.trace, strict=True), start=1)],
        "examples": [{"number": n, "example": e.describe()} for n, e in enumerate(examples, start=1)],
        "sentences": [{"number": n, "sentence": text} for n, text in enumerate(sentences, start=1)],
        "uncovered_examples": [{"number": n, "example": examples[n - 1].describe()}
                               for n in coverage.uncovered_examples],
        "uncovered_sentences": [{"number": n, "sentence": sentences[n - 1]} for n in coverage.uncovered_sentences],
        "unknown_numbers": {"examples": list(coverage.unknown_examples),
                            "sentences": list(coverage.unknown_sentences)},
        "not_judged": _NOT_JUDGED_SERVING,
    }
    seen = (f"{len(examples) - len(coverage.uncovered_examples)} of {len(examples)} acceptance example(s) and "
            f"{len(sentences) - len(coverage.uncovered_sentences)} of {len(sentences)} requirement sentence(s) are "
            f"named by a step of plan revision {facts.plan_revision}; completeness only, meaning not judged")
    if coverage.uncovered_sentences:
        seen += f"; sentences no step names: {', '.join(map(str, coverage.uncovered_sentences))}"
    if coverage.uncovered_examples:
        listed = "; ".join(f"{n}: {examples[n - 1].describe()}" for n in coverage.uncovered_examples)
        seen += f"; examples no step serves — {listed}"
    outcome = StageOutcome.FAILED if coverage.uncovered_examples else StageOutcome.SATISFIED
    verdict = StageVerdict(stage=StageName.DECOMPOSITION_COVERAGE, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)
