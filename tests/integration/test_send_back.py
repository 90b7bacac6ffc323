"""Red checks go back to the agent (issue 14 items 7 and 11), with the scripted provider (not a model), real
worker processes and real pytest runs.

The reproduction of the issue's "Why": a change whose test fails used to go straight to review, and
``codeflux run`` exited 0. Now the failing test's id and message start the next attempt; the attempt that
fixes it reaches review clean; repair is bounded per rung, a stall climbs the ladder, and repair that runs
out leaves the task reviewable with its red evidence ("needs you", exit 1).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.cli.context import CliContext
from codeflux.cli.run import report_outcome
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.ladder_position import ladder_position_of
from codeflux.domain.errors import UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Ladder, LadderPosition, Rung
from codeflux.domain.models import ModelRequest
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.tasks import Actor, TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from tests.fixtures.task_runs import (
    Harness,
    done,
    implementing_turns,
    make_harness,
    rewriting_turns,
    scripted_gateway,
)

FAILING = "tests.test_calc::test_add_negative"
GATES_DECIDE = LoopLimits(max_finish_repairs=0)
"""These scripts write a wrong test on purpose, to see the gates send the work back: the loop's own check at
finish (issue 15 item 2) is red too, and with no finish repairs the finish is accepted and the gates decide."""
WRONG = [*implementing_turns(expected=3), done()]  # attempt 1: the test asserts add(-1, -2) == 3


def retry(expected: int, attempt: int) -> list[ScriptedTurn]:
    return rewriting_turns(expected=expected, previous=3, attempt=attempt)


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def run(harness: Harness, turns: list[ScriptedTurn], *, position: LadderPosition | None = None,
        limits: LoopLimits | None = None) -> tuple[TaskId, RunOutcome, ScriptedAdapter]:
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, turns)
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=position or LadderPosition.start(),
                       limits=limits or GATES_DECIDE, headless_policy=policy)
    return task_id, outcome, adapter


def stage(harness: Harness, task_id: TaskId, attempt: int, name: StageName) -> tuple[StageOutcome, dict[str, object]]:
    row = next(row for row in harness.tasks.ledger(task_id, attempt) if row.verdict.stage is name)
    return row.verdict.outcome, dict(row.evidence)


def text_of(request: ModelRequest) -> str:
    return "\n".join(str(getattr(part, "text", "")) for message in request.messages for part in message.parts)


def exit_code(harness: Harness, outcome: RunOutcome) -> tuple[int, str]:
    out = io.StringIO()
    code = report_outcome(CliContext(stdout=out), harness.tasks, outcome)
    return code, out.getvalue()


def test_a_failing_test_goes_back_to_the_agent_and_the_next_attempt_fixes_it(harness: Harness) -> None:
    task_id, outcome, adapter = run(harness, [*WRONG, *retry(-3, 2)])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert outcome.attempt == 2
    first, evidence = stage(harness, task_id, 1, StageName.INTEGRATION_TESTS)
    assert first is StageOutcome.FAILED and evidence["failing"] == [FAILING]
    messages = evidence["failure_messages"]
    assert isinstance(messages, list) and "assert" in messages[0]
    assert stage(harness, task_id, 2, StageName.INTEGRATION_TESTS)[0] is StageOutcome.SATISFIED
    # The second attempt's first model request carries the failing test, its message, and why it came back.
    second_attempt = adapter.requests[3]
    prompt = text_of(second_attempt)
    assert "sent back by integration-tests" in prompt and FAILING in prompt and "-1, -2" in prompt
    code, printed = exit_code(harness, outcome)
    assert code == 0 and "spent $" in printed and "of the hard limit $" in printed and "tokens used" in printed
    assert harness.tasks.show(task_id).task.state is TaskState.AWAITING_REVIEW


def test_repair_that_runs_out_waits_for_the_person_with_red_evidence_and_exits_1(harness: Harness) -> None:
    task_id, outcome, _ = run(harness, [*WRONG, *retry(3, 2)],
                              limits=replace(GATES_DECIDE, max_repairs_per_rung=1))

    assert outcome.kind is RunOutcomeKind.NEEDS_YOU and outcome.attempt == 2
    assert "needs you" in outcome.reason and "integration-tests" in outcome.reason
    assert harness.tasks.show(task_id).task.state is TaskState.AWAITING_REVIEW  # still reviewable
    assert stage(harness, task_id, 2, StageName.INTEGRATION_TESTS)[0] is StageOutcome.FAILED
    code, printed = exit_code(harness, outcome)
    assert code == 1 and "gating stages failed: integration-tests" in printed


def test_the_same_failure_three_times_climbs_one_rung(harness: Harness) -> None:
    two_rungs = LadderPosition.start(Ladder.parse(["cheap:low", "capable:low"]))
    turns = [*WRONG, *retry(3, 2), *retry(3, 3), *retry(-3, 4)]

    task_id, outcome, adapter = run(harness, turns, position=two_rungs)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 4
    assert [stage(harness, task_id, n, StageName.INTEGRATION_TESTS)[0] for n in (1, 2, 3, 4)] == [
        StageOutcome.FAILED, StageOutcome.FAILED, StageOutcome.FAILED, StageOutcome.SATISFIED]
    fourth = text_of(adapter.requests[9])
    assert "on rung capable:low" in fourth  # the third identical failure climbed to the next rung


def test_a_new_run_of_the_task_goes_on_from_the_rung_it_had_climbed_to(harness: Harness) -> None:
    """Issue 14 item 7: the ladder position survives a resume or a restart (a new run reads it back from the
    rungs the task's recorded model calls used)."""
    two_rungs = LadderPosition.start(Ladder.parse(["cheap:low", "capable:low"]))
    turns = [*WRONG, *retry(3, 2), *retry(3, 3), *retry(-3, 4)]
    task_id, outcome, _ = run(harness, turns, position=two_rungs)
    assert outcome.attempt == 4

    assert ladder_position_of(harness.db, task_id).rung == Rung.parse("capable:low")
    assert ladder_position_of(harness.db, harness.ready_task()).rung == Rung.parse("cheap:low")  # a fresh task


def test_a_person_retries_a_task_that_needs_them_with_their_own_words(harness: Harness) -> None:
    """Issue 14 item 9: after repair ran out, the person asks for another attempt on the same plan, with
    feedback; the new attempt's conversation starts with their words and reaches review clean."""
    task_id, needs_you, _ = run(harness, [*WRONG, *retry(3, 2)], limits=replace(GATES_DECIDE, max_repairs_per_rung=1))
    assert needs_you.kind is RunOutcomeKind.NEEDS_YOU
    gateway, adapter = scripted_gateway(harness.db, retry(-3, 3))
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])

    again = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                     repo_snapshot=harness.snapshot(), position=ladder_position_of(harness.db, task_id),
                     limits=GATES_DECIDE, headless_policy=policy,
                     retry_feedback="add(-1, -2) is -3: the test's expectation is wrong, not the code")

    assert again.kind is RunOutcomeKind.AWAITING_REVIEW and again.clean and again.attempt == 3
    first = text_of(adapter.requests[0])
    assert "asked for another attempt on the same plan" in first and "the test's expectation is wrong" in first
    session = harness.tasks.show(task_id).task.session_id
    events = harness.db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=1000))
    reasons = [str(event.event.to_payload().get("reason")) for event in events if event.kind == "task-state-changed"]
    assert any("retry under plan revision 1: add(-1, -2) is -3" in reason for reason in reasons)  # journaled


def test_only_a_task_under_review_or_failed_can_be_retried_and_only_with_words(harness: Harness) -> None:
    task_id = harness.tasks.create_task(harness.snapshot(), "Fix add()", idempotency_key="c").task_id
    revision = harness.tasks.show(task_id).task.revision
    with pytest.raises(UsageError, match="retry one awaiting review or failed"):
        harness.tasks.start_run(task_id, harness.snapshot(), expected_revision=revision, idempotency_key="k",
                                retry_feedback="try again")
    with pytest.raises(UsageError, match="retry feedback"):
        harness.tasks.start_run(task_id, harness.snapshot(), expected_revision=revision, idempotency_key="k2",
                                retry_feedback="   ")


def test_a_restart_mid_repair_goes_on_with_the_same_rung_repairs_and_recurring_failure(harness: Harness) -> None:
    """Issue 14 item 7: the ladder position and the repair count survive a pause and a new run (a resume, or
    a restart — both start a new run from what is stored). Two identical failures, then the run stops (here the
    script runs out, which pauses the task); the resumed run's first identical failure is the third: it climbs.
    Before, a new run started counting afresh, so repair was never bounded across restarts."""
    limits = replace(GATES_DECIDE, max_repairs_per_rung=2)
    task_id, paused, _ = run(harness, [*WRONG, *retry(3, 2)], limits=limits)
    assert paused.kind is RunOutcomeKind.PAUSED and paused.attempt == 3
    assert [(s.rung, s.decision) for s in harness.tasks.send_backs(task_id)] == [("cheap:low", "stay")] * 2
    view = harness.tasks.show(task_id)
    harness.tasks.transition(task_id, TaskState.READY, expected_revision=view.task.revision, reason="resume",
                             actor=Actor.USER, idempotency_key="resume-1")
    gateway, adapter = scripted_gateway(harness.db, [*retry(3, 4), *retry(-3, 5)])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])

    resumed = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=ladder_position_of(harness.db, task_id),
                       limits=limits, headless_policy=policy)

    assert [(s.rung, s.decision) for s in harness.tasks.send_backs(task_id)] == [
        ("cheap:low", "stay"), ("cheap:low", "stay"), ("cheap:low", "climb")]
    assert resumed.kind is RunOutcomeKind.AWAITING_REVIEW and resumed.clean and resumed.attempt == 5
    assert ladder_position_of(harness.db, task_id).rung == Rung.parse("cheap:max")
    assert "on rung cheap:max" in text_of(adapter.requests[-2])


def test_a_failed_contracts_stage_joins_the_send_back_its_findings_never_start_one(harness: Harness) -> None:
    """Issue 17: findings of a failed stage 5 (an undeclared, unannotated public function) are told to the
    attempt the failing tests start, after the tests' failure; they do not start an attempt themselves — the
    second attempt, whose tests pass, goes to review with stage 5 still failed."""
    from tests.fixtures.repos import BASE_FILES
    from tests.fixtures.task_runs import FIXED_CALC, calc_tests, write_file

    with_neg = FIXED_CALC + "\n\ndef neg(a):\n    return -a\n"
    first = [write_file("pkg/calc.py", with_neg, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(3), "w2", replacing=BASE_FILES["tests/test_calc.py"]), done()]
    second = [write_file("tests/test_calc.py", calc_tests(-3), "a2w2", replacing=calc_tests(3)), done()]

    task_id, outcome, adapter = run(harness, [*first, *second])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.attempt == 2, outcome.reason
    contracts, evidence = stage(harness, task_id, 1, StageName.CONTRACTS)
    assert contracts is StageOutcome.FAILED
    assert evidence["findings"] == ["pkg.calc.neg (pkg/calc.py:12) is public and no plan step declares it",
                                    "pkg.calc.neg (pkg/calc.py:12) lacks annotations: parameter a, return"]
    prompt = text_of(adapter.requests[3])  # the second attempt's first request
    assert "sent back by integration-tests" in prompt and FAILING in prompt
    told = prompt.index("Other findings of this attempt")
    assert told > prompt.index(FAILING)
    assert "- 5 contracts: pkg.calc.neg (pkg/calc.py:12) is public and no plan step declares it" in prompt[told:]
    assert stage(harness, task_id, 2, StageName.INTEGRATION_TESTS)[0] is StageOutcome.SATISFIED
    assert stage(harness, task_id, 2, StageName.CONTRACTS)[0] is StageOutcome.FAILED  # advisory: no third attempt


def test_a_command_that_tracebacks_without_stdin_goes_back_and_the_next_attempt_fixes_it(harness: Harness) -> None:
    """Issue 18, stage 31 (sends back): the change adds a ``python -m pkg`` that prints a traceback when it has no
    stdin; the tests pass, stage 31 fails and the work goes back naming the command and the input; the second
    attempt handles it (and refuses input that is not UTF-8 cleanly) and goes to review."""
    from tests.fixtures.repos import BASE_FILES
    from tests.fixtures.task_runs import FIXED_CALC, calc_tests, write_file

    crashing = "import sys\n\nprint(len(sys.stdin.read().splitlines()))\n"
    careful = ("import sys\n\n"
               "try:\n    text = sys.stdin.buffer.read().decode('utf-8') if sys.stdin else ''\n"
               "except UnicodeDecodeError:\n    sys.exit('pkg: the input is not UTF-8')\n"
               "print(len(text.splitlines()))\n")
    first = [write_file("pkg/calc.py", FIXED_CALC, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(-3), "w2", replacing=BASE_FILES["tests/test_calc.py"]),
             write_file("pkg/__main__.py", crashing, "w3"), done()]
    second = [write_file("pkg/__main__.py", careful, "a2w3", replacing=crashing), done()]

    task_id, outcome, adapter = run(harness, [*first, *second])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.attempt == 2, outcome.reason
    assert stage(harness, task_id, 1, StageName.INTEGRATION_TESTS)[0] is StageOutcome.SATISFIED
    adversarial, evidence = stage(harness, task_id, 1, StageName.ADVERSARIAL)
    assert adversarial is StageOutcome.FAILED
    assert evidence["failing"] == ["python -m pkg on no-stdin"]
    prompt = text_of(adapter.requests[4])  # the second attempt's first request
    assert "sent back by adversarial" in prompt
    assert "python -m pkg on no-stdin: an uncaught traceback (AttributeError" in prompt
    assert stage(harness, task_id, 2, StageName.ADVERSARIAL)[0] is StageOutcome.SATISFIED
