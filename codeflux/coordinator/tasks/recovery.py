"""Recovery of tasks interrupted by a stop of codeflux: found at startup, shown as known / ambiguous /
recommended, never resumed automatically.

:func:`recover_interrupted` is what a process that runs tasks calls first: it runs
:meth:`RecoveryService.recover_at_startup` holding :func:`exclusive_startup_lock` (every process that runs tasks
— or lands an accept — holds :func:`shared_running_lock`, so a startup never mistakes a live run for an
interrupted one; the kernel drops the lock of a killed process), and leaves recovery to the other process when
one runs tasks:

0. every accept landing without an end (:mod:`.landings`) is finished (the branch had moved: the task
   completes) or rolled back (the checkout as before; the task still awaits review), with an
   ``accept-resolved`` event; one that cannot be resolved now is left for the retry and said why; then every
   worktree cleanup without an end (:mod:`.worktree_lifecycle`) runs again until it ends;

1. tool executions left ``intended``/``running`` and model requests left ``planned``/``in-flight`` are
   reconciled by their owners' functions (``outcome-unknown``, or failed when nothing was sent) — never
   re-run;
2. every task found in a working state (:data:`~codeflux.domain.recovery.INTERRUPTIBLE_STATES`) moves to
   ``recovery-required`` in one transaction holding the transition row, its event, a
   ``recovery-assessed`` event and the immutable assessment (known facts, ambiguous effects, the
   recommendation of :func:`~codeflux.domain.recovery.classify_recovery`).

The person then records, per ambiguous effect, whether it happened (:meth:`RecoveryService.record_outcome`),
and only then picks an action: safe-resume or reconcile (→ ``paused``; the ordinary resume follows),
preserve-patch (stores the worktree's diff), abandon (→ ``cancelled``; the worktree is removed unless
that would lose work). Each is one transaction; each is refused while an effect is unresolved.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from codeflux.authority.service import AuthorityService
from codeflux.coordinator.spending.gateway import reconcile_interrupted_model_requests
from codeflux.coordinator.tasks import gates
from codeflux.coordinator.tasks.changes import Actor, TaskChange, TaskChanges, check_text
from codeflux.coordinator.tasks.checkpoints import CheckpointRow, CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.landings import PastResolution, past_resolutions, resolve_landing
from codeflux.coordinator.tasks.review import ReviewService, require_task_action
from codeflux.coordinator.tasks.running_lock import exclusive_startup_lock, shared_running_lock
from codeflux.coordinator.tasks.worktree_lifecycle import (
    WorktreeDisposal,
    dispose_task_worktree,
    finish_interrupted_cleanups,
    task_worktree_binding,
)
from codeflux.domain.errors import (
    CodefluxError,
    ConflictError,
    NotFoundError,
    OutcomeAlreadyRecordedError,
    OutcomeUnresolvedError,
    TaskActionUnavailableError,
    WorktreeNotUsableError,
)
from codeflux.domain.events import EffectOutcomeRecorded, PatchStored, RecoveryAssessed
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import (
    INTERRUPTIBLE_STATES,
    AmbiguousEffect,
    EffectOutcome,
    KnownState,
    RecoveryAction,
    RecoveryRecommendation,
    WorktreeCondition,
    classify_recovery,
)
from codeflux.domain.tasks import TERMINAL_TASK_STATES, PatchKind, TaskAction, TaskState, validate_task_transition
from codeflux.gitwork.diff import TaskDiff, diff_against_base
from codeflux.gitwork.landing import LandingResolution
from codeflux.store import accept_landings as landing_rows
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store import model_requests as model_rows
from codeflux.store import plans as plan_rows
from codeflux.store import recovery as recovery_rows
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store import task_records as records
from codeflux.store.database import Database, ReadView, Transaction, now_us
from codeflux.store.events import JournalEvent, append_event
from codeflux.store.location import DataLocation
from codeflux.store.wal_damage import store_damage_of_task

__all__ = [
    "RecoveryService",
    "RecoveryView",
    "StartupRecovery",
    "exclusive_startup_lock",
    "recover_interrupted",
    "shared_running_lock",
]

_OPEN_STATES = tuple(state for state in TaskState if state not in TERMINAL_TASK_STATES)
_MAX_NOTE = 2048


@dataclass(frozen=True, slots=True, kw_only=True)
class StartupRecovery:
    executions: tuple[str, ...]
    model_requests: tuple[str, ...]
    tasks: tuple[TaskId, ...]
    store_damaged: tuple[TaskId, ...] = ()
    """Open tasks (those in ``tasks`` too) whose recent past the database lost: ambiguous until acted on."""
    landings: tuple[str, ...] = ()
    """One line per interrupted accept landing found: finished, rolled back, or left and why."""
    cleanups: tuple[str, ...] = ()
    """One line per interrupted worktree cleanup run again: how it ended, or that it failed again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryView:
    """A task needing recovery, as three separate things: known, ambiguous, recommended."""

    task: records.TaskRecord
    known: KnownState
    ambiguous: tuple[AmbiguousEffect, ...]
    recommendation: RecoveryRecommendation
    assessed_diff_identity: str | None
    last_checkpoint: CheckpointRow | None = None
    """The last durable checkpoint (part of what is known), or None when none was taken."""
    store_damage: str | None = None
    """Set when the database lost committed data (a damaged write-ahead log) after which this task was not
    acted on by the person: "the database lost committed data from frame N of its write-ahead log on DATE
    …; what this task did after that is unknown" — an ambiguity no outcome record resolves (any action of
    the person does)."""


def _known_json(known: KnownState) -> dict[str, object]:
    return {"interrupted_in": known.interrupted_in.value, "plan_revision": known.plan_revision,
            "plan_approved": known.plan_approved, "attempt": known.attempt, "last_stage": known.last_stage,
            "worktree": known.worktree.value, "base": known.base, "head": known.head,
            "diff_identity": known.diff_identity, "patch_stored": known.patch_stored}


def _checkpoint_json(row: CheckpointRow | None) -> dict[str, object]:
    return {"last_checkpoint": None if row is None else {
        "sequence": row.sequence, "trigger": row.trigger.value, "commit": row.commit_id, "ref": row.ref_name,
        "diff_identity": row.diff_identity, "event_sequence": row.event_sequence}}


def _effects_json(effects: tuple[AmbiguousEffect, ...]) -> list[Mapping[str, object]]:
    return [{"item": e.item_id, "kind": e.kind.value, "summary": e.summary,
             "outcome": None if e.outcome is None else e.outcome.value} for e in effects]


class RecoveryService:
    """Startup recovery and the person's recovery actions against ``db`` (see the module docstring)."""

    def __init__(self, db: Database, *, clock: Callable[[], int] = now_us,
                 publish: Callable[[JournalEvent], None] | None = None) -> None:
        self._db = db
        self._publish = publish
        self._changes = TaskChanges(db, clock=clock, entropy=lambda: os.urandom(16), publish=publish, fault=None)

    # ─── observing ───────────────────────────────────────────────────────────────────────────────────

    def _observe_worktree(self, task: records.TaskRecord) -> tuple[WorktreeCondition, TaskDiff | None]:
        binding = task_worktree_binding(task)
        if binding is None:
            return WorktreeCondition.NOT_CREATED, None
        if not binding.path.exists():
            return WorktreeCondition.MISSING, None
        try:
            diff = diff_against_base(binding)
        except WorktreeNotUsableError:
            return WorktreeCondition.UNUSABLE, None
        return (WorktreeCondition.AT_BASE if diff.is_empty else WorktreeCondition.CHANGED), diff

    def _assess(self, task: records.TaskRecord, interrupted_in: TaskState) -> RecoveryView:
        condition, diff = self._observe_worktree(task)

        def read(view: ReadView) -> RecoveryView:
            plan = plan_rows.latest_plan_revision(view, task.task_id)
            decision = None if plan is None else plan_rows.plan_decision(view, task.task_id, plan.revision)
            attempt = ledger_rows.latest_run_attempt(view, task.task_id)
            ledger = [] if attempt is None else ledger_rows.ledger_of_attempt(view, task.task_id, attempt.attempt)
            identity = None if diff is None else diff.identity
            stored = identity is not None and any(
                p.diff_identity == identity for p in records.patches_of_task(view, task.task_id))
            known = KnownState(
                interrupted_in=interrupted_in, plan_revision=None if plan is None else plan.revision,
                plan_approved=decision is not None and decision.approved and plan is not None
                and decision.sha256 == plan.sha256,
                attempt=None if attempt is None else attempt.attempt,
                last_stage=ledger[-1].verdict.stage.value if ledger else None, worktree=condition,
                base=task.base_revision, head=None if diff is None else diff.head, diff_identity=identity,
                patch_stored=stored)
            effects = tuple(recovery_rows.ambiguous_effects_of_task(view, task.task_id))
            assessment = recovery_rows.latest_assessment(view, task.task_id)
            damage = store_damage_of_task(view, task)
            return RecoveryView(task=task, known=known, ambiguous=effects,
                                recommendation=classify_recovery(known, effects, store_damaged=damage is not None),
                                assessed_diff_identity=None if assessment is None else assessment.diff_identity,
                                last_checkpoint=checkpoint_rows.latest_checkpoint(view, task.task_id),
                                store_damage=damage)

        return self._db.read(read)

    def assess(self, task_id: TaskId) -> RecoveryView:
        """The task's recovery view, observed now (the worktree is read, nothing is written)."""
        task = self._db.read(lambda view: records.require_task_record(view, task_id))
        assessment = self._db.read(lambda view: recovery_rows.latest_assessment(view, task_id))
        interrupted_in = assessment.interrupted_in if assessment is not None else task.state
        return self._assess(task, interrupted_in)

    def needs_recovery(self, task_id: TaskId) -> bool:
        """``recovery-required``, or open and not acted on since the database lost committed data."""
        def read(view: ReadView) -> bool:
            task = records.require_task_record(view, task_id)
            return task.state is TaskState.RECOVERY_REQUIRED or store_damage_of_task(view, task) is not None
        return self._db.read(read)

    def tasks_needing_recovery(self) -> list[RecoveryView]:
        """Every ``recovery-required`` task, then every other open task whose recent past the database lost."""
        def read(view: ReadView) -> list[records.TaskRecord]:
            waiting = records.tasks_in_states(view, [TaskState.RECOVERY_REQUIRED])
            damaged = [task for task in records.tasks_in_states(view, _OPEN_STATES)
                       if task.state is not TaskState.RECOVERY_REQUIRED and store_damage_of_task(view, task)]
            return waiting + damaged
        return [self.assess(task.task_id) for task in self._db.read(read)]

    def landing_resolutions(self, *, task_id: TaskId | None, limit: int) -> tuple[list[PastResolution], int]:
        """The interrupted accept landings a retry or startup recovery finished or rolled back, most recent
        first (at most ``limit``; only ``task_id``'s when given), and how many are recorded in all — from the
        durable record, so any later command can say what an earlier one's recovery did."""
        return past_resolutions(self._db, task_id=task_id, limit=limit)

    # ─── startup ─────────────────────────────────────────────────────────────────────────────────────

    def recover_at_startup(self) -> StartupRecovery:
        """Reconcile interrupted effects and mark every interrupted task (call under the exclusive lock)."""
        landings = self._resolve_interrupted_landings()
        cleanups = tuple(finish_interrupted_cleanups(self._db, publish=self._publish))
        executions = tuple(AuthorityService(self._db).reconcile_interrupted_executions())
        drafting = {row.plan.task_id for row in self._db.read(model_rows.unfinished_model_requests)}
        requests = tuple(reconcile_interrupted_model_requests(self._db))
        marked = []
        for task in self._db.read(lambda view: records.tasks_in_states(view, INTERRUPTIBLE_STATES)):
            if task.state is TaskState.FORECASTING and task.task_id not in drafting:
                # Waiting for its next plan draft (after a send-back, say) with no model call under way: nothing
                # was interrupted, and `task plan` (or the browser) drafts it.
                continue
            view = self._assess(task, task.state)
            self._record_assessment(view, to_state=TaskState.RECOVERY_REQUIRED, key=f"startup:{task.revision}",
                                    reason=f"codeflux stopped while the task was {task.state.value}")
            marked.append(task.task_id)
        damaged = tuple(view.task.task_id for view in self.tasks_needing_recovery() if view.store_damage)
        return StartupRecovery(executions=executions, model_requests=requests, tasks=tuple(marked),
                               store_damaged=damaged, landings=landings, cleanups=cleanups)

    def _resolve_interrupted_landings(self) -> tuple[str, ...]:
        """Finish or roll back every accept landing a stop interrupted (:mod:`.landings`), completing the task of
        one that had landed; a landing that cannot be resolved now stays for the retry, said why."""
        lines = []
        for row in self._db.read(landing_rows.unfinished_landings):
            branch = row.branch_ref.removeprefix("refs/heads/")
            try:
                resolution = resolve_landing(self._changes, row, by=landing_rows.LandingEndedBy.RECOVERY,
                                             reason="codeflux stopped during the accept")
                if resolution is LandingResolution.FINISHED:
                    ReviewService(self._db, publish=self._publish).complete_landed(
                        row, by=landing_rows.LandingEndedBy.RECOVERY,
                        reason="codeflux stopped after the branch moved: the accept was complete")
                    lines.append(f"the interrupted accept of task {row.task_id} had landed on {branch} "
                                 f"({row.landed_head[:12]}): finished; the task is completed")
                else:
                    lines.append(f"the interrupted accept of task {row.task_id} on {branch} was rolled back: the "
                                 "checkout is as before and the task still awaits review (accept it again)")
            except CodefluxError as error:
                lines.append(f"the interrupted accept of task {row.task_id} on {branch} was left as it is: {error}")
        return tuple(lines)

    def _record_assessment(self, view: RecoveryView, *, to_state: TaskState, key: str, reason: str) -> TaskChange:
        task = view.task

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            current = records.require_task_record(tx, task.task_id)
            if current.revision != task.revision:
                raise ConflictError(f"task {task.task_id} changed while it was assessed; assess it again")
            row = recovery_rows.insert_assessment(
                tx, task_id=task.task_id, interrupted_in=view.known.interrupted_in,
                known=_known_json(view.known) | _checkpoint_json(view.last_checkpoint),
                ambiguous=_effects_json(view.ambiguous),
                recommended=view.recommendation.recommended, diff_identity=view.known.diff_identity, reason=reason,
                at_us=self._changes.clock())
            events.append(append_event(tx, session_id=task.session_id, event=RecoveryAssessed(
                task_id=task.task_id, assessment_id=row.assessment_id, recommended=row.recommended.value,
                ambiguous=tuple(e.item_id for e in view.ambiguous))))
            record = self._move(tx, events, current, to_state, reason=reason)
            return {"task_id": task.task_id.value, "state": record.state.value, "revision": record.revision}

        return self._changes.mutate(scope=f"task:{task.task_id.value}", key=key, work=work,
                                    request={"operation": "recovery-assessment", "to": to_state.value})

    def _move(self, tx: Transaction, events: list[JournalEvent], task: records.TaskRecord, to_state: TaskState, *,
              reason: str) -> records.TaskRecord:
        validate_task_transition(task.state, to_state)
        gates.require_entry_allowed(tx, task, to_state, dedicated_ok=False)
        actor = Actor.SYSTEM if to_state is TaskState.RECOVERY_REQUIRED else Actor.USER
        return self._changes.transition(tx, events, task, to_state, reason=reason, actor=actor)

    # ─── the person's actions ────────────────────────────────────────────────────────────────────────

    def record_outcome(self, task_id: TaskId, *, item_id: str, outcome: EffectOutcome,
                       note: str | None = None) -> RecoveryView:
        """Record whether ambiguous effect ``item_id`` happened (once; the effect itself never runs again)."""
        chosen = EffectOutcome(outcome)
        if note is not None:
            check_text(note, kind="outcome note", limit=_MAX_NOTE)

        def work(tx: Transaction, events: list[JournalEvent]) -> None:
            task = records.require_task_record(tx, task_id)
            found = [e for e in recovery_rows.ambiguous_effects_of_task(tx, task_id) if e.item_id == item_id]
            if not found:
                raise NotFoundError(kind=f"effect with an unknown outcome in task {task_id}", entity_id=item_id)
            effect = found[0]
            if effect.outcome is not None and effect.outcome is not chosen:
                raise OutcomeAlreadyRecordedError(task_id=task_id.value, item=item_id, outcome=effect.outcome.value)
            if recovery_rows.insert_resolution(tx, task_id=task_id, effect=effect, outcome=chosen, note=note,
                                               at_us=self._changes.clock()):
                events.append(append_event(tx, session_id=task.session_id, event=EffectOutcomeRecorded(
                    task_id=task_id, item=item_id, kind=effect.kind.value, outcome=chosen.value, by=Actor.USER.value)))

        self._changes.write(work)
        return self.assess(task_id)

    def _require_allowed(self, task_id: TaskId, action: RecoveryAction) -> RecoveryView:
        view = self.assess(task_id)
        require_task_action(view.task, TaskAction(action.value))
        if view.recommendation.unresolved:
            raise OutcomeUnresolvedError(task_id=task_id.value, action=action.value,
                                         items=view.recommendation.unresolved)
        refused = dict(view.recommendation.refused)
        if action in refused:
            raise TaskActionUnavailableError(task_id=task_id.value, action=action.value,
                                             state=view.task.state.value, reason=f"{action.value}: {refused[action]}")
        return view

    def safe_resume(self, task_id: TaskId) -> TaskChange:
        """Back to ``paused`` (then the ordinary resume) when nothing is unresolved and the worktree holds
        exactly what was assessed; a worktree that changed since needs reconcile."""
        view = self._require_allowed(task_id, RecoveryAction.SAFE_RESUME)
        if view.known.diff_identity != view.assessed_diff_identity:
            raise TaskActionUnavailableError(
                task_id=task_id.value, action="safe-resume", state=view.task.state.value,
                reason="safe-resume: the worktree changed since the assessment; reconcile to take it as it is")
        left = self._leave(view, "safe-resume", reason="safe resume: nothing unaccounted for")
        return self._paused_checkpoint(left)

    def reconcile(self, task_id: TaskId) -> TaskChange:
        """Take the worktree as it is now as the known state (a new assessment) and move to ``paused``."""
        view = self._require_allowed(task_id, RecoveryAction.RECONCILE)
        return self._paused_checkpoint(self._record_assessment(
            view, to_state=TaskState.PAUSED, key=f"reconcile:{view.task.revision}",
            reason="reconciled: the worktree as it is now is the known state"))

    def _paused_checkpoint(self, change: TaskChange) -> TaskChange:
        if not change.replayed:
            CheckpointService(self._changes).capture_checkpoint(change.task_id, CheckpointTrigger.PAUSED)
        return change

    def _leave(self, view: RecoveryView, action: str, *, reason: str) -> TaskChange:
        target = TaskState.CANCELLED if action == "abandon" else TaskState.PAUSED

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            current = records.require_task_record(tx, view.task.task_id)
            record = self._move(tx, events, current, target, reason=reason)
            return {"task_id": current.task_id.value, "state": record.state.value, "revision": record.revision}

        return self._changes.mutate(scope=f"task:{view.task.task_id.value}", key=f"{action}:{view.task.revision}",
                                    work=work, request={"operation": action})

    def preserve_patch(self, task_id: TaskId) -> records.TaskPatchRow:
        """Store the worktree's current diff as a ``preserved`` patch (no state change)."""
        view = self._require_allowed(task_id, RecoveryAction.PRESERVE_PATCH)
        binding = task_worktree_binding(view.task)
        if binding is None:
            raise TaskActionUnavailableError(task_id=task_id.value, action="preserve-patch",
                                             state=view.task.state.value, reason="the task has no worktree")
        diff = diff_against_base(binding)

        def work(tx: Transaction, events: list[JournalEvent]) -> records.TaskPatchRow:
            row, created = records.insert_task_patch(
                tx, task_id=task_id, kind=PatchKind.PRESERVED, diff_identity=diff.identity, base_commit=diff.base,
                head_commit=diff.head, patch=diff.unified_diff, reason="preserved during recovery",
                at_us=self._changes.clock())
            if created:
                events.append(append_event(tx, session_id=view.task.session_id, event=PatchStored(
                    task_id=task_id, kind=row.kind.value, diff_identity=diff.identity, patch_sha256=row.patch_sha256,
                    bytes=len(diff.unified_diff))))
            return row

        return self._changes.write(work)

    def abandon(self, task_id: TaskId) -> tuple[TaskChange, WorktreeDisposal | None]:
        """End the task (``cancelled``); its worktree goes unless that would lose work not stored elsewhere."""
        view = self._require_allowed(task_id, RecoveryAction.ABANDON)
        change = self._leave(view, "abandon", reason="abandoned during recovery")
        stored = self._db.read(lambda v: records.patches_of_task(v, task_id))
        saved = view.known.diff_identity if any(p.diff_identity == view.known.diff_identity for p in stored) else None
        return change, dispose_task_worktree(self._db, task_id, saved_patch_identity=saved, delete_branch=False,
                                             publish=self._publish)


def recover_interrupted(db: Database, location: DataLocation) -> StartupRecovery | None:
    """Startup recovery, the one way every command that runs tasks does it: when no other process runs tasks
    in ``location`` (:func:`exclusive_startup_lock`), reconcile interrupted effects and mark every interrupted
    task ``recovery-required`` (:meth:`RecoveryService.recover_at_startup`) and return what was found; None
    when another process runs tasks (its live runs are not interrupted; recovery is left to it)."""
    with exclusive_startup_lock(location) as alone:
        return RecoveryService(db).recover_at_startup() if alone else None
