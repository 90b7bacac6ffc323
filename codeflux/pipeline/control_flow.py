"""Phase D — control flow: stages 22 control-obligations, 23 control-tests, 24 control-flow, 25 path-coverage.

All four read the attempt's ONE coverage run (:func:`~codeflux.pipeline.atom_coverage.atom_coverage`: coverage.py
with branch data, one dynamic context per test), never a run of their own. A **branch arc on a changed line** is an
arc coverage.py's analysis finds leaving a line with more than one possible exit (an ``if``, a loop, a ``match``
case…), taken or not, whose source line the diff adds or rewrites inside an atom (a function or method of the diff,
outside tests); an end below zero is an exit from the function, shown ``exit``. Each is named ``file:line->line``.

* **22** records each such arc as one ``control-path`` obligation, ``open`` (a recording stage: ``satisfied``
  with them listed, ``skipped`` when there is none, ``blocked`` when the coverage run or the obligation store is
  missing).
* **23** maps each obligation to the tests whose context took the arc (any outcome); an arc no test took fails it.
* **24** discharges (``discharged_by_stage`` control-flow) each arc a *passing* test took, and names the rest; an
  arc the attempt before discharged that no passing test takes now is marked ``regressed``.
* **25** is branch coverage (not statement coverage) of those arcs — taken anywhere in the run ÷ all of them —
  against the ``pipeline.path-coverage.min-percent`` setting (default 90); the arcs not taken are listed.

Not proven: that the tests check anything on the paths they take; paths (combinations of arcs) are not counted,
only single arcs; arcs on unchanged lines and outside atoms are not looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.pipeline.obligations import (
    NewObligation,
    ObligationChange,
    ObligationKind,
    ObligationRecord,
    ObligationState,
    ObligationSubject,
)
from codeflux.pipeline.atom_coverage import atom_coverage
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.coverage_map import CoverageMap
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import PATH_COVERAGE_MIN, threshold_of

__all__ = [
    "BranchArc",
    "branch_arcs",
    "evaluate_control_flow",
    "evaluate_control_obligations",
    "evaluate_control_tests",
    "evaluate_path_coverage",
]

_KEY: Final = "control-arcs"
_MAX_SHOWN: Final = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchArc:
    """One branch arc on a changed line of ``atom``: where it goes, the tests that took it, whether the run took it."""

    atom: Atom
    start: int
    end: int
    tests: tuple[str, ...]
    taken: bool

    @property
    def name(self) -> str:
        return f"{self.atom.path}:{self.start}->{self.end if self.end > 0 else 'exit'}"

    def to_evidence(self) -> dict[str, object]:
        return {"subject": self.name, "path": self.atom.path, "from_line": self.start, "to_line": self.end,
                "atom": self.atom.qualified_name}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Arcs:
    """The arcs, the coverage map they came from and the files whose arcs could not be read — or ``blocked``."""

    arcs: tuple[BranchArc, ...] = ()
    coverage: CoverageMap | None = None
    not_measured: Mapping[str, str] | None = None
    blocked: str | None = None


def _owner(atoms: tuple[Atom, ...], line: int) -> Atom | None:
    return next((atom for atom in atoms if atom.first_line <= line <= atom.last_line and line in atom.changed), None)


def branch_arcs(facts: AtomFacts) -> _Arcs:
    """The branch arcs on the diff's changed lines (see the module docstring), read once per attempt."""
    return facts.once(_KEY, _Arcs, lambda: _read_arcs(facts))


def _read_arcs(facts: AtomFacts) -> _Arcs:
    usable = atom_coverage(facts).usable(to="measure which branches the tests take",
                                         what="each branch arc of the changed lines")
    if isinstance(usable, str):
        found = _Arcs(blocked=usable)
    else:
        coverage = usable[2]
        arcs: list[BranchArc] = []
        not_measured: dict[str, str] = {}
        for file in facts.diff.files:
            if not any(atom.changed for atom in file.atoms):
                continue
            if file.path not in coverage.branches:
                not_measured[file.path] = coverage.branch_problems.get(
                    file.path, "coverage.py measured no branch data for it (no test imported it)")
                continue
            taken = set(coverage.arcs.get(file.path, ()))
            tests = coverage.arc_tests.get(file.path, {})
            for start, end in coverage.branches[file.path]:
                owner = _owner(file.atoms, start)
                if owner is not None:
                    arcs.append(BranchArc(atom=owner, start=start, end=end, tests=tests.get((start, end), ()),
                                          taken=(start, end) in taken))
        found = _Arcs(arcs=tuple(arcs), coverage=coverage, not_measured=dict(sorted(not_measured.items())))
    return found


def _by_atom(arcs: tuple[BranchArc, ...]) -> dict[str, list[BranchArc]]:
    grouped: dict[str, list[BranchArc]] = {}
    for arc in arcs:
        grouped.setdefault(arc.atom.qualified_name, []).append(arc)
    return grouped


def _shown(names: list[str]) -> str:
    more = f" and {len(names) - _MAX_SHOWN} more" if len(names) > _MAX_SHOWN else ""
    return ", ".join(names[:_MAX_SHOWN]) + more


def _no_arcs(stage: StageName, facts: AtomFacts, found: _Arcs) -> StageResult | None:
    """The outcome every phase D stage shares when there is nothing to judge: no atom, no coverage, no arc."""
    if not facts.diff.atoms:
        return stage_result(stage, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no changed control flow", {"atoms": []})
    if found.blocked is not None:
        return stage_result(stage, StageOutcome.BLOCKED, found.blocked, {})
    if not found.arcs:
        unread = dict(found.not_measured or {})
        if unread:
            return stage_result(stage, StageOutcome.BLOCKED, "the branch arcs of the changed files were not "
                                "measured: " + "; ".join(f"{path}: {why}" for path, why in unread.items()), {})
        return stage_result(stage, StageOutcome.SKIPPED, "no line the diff adds or rewrites inside an atom has a "
                            "branch (coverage.py's analysis found no arc leaving a changed line with more than one "
                            "exit)", {"atoms": [], "not_measured": unread})
    return None


def _evidence(facts: AtomFacts, found: _Arcs, **extra: object) -> dict[str, object]:
    """The stage's evidence with the coverage run it read (argv, tools, request) and what was not measured."""
    with_arcs = {arc.atom.qualified_name for arc in found.arcs}
    return {**extra, "coverage": {} if found.coverage is None else dict(found.coverage.evidence),
            "not_checked": {atom.qualified_name: "no branch arc leaves its changed lines"
                            for atom in facts.diff.atoms if atom.qualified_name not in with_arcs},
            "not_measured": dict(found.not_measured or {}), "diff_identity": facts.diff_identity}


def evaluate_control_obligations(facts: AtomFacts) -> StageResult:
    """Stage 22: every branch arc on a changed line recorded as one control-path obligation (open)."""
    stage = StageName.CONTROL_OBLIGATIONS
    found = branch_arcs(facts)
    early = _no_arcs(stage, facts, found)
    if early is not None:
        return early
    store = facts.ports.obligations
    if store is None:
        return stage_result(stage, StageOutcome.BLOCKED, "this run has no obligation store to record the "
                            f"{len(found.arcs)} branch arc(s) in", {})
    recorded = store.record_obligations(facts.ports.facts.task_id, facts.attempt, [
        NewObligation(kind=ObligationKind.CONTROL_PATH, subject=ObligationSubject(arc.name), recorded_by=stage,
                      detail=arc.to_evidence()) for arc in found.arcs])
    atoms = [{"qualified_name": name, "path": arcs[0].atom.path, "branch_arcs": [arc.name for arc in arcs]}
             for name, arcs in _by_atom(found.arcs).items()]
    evidence = _evidence(facts, found, atoms=atoms, obligations=[record.to_evidence() for record in recorded])
    return stage_result(stage, StageOutcome.SATISFIED, f"{len(found.arcs)} branch arc(s) on changed lines of "
                        f"{len(atoms)} atom(s) recorded as control-path obligations, open: "
                        f"{_shown([arc.name for arc in found.arcs])}", evidence)


def _recorded(facts: AtomFacts, stage: StageName) -> tuple[_Arcs, tuple[ObligationRecord, ...]] | StageResult:
    """The changed lines' arcs and the control-path obligations stage 22 recorded for them — or this stage's
    ``skipped``/``blocked`` result (no arc, no store, an arc without its obligation)."""
    found = branch_arcs(facts)
    early = _no_arcs(stage, facts, found)
    if early is not None:
        return early
    store = facts.ports.obligations
    if store is None:
        return stage_result(stage, StageOutcome.BLOCKED, "this run has no obligation store (stage 22 recorded no "
                            "control-path obligation)", {})
    records = store.obligations(facts.ports.facts.task_id, facts.attempt, ObligationKind.CONTROL_PATH)
    names = {record.subject.value for record in records}
    missing = [arc.name for arc in found.arcs if arc.name not in names]
    if missing:
        return stage_result(stage, StageOutcome.BLOCKED, "stage 22 recorded no control-path obligation for "
                            f"{_shown(missing)}", {})
    return found, records


def evaluate_control_tests(facts: AtomFacts) -> StageResult:
    """Stage 23: each control-path obligation mapped to the tests that took its arc; an arc no test took fails."""
    stage = StageName.CONTROL_TESTS
    recorded = _recorded(facts, stage)
    if isinstance(recorded, StageResult):
        return recorded
    found, _ = recorded  # every arc has its obligation: this stage maps them to tests
    atoms: list[dict[str, object]] = []
    findings: list[str] = []
    for name, arcs in _by_atom(found.arcs).items():
        unreached = [f"no test takes the branch arc {arc.name} (in {name})" for arc in arcs if not arc.tests]
        findings.extend(unreached)
        atoms.append({"qualified_name": name, "path": arcs[0].atom.path,
                      "arc_tests": {arc.name: list(arc.tests) for arc in arcs}, "findings": unreached})
    reached = len(found.arcs) - len(findings)
    said = f"{reached} of {len(found.arcs)} branch arc(s) on changed lines taken by at least one test"
    evidence = _evidence(facts, found, atoms=atoms, findings=findings)
    if findings:
        return stage_result(stage, StageOutcome.FAILED, f"{said}; not taken by any test: "
                            f"{_shown([arc.name for arc in found.arcs if not arc.tests])}", evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)


def _passing(arc: BranchArc, coverage: CoverageMap) -> tuple[str, ...]:
    return tuple(test for test in arc.tests if coverage.outcomes.get(test) == "passed")


def evaluate_control_flow(facts: AtomFacts) -> StageResult:
    """Stage 24: discharge each arc a passing test took; name the rest (and those that regressed)."""
    stage = StageName.CONTROL_FLOW
    recorded = _recorded(facts, stage)
    if isinstance(recorded, StageResult):
        return recorded
    found, records = recorded
    store = facts.ports.obligations
    coverage = found.coverage
    if store is None or coverage is None:  # _recorded and _no_arcs said so already
        return stage_result(stage, StageOutcome.BLOCKED, "no obligation store or coverage map", {})
    task_id = facts.ports.facts.task_id
    earlier = {record.subject.value for record in (store.obligations(task_id, facts.attempt - 1,
                                                                     ObligationKind.CONTROL_PATH)
                                                   if facts.attempt > 1 else ())
               if record.state is ObligationState.DISCHARGED}
    state = {record.subject.value: record.state for record in records}
    changes: list[ObligationChange] = []
    open_arcs: list[BranchArc] = []
    for arc in found.arcs:
        passing = _passing(arc, coverage)
        subject = ObligationSubject(arc.name)
        if passing and state.get(arc.name) is not ObligationState.DISCHARGED:
            changes.append(ObligationChange(kind=ObligationKind.CONTROL_PATH, subject=subject,
                                            state=ObligationState.DISCHARGED, discharged_by=stage,
                                            evidence={"tests": list(passing)}))
        elif not passing:
            open_arcs.append(arc)
            if arc.name in earlier and state.get(arc.name) is not ObligationState.REGRESSED:
                changes.append(ObligationChange(kind=ObligationKind.CONTROL_PATH, subject=subject,
                                                state=ObligationState.REGRESSED, evidence={
                                                    "discharged_in_attempt": facts.attempt - 1}))
    stored = {record.subject.value: record for record in records}
    stored.update({record.subject.value: record for record in store.change_obligations(task_id, facts.attempt,
                                                                                        changes)})
    atoms: list[dict[str, object]] = []
    findings: list[str] = []
    for name, arcs in _by_atom(found.arcs).items():
        named = [f"branch arc {arc.name} (in {name}) is not taken by a passing test"
                 + (" — it regressed: the attempt before discharged it" if arc.name in earlier else "")
                 for arc in arcs if arc in open_arcs]
        findings.extend(named)
        atoms.append({"qualified_name": name, "path": arcs[0].atom.path, "findings": named,
                      "obligations": {arc.name: stored[arc.name].state.value for arc in arcs}})
    discharged = len(found.arcs) - len(open_arcs)
    said = f"{discharged} of {len(found.arcs)} control-path obligation(s) discharged by a passing test"
    evidence = _evidence(facts, found, atoms=atoms, findings=findings,
                         obligations=[stored[arc.name].to_evidence() for arc in found.arcs])
    if open_arcs:
        return stage_result(stage, StageOutcome.FAILED, f"{said}; open: {_shown([arc.name for arc in open_arcs])}",
                            evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)


def evaluate_path_coverage(facts: AtomFacts) -> StageResult:
    """Stage 25: branch coverage of the changed lines against the stored threshold; the arcs not taken listed."""
    stage = StageName.PATH_COVERAGE
    found = branch_arcs(facts)
    early = _no_arcs(stage, facts, found)
    if early is not None:
        return early
    threshold = threshold_of(facts.ports.settings, PATH_COVERAGE_MIN)
    if threshold.problem is not None:
        return stage_result(stage, StageOutcome.BLOCKED, threshold.problem, {"threshold": threshold.to_evidence()})
    taken = [arc for arc in found.arcs if arc.taken]
    missed = [arc for arc in found.arcs if not arc.taken]
    percent = round(100 * len(taken) / len(found.arcs), 1)
    atoms = []
    for name, arcs in _by_atom(found.arcs).items():
        atom_missed = [arc.name for arc in arcs if not arc.taken]
        atoms.append({"qualified_name": name, "path": arcs[0].atom.path,
                      "branch_arcs_taken": len(arcs) - len(atom_missed), "branch_arcs": len(arcs),
                      "findings": [f"branch arc {arc} not taken" for arc in atom_missed]})
    evidence = _evidence(facts, found, atoms=atoms, branch_coverage_percent=percent, arcs=len(found.arcs),
                         taken=len(taken), uncovered_arcs=[arc.name for arc in missed],
                         threshold=threshold.to_evidence())
    said = (f"branch coverage of the changed lines {percent}% ({len(taken)} of {len(found.arcs)} branch arc(s) "
            f"taken), threshold {threshold.value}% ({threshold.source})")
    unread = dict(found.not_measured or {})
    if unread:  # a changed file whose arcs are unknown is not counted as covered
        return stage_result(stage, StageOutcome.FAILED, f"{said}; the branch arcs of {', '.join(unread)} were not "
                            "measured, so the changed lines' coverage is not known", evidence)
    if 100 * len(taken) < threshold.value * len(found.arcs):
        return stage_result(stage, StageOutcome.FAILED, f"{said}; not taken: {_shown([arc.name for arc in missed])}",
                            evidence)
    return stage_result(stage, StageOutcome.SATISFIED, said, evidence)
