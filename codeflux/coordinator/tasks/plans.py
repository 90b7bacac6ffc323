"""Plan revisions and the decisions on them, as task changes.

- Recording a revision (the planner's output, or a person's plan) stores it immutably with its hash and
  moves the task from ``forecasting`` to ``awaiting-plan-approval``.
- Approving binds to the revision *and* its hash, and only the newest revision: a stale revision or hash
  is refused with :class:`PlanChangedError`, nothing recorded. The task becomes ``ready``.
- Approval is also refused, with nothing recorded, while the revision has no executable acceptance example
  (:class:`AcceptanceExampleNeededError`), has open questions (:class:`ClarificationNeededError`: the
  clarification policy was ``ask``), or carries a trace in which no step serves an acceptance example
  (:class:`UncoveredExampleError`). A revision without any trace (not drafted by the planner) is not
  refused for that: stage 4 then records that coverage was not measured.
- Answering a question (:func:`answer_question`) records the next revision — the same plan with that
  question's answer — by the person; the task stays ``awaiting-plan-approval`` and the approval binds to
  the answered revision's hash (the older revision can no longer be approved: it is not the newest).
- Editing the examples (:func:`edit_examples`) records the next revision — the same plan with the person's
  list of acceptance examples, by the person (the rules: :mod:`codeflux.domain.plan_examples`); like an
  answer, the approval then binds to the edited revision. While the requirement has the person's own
  ACCEPTANCE blocks, those are the examples and the edit is refused (it would change nothing).
- Sending back records the feedback as that revision's decision and returns the task to
  ``forecasting``; the planner's next revision carries the feedback and needs its own approval before
  work continues (:mod:`codeflux.coordinator.tasks.gates` checks that before anything becomes active).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from codeflux.coordinator.tasks import gates
from codeflux.coordinator.tasks.changes import (
    Actor,
    TaskChange,
    TaskChanges,
    check_text,
    deciding_actor,
    require_revision,
)
from codeflux.coordinator.tasks.plan_schema import require_plan_size
from codeflux.domain.acceptance import acceptance_of, examples_in_requirement
from codeflux.domain.clarification import requirement_sentences, trace_coverage
from codeflux.domain.errors import (
    AcceptanceExampleNeededError,
    ClarificationNeededError,
    ConflictError,
    PlanChangedError,
    UncoveredExampleError,
    UsageError,
)
from codeflux.domain.events import PlanApproved, PlanRevisionRecorded, PlanSentBack
from codeflux.domain.ids import TaskId
from codeflux.domain.plan_examples import ExampleEdit, edit_plan_examples
from codeflux.domain.plans import Plan, PlanAuthor, PlanDecider, PlanRevisionRow, PlanVerdict, plan_sha256
from codeflux.domain.tasks import TaskState, validate_task_transition
from codeflux.store import plans as plan_rows
from codeflux.store import task_records as records
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import JournalEvent, append_event

__all__ = ["MAX_ANSWER_CHARS", "MAX_FEEDBACK_CHARS", "PlanAuthor", "answer_question", "decide_plan",
           "edit_examples", "examples_not_editable", "read_pending_feedback", "record_plan_revision"]

MAX_FEEDBACK_CHARS: Final = 8192
MAX_ANSWER_CHARS: Final = 4000


def record_plan_revision(
    changes: TaskChanges, task_id: TaskId, plan: Plan, *, created_by: PlanAuthor, feedback: str | None,
    expected_revision: int, idempotency_key: str,
) -> TaskChange:  # fmt: skip
    """Record ``plan`` as the task's next revision; the task moves to ``awaiting-plan-approval``."""
    require_plan_size(plan)
    if feedback is not None:
        check_text(feedback, kind="plan feedback", limit=MAX_FEEDBACK_CHARS)
    author = PlanAuthor(created_by)

    def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
        task = records.require_task_record(tx, task_id)
        require_revision(task, expected_revision)
        validate_task_transition(task.state, TaskState.AWAITING_PLAN_APPROVAL)
        gates.require_entry_allowed(tx, task, TaskState.AWAITING_PLAN_APPROVAL, dedicated_ok=True)
        row = plan_rows.insert_plan_revision(tx, task_id=task_id, plan=plan, created_by=author,
                                             feedback=feedback, at_us=changes.clock())
        events.append(append_event(tx, session_id=task.session_id, event=PlanRevisionRecorded(
            task_id=task_id, revision=row.revision, sha256=row.sha256, created_by=author.value)))
        actor = Actor.USER if author is PlanAuthor.USER else Actor.SYSTEM
        record = changes.transition(tx, events, task, TaskState.AWAITING_PLAN_APPROVAL, actor=actor,
                                    reason=f"plan revision {row.revision} ({author.value}) awaits approval")
        return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision,
                "plan_revision": row.revision}

    return changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
        "operation": "record-plan-revision", "sha256": plan_sha256(plan), "created_by": author.value,
        "feedback": feedback, "expected_revision": expected_revision})


def decide_plan(
    changes: TaskChanges, task_id: TaskId, *, revision: int, sha256: str, feedback: str | None, decided_by: Actor,
    idempotency_key: str,
) -> TaskChange:  # fmt: skip
    """Approve (``feedback`` None) or send back revision ``revision`` with hash ``sha256``."""
    actor = deciding_actor(decided_by)
    if feedback is not None:
        check_text(feedback, kind="plan feedback", limit=MAX_FEEDBACK_CHARS)
    approving = feedback is None
    to_state = TaskState.READY if approving else TaskState.FORECASTING

    def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
        task = records.require_task_record(tx, task_id)
        current = _require_current(tx, task_id, revision=revision, sha256=sha256)
        validate_task_transition(task.state, to_state)
        if approving:
            _require_approvable(task_id, task.requirement or "", current)
        plan_rows.insert_plan_decision(tx, task_id=task_id, revision=revision, sha256=sha256,
                                       decision=PlanVerdict.APPROVED if approving else PlanVerdict.SENT_BACK,
                                       feedback=feedback, decided_by=PlanDecider(actor.value), at_us=changes.clock())
        events.append(append_event(tx, session_id=task.session_id, event=(
            PlanApproved if approving else PlanSentBack)(task_id=task_id, revision=revision, sha256=sha256,
                                                          by=actor.value)))
        reason = f"plan revision {revision} approved" if approving else f"plan revision {revision} sent back"
        record = changes.transition(tx, events, task, to_state, reason=reason, actor=actor)
        return {"task_id": task_id.value, "state": record.state.value, "revision": record.revision,
                "plan_revision": revision}

    return changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
        "operation": "approve-plan" if approving else "send-back-plan", "revision": revision, "sha256": sha256,
        "feedback": feedback, "by": actor.value})


def _require_approvable(task_id: TaskId, requirement: str, current: PlanRevisionRow) -> None:
    """Refuse approving ``current`` before anything is recorded (see the module docstring)."""
    plan, revision = current.plan, current.revision
    examples = acceptance_of(requirement, plan.examples, plan_revision=revision).examples
    if not examples:
        raise AcceptanceExampleNeededError(task_id=task_id.value, revision=revision)
    if plan.open_questions:
        raise ClarificationNeededError(task_id=task_id.value, revision=revision, numbers=plan.open_questions)
    if plan.trace is not None:
        coverage = trace_coverage([(t.examples, t.sentences) for t in plan.trace], examples=len(examples),
                                  sentences=len(requirement_sentences(requirement)))
        if coverage.uncovered_examples:
            raise UncoveredExampleError(task_id=task_id.value, revision=revision,
                                        numbers=coverage.uncovered_examples)


def answer_question(
    changes: TaskChanges, task_id: TaskId, *, revision: int, sha256: str, question: int, answer: str,
    idempotency_key: str,
) -> TaskChange:  # fmt: skip
    """Record the person's ``answer`` to question ``question`` (from 1) of revision ``revision`` (hash
    ``sha256``, the newest and undecided): the next revision is that plan with the answer, by the person."""
    text = check_text(answer, kind="answer", limit=MAX_ANSWER_CHARS)

    def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
        task = records.require_task_record(tx, task_id)
        if task.state is not TaskState.AWAITING_PLAN_APPROVAL:
            raise UsageError(f"task {task_id} is {task.state}; questions are answered while its plan awaits approval")
        current = _require_current(tx, task_id, revision=revision, sha256=sha256)
        if not 1 <= question <= len(current.plan.questions):
            raise UsageError(f"plan revision {revision} has no question {question} "
                             f"({len(current.plan.questions)} question(s))")
        if current.plan.questions[question - 1].answer is not None:
            raise ConflictError(f"task {task_id}: question {question} of plan revision {revision} is already answered")
        answered = current.plan.answered(question, text)
        require_plan_size(answered)
        row = plan_rows.insert_plan_revision(tx, task_id=task_id, plan=answered, created_by=PlanAuthor.USER,
                                             feedback=None, at_us=changes.clock())
        events.append(append_event(tx, session_id=task.session_id, event=PlanRevisionRecorded(
            task_id=task_id, revision=row.revision, sha256=row.sha256, created_by=PlanAuthor.USER.value)))
        return {"task_id": task_id.value, "state": task.state.value, "revision": task.revision,
                "plan_revision": row.revision}

    return changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
        "operation": "answer-question", "revision": revision, "sha256": sha256, "question": question,
        "answer": text})


def examples_not_editable(requirement: str) -> str | None:
    """Why editing the plan's examples would change nothing for a task with ``requirement``, or None."""
    written, _ = examples_in_requirement(requirement)
    if written:
        return (f"the requirement's own ACCEPTANCE blocks ({len(written)} example(s)) are the examples this task is "
                "checked against; they always win over the plan's, so editing the plan's examples would change nothing")
    return None


def _edit_document(edit: ExampleEdit) -> dict[str, object]:
    example = None if edit.example is None else edit.example.to_document()
    return {"number": edit.number, "example": example, "steps": list(edit.steps)}


def edit_examples(
    changes: TaskChanges, task_id: TaskId, *, revision: int, sha256: str, edits: tuple[ExampleEdit, ...],
    idempotency_key: str,
) -> TaskChange:  # fmt: skip
    """Replace the acceptance examples of revision ``revision`` (hash ``sha256``, the newest and undecided) with
    ``edits``: the next revision is that plan with the person's examples, by the person."""

    def work(tx: Transaction, events: list[JournalEvent]) -> Mapping[str, object]:
        task = records.require_task_record(tx, task_id)
        if task.state is not TaskState.AWAITING_PLAN_APPROVAL:
            raise UsageError(f"task {task_id} is {task.state}; examples are edited while its plan awaits approval")
        current = _require_current(tx, task_id, revision=revision, sha256=sha256)
        why_not = examples_not_editable(task.requirement or "")
        if why_not is not None:
            raise UsageError(f"task {task_id}: {why_not}")
        edited = edit_plan_examples(current.plan, edits, revision=current.revision + 1)
        require_plan_size(edited)
        row = plan_rows.insert_plan_revision(tx, task_id=task_id, plan=edited, created_by=PlanAuthor.USER,
                                             feedback=None, at_us=changes.clock())
        if row.revision != current.revision + 1:
            raise ConflictError(f"task {task_id}: plan revision {current.revision + 1} was recorded meanwhile")
        events.append(append_event(tx, session_id=task.session_id, event=PlanRevisionRecorded(
            task_id=task_id, revision=row.revision, sha256=row.sha256, created_by=PlanAuthor.USER.value)))
        return {"task_id": task_id.value, "state": task.state.value, "revision": task.revision,
                "plan_revision": row.revision}

    return changes.mutate(scope=f"task:{task_id.value}", key=idempotency_key, work=work, request={
        "operation": "edit-examples", "revision": revision, "sha256": sha256,
        "examples": [_edit_document(edit) for edit in edits]})


def _require_current(view: ReadView, task_id: TaskId, *, revision: int, sha256: str) -> PlanRevisionRow:
    latest = plan_rows.latest_plan_revision(view, task_id)
    if latest is None or latest.revision != revision or latest.sha256 != sha256:
        raise PlanChangedError(task_id=task_id.value, offered_revision=revision, offered_sha256=sha256,
                               current_revision=None if latest is None else latest.revision,
                               current_sha256=None if latest is None else latest.sha256)
    decided = plan_rows.plan_decision(view, task_id, revision)
    if decided is not None:
        raise ConflictError(f"task {task_id}: plan revision {revision} was already {decided.decision}")
    return latest


def read_pending_feedback(view: ReadView, task_id: TaskId) -> str | None:
    """The feedback the newest revision was sent back with (what the planner's next revision answers)."""
    latest = plan_rows.latest_plan_revision(view, task_id)
    decision = None if latest is None else plan_rows.plan_decision(view, task_id, latest.revision)
    return None if decision is None else decision.feedback
