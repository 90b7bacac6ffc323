"""Stage 10, atoms: every atom the approved plan declares *pure* (no effects) reads nothing outside its arguments.

Read with :mod:`ast` by codeflux's own interpreter (no repository code runs), per atom the diff adds or changes
whose matching declaration (:mod:`codeflux.pipeline.contracts`) lists no effect. It fails on any of:

* a ``global`` or ``nonlocal`` statement;
* a read of a module-level *mutable* name the function does not bind itself — mutable as
  :mod:`codeflux.domain.contracts` defines it: anything bound at module level except a name bound once to an
  immutable value (literal, tuple of them, ``frozenset``, arithmetic of them, another constant) and never
  declared ``global``; functions, classes and imports are code, not state, and reading them is fine;
* any effect of the effect table (file, network, process, environment, clock, randomness, writes into
  module-level state).

Atoms declared with effects are left to stage 5, which checks their effects against the declaration. A diff
whose atoms include none declared pure is ``skipped`` with that reason.

What it does not prove: that the function is deterministic — state reached through a call into another
function, through attributes of its arguments or through ``getattr``/``eval`` is not followed, and the same
syntactic limits as the effect table apply.
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.contracts import EFFECT_TABLE_VERSION
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.contracts import MAX_LISTED, atom_contracts
from codeflux.pipeline.ports import TaskFacts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["NOT_PROVED", "RULE", "check_purity", "evaluate_purity"]

RULE: Final = (
    "an atom declared pure has no global/nonlocal statement, reads no module-level mutable name it does not bind "
    "itself (constant: bound once to a literal, a tuple or frozenset of them, arithmetic of them or another "
    "constant, never declared global; functions, classes and imports are code), and has no effect of the effect "
    "table"
)
NOT_PROVED: Final = (
    "determinism: state reached through calls into other functions, attributes of its arguments or "
    "getattr/eval is not followed"
)
_FINDINGS_SHOWN: Final = 3


def evaluate_purity(facts: AtomFacts) -> StageResult:
    """Stage 10 as phase B runs it."""
    return check_purity(facts.ports.facts, facts.diff, diff_identity=facts.diff_identity)


def check_purity(task: TaskFacts, diff: DiffAtoms, *, diff_identity: str | None) -> StageResult:
    """Stage 10 (see the module docstring) on the task's approved plan and the diff's atoms."""
    base: dict[str, object] = {"rule": RULE, "effect_table_version": EFFECT_TABLE_VERSION,
                               "diff_identity": diff_identity, "not_proved": NOT_PROVED}
    atoms = diff.atoms
    if not atoms:
        return stage_result(StageName.ATOMS, StageOutcome.SKIPPED, "the diff adds or changes no function or method "
                            "outside tests: no atom is declared pure", {**base, "atoms": [], "findings": []})
    contracts = atom_contracts(task.worktree, atoms, task.plan)
    pure = [c for c in contracts if c.declared_pure]
    base["not_checked"] = {c.atom.qualified_name: "not declared pure: its plan declaration lists effects"
                           if c.declaration is not None else "not declared pure: no plan step declares it"
                           for c in contracts[:MAX_LISTED] if not c.declared_pure}
    if not pure:
        return stage_result(StageName.ATOMS, StageOutcome.SKIPPED, f"none of the diff's {len(atoms)} atom(s) is "
                            "declared pure (no effects) in the approved plan", {**base, "atoms": [], "findings": []})
    findings: list[str] = []
    checked: list[dict[str, object]] = []
    for contract in pure:
        atom = contract.atom
        if contract.shape is None:
            found = [f"could not be examined: {contract.problem}"]
        else:
            found = [finding.describe() for finding in contract.shape.purity]
        findings.extend(f"{atom.qualified_name} ({atom.path}) is declared pure but {line}" for line in found)
        checked.append({"qualified_name": atom.qualified_name, "path": atom.path,
                        "lines": [atom.first_line, atom.last_line], "findings": found})
    evidence = {**base, "atom_count": len(pure), "finding_count": len(findings), "atoms": checked[:MAX_LISTED],
                "findings": findings[:MAX_LISTED]}
    if findings:
        shown = "; ".join(findings[:_FINDINGS_SHOWN]) + ("; …" if len(findings) > _FINDINGS_SHOWN else "")
        return stage_result(StageName.ATOMS, StageOutcome.FAILED,
                            f"{len(findings)} finding(s) on {len(pure)} atom(s) declared pure: {shown}"[:2000],
                            evidence)
    return stage_result(StageName.ATOMS, StageOutcome.SATISFIED,
                        f"{len(pure)} atom(s) declared pure read nothing outside their arguments: no global/nonlocal, "
                        f"no module-level mutable name, no effect of table v{EFFECT_TABLE_VERSION}", evidence)
