"""Phase G: 35 evidence-bundle, 36 human-acceptance, 37 deliver.

**evidence-bundle** gathers one record from the attempt's ledger: every stage with its outcome and what
was checked (or why it was not), the checks that ran with their argv and results, the diff identity
they saw, the hard failures, and — stated, never hidden — every stage that was not examined. Stages
the run went past are included with the outcome the ledger rules give them. The bundle is built
precisely when checks failed: that is where a reviewer reads about it. A repository with no Python in it
(no ``.py`` file, no ``pyproject.toml`` / ``setup.py`` / ``setup.cfg``) is labelled "experimental: generic
checks only" — codeflux's real checks are Python's (ARCHITECTURE §8.4). Under ``atom_evidence`` the bundle
lists per atom of the diff what each atom stage (5, 7–17) measured of it, or why it was not measured
(:mod:`codeflux.domain.pipeline.atom_evidence`).

**human-acceptance** holds only when a person accepted this exact diff (the acceptance record's diff
identity equals the one the checks saw); a rejection fails it. Without a decision the stage is not
decided: the run stops there and the task waits in ``awaiting-review``. **deliver** holds when the
accepted change landed on the user's branch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict, finalize_run, stage_named
from codeflux.domain.pipeline.atom_evidence import atom_evidence
from codeflux.pipeline.ports import AcceptanceRecord, PipelinePorts
from codeflux.pipeline.specification import StageResult
from codeflux.store.stage_ledger import LedgerRow

__all__ = ["EXPERIMENTAL_LABEL", "evaluate_deliver", "evaluate_evidence_bundle", "evaluate_human_acceptance",
           "is_python_repository"]

EXPERIMENTAL_LABEL: Final = "experimental: generic checks only (not a Python repository)"
_PYTHON_MARKERS: Final = frozenset({"pyproject.toml", "setup.py", "setup.cfg"})
_SCAN_LIMIT: Final = 20_000


def is_python_repository(root: Path) -> bool:
    """Whether ``root`` holds Python: a packaging file at the top, or a ``.py`` file within the first
    :data:`_SCAN_LIMIT` entries of a walk that skips hidden directories and never follows links."""
    if any((root / marker).is_file() for marker in _PYTHON_MARKERS):
        return True
    seen = 0
    for _folder, directories, files in os.walk(root, followlinks=False):
        directories[:] = [name for name in directories if not name.startswith(".")]
        seen += len(directories) + len(files)
        if any(name.endswith(".py") for name in files):
            return True
        if seen > _SCAN_LIMIT:
            return False
    return False

_HARD_FAILURE = StageOutcome.FAILED
_CHECK_KEYS = ("argv", "interpreter", "python_version", "pytest_version", "exit_code", "tests", "passed",
               "failures", "errors", "skipped", "failing", "failing_on_base_too", "compiled", "compile_errors",
               "discrimination", "not_shown_to_need_this_change")


def _claim(verdict: StageVerdict, evidence: dict[str, object]) -> dict[str, object]:
    claim: dict[str, object] = {"stage": verdict.stage.value, "number": stage_named(verdict.stage).number,
                                "outcome": verdict.outcome.value}
    if verdict.gate_evaluation is not None:
        claim["checked"] = verdict.gate_evaluation
    if verdict.reason is not None:
        claim["reason"] = verdict.reason
    shown = {key: evidence[key] for key in _CHECK_KEYS if key in evidence}
    if shown:
        claim["evidence"] = shown
    return claim


def evaluate_evidence_bundle(ports: PipelinePorts, rows: Sequence[LedgerRow], *,
                             diff_identity: str | None) -> StageResult:
    """Stage 35 over the ledger ``rows`` recorded so far in this attempt."""
    bundle_number = stage_named(StageName.EVIDENCE_BUNDLE).number
    by_stage = {row.verdict.stage: row for row in rows}
    projected = finalize_run([row.verdict for row in rows], stopped_at=None)
    claims = [_claim(verdict, dict(by_stage[verdict.stage].evidence) if verdict.stage in by_stage else {})
              for verdict in projected if stage_named(verdict.stage).number < bundle_number]
    counts: dict[str, int] = {outcome.value: 0 for outcome in StageOutcome}
    for claim in claims:
        counts[str(claim["outcome"])] += 1
    hard = [str(claim["stage"]) for claim in claims if claim["outcome"] == _HARD_FAILURE.value]
    examined = {StageOutcome.SATISFIED.value, StageOutcome.FAILED.value, StageOutcome.SKIPPED.value}
    unexamined = [{"stage": claim["stage"], "outcome": claim["outcome"], "reason": claim.get("reason")}
                  for claim in claims if claim["outcome"] not in examined]
    facts = ports.facts
    python = is_python_repository(facts.worktree.path)
    evidence: dict[str, object] = {
        "task_id": facts.task_id.value, "plan_revision": facts.plan_revision, "plan_sha256": facts.plan_sha256,
        "diff_identity": diff_identity, "claims": claims, "counts": counts, "hard_failures": hard,
        "not_examined": unexamined, "clean": not hard, "support": "python" if python else EXPERIMENTAL_LABEL,
        "atom_evidence": atom_evidence(projected, {row.verdict.stage: row.evidence for row in rows}),
    }
    seen = ("" if python else f"{EXPERIMENTAL_LABEL}: ") + (
            f"bundle of {len(claims)} stages on diff {(diff_identity or 'unknown')[:12]}: "
            f"{counts['satisfied']} satisfied, {counts['failed']} failed, {counts['skipped']} skipped, "
            f"{len(unexamined)} not examined")
    verdict = StageVerdict(stage=StageName.EVIDENCE_BUNDLE, outcome=StageOutcome.SATISFIED, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)


def evaluate_human_acceptance(record: AcceptanceRecord | None, *, diff_identity: str | None) -> StageResult | None:
    """Stage 36, or None while no person has decided (the run stops there, awaiting review)."""
    if record is None:
        return None
    evidence: dict[str, object] = {"diff_identity": record.diff_identity, "accepted": record.accepted,
                                   "decided_by": record.decided_by}
    if not record.accepted:
        text = f"{record.decided_by} rejected diff {record.diff_identity[:12]}"
        outcome = StageOutcome.FAILED
    elif diff_identity is not None and record.diff_identity != diff_identity:
        text = f"the accepted diff {record.diff_identity[:12]} is not the one checked ({diff_identity[:12]})"
        outcome = StageOutcome.FAILED
    else:
        text = f"{record.decided_by} accepted diff {record.diff_identity[:12]} after its evidence bundle"
        outcome = StageOutcome.SATISFIED
    verdict = StageVerdict(stage=StageName.HUMAN_ACCEPTANCE, outcome=outcome, gate_evaluation=text)
    return StageResult(verdict=verdict, evidence=evidence)


def evaluate_deliver(record: AcceptanceRecord) -> StageResult:
    """Stage 37: the accepted change landed on the user's branch."""
    text = (f"diff {record.diff_identity[:12]} landed on the user's branch" if record.landed
            else f"diff {record.diff_identity[:12]} was accepted but has not landed")
    outcome = StageOutcome.SATISFIED if record.landed else StageOutcome.FAILED
    verdict = StageVerdict(stage=StageName.DELIVER, outcome=outcome, gate_evaluation=text)
    return StageResult(verdict=verdict, evidence={"diff_identity": record.diff_identity, "landed": record.landed})

