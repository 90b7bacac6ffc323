"""Phase B — the atoms — and stage 5 contracts: the checks that look at each function the diff adds or changes.

They are recorded in stage order before 26 assembly, but evaluated after assembly's own check (the diff must
exist and compile before anything looks at its atoms, and assembly "runs before anything else"): the runner
evaluates assembly, hands its result here, records what :data:`ATOM_STAGES` decide in one ledger write, then
records assembly. No verdict here can block phase E: assembly and the tests always run (ARCHITECTURE §8.2).

When assembly failed, every stage here is recorded ``blocked`` naming that: they look at an assembled diff only.
Stages that are not in :data:`ATOM_STAGES` are filled by the ledger (``not-implemented``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.atoms import DiffAtoms, atoms_of_diff
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["ATOM_STAGES", "AtomFacts", "AtomStage", "record_atom_stages"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomFacts:
    """What every phase B stage is handed: the ports, the attempt, the diff's atoms and assembly's result."""

    ports: PipelinePorts
    attempt: int
    diff: DiffAtoms
    assembly: StageResult

    @property
    def diff_identity(self) -> str | None:
        identity = self.assembly.evidence.get("diff_identity")
        return identity if isinstance(identity, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomStage:
    """One stage of this phase: its name and its evaluation."""

    stage: StageName
    evaluate: Callable[[AtomFacts], StageResult]


ATOM_STAGES: Final[tuple[AtomStage, ...]] = (
    AtomStage(stage=StageName.ATOM_EXAMPLE_TESTS, evaluate=evaluate_atom_example_tests),
)
"""The stages evaluated here, in stage order."""


def _changed_files(assembly: StageResult) -> list[Mapping[str, object]]:
    files = assembly.evidence.get("files")
    return [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []


def record_atom_stages(ports: PipelinePorts, attempt: int, assembly: StageResult,
                       stages: tuple[AtomStage, ...] = ATOM_STAGES) -> tuple[StageResult, ...]:
    """Evaluate and record ``stages`` (see the module docstring); returns what was recorded."""
    if not stages:
        return ()
    if assembly.verdict.outcome is not StageOutcome.SATISFIED:
        reason = "the diff did not assemble (stage 26 assembly did not hold); phase B looks at an assembled diff only"
        results = tuple(stage_result(stage.stage, StageOutcome.BLOCKED, reason, {}) for stage in stages)
    else:
        facts = AtomFacts(ports=ports, attempt=attempt, assembly=assembly,
                          diff=atoms_of_diff(ports.facts.worktree, _changed_files(assembly)))
        results = tuple(stage.evaluate(facts) for stage in stages)
    ports.ledger.record_stage_verdicts(ports.facts.task_id, attempt, [result.verdict for result in results],
                                       evidence={result.verdict.stage: result.evidence for result in results})
    return results
