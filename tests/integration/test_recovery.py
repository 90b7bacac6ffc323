"""Crash recovery with real processes: a child runs a task and is killed (SIGKILL) mid command and mid model
call; on the next startup the task is recovery-required with each interrupted effect listed as ambiguous,
nothing runs again, and only recording what happened unblocks the recovery actions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keyring.backend
import pytest

from codeflux.authority.decide import UserDecision
from codeflux.coordinator.doctor import CheckStatus, run_doctor
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.ledger import Admission, BudgetLedger
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.tasks.recovery import RecoveryService, exclusive_startup_lock
from codeflux.coordinator.tasks.service import Actor, TaskService
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.errors import OutcomeUnresolvedError
from codeflux.domain.ids import TaskId
from codeflux.domain.money import USD, Money
from codeflux.domain.providers import ProviderName
from codeflux.domain.recovery import EffectKind, EffectOutcome, RecoveryAction, WorktreeCondition
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from codeflux.store.model_requests import ModelRequestPlan, insert_model_request
from codeflux.store.task_records import transitions_of_task
from tests.fixtures.cli import run_codeflux
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.provider_servers import ProviderServer, Reply, a_test_key
from tests.fixtures.reviews import a_running_task_with_worktree
from tests.fixtures.tasks import a_draft, a_repository

REPO = Path(__file__).resolve().parents[2]
APPEND_THEN_WAIT = ["sh", "-c", "echo $$ >> marker.log; exec sleep 30"]

TOOL_CHILD = """
import sys, time
from pathlib import Path
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

location = DataLocation(directory=Path(sys.argv[1]))
with shared_running_lock(location):
    db = open_store(location, create=False, migrate=False)
    ToolDriver(db, state_dir=Path(sys.argv[2])).execute(sys.argv[3])
"""

MODEL_CHILD = """
import sys
from pathlib import Path
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

location = DataLocation(directory=Path(sys.argv[1]))
with shared_running_lock(location):
    db = open_store(location, create=False, migrate=False)
    route = ModelRoute(provider="anthropic", adapter=AnthropicAdapter(base_url=sys.argv[2]),
                       cheap_model="claude-sonnet-4-5", capable_model="claude-opus-4-5")
    request = ModelRequest(model="m", system="", messages=(Message.user_text("hello"),), max_output_tokens=64)
    ModelGateway(db, [route]).call(TaskId.parse(sys.argv[3]), request, position=LadderPosition.start(),
                                   idempotency_key="c1")
"""


def start_child(code: str, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(condition: object, child: subprocess.Popen[bytes], *, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if child.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the child never got there: {child.stderr.read() if child.stderr else b''!r}")
        time.sleep(0.02)


def kill(child: subprocess.Popen[bytes]) -> None:
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    if child.stderr is not None:
        child.stderr.close()




def startup(db: Database, location: DataLocation) -> RecoveryService:
    with exclusive_startup_lock(location) as alone:
        assert alone
        service = RecoveryService(db)
        service.recover_at_startup()
    return service


@pytest.fixture
def tasks(db: Database, data_location: DataLocation) -> TaskService:
    return TaskService(db, worktrees_root=data_location.worktrees)


def test_a_child_killed_mid_command_leaves_the_task_recovery_required_and_the_command_is_never_rerun(
    db: Database, data_location: DataLocation, tasks: TaskService, tmp_path: Path
) -> None:
    binding = a_running_task_with_worktree(tasks, a_repository(tmp_path / "git"), {"pkg/new.py": "X = 1\n"})
    marker = binding.path / "marker.log"
    with ToolDriver(db, state_dir=tmp_path / "parent-state") as driver:
        request = driver.submit_tool_request(binding.task_id, "run_command", {"argv": APPEND_THEN_WAIT},
                                             idempotency_key="cmd-1", source="test")
        driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="once")

    child = start_child(TOOL_CHILD, str(data_location.directory), str(tmp_path / "child-state"), request.request_id)
    try:
        wait_for(marker.exists, child)
        with exclusive_startup_lock(data_location) as alone:
            assert not alone  # a live run holds the shared lock: startup must not mark it interrupted
    finally:
        kill(child)
    assert wait_until_no_process_works_under(binding.path, timeout_s=15) == []

    recovery = startup(db, data_location)

    view = recovery.assess(binding.task_id)
    assert view.task.state is TaskState.RECOVERY_REQUIRED
    assert view.known.interrupted_in is TaskState.RUNNING and view.known.worktree is WorktreeCondition.CHANGED
    assert view.known.plan_revision == 1 and view.known.attempt == 1
    [effect] = view.ambiguous
    assert effect.kind is EffectKind.TOOL_EXECUTION and effect.outcome is None
    assert view.recommendation.allowed == frozenset()
    last = db.read(lambda v: transitions_of_task(v, binding.task_id))[-1]
    assert (last.from_state, last.to_state, last.actor) == (TaskState.RUNNING, TaskState.RECOVERY_REQUIRED, "system")
    [check] = [c for c in run_doctor(data_location).checks if c.id == "recovery"]
    assert check.status is CheckStatus.DEGRADED and check.summary.startswith("1 interrupted task(s)")
    assert check.remediation is not None and "codeflux task recovery" in check.remediation
    listed = run_codeflux("task", "recovery", data_dir=data_location.directory)
    assert effect.item_id in listed.out and "UNRESOLVED" in listed.out
    shown = run_codeflux("task", "show", binding.task_id.value, data_dir=data_location.directory)
    assert "  state        recovery-required" in shown.out and "  ambiguous" in shown.out, shown.out + shown.err
    assert f"{effect.item_id}  tool-execution" in shown.out and "UNRESOLVED" in shown.out
    assert run_codeflux("task", "recover", binding.task_id.value, "--action", "safe-resume",
                        data_dir=data_location.directory).code == 3
    with pytest.raises(OutcomeUnresolvedError):
        recovery.safe_resume(binding.task_id)

    recorded = run_codeflux("task", "record-outcome", binding.task_id.value, "--item", effect.item_id, "--happened",
                            data_dir=data_location.directory)
    assert recorded.code == 0, recorded.err
    after = recovery.assess(binding.task_id)
    assert after.recommendation.recommended is RecoveryAction.RECONCILE
    assert recovery.reconcile(binding.task_id).state is TaskState.PAUSED
    assert len(marker.read_text().splitlines()) == 1  # ran once, before the kill; never again
    assert startup(db, data_location).assess(binding.task_id).task.state is TaskState.PAUSED
    [check] = [c for c in run_doctor(data_location).checks if c.id == "recovery"]
    assert (check.status, check.summary) == (CheckStatus.OK, "0")


@pytest.mark.keyring
def test_a_child_killed_mid_model_call_lists_the_call_as_ambiguous_and_never_sends_it_again(
    db: Database, data_location: DataLocation, tasks: TaskService, tmp_path: Path,
    secret_service: keyring.backend.KeyringBackend,
) -> None:
    store_provider_key(ProviderName.ANTHROPIC, Secret(a_test_key()))
    binding = a_running_task_with_worktree(tasks, a_repository(tmp_path / "git"), {})
    task_id: TaskId = binding.task_id
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=1_000, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    with ProviderServer() as server:
        approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url + "/")
        server.enqueue(Reply(headers=(("content-type", "application/json"),), chunks=(b"{}",), delay_s=5.0))
        child = start_child(MODEL_CHILD, str(data_location.directory), server.base_url, task_id.value)
        try:
            wait_for(lambda: bool(server.requests), child)
        finally:
            kill(child)

        recovery = startup(db, data_location)
        view = recovery.assess(task_id)
        assert view.task.state is TaskState.RECOVERY_REQUIRED
        assert view.known.worktree is WorktreeCondition.AT_BASE
        [effect] = view.ambiguous
        assert effect.kind is EffectKind.MODEL_REQUEST and "anthropic" in effect.summary
        with pytest.raises(OutcomeUnresolvedError):
            recovery.abandon(task_id)

        recovery.record_outcome(task_id, item_id=effect.item_id, outcome=EffectOutcome.DID_NOT_HAPPEN)
        assert recovery.assess(task_id).recommendation.recommended is RecoveryAction.SAFE_RESUME
        assert recovery.safe_resume(task_id).state is TaskState.PAUSED
        assert len(server.requests) == 1


def test_a_task_waiting_for_its_next_plan_draft_is_not_interrupted_and_one_that_was_drafting_is(
    db: Database, data_location: DataLocation, tasks: TaskService, tmp_path: Path
) -> None:
    """Found with the one call path: after `task send-back` a task rests in `forecasting` until the next draft,
    and the next command's startup recovery used to mark it recovery-required ("interrupted while
    forecasting") although nothing was under way. A task whose plan call was in flight is still marked."""
    waiting = a_draft(tasks, a_repository(tmp_path / "one")).task_id
    drafting = a_draft(tasks, a_repository(tmp_path / "two")).task_id
    for task_id in (waiting, drafting):
        tasks.transition(task_id, TaskState.FORECASTING, expected_revision=0, reason="planning", actor=Actor.SYSTEM,
                         idempotency_key=f"plan-{task_id}")
    plan = ModelRequestPlan(
        request_id="mreq_" + "1" * 32, task_id=drafting, idempotency_key="draft-1", request_sha256="0" * 64,
        provider="scripted", base_url=None, model="scripted-cheap", rung="cheap:low", price_snapshot_id=None,
        currency=USD, reserved_minor=10, reserved_reason=None, reserved_tokens=10, max_output_tokens=100)
    BudgetService(db).set_budget(drafting, hard_limit=Money(minor=100, currency=USD), expected_revision=None,
                                 idempotency_key="budget-drafting")

    def planned(tx: Transaction) -> None:  # the plan call the stop interrupted, as the gateway records it
        ledger = BudgetLedger()
        admission = ledger.check(tx, drafting, bound=Money(minor=10, currency=USD), tokens=10)
        assert isinstance(admission, Admission)
        insert_model_request(tx, plan, at_us=1)
        ledger.reserve(tx, admission, request_id=plan.request_id)

    db.write(planned)

    recovery = startup(db, data_location)

    assert tasks.show(waiting).task.state is TaskState.FORECASTING
    assert tasks.show(drafting).task.state is TaskState.RECOVERY_REQUIRED
    assert recovery.assess(drafting).known.interrupted_in == "forecasting"
