"""The scheduler: the coordinator runs tasks in threads, interactively, while the UI watches the journal.

One :class:`BackgroundRuns` per coordinator. :meth:`BackgroundRuns.start` runs a ``ready`` task with
:func:`~codeflux.coordinator.runs.runner.run_task` in a thread of its own, with no headless policy: a request
that needs a person ends the thread with an ``awaiting-authority`` outcome whose conversation stays in
memory; once :meth:`ApprovalService.Decide <codeflux.services.approvals>` has recorded the answer,
:meth:`continue_after_decision` goes on with :func:`~codeflux.coordinator.runs.runner.resume_run` in a new
thread (the pipeline's check command may ask again: the same flow). The run slots (4 active tasks, 1 per
repository) are enforced by the task service when the run starts.

* **pause** moves the task to ``paused``; the loop reads the state before every turn, so a running thread
  stops at the next turn boundary (a tool already executing finishes first).
* **resume** of a paused task: with the run still held here (paused while it waited for a decision) it
  goes on where it stopped; otherwise like ``codeflux task resume`` — the task becomes ``ready`` and
  :func:`run_task` opens the next attempt (ending one a stop left open) and continues the conversation the
  loop keeps in SQLite. A task paused before its plan was approved drafts the plan again.
* **cancel** ends the task; its worktree is disposed of once no thread uses it (kept when that would
  lose work, as ``codeflux task cancel`` does).
* **shutdown** (``codeflux start`` on SIGINT/SIGTERM): pause every active run between turns, wait for
  the threads (bounded), capture a ``shutdown`` checkpoint per active task, stop the workers (the pause and
  the checkpoint are :mod:`codeflux.coordinator.tasks.shutdown`'s, shared with the CLI's signal handling).

Each run has its own :class:`~codeflux.coordinator.runs.tool_driver.ToolDriver` (workers under
``<data>/workers``), closed when the run ends. While the coordinator may run work it holds
:func:`~codeflux.coordinator.tasks.recovery.shared_running_lock` (taken at the first run or plan, released at
shutdown): the instance lock of ``codeflux start`` is another file and only keeps a second coordinator
out, while this lock keeps a CLI process's startup recovery from marking our live tasks interrupted.

An exception in a run thread never vanishes: it is logged, kept as the task's ``last_outcome`` (shown in
the TaskView) and the task is left in an honest state (``failed``, or ``paused`` where failing is not a
transition the state allows) with its open attempt ended. A run stopped by another process holding the write
lock past its patience (:class:`~codeflux.domain.errors.WriteLockHeldError`) is ``paused`` — nothing is wrong
with the task, resume goes on — and that end is written with the same patience.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codeflux.authority.decide import DecisionOutcome
from codeflux.coordinator.hooks import Observers, TaskStateChanged
from codeflux.coordinator.journal import read_session_head
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import RunOutcome, RunOutcomeKind, resume_run, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.coordinator.spending.ladder_position import ladder_position_of
from codeflux.coordinator.spending.model_access import ModelAccess, gateway_for_task
from codeflux.coordinator.tasks.cancelled_runs import (
    CancelReport,
    IdleDisposal,
    dispose_if_idle,
    report_cancel,
    requests_in_flight,
)
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.coordinator.tasks.rejection import DiffRejection
from codeflux.coordinator.tasks.service import Actor, TaskChange, TaskService
from codeflux.coordinator.tasks.shutdown import capture_shutdown_checkpoint, pause_task_for_shutdown
from codeflux.domain.errors import (
    CodefluxError,
    ConflictError,
    PrerequisiteError,
    RepositoryNotUsableError,
    TaskActionUnavailableError,
    WriteLockHeldError,
    safe_error_message,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName
from codeflux.domain.tasks import TaskAction, TaskState, describe_task_action, is_allowed_task_transition
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.logs import get_logger
from codeflux.store.database import Database, write_patience_s
from codeflux.store.location import DataLocation

__all__ = ["BackgroundRuns", "open_checkout"]

_LOG: Final = "coordinator.runs.scheduler"
_SETTLE_SECONDS: Final = 2.5  # per run: how long shutdown looks again while the run moves its task


def open_checkout(path: Path) -> RepositorySnapshot:
    """:func:`open_repository`, with a refusal that does not repeat the absolute path."""
    try:
        return open_repository(path)
    except RepositoryNotUsableError as error:
        raise RepositoryNotUsableError(path="the repository", problem=error.problem, detail=error.detail) from error


class _RunStart:
    """Tells the caller of :meth:`BackgroundRuns.start` once the run started, by observing the task's move from
    ``ready`` to ``running`` (:class:`TaskStateChanged`), or once its thread ended without starting it."""

    def __init__(self, task_id: TaskId) -> None:
        self._task_id = task_id
        self.settled = threading.Event()
        self.started = False

    def observe(self, change: TaskStateChanged) -> None:
        if change.task_id == self._task_id and change.run_started:
            self.started = True
            self.settled.set()

    def thread_ended(self) -> None:
        self.settled.set()


@dataclass(slots=True, kw_only=True)
class _Run:
    task_id: TaskId
    tasks: TaskService
    start: _RunStart
    driver: ToolDriver
    gateway: ModelGateway | None = None  # built for this run: its connections close when the run ends
    thread: threading.Thread | None = None
    waiting: RunOutcome | None = None  # awaiting-authority: the conversation, kept in memory
    dispose_on_end: bool = False
    error: BaseException | None = None  # what ended the last thread, if it raised
    done: threading.Event = field(default_factory=threading.Event)


class BackgroundRuns:
    """The coordinator's runs (see the module docstring). Thread-safe; every method returns promptly."""

    def __init__(self, db: Database, location: DataLocation, models: Callable[[], ModelAccess], *,
                 limits: LoopLimits | None = None) -> None:
        """``models`` gives the model access in force when a run starts (``codeflux start`` may switch it)."""
        self._db = db
        self._location = location
        self._models = models
        self._limits = limits or LoopLimits()
        self._lock = threading.Lock()
        self._runs: dict[TaskId, _Run] = {}
        self._outcomes: dict[TaskId, str] = {}
        self._running_lock: contextlib.ExitStack | None = None
        self._closed = False
        self._log = get_logger(_LOG)

    # ─── reading ─────────────────────────────────────────────────────────────────────────────────

    def is_active(self, task_id: TaskId) -> bool:
        """A run of the task is held here: a thread works on it, or it waits for a decision."""
        with self._lock:
            return task_id in self._runs

    def last_outcome(self, task_id: TaskId) -> str:
        """How the task's last run thread ended here (empty when none ended in this coordinator)."""
        with self._lock:
            return self._outcomes.get(task_id, "")

    def driver_for(self, task_id: TaskId) -> ToolDriver | None:
        """The tool driver of the task's run, when one is held."""
        with self._lock:
            run = self._runs.get(task_id)
            return None if run is None else run.driver

    def wait_until_settled(self, task_id: TaskId, timeout: float | None = None) -> bool:
        """Wait until no thread works on the task (it ended, or waits for a decision); for tests and shutdown."""
        with self._lock:
            run = self._runs.get(task_id)
            thread = None if run is None else run.thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    # ─── the lock that keeps startup recovery elsewhere away ──────────────────────────────────────

    def hold_running_lock(self) -> None:
        """Take the shared running lock now if not yet held (kept until :meth:`shutdown`)."""
        with self._lock:
            if self._closed:
                raise PrerequisiteError("codeflux is shutting down; nothing new starts")
            if self._running_lock is None:
                stack = contextlib.ExitStack()
                stack.enter_context(shared_running_lock(self._location))
                self._running_lock = stack

    # ─── starting and continuing ─────────────────────────────────────────────────────────────────

    def start(self, task_id: TaskId, *, retry_feedback: str | None = None,
              rejection: DiffRejection | None = None) -> None:
        """Run the ``ready`` task in a new thread; returns once the run started (its errors are raised here).
        ``retry_feedback``: another attempt on the same plan for a task awaiting review or failed;
        ``rejection``: the diff under review is rejected as that attempt starts (``task reject --retry``)."""
        self.hold_running_lock()
        start = _RunStart(task_id)
        tasks = TaskService(self._db, worktrees_root=self._location.worktrees,
                            observers=Observers().subscribe(TaskStateChanged, start.observe))
        record = tasks.show(task_id).task
        snapshot = open_checkout(record.repository_root)
        chosen = gateway_for_task(self._models(), self._db, task_id, ("run",))  # the task's pin, if it has one
        gateway = chosen.gateway
        provider = "scripted" if chosen.scripted else None
        driver = ToolDriver(self._db, state_dir=self._location.directory / "workers")
        run = _Run(task_id=task_id, tasks=tasks, start=start, driver=driver, gateway=gateway)
        with self._lock:
            if task_id in self._runs:
                driver.close()
                gateway.close()
                raise ConflictError(f"task {task_id} already has a run in this coordinator")
            self._runs[task_id] = run

        def step() -> RunOutcome:
            return run_task(task_id, gateway=gateway, driver=driver, tasks=tasks, repo_snapshot=snapshot,
                            position=ladder_position_of(self._db, task_id, gateway.ladder,
                                                        stall_threshold=gateway.stall_threshold), limits=self._limits,
                            headless_policy=None, provider=provider, retry_feedback=retry_feedback,
                            rejection=rejection)

        self._launch(run, step)
        start.settled.wait()
        if not start.started:
            run.done.wait()
            if run.error is not None:
                raise run.error

    def continue_after_decision(self, task_id: TaskId) -> bool:
        """Go on with a run that waited for the decision just recorded; False when none waits here."""
        with self._lock:
            run = self._runs.get(task_id)
            if run is None or run.waiting is None or (run.thread is not None and run.thread.is_alive()):
                return False
        if run.tasks.show(task_id).task.state is TaskState.PAUSED:
            return False  # paused while it waited: resume goes on
        self._continue(run)
        return True

    def _continue(self, run: _Run) -> None:
        with self._lock:
            waiting, run.waiting = run.waiting, None
        if waiting is None:
            return
        self._launch(run, lambda: resume_run(waiting))

    def _launch(self, run: _Run, step: Callable[[], RunOutcome]) -> None:
        run.done.clear()
        thread = threading.Thread(target=self._body, args=(run, step), name=f"codeflux-run-{run.task_id.value}",
                                  daemon=True)
        run.thread = thread
        thread.start()

    def _body(self, run: _Run, step: Callable[[], RunOutcome]) -> None:
        try:
            outcome = step()
        except BaseException as error:  # recorded, never lost: the UI reads state and last_outcome
            run.error = error
            self._crashed(run, error)
            self._end(run)
            return
        finally:
            run.start.thread_ended()
        self._outcomes_set(run.task_id, f"{outcome.kind}: {outcome.reason}"[:1000])
        self._log.info("run settled", task_id=run.task_id.value, outcome=outcome.kind.value)
        if outcome.kind is RunOutcomeKind.AWAITING_AUTHORITY and outcome.resume is not None:
            with self._lock:
                run.waiting = outcome
                closed = self._closed
            run.done.set()
            if not closed:
                self._continue_if_decided(run)  # the decision may have come before the run stored its state
            return
        self._end(run)

    def _continue_if_decided(self, run: _Run) -> None:
        waiting = run.waiting
        if waiting is None or waiting.pending_request_id is None:
            return
        decided = run.driver.read_request(waiting.pending_request_id).outcome is not DecisionOutcome.PENDING
        if decided and run.tasks.show(run.task_id).task.state is not TaskState.PAUSED:
            self._continue(run)

    def _outcomes_set(self, task_id: TaskId, text: str) -> None:
        with self._lock:
            self._outcomes[task_id] = text

    def _crashed(self, run: _Run, error: BaseException) -> None:
        message = safe_error_message(error)
        label = "stopped" if isinstance(error, CodefluxError) else "error"
        self._outcomes_set(run.task_id, f"{label}: {message}"[:1000])
        self._log.error("run thread ended with an error", task_id=run.task_id.value, error_type=type(error).__name__,
                        error=message, exc_info=not isinstance(error, CodefluxError))
        # Another process held the write lock past the run's patience: nothing is wrong with the task, so it is
        # paused (resume goes on) rather than failed, and its end is recorded with the same patience (nobody
        # waits on this thread; the lock may be about to go).
        locked = isinstance(error, WriteLockHeldError)
        try:
            with self._db.patient_writes(write_patience_s()) if locked else contextlib.nullcontext():
                view = run.tasks.show(run.task_id)
                if view.attempt is not None and view.attempt.is_open:
                    run.tasks.finish_attempt(run.task_id, view.attempt.attempt, stopped_at=StageName.ASSEMBLY)
                state = view.task.state
                if state in (TaskState.RUNNING, TaskState.AWAITING_AUTHORITY, TaskState.VALIDATING):
                    target = TaskState.FAILED if is_allowed_task_transition(state, TaskState.FAILED) and not locked \
                        else TaskState.PAUSED
                    current = run.tasks.show(run.task_id).task
                    run.tasks.transition(run.task_id, target, expected_revision=current.revision, actor=Actor.SYSTEM,
                                         reason=f"the run stopped on an error: {message}"[:2000],
                                         idempotency_key=f"run-error:{run.task_id.value}:{current.revision}")
        except Exception as follow_up:  # the task keeps the state it had; the log says why
            self._log.error("could not record the end of a failed run", task_id=run.task_id.value,
                            error_type=type(follow_up).__name__)

    def _end(self, run: _Run) -> None:
        with self._lock:
            if self._runs.get(run.task_id) is run:
                del self._runs[run.task_id]
        run.driver.close()
        if run.gateway is not None:
            run.gateway.close()
        if run.dispose_on_end or self._cancelled(run.task_id):  # cancelled here, or by another process
            self._dispose(run.task_id)
        run.done.set()

    def _cancelled(self, task_id: TaskId) -> bool:
        try:
            return TaskService(self._db, worktrees_root=self._location.worktrees).show(
                task_id).task.state is TaskState.CANCELLED
        except Exception:  # the run's end goes on; the worktree stays
            return False

    # ─── pause, resume, cancel ───────────────────────────────────────────────────────────────────

    def pause(self, task_id: TaskId, *, key: str, reason: str = "paused by the user") -> TaskChange:
        """``paused``: a running thread stops before its next turn; a run waiting for a decision stays here."""
        tasks = TaskService(self._db, worktrees_root=self._location.worktrees)
        task = tasks.show(task_id).task
        _require(task.task_id, task.state, TaskAction.PAUSE)
        return tasks.transition(task_id, TaskState.PAUSED, expected_revision=task.revision, reason=reason,
                                actor=Actor.USER, idempotency_key=key)

    def resume(self, task_id: TaskId, *, key: str, draft_plan: Callable[[], object]) -> None:
        """Go on with a paused task (see the module docstring); ``draft_plan`` drafts a plan again."""
        tasks = TaskService(self._db, worktrees_root=self._location.worktrees)
        view = tasks.show(task_id)
        _require(task_id, view.task.state, TaskAction.RESUME)
        self.hold_running_lock()
        with self._lock:
            run = self._runs.get(task_id)
        if run is not None and run.thread is not None and run.thread.is_alive():
            raise ConflictError(f"task {task_id}: its run is still stopping at a turn boundary; resume in a moment")
        if run is not None and run.waiting is not None and run.waiting.pending_request_id is not None:
            pending = run.driver.read_request(run.waiting.pending_request_id).outcome is DecisionOutcome.PENDING
            running = tasks.transition(task_id, TaskState.RUNNING, expected_revision=view.task.revision,
                                       reason="resumed by the user", actor=Actor.USER, idempotency_key=f"{key}:run")
            if pending:
                tasks.transition(task_id, TaskState.AWAITING_AUTHORITY, expected_revision=running.revision,
                                 reason=f"tool request {run.waiting.pending_request_id} still waits for a decision",
                                 actor=Actor.SYSTEM, idempotency_key=f"{key}:await")
            else:
                self._continue(run)
            return
        if run is not None:
            self._end(run)
        if not view.plan_approved:
            tasks.transition(task_id, TaskState.FORECASTING, expected_revision=view.task.revision,
                             reason="resumed by the user: the plan is drafted again", actor=Actor.USER,
                             idempotency_key=f"{key}:forecasting")
            draft_plan()
            return
        # run_task ends an attempt left open and continues the conversation the loop kept in SQLite.
        tasks.transition(task_id, TaskState.READY, expected_revision=view.task.revision, actor=Actor.USER,
                         reason="resumed by the user",
                         idempotency_key=f"{key}:ready")
        self.start(task_id)

    def cancel(self, task_id: TaskId, *, key: str) -> tuple[TaskChange, CancelReport]:
        """``cancelled``; the worktree is disposed of now, or when the run's thread (here or in another process)
        has stopped its command. The report says what happened to a running command and to the worktree."""
        tasks = TaskService(self._db, worktrees_root=self._location.worktrees)
        task = tasks.show(task_id).task
        _require(task_id, task.state, TaskAction.CANCEL)
        in_flight = requests_in_flight(self._db, task_id)
        since = read_session_head(self._db, task.session_id) or 0
        change = tasks.transition(task_id, TaskState.CANCELLED, expected_revision=task.revision,
                                  reason="cancelled by the user", actor=Actor.USER, idempotency_key=key)
        disposal = self.after_stop(task_id)
        return change, report_cancel(self._db, task_id, in_flight=in_flight, disposal=disposal,
                                     since_sequence=since)

    def after_stop(self, task_id: TaskId) -> IdleDisposal | None:
        """The task ended (cancelled or stopped): drop a waiting run and dispose of the worktree when free.
        None when a run thread of this process still uses it (the thread disposes of it when it ends)."""
        with self._lock:
            run = self._runs.get(task_id)
            busy = run is not None and run.thread is not None and run.thread.is_alive()
            if run is not None and busy:
                run.dispose_on_end = True
        if busy:
            return None
        if run is not None:
            self._end(run)
        return self._dispose(task_id)

    def _dispose(self, task_id: TaskId) -> IdleDisposal:
        """Dispose of the ended task's worktree unless a command of it is in flight (in another process: that
        run removes it when its command stops, see :mod:`~codeflux.coordinator.tasks.cancelled_runs`)."""
        try:
            done = dispose_if_idle(self._db, task_id)
            if done.left is not None:
                self._log.info("the worktree of an ended task stays for now", task_id=task_id.value, why=done.left)
            return done
        except Exception as error:  # the worktree stays; the journal and the log say why
            self._log.error("could not dispose of a cancelled task's worktree", task_id=task_id.value,
                            error_type=type(error).__name__, error=safe_error_message(error))
            return IdleDisposal(disposal=None, left=f"it could not be removed: {safe_error_message(error)}")

    # ─── shutdown ────────────────────────────────────────────────────────────────────────────────

    def running_commands(self) -> int:
        """How many active runs there are (what a stopping ``codeflux start`` waits for)."""
        with self._lock:
            return sum(1 for run in self._runs.values() if run.thread is not None and run.thread.is_alive())

    def cancel_running_commands(self) -> None:
        """Cancel the command each active run is executing, and any it starts
        (:meth:`ToolDriver.cancel_running_commands`)."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.driver.cancel_running_commands()

    def shutdown(self, *, timeout: float = 60.0) -> list[TaskId]:
        """Pause every active run between turns, wait (at most ``timeout`` seconds), capture a ``shutdown``
        checkpoint per active task, stop the workers and release the running lock. Returns those tasks."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
        tasks = TaskService(self._db, worktrees_root=self._location.worktrees)
        for run in runs:
            pause_task_for_shutdown(tasks, run.task_id, reason="codeflux is shutting down; resume the task to go on",
                                    actor=Actor.SYSTEM, keep_trying=_for_seconds(_SETTLE_SECONDS))
        deadline = time.monotonic() + timeout
        for run in runs:
            if run.thread is not None:
                run.thread.join(max(0.0, deadline - time.monotonic()))
        for run in runs:
            try:
                capture_shutdown_checkpoint(tasks.changes, run.task_id)
            except Exception as error:
                self._log.error("no shutdown checkpoint", task_id=run.task_id.value, error_type=type(error).__name__)
            run.driver.close()
            if run.gateway is not None:
                run.gateway.close()
        with self._lock:
            self._runs.clear()
            stack, self._running_lock = self._running_lock, None
        if stack is not None:
            stack.close()
        return [run.task_id for run in runs]


def _for_seconds(seconds: float) -> Callable[[], bool]:
    """True until ``seconds`` have passed from now."""
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() < deadline


def _require(task_id: TaskId, state: TaskState, action: TaskAction) -> None:
    availability = describe_task_action(state, action)
    if not availability.available:
        raise TaskActionUnavailableError(task_id=task_id.value, action=action.value, state=state.value,
                                         reason=availability.reason or f"{action.value} is not available")
