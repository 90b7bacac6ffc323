"""Fault injection with real processes: a child runs a whole task (the scripted provider, not a model, behind
the real gateway; real workers; a real repository) and is killed with SIGKILL mid model call, after an
execution's intent commit before the worker is asked, mid command, and mid accept (after the change landed
on the user's branch, before the database commit). On restart the real ``integrity-check`` passes, every
event committed before the kill is still there, the interrupted call/command is ambiguous, the command ran
at most once (it appends to a counter file), and the recommended action is the right one.

``test_recovery.py`` kills bare driver/gateway calls; these kill a task run and its review."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.recovery import RecoveryService, exclusive_startup_lock
from codeflux.coordinator.tasks.service import Actor
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.domain.errors import BudgetDecisionNeededError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message
from codeflux.domain.pipeline import StageOutcome
from codeflux.domain.recovery import EffectKind, EffectOutcome, RecoveryAction
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.program import pytest_argv
from codeflux.store import checkpoints as checkpoint_rows
from codeflux.store.checkpoints import CheckpointTrigger
from codeflux.store.database import Database, ReadView
from codeflux.store.events import SYSTEM_SESSION_ID, JournalEvent, read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.task_records import require_task_record
from tests.fixtures.cli import run_codeflux
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.task_runs import Harness, done, implementing_turns, make_harness, scripted_gateway
from tests.fixtures.tasks import keys

REPO = Path(__file__).resolve().parents[2]
COUNTED = ["sh", "-c", "echo ran >> counter.log; exec sleep 60"]  # counter.log is git-ignored (*.log)

CHILD = """
import json, sys, time
from pathlib import Path
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, run_task
from codeflux.coordinator.tasks.service import TaskService
from codeflux.coordinator.runs.tool_driver import DriverFault, ToolDriver
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message
from codeflux.gitwork.repository import open_repository
from codeflux.providers.scripted import ScriptedAdapter
from codeflux.store.location import DataLocation
from codeflux.store.task_records import require_task_record
from codeflux.store.opening import open_store
from tests.fixtures.task_runs import done, implementing_turns, run_command, scripted_gateway

data_dir, worktrees, state_dir, task, mode, marker, repo, extra = sys.argv[1:9]
location = DataLocation(directory=Path(data_dir))


def hang():
    Path(marker).write_text("here")
    time.sleep(120)


class HangingAdapter(ScriptedAdapter):
    def complete(self, request, *, on_text=None):
        if mode == "mid-model" and len(self.requests) == 2:
            hang()
        return super().complete(request, on_text=on_text)


intents = []


def fault(point):
    if mode == "after-intent" and point is DriverFault.AFTER_INTENT_COMMIT:
        intents.append(point)
        if len(intents) == 3:  # write, write, then the command
            hang()


with shared_running_lock(location):
    db = open_store(location, create=False, migrate=False)
    tasks = TaskService(db, worktrees_root=Path(worktrees))
    if mode == "mid-accept":
        import codeflux.coordinator.tasks.review as review
        landing = review.land_prepared

        def land_then_hang(*args, **kwargs):
            landed = landing(*args, **kwargs)
            hang()
            return landed

        review.land_prepared = land_then_hang
        review.ReviewService(db).accept_task(TaskId.parse(task), reviewed_identity=extra)
        raise SystemExit(0)
    argv = json.loads(extra)
    turns = [*implementing_turns(), run_command(argv, "c1"), done()]
    scripted_gateway(db, turns)  # prices
    route = ModelRoute(provider="scripted", adapter=HangingAdapter(turns), cheap_model="scripted-cheap",
                       capable_model="scripted-capable")
    with ToolDriver(db, state_dir=Path(state_dir), fault=fault) as driver:
        run_task(TaskId.parse(task), gateway=ModelGateway(db, [route]), driver=driver, tasks=tasks,
                 repo_snapshot=open_repository(Path(repo)), position=LadderPosition.start(), limits=LoopLimits(),
                 headless_policy=HeadlessPolicy.allowing([PreapprovedOperation.command(argv)]))
"""


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def start_child(harness: Harness, tmp_path: Path, data_location: DataLocation, task_id: TaskId, *, mode: str,
                extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    marker = tmp_path / f"{mode}.marker"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = [str(data_location.directory), str(tmp_path / "worktrees"), str(tmp_path / "child-state"), task_id.value,
            mode, str(marker), str(harness.repo), extra]
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), *args], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return child, marker


def wait_for(condition: Callable[[], bool], child: subprocess.Popen[bytes], *, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if child.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the child never got there: {child.stderr.read() if child.stderr else b''!r}")
        time.sleep(0.02)


def kill(child: subprocess.Popen[bytes], worktree: Path | None) -> None:
    """SIGKILL the child's group; then no process of it may still work under ``worktree``."""
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    if child.stderr is not None:
        child.stderr.close()
    if worktree is None:
        return
    assert wait_until_no_process_works_under(worktree, timeout_s=15) == []




def journal(db: Database, task_id: TaskId) -> set[tuple[str, int, str]]:
    """Every committed event of the task's session and the system session, as (session, sequence, kind)."""
    session = db.read(lambda view: require_task_record(view, task_id)).session_id
    found: set[tuple[str, int, str]] = set()
    for session_id in (session, SYSTEM_SESSION_ID):
        after = 0
        while page := db.read(partial(_page, session_id=session_id, after=after)):
            found |= {(e.session_id, e.sequence, e.kind) for e in page}
            after = page[-1].sequence
    return found


def journal_events(db: Database, task_id: TaskId) -> list[JournalEvent]:
    """The task session's committed events, oldest first."""
    session = db.read(lambda view: require_task_record(view, task_id)).session_id
    return db.read(partial(_page, session_id=session, after=0))


def _page(view: ReadView, *, session_id: str, after: int) -> list[JournalEvent]:
    return read_events_after(view, session_id=session_id, after_sequence=after, limit=1000)


def restart(db: Database, location: DataLocation, task_id: TaskId,
            before: set[tuple[str, int, str]], *, interrupted: bool = True) -> RecoveryService:
    """The real integrity check, then startup recovery; every event committed before the kill survives."""
    checked = run_codeflux("integrity-check", data_dir=location.directory)
    assert checked.code == 0, checked.out + checked.err
    with exclusive_startup_lock(location) as alone:
        assert alone
        service = RecoveryService(db)
        service.recover_at_startup()
    after = journal(db, task_id)
    assert before <= after  # nothing committed is lost
    assert (len(after) > len(before)) is interrupted  # an interrupted task's recovery is recorded on top
    assert run_codeflux("integrity-check", data_dir=location.directory).code == 0
    return service


def counter_lines(worktree: Path) -> int:
    counter = worktree / "counter.log"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.mark.parametrize(("mode", "kind", "outcome", "ran", "recommended", "checkpoint"), [
    ("mid-model", EffectKind.MODEL_REQUEST, EffectOutcome.DID_NOT_HAPPEN, 0, RecoveryAction.SAFE_RESUME,
     CheckpointTrigger.MATERIAL_EDIT),
    ("after-intent", EffectKind.TOOL_EXECUTION, EffectOutcome.DID_NOT_HAPPEN, 0, RecoveryAction.SAFE_RESUME,
     CheckpointTrigger.BEFORE_RISKY_ACTION),
    ("mid-command", EffectKind.TOOL_EXECUTION, EffectOutcome.HAPPENED, 1, RecoveryAction.RECONCILE,
     CheckpointTrigger.BEFORE_RISKY_ACTION),
])
def test_a_task_run_killed_mid_effect_recovers_with_the_effect_ambiguous_and_never_repeated(  # noqa: PLR0917 (parametrized)
    harness: Harness, db: Database, data_location: DataLocation, tmp_path: Path, mode: str, kind: EffectKind,
    outcome: EffectOutcome, ran: int, recommended: RecoveryAction, checkpoint: CheckpointTrigger,
) -> None:
    task_id = harness.ready_task()
    worktree = harness.tasks.show(task_id).task.worktree
    child, marker = start_child(harness, tmp_path, data_location, task_id, mode=mode, extra=_json(COUNTED))
    try:
        wait_for(marker.exists if mode != "mid-command" else (worktree / "counter.log").exists, child)
        before = journal(db, task_id)
    finally:
        kill(child, worktree)

    recovery = restart(db, data_location, task_id, before)

    view = recovery.assess(task_id)
    assert view.task.state is TaskState.RECOVERY_REQUIRED
    [effect] = view.ambiguous
    assert effect.kind is kind and effect.outcome is None
    assert view.recommendation.allowed == frozenset()
    assert view.last_checkpoint is not None and view.last_checkpoint.trigger is checkpoint
    assert counter_lines(worktree) == ran

    recovery.record_outcome(task_id, item_id=effect.item_id, outcome=outcome)
    after = recovery.assess(task_id)
    assert after.recommendation.recommended is recommended, after.recommendation.why
    action = recovery.safe_resume if recommended is RecoveryAction.SAFE_RESUME else recovery.reconcile
    assert action(task_id).state is TaskState.PAUSED
    assert counter_lines(worktree) == ran  # never run again by codeflux
    assert run_codeflux("integrity-check", data_dir=data_location.directory).code == 0

    # The ordinary resume: the next attempt continues the kept conversation (the writes of the killed run
    # count as done, a turn the kill left unanswered is answered from its recorded request) and the
    # interrupted effect is still never run again.
    resumed, sent = _resume(harness, task_id)
    if kind is EffectKind.MODEL_REQUEST:
        # the interrupted call's reserved bound was charged as unknown: the resumed run stops honestly
        # (paused, its attempt finished) until a person acknowledges the charge; then it goes on
        assert resumed.kind is RunOutcomeKind.DECISION_NEEDED, resumed.reason
        assert isinstance(resumed.error, BudgetDecisionNeededError) and sent == []
        assert harness.tasks.show(task_id).task.state is TaskState.PAUSED
        assert len(harness.tasks.ledger(task_id, resumed.attempt)) == 37
        budgets = BudgetService(db)
        budgets.acknowledge(task_id, expected_revision=budgets.revision_of(task_id) or 0)
        resumed, sent = _resume(harness, task_id)
    assert resumed.kind is RunOutcomeKind.AWAITING_REVIEW, resumed.reason
    assert len(sent) >= 5 and "Make add() handle negative numbers" in sent[0].text
    assert counter_lines(worktree) == ran
    assert len(harness.tasks.ledger(task_id, 1)) == 37 and resumed.attempt >= 2
    assert run_codeflux("integrity-check", data_dir=data_location.directory).code == 0


def _resume(harness: Harness, task_id: TaskId) -> tuple[RunOutcome, list[Message]]:
    task = harness.tasks.show(task_id).task
    harness.tasks.transition(task_id, TaskState.READY, expected_revision=task.revision, reason="resumed",
                             actor=Actor.USER, idempotency_key=keys())
    gateway, adapter = scripted_gateway(harness.db, [done()])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=policy)
    return outcome, list(adapter.requests[0].messages) if adapter.requests else []


def _json(value: object) -> str:
    return json.dumps(value)


def test_a_child_killed_mid_accept_after_landing_is_finished_by_startup_recovery_without_landing_twice(
    harness: Harness, db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    task_id = harness.ready_task()
    gateway, _ = scripted_gateway(db, [*implementing_turns(), done()])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    ran = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                   repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                   headless_policy=policy)
    assert ran.kind is RunOutcomeKind.AWAITING_REVIEW, ran.reason
    binding = task_worktree_binding(harness.tasks.show(task_id).task)
    assert binding is not None
    identity = diff_against_base(binding).identity

    child, marker = start_child(harness, tmp_path, data_location, task_id, mode="mid-accept", extra=identity)
    try:
        wait_for(marker.exists, child)
        before = journal(db, task_id)
    finally:
        kill(child, None)  # this test's own worker (it ran the task) still works in the worktree
    landed = _git(harness.repo, "rev-parse", "HEAD")
    commits = _git(harness.repo, "rev-list", "--count", "HEAD")

    recovery = restart(db, data_location, task_id, before)  # the landing's resolution is recorded on top

    task = harness.tasks.show(task_id).task
    assert task.state is TaskState.COMPLETED  # the branch had moved: recovery finished the accept from its intent
    assert recovery.tasks_needing_recovery() == []
    resolved = [e for e in journal_events(db, task_id) if e.kind == "accept-resolved"]
    assert [(e.payload["resolution"], e.payload["by"]) for e in resolved] == [("finished", "recovery")]
    assert (_git(harness.repo, "rev-parse", "HEAD"), _git(harness.repo, "rev-list", "--count", "HEAD")) == (
        landed, commits)  # landed once
    assert _git(harness.repo, "status", "--porcelain") == ""
    assert str(binding.path) not in _git(harness.repo, "worktree", "list")
    delivery = db.read(lambda view: checkpoint_rows.delivery_of_attempt(view, task_id, 1))
    assert delivery is not None and delivery.deliver.outcome is StageOutcome.SATISFIED
    assert delivery.landed_commit == landed
    assert run_codeflux("integrity-check", data_dir=data_location.directory).code == 0
    _git(harness.repo, "fsck")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()
