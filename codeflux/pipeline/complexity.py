"""Stage 16 atom-complexity: radon's cyclomatic complexity of each atom, against a threshold setting.

For every atom (:mod:`codeflux.domain.atoms`) radon — a dependency of codeflux, run in codeflux's own
interpreter on the source :func:`~codeflux.pipeline.atoms.atoms_of_diff` read (the repository's code is never
run) — counts the decision points of the function, and of each function nested in it on its own (radon does
not add a nested function into its parent). The gate holds when each of these is at most the threshold
:data:`~codeflux.pipeline.thresholds.ATOM_COMPLEXITY_MAX` (default 10, a setting; the evidence shows the value
and where it came from). A stored threshold that is not a whole number in range ``blocked``s the stage naming
the setting; so does a missing radon.

Growth is measured for atoms with a sized input when the stage is handed a :class:`~codeflux.pipeline.growth.GrowthRun`
(the pipeline always hands one): :mod:`codeflux.pipeline.growth` times them in the task's confined worker at three
input sizes and fits the exponent on a log-log scale. Growth is **advisory**: it is evidence per atom (sizes,
timings, exponent, method, what it does not prove), never part of the gate — the radon threshold alone decides
``satisfied`` or ``failed``, and a growth that could not be measured says why. Without a growth run (a caller
that only reads the source) the evidence says growth was not measured. The stage itself is advisory too: a
failure is listed, it never fails a run's exit code.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from codeflux.domain.atoms import Atom, FileAtoms
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.growth import DOES_NOT_PROVE, GrowthRun, measure_growth
from codeflux.pipeline.ports import SettingsPort
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import ATOM_COMPLEXITY_MAX, threshold_of

__all__ = ["GROWTH_NOT_MEASURED", "RADON_MODULE", "Measured", "evaluate_atom_complexity"]

RADON_MODULE: Final = "radon.visitors"
GROWTH_NOT_MEASURED: Final = ("not measured: this evaluation was handed no growth run (timing an atom means running "
                              "the repository's code in the task's confined worker)")
_STAGE: Final = StageName.ATOM_COMPLEXITY
_SHOWN: Final = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """One function radon measured: its name, ``def`` line and cyclomatic complexity."""

    name: str
    line: int
    end_line: int
    complexity: int


def _functions(blocks: object) -> Iterator[tuple[Measured, tuple[Measured, ...]]]:
    """Each function or method radon found (classes nest), with the functions nested in it (flattened)."""
    for function in getattr(blocks, "functions", ()):
        yield _measured(function), tuple(_closures(function))
    classes = list(getattr(blocks, "classes", ()))
    while classes:
        klass = classes.pop()
        for method in getattr(klass, "methods", ()):
            yield _measured(method), tuple(_closures(method))
        classes.extend(getattr(klass, "inner_classes", ()))


def _measured(function: object) -> Measured:
    line = int(getattr(function, "lineno", 0))
    return Measured(name=str(getattr(function, "name", "")), line=line,
                    end_line=int(getattr(function, "endline", None) or line),
                    complexity=int(getattr(function, "complexity", 0)))


def _closures(function: object) -> Iterator[Measured]:
    for closure in getattr(function, "closures", ()):
        yield _measured(closure)
        yield from _closures(closure)


def _match(atom: Atom, measured: list[tuple[Measured, tuple[Measured, ...]]]
           ) -> tuple[Measured, tuple[Measured, ...]] | None:
    candidates = [item for item in measured if item[0].name == atom.name
                  and atom.first_line <= item[0].line <= atom.last_line and item[0].end_line == atom.last_line]
    return min(candidates, key=lambda item: item[0].line) if candidates else None


def _file_atoms(radon: ModuleType, file: FileAtoms) -> list[tuple[Atom, Measured | None, tuple[Measured, ...]]]:
    visitor = radon.ComplexityVisitor.from_code(file.source)
    measured = list(_functions(visitor))
    rows: list[tuple[Atom, Measured | None, tuple[Measured, ...]]] = []
    for atom in file.atoms:
        found = _match(atom, measured)
        rows.append((atom, None, ()) if found is None else (atom, found[0], found[1]))
    return rows


def _load(module: str) -> ModuleType | str:
    try:
        return importlib.import_module(module)
    except ImportError:
        return f"radon is missing: the module {module} cannot be imported from codeflux's installation"


def evaluate_atom_complexity(diff: DiffAtoms, *, settings: SettingsPort | None,
                             radon_module: str = RADON_MODULE, growth: GrowthRun | None = None) -> StageResult:
    """Stage 16 (see the module docstring); ``settings`` holds the threshold, ``radon_module`` names the radon
    module to use, ``growth`` (when given) is how the atoms' growth is timed."""
    files = [file for file in diff.files if file.problem is None and file.atoms]
    not_examined = dict(sorted(diff.not_examined.items()))
    if not files:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function outside the tests",
                            {"not_examined": not_examined})
    limit = threshold_of(settings, ATOM_COMPLEXITY_MAX)
    if limit.problem is not None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"{limit.problem}; set it again or remove it",
                            {"threshold": limit.to_evidence()})
    radon = _load(radon_module)
    if isinstance(radon, str):
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"{radon} (reinstall codeflux: radon is its dependency)",
                            {"tool": "radon", "problem": radon})
    rows: list[tuple[Atom, Measured | None, tuple[Measured, ...]]] = []
    for file in files:
        try:
            rows.extend(_file_atoms(radon, file))
        except (SyntaxError, ValueError, RecursionError) as error:
            not_examined[file.path] = f"radon could not read it ({type(error).__name__})"
    measured_atoms = [atom for atom, measured, _ in rows if measured is not None]
    if growth is None:
        timings: dict[str, dict[str, object]] = {}
        growth_evidence: object = GROWTH_NOT_MEASURED
    else:
        timings, growth_evidence = measure_growth(growth, files, measured_atoms)
    findings: list[str] = []
    atoms: list[dict[str, object]] = []
    for atom, measured, nested in rows:
        if measured is None:
            not_examined[atom.qualified_name] = "radon found no function at the atom's lines"
            continue
        over = [item for item in (measured, *nested) if item.complexity > limit.value]
        own = [f"{atom.path}:{item.line} atom-complexity "
               f"{atom.qualified_name if item is measured else atom.qualified_name + '.<' + item.name + '>'} "
               f"has cyclomatic complexity {item.complexity} (limit {limit.value})" for item in over]
        findings.extend(own)
        atoms.append({"qualified_name": atom.qualified_name, "path": atom.path, "line": measured.line,
                      "complexity": measured.complexity,
                      "nested": [{"name": item.name, "line": item.line, "complexity": item.complexity}
                                 for item in nested],
                      "within_limit": not over, "findings": own,
                      "growth": timings.get(atom.qualified_name, GROWTH_NOT_MEASURED)})
    version = str(getattr(importlib.import_module(radon_module.partition(".")[0]), "__version__", "unknown"))
    evidence: dict[str, object] = {
        "tool": {"name": "radon", "version": version, "provided_by": "codeflux's own installation",
                 "measure": "cyclomatic complexity of each atom and of each function nested in it, each alone"},
        "threshold": limit.to_evidence(), "atoms": atoms, "findings": findings, "growth": growth_evidence,
        "not_examined": not_examined,
        "does_not_prove": "a function within the limit may still be hard to read; growth is advisory — "
                          + (DOES_NOT_PROVE if growth is not None else "no code was run, nothing about running time "
                             "is claimed"),
    }
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "radon found none of the diff's atoms to measure", evidence)
    summary = (f"radon {version} measured {len(atoms)} atom{'s' if len(atoms) != 1 else ''} against the limit "
               f"{limit.value} ({limit.source})")
    told = _growth_summary(timings)
    if not findings:
        highest = max(int(str(row["complexity"])) for row in atoms)
        return stage_result(_STAGE, StageOutcome.SATISFIED,
                            f"{summary}: every atom is within it (highest {highest}); {told}", evidence)
    more = f" and {len(findings) - _SHOWN} more" if len(findings) > _SHOWN else ""
    return stage_result(_STAGE, StageOutcome.FAILED,
                        f"{summary}: {'; '.join(findings[:_SHOWN])}{more}; {told}", evidence)


def _growth_summary(timings: dict[str, dict[str, object]]) -> str:
    """The growth part of the stage's sentence (advisory: never part of the gate)."""
    fitted = [f"{name} ~ size^{row['exponent']}" for name, row in timings.items() if row.get("measured")]
    if not fitted:
        return "growth not measured (advisory)"
    more = f" and {len(fitted) - _SHOWN} more" if len(fitted) > _SHOWN else ""
    return (f"advisory growth (wall-clock, three sizes): {', '.join(fitted[:_SHOWN])}{more}; "
            f"{len(timings) - len(fitted)} not measured")
