"""Findings of failed advisory stages, carried into an attempt a send-back gate starts (ARCHITECTURE §8.3).

Stages 5 contracts, 7 atom-case-synthesis, 8 atom-example-tests, 9 atom-property-tests, 12 atom-fuzz, 13
atom-mutation and 14 anti-patterns, and phase F's 30 global-invariants, 32 repetition and 33 platform-matrix, never
send work back themselves: their failure is listed in the ledger and the
evidence bundle. When a send-back gate (assembly, the tests, the examples) starts another attempt anyway, what those
stages found joins the failure the next attempt is told about, so the loop can fix them in the same pass.

Each of those stages records its findings in its evidence under ``findings``: a list of short strings, one
finding each. :func:`other_findings` reads them from the attempt's ledger — only for stages recorded
``failed`` — and words one bounded section (at most :data:`MAX_FINDINGS_PER_STAGE` per stage, each cut at
:data:`MAX_FINDING_CHARS`, whole lines up to :data:`MAX_SECTION_CHARS` and then how many were left out), or the
empty string when there is none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.pipeline.ledger import LedgerRow

__all__ = [
    "FINDINGS_JOIN_SEND_BACK",
    "MAX_FINDINGS_PER_STAGE",
    "MAX_FINDING_CHARS",
    "MAX_SECTION_CHARS",
    "other_findings",
]

FINDINGS_JOIN_SEND_BACK: Final = frozenset({
    StageName.CONTRACTS, StageName.ATOM_CASE_SYNTHESIS, StageName.ATOM_EXAMPLE_TESTS, StageName.ATOM_PROPERTY_TESTS,
    StageName.ATOM_FUZZ,
    StageName.ATOM_MUTATION, StageName.ANTI_PATTERNS,
    StageName.GLOBAL_INVARIANTS, StageName.REPETITION, StageName.PLATFORM_MATRIX,  # phase F (issue 18)
})
MAX_FINDINGS_PER_STAGE: Final = 10
MAX_FINDING_CHARS: Final = 300
MAX_SECTION_CHARS: Final = 3000
_TAIL_RESERVE: Final = 80


def other_findings(rows: Iterable[LedgerRow]) -> str:
    """The "other findings" section for the next attempt (see the module docstring); empty when none."""
    lines: list[str] = []
    for row in sorted(rows, key=lambda row: row.number):
        if row.verdict.stage not in FINDINGS_JOIN_SEND_BACK or row.verdict.outcome is not StageOutcome.FAILED:
            continue
        found = row.evidence.get("findings")
        items = [str(item) for item in found if str(item).strip()] if isinstance(found, list) else []
        if not items:
            items = [row.verdict.gate_evaluation or "failed"]
        for item in items[:MAX_FINDINGS_PER_STAGE]:
            text = " ".join(item.split())
            lines.append(f"- {row.number} {row.verdict.stage.value}: "
                         + (text if len(text) <= MAX_FINDING_CHARS else text[:MAX_FINDING_CHARS - 1] + "…"))
        if len(items) > MAX_FINDINGS_PER_STAGE:
            lines.append(f"- {row.number} {row.verdict.stage.value}: … and {len(items) - MAX_FINDINGS_PER_STAGE} more "
                         "(see the stage's evidence)")
    if not lines:
        return ""
    head = ("Other findings of this attempt (stages that do not send work back themselves; fix them in the same "
            "pass — names in them come from the repository):")
    kept = [head]
    size = len(head)
    for index, line in enumerate(lines):
        if size + 1 + len(line) > MAX_SECTION_CHARS - _TAIL_RESERVE:
            kept.append(f"- … {len(lines) - index} more line(s) not shown (see the stages' evidence)")
            break
        kept.append(line)
        size += 1 + len(line)
    return "\n".join(kept)
