"""The task service: repositories, tasks, plan revisions and their decisions, transitions, run attempts,
the stage ledger and stored patches.

Every mutation is one transaction (``BEGIN IMMEDIATE``) holding the aggregate change, its journal
event(s), the transition row when the state changes, and the idempotency record: an identical retry
returns the original result, the same key with another request is refused. State changes are validated
by the domain table (:func:`~codeflux.domain.tasks.validate_task_transition`), compare-and-set on the
task's revision, and gated by :mod:`codeflux.coordinator.tasks.gates` (approved plan, run slots, the
user's checkout) inside that same transaction. Events are published only after the commit, and each state
change then reaches the service's observers (:mod:`codeflux.coordinator.hooks`).

The service takes the caller's observation of the user's checkout (a :class:`RepositorySnapshot` from
:func:`codeflux.gitwork.repository.open_repository`, taken just before the call); it never opens a
repository itself and never creates a worktree (the run's worktree is made after the start commits).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.coordinator.hooks import Observers
from codeflux.coordinator.tasks import gates
from codeflux.coordinator.tasks import plans as task_plans
from codeflux.coordinator.tasks.changes import (
    Actor,
    TaskChange,
    TaskChanges,
    TaskFault,
    check_text,
    deciding_actor,
    require_revision,
)
from codeflux.coordinator.tasks.ledger import (
    Evidence,
    finish_attempt_ledger,
    ledger_with_decision,
    record_verdicts_in_ledger,
)
from codeflux.coordinator.tasks.plans import PlanAuthor
from codeflux.coordinator.tasks.rejection import DiffRejection, record_rejection
from codeflux.coordinator.tasks.review import require_task_action
from codeflux.domain.errors import ConflictError, InvalidValueError, UsageError
from codeflux.domain.events import (
    AttemptSentBack,
    BrowserDecisionRefused,
    DirtyTreeAcknowledged,
    PatchStored,
    RepositoryRegistered,
    RunAttemptOpened,
)
from codeflux.domain.ids import RepositoryId, RunId, TaskId
from codeflux.domain.pipeline import StageName, StageVerdict
from codeflux.domain.pipeline.obligations import NewObligation, ObligationChange, ObligationKind, ObligationRecord
from codeflux.domain.plan_examples import ExampleEdit
from codeflux.domain.plans import Plan
from codeflux.domain.tasks import (
    PatchKind,
    TaskAction,
    TaskActionAvailability,
    TaskState,
    describe_task_actions,
    validate_task_transition,
)
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store import obligations as obligation_rows
from codeflux.store import plans as plan_rows
from codeflux.store import repositories as repository_rows
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store import task_records as records
from codeflux.store.database import Database, ReadView, Transaction, now_us
from codeflux.store.events import SYSTEM_SESSION_ID, JournalEvent, append_event, events_of_kind

__all__ = [
    "Actor",
    "PatchKind",
    "PlanAuthor",
    "TaskChange",
    "TaskFault",
    "TaskService",
    "TaskView",
]

_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_COMMIT: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MAX_REQUIREMENT: Final = 65536
_MAX_TITLE: Final = 80
_MAX_REASON: Final = 2048
MAX_RETRY_FEEDBACK_CHARS: Final = 4000
# Where a person may ask for another attempt on the same plan: a diff under review, or a failed run.
_RETRYABLE: Final = frozenset({TaskState.AWAITING_REVIEW, TaskState.FAILED})


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskView:
    """A task with its newest plan revision, the decision on it, its newest run attempt and its actions."""

    task: records.TaskRecord
    plan: plan_rows.PlanRevisionRow | None
    plan_decision: plan_rows.PlanDecisionRow | None
    attempt: ledger_rows.RunAttemptRow | None
    actions: tuple[TaskActionAvailability, ...]

    @property
    def plan_approved(self) -> bool:
        return self.plan is not None and self.plan_decision is not None and self.plan_decision.approved


def _default_title(requirement: str) -> str:
    line = next(line.strip() for line in requirement.splitlines() if line.strip())
    return line if len(line) <= _MAX_TITLE else line[: _MAX_TITLE - 1] + "…"


class TaskService:
    """Creates and changes tasks; see the module docstring for the transaction rules."""

    def __init__(
        self, db: Database, *, worktrees_root: Path, clock: Callable[[], int] = now_us,
        entropy: Callable[[], bytes] = lambda: os.urandom(16),
        publish: Callable[[JournalEvent], None] | None = None, fault: Callable[[TaskFault], None] | None = None,
        observers: Observers | None = None,
    ) -> None:  # fmt: skip
        """``observers`` hear of every state change this service makes, after its commit
        (:class:`~codeflux.coordinator.hooks.TaskStateChanged`)."""
        if not worktrees_root.is_absolute():
            raise InvalidValueError(kind="worktrees root", reason="must be an absolute path")
        self._worktrees_root = worktrees_root
        self._changes = TaskChanges(db, clock=clock, entropy=entropy, publish=publish, fault=fault,
                                    observers=observers)
        self._db = db

    @property
    def changes(self) -> TaskChanges:
        """How this service writes (database, clock, publisher); checkpoints are written through it too."""
        return self._changes

    # ─── repositories and tasks ──────────────────────────────────────────────────────────────────────

    def _ensure_repository(self, tx: Transaction, events: list[JournalEvent],
                           snapshot: RepositorySnapshot) -> repository_rows.RepositoryRow:
        existing = repository_rows.repository_by_identity(tx, snapshot.identity)
        if existing is not None:
            return existing
        row = repository_rows.insert_repository(
            tx, repository_id=RepositoryId.from_entropy(self._changes.entropy()), root=snapshot.root,
            identity=snapshot.identity, root_commits=snapshot.root_commits, at_us=self._changes.clock())
        events.append(append_event(tx, session_id=SYSTEM_SESSION_ID, event=RepositoryRegistered(
            repository_id=row.repository_id, root=str(row.root), identity=row.identity)))
        return row

    def register_repository(self, snapshot: RepositorySnapshot) -> repository_rows.RepositoryRow:
        """The repository row for ``snapshot``'s identity, recorded the first time it is seen."""
        return self._changes.write(lambda tx, events: self._ensure_repository(tx, events, snapshot))

    def create_task(
        self, snapshot: RepositorySnapshot, requirement: str, *, title: str | None = None,
        acknowledged_dirty_hash: str | None = None, acknowledged_by: Actor = Actor.USER, idempotency_key: str,
        also: Callable[[Transaction, TaskId], Sequence[JournalEvent]] | None = None,
    ) -> TaskChange:  # fmt: skip
        """A new ``draft`` task for the repository ``snapshot`` shows (recorded if new).

        ``also`` runs in the same transaction once the task row exists and returns its events (the incident a
        task is proposed from records ``task-proposed`` with it: one outcome, one transaction).

        The checkout must be on a branch with no git operation in progress; uncommitted changes need
        ``acknowledged_dirty_hash`` equal to ``snapshot.dirty_hash`` (the list the person saw), which is
        recorded with the list. Refusals: :class:`DetachedHeadError`, :class:`CheckoutNotCleanError`,
        :class:`DirtyTreeNotAcknowledgedError` (none or a stale acknowledgement).
        """
        check_text(requirement, kind="requirement", limit=_MAX_REQUIREMENT)
        chosen_title = check_text(title, kind="title", limit=_MAX_TITLE) if title else _default_title(requirement)
        acknowledger = deciding_actor(acknowledged_by)

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            gates.require_landable_checkout(snapshot)
            gates.require_acknowledged_tree(snapshot, acknowledged_dirty_hash)
            repository = self._ensure_repository(tx, events, snapshot)
            task_id = TaskId.from_entropy(self._changes.entropy())
            record, event = records.insert_task_record(
                tx, task_id=task_id, repository_id=repository.repository_id, repository_root=repository.root,
                worktree=self._worktrees_root / repository.repository_id.value / task_id.value,
                title=chosen_title, requirement=requirement, at_us=self._changes.clock())
            events.append(event)
            if snapshot.is_dirty:
                events.append(self._record_acknowledgement(tx, record, snapshot, acknowledger))
            if also is not None:
                events.extend(also(tx, task_id))
            return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision}

        return self._changes.mutate(scope="task-create", key=idempotency_key, work=work, request={
            "identity": snapshot.identity, "requirement": requirement, "title": chosen_title,
            "acknowledged_dirty_hash": acknowledged_dirty_hash, "acknowledged_by": acknowledger.value})

    def _record_acknowledgement(self, tx: Transaction, task: records.TaskRecord, snapshot: RepositorySnapshot,
                                actor: Actor) -> JournalEvent:
        if task.repository_id is None:
            raise UsageError(f"task {task.task_id} has no repository to acknowledge changes in")
        changes = [repository_rows.AcknowledgedChange(path=c.path, status=c.status,
                                                      content_sha256=c.content_sha256) for c in snapshot.changes]
        repository_rows.insert_dirty_acknowledgement(
            tx, task_id=task.task_id, repository_id=task.repository_id, dirty_hash=snapshot.dirty_hash,
            changes=changes, acknowledged_by=actor.value, at_us=self._changes.clock())
        return append_event(tx, session_id=task.session_id, event=DirtyTreeAcknowledged(
            task_id=task.task_id, dirty_hash=snapshot.dirty_hash, changes=len(changes), by=actor.value))

    def acknowledge_dirty_tree(
        self, task_id: TaskId, snapshot: RepositorySnapshot, *, acknowledged_hash: str,
        acknowledged_by: Actor = Actor.USER, idempotency_key: str,
    ) -> TaskChange:  # fmt: skip
        """Record that the person acknowledged the current uncommitted changes again (before a first start)."""
        actor = deciding_actor(acknowledged_by)

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            task = records.require_task_record(tx, task_id)
            repository = _repository_of(tx, task)
            gates.require_same_repository(task, repository, snapshot)
            if not snapshot.is_dirty:
                raise UsageError(f"{snapshot.root} has no uncommitted changes to acknowledge")
            if task.base_revision is not None:
                raise ConflictError(f"task {task_id} already started from commit {task.base_revision[:12]}")
            gates.require_acknowledged_tree(snapshot, acknowledged_hash)
            events.append(self._record_acknowledgement(tx, task, snapshot, actor))
            return {"task_id": task_id.value, "state": task.state.value, "revision": task.revision}

        return self._changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
            "operation": "acknowledge-dirty-tree", "identity": snapshot.identity,
            "acknowledged_hash": acknowledged_hash, "by": actor.value})

    # ─── plans ───────────────────────────────────────────────────────────────────────────────────────

    def record_plan_revision(
        self, task_id: TaskId, plan: Plan, *, created_by: PlanAuthor, feedback: str | None = None,
        expected_revision: int, idempotency_key: str,
    ) -> TaskChange:  # fmt: skip
        """Record ``plan`` as the task's next revision and move it from forecasting to awaiting approval;
        ``feedback`` is what led to this revision (the person's send-back text), if anything."""
        return task_plans.record_plan_revision(self._changes, task_id, plan, created_by=created_by, feedback=feedback,
                                               expected_revision=expected_revision, idempotency_key=idempotency_key)

    def approve_plan(
        self, task_id: TaskId, *, revision: int, sha256: str, decided_by: Actor = Actor.USER, idempotency_key: str
    ) -> TaskChange:
        """Approve plan revision ``revision`` with hash ``sha256``; the task becomes ``ready``. Refuses with
        :class:`PlanChangedError` unless that is exactly the task's newest, undecided revision."""
        return task_plans.decide_plan(self._changes, task_id, revision=revision, sha256=sha256, feedback=None,
                                      decided_by=decided_by, idempotency_key=idempotency_key)

    def send_back(
        self, task_id: TaskId, *, revision: int, sha256: str, feedback: str, decided_by: Actor = Actor.USER,
        idempotency_key: str,
    ) -> TaskChange:  # fmt: skip
        """Send plan revision ``revision`` (hash ``sha256``) back with ``feedback``: the task returns to
        ``forecasting``; the planner's next revision carries the feedback and needs its own approval."""
        return task_plans.decide_plan(self._changes, task_id, revision=revision, sha256=sha256, feedback=feedback,
                                      decided_by=decided_by, idempotency_key=idempotency_key)

    def answer_question(
        self, task_id: TaskId, *, revision: int, sha256: str, question: int, answer: str, idempotency_key: str
    ) -> TaskChange:
        """Answer question ``question`` (from 1) of the newest plan revision ``revision`` (hash ``sha256``): the
        next revision is that plan with the answer, recorded by the person; it needs its own approval."""
        return task_plans.answer_question(self._changes, task_id, revision=revision, sha256=sha256,
                                          question=question, answer=answer, idempotency_key=idempotency_key)

    def edit_examples(
        self, task_id: TaskId, *, revision: int, sha256: str, edits: tuple[ExampleEdit, ...], idempotency_key: str
    ) -> TaskChange:
        """Replace the acceptance examples of the newest plan revision ``revision`` (hash ``sha256``) with the
        person's list ``edits`` (:mod:`codeflux.domain.plan_examples`): the next revision is that plan with the
        edited examples, recorded by the person; it needs its own approval."""
        return task_plans.edit_examples(self._changes, task_id, revision=revision, sha256=sha256, edits=edits,
                                        idempotency_key=idempotency_key)

    def pending_feedback(self, task_id: TaskId) -> str | None:
        """The feedback the newest plan revision was sent back with (for the planner's next revision)."""
        return self._db.read(lambda view: task_plans.read_pending_feedback(view, task_id))

    # ─── state changes and runs ──────────────────────────────────────────────────────────────────────

    def transition(
        self, task_id: TaskId, to_state: TaskState, *, expected_revision: int, reason: str, actor: Actor,
        idempotency_key: str,
    ) -> TaskChange:  # fmt: skip
        """Move the task to ``to_state`` from ``expected_revision``: domain-validated, gated, recorded.

        Transitions that carry more than a state change (plan, decision, run start) are refused here
        with the method to use instead.
        """
        check_text(reason, kind="transition reason", limit=_MAX_REASON)
        who = Actor(actor)

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            task = records.require_task_record(tx, task_id)
            require_revision(task, expected_revision)
            validate_task_transition(task.state, to_state)
            gates.require_entry_allowed(tx, task, to_state, dedicated_ok=False)
            record = self._changes.transition(tx, events, task, to_state, reason=reason, actor=who)
            return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision}

        return self._changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
            "operation": "transition", "to": to_state.value, "expected_revision": expected_revision,
            "reason": reason, "actor": who.value})

    def start_run(
        self, task_id: TaskId, snapshot: RepositorySnapshot, *, expected_revision: int, actor: Actor = Actor.USER,
        idempotency_key: str, retry_feedback: str | None = None, rejection: DiffRejection | None = None,
    ) -> TaskChange:  # fmt: skip
        """Start a ``ready`` task: it becomes ``running`` and its next run attempt opens.

        With ``retry_feedback`` (a person's words), a task awaiting review or failed starts another attempt on
        the same approved plan instead (``codeflux task retry``); the words are recorded with the state change.
        With ``rejection`` (``codeflux task reject --retry``; its reason is the feedback), the task must be awaiting
        review: the rejected diff's patch and the attempt's delivery decision are recorded in the same
        transaction as ``awaiting-review → running`` (:mod:`.rejection`), so the rejection and the new attempt
        happen together or not at all.

        In the same transaction: the repository must be the task's, on a branch, with no operation in
        progress; a first start from a dirty tree needs the current list acknowledged; the newest plan
        revision must be approved; and a run slot must be free — at most 4 active tasks and at most 1
        per repository (:class:`TaskLimitReachedError` names the holders). The first start records the
        commit the task's worktree is based on (``snapshot.head``).
        """
        who = Actor(actor)
        if rejection is not None:  # the rejection's reason is the retry's feedback
            retry_feedback = rejection.reason
        retrying = retry_feedback is not None
        if retrying:
            check_text(retry_feedback or "", kind="retry feedback", limit=MAX_RETRY_FEEDBACK_CHARS)

        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            task = records.require_task_record(tx, task_id)
            require_revision(task, expected_revision)
            if rejection is not None:
                require_task_action(task, TaskAction.REJECT)  # only a diff awaiting review is rejected
            if retrying and task.state in _RETRYABLE:
                if task.state is TaskState.FAILED:  # failed → ready (retry), then it starts like any ready task
                    task = self._changes.transition(tx, events, task, TaskState.READY, actor=who,
                                                    reason=f"retry requested: {(retry_feedback or '')[:1900]}")
            elif retrying and task.state is not TaskState.READY:
                raise UsageError(f"task {task_id} is {task.state}; only a ready task starts (resume a paused one, "
                                 "retry one awaiting review or failed)")
            validate_task_transition(task.state, TaskState.RUNNING)
            if task.state is not TaskState.READY and not retrying:
                raise UsageError(f"task {task_id} is {task.state}; only a ready task starts (resume a paused one)")
            plan = _require_startable(tx, task, snapshot)
            if (previous := ledger_rows.latest_run_attempt(tx, task_id)) is not None and previous.is_open:
                raise ConflictError(f"task {task_id} run attempt {previous.attempt} is still open; end it first")
            reason = (f"retry under plan revision {plan.revision}: {(retry_feedback or '')[:1900]}" if retrying
                      else f"run started under plan revision {plan.revision}")
            if rejection is not None:
                record_rejection(tx, events, task, rejection, at_us=self._changes.clock)
                reason = f"diff {rejection.reviewed_identity[:12]} rejected; {reason}"
            record = self._changes.transition(tx, events, task, TaskState.RUNNING, actor=who,
                                              base_revision=snapshot.head, reason=reason)
            opened = self._open_attempt(tx, events, record, plan)
            return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision,
                    "attempt": opened.attempt, "plan_revision": plan.revision}

        return self._changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
            "operation": "start-run", "identity": snapshot.identity, "head": snapshot.head,
            "expected_revision": expected_revision, "actor": who.value, "retry_feedback": retry_feedback,
            "rejected_identity": None if rejection is None else rejection.reviewed_identity})

    def _open_attempt(self, tx: Transaction, events: list[JournalEvent], task: records.TaskRecord,
                      plan: plan_rows.PlanRevisionRow) -> ledger_rows.RunAttemptRow:
        opened = ledger_rows.open_run_attempt(tx, run_id=RunId.from_entropy(self._changes.entropy()),
                                              task_id=task.task_id, plan_revision=plan.revision,
                                              plan_sha256=plan.sha256, at_us=self._changes.clock())
        events.append(append_event(tx, session_id=task.session_id, event=RunAttemptOpened(
            task_id=task.task_id, attempt=opened.attempt, run_id=opened.run_id, plan_revision=plan.revision,
            plan_sha256=plan.sha256)))
        return opened

    def begin_next_attempt(self, task_id: TaskId, *, idempotency_key: str) -> TaskChange:
        """Open the next run attempt of an active task whose previous attempt ended (a gate sent work back)."""
        def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
            task = records.require_task_record(tx, task_id)
            if not gates.is_active(task.state):
                raise UsageError(f"task {task_id} is {task.state}; a new attempt opens only while it is active")
            previous = ledger_rows.latest_run_attempt(tx, task_id)
            if previous is None or previous.is_open:
                raise ConflictError(f"task {task_id} has no ended attempt to follow; end the open one first")
            opened = self._open_attempt(tx, events, task, gates.require_approved_plan(tx, task))
            return {"task_id": task_id.value, "state": task.state.value, "revision": task.revision,
                    "attempt": opened.attempt, "plan_revision": opened.plan_revision}

        return self._changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work,
                            request={"operation": "begin-next-attempt"})

    def record_browser_decision_refused(self, task_id: TaskId, *, decision: str, subject: str, reason: str) -> None:
        """Journal that a decision reached the browser connection without the current card's confirmation
        value (the decision itself was not made); the task is not changed."""
        def work(tx: Transaction, events: list[JournalEvent]) -> None:
            task = records.require_task_record(tx, task_id)
            events.append(append_event(tx, session_id=task.session_id, event=BrowserDecisionRefused(
                task_id=task_id, decision=decision, subject=subject[:128], reason=reason)))

        self._changes.write(work)

    # ─── stage ledger and patches ────────────────────────────────────────────────────────────────────

    def record_stage_verdicts(
        self, task_id: TaskId, attempt: int, verdicts: Sequence[StageVerdict], *,
        evidence: Mapping[StageName, Evidence] | None = None,
    ) -> tuple[ledger_rows.LedgerRow, ...]:  # fmt: skip
        """Store the verdicts in the attempt's ledger by the domain rules (see :mod:`.task_ledger`);
        returns the rows stored, which include stages skipped over and verdicts turned ``blocked``."""
        def work(tx: Transaction, events: list[JournalEvent]) -> list[ledger_rows.LedgerRow]:
            task = records.require_task_record(tx, task_id)
            rows, event = record_verdicts_in_ledger(tx, task_id=task_id, attempt=attempt, verdicts=verdicts,
                                                    evidence=evidence or {}, session_id=task.session_id,
                                                    at_us=self._changes.clock())
            events.append(event)
            return rows

        return tuple(self._changes.write(work))

    def record_send_back(self, sent_back: AttemptSentBack) -> None:
        """Journal that a gate sent an attempt's work back, with the rung, fingerprint and ladder decision."""
        def work(tx: Transaction, events: list[JournalEvent]) -> None:
            task = records.require_task_record(tx, sent_back.task_id)
            events.append(append_event(tx, session_id=task.session_id, event=sent_back))

        self._changes.write(work)

    def send_backs(self, task_id: TaskId, *, limit: int = 200) -> list[AttemptSentBack]:
        """The task's journaled send-backs (the newest ``limit``), oldest first."""
        def work(view: ReadView) -> list[AttemptSentBack]:
            session = records.require_task_record(view, task_id).session_id
            found = events_of_kind(view, session_id=session, kind=AttemptSentBack.KIND.value, limit=limit)
            return [event.event for event in found if isinstance(event.event, AttemptSentBack)]

        return self._db.read(work)

    def finish_attempt(
        self, task_id: TaskId, attempt: int, *, stopped_at: StageName | None
    ) -> tuple[ledger_rows.LedgerRow, ...]:
        """End the attempt: every stage without a verdict is filled (``blocked`` after ``stopped_at``, the
        stage during which the run stopped early, or None when it went through); returns all 37 rows."""
        def work(tx: Transaction, events: list[JournalEvent]) -> list[ledger_rows.LedgerRow]:
            task = records.require_task_record(tx, task_id)
            ledger, _, event = finish_attempt_ledger(tx, task_id=task_id, attempt=attempt, stopped_at=stopped_at,
                                                     session_id=task.session_id, at_us=self._changes.clock())
            events.append(event)
            return ledger

        return tuple(self._changes.write(work))

    def store_patch(
        self, task_id: TaskId, *, kind: PatchKind, diff_identity: str, patch: bytes, base_commit: str,
        head_commit: str, reason: str,
    ) -> records.TaskPatchRow:  # fmt: skip
        """Keep ``patch`` (exact diff bytes) for the task; storing the same patch again returns the stored row."""
        if _HEX64.fullmatch(diff_identity) is None:
            raise InvalidValueError(kind="diff identity", reason="expected 64 lowercase hex digits")
        for commit in (base_commit, head_commit):
            if _COMMIT.fullmatch(commit) is None:
                raise InvalidValueError(kind="commit id", reason="expected a full 40- or 64-digit lowercase hex id")
        check_text(reason, kind="patch reason", limit=_MAX_REASON)
        chosen = PatchKind(kind)

        def work(tx: Transaction, events: list[JournalEvent]) -> records.TaskPatchRow:
            task = records.require_task_record(tx, task_id)
            row, created = records.insert_task_patch(tx, task_id=task_id, kind=chosen,
                                                     diff_identity=diff_identity, base_commit=base_commit,
                                                     head_commit=head_commit, patch=patch, reason=reason,
                                                     at_us=self._changes.clock())
            if created:
                events.append(append_event(tx, session_id=task.session_id, event=PatchStored(
                    task_id=task_id, kind=chosen.value, diff_identity=diff_identity, patch_sha256=row.patch_sha256,
                    bytes=len(patch))))
            return row

        return self._changes.write(work)

    # ─── reading ─────────────────────────────────────────────────────────────────────────────────────

    def show(self, task_id: TaskId) -> TaskView:
        def read(view: ReadView) -> TaskView:
            task = records.require_task_record(view, task_id)
            plan = plan_rows.latest_plan_revision(view, task_id)
            decision = None if plan is None else plan_rows.plan_decision(view, task_id, plan.revision)
            return TaskView(task=task, plan=plan, plan_decision=decision,
                            attempt=ledger_rows.latest_run_attempt(view, task_id),
                            actions=describe_task_actions(task.state))

        return self._db.read(read)

    def available_actions(self, task_id: TaskId) -> tuple[TaskActionAvailability, ...]:
        """Every action with its availability in the task's state (the domain matrix), disabled ones with why."""
        return self.show(task_id).actions

    def list_tasks(self, *, limit: int, repository_id: RepositoryId | None = None, before: TaskId | None = None,
                   words: Sequence[str] = ()) -> list[records.TaskRecord]:
        """One page of tasks, newest first: after ``before`` (the previous page's last task) when given, only
        those whose id, title or requirement holds every one of ``words`` (lower-case)."""
        return self._db.read(lambda view: records.list_task_records(
            view, limit=limit, repository_id=repository_id, before=before, words=words))

    def ledger(self, task_id: TaskId, attempt: int) -> list[ledger_rows.LedgerRow]:
        """The attempt's stage ledger, 36 and 37 as the person's decision on it decided them (when it did)."""
        return self._db.read(lambda view: ledger_with_decision(
            ledger_rows.ledger_of_attempt(view, task_id, attempt),
            checkpoint_rows.delivery_of_attempt(view, task_id, attempt)))

    def record_obligations(self, task_id: TaskId, attempt: int, obligations: Sequence[NewObligation]
                           ) -> tuple[ObligationRecord, ...]:
        """Record the attempt's obligations ``open`` in one transaction (one already recorded is kept as it is)."""
        def work(tx: Transaction, events: list[JournalEvent]) -> list[ObligationRecord]:
            return obligation_rows.insert_obligations(tx, task_id=task_id, attempt=attempt, obligations=obligations,
                                                      at_us=self._changes.clock())

        return tuple(self._changes.write(work)) if obligations else ()

    def change_obligations(self, task_id: TaskId, attempt: int, changes: Sequence[ObligationChange]
                           ) -> tuple[ObligationRecord, ...]:
        """Enter each change's state (the domain's transition rule) in one transaction; returns them as stored."""
        def work(tx: Transaction, events: list[JournalEvent]) -> list[ObligationRecord]:
            at_us = self._changes.clock()
            return [obligation_rows.change_obligation_state(tx, task_id=task_id, attempt=attempt, change=change,
                                                            at_us=at_us) for change in changes]

        return tuple(self._changes.write(work)) if changes else ()

    def obligations(self, task_id: TaskId, attempt: int, kind: ObligationKind | None = None
                    ) -> tuple[ObligationRecord, ...]:
        """The attempt's obligations (of ``kind``, else all) with their newest states, in the order recorded."""
        return tuple(self._db.read(lambda view: obligation_rows.obligations_of_attempt(view, task_id, attempt, kind)))

    def patches(self, task_id: TaskId) -> list[records.TaskPatchRow]:
        return self._db.read(lambda view: records.patches_of_task(view, task_id))


def _require_startable(tx: Transaction, task: records.TaskRecord,
                       snapshot: RepositorySnapshot) -> plan_rows.PlanRevisionRow:
    """The gates of a run start (see :meth:`TaskService.start_run`); returns the approved plan it runs under."""
    gates.require_same_repository(task, _repository_of(tx, task), snapshot)
    gates.require_landable_checkout(snapshot)
    if task.base_revision is None:
        acknowledged = repository_rows.latest_dirty_acknowledgement(tx, task.task_id)
        gates.require_acknowledged_tree(snapshot, None if acknowledged is None else acknowledged.dirty_hash)
    plan = gates.require_approved_plan(tx, task)
    gates.require_entry_allowed(tx, task, TaskState.RUNNING, dedicated_ok=True)
    return plan


def _repository_of(view: ReadView, task: records.TaskRecord) -> repository_rows.RepositoryRow:
    if task.repository_id is None:
        raise UsageError(f"task {task.task_id} was not created for a repository by the task service")
    return repository_rows.require_repository(view, task.repository_id)
