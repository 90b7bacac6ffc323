"""Filling a run attempt's stage ledger by the domain's rules, inside the caller's transaction.

Verdicts arrive while an attempt runs, in stage order. Each batch is passed through
:func:`~codeflux.domain.pipeline.finalize_run` together with what is already stored, so the stored rows
always equal what finalizing the attempt will say about them:

- a verdict whose prerequisite failed or is blocked is stored as ``blocked`` naming that prerequisite
  (blocked propagation wins over what the stage reported);
- stages the run went past without a verdict are stored too, before the new ones: ``not-implemented``
  for a stage codeflux cannot perform, ``blocked`` for one it can but did not decide;
- a stage already stored — including one the run went past — is refused with
  :class:`StageAlreadyRecordedError`: ledger rows never change.

Ending the attempt (:func:`finish_attempt_ledger`) fills every remaining stage — ``blocked`` after the
stage where the run stopped — and closes the attempt, whose ledger then has exactly one row per stage.

A finished attempt that stopped to wait for a person is decided later, by accept or reject: that decision is
recorded once for the attempt (``task_deliveries``: the verdicts of 36 human-acceptance and 37 deliver, with
the decision's diff identity, commit and decider). :func:`ledger_with_decision` is the attempt's ledger as it
is read everywhere (CLI, review, ListStages): 36 and 37 carry the decision's verdicts, and their evidence
names the decision and what the rows said when the attempt ended ("blocked: not decided yet").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from codeflux.domain.errors import ConflictError, StageAlreadyRecordedError, UsageError
from codeflux.domain.events import RunAttemptEnded, StageVerdictsRecorded
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict, finalize_run, stage_named
from codeflux.store.checkpoints import DeliveryRow
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import JournalEvent, append_event
from codeflux.store.stage_ledger import (
    LedgerRow,
    RunAttemptRow,
    end_run_attempt,
    insert_ledger_rows,
    latest_run_attempt,
    ledger_of_attempt,
    require_run_attempt,
)

__all__ = ["Evidence", "evidence_diff_identity", "evidence_identity_in", "finish_attempt_ledger",
           "ledger_with_decision", "record_verdicts_in_ledger"]

Evidence = Mapping[str, object]
"""What a stage recorded as its evidence: a JSON object (argv, versions, diff identity, result, …)."""


def _open_attempt(tx: Transaction, task_id: TaskId, attempt: int) -> RunAttemptRow:
    run = require_run_attempt(tx, task_id, attempt)
    if not run.is_open:
        raise ConflictError(f"task {task_id} run attempt {attempt} has ended; its ledger is complete")
    return run


def _refuse_recorded(
    task_id: TaskId, attempt: int, stored: Sequence[LedgerRow], batch: Sequence[StageVerdict]
) -> None:
    by_stage = {row.verdict.stage: row for row in stored}
    for verdict in batch:
        row = by_stage.get(verdict.stage)
        # The stored ledger is a prefix of the catalog, so a stage at or before its end is in it.
        if row is not None:
            raise StageAlreadyRecordedError(task_id=task_id.value, attempt=attempt, stage=verdict.stage.value,
                                            outcome=row.verdict.outcome.value)


def _require_json_object(stage: StageName, document: object) -> None:
    if not isinstance(document, Mapping) or not all(isinstance(key, str) for key in document):
        raise UsageError(f"the evidence of {stage} must be a JSON object")
    try:
        json.dumps(dict(document), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise UsageError(f"the evidence of {stage} must hold JSON values only") from None


def _with_evidence(
    new: Sequence[StageVerdict], offered: Mapping[StageName, StageVerdict], evidence: Mapping[StageName, Evidence]
) -> list[tuple[StageVerdict, Evidence]]:
    rows: list[tuple[StageVerdict, Evidence]] = []
    for verdict in new:
        # Evidence stays only with the verdict it was recorded for; a stage turned blocked did not run.
        kept = offered.get(verdict.stage) == verdict and verdict.stage in evidence
        rows.append((verdict, evidence[verdict.stage] if kept else {}))
    return rows


def record_verdicts_in_ledger(
    tx: Transaction, *, task_id: TaskId, attempt: int, verdicts: Sequence[StageVerdict],
    evidence: Mapping[StageName, Evidence], session_id: str, at_us: int,
) -> tuple[list[LedgerRow], JournalEvent]:
    """Store ``verdicts`` (and the stages skipped over before them) in the open attempt's ledger."""
    if not verdicts:
        raise UsageError("record at least one stage verdict")
    stray = sorted(stage.value for stage in evidence if stage not in {v.stage for v in verdicts})
    if stray:
        raise UsageError(f"evidence was given for stages without a verdict: {', '.join(stray)}")
    for stage, document in evidence.items():
        _require_json_object(stage, document)
    _open_attempt(tx, task_id, attempt)
    stored = ledger_of_attempt(tx, task_id, attempt)
    _refuse_recorded(task_id, attempt, stored, verdicts)
    complete = finalize_run([row.verdict for row in stored] + list(verdicts), stopped_at=None)
    last = max(stage_named(verdict.stage).number for verdict in verdicts)
    new = [v for v in complete if len(stored) < stage_named(v.stage).number <= last]
    rows = insert_ledger_rows(tx, task_id=task_id, attempt=attempt, at_us=at_us,
                              verdicts=_with_evidence(new, {v.stage: v for v in verdicts}, evidence))
    event = append_event(tx, session_id=session_id, event=StageVerdictsRecorded(
        task_id=task_id, attempt=attempt,
        stages=tuple((row.verdict.stage.value, row.verdict.outcome) for row in rows),
    ))
    return rows, event


def finish_attempt_ledger(
    tx: Transaction, *, task_id: TaskId, attempt: int, stopped_at: StageName | None, session_id: str, at_us: int
) -> tuple[list[LedgerRow], RunAttemptRow, JournalEvent]:
    """Fill the rest of the attempt's ledger (``blocked`` after ``stopped_at``) and end the attempt.

    Returns the whole ledger (37 rows), the ended attempt and its ``run-attempt-ended`` event.
    """
    _open_attempt(tx, task_id, attempt)
    stored = ledger_of_attempt(tx, task_id, attempt)
    complete = finalize_run([row.verdict for row in stored], stopped_at=stopped_at)
    rows = insert_ledger_rows(tx, task_id=task_id, attempt=attempt, at_us=at_us,
                              verdicts=[(verdict, {}) for verdict in complete[len(stored):]])
    ended = end_run_attempt(tx, task_id=task_id, attempt=attempt, stopped_at=stopped_at, at_us=at_us)
    ledger = stored + rows
    counts: dict[StageOutcome, int] = {}
    for row in ledger:
        counts[row.verdict.outcome] = counts.get(row.verdict.outcome, 0) + 1
    event = append_event(tx, session_id=session_id, event=RunAttemptEnded(
        task_id=task_id, attempt=attempt, stopped_at=None if stopped_at is None else stopped_at.value,
        outcomes=counts,
    ))
    return ledger, ended, event


def ledger_with_decision(rows: Sequence[LedgerRow], delivery: DeliveryRow | None) -> list[LedgerRow]:
    """``rows`` with stages 36 and 37 as the person's decision on the attempt decided them (see the module
    docstring); unchanged when the attempt is not decided."""
    if delivery is None:
        return list(rows)
    decided = {StageName.HUMAN_ACCEPTANCE: delivery.human_acceptance, StageName.DELIVER: delivery.deliver}
    shown: list[LedgerRow] = []
    for row in rows:
        verdict = decided.get(row.verdict.stage)
        if verdict is None:
            shown.append(row)
            continue
        evidence: dict[str, object] = {
            "decision": "accepted" if delivery.accepted else "rejected", "diff_identity": delivery.diff_identity,
            "landed_commit": delivery.landed_commit, "reason": delivery.reason, "decided_by": str(delivery.decided_by),
            "recorded_in": "the attempt's delivery decision (after the attempt ended)",
            "when_the_attempt_ended": {"outcome": row.verdict.outcome.value, "reason": row.verdict.reason},
        }
        shown.append(LedgerRow(task_id=row.task_id, attempt=row.attempt, number=row.number, verdict=verdict,
                               evidence=evidence, recorded_at_us=delivery.decided_at_us))
    return shown


def evidence_identity_in(rows: Sequence[LedgerRow]) -> str | None:
    """The diff identity an attempt's ledger ``rows`` gathered their evidence on: the evidence bundle's (stage
    35), else assembly's (26) — every check after assembly ran on it; None when neither recorded one."""
    found: dict[StageName, str] = {}
    for row in rows:
        identity = row.evidence.get("diff_identity")
        if row.verdict.stage in (StageName.EVIDENCE_BUNDLE, StageName.ASSEMBLY) and isinstance(identity, str):
            found[row.verdict.stage] = identity
    return found.get(StageName.EVIDENCE_BUNDLE, found.get(StageName.ASSEMBLY))


def evidence_diff_identity(view: ReadView, task_id: TaskId) -> str | None:
    """The diff identity the task's newest attempt gathered its evidence on (:func:`evidence_identity_in`);
    None before any attempt recorded one. What the diff under review must still be for the evidence to be
    about it: the CLI says when they differ, and accept refuses."""
    attempt = latest_run_attempt(view, task_id)
    return None if attempt is None else evidence_identity_in(ledger_of_attempt(view, task_id, attempt.attempt))
