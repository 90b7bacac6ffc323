"""The pipeline as data: the 37 stages, their gates and prerequisites, and the five outcomes' rules.

:mod:`.stages` declares the catalog (the stage name is the identity); :mod:`.outcomes` holds the
outcomes and the pure ledger rules (verdict validation, blocked propagation, finalizing a run). The
stage runner and the ledger table live in :mod:`codeflux.pipeline` and :mod:`codeflux.store`; this
package does no I/O.
"""

from __future__ import annotations

from codeflux.domain.pipeline.outcomes import (
    NOT_IMPLEMENTED_REASON,
    StageOutcome,
    StageVerdict,
    finalize_run,
    propagate_blocked,
    unmet_prerequisite,
)
from codeflux.domain.pipeline.stages import (
    GATING_STAGES,
    PERFORMABLE_STAGES,
    SEND_BACK_STAGES,
    STAGES,
    PipelinePhase,
    Stage,
    StageName,
    stage_named,
    transitive_order,
    transitive_prerequisites,
)

__all__ = [
    "GATING_STAGES",
    "NOT_IMPLEMENTED_REASON",
    "PERFORMABLE_STAGES",
    "SEND_BACK_STAGES",
    "STAGES",
    "PipelinePhase",
    "Stage",
    "StageName",
    "StageOutcome",
    "StageVerdict",
    "finalize_run",
    "propagate_blocked",
    "stage_named",
    "transitive_order",
    "transitive_prerequisites",
    "unmet_prerequisite",
]
