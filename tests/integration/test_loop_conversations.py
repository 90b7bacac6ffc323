"""The implementation loop's conversation kept in SQLite: a resumed run (the next attempt after a pause, a
script that ran out of turns, a pause during validation) continues it with the plan steps already done;
a turn interrupted between its tool calls is answered from the recorded requests without running
anything twice; nothing a redaction would hide reaches the stored conversation; check commands are
recorded with source ``pipeline``. And the planner: a stop requested before a model call, or a
provider that fails, leaves the task paused instead of forecasting with nobody drafting.

Real components throughout (SQLite file, git repository with its own ``.venv``, the real gateway, worker
processes, the authority engine); only the model is the scripted provider (not a model)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.loop_steps import conversation_summary, stored_form
from codeflux.coordinator.runs.planner import propose_plan
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ExecutionRecord, ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.errors import DecisionNeededError, ScriptExhaustedError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, Role, TextPart, ToolCall, ToolResult
from codeflux.domain.money import USD, Money
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedTurn
from codeflux.redact import REDACTED, default_redactor
from codeflux.store.database import Database
from codeflux.store.loop_transcripts import MAX_MESSAGE_BYTES, message_to_json
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import (
    FIXED_CALC,
    USAGE,
    Harness,
    calc_tests,
    done,
    make_harness,
    scripted_gateway,
    write_file,
)
from tests.fixtures.tasks import keys

pytestmark = pytest.mark.slow


class PausingDriver(ToolDriver):
    """A real tool driver that lets the test act (pause the task) right after an execution it picks."""

    def __init__(self, db: Database, *, state_dir: Path) -> None:
        super().__init__(db, state_dir=state_dir)
        self.after_execute: Callable[[str, ExecutionRecord], None] | None = None
        self.executed: list[str] = []

    def execute(self, request_id: str) -> ExecutionRecord:
        record = super().execute(request_id)
        self.executed.append(request_id)
        if self.after_execute is not None:
            self.after_execute(request_id, record)
        return record


@pytest.fixture
def driver(db: Database, tmp_path: Path) -> Iterator[PausingDriver]:
    made = PausingDriver(db, state_dir=tmp_path / "state")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def harness(db: Database, tmp_path: Path, driver: PausingDriver) -> Harness:
    return make_harness(db, tmp_path, driver)


def policy(harness: Harness) -> HeadlessPolicy:
    return HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])


def run(harness: Harness, task_id: TaskId, turns: list[ScriptedTurn]) -> tuple[RunOutcome, list[Message]]:
    """One run of the ready task; returns its outcome and the messages of the first model request."""
    gateway, adapter = scripted_gateway(harness.db, turns)
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=policy(harness))
    return outcome, list(adapter.requests[0].messages) if adapter.requests else []


def pause(harness: Harness, task_id: TaskId, reason: str = "paused by the test") -> None:
    task = harness.tasks.show(task_id).task
    harness.tasks.transition(task_id, TaskState.PAUSED, expected_revision=task.revision, reason=reason,
                             actor=Actor.USER, idempotency_key=keys())


def resume(harness: Harness, task_id: TaskId) -> None:
    """What ``codeflux task resume`` does before it runs the task: paused → ready."""
    task = harness.tasks.show(task_id).task
    harness.tasks.transition(task_id, TaskState.READY, expected_revision=task.revision, reason="resumed",
                             actor=Actor.USER, idempotency_key=keys())


def sql(db: Database, query: str, *params: object) -> list[tuple[object, ...]]:
    return db.read(lambda view: view.query_all(query, params))  # type: ignore[arg-type]


def fix_calc(call_id: str = "w1") -> ScriptedTurn:
    return write_file("pkg/calc.py", FIXED_CALC, call_id, replacing=BASE_FILES["pkg/calc.py"])


def fix_tests(call_id: str = "w2") -> ScriptedTurn:
    return write_file("tests/test_calc.py", calc_tests(-3), call_id, replacing=BASE_FILES["tests/test_calc.py"])


def test_a_run_paused_between_turns_continues_its_conversation_with_the_steps_done(
        harness: Harness, driver: PausingDriver) -> None:
    task_id = harness.ready_task()
    driver.after_execute = lambda _request, _record: pause(harness, task_id)

    first, _ = run(harness, task_id, [fix_calc(), fix_tests(), done()])

    assert first.kind is RunOutcomeKind.PAUSED and first.loop is not None
    assert first.loop.steps_done == ("Handle negatives",) and harness.tasks.show(task_id).task.state is TaskState.PAUSED
    assert len(harness.tasks.ledger(task_id, 1)) == 37
    kept = conversation_summary(harness.tasks.changes, task_id)
    assert kept is not None and kept.is_open and kept.messages == 4 and kept.steps_done == (0,)

    driver.after_execute = None
    resume(harness, task_id)
    second, sent = run(harness, task_id, [fix_tests(), done()])  # only what is left: no write is repeated

    assert second.kind is RunOutcomeKind.AWAITING_REVIEW and second.clean, second.reason
    assert second.attempt == 2
    # the first request of the resumed run carries the stored conversation, in order
    assert [m.role for m in sent] == [Role.USER, Role.USER, Role.ASSISTANT, Role.USER]
    assert "Make add() handle negative numbers" in sent[0].text
    assert sent[1].text.startswith("Approved operations for this task")  # told once, not again on resume
    assert isinstance(sent[2].parts[0], ToolCall) and sent[2].parts[0].call_id == "w1"
    assert isinstance(sent[3].parts[0], ToolResult) and "state: succeeded" in sent[3].parts[0].content
    assert sql(harness.db, "SELECT count(*) FROM tool_requests WHERE task_id = ? AND tool = 'write_file'",
               task_id.value) == [(2,)]
    closed = conversation_summary(harness.tasks.changes, task_id)
    assert closed is not None and closed.conversation_id == kept.conversation_id and not closed.is_open
    assert closed.steps_done == (0, 1)


def test_a_turn_interrupted_between_its_tool_calls_is_answered_on_resume_and_nothing_runs_twice(
        harness: Harness, driver: PausingDriver) -> None:
    task_id = harness.ready_task()
    both = ScriptedTurn(tool_calls=(*fix_calc().tool_calls, *fix_tests().tool_calls), usage=USAGE)
    driver.after_execute = lambda _request, _record: pause(harness, task_id)

    first, _ = run(harness, task_id, [both, done()])

    assert first.kind is RunOutcomeKind.PAUSED
    [calc_request] = driver.executed
    # the second call was never submitted: the task was paused before it
    assert sql(harness.db, "SELECT count(*) FROM tool_requests WHERE task_id = ?", task_id.value) == [(1,)]

    driver.after_execute = None
    driver.executed.clear()
    resume(harness, task_id)
    second, sent = run(harness, task_id, [done()])

    assert second.kind is RunOutcomeKind.AWAITING_REVIEW and second.clean, second.reason
    # the stored turn was answered first: its first call from the recorded execution, the second run now
    results = sent[-1]
    assert results.role is Role.USER and [p.call_id for p in results.parts if isinstance(p, ToolResult)] == [
        "w1", "w2"]
    assert calc_request not in driver.executed
    assert sql(harness.db, "SELECT count(*) FROM tool_executions WHERE request_id = ?", calc_request) == [(1,)]
    assert sql(harness.db, "SELECT count(*) FROM tool_requests WHERE task_id = ? AND tool = 'write_file'",
               task_id.value) == [(2,)]


def test_a_script_that_runs_out_of_turns_pauses_the_task_honestly_and_a_resume_goes_on(harness: Harness) -> None:
    task_id = harness.ready_task()

    first, _ = run(harness, task_id, [fix_calc()])

    assert first.kind is RunOutcomeKind.PAUSED and isinstance(first.error, ScriptExhaustedError)
    assert exit_code_for(first.error) is ExitCode.FAILED
    assert "has no turn left" in first.reason
    view = harness.tasks.show(task_id)
    assert view.task.state is TaskState.PAUSED and view.attempt is not None and not view.attempt.is_open
    ledger = {row.verdict.stage: row.verdict for row in harness.tasks.ledger(task_id, 1)}
    assert len(ledger) == 37 and ledger[StageName.ASSEMBLY].outcome is StageOutcome.BLOCKED
    [(reason,)] = sql(harness.db, "SELECT reason FROM task_transitions WHERE task_id = ? ORDER BY id DESC LIMIT 1",
                      task_id.value)
    assert "has no turn left" in str(reason) and "resume to continue the conversation" in str(reason)
    assert sql(harness.db, "SELECT trigger_kind FROM checkpoints WHERE task_id = ? ORDER BY sequence DESC LIMIT 1",
               task_id.value) == [("paused",)]

    resume(harness, task_id)
    second, sent = run(harness, task_id, [fix_tests(), done()])

    assert second.kind is RunOutcomeKind.AWAITING_REVIEW and second.clean, second.reason
    assert len(sent) == 4  # the prompt, the approved operations, the first write and its result


def test_a_budget_refusal_mid_loop_ends_the_attempt_paused_for_a_decision(
        harness: Harness, driver: PausingDriver) -> None:
    task_id = harness.ready_task()
    driver.after_execute = lambda _request, _record: _drop_budget(harness, task_id)

    outcome, _ = run(harness, task_id, [fix_calc(), fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.DECISION_NEEDED and isinstance(outcome.error, DecisionNeededError)
    assert exit_code_for(outcome.error) is ExitCode.DECISION_NEEDED
    view = harness.tasks.show(task_id)
    assert view.task.state is TaskState.PAUSED and view.attempt is not None and not view.attempt.is_open


def _drop_budget(harness: Harness, task_id: TaskId) -> None:
    budgets = BudgetService(harness.db)
    if budgets.summary(task_id).hard_limit.minor > 1:
        budgets.set_budget(task_id, hard_limit=Money(minor=1, currency=USD),
                           expected_revision=budgets.revision_of(task_id), idempotency_key=keys())


def test_a_pause_while_checks_run_ends_paused_and_the_resume_validates_without_a_model_call(
        harness: Harness, driver: PausingDriver) -> None:
    task_id = harness.ready_task()

    def pause_after_the_check(request_id: str, _record: ExecutionRecord) -> None:
        [(source, operation)] = sql(harness.db, "SELECT source, operation_json FROM tool_requests WHERE id = ?",
                                    request_id)
        if source == "pipeline" and "--junitxml" in operation:  # the pipeline's test command (not finish's check)
            pause(harness, task_id, "paused while its checks ran")

    driver.after_execute = pause_after_the_check

    first, _ = run(harness, task_id, [fix_calc(), fix_tests(), done()])

    assert first.kind is RunOutcomeKind.PAUSED, first.reason
    assert harness.tasks.show(task_id).task.state is TaskState.PAUSED
    verdicts = {verdict.stage: verdict for verdict in first.verdicts}
    assert verdicts[StageName.INTEGRATION_TESTS].outcome is StageOutcome.SATISFIED
    assert verdicts[StageName.HUMAN_ACCEPTANCE].outcome is StageOutcome.BLOCKED
    # the check command is the pipeline's own request
    assert sql(harness.db, "SELECT DISTINCT source FROM tool_requests WHERE task_id = ? AND tool = 'run_command'",
               task_id.value) == [("pipeline",)]

    driver.after_execute = None
    resume(harness, task_id)
    second, sent = run(harness, task_id, [])  # no turn: the kept conversation had finished the implementation

    assert second.kind is RunOutcomeKind.AWAITING_REVIEW and second.clean, second.reason
    assert sent == [] and second.attempt == 2


def test_an_attempt_a_crash_left_open_is_finished_before_the_next_one(harness: Harness) -> None:
    task_id = harness.ready_task()
    view = harness.tasks.show(task_id)
    harness.tasks.start_run(task_id, harness.snapshot(), expected_revision=view.task.revision, idempotency_key=keys())
    pause(harness, task_id)  # as recovery's safe-resume leaves it: paused, attempt 1 still open
    resume(harness, task_id)

    outcome, _ = run(harness, task_id, [fix_calc(), fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.attempt == 2, outcome.reason
    interrupted = harness.tasks.ledger(task_id, 1)
    assert len(interrupted) == 37 and all(row.verdict.outcome in (StageOutcome.BLOCKED,
                                                                 StageOutcome.NOT_IMPLEMENTED) for row in interrupted)


def test_nothing_a_redaction_hides_reaches_the_stored_conversation(harness: Harness) -> None:
    loaded = "cfxconv" + secrets.token_hex(20)
    default_redactor().add_secret(loaded)
    shaped = "sk-ant-" + secrets.token_hex(24)  # a key pattern, never loaded
    requirement = (f"Make add() handle negative numbers (token {loaded}).\n"
                   "<<<ACCEPTANCE\ntest: tests/test_calc.py::test_add_negative\n>>>\n")
    task_id = harness.ready_task(requirement=requirement)
    talking = ScriptedTurn(text=f"I will use {loaded} and {shaped}.", tool_calls=fix_calc().tool_calls, usage=USAGE)
    noting = write_file("NOTES.md", f"key: {shaped}\n", "n1")

    outcome, _ = run(harness, task_id, [talking, noting, fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW, outcome.reason
    stored = sql(harness.db, "SELECT m.parts_json, m.redacted FROM loop_messages m JOIN loop_conversations c"
                 " ON c.id = m.conversation_id WHERE c.task_id = ? ORDER BY m.sequence", task_id.value)
    text = "\n".join(str(parts) for parts, _ in stored)
    assert loaded not in text and shaped not in text
    assert REDACTED in text
    # the prompt, not the approved operations, the talking turn; not its result
    assert [flag for _, flag in stored][:4] == [1, 0, 1, 0]
    for parts, _ in stored:
        json.loads(str(parts))  # still JSON after redaction, tool-call arguments included


def test_a_stored_message_is_bounded() -> None:
    huge = "x" * (3 * MAX_MESSAGE_BYTES)
    message = Message(role=Role.USER, parts=(TextPart(text=huge), ToolResult(call_id="c", content=huge)))

    stored, hidden = stored_form(message)

    assert not hidden and len(message_to_json(stored).encode()) <= MAX_MESSAGE_BYTES
    assert "characters not kept" in stored.parts[0].text  # type: ignore[union-attr]


def test_a_stop_before_a_planner_call_pauses_the_task_and_calls_no_model(harness: Harness) -> None:
    task_id = harness.tasks.create_task(harness.snapshot(), "Make add() handle negatives.",
                                        idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    gateway, adapter = scripted_gateway(harness.db, [done()])

    with pytest.raises(DecisionNeededError, match="SIGTERM while planning"):
        propose_plan(task_id, gateway=gateway, tasks=harness.tasks, position=LadderPosition.start(),
                     idempotency_key="plan", stop_requested=lambda: "SIGTERM")

    assert adapter.requests == ()
    assert harness.tasks.show(task_id).task.state is TaskState.PAUSED


def test_a_provider_failure_while_planning_pauses_the_forecasting_task(harness: Harness) -> None:
    task_id = harness.tasks.create_task(harness.snapshot(), "Make add() handle negatives.",
                                        idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    gateway, _ = scripted_gateway(harness.db, [])  # a script without a plan turn

    with pytest.raises(ScriptExhaustedError):
        propose_plan(task_id, gateway=gateway, tasks=harness.tasks, position=LadderPosition.start(),
                     idempotency_key="plan")

    assert harness.tasks.show(task_id).task.state is TaskState.PAUSED
    [(reason,)] = sql(harness.db, "SELECT reason FROM task_transitions WHERE task_id = ? ORDER BY id DESC LIMIT 1",
                      task_id.value)
    assert "the plan could not be drafted" in str(reason)
