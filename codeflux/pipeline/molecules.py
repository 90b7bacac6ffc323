"""Phase C — molecules: stages 19 molecule-tests, 20 molecules and 21 molecule-verification (issue 18).

They judge the composition obligations stage 18 recorded (a changed atom calling another atom of the diff), from the
attempt's one coverage run (:func:`~codeflux.pipeline.atom_coverage.atom_coverage`) and one confined stub run:

* A composition's **molecule tests** are the tests whose context executed a line of the caller's body *and* a line of
  the callee's body in the coverage run: they reach the caller with the real callee (a test that replaces the callee
  with a mock never executes its body, so it is not one).
* **19** asks each composition for at least one molecule test, and that at least one of them fails when the caller's
  body is replaced by ``raise NotImplementedError`` (:func:`~codeflux.pipeline.stubs.stub_atom`, as stage 8): every
  caller's stub is judged in **one** run of the in-process switching runner
  (:func:`~codeflux.pipeline.mutation.run_switches`) in a scratch copy of the final tree under the task's TMPDIR
  (:data:`MOLECULE_STUB_DIRECTORY`; never the worktree), following the test command's decision.
* **20** asks that every molecule test passed in the coverage run (a failing one is named with its composition).
* **21** discharges (``discharged_by_stage`` molecule-verification) each composition with a molecule test that passed
  in the coverage run and failed against the caller's stub; the open ones are named.

``skipped`` when stage 18 recorded no composition; ``blocked`` when the coverage run or the obligation store is
missing. Not proven: that a molecule test asserts what the composition returns (it fails against a stub because
the stub raises), or anything about compositions through calls stage 18 does not resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.pipeline.obligations import (
    ObligationChange,
    ObligationKind,
    ObligationRecord,
    ObligationState,
    ObligationSubject,
)
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts, worktree_text
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CoverageMap
from codeflux.pipeline.mutation import mutation_argv, run_switches
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.stubs import stub_atom

__all__ = [
    "MOLECULE_STUB_DIRECTORY",
    "evaluate_molecule_tests",
    "evaluate_molecule_verification",
    "evaluate_molecules",
]

MOLECULE_STUB_DIRECTORY: Final = f"{SCRATCH_FOLDER}/molecule-stub"
_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{MOLECULE_STUB_DIRECTORY}"
_KEY: Final = "molecules"
_MAX_TESTS: Final = 200
_MAX_SHOWN: Final = 10


@dataclass(slots=True, kw_only=True)
class _Molecule:
    """One composition obligation with its molecule tests and how each fared against the caller's stub."""

    record: ObligationRecord
    caller: Atom | None
    callee: Atom | None
    tests: tuple[str, ...] = ()
    failed_against_stub: list[str] = field(default_factory=list)
    passed_against_stub: list[str] = field(default_factory=list)
    stub_problem: str | None = None

    @property
    def subject(self) -> str:
        return self.record.subject.value

    def to_evidence(self, coverage: CoverageMap) -> dict[str, object]:
        shown: dict[str, object] = {"subject": self.subject, "molecule_tests": list(self.tests),
                                    "failed_against_caller_stub": self.failed_against_stub,
                                    "passed_against_caller_stub": self.passed_against_stub,
                                    "outcomes": {test: coverage.outcomes.get(test, "not run") for test in self.tests}}
        if self.stub_problem is not None:
            shown["stub_problem"] = self.stub_problem
        return shown


@dataclass(frozen=True, slots=True, kw_only=True)
class _Judged:
    molecules: tuple[_Molecule, ...] = ()
    coverage: CoverageMap | None = None
    run: Mapping[str, object] = field(default_factory=dict)
    skipped: str | None = None
    blocked: str | None = None


def _texts(value: object) -> list[str]:
    return [str(entry) for entry in value] if isinstance(value, list) else []


def _judge(facts: AtomFacts) -> _Judged:
    """The compositions, their molecule tests and the one stub run (see the module docstring), once per attempt."""
    return facts.once(_KEY, _Judged, lambda: _measure(facts))


def _measure(facts: AtomFacts) -> _Judged:
    if not facts.diff.atoms:
        return _Judged(skipped="the diff adds or changes no function or method outside tests: there is no "
                               "composition to test")
    store = facts.ports.obligations
    if store is None:
        return _Judged(blocked="this run has no obligation store (stage 18 recorded no composition obligation)")
    records = store.obligations(facts.ports.facts.task_id, facts.attempt, ObligationKind.COMPOSITION)
    if not records:
        return _Judged(skipped="stage 18 recorded no composition obligation (no atom of the diff calls another)")
    usable = atom_coverage(facts).usable(to="measure which tests reach each composition",
                                         what="each composition's caller and callee")
    if isinstance(usable, str):
        return _Judged(blocked=usable)
    command, tools, coverage = usable
    worktree = facts.ports.facts.worktree.path
    atoms = {atom.qualified_name: atom for atom in facts.diff.atoms}
    molecules: list[_Molecule] = []
    for record in records:
        caller, callee = (atoms.get(str(record.detail.get(key))) for key in ("caller", "callee"))
        molecule = _Molecule(record=record, caller=caller, callee=callee)
        molecules.append(molecule)
        if caller is None or callee is None:
            molecule.stub_problem = "its caller or callee is not an atom of this diff any more"
            continue
        reaching = set(tests_of_atom(worktree, callee, coverage, passed_only=False))
        molecule.tests = tuple(test for test in tests_of_atom(worktree, caller, coverage, passed_only=False)
                               if test in reaching)
    run = _stub_callers(facts, molecules, interpreter=command.interpreter, overlay=tools.overlay_site,
                        test_argv=command.argv)
    return _Judged(molecules=tuple(molecules), coverage=coverage, run=run)


def _stub_callers(facts: AtomFacts, molecules: list[_Molecule], *, interpreter: str, overlay: Path | None,
                  test_argv: tuple[str, ...]) -> dict[str, object]:
    """Judge each tested caller's stub against its compositions' molecule tests in one run (the module docstring);
    records the outcome in the molecules and returns the run's evidence."""
    worktree = facts.ports.facts.worktree.path
    switches: list[dict[str, object]] = []
    originals: dict[str, str] = {}
    waiting: dict[str, list[_Molecule]] = {}
    for caller_name in dict.fromkeys(m.caller.qualified_name for m in molecules if m.caller and m.tests):
        group = [m for m in molecules if m.caller is not None and m.caller.qualified_name == caller_name and m.tests]
        caller = group[0].caller
        if caller is None:
            continue
        source = worktree_text(worktree / caller.path)
        stubbed = None if source is None else stub_atom(source, local_name=caller.local_name,
                                                        first_line=caller.first_line)
        if source is None or stubbed is None:
            for molecule in group:
                molecule.stub_problem = "the caller's stub could not be made (file unreadable or atom not found once)"
            continue
        identifier = f"caller.{len(switches)}"
        originals[caller.path] = source
        tests = sorted({test for molecule in group for test in molecule.tests})[:_MAX_TESTS]
        switches.append({"id": identifier, "path": caller.path, "source": stubbed, "tests": tests,
                         "stop_first": False, "timeout": 0})
        waiting[identifier] = group
    run: dict[str, object] = {}
    if switches:
        job: dict[str, object] = {"mutants": switches, "tests": [], "baseline": False, "originals": originals,
                                  "min_timeout": 0}
        report, run, problem = run_switches(facts.ports, attempt=facts.attempt, changed=facts.changed_paths,
                                            directory=MOLECULE_STUB_DIRECTORY, working_directory=_WORKING_DIRECTORY,
                                            argv=mutation_argv(interpreter, overlay),
                                            test_argv=test_argv, job=job, what="the callers' stub run")
        entries = report.get("mutants") if report is not None else None
        judged = {str(entry.get("id")): entry for entry in entries if isinstance(entry, dict)} \
            if isinstance(entries, list) else {}
        for identifier, group in waiting.items():
            result = judged.get(identifier)
            failed = set(_texts(None if result is None else result.get("failed_all")))
            passed = set(_texts(None if result is None else result.get("passed_all")))
            for molecule in group:
                if result is None or not (failed or passed):
                    molecule.stub_problem = problem or "the callers' stub run did not judge this caller's stub"
                    continue
                molecule.failed_against_stub = [test for test in molecule.tests if test in failed]
                molecule.passed_against_stub = [test for test in molecule.tests
                                                if test in passed and test not in failed]
    return run


def _shown(items: list[str]) -> str:
    more = f" and {len(items) - _MAX_SHOWN} more" if len(items) > _MAX_SHOWN else ""
    return "; ".join(items[:_MAX_SHOWN]) + more


def _early(stage: StageName, judged: _Judged) -> StageResult | None:
    if judged.skipped is not None:
        return stage_result(stage, StageOutcome.SKIPPED, judged.skipped, {"atoms": []})
    if judged.blocked is not None or judged.coverage is None:
        return stage_result(stage, StageOutcome.BLOCKED, judged.blocked or "the coverage map is missing", {})
    return None


def _atoms(judged: _Judged, findings: Mapping[str, list[str]], facts_of: str) -> list[dict[str, object]]:
    """Per caller atom: its compositions' entries (``facts_of`` names the key) and their findings."""
    coverage = judged.coverage
    grouped: dict[str, list[_Molecule]] = {}
    for molecule in judged.molecules:
        grouped.setdefault(str(molecule.record.detail.get("caller")), []).append(molecule)
    return [{"qualified_name": name, "path": str(items[0].record.detail.get("path")),
             facts_of: [item.to_evidence(coverage) for item in items] if coverage is not None else [],
             "findings": [text for item in items for text in findings.get(item.subject, [])]}
            for name, items in grouped.items()]


def _proving(molecule: _Molecule, coverage: CoverageMap | None) -> list[str]:
    """The molecule tests that passed in the coverage run and failed against the caller's stub."""
    return [test for test in molecule.failed_against_stub
            if coverage is not None and coverage.outcomes.get(test) == "passed"]


def _molecule_finding(molecule: _Molecule, coverage: CoverageMap | None) -> str | None:
    """Why stage 19 does not hold for this composition, or None."""
    if not molecule.tests:
        if molecule.stub_problem is not None:
            return f"{molecule.subject} not judged: {molecule.stub_problem}"
        return (f"no test reaches {molecule.subject}: none executes both the caller's and the real callee's body "
                "(a mocked callee is never executed)")
    if molecule.stub_problem is not None:
        return f"{molecule.subject} not judged against the caller's stub: {molecule.stub_problem}"
    if _proving(molecule, coverage):
        return None
    parts = [f"no molecule test of {molecule.subject} both passes on the final tree and fails when the caller is "
             "stubbed"]
    if molecule.passed_against_stub:
        parts.append(f"still passing against the stub: {', '.join(molecule.passed_against_stub)}")
    failing = [test for test in molecule.tests if coverage is None or coverage.outcomes.get(test) != "passed"]
    if failing:
        parts.append(f"not passing on the final tree: {', '.join(failing)}")
    return "; ".join(parts)


def _not_checked(facts: AtomFacts, judged: _Judged) -> dict[str, str]:
    callers = {str(molecule.record.detail.get("caller")) for molecule in judged.molecules}
    return {atom.qualified_name: "calls no other atom of the diff" for atom in facts.diff.atoms
            if atom.qualified_name not in callers}


def evaluate_molecule_tests(facts: AtomFacts) -> StageResult:
    """Stage 19: each composition is reached by a test with the real callee, and such a test fails against the
    caller's stub."""
    stage = StageName.MOLECULE_TESTS
    judged = _judge(facts)
    early = _early(stage, judged)
    if early is not None:
        return early
    findings: dict[str, list[str]] = {}
    for molecule in judged.molecules:
        finding = _molecule_finding(molecule, judged.coverage)
        if finding is not None:
            findings[molecule.subject] = [finding]
    listed = [text for texts in findings.values() for text in texts]
    evidence: dict[str, object] = {"atoms": _atoms(judged, findings, "compositions"), "findings": listed,
                                   "not_checked": _not_checked(facts, judged),
                                   "stub_run": dict(judged.run), "diff_identity": facts.diff_identity,
                                   "coverage": {} if judged.coverage is None else dict(judged.coverage.evidence)}
    said = (f"{len(judged.molecules) - len(findings)} of {len(judged.molecules)} composition(s) reached by a test with "
            "the real callee that fails against the caller's stub")
    if listed:
        return stage_result(stage, StageOutcome.FAILED, f"{said}; {_shown(listed)}", evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)


def evaluate_molecules(facts: AtomFacts) -> StageResult:
    """Stage 20: every molecule test passed in the coverage run."""
    stage = StageName.MOLECULES
    judged = _judge(facts)
    early = _early(stage, judged)
    if early is not None:
        return early
    coverage = judged.coverage
    findings: dict[str, list[str]] = {}
    for molecule in judged.molecules:
        failing = [test for test in molecule.tests if coverage is not None and coverage.outcomes.get(test) != "passed"]
        if failing:
            findings[molecule.subject] = [f"molecule test {test} of {molecule.subject} did not pass "
                                          f"({coverage.outcomes.get(test, 'not run') if coverage else 'not run'})"
                                          for test in failing]
    listed = [text for texts in findings.values() for text in texts]
    tested = [molecule for molecule in judged.molecules if molecule.tests]
    evidence: dict[str, object] = {"atoms": _atoms(judged, findings, "compositions"), "findings": listed,
                                   "not_checked": _not_checked(facts, judged),
                                   "diff_identity": facts.diff_identity}
    said = (f"the molecule tests of {len(tested)} of {len(judged.molecules)} composition(s) ran; "
            f"{len(listed)} did not pass")
    if listed:
        return stage_result(stage, StageOutcome.FAILED, f"{said}: {_shown(listed)}", evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)


def evaluate_molecule_verification(facts: AtomFacts) -> StageResult:
    """Stage 21: discharge each composition with a passing molecule test that fails against the caller's stub."""
    stage = StageName.MOLECULE_VERIFICATION
    judged = _judge(facts)
    early = _early(stage, judged)
    if early is not None:
        return early
    store, coverage = facts.ports.obligations, judged.coverage
    if store is None or coverage is None:
        return stage_result(stage, StageOutcome.BLOCKED, "no obligation store or coverage map", {})
    changes: list[ObligationChange] = []
    findings: dict[str, list[str]] = {}
    for molecule in judged.molecules:
        proving = _proving(molecule, coverage)
        if proving and molecule.record.state is not ObligationState.DISCHARGED:
            changes.append(ObligationChange(kind=ObligationKind.COMPOSITION,
                                            subject=ObligationSubject(molecule.subject),
                                            state=ObligationState.DISCHARGED, discharged_by=stage,
                                            evidence={"tests": proving}))
        elif not proving:
            findings[molecule.subject] = [f"composition {molecule.subject} stays open: no molecule test passed and "
                                          "failed against the caller's stub"]
    stored = {record.subject.value: record for record in store.change_obligations(
        facts.ports.facts.task_id, facts.attempt, changes)}
    listed = [text for texts in findings.values() for text in texts]
    evidence: dict[str, object] = {
        "atoms": _atoms(judged, findings, "compositions"), "findings": listed,
        "not_checked": _not_checked(facts, judged),
        "obligations": [stored.get(molecule.subject, molecule.record).to_evidence() for molecule in judged.molecules],
        "diff_identity": facts.diff_identity}
    said = (f"{len(judged.molecules) - len(findings)} of {len(judged.molecules)} composition obligation(s) "
            "discharged by a passing molecule test that fails against the caller's stub")
    if listed:
        return stage_result(stage, StageOutcome.FAILED, f"{said}; open: {_shown(list(findings))}", evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)
