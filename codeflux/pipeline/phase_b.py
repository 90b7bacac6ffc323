"""Phase B — the atoms — with stages 5 contracts and 6 recall: the checks of each function the diff adds or changes.

They are recorded in stage order before 26 assembly, but evaluated after assembly's own check (the diff must
exist and compile before anything looks at its atoms, and assembly "runs before anything else"): the runner
evaluates assembly, hands its result here, records what :data:`ATOM_STAGES` decide in one ledger write, then
records assembly. Independent stages are evaluated side by side (:mod:`~codeflux.pipeline.concurrency`; each
:class:`AtomStage` names what it waits for and whether it writes scratch copies). No verdict here can block
phase E: assembly and the tests always run (ARCHITECTURE §8.2).

When assembly failed, every stage here is recorded ``blocked`` naming that: they look at an assembled diff only.
Stages that are not in :data:`ATOM_STAGES` are filled by the ledger (``not-implemented``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.anti_patterns import evaluate_anti_patterns
from codeflux.pipeline.atom_coverage import atom_coverage, judge_on_coverage
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atom_properties import evaluate_atom_property_tests
from codeflux.pipeline.atom_verification import evaluate_atom_verification
from codeflux.pipeline.atoms import atoms_of_diff
from codeflux.pipeline.case_synthesis import evaluate_atom_case_synthesis
from codeflux.pipeline.complexity import evaluate_atom_complexity
from codeflux.pipeline.concurrency import Scheduled, concurrency_of, evaluate_stages
from codeflux.pipeline.contracts import evaluate_contracts
from codeflux.pipeline.documentation import evaluate_atom_documentation
from codeflux.pipeline.fuzz import evaluate_atom_fuzz
from codeflux.pipeline.growth import GrowthRun
from codeflux.pipeline.mutation import evaluate_atom_mutation
from codeflux.pipeline.optimization import evaluate_atom_optimization
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.purity import evaluate_purity
from codeflux.pipeline.recall import evaluate_recall
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["ATOM_STAGES", "AtomFacts", "AtomStage", "atom_facts_of", "record_atom_stages"]

@dataclass(frozen=True, slots=True, kw_only=True)
class AtomStage:
    """One stage of this phase: its name and its evaluation."""

    stage: StageName
    evaluate: Callable[[AtomFacts], StageResult]
    after: frozenset[StageName] = frozenset()
    """The stages of the batch whose measurements or records this one reads (:mod:`~codeflux.pipeline.concurrency`)."""
    scratch: bool = False
    """It writes under the task's TMPDIR: scratch copies (stubs, mutants, a copy to fuzz or time in) or its check
    reports in the check folder, which it clears when it ends."""
    reads_coverage: bool = False
    """Its gate reads the coverage map: when it fails on tests selected from memory it is judged again on the whole
    test command (:func:`~codeflux.pipeline.atom_coverage.judge_on_coverage`). Only stages whose evaluation may run
    twice (a stage recording obligations may not)."""

    def judge(self, facts: AtomFacts) -> StageResult:
        return judge_on_coverage(facts, self.evaluate) if self.reads_coverage else self.evaluate(facts)


ATOM_STAGES: Final[tuple[AtomStage, ...]] = (
    AtomStage(stage=StageName.CONTRACTS, evaluate=evaluate_contracts),
    AtomStage(stage=StageName.RECALL, evaluate=evaluate_recall),  # asks memory; writes nothing under TMPDIR
    AtomStage(stage=StageName.ATOM_CASE_SYNTHESIS, evaluate=evaluate_atom_case_synthesis, scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.ATOM_EXAMPLE_TESTS, evaluate=evaluate_atom_example_tests, scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.ATOM_PROPERTY_TESTS, evaluate=evaluate_atom_property_tests, reads_coverage=True),
    AtomStage(stage=StageName.ATOMS, evaluate=evaluate_purity),
    AtomStage(stage=StageName.ATOM_VERIFICATION, evaluate=evaluate_atom_verification, scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.ATOM_FUZZ, evaluate=evaluate_atom_fuzz, scratch=True),
    # stage 8 judged the stubs and this stage's mutants in one run (mutation.SWITCHES_KEY)
    AtomStage(stage=StageName.ATOM_MUTATION, evaluate=evaluate_atom_mutation,
              after=frozenset({StageName.ATOM_EXAMPLE_TESTS}), scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.ANTI_PATTERNS, evaluate=lambda facts: evaluate_anti_patterns(facts.diff)),
    AtomStage(stage=StageName.ATOM_OPTIMIZATION, evaluate=lambda facts: evaluate_atom_optimization(facts.diff)),
    AtomStage(stage=StageName.ATOM_COMPLEXITY,
              evaluate=lambda facts: evaluate_atom_complexity(facts.diff, settings=facts.ports.settings,
                                                              growth=_growth_run(facts)), scratch=True),
    AtomStage(stage=StageName.ATOM_DOCUMENTATION, evaluate=lambda facts: evaluate_atom_documentation(facts.diff)),
)
"""The stages evaluated here, in stage order."""


def _growth_run(facts: AtomFacts) -> GrowthRun:
    """Stage 16's growth timing: the ports, the attempt and every changed path (the timing copy's overlay)."""
    return GrowthRun(ports=facts.ports, attempt=facts.attempt,
                     changed=facts.changed_paths)


def _changed_files(assembly: StageResult) -> list[Mapping[str, object]]:
    files = assembly.evidence.get("files")
    return [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []


def atom_facts_of(ports: PipelinePorts, attempt: int, assembly: StageResult) -> AtomFacts | None:
    """What the stages here are handed — the diff's atoms on assembly's diff — or None when it did not assemble."""
    if assembly.verdict.outcome is not StageOutcome.SATISFIED:
        return None
    return AtomFacts(ports=ports, attempt=attempt, assembly=assembly,
                     diff=atoms_of_diff(ports.facts.worktree, _changed_files(assembly)))


def record_atom_stages(ports: PipelinePorts, attempt: int, assembly: StageResult,
                       stages: tuple[AtomStage, ...] = ATOM_STAGES, *, facts: AtomFacts | None = None
                       ) -> tuple[StageResult, ...]:
    """Evaluate and record ``stages`` (see the module docstring) with ``facts`` (:func:`atom_facts_of`'s, which a
    caller passes to read what they measured afterwards; made here when not given); returns what was recorded."""
    if not stages:
        return ()
    given = (facts or atom_facts_of(ports, attempt, assembly)) \
        if assembly.verdict.outcome is StageOutcome.SATISFIED else None
    if given is None:
        reason = "the diff did not assemble (stage 26 assembly did not hold); phases B–D look at an assembled diff only"
        results = tuple(stage_result(stage.stage, StageOutcome.BLOCKED, reason, {}) for stage in stages)
    else:
        concurrency = concurrency_of(ports.settings)
        selected = False
        if concurrency > 1 and given.diff.atoms:
            # the one coverage run, before the stages that read it may run side by side; on tests selected from
            # memory a stage reading it may measure again (the whole suite, in the check folder): one at a time then
            selected = atom_coverage(given).selected
        results = evaluate_stages([Scheduled(stage=stage.stage, evaluate=partial(stage.judge, given),
                                             after=stage.after, scratch=stage.scratch or (selected and
                                                                                          stage.reads_coverage))
                                   for stage in stages], concurrency=concurrency)
    ports.ledger.record_stage_verdicts(ports.facts.task_id, attempt, [result.verdict for result in results],
                                       evidence={result.verdict.stage: result.evidence for result in results})
    return results
