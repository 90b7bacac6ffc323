"""The stage runner: evaluate the real stages of one attempt in stage order and record them.

:func:`record_specification` records 1 instructions, 2 clarification, 3 atomic-instructions and 4
decomposition-coverage (the implementation loop starts only when 1–3 held — ``skipped`` counts as held,
it only says what was not measured; 4 is advisory: its failure is recorded and reported, never a stop, so
the tests always run). :func:`run_pipeline` records what is still missing of those, then 26 assembly, 27
program (an advisory wheel build), 28 integration-tests, 29 end-to-end-tests (the acceptance examples,
looked up in 28's report or run) — with the base revision's run between them when failed tests or the
examples need it (:mod:`~codeflux.pipeline.base_revision`) — phase F (30–34: :mod:`~codeflux.pipeline.phase_f`,
31 adversarial among them: the change's commands on hostile input), 35 evidence-bundle and — when a person has
decided — 36 and 37, each as one ledger write with its evidence, and ends the attempt with ``finish_attempt``:

* a failed specification stage or a failed assembly stops the run at that stage: everything after it is
  ``blocked``;
* failed tests, examples or hostile-input runs do not stop it: the evidence bundle reports them, and the runner
  sends the work back (28, 29 and 31 are send-back gates);
* without an acceptance decision the run stops at human-acceptance (the task awaits review);
* stages codeflux cannot perform are ``not-implemented`` by the ledger rules, never claimed.

Returns every stage's verdict as stored (37, in stage order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.gitwork.base_scratch import remove_base_scratch
from codeflux.pipeline.assembly import evaluate_assembly
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.base_revision import SCRATCH_FOLDER, BaseRun, base_overlay, integration_with_base, measure_base
from codeflux.pipeline.build import evaluate_program
from codeflux.pipeline.delivery import evaluate_deliver, evaluate_evidence_bundle, evaluate_human_acceptance
from codeflux.pipeline.examples import evaluate_end_to_end_tests
from codeflux.pipeline.mocking import mocking_evidence
from codeflux.pipeline.phase_b import ATOM_STAGES, atom_facts_of, record_atom_stages
from codeflux.pipeline.phase_cd import PHASE_CD
from codeflux.pipeline.phase_f import record_phase_f
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JunitCounts, run_integration_tests
from codeflux.pipeline.specification import (
    StageResult,
    acceptance_for,
    evaluate_atomic_instructions,
    evaluate_clarification,
    evaluate_decomposition_coverage,
    evaluate_instructions,
)

__all__ = ["record_specification", "run_pipeline"]


def _record(ports: PipelinePorts, task_id: TaskId, attempt: int, result: StageResult) -> StageVerdict:
    rows = ports.ledger.record_stage_verdicts(task_id, attempt, [result.verdict],
                                              evidence={result.verdict.stage: result.evidence})
    # Blocked propagation may have replaced the verdict; the stored one is what counts.
    return next(row.verdict for row in rows if row.verdict.stage is result.verdict.stage)


def _recorded(ports: PipelinePorts, task_id: TaskId, attempt: int) -> dict[StageName, StageVerdict]:
    return {row.verdict.stage: row.verdict for row in ports.ledger.ledger(task_id, attempt)}


_HELD: Final = frozenset({StageOutcome.SATISFIED, StageOutcome.SKIPPED})


def record_specification(task_id: TaskId, attempt: int, *, ports: PipelinePorts) -> StageVerdict | None:
    """Record stages 1–4 unless already recorded; return the first of 1–3 that did not hold, else None
    (stage 4 is recorded, never returned: it is advisory)."""
    recorded = _recorded(ports, task_id, attempt)
    for stage, evaluate in ((StageName.INSTRUCTIONS, evaluate_instructions),
                            (StageName.CLARIFICATION, evaluate_clarification),
                            (StageName.ATOMIC_INSTRUCTIONS, evaluate_atomic_instructions)):
        verdict = recorded.get(stage) or _record(ports, task_id, attempt, evaluate(ports.facts))
        if verdict.outcome not in _HELD:
            return verdict
    if StageName.DECOMPOSITION_COVERAGE not in recorded:
        _record(ports, task_id, attempt, evaluate_decomposition_coverage(ports.facts))
    return None


def _finish(ports: PipelinePorts, task_id: TaskId, attempt: int, stopped_at: StageName | None
            ) -> tuple[StageVerdict, ...]:
    return tuple(row.verdict for row in ports.ledger.finish_attempt(task_id, attempt, stopped_at=stopped_at))


def _base_runs(ports: PipelinePorts, attempt: int, tests: StageResult, junit: JunitCounts | None,
               assembly: StageResult) -> tuple[BaseRun | None, BaseRun | None]:
    """The base revision's runs that something needs (see :mod:`~codeflux.pipeline.base_revision`): with its
    own test files when tests failed (which failures it shares), with the final test files when there are
    acceptance examples (whether they discriminate; the suite runs there only for a named-test example)."""
    examples = acceptance_for(ports.facts).examples
    argv = tests.evidence.get("argv")
    test_argv = tuple(str(part) for part in argv) if isinstance(argv, list) and junit is not None else None
    shares = None
    if tests.verdict.outcome is StageOutcome.FAILED and test_argv is not None:
        shares = measure_base(ports, attempt=attempt, purpose="failures the base shares", test_argv=test_argv,
                              examples=(), overlay=())
    if not examples:
        return shares, None
    files = assembly.evidence.get("files")
    changed = [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []
    named = any(example.test for example in examples)
    discrimination = measure_base(ports, attempt=attempt, purpose="discrimination",
                                  test_argv=test_argv if named else None, examples=examples,
                                  overlay=base_overlay(changed, examples),
                                  earlier_runs=() if shares is None else (shares,))
    return shares, discrimination


def _with_mocking(tests: StageResult, atoms: AtomFacts | None) -> StageResult:
    """Stage 28's result with its mocking report (:mod:`~codeflux.pipeline.mocking`): evidence, never the verdict."""
    if tests.verdict.outcome is StageOutcome.BLOCKED:
        return tests
    return StageResult(verdict=tests.verdict, evidence={**tests.evidence, "mocking": mocking_evidence(atoms)})


def run_pipeline(task_id: TaskId, attempt: int, *, ports: PipelinePorts) -> tuple[StageVerdict, ...]:
    """Evaluate, record and finish the attempt (see the module docstring)."""
    failed_specification = record_specification(task_id, attempt, ports=ports)
    if failed_specification is not None:
        return _finish(ports, task_id, attempt, failed_specification.stage)
    # the scratch copies a killed run left in the task's TMPDIR go first (they never were in the worktree)
    remove_base_scratch(ports.commands.temp_directory(task_id), SCRATCH_FOLDER)
    assembly = evaluate_assembly(ports, attempt=attempt)
    # 5, 7–17 and 18, 22–25: recorded before 26, evaluated on its diff with one coverage run
    atoms = atom_facts_of(ports, attempt, assembly)
    record_atom_stages(ports, attempt, assembly, ATOM_STAGES + PHASE_CD, facts=atoms)
    if _record(ports, task_id, attempt, assembly).outcome is not StageOutcome.SATISFIED:
        return _finish(ports, task_id, attempt, StageName.ASSEMBLY)
    files = assembly.evidence.get("files")
    changed = [str(item["path"]) for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []
    _record(ports, task_id, attempt, evaluate_program(ports, attempt=attempt, changed=changed))
    identity = assembly.evidence.get("diff_identity")
    diff_identity = identity if isinstance(identity, str) else None
    tests, junit = run_integration_tests(ports, attempt=attempt, diff_identity=diff_identity)
    shares, discrimination = _base_runs(ports, attempt, tests, junit, assembly)
    runs = tuple(run for run in (shares, discrimination) if run is not None)
    tests_result = _with_mocking(integration_with_base(tests, junit, runs, shares), atoms)
    tests_verdict = _record(ports, task_id, attempt, tests_result)
    examples = evaluate_end_to_end_tests(ports, attempt=attempt, junit=junit, tests=tests_verdict,
                                         base=discrimination)
    _record(ports, task_id, attempt, examples)
    # 30–34 (phase F): after the program's checks, before the bundle that reports them
    record_phase_f(ports, attempt, assembly, integration=tests_verdict, integration_evidence=tests_result.evidence,
                   changed=changed, atoms=atoms)
    rows = ports.ledger.ledger(task_id, attempt)
    _record(ports, task_id, attempt, evaluate_evidence_bundle(ports, rows, diff_identity=diff_identity))
    decision = ports.acceptance.acceptance_of(task_id)
    acceptance = evaluate_human_acceptance(decision, diff_identity=diff_identity)
    if decision is None or acceptance is None:
        return _finish(ports, task_id, attempt, StageName.HUMAN_ACCEPTANCE)
    if _record(ports, task_id, attempt, acceptance).outcome is StageOutcome.SATISFIED:
        _record(ports, task_id, attempt, evaluate_deliver(decision))
    return _finish(ports, task_id, attempt, None)

