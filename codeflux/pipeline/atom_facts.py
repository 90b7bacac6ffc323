"""What every phase B stage is handed (:class:`AtomFacts`), in a module of its own: the stage modules import it,
and :mod:`~codeflux.pipeline.phase_b`, which lists the stages, imports them — so no stage imports phase_b."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field

from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult

__all__ = ["AtomFacts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomFacts:
    """The ports, the attempt, the diff's atoms and assembly's result."""

    ports: PipelinePorts
    attempt: int
    diff: DiffAtoms
    assembly: StageResult
    shared: MutableMapping[str, object] = field(default_factory=dict, compare=False)
    """What one stage measured for the next ones of the same attempt (the coverage map:
    :func:`~codeflux.pipeline.atom_coverage.atom_coverage`, so the tests run under coverage once; the interpreter's
    tool probe: :func:`~codeflux.pipeline.tool_overlay.resolve_tools`)."""

    @property
    def diff_identity(self) -> str | None:
        identity = self.assembly.evidence.get("diff_identity")
        return identity if isinstance(identity, str) else None
