"""Stage 15 atom-optimization: a simpler rewrite of an atom is kept only when it is proven equivalent.

The implementation loop does not propose rewrites yet, so the stage is recorded ``skipped`` with that reason
whenever the diff has atoms (and with "no atoms" when it has none): nothing was rewritten, so nothing needed
proving. When the loop proposes a rewrite, a Hypothesis differential test (the original and the rewrite agree
on generated inputs) must pass in the task's worker before the rewrite is kept — not yet possible, since no
rewrite is proposed. The stage never claims an atom is as simple as it can be.
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["NO_REWRITE_PROPOSED", "evaluate_atom_optimization"]

NO_REWRITE_PROPOSED: Final = "no simpler rewrite was proposed in this attempt"


def evaluate_atom_optimization(diff: DiffAtoms) -> StageResult:
    """Stage 15 (see the module docstring)."""
    atoms = diff.atoms
    if not atoms:
        return stage_result(StageName.ATOM_OPTIMIZATION, StageOutcome.SKIPPED,
                            "the diff adds or changes no function outside the tests", {})
    return stage_result(StageName.ATOM_OPTIMIZATION, StageOutcome.SKIPPED,
                        f"{NO_REWRITE_PROPOSED} (the implementation loop does not propose rewrites yet)",
                        {"atoms": [{"qualified_name": atom.qualified_name, "path": atom.path,
                                    "lines": [atom.first_line, atom.last_line], "rewrite": None} for atom in atoms],
                         "rewrites": [],
                         "does_not_prove": "that any atom is as simple as it can be"})
