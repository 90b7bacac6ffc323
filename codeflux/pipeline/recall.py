"""Stage 6, recall (issue 19): for each atom the approved plan declares, is a verified atom with the same contract
already known for this repository?

Memory is asked through the pipeline's :class:`~codeflux.pipeline.ports.MemoryPort` (the coordinator's recall:
full-text candidates by the atom's name, each checked for applicability in the person's checkout — same repository,
toolchain and dependency set, its file unchanged — an entry whose evidence stopped holding is quarantined on the
way). A candidate counts only when it is usable now **and** its contract hash equals the declaration's
(:attr:`~codeflux.domain.contracts.DeclaredAtom.contract_hash`: the signature and the effects); a similar name never
does. Each declared atom is recorded as

* ``reuse`` — naming the entry, the atom and the commit it was verified at. Reuse is not trust: this run's phase B
  verifies the atom again where the diff touches it (stages 7–13), and the suite (28) runs its tests either way;
* ``write`` — with why nothing was reusable: no entry of that name, entries with another contract, or entries
  refused by the applicability check (each with its reason).

Accepted tasks register their verified atoms (:mod:`codeflux.coordinator.tasks.learning`), so a later task on the
same repository finds them. Gate: every declared atom is recorded as reuse or write (a recording stage, like 18);
no declared atom → ``skipped``; no memory in this run → ``blocked``. Not proved: that a reused atom fits the new
context (that is phase C's molecules and the tests' job), or anything about atoms the plan did not declare.
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.errors import CodefluxError, safe_error_message
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.contracts import declarations_of
from codeflux.pipeline.ports import RecalledAtom
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["evaluate_recall"]

_STAGE: Final = StageName.RECALL
_MAX_SHOWN: Final = 5


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _same_atom(declared: str, recalled: RecalledAtom) -> bool:
    """``declared`` (qualified, or a name inside a file of its step) names the recalled atom."""
    return recalled.qualified_name == declared or _last(recalled.qualified_name) == _last(declared)


def _decision(name: str, digest: str, found: tuple[RecalledAtom, ...]) -> dict[str, object]:
    named = [atom for atom in found if _same_atom(name, atom)]
    reusable = [atom for atom in named if atom.usable and atom.contract_hash == digest]
    if reusable:
        chosen = reusable[0]
        return {"atom": name, "contract_hash": digest, "decision": "reuse", "entry": chosen.entry_id,
                "recalled": chosen.qualified_name, "path": chosen.path, "verified_at": chosen.learned_at_commit,
                "reason": f"memory {chosen.entry_id} holds {chosen.qualified_name} ({chosen.path}) with this contract, "
                          f"verified at {chosen.learned_at_commit[:12]} and applicable now; this run verifies it "
                          f"again (phase B where the diff touches it, the suite either way)"}
    refused = [f"{atom.entry_id}: {atom.reason}" for atom in named if not atom.usable]
    other = [atom.entry_id for atom in named if atom.usable and atom.contract_hash != digest]
    if refused:
        why = "every entry of that name was refused by the applicability check: " + "; ".join(refused[:_MAX_SHOWN])
    elif other:
        why = f"the entries of that name have another contract ({', '.join(other[:_MAX_SHOWN])})"
    else:
        why = "memory holds no verified atom of that name for this repository"
    return {"atom": name, "contract_hash": digest, "decision": "write", "reason": why, "refused": refused[:_MAX_SHOWN]}


def evaluate_recall(facts: AtomFacts) -> StageResult:
    """Stage 6 (see the module docstring)."""
    declared = declarations_of(facts.ports.facts.plan)
    if not declared:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the approved plan declares no atom: there is no contract "
                            "to look for", {})
    memory = facts.ports.memory
    if memory is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, "this run has no memory to ask (recall needs the "
                            "coordinator's memory store)", {})
    atoms = []
    for declaration in declared:
        name = declaration.atom.name
        try:
            found = memory.recall_atoms(_last(name))
        except CodefluxError as error:
            return stage_result(_STAGE, StageOutcome.BLOCKED, f"memory could not be asked about {name}: "
                                f"{safe_error_message(error)}", {})
        atoms.append({**_decision(name, declaration.atom.contract_hash, found), "step": declaration.step})
    reused = [str(atom["atom"]) for atom in atoms if atom["decision"] == "reuse"]
    written = [str(atom["atom"]) for atom in atoms if atom["decision"] == "write"]
    said = (f"{len(atoms)} declared atom(s): reuse {', '.join(reused) or 'none'}; write {', '.join(written) or 'none'}"
            f" (memory asked by name, a candidate counted only when applicable now with the same contract)")
    return stage_result(_STAGE, StageOutcome.SATISFIED, said, {
        "atoms": atoms, "reused": reused, "written": written,
        "not_proved": "that a reused atom fits its new callers (phase C and the tests judge that)"})
