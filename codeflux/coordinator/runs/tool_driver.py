"""The programmatic driver of tool requests: submit, see what waits for a person, decide, execute, read.

Used by tests now and by the task service and UI later. One :class:`ToolDriver` per coordinator; it
starts one worker per task on first execution and stops them all on :meth:`ToolDriver.close`::

    driver = ToolDriver(db, state_dir=data / "workers")
    submitted = driver.submit_tool_request(task_id, "run_command", {"argv": ["pytest", "-q"]},
                                           idempotency_key="model-call-17")
    if submitted.outcome is DecisionOutcome.PENDING:
        driver.decide(submitted.request_id, UserDecision.ALLOW_ONCE, reason="run the tests")
    record = driver.execute(submitted.request_id)

* **Submit** binds the raw arguments to the tool descriptor, computes path facts with the worker's
  symlink-safe resolver, pins ``run_command``'s program (resolved on the worker's ``PATH``, real path,
  content sha256), classifies, and records request + decision + event in one transaction.
* **Execute** commits the intent, consuming an allow-once approval, in one transaction (a refusal or a
  failed commit raises and nothing runs); then asks the worker once; then commits the result, whose text
  has been redacted (exact loaded secrets + patterns) and capped *before* it reaches SQLite — content to
  its head, command output to its head and tail, each cut marked in the text
  (:mod:`codeflux.domain.truncation`). A request executes at most once: executing it again returns the
  recorded execution.
* **Submit and execute at once** (:meth:`ToolDriver.submit_and_execute`, or
  ``submit_tool_request(..., intend_if_allowed=True)`` followed by ``execute``): when the first decision
  already allows the request (``automatic``, or ``allowed-for-task`` by a standing approval of the exact
  identity), the execution intent commits in the submission's transaction and ``execute`` runs it without
  another commit — two durable commits per such tool call instead of three. The intent is still committed
  before anything runs (if that commit fails, nothing is recorded and nothing runs); a crash after it
  leaves an intent that startup recovery marks ``outcome-unknown``. A pending request records no intent
  until its decision, exactly as above. A retried submission (same key) records nothing new and never
  runs again: ``execute`` finds the recorded execution.
* **No ``running`` mark.** The execution goes from ``intended`` straight to its end state. Recording
  ``running`` from :meth:`WorkerHandle.execute`'s ``on_started`` would be a fourth durable commit (an
  ``fsync``, about a third of a bare process spawn on the benchmark machine) on the path of every
  execution, and it would change nothing a person or recovery relies on: after a crash ``intended`` and
  ``running`` both become ``outcome-unknown``, and neither is ever re-run.
* **Observers** (``observers=``, :mod:`codeflux.coordinator.hooks`) hear of each submission, decision and
  execution after it committed, synchronously; they cannot veto (the CLI's transcript is one).
* **After a crash**, :func:`reconcile_interrupted_executions` (called once at coordinator start, never
  while another driver may be executing) marks intents without a result ``outcome-unknown``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Final

from codeflux.authority.classify import Classification, WorktreeFacts, classify_tool_request
from codeflux.authority.decide import Decider, DecisionOutcome, UserDecision
from codeflux.authority.service import AuthorityService, DerivedAllowance, ExecutionIntent, RequestView
from codeflux.coordinator.hooks import Observers, ToolCallDecided, ToolCallRan, ToolCallSubmitted
from codeflux.coordinator.runs.live_output import LiveOutput
from codeflux.coordinator.runs.program_pins import resolve_executable_pin
from codeflux.coordinator.runs.reviewed_commands import remember_reviewed_operation
from codeflux.coordinator.tool_calls import ExecutionRecord, SubmittedRequest
from codeflux.domain.authority import ExecutionResultValues, ExecutionRow, RequestSource
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.confinement import ConfinementMode, standing_approval_needs_opt_in
from codeflux.domain.errors import (
    InvalidValueError,
    PathNotFoundError,
    PathRefusedError,
    SecretLeakError,
    WorkerClosedError,
    WorkerStartError,
    WriteLockHeldError,
)
from codeflux.domain.execution import ExecutionState, FailureKind, ToolExecutionState
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.domain.operations import (
    ExecutablePin,
    Operation,
    describe_operation,
)
from codeflux.domain.tasks import is_terminal
from codeflux.domain.tools import ArgumentType, BoundToolRequest, bind_tool_request
from codeflux.domain.truncation import keep_head, keep_head_and_tail
from codeflux.pipeline.tool_overlay import ToolSource, tools_directory
from codeflux.redact import SecretKind, default_redactor
from codeflux.store.database import Database, write_patience_s
from codeflux.store.tasks import TaskRow, require_task
from codeflux.worker.client.confinement import ConfinementChoice, choose_confinement
from codeflux.worker.client.handle import WorkerExecution, WorkerHandle, WorkerOutcome
from codeflux.worker.client.launch import task_temp_directory
from codeflux.worker.environment import build_worker_environment
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.executables import ExecutableDigests

__all__ = [
    "PIPELINE_SOURCE",
    "DriverFault",
    "ExecutionRecord",
    "SubmittedRequest",
    "ToolDriver",
    "reconcile_interrupted_executions",
]

STORED_CONTENT_CHARS: Final = 1024 * 1024
STORED_STREAM_CHARS: Final = 256 * 1024
STORED_MESSAGE_CHARS: Final = 1024
CANCEL_POLL_S: Final = 0.25
"""How often the task's state is read while one of its commands runs (a cancel stops the command)."""
PIPELINE_SOURCE: Final = RequestSource.PIPELINE.value
"""The source of the pipeline's own requests (a check command): not the model's, not a person's."""
_KEPT: Final = 256  # described operations and classifications kept per driver (then forgotten at once)


class DriverFault(StrEnum):
    """Named points where tests inject a failure or a real process kill into an execution."""

    # inside the transaction that writes the intent (the intent transaction, or the submission's when it
    # carries the intent): raising rolls it back
    BEFORE_INTENT_COMMIT = "before-intent-commit"
    AFTER_INTENT_COMMIT = "after-intent-commit"  # committed; the worker has not been asked yet


def _record(row: ExecutionRow) -> ExecutionRecord:
    result = row.result
    return ExecutionRecord(
        execution_id=row.execution_id, request_id=row.request_id, task_id=row.task_id, state=result.state,
        failure_kind=result.failure_kind, message=result.message, exit_code=result.exit_code, content=result.content,
        stdout=result.stdout, stderr=result.stderr, content_truncated=result.content_truncated,
        stdout_truncated=result.stdout_truncated, stderr_truncated=result.stderr_truncated,
        content_sha256=result.content_sha256, duration_ms=result.duration_ms, confinement=result.confinement,
    )


def _submitted(view: RequestView, *, intended_execution_id: str | None = None) -> SubmittedRequest:
    return SubmittedRequest(request_id=view.request_id, task_id=view.task_id, tool=view.tool,
                            operation_identity=view.identity,
                            needs=view.classification.needs, compound=view.classification.compound,
                            decision=view.decision, intended_execution_id=intended_execution_id)


_ValuesKey = tuple[str, tuple[tuple[str, type, object], ...]]


def _values_key(request: BoundToolRequest) -> _ValuesKey:
    """The tool and its bound values, each with its type (tuple values are tuples of text)."""
    return request.tool, tuple((argument.name, type(argument.value), argument.value) for argument in request.arguments)


_ALLOWED: Final = frozenset({DecisionOutcome.AUTOMATIC, DecisionOutcome.ALLOWED_ONCE, DecisionOutcome.ALLOWED_FOR_TASK})


def _worktree_facts(request: BoundToolRequest, worktree: Path) -> WorktreeFacts:
    """Path arguments the resolver refuses (symlinks, ``..``, ``.git``…) count as leaving the worktree."""
    escaping = set()
    for spec, value in request.typed_values():
        if spec.type not in {ArgumentType.PATH, ArgumentType.GLOB} or not isinstance(value, str):
            continue
        try:
            resolve_worktree_path(worktree, value, must_exist=False)
        except PathNotFoundError:
            continue  # the worktree itself is gone: the worker reports worktree-missing
        except PathRefusedError:
            escaping.add(value)
    return WorktreeFacts(escaping_paths=frozenset(escaping))


def _redacted(redact: Callable[[str], str], text: str) -> str:
    return redact(text) if text else text


def _cap(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[:limit], True


class ToolDriver:
    """Submit, decide and execute tool requests of tasks recorded in ``db`` (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        *,
        state_dir: Path,
        base_environment: Mapping[str, str] | None = None,
        fault: Callable[[DriverFault], None] | None = None,
        data_dir: Path | None = None,
        confinement: ConfinementChoice | None = None,
        allow_unconfined: bool = False,
        observers: Observers | None = None,
        tool_source: ToolSource | None = None,
    ) -> None:
        """``observers`` hear of every submission, decision and execution once it committed
        (:mod:`codeflux.coordinator.hooks`). ``tool_source`` is where the pipeline may install a check tool
        the repository's environment lacks into codeflux's overlay (:mod:`codeflux.pipeline.tool_overlay`);
        None: ``$CODEFLUX_TOOL_WHEELHOUSE`` / ``$CODEFLUX_TOOL_INDEX_URL`` of ``base_environment``, else codeflux's
        own installation."""
        self._db = db
        self._observers = Observers() if observers is None else observers
        # Every process a worker starts runs in this box; the data directory (by default the parent of
        # ``state_dir``, ``<data>/workers``) is hidden in it.
        self._confinement = confinement or choose_confinement()
        self._data_dir = data_dir or state_dir.parent
        # With no box, a program may only be allowed once at a time unless the person opted in (logged by
        # the caller): standing approvals neither cover nor may be given to requests that run one.
        self._authority = AuthorityService(db, programs_unconfined=standing_approval_needs_opt_in(
            self._confinement.mode) and not allow_unconfined,
            unconfined=self._confinement.mode is ConfinementMode.NONE)
        self._state_dir = state_dir
        self._base_environment = dict(os.environ if base_environment is None else base_environment)
        self._tool_source = tool_source or ToolSource.from_environment(self._base_environment)
        self._search_path = build_worker_environment(base=self._base_environment, home=state_dir,
                                                     tmpdir=state_dir)["PATH"]
        self._fault = fault
        self._redactor = default_redactor()
        self._executables = ExecutableDigests()
        self._stop_commands = threading.Event()  # codeflux is stopping and the person asked not to wait
        self._workers: dict[TaskId, WorkerHandle] = {}
        # committed at submission, not yet run (by request id), with the request bound at submission
        self._intended: dict[str, tuple[ExecutionIntent, BoundToolRequest]] = {}
        self._worktrees: dict[TaskId, Path] = {}
        self._classifications: dict[tuple[_ValuesKey, WorktreeFacts], Classification] = {}
        self._operations: dict[tuple[_ValuesKey, TaskId, ExecutablePin | None, str | None], Operation] = {}
        self._lock = threading.Lock()
        self._closed = False
        # read once (a bad $CODEFLUX_WRITE_PATIENCE_S is refused here, before anything runs)
        self._write_patience = write_patience_s()

    @property
    def programs_unconfined(self) -> bool:
        """Programs run with no OS box and the person did not opt in (``--allow-unconfined``): a program is
        then allowed once at a time, never for the task (:mod:`codeflux.authority.plan_checks`)."""
        return self._authority.programs_unconfined

    # ─── requests and decisions ──────────────────────────────────────────────────────────────────

    def submit_tool_request(
        self, task_id: TaskId, tool: str, raw_args: Mapping[str, object], *, idempotency_key: str,
        source: str = "model", intend_if_allowed: bool = False, working_directory: str | None = None,
        derived: DerivedAllowance | None = None,
    ) -> SubmittedRequest:
        """Bind, pin, classify and record a request with its first decision (one transaction).

        ``working_directory`` (part of the operation's identity: worktree-relative, or ``$TMPDIR/<path>``
        under the task's TMPDIR, see :func:`~codeflux.domain.operations.normalize_working_directory`) is for
        the pipeline's own requests only: a check run on the base revision in its scratch copy. The model's
        requests always run in the worktree root. ``derived`` (pipeline only) allows such a request once in its
        own transaction by a decision already made on the check it follows (see
        :class:`~codeflux.authority.service.DerivedAllowance`).

        With ``intend_if_allowed``, a first decision that already allows the request also commits its
        execution intent in that transaction (``intended_execution_id`` is set); call :meth:`execute`
        next, which runs it without another commit. Until then the intent is held by this driver only:
        another driver (or a restart) finds it recorded and never runs it.

        Raises :class:`ToolRequestInvalidError`/:class:`UnsafeArgumentError` for a request that does not
        fit its tool, :class:`ToolFailedError` for a program that cannot be found, and
        :class:`SecretLeakError` for a request carrying a loaded secret (nothing is recorded then).
        """
        if (working_directory is not None or derived is not None) and source != PIPELINE_SOURCE:
            raise InvalidValueError(kind="tool request",
                                    reason="only the pipeline chooses a working directory or a derived decision")
        worktree = self._worktree_of(task_id)
        request = bind_tool_request(tool, raw_args)
        pin = None
        if request.descriptor.runs_program:
            pin = resolve_executable_pin(request.argv()[0], worktree=worktree, search_path=self._search_path,
                                         digests=self._executables)
        values = _values_key(request)
        operation = self._describe(values, request, task_id, pin, working_directory)
        self._refuse_loaded_secrets(request)
        classification = self._classify(values, request, _worktree_facts(request, worktree))
        if not intend_if_allowed:
            submitted = _submitted(self._authority.record_request(
                operation=operation, classification=classification, source=source, idempotency_key=idempotency_key,
                derived=derived))
        else:
            view, intent = self._authority.record_request_with_intent(
                operation=operation, classification=classification, source=source, idempotency_key=idempotency_key,
                before_commit=lambda: self._inject(DriverFault.BEFORE_INTENT_COMMIT), derived=derived)
            if intent is None or intent.existing is not None:
                submitted = _submitted(view)  # nothing new intended: execute goes through the intent transaction
            else:
                with self._lock:
                    self._intended[view.request_id] = (intent, request)
                submitted = _submitted(view, intended_execution_id=intent.execution_id)
        self._observers.notify(ToolCallSubmitted(request=submitted, arguments=MappingProxyType(dict(raw_args)),
                                                 source=source, confinement=self._confinement.mode))
        return submitted

    def submit_and_execute(
        self, task_id: TaskId, tool: str, raw_args: Mapping[str, object], *, idempotency_key: str,
        source: str = "model",
    ) -> tuple[SubmittedRequest, ExecutionRecord | None]:
        """Submit with ``intend_if_allowed`` and, if the decision in force allows the request, execute it.

        Returns the request and its execution, or None for a request that waits for a person or was
        refused (nothing ran). A retry with the same key returns the recorded execution and runs nothing.
        Raises what :meth:`submit_tool_request` and :meth:`execute` raise.
        """
        submitted = self.submit_tool_request(task_id, tool, raw_args, idempotency_key=idempotency_key,
                                             source=source, intend_if_allowed=True)
        if submitted.outcome not in _ALLOWED:
            return submitted, None
        return submitted, self.execute(submitted.request_id)

    def pending_decisions(self, task_id: TaskId) -> list[SubmittedRequest]:
        """Requests of ``task_id`` waiting for allow-once, allow-for-task or deny, oldest first."""
        return [_submitted(view) for view in self._authority.pending_requests(task_id)]

    def read_request(self, request_id: str) -> SubmittedRequest:
        return _submitted(self._authority.read_request(request_id))

    def decide(
        self, request_id: str, decision: UserDecision, *, reason: str,
        deny: tuple[CapabilityNeed, ...] | None = None, decided_by: Decider = Decider.USER,
    ) -> SubmittedRequest:
        """Record a person's (or the headless policy's) answer to a pending request (one transaction). Once it
        committed, a person's new allowance is remembered as a reviewed command
        (:func:`~codeflux.coordinator.runs.reviewed_commands.remember_reviewed_operation`, its own transaction; a
        failure there is logged and the decision stands)."""
        reviewing = decided_by is Decider.USER and decision is not UserDecision.DENY
        before = self._authority.read_request(request_id).decision.decision_id if reviewing else None
        view = self._authority.record_user_decision(request_id, decision, reason=reason, decided_by=decided_by,
                                                    deny=deny)
        if reviewing and view.decision.decision_id != before:  # deciding again the same way records nothing new
            remember_reviewed_operation(self._db, view, decision)
        decided = _submitted(view)
        self._observers.notify(ToolCallDecided(request=decided))
        return decided

    # ─── execution ───────────────────────────────────────────────────────────────────────────────

    def execute(self, request_id: str) -> ExecutionRecord:
        """Run an allowed request once in its task's worker and return the stored execution.

        An intent this driver committed with the submission runs as it is; otherwise the intent
        transaction re-checks the request and commits the intent first."""
        record = self._execute(request_id)
        self._observers.notify(ToolCallRan(request_id=request_id, execution=record))
        return record

    def _execute(self, request_id: str) -> ExecutionRecord:
        with self._lock:
            held = self._intended.pop(request_id, None)
        bound: BoundToolRequest | None = None
        if held is not None:
            intent, bound = held
        else:
            intent = self._authority.record_execution_intent(
                request_id, before_commit=lambda: self._inject(DriverFault.BEFORE_INTENT_COMMIT))
        if intent.existing is not None:
            return _record(intent.existing)
        self._inject(DriverFault.AFTER_INTENT_COMMIT)
        try:
            outcome = self._run_in_worker(intent, bound)
        except BaseException:
            self._store(intent, ExecutionResultValues(
                state=ToolExecutionState.OUTCOME_UNKNOWN, failure_kind=FailureKind.INTERNAL_ERROR,
                message="the coordinator failed while the request was with the worker; the effect is unknown"))
            raise
        return self._store(intent, self._result_values(outcome))

    def read_result(self, request_id: str) -> ExecutionRecord | None:
        """The stored execution of ``request_id``, or None if it was never executed."""
        row = self._authority.read_execution(request_id)
        return None if row is None else _record(row)

    def cancel_running_commands(self) -> None:
        """Cancel every command this driver runs now or starts later (a second Ctrl-C of ``codeflux start``): the
        worker kills each one's process group and it is recorded ``cancelled`` — the same path a cancelled task's
        command takes; what it did before it was killed is not known, and the result says so."""
        self._stop_commands.set()

    def close(self) -> None:
        """Stop every worker this driver started (idempotent)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.stop()

    def __enter__(self) -> ToolDriver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ─── inner ───────────────────────────────────────────────────────────────────────────────────

    def _worktree_of(self, task_id: TaskId) -> Path:
        # A task's worktree never changes (a trigger refuses it), so it is read once per task.
        with self._lock:
            known = self._worktrees.get(task_id)
        if known is None:
            known = self._db.read(lambda view: require_task(view, task_id)).worktree
            with self._lock:
                self._worktrees[task_id] = known
        return known

    # Describing and classifying are pure functions of the bound request (and the task and pin, or the
    # path facts, which are computed afresh on every submission): an identical request is described and
    # classified once per driver. Keys carry each value's type (``_values_key``): True and 1 never meet.

    def _describe(self, values: _ValuesKey, request: BoundToolRequest, task_id: TaskId,
                  pin: ExecutablePin | None, working_directory: str | None) -> Operation:
        key = (values, task_id, pin, working_directory)
        with self._lock:
            known = self._operations.get(key)
        if known is not None:
            return known
        operation = describe_operation(request, task_id=task_id, executable=pin,
                                       working_directory=working_directory)
        with self._lock:
            if len(self._operations) >= _KEPT:
                self._operations.clear()
            self._operations[key] = operation
        return operation

    def _classify(self, values: _ValuesKey, request: BoundToolRequest, facts: WorktreeFacts) -> Classification:
        key = (values, facts)
        with self._lock:
            known = self._classifications.get(key)
        if known is not None:
            return known
        classification = classify_tool_request(request, facts=facts)
        with self._lock:
            if len(self._classifications) >= _KEPT:
                self._classifications.clear()
            self._classifications[key] = classification
        return classification

    def _inject(self, point: DriverFault) -> None:
        if self._fault is not None:
            self._fault(point)

    def _refuse_loaded_secrets(self, request: BoundToolRequest) -> None:
        for argument in request.arguments:
            values = argument.value if isinstance(argument.value, tuple) else (argument.value,)
            for value in values:
                if isinstance(value, str) and SecretKind.LOADED_SECRET in self._redactor.scan(value):
                    raise SecretLeakError(f"argument {argument.name} carries a loaded secret; the request was refused")

    @property
    def tools_directory(self) -> Path:
        """Where codeflux's check-tool overlays live (``<data>/tools``): shown read-only in every box."""
        return tools_directory(self._data_dir)

    @property
    def tool_source(self) -> ToolSource:
        return self._tool_source

    def task_temp_directory(self, task_id: TaskId) -> Path:
        """The host path of the task's ``TMPDIR`` (its worker's per-task temporary directory; may not exist yet)."""
        return task_temp_directory(self._state_dir / task_id.value)

    def _worker_for(self, task: TaskRow) -> WorkerHandle:
        with self._lock:
            if self._closed:
                raise WorkerClosedError()
            worker = self._workers.get(task.task_id)
            if worker is not None and worker.is_alive():
                return worker
            self._workers.pop(task.task_id, None)
        if worker is not None:
            worker.stop()
        tools = self.tools_directory
        tools.mkdir(mode=0o755, parents=True, exist_ok=True)  # shown read-only in the box; filled later
        started = WorkerHandle.start(task_id=task.task_id, worktree=task.worktree,
                                     state_dir=self._state_dir / task.task_id.value, base_commit=task.base_revision,
                                     base_environment=self._base_environment, repository_root=task.repository_root,
                                     data_dir=self._data_dir, confinement=self._confinement, tools=tools)
        with self._lock:
            racing = self._workers.get(task.task_id)
            keep = racing if racing is not None and racing.is_alive() and not self._closed else None
            if keep is None and not self._closed:
                self._workers[task.task_id] = started
        if keep is not None or self._closed:
            started.stop()  # closed meanwhile, or another thread started this task's worker first
            if keep is None:
                raise WorkerClosedError()
            return keep
        return started

    def _run_in_worker(
        self, intent: ExecutionIntent, bound: BoundToolRequest | None
    ) -> WorkerOutcome | ExecutionResultValues:
        # ``bound`` is the request this driver bound at submission and described as ``intent.operation``
        # (same tool and argument values); otherwise the stored operation is bound again.
        operation = intent.operation
        request = bound if bound is not None else bind_tool_request(operation.tool, dict(operation.arguments))
        execution = WorkerExecution.for_request(
            request_id=ToolRequestId.parse(intent.request_id), task_id=operation.task_id,
            operation_identity=intent.identity, request=request, executable=operation.executable,
            env_overrides=dict(operation.env), network_granted=intent.network_granted,
            working_directory=operation.cwd,
        )
        try:
            worker = self._worker_for(intent.task)
        except (WorkerStartError, WorkerClosedError) as error:
            return ExecutionResultValues(state=ToolExecutionState.FAILED, failure_kind=FailureKind.WORKER_UNAVAILABLE,
                                         message=str(error))
        live = LiveOutput(self._db, session_id=intent.task.session_id, request_id=intent.request_id,
                          execution_id=intent.execution_id)
        ended = threading.Event()
        watcher = threading.Thread(target=self._cancel_when_the_task_ends, args=(intent, worker, ended),
                                   name=f"cancel-watch-{intent.request_id}", daemon=True)
        watcher.start()
        try:
            return worker.execute(execution, on_output=live)
        finally:
            ended.set()
            watcher.join()
            live.close()  # its events commit before the result's

    def _cancel_when_the_task_ends(self, intent: ExecutionIntent, worker: WorkerHandle,
                                   ended: threading.Event) -> None:
        """While the command runs, read the task's state every :data:`CANCEL_POLL_S`; once the task has ended
        (``task cancel``, possibly from another process) — or :meth:`cancel_running_commands` was called — ask the
        worker to cancel the request: it kills the command's process group and reports it cancelled (see
        :mod:`~codeflux.coordinator.tasks.cancelled_runs`)."""
        task_id = intent.task.task_id
        while not ended.wait(CANCEL_POLL_S):
            if self._stop_commands.is_set():
                worker.cancel(ToolRequestId.parse(intent.request_id))
                return
            try:
                state = self._db.read(lambda view: require_task(view, task_id)).state
            except Exception:  # noqa: S112 - a failed read (a busy or closing store) is tried again next poll
                continue
            if is_terminal(state):
                worker.cancel(ToolRequestId.parse(intent.request_id))
                return

    def _result_values(self, outcome: WorkerOutcome | ExecutionResultValues) -> ExecutionResultValues:
        if isinstance(outcome, ExecutionResultValues):
            return replace(outcome, message=_cap(self._redactor.redact(outcome.message or ""),
                                                 STORED_MESSAGE_CHARS)[0])
        # The wire layer already redacted with the process-wide redactor; redacting again is idempotent
        # and keeps this boundary correct on its own. Redact first, then cap: a cut must never split a
        # secret before it could be recognised.
        redact = self._redactor.redact
        # Content keeps its head, output its head and tail; either cut says so in the text itself.
        message, _ = _cap(_redacted(redact, outcome.message), STORED_MESSAGE_CHARS)
        content, content_cut = keep_head(_redacted(redact, outcome.content), STORED_CONTENT_CHARS,
                                         hint="the stored result was cut")
        stdout, stdout_cut = keep_head_and_tail(_redacted(redact, outcome.stdout), STORED_STREAM_CHARS)
        stderr, stderr_cut = keep_head_and_tail(_redacted(redact, outcome.stderr), STORED_STREAM_CHARS)
        return ExecutionResultValues(
            state=ToolExecutionState(outcome.state.value),
            failure_kind=outcome.failure_kind,
            message=message, exit_code=outcome.exit_code, content=content, stdout=stdout, stderr=stderr,
            content_truncated=outcome.content_truncated or content_cut,
            stdout_truncated=outcome.stdout_truncated or stdout_cut,
            stderr_truncated=outcome.stderr_truncated or stderr_cut,
            content_sha256=outcome.content_sha256, duration_ms=max(outcome.duration_ms, 0),
            confinement=self._ran_in(outcome),
        )

    def _ran_in(self, outcome: WorkerOutcome) -> ConfinementMode | None:
        """The box the worker reported; for an in-flight request whose worker was lost, the box it was
        started in (the request may have run there); None when nothing reached a worker."""
        if outcome.confinement is not None:
            return outcome.confinement
        if outcome.state is ExecutionState.OUTCOME_UNKNOWN:
            return self._confinement.mode
        return None

    @property
    def database(self) -> Database:
        """The database this driver records in (a run makes its writes patient on it)."""
        return self._db

    @property
    def confinement(self) -> ConfinementChoice:
        """The box every process of this driver's workers runs in."""
        return self._confinement

    def _store(self, intent: ExecutionIntent, values: ExecutionResultValues) -> ExecutionRecord:
        """Commit the result. While another process holds the write lock the result stays in memory and the
        write waits for up to the write patience (the run's, else :func:`~codeflux.store.database.write_patience_s`
        read at construction: 60 s) even outside a run; then a clear :class:`WriteLockHeldError` naming the
        execution, and the intent without a result is reconciled ``outcome-unknown`` at the next start."""
        patience = self._db.write_patience or self._write_patience
        try:
            with self._db.patient_writes(patience):
                row = self._authority.record_execution_result(task=intent.task, execution_id=intent.execution_id,
                                                              result=values)
        except WriteLockHeldError as error:
            raise WriteLockHeldError(waited_seconds=error.waited_seconds, detail=(
                f"the result of execution {intent.execution_id} ({values.state.value}) could not be saved; it is "
                "recorded outcome-unknown at the next start")) from error
        return _record(row)


def reconcile_interrupted_executions(db: Database) -> list[str]:
    """Mark executions left ``intended``/``running`` by a stopped coordinator ``outcome-unknown``; never
    re-run them. Call once at startup, before any driver executes. Returns the execution ids."""
    return AuthorityService(db).reconcile_interrupted_executions()
