"""Checkpoints: the task worktree preserved on a private ref plus its record, as one outcome.

:meth:`CheckpointService.capture_checkpoint` (``plan-approved``, ``material-edit``,
``before-risky-action``, ``paused``, ``shutdown``):

1. reads the task's next checkpoint sequence, its attempt and plan revision;
2. commits what the worktree holds now onto ``refs/codeflux/checkpoints/<task>/<n>``
   (:func:`codeflux.gitwork.checkpoint_refs.preserve_worktree`: the task branch never moves, no hook
   runs, the index and files are untouched);
3. in one transaction appends the ``checkpoint-created`` event and the immutable ``checkpoints`` row that
   names it (its sequence is the last durable event of the checkpoint).

If the transaction does not commit, the ref is deleted again (only while it still names the commit made
in step 2), so a ref without a row exists only when the process died between steps 2 and 3 — and the
next capture of that sequence replaces such an orphan, since no record names it. A task that never
started a run has no worktree: nothing is captured and None is returned.

The delivery decision (stages 36 and 37 after accept / reject) is recorded by
:func:`record_delivery_decision` inside the review's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from codeflux.coordinator.tasks.changes import TaskChanges
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.domain.events import CheckpointCreated, DeliveryRecorded
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.domain.tasks import Actor
from codeflux.domain.tools import ToolName
from codeflux.gitwork.checkpoint_refs import delete_checkpoint_ref, preserve_worktree
from codeflux.gitwork.diff import CommitAuthor
from codeflux.pipeline.delivery import evaluate_deliver, evaluate_human_acceptance
from codeflux.pipeline.ports import AcceptanceRecord
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store import plans as plan_rows
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store import task_records as records
from codeflux.store.checkpoints import CheckpointRow, CheckpointTrigger, DeliveryRow
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import JournalEvent, append_event

__all__ = ["CHECKPOINT_AUTHOR", "MATERIAL_EDIT_TOOLS", "CheckpointRow", "CheckpointService", "CheckpointTrigger",
           "DeliveryRow", "record_delivery_decision"]

CHECKPOINT_AUTHOR = CommitAuthor(name="codeflux", email="codeflux@localhost")
MATERIAL_EDIT_TOOLS = frozenset({ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value, ToolName.APPLY_PATCH.value,
                                 ToolName.DELETE_FILE.value})
"""Tools whose success is a material edit of the worktree (a checkpoint follows each)."""


class CheckpointService:
    """Captures checkpoints through ``changes`` (its database, clock and publisher); see the module docstring.

    ``fault`` is called inside the transaction just before it commits (tests make the commit fail there).
    """

    def __init__(self, changes: TaskChanges, *, author: CommitAuthor = CHECKPOINT_AUTHOR,
                 fault: Callable[[], None] | None = None) -> None:
        self._changes = changes
        self._author = author
        self._fault = fault

    def capture_checkpoint(self, task_id: TaskId, trigger: CheckpointTrigger) -> CheckpointRow | None:
        """Preserve the worktree and record checkpoint ``trigger``; None when the task has no worktree yet."""
        chosen = CheckpointTrigger(trigger)
        db = self._changes.db

        def facts(view: ReadView) -> tuple[records.TaskRecord, int, int | None, int | None]:
            task = records.require_task_record(view, task_id)
            attempt = ledger_rows.latest_run_attempt(view, task_id)
            plan = plan_rows.latest_plan_revision(view, task_id)
            revision = attempt.plan_revision if attempt is not None else (None if plan is None else plan.revision)
            return (task, checkpoint_rows.next_checkpoint_sequence(view, task_id), revision,
                    None if attempt is None else attempt.attempt)

        task, sequence, plan_revision, attempt = db.read(facts)
        binding = task_worktree_binding(task)
        if binding is None or not binding.path.exists():
            return None
        ref_name = checkpoint_rows.checkpoint_ref_name(task_id, sequence)
        preserved = preserve_worktree(binding, ref_name, f"codeflux checkpoint {sequence} of {task_id}: {chosen}",
                                      author=self._author, replace_orphan=True)

        def work(tx: Transaction, events: list[JournalEvent]) -> CheckpointRow:
            event = append_event(tx, session_id=task.session_id, event=CheckpointCreated(
                task_id=task_id, sequence=sequence, trigger=chosen.value, commit=preserved.commit, ref=ref_name,
                head=preserved.head, diff_identity=preserved.diff_identity, plan_revision=plan_revision,
                attempt=attempt))
            events.append(event)
            row = checkpoint_rows.insert_checkpoint(
                tx, task_id=task_id, sequence=sequence, trigger=chosen, commit_id=preserved.commit,
                head_commit=preserved.head, diff_identity=preserved.diff_identity, plan_revision=plan_revision,
                attempt=attempt, event_sequence=event.sequence, at_us=self._changes.clock())
            if self._fault is not None:
                self._fault()
            return row

        try:
            return self._changes.write(work)
        except BaseException:
            delete_checkpoint_ref(binding.repo_root, ref_name, commit=preserved.commit)
            raise

    def checkpoints(self, task_id: TaskId) -> list[CheckpointRow]:
        return self._changes.db.read(lambda view: checkpoint_rows.checkpoints_of_task(view, task_id))


def record_delivery_decision(
    tx: Transaction, events: list[JournalEvent], *, task_id: TaskId, diff_identity: str, accepted: bool,
    landed_commit: str | None, reason: str | None, decided_by: Actor, at_us: int,
) -> DeliveryRow | None:  # fmt: skip
    """Record stages 36/37 for the task's newest attempt when it finished waiting for this decision.

    Accept: 36 from :func:`~codeflux.pipeline.delivery.evaluate_human_acceptance` against the diff the
    checks saw (assembly's evidence), 37 satisfied with the landed commit. Reject: 36 failed with the
    reason, 37 blocked; a ``delivery-recorded`` event goes with it. None (nothing recorded) when the
    newest attempt did not stop at human-acceptance (no pipeline ran for it) or it is already decided.
    """
    attempt = ledger_rows.latest_run_attempt(tx, task_id)
    if attempt is None or attempt.is_open or attempt.stopped_at is not StageName.HUMAN_ACCEPTANCE:
        return None
    if checkpoint_rows.delivery_of_attempt(tx, task_id, attempt.attempt) is not None:
        return None
    checked = None
    for stage in ledger_rows.ledger_of_attempt(tx, task_id, attempt.attempt):
        if stage.verdict.stage is StageName.ASSEMBLY and isinstance(stage.evidence.get("diff_identity"), str):
            checked = str(stage.evidence["diff_identity"])
    record = AcceptanceRecord(diff_identity=diff_identity, accepted=accepted, landed=landed_commit is not None,
                              decided_by=decided_by)
    acceptance = evaluate_human_acceptance(record, diff_identity=checked)
    if acceptance is None:  # pragma: no cover (a record is always given)
        return None
    human = acceptance.verdict
    if accepted:
        deliver = evaluate_deliver(record).verdict
        if landed_commit is not None and deliver.gate_evaluation is not None:
            deliver = replace(deliver, gate_evaluation=f"{deliver.gate_evaluation} as commit {landed_commit[:12]}")
    else:
        human = StageVerdict(stage=StageName.HUMAN_ACCEPTANCE, outcome=StageOutcome.FAILED,
                             gate_evaluation=f"{human.gate_evaluation}: {reason}"[:8192])
        deliver = StageVerdict(stage=StageName.DELIVER, outcome=StageOutcome.BLOCKED,
                               reason="human-acceptance did not hold")
    row = checkpoint_rows.insert_delivery(
        tx, task_id=task_id, attempt=attempt.attempt, accepted=accepted, diff_identity=diff_identity,
        human_acceptance=human, deliver=deliver, landed_commit=landed_commit, reason=reason, decided_by=decided_by,
        at_us=at_us)
    session_id = records.require_task_record(tx, task_id).session_id
    events.append(append_event(tx, session_id=session_id, event=DeliveryRecorded(
        task_id=task_id, attempt=attempt.attempt, diff_identity=diff_identity, human_acceptance=human.outcome,
        deliver=deliver.outcome, landed_commit=landed_commit)))
    return row
