"""The records of a run through the pipeline: an attempt under an approved plan revision, and its ledger of
one verdict (with its evidence) per stage. Stored by ``codeflux.store.stage_ledger``, decoded there once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from codeflux.domain.ids import RunId, TaskId
from codeflux.domain.pipeline.outcomes import StageVerdict
from codeflux.domain.pipeline.stages import StageName

__all__ = ["LedgerRow", "RunAttemptRow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunAttemptRow:
    """One pass of a task's run through the pipeline; ``stopped_at`` is where an ended attempt stopped."""

    run_id: RunId
    task_id: TaskId
    attempt: int
    plan_revision: int
    plan_sha256: str
    started_at_us: int
    ended_at_us: int | None
    stopped_at: StageName | None

    @property
    def is_open(self) -> bool:
        return self.ended_at_us is None


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerRow:
    """One stage's verdict in an attempt, with the evidence recorded for it (a JSON object)."""

    task_id: TaskId
    attempt: int
    number: int
    verdict: StageVerdict
    evidence: Mapping[str, object]
    recorded_at_us: int
