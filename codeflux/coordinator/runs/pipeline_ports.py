"""The coordinator's side of the pipeline ports: check commands through the tool driver, acceptance.

:class:`DriverCheckCommands` runs a check command (the integration tests) as a ``run_command`` request
of the task with source ``pipeline``, through the authority engine, in the task's worker. It never asks:
the runner settles any decision before validation starts (a person, or the headless policy), and a
request still pending or refused is reported as a refusal naming its cause, so the stage is ``blocked``
and nothing ran. The
request is submitted under a key derived from (task, attempt, argv), so the runner's pre-flight and the
stage's execution are the same request and an allow-once approval covers exactly that execution.
"""

from __future__ import annotations

import hashlib
import shlex
import threading
from pathlib import Path

from codeflux.authority.decide import Decider, DecisionOutcome
from codeflux.authority.service import DerivedAllowance
from codeflux.coordinator.runs.tool_driver import PIPELINE_SOURCE, SubmittedRequest, ToolDriver
from codeflux.domain.errors import AuthorityRefusedError, ToolFailedError
from codeflux.domain.ids import TaskId
from codeflux.domain.tools import ToolName
from codeflux.pipeline.ports import AcceptanceRecord, CheckCommandRun
from codeflux.pipeline.tool_overlay import ToolSource

__all__ = ["DriverCheckCommands", "NoAcceptanceYet", "check_request_key", "submit_check_command"]

# A check command is the pipeline's own request (not the model's, not a person's): recorded as such
# (PIPELINE_SOURCE), so what asked for it is never misattributed. Its authority is settled like any other.


def check_request_key(task_id: TaskId, attempt: int, argv: tuple[str, ...], working_directory: str | None = None
                      ) -> str:
    digest = hashlib.sha256("\x00".join(argv).encode()).hexdigest()[:32]
    where = "" if working_directory is None else ":" + hashlib.sha256(working_directory.encode()).hexdigest()[:16]
    return f"check:{task_id.value}:{attempt}:{digest}{where}"


def submit_check_command(driver: ToolDriver, task_id: TaskId, argv: tuple[str, ...], *,
                         attempt: int, intend_if_allowed: bool = False,
                         working_directory: str | None = None, derived: DerivedAllowance | None = None
                         ) -> SubmittedRequest:
    """Record (or find again) the check command's request; raises :class:`ToolFailedError` when the
    program cannot be found. ``intend_if_allowed`` (only where it is executed right away) commits the
    intent with a request recorded now whose first decision allows it — see
    :meth:`ToolDriver.submit_tool_request`; the runner's pre-flight records without an intent."""
    return driver.submit_tool_request(task_id, ToolName.RUN_COMMAND.value, {"argv": list(argv)},
                                      idempotency_key=check_request_key(task_id, attempt, argv, working_directory),
                                      source=PIPELINE_SOURCE, intend_if_allowed=intend_if_allowed,
                                      working_directory=working_directory, derived=derived)


_ALLOWED = frozenset({DecisionOutcome.ALLOWED_ONCE, DecisionOutcome.ALLOWED_FOR_TASK})


def _not_run(refusal: str, request_id: str | None = None) -> CheckCommandRun:
    return CheckCommandRun(request_id=request_id, state="not-run", exit_code=None, stdout="", stderr="",
                           refusal=refusal)


class DriverCheckCommands:
    """A :class:`~codeflux.pipeline.ports.CheckCommandPort` over a :class:`ToolDriver`; ``tool_source``: where
    this run's checks may install a missing check tool from, when not the driver's (a headless run's)."""

    def __init__(self, driver: ToolDriver, *, tool_source: ToolSource | None = None) -> None:
        self._driver = driver
        self._tool_source = tool_source
        self._guard = threading.Lock()
        self._running: dict[str, threading.Lock] = {}

    def temp_directory(self, task_id: TaskId) -> Path:
        return self._driver.task_temp_directory(task_id)

    def tools_directory(self) -> Path:
        return self._driver.tools_directory

    def tool_source(self) -> ToolSource | None:
        return self._tool_source or self._driver.tool_source

    def run_check_command(self, task_id: TaskId, argv: tuple[str, ...], *, attempt: int,
                          working_directory: str | None = None,
                          covered_by: tuple[str, ...] | None = None, own_decision: bool = False) -> CheckCommandRun:
        # stages may run side by side (codeflux.pipeline.concurrency): the same check (one request key) is never
        # executed twice at once — a second caller waits, then its submission finds the first's execution
        key = check_request_key(task_id, attempt, argv, working_directory)
        with self._guard:
            lock = self._running.setdefault(key, threading.Lock())
        with lock:
            return self._run_check_command(task_id, argv, attempt=attempt, working_directory=working_directory,
                                           covered_by=covered_by, own_decision=own_decision)

    def _run_check_command(self, task_id: TaskId, argv: tuple[str, ...], *, attempt: int,
                           working_directory: str | None, covered_by: tuple[str, ...] | None,
                           own_decision: bool) -> CheckCommandRun:
        try:
            derived = None
            if (working_directory is not None or covered_by is not None) and not own_decision:
                root = submit_check_command(self._driver, task_id, covered_by or argv, attempt=attempt)
                if root.outcome not in _ALLOWED:
                    return _not_run(f"the check it follows ({shlex.join((covered_by or argv)[:3])} …) was not "
                                    f"allowed in the worktree ({root.outcome})", root.request_id)
                derived = _derived_from(root, working_directory, same_argv=covered_by is None)
            submitted = submit_check_command(self._driver, task_id, argv, attempt=attempt, intend_if_allowed=True,
                                             working_directory=working_directory, derived=derived)
        except ToolFailedError as error:
            return _not_run(f"{argv[0]} cannot run ({error.failure_kind}): {error}")
        outcome = submitted.outcome
        decision = submitted.decision
        if outcome is DecisionOutcome.PENDING:
            return _not_run(f"request {submitted.request_id} still waits for a decision", submitted.request_id)
        if outcome in (DecisionOutcome.DENIED, DecisionOutcome.REFUSED_DENIED_CAPABILITY,
                       DecisionOutcome.REFUSED_INACTIVE_TASK):
            return _not_run(f"{outcome} by {decision.decided_by}: {decision.reason}", submitted.request_id)
        try:
            record = self._driver.execute(submitted.request_id)
        except AuthorityRefusedError as error:
            return _not_run(f"refused at execution: {error}", submitted.request_id)
        return CheckCommandRun(request_id=submitted.request_id, state=record.state.value, exit_code=record.exit_code,
                               stdout=record.stdout or "", stderr=record.stderr or "")


def _derived_from(root: SubmittedRequest, working_directory: str | None, *, same_argv: bool) -> DerivedAllowance:
    """A check that follows another's decision — the base run of a check (the same argv and program, started
    in ``working_directory``), or another check by the test command's interpreter (the import check, the wheel
    build, stage 16's atom timing) — is allowed once by the decision on ``root`` this attempt (allowed), by the
    same decider, with a reason naming it; recorded with the request, so no person is ever shown a card for it."""
    decider = Decider.HEADLESS_POLICY if root.decision.decided_by is Decider.HEADLESS_POLICY else Decider.USER
    what = ("the base-revision run of" if same_argv else
            "a check with the same interpreter (the import check, wheel build, atom timing, an atom stage's tool "
            "probe, coverage run, argument recording, stub, seeded or mutation run, or stage 31's hostile-input run "
            "of that command) that follows")
    where = f", started in {working_directory}" if working_directory else ""
    return DerivedAllowance(decided_by=decider, reason=(
        f"{what} request {root.request_id} ({root.outcome}, decided by {root.decision.decided_by}){where}"))


class NoAcceptanceYet:
    """An :class:`~codeflux.pipeline.ports.AcceptancePort` for a run that has not been reviewed."""

    def acceptance_of(self, task_id: TaskId) -> AcceptanceRecord | None:
        return None
