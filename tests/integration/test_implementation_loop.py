"""The implementation loop with the scripted provider (not a model), the real gateway, the real authority
engine and real worker processes: pauses for approvals and resumes after the decision, stops on a stall,
counts a step done only after a write, and a headless run turns a prompt into a recorded denial."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.authority.decide import UserDecision
from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.coordinator.runs.loop import ImplementationLoop, LoopLimits, LoopOutcomeKind
from codeflux.coordinator.runs.runner import (
    HeadlessPolicy,
    PreapprovedOperation,
    RunOutcome,
    RunOutcomeKind,
    resume_run,
    run_task,
)
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.errors import StalledError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Ladder, LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.plans import Plan
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedTurn
from codeflux.store.database import Database
from tests.fixtures.task_runs import (
    Harness,
    a_plan_whose_check_is_not_the_test_command,
    a_plan_with_two_steps,
    done,
    edit_file,
    implementing_turns,
    make_harness,
    run_command,
    said,
    scripted_gateway,
)
from tests.fixtures.tasks import keys

ONE_RUNG = LadderPosition.start(Ladder.parse(["cheap:low"]))


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def start(harness: Harness, turns: list[ScriptedTurn], *, position: LadderPosition = ONE_RUNG,
          policy: HeadlessPolicy | None = None, limits: LoopLimits | None = None,
          plan: Plan | None = None) -> tuple[TaskId, RunOutcome]:
    task_id = harness.ready_task(plan=plan)
    gateway, _ = scripted_gateway(harness.db, turns)
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=position, limits=limits or LoopLimits(),
                       headless_policy=policy)
    return task_id, outcome


def state_of(harness: Harness, task_id: TaskId) -> TaskState:
    return harness.tasks.show(task_id).task.state


def test_a_pending_command_pauses_the_loop_and_the_decision_resumes_it(harness: Harness) -> None:
    pytest_run = run_command([harness.venv_python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], "t1")
    task_id, outcome = start(harness, [*implementing_turns(), pytest_run, done()],
                             plan=a_plan_whose_check_is_not_the_test_command())

    assert outcome.kind is RunOutcomeKind.AWAITING_AUTHORITY and outcome.loop is not None
    assert state_of(harness, task_id) is TaskState.AWAITING_AUTHORITY
    assert outcome.loop.steps_done == ("Handle negatives", "Test negatives")
    pending = harness.driver.pending_decisions(task_id)
    assert [request.request_id for request in pending] == [outcome.pending_request_id]
    harness.driver.decide(pending[0].request_id, UserDecision.ALLOW_ONCE, reason="run the tests")

    validating = resume_run(outcome)

    record = harness.driver.read_result(pending[0].request_id)
    assert record is not None and record.exit_code == 0 and "2 passed" in (record.stdout or "")
    # The pipeline's own test command is another operation: it asks too, and resumes the same way.
    assert validating.kind is RunOutcomeKind.AWAITING_AUTHORITY
    harness.driver.decide(validating.pending_request_id or "", UserDecision.ALLOW_ONCE, reason="checks")
    reviewed = resume_run(validating)
    assert reviewed.kind is RunOutcomeKind.AWAITING_REVIEW and reviewed.clean
    assert state_of(harness, task_id) is TaskState.AWAITING_REVIEW
    assert exit_code_for(StalledError("x")) is ExitCode.STALLED


def test_a_worker_that_cannot_start_pauses_the_run_on_its_cause(harness: Harness,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker argv its program does not understand (a frozen binary given ``-I -B -m``): the tool call is a stored
    worker-unavailable failure and the attempt ends on it, naming the cause, instead of asking the next turn (the
    scripted run would otherwise end "no turn left")."""
    refusing = [sys.executable, "-c", "import sys; print('codeflux: unknown option -I', file=sys.stderr); sys.exit(2)"]
    monkeypatch.setattr("codeflux.worker.client.launch.isolated_python_argv", lambda module: refusing)

    task_id, outcome = start(harness, [edit_file("pkg/calc.py", "a", "b", "e1"), done()])

    assert outcome.kind is RunOutcomeKind.PAUSED, outcome.reason
    assert outcome.loop is not None and outcome.loop.kind is LoopOutcomeKind.WORKER_UNAVAILABLE
    assert outcome.reason.startswith("worker-unavailable: edit_file could not run, nothing ran")
    assert "the worker exited during startup: codeflux: unknown option -I" in outcome.reason
    assert "no turn left" not in outcome.reason
    paused = harness.tasks.show(task_id).task
    assert paused.state is TaskState.PAUSED


def test_resuming_before_the_decision_is_refused_and_changes_nothing(harness: Harness) -> None:
    task_id, outcome = start(harness, [run_command(["true"], "t1"), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_AUTHORITY
    with pytest.raises(Exception, match="decide allow-once"):
        resume_run(outcome)
    assert state_of(harness, task_id) is TaskState.AWAITING_AUTHORITY


def test_three_identical_failures_stop_the_attempt_and_exhaust_a_one_rung_ladder(harness: Harness) -> None:
    missing = [edit_file("pkg/calc.py", "no such text", "x", f"e{n}") for n in range(3)]

    with pytest.raises(StalledError, match="top of the ladder"):
        start(harness, [*missing, done()])

    task_id = harness.tasks.list_tasks(limit=1)[0].task_id
    assert state_of(harness, task_id) is TaskState.FAILED
    rows = {row.verdict.stage: row.verdict for row in harness.tasks.ledger(task_id, 1)}
    assert len(rows) == 37 and rows[StageName.INSTRUCTIONS].outcome is StageOutcome.SATISFIED
    assert rows[StageName.ASSEMBLY].outcome is StageOutcome.BLOCKED


def test_a_stall_on_a_lower_rung_climbs_into_a_new_attempt(harness: Harness) -> None:
    missing = [edit_file("pkg/calc.py", "no such text", "x", f"e{n}") for n in range(3)]
    two_rungs = LadderPosition.start(Ladder.parse(["cheap:low", "capable:low"]))

    task_id, outcome = start(harness, [*missing, *implementing_turns(), done()], position=two_rungs,
                             policy=HeadlessPolicy.allowing([PreapprovedOperation.command(
                                 pytest_argv(harness.venv_python))]))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.attempt == 2
    assert len(harness.tasks.ledger(task_id, 1)) == 37 and len(harness.tasks.ledger(task_id, 2)) == 37


def test_answering_without_finish_is_nudged_and_stalls_as_no_finish(harness: Harness) -> None:
    """A turn without tool calls is not "done" (issue 15 item 2): the model is told to call finish, and a
    model that keeps answering without tools stalls like the old completion claims did."""
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, [said("I am done."), said("Really done."), said("Done!")])

    with pytest.raises(StalledError):
        run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                 repo_snapshot=harness.snapshot(), position=ONE_RUNG, limits=LoopLimits(), headless_policy=None)

    assert len(adapter.requests) == 3
    nudges = [message.text for message in adapter.requests[-1].messages if "does not end the task" in message.text]
    assert len(nudges) == 2 and "call the finish tool" in nudges[0]
    assert state_of(harness, task_id) is TaskState.FAILED


def test_a_headless_denial_reaches_the_model_which_goes_on_and_the_run_ends_for_exit_4(harness: Harness) -> None:
    """Issue 15 item 5: a request the headless policy denies no longer ends the run at once. The denial is
    recorded and named; the model reads a short capability error and finishes; the run still exits 4."""
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, [run_command(["true"], "t1"), *implementing_turns(), done()])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])

    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=ONE_RUNG, limits=LoopLimits(),
                       headless_policy=policy)

    assert outcome.kind is RunOutcomeKind.DECISION_NEEDED and outcome.denials, outcome.reason
    assert "run_command true is not in the pre-approved operations" in outcome.denials[0]
    assert state_of(harness, task_id) is TaskState.AWAITING_REVIEW  # the checks ran; the person reviews
    told = next(part.content for message in adapter.requests[1].messages for part in message.parts
                if getattr(part, "call_id", None) == "t1" and hasattr(part, "content"))
    assert told.startswith("refused (run_command true): this headless run did not pre-approve it")
    assert "blocked for the rest of this run" in told and "finish without it" in told
    assert "not in the pre-approved operations" not in told  # the person-facing reason is not what the model reads
    assert harness.driver.pending_decisions(task_id) == []  # nothing is left waiting
    assert len(harness.tasks.ledger(task_id, 1)) == 37


def test_a_pause_between_turns_is_honoured(harness: Harness) -> None:
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, [*implementing_turns(), done()])
    started = harness.tasks.start_run(task_id, harness.snapshot(), expected_revision=harness.tasks.show(task_id)
                                      .task.revision, idempotency_key=keys())
    view = harness.tasks.show(task_id)
    assert view.plan is not None
    loop = ImplementationLoop(task_id, attempt=started.attempt or 1, requirement="r", plan=view.plan.plan,
                              gateway=gateway, driver=harness.driver, tasks=harness.tasks, position=ONE_RUNG,
                              limits=LoopLimits())
    harness.tasks.transition(task_id, TaskState.PAUSED, expected_revision=view.task.revision, reason="lunch",
                             actor=Actor.USER, idempotency_key=keys())

    outcome = loop.run()

    assert outcome.kind is LoopOutcomeKind.PAUSED and outcome.rounds == 0 and adapter.requests == ()


def test_the_round_bound_ends_the_attempt(harness: Harness) -> None:
    task_id, outcome = start(harness, implementing_turns(), limits=LoopLimits(max_rounds=1))

    assert outcome.kind is RunOutcomeKind.FAILED and "1 rounds" in outcome.reason
    assert state_of(harness, task_id) is TaskState.FAILED


class ManualClock:
    """A clock the test moves (``now``), or that moves ``tick`` seconds on every reading — the agent's work
    taking time. The wall bound is judged on it, never on real time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.tick = 0.0

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def test_time_a_person_spends_deciding_is_not_the_attempts_time(harness: Harness) -> None:
    """Issue 14 item 8: a 5-second wall bound and a person who reads the card for 10 seconds — the attempt
    still completes (it used to fail with "the attempt reached its bound of 5 seconds")."""
    clock = ManualClock()
    task_id, waiting = start_on(harness, clock, [*implementing_turns(), run_command(["true"], "t1"), done()])
    assert waiting.kind is RunOutcomeKind.AWAITING_AUTHORITY
    clock.now += 10  # the person reads the card
    harness.driver.decide(waiting.pending_request_id or "", UserDecision.ALLOW_ONCE, reason="fine")
    clock.now += 1  # the agent's own time after the decision still counts

    validating = resume_run(waiting)

    # The implementation went through; what waits now is the pipeline's own test command.
    assert validating.kind is RunOutcomeKind.AWAITING_AUTHORITY, validating.reason
    assert "test command" in validating.reason
    assert state_of(harness, task_id) is TaskState.AWAITING_AUTHORITY


def test_the_agents_own_time_still_ends_the_attempt(harness: Harness) -> None:
    clock = ManualClock()
    task_id, waiting = start_on(harness, clock, [*implementing_turns(), run_command(["true"], "t1"), done()])
    harness.driver.decide(waiting.pending_request_id or "", UserDecision.ALLOW_ONCE, reason="fine")
    clock.tick = 6  # decided at once; every step of the agent's work now takes 6 seconds

    ended = resume_run(waiting)

    assert ended.kind is RunOutcomeKind.FAILED and "5 seconds" in ended.reason
    assert state_of(harness, task_id) is TaskState.FAILED


def start_on(harness: Harness, clock: ManualClock, turns: list[ScriptedTurn]) -> tuple[TaskId, RunOutcome]:
    task_id = harness.ready_task(plan=a_plan_whose_check_is_not_the_test_command())
    gateway, _ = scripted_gateway(harness.db, turns)
    return task_id, run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                             repo_snapshot=harness.snapshot(), position=ONE_RUNG,
                             limits=LoopLimits(max_wall_seconds=5), headless_policy=None, clock=clock)


def test_a_new_allow_for_task_approval_is_told_to_the_model_as_a_short_update(harness: Harness) -> None:
    """Issue 15 item 5: the approved operations go in a user message after the first prompt (never the system
    prompt), and an approval a person gives for the task reaches the model before its next turn."""
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, [run_command(["true"], "t1"), *implementing_turns(), done()])
    waiting = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=ONE_RUNG, limits=LoopLimits(), headless_policy=None)
    assert waiting.kind is RunOutcomeKind.AWAITING_AUTHORITY
    harness.driver.decide(waiting.pending_request_id or "", UserDecision.ALLOW_FOR_TASK, reason="fine for the task")

    resume_run(waiting)

    first, second = adapter.requests[0], adapter.requests[1]
    assert "Approved operations" not in first.system and "python -m pytest" not in first.system
    told = [message.text for message in first.messages]
    assert told[1].startswith("Approved operations for this task")
    assert "- run_command python -m pytest — the plan's check 'unit tests' (revision 1)" in told[1]
    update = second.messages[-1].text
    assert update.startswith("The approved operations for this task changed; now approved:")
    assert "- run_command true — allowed for this task by a person" in update
    assert sum("approved operations" in m.text.lower() for m in adapter.requests[-1].messages) == 2  # not again


def test_a_finish_check_that_waits_for_a_person_pauses_and_the_decision_goes_on(harness: Harness) -> None:
    """A plan without checks: finish runs the detected test command, which nothing approved yet — the loop waits
    for the person like for any request, then runs it and accepts the finish."""
    plan = replace(a_plan_with_two_steps(), checks=())
    task_id = harness.ready_task(plan)
    gateway, _ = scripted_gateway(harness.db, [*implementing_turns(), done()])
    waiting = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=ONE_RUNG, limits=LoopLimits(), headless_policy=None)
    assert waiting.kind is RunOutcomeKind.AWAITING_AUTHORITY and waiting.loop is not None
    check = harness.driver.read_request(waiting.pending_request_id or "")
    assert waiting.loop.pending_call is not None and waiting.loop.pending_call.name == "run_command"
    assert waiting.loop.pending_call.arguments()["argv"] == list(pytest_argv(harness.venv_python))
    harness.driver.decide(check.request_id, UserDecision.ALLOW_FOR_TASK, reason="the tests, for this task")

    done_run = resume_run(waiting)

    assert harness.driver.read_result(check.request_id) is not None  # finish's check ran
    assert done_run.kind is RunOutcomeKind.AWAITING_REVIEW and done_run.clean, done_run.reason
