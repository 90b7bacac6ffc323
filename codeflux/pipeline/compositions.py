"""Stage 18 composition-obligations: every place an atom of the diff calls another atom of the diff (issue 18).

A recording stage. For each atom (a function or method the diff adds or changes, outside tests) codeflux reads
its definition's syntax tree in the final source and resolves each call to another atom of the diff by name,
statically: a module-level function of the same module (``add(...)``), a name imported from an atom's module
(``from pkg.calc import add``, relative imports included, ``as`` aliases followed), an attribute of an imported
module (``calc.add(...)``, ``pkg.calc.add(...)``), and a method of the caller's own class through ``self`` /
``cls`` or the class's name. Each (caller, callee) pair is one ``composition`` obligation, recorded ``open``
through the pipeline's :class:`~codeflux.pipeline.ports.ObligationPort` with its call sites
(``path:line``). A call reached any other way (a callable passed in, ``getattr``, an instance of another class,
a call inside a nested function of the caller counts as the caller's) is not resolved: the evidence says so.

Outcomes: ``satisfied`` with the obligations listed (per caller atom); ``skipped`` when the diff has no atom or
no atom calls another; ``blocked`` when the run has no obligation store (or, through the phase, when the diff did
not assemble).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.domain.atoms import Atom, FileAtoms
from codeflux.domain.contracts import dotted_name
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.pipeline.obligations import NewObligation, ObligationKind, ObligationSubject
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import atom_definition
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["Composition", "compositions_of", "evaluate_composition_obligations"]

_STAGE: Final = StageName.COMPOSITION_OBLIGATIONS
_MAX_SHOWN: Final = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class Composition:
    """One caller atom calling one callee atom of the diff, at ``lines`` of ``path`` (the caller's file)."""

    caller: Atom
    callee: Atom
    lines: tuple[int, ...]

    @property
    def subject(self) -> str:
        return f"{self.caller.qualified_name} -> {self.callee.qualified_name}"

    @property
    def call_site(self) -> str:
        return f"{self.caller.path}:{self.lines[0]}"

    def to_evidence(self) -> dict[str, object]:
        return {"subject": self.subject, "caller": self.caller.qualified_name, "callee": self.callee.qualified_name,
                "path": self.caller.path, "call_site": self.call_site, "call_lines": list(self.lines),
                "callee_path": self.callee.path}


def _module_of(atom: Atom) -> str:
    return atom.qualified_name[: len(atom.qualified_name) - len(atom.local_name) - 1]


def _package_of(module: str, path: str) -> str:
    """The package a relative import in ``module`` (read from ``path``) starts from."""
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def _imports(tree: ast.Module, module: str, path: str) -> tuple[dict[str, str], dict[str, str]]:
    """The file's imported names → qualified names (``from m import f as g``: g → m.f) and imported modules →
    module names (``import a.b as c``: c → a.b; ``import a.b``: a.b → a.b)."""
    names: dict[str, str] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(module, path)
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".strip(".") if base else package
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
                modules[alias.asname or alias.name] = f"{base}.{alias.name}"  # ``from pkg import calc``
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name] = alias.name
    return names, modules


def _callee_name(call: ast.Call, caller: Atom, module: str, names: Mapping[str, str],
                 modules: Mapping[str, str]) -> str | None:
    """The qualified name ``call`` resolves to (see the module docstring), else None."""
    function = call.func
    if isinstance(function, ast.Name):
        return names.get(function.id, f"{module}.{function.id}")
    dotted = dotted_name(function)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    owner = caller.local_name.rpartition(".")[0]
    if head in ("self", "cls") and owner and "." not in rest:
        return f"{module}.{owner}.{rest}"
    if head in modules:
        return f"{modules[head]}.{rest}"
    return f"{module}.{dotted}"  # ``Class.method`` of the same module, or nothing known


def compositions_of(files: tuple[FileAtoms, ...]) -> tuple[Composition, ...]:
    """Every (caller, callee) pair of atoms in ``files`` (see the module docstring), in the diff's order."""
    atoms = {atom.qualified_name: atom for file in files for atom in file.atoms}
    found: list[Composition] = []
    for file in files:
        if not file.atoms or not file.source:
            continue
        try:
            tree = ast.parse(file.source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        module = _module_of(file.atoms[0])
        names, modules = _imports(tree, module, file.path)
        for caller in file.atoms:
            definition = atom_definition(tree, caller)
            if definition is None:
                continue
            sites: dict[str, list[int]] = {}
            for node in ast.walk(definition):
                if not isinstance(node, ast.Call):
                    continue
                name = _callee_name(node, caller, module, names, modules)
                if name is not None and name in atoms and name != caller.qualified_name:
                    sites.setdefault(name, []).append(node.lineno)
            found.extend(Composition(caller=caller, callee=atoms[name], lines=tuple(sorted(set(lines))))
                         for name, lines in sites.items())
    return tuple(found)


def evaluate_composition_obligations(facts: AtomFacts) -> StageResult:
    """Stage 18 (see the module docstring)."""
    atoms = facts.diff.atoms
    not_examined = dict(sorted(facts.diff.not_examined.items()))
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no composition of atoms", {"atoms": [], "not_examined": not_examined})
    found = compositions_of(facts.diff.files)
    if not found:
        return stage_result(_STAGE, StageOutcome.SKIPPED, f"none of the diff's {len(atoms)} atom(s) calls another "
                            "atom of the diff (calls resolved by name: same module, imports, self/cls)",
                            {"atoms": [], "compositions": [], "not_examined": not_examined})
    store = facts.ports.obligations
    if store is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, "this run has no obligation store to record the "
                            f"{len(found)} composition(s) in", {})
    recorded = store.record_obligations(facts.ports.facts.task_id, facts.attempt, [
        NewObligation(kind=ObligationKind.COMPOSITION, subject=ObligationSubject(item.subject), recorded_by=_STAGE,
                      detail=item.to_evidence()) for item in found])
    by_caller: dict[str, list[Composition]] = {}
    for item in found:
        by_caller.setdefault(item.caller.qualified_name, []).append(item)
    entries = [{"qualified_name": name, "path": items[0].caller.path,
                "compositions": [f"{item.subject} (called at {item.call_site})" for item in items]}
               for name, items in by_caller.items()]
    evidence: dict[str, object] = {"atoms": entries, "obligations": [record.to_evidence() for record in recorded],
                                   "not_checked": {atom.qualified_name: "calls no other atom of the diff"
                                                   for atom in atoms if atom.qualified_name not in by_caller},
                                   "not_examined": not_examined, "diff_identity": facts.diff_identity}
    shown = "; ".join(f"{item.subject} at {item.call_site}" for item in found[:_MAX_SHOWN])
    more = f"; and {len(found) - _MAX_SHOWN} more" if len(found) > _MAX_SHOWN else ""
    return stage_result(_STAGE, StageOutcome.SATISFIED, f"{len(found)} composition obligation(s) recorded open, "
                        f"one per caller → callee pair of the diff's {len(atoms)} atom(s): {shown}{more}", evidence)
