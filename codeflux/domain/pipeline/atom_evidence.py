"""The evidence bundle's per-atom section: for each atom of the diff, what every atom stage measured of it.

:func:`atom_evidence` reads the verdicts and evidence recorded for the atom stages (:data:`ATOM_STAGE_MEASURES`:
5 contracts and 7–25) and regroups them by atom. It reads each stage's evidence **generically**: a stage's
per-atom data is a list under ``atoms`` whose entries name their atom by ``qualified_name`` (``atom`` is read too,
and a bare string is a qualified name — the shape stage 15 recorded first); an entry's ``findings`` (a list) or
``finding`` (one text) are its findings — an entry with neither (stage 5 before it listed findings per atom) gets
the stage's own ``findings`` that name the atom — and every other key is a fact shown as recorded. A stage that records
``atoms`` this way joins the section with no change here. Identity (path, lines, change) comes from the first
entry that states it, stage 5's first.

Nothing is invented: for each atom and stage either the stage's entry for that atom is shown
(``measured``), or ``not_measured`` says why not, in words — the stage was not recorded in the attempt, was
``not-implemented`` or ``blocked`` (with its reason), was ``skipped`` (with its reason), or ran and did not list
this atom (with the reason its evidence gives under ``not_checked`` / ``not_examined`` for the atom or its file,
when it gives one). Changed Python files whose atoms could not be listed at all (unreadable, unparsable, over the
limits) are named with the reason under ``files_not_examined``. The document is plain JSON (:data:`FORMAT` is
its version); stored bundles keep it as recorded, and a reader of an attempt with no bundle builds it from the
ledger rows with this same function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from codeflux.domain.pipeline.outcomes import StageOutcome, StageVerdict
from codeflux.domain.pipeline.stages import StageName, stage_named

__all__ = ["ATOM_STAGE_MEASURES", "FORMAT", "MAX_ATOMS", "atom_evidence"]

FORMAT: Final = 1
MAX_ATOMS: Final = 200
"""Atoms kept in the section; ``atom_count`` says how many there were."""

ATOM_STAGE_MEASURES: Final[Mapping[StageName, str]] = {
    StageName.CONTRACTS: "contract",
    StageName.ATOM_CASE_SYNTHESIS: "input ladder",
    StageName.ATOM_EXAMPLE_TESTS: "covering tests and stub-kill",
    StageName.ATOM_PROPERTY_TESTS: "property tests",
    StageName.ATOMS: "purity",
    StageName.ATOM_VERIFICATION: "seeds",
    StageName.ATOM_FUZZ: "fuzzing",
    StageName.ATOM_MUTATION: "mutation score",
    StageName.ANTI_PATTERNS: "anti-pattern findings",
    StageName.ATOM_OPTIMIZATION: "optimization",
    StageName.ATOM_COMPLEXITY: "complexity",
    StageName.ATOM_DOCUMENTATION: "documentation",
    StageName.COMPOSITION_OBLIGATIONS: "compositions (calls to other atoms)",
    StageName.MOLECULE_TESTS: "molecule tests and caller stub",
    StageName.MOLECULES: "molecule tests passing",
    StageName.MOLECULE_VERIFICATION: "composition obligations discharged",
    StageName.CONTROL_OBLIGATIONS: "branch arcs of its changed lines",
    StageName.CONTROL_TESTS: "tests taking each branch arc",
    StageName.CONTROL_FLOW: "control-path obligations discharged",
    StageName.PATH_COVERAGE: "branch coverage of its changed lines",
}
"""The stages whose evidence is read per atom, in stage order, each with what it measures of an atom."""

_NAME_KEYS: Final = ("qualified_name", "atom")
_IDENTITY_KEYS: Final = frozenset({"qualified_name", "atom", "path", "lines", "change", "findings", "finding"})
_NOT_LISTED_KEYS: Final = ("not_checked", "not_examined")


def _name_of(entry: object) -> str | None:
    if isinstance(entry, str):
        return entry or None
    if isinstance(entry, Mapping):
        for key in _NAME_KEYS:
            value = entry.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _entries(evidence: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    """The stage's per-atom entries by qualified name (a bare string is ``{"qualified_name": it}``)."""
    found: dict[str, Mapping[str, object]] = {}
    atoms = evidence.get("atoms")
    for entry in atoms if isinstance(atoms, list) else []:
        name = _name_of(entry)
        if name is None or name in found:
            continue
        found[name] = entry if isinstance(entry, Mapping) else {"qualified_name": name}
    return found


def _named(name: str, findings: object) -> list[str]:
    """The stage-level findings that name the atom ``name`` (as a whole dotted name)."""
    if not isinstance(findings, list):
        return []
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w.])")
    return [str(item) for item in findings if pattern.search(str(item))]


def _findings(entry: Mapping[str, object], stage_findings: object, name: str) -> list[str]:
    if "findings" not in entry and "finding" not in entry:  # an older entry: the stage's findings that name it
        return _named(name, stage_findings)
    listed = entry.get("findings")
    found = [str(item) for item in listed if str(item).strip()] if isinstance(listed, list) else []
    single = entry.get("finding")
    if isinstance(single, str) and single.strip():
        found.append(single)
    return found


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _names(value: object) -> str:
    return ", ".join(str(item) for item in value) if isinstance(value, list) and value else "none"


def _contract(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    parts: list[str] = []
    declared = entry.get("declared")
    if isinstance(declared, Mapping):
        parts.append(f"declared in plan step {declared.get('step')} as `{declared.get('signature')}` "
                     f"with effects {_names(declared.get('effects'))}")
    elif "declared" in entry:
        parts.append("not declared by any plan step")
    if isinstance(entry.get("signature"), str):
        parts.append(f"written `{entry['signature']}`")
    effects = entry.get("effects_inferred")
    if isinstance(effects, list):
        parts.append("effects seen in its syntax tree: " + (", ".join(
            str(item.get("effect")) if isinstance(item, Mapping) else str(item) for item in effects) or "none"))
    if isinstance(entry.get("not_examined"), str):
        parts.append(f"its definition was not examined: {entry['not_examined']}")
    return parts


def _example_tests(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    parts: list[str] = []
    tests = entry.get("tests")
    if isinstance(tests, list):
        parts.append(f"{len(tests)} covering test(s)")
    failed, passed = entry.get("failed_against_stub"), entry.get("passed_against_stub")
    if isinstance(failed, list) and isinstance(passed, list) and (failed or passed):
        parts.append(f"against a stub: {len(failed)} failed, {len(passed)} still passed")
    if isinstance(entry.get("stub_problem"), str):
        parts.append(f"stub not judged: {entry['stub_problem']}")
    return parts


def _ladder(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    """Stage 7: per parameter, how many rungs of its input ladder the tests exercised (or why there is none)."""
    parts: list[str] = []
    parameters = entry.get("parameters")
    for parameter in parameters if isinstance(parameters, list) else []:
        if not isinstance(parameter, Mapping):
            continue
        rungs, missing = parameter.get("rungs"), parameter.get("unexercised")
        if isinstance(rungs, list) and isinstance(missing, list):
            parts.append(f"{parameter.get('name')}: {len(rungs) - len(missing)} of {len(rungs)} rungs exercised"
                         + (f" (not: {', '.join(str(rung) for rung in missing)})" if missing else ""))
        elif isinstance(parameter.get("no_ladder"), str):
            parts.append(f"{parameter.get('name')}: no ladder")
    if isinstance(entry.get("skipped"), str):
        parts.append(f"not judged: {entry['skipped']}")
    return parts


def _purity(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    return ["declared pure: " + (f"{len(findings)} finding(s)" if findings else "reads nothing outside its arguments")]


def _complexity(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    parts: list[str] = []
    if isinstance(entry.get("complexity"), int):
        parts.append(f"cyclomatic complexity {entry['complexity']}"
                     + (" (over the limit)" if entry.get("within_limit") is False else ""))
    growth = entry.get("growth")
    if isinstance(growth, str):  # before stage 16 timed atoms: "not measured (…)"
        parts.append(f"growth {growth}")
    elif isinstance(growth, Mapping) and isinstance(growth.get("detail"), str):  # {"measured": …, "detail": …}
        parts.append(f"growth: {growth['detail']}")
    return parts


def _documentation(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    stated = entry.get("purpose_stated")
    if not isinstance(stated, bool):
        return []
    return ["a docstring states its purpose" if stated else "no docstring states its purpose"]


def _anti_patterns(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    return [f"{len(findings)} finding(s) on its changed lines" if findings else "no finding on its changed lines"]


def _seeds(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    """Stage 11: how many seeded runs took its tests, which failed (each with its reproducing command in the
    findings), e.g. "2 covering test(s) in 3 seeded random order(s): 3 passed (seeds 11, 12, 13)"."""
    seeds, tests = entry.get("seeds"), entry.get("tests")
    if not isinstance(seeds, list) or not isinstance(tests, list):
        return []
    runs = [str(item).partition(" ") for item in seeds]
    passed = [seed for seed, _, outcome in runs if outcome == "passed"]
    failed = [seed for seed, _, outcome in runs if outcome == "failed"]
    parts = [f"{len(tests)} covering test(s) in {len(runs)} seeded random order(s): {len(passed)} passed"
             + (f", {len(failed)} failed (seed {', '.join(failed)}; the findings give the command that replays it)"
                if failed else "")
             + f" (seeds {', '.join(seed for seed, _, _ in runs)})"]
    if len(passed) + len(failed) < len(runs):
        parts.append(f"{len(runs) - len(passed) - len(failed)} run(s) did not judge its tests")
    return parts


def _mutation(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    """Stage 13, e.g. "4 of 5 judged mutant(s) of its changed lines killed (80.0%); 1 survived" (a mutant its
    tests time out on counts as killed, as in the score)."""
    judged, killed, timed_out = entry.get("judged"), entry.get("killed"), entry.get("timed_out", 0)
    if not isinstance(judged, int) or not isinstance(killed, int) or not isinstance(timed_out, int):
        return [f"not judged: {entry['problem']}"] if isinstance(entry.get("problem"), str) else []
    score = entry.get("score")
    parts = [f"{killed + timed_out} of {judged} judged mutant(s) of its changed lines killed"
             + (f" ({score}%)" if isinstance(score, int | float) and not isinstance(score, bool) else "")]
    if timed_out:
        parts.append(f"{timed_out} of them by a timeout")
    for key, said in (("survived", "survived"), ("not_run", "not run")):
        value = entry.get(key)
        if isinstance(value, int) and value:
            parts.append(f"{value} {said}")
    return parts


def _fuzzing(entry: Mapping[str, object], findings: Sequence[str]) -> list[str]:
    inputs = entry.get("inputs")
    if entry.get("fuzzed") is True and isinstance(entry.get("outcome"), str):
        tried = f" after {inputs} input(s)" if isinstance(inputs, int) and not isinstance(inputs, bool) else ""
        return [f"fuzzed: {entry['outcome']}{tried}"]
    return [str(entry["detail"])] if isinstance(entry.get("detail"), str) else []


_SUMMARIES: Final[Mapping[StageName, Callable[[Mapping[str, object], Sequence[str]], list[str]]]] = {
    StageName.CONTRACTS: _contract, StageName.ATOM_CASE_SYNTHESIS: _ladder,
    StageName.ATOM_EXAMPLE_TESTS: _example_tests, StageName.ATOMS: _purity,
    StageName.ATOM_COMPLEXITY: _complexity, StageName.ATOM_DOCUMENTATION: _documentation,
    StageName.ANTI_PATTERNS: _anti_patterns, StageName.ATOM_VERIFICATION: _seeds, StageName.ATOM_MUTATION: _mutation,
    StageName.ATOM_FUZZ: _fuzzing,
}


def _summary(stage: StageName, entry: Mapping[str, object], findings: Sequence[str]) -> str:
    """What the stage measured of the atom in one sentence, from the entry's recorded keys only."""
    summarise = _SUMMARIES.get(stage)
    return "" if summarise is None else "; ".join(summarise(entry, findings))


def _not_listed(verdict: StageVerdict, evidence: Mapping[str, object], name: str, path: str | None) -> str:
    number = stage_named(verdict.stage).number
    outcome = verdict.outcome
    if outcome in (StageOutcome.NOT_IMPLEMENTED, StageOutcome.BLOCKED, StageOutcome.SKIPPED):
        said = verdict.reason or verdict.gate_evaluation
        return f"not measured (stage {number} {outcome.value}" + (f": {said})" if said else ")")
    for key in _NOT_LISTED_KEYS:
        listed = evidence.get(key)
        if not isinstance(listed, Mapping):
            continue
        for target in (name, path):
            reason = listed.get(target) if target else None
            if isinstance(reason, str) and reason:
                return f"not measured (stage {number} {outcome.value}; for this atom: {reason})"
    return f"not measured (stage {number} {outcome.value}, but its evidence does not list this atom)"


def _item(stage: StageName, verdict: StageVerdict | None, evidence: Mapping[str, object], name: str,
          path: str | None) -> dict[str, object]:
    number = stage_named(stage).number
    item: dict[str, object] = {"number": number, "stage": stage.value, "measures": ATOM_STAGE_MEASURES[stage],
                               "outcome": None if verdict is None else verdict.outcome.value}
    if verdict is None:
        return {**item, "measured": False, "not_measured": f"not measured (stage {number} not recorded in this "
                "attempt)", "summary": "", "findings": [], "facts": {}}
    entry = _entries(evidence).get(name) if verdict.outcome in (StageOutcome.SATISFIED, StageOutcome.FAILED) else None
    if entry is None:
        return {**item, "measured": False, "not_measured": _not_listed(verdict, evidence, name, path),
                "summary": "", "findings": [], "facts": {}}
    findings = _findings(entry, evidence.get("findings"), name)
    return {**item, "measured": True, "not_measured": None, "summary": _summary(stage, entry, findings),
            "findings": findings, "facts": {key: value for key, value in entry.items() if key not in _IDENTITY_KEYS}}


def _identity(name: str, stage_entries: Iterable[Mapping[str, Mapping[str, object]]]) -> dict[str, object]:
    found: dict[str, object] = {"qualified_name": name, "path": None, "lines": None, "change": None}
    for entries in stage_entries:
        entry = entries.get(name)
        if entry is None:
            continue
        for key in ("path", "lines", "change"):
            value = entry.get(key)
            if found[key] is None and (isinstance(value, str) or (
                    isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value))):
                found[key] = value
    return found


def atom_evidence(verdicts: Iterable[StageVerdict], evidence: Mapping[StageName, Mapping[str, object]]
                  ) -> dict[str, object]:
    """The per-atom section (see the module docstring) of an attempt whose recorded (or projected) ``verdicts``
    and per-stage ``evidence`` are given; stages with no verdict are "not recorded in this attempt"."""
    by_stage = {verdict.stage: verdict for verdict in verdicts if verdict.stage in ATOM_STAGE_MEASURES}
    entries = {stage: _entries(evidence.get(stage, {})) if stage in by_stage
               and by_stage[stage].outcome is not StageOutcome.NOT_IMPLEMENTED else {}
               for stage in ATOM_STAGE_MEASURES}
    names: list[str] = []
    for stage in ATOM_STAGE_MEASURES:
        names.extend(name for name in entries[stage] if name not in names)
    atoms: list[dict[str, object]] = []
    for name in names[:MAX_ATOMS]:
        identity = _identity(name, entries.values())
        path = identity["path"] if isinstance(identity["path"], str) else None
        atoms.append({**identity, "evidence": [_item(stage, by_stage.get(stage), evidence.get(stage, {}), name, path)
                                              for stage in ATOM_STAGE_MEASURES]})
    stages = [{"number": stage_named(stage).number, "stage": stage.value, "measures": measures,
               "outcome": None if stage not in by_stage else by_stage[stage].outcome.value,
               "said": None if stage not in by_stage else (by_stage[stage].gate_evaluation or by_stage[stage].reason)}
              for stage, measures in ATOM_STAGE_MEASURES.items()]
    return {"format": FORMAT, "atom_count": len(names), "atoms": atoms, "stages": stages,
            "files_not_examined": _files_not_examined(by_stage, evidence)}


def _files_not_examined(by_stage: Mapping[StageName, StageVerdict],
                        evidence: Mapping[StageName, Mapping[str, object]]) -> dict[str, str]:
    """Changed Python files whose atoms no stage could list (``path: reason`` from the stages' ``not_examined``,
    stage order, the first reason kept): the atom list is complete only without them."""
    found: dict[str, str] = {}
    for stage in ATOM_STAGE_MEASURES:
        if stage not in by_stage:
            continue
        listed = evidence.get(stage, {}).get("not_examined")
        for key, reason in listed.items() if isinstance(listed, Mapping) else ():
            if isinstance(key, str) and key.endswith(".py") and isinstance(reason, str) and key not in found:
                found[key] = reason
    return dict(sorted(found.items()))
