"""Phase F — verification depth: 30 global-invariants, 31 adversarial (:mod:`~codeflux.pipeline.adversarial`, a
send-back gate), 32 repetition, 33 platform-matrix and 34 non-functional.

The runner calls :func:`record_phase_f` after 29 end-to-end-tests and before 35 evidence-bundle; the five verdicts
are recorded in one ledger write, in stage order. No verdict here blocks phase E (it has run) or the evidence
bundle (which reports them); 31's failure sends the work back (the coordinator's runner reads it). Within the
phase: 30 and 33 look at an assembled diff; 32 repeats a suite that passed in file order (stage 28 held), and 34
times 32's runs against as many on the base revision, interleaved in the same run
(:mod:`~codeflux.pipeline.repetition`). 30 may run beside 31 or 33 (:mod:`~codeflux.pipeline.concurrency`; those two
write under the task's TMPDIR, one at a time); 32 runs alone — nothing beside the runs 34 times — and 34 after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.adversarial import evaluate_adversarial
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.concurrency import Scheduled, concurrency_of, evaluate_stages
from codeflux.pipeline.global_invariants import evaluate_global_invariants
from codeflux.pipeline.platform_matrix import evaluate_platform_matrix
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.repetition import Repetition, evaluate_non_functional, evaluate_repetition
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["PHASE_F_STAGES", "record_phase_f"]

PHASE_F_STAGES = (StageName.GLOBAL_INVARIANTS, StageName.ADVERSARIAL, StageName.REPETITION,
                  StageName.PLATFORM_MATRIX, StageName.NON_FUNCTIONAL)
"""The stages recorded here, in stage order."""


def record_phase_f(ports: PipelinePorts, attempt: int, assembly: StageResult, *, integration: StageVerdict,
                   integration_evidence: Mapping[str, object], changed: Sequence[str] = (),
                   atoms: AtomFacts | None = None) -> tuple[StageResult, ...]:
    """Evaluate and record 30–34 (see the module docstring) — 31 on the ``changed`` paths and phase B's ``atoms``;
    returns what was recorded."""
    if assembly.verdict.outcome is not StageOutcome.SATISFIED:
        reason = "the diff did not assemble (stage 26 assembly did not hold); phase F looks at an assembled diff only"
        results: tuple[StageResult, ...] = tuple(stage_result(stage, StageOutcome.BLOCKED, reason, {})
                                                 for stage in PHASE_F_STAGES)
    else:
        repeated: list[Repetition] = []

        def repetition() -> StageResult:
            repeated.append(evaluate_repetition(ports, attempt=attempt, integration=integration,
                                                integration_evidence=integration_evidence))
            return repeated[0].result

        results = evaluate_stages((
            Scheduled(stage=StageName.GLOBAL_INVARIANTS, evaluate=lambda: evaluate_global_invariants(ports, assembly)),
            Scheduled(stage=StageName.ADVERSARIAL, scratch=True,
                      evaluate=lambda: evaluate_adversarial(ports, attempt=attempt, changed=changed, atoms=atoms)),
            Scheduled(stage=StageName.REPETITION, evaluate=repetition, alone=True),
            Scheduled(stage=StageName.PLATFORM_MATRIX, scratch=True, evaluate=lambda: evaluate_platform_matrix(
                ports, attempt=attempt, assembly=assembly, integration_evidence=integration_evidence)),
            Scheduled(stage=StageName.NON_FUNCTIONAL, after=frozenset({StageName.REPETITION}),
                      evaluate=lambda: evaluate_non_functional(ports.settings, repeated[0])),
        ), concurrency=concurrency_of(ports.settings))
    ports.ledger.record_stage_verdicts(ports.facts.task_id, attempt, [result.verdict for result in results],
                                       evidence={result.verdict.stage: result.evidence for result in results})
    return results
