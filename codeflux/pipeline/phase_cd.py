"""Phases C and D — molecules and control flow: the stages recorded with phase B, before 26 assembly (issue 18).

:data:`PHASE_CD` is evaluated right after :data:`~codeflux.pipeline.phase_b.ATOM_STAGES` with the **same**
:class:`~codeflux.pipeline.atom_facts.AtomFacts` (the runner hands both tuples to
:func:`~codeflux.pipeline.phase_b.record_atom_stages`), so stages 19–25 read the one coverage run phase B measured.
"""

from __future__ import annotations

from typing import Final

from codeflux.domain.pipeline import StageName
from codeflux.pipeline.compositions import evaluate_composition_obligations
from codeflux.pipeline.control_flow import (
    evaluate_control_flow,
    evaluate_control_obligations,
    evaluate_control_tests,
    evaluate_path_coverage,
)
from codeflux.pipeline.molecules import evaluate_molecule_tests, evaluate_molecule_verification, evaluate_molecules
from codeflux.pipeline.phase_b import AtomStage

__all__ = ["PHASE_CD"]

_AFTER_18: Final = frozenset({StageName.COMPOSITION_OBLIGATIONS})

PHASE_CD: Final[tuple[AtomStage, ...]] = (
    AtomStage(stage=StageName.COMPOSITION_OBLIGATIONS, evaluate=evaluate_composition_obligations),
    # 19–21 read 18's obligations and share one stub run of the callers (a scratch copy); 21 discharges
    AtomStage(stage=StageName.MOLECULE_TESTS, evaluate=evaluate_molecule_tests, after=_AFTER_18, scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.MOLECULES, evaluate=evaluate_molecules, after=_AFTER_18, scratch=True,
              reads_coverage=True),
    AtomStage(stage=StageName.MOLECULE_VERIFICATION, evaluate=evaluate_molecule_verification,
              after=frozenset({StageName.MOLECULE_TESTS, StageName.MOLECULES}), scratch=True, reads_coverage=True),
    # 23–25 read 22's obligations, 24 discharges them: one after another, on the one coverage run
    AtomStage(stage=StageName.CONTROL_OBLIGATIONS, evaluate=evaluate_control_obligations),
    AtomStage(stage=StageName.CONTROL_TESTS, evaluate=evaluate_control_tests,
              after=frozenset({StageName.CONTROL_OBLIGATIONS}), reads_coverage=True),
    AtomStage(stage=StageName.CONTROL_FLOW, evaluate=evaluate_control_flow,
              after=frozenset({StageName.CONTROL_TESTS}), reads_coverage=True),
    AtomStage(stage=StageName.PATH_COVERAGE, evaluate=evaluate_path_coverage,
              after=frozenset({StageName.CONTROL_FLOW}), reads_coverage=True),
)
"""The stages of phases C and D evaluated here, in stage order."""
