"""Whole runs with the scripted provider (not a model) against a real repository, real workers and the real
pytest of the repository's own ``.venv``: plan → approve → run → awaiting-review, and the 37-row ledger."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.planner import propose_plan
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.domain.errors import AcceptanceExampleNeededError, PlannerFailedError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.money import USD, Money
from codeflux.domain.pipeline import PERFORMABLE_STAGES, StageName, StageOutcome
from codeflux.domain.plans import plan_to_document
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.store.database import Database
from codeflux.store.stage_ledger import LedgerRow
from tests.fixtures.task_runs import (
    REQUIREMENT,
    USAGE,
    Harness,
    a_plan_whose_check_is_not_the_test_command,
    a_plan_with_two_steps,
    done,
    implementing_turns,
    make_harness,
    rewriting_turns,
    scripted_gateway,
)
from tests.fixtures.tasks import keys

REAL = {StageName.INSTRUCTIONS, StageName.CLARIFICATION, StageName.ATOMIC_INSTRUCTIONS,
        StageName.DECOMPOSITION_COVERAGE, StageName.ASSEMBLY, StageName.INTEGRATION_TESTS, StageName.END_TO_END_TESTS,
        StageName.EVIDENCE_BUNDLE}
PHASES_C_AND_D = tuple(StageName(name) for name in (
    "composition-obligations", "molecule-tests", "molecules", "molecule-verification", "control-obligations",
    "control-tests", "control-flow", "path-coverage"))


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def policy_for(harness: Harness) -> HeadlessPolicy:
    return HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])


def run(harness: Harness, task_id: TaskId, turns: list[ScriptedTurn], *, policy: HeadlessPolicy | None,
        limits: LoopLimits | None = None) -> RunOutcome:
    gateway, _ = scripted_gateway(harness.db, turns)
    return run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                    repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=limits or LoopLimits(),
                    headless_policy=policy)


def ledger(harness: Harness, task_id: TaskId, attempt: int = 1) -> dict[StageName, LedgerRow]:
    return {row.verdict.stage: row for row in harness.tasks.ledger(task_id, attempt)}


def test_a_planned_and_approved_task_runs_to_review_with_a_full_honest_ledger(harness: Harness) -> None:
    plan_json = json.dumps({key: value for key, value in plan_to_document(a_plan_with_two_steps()).items()
                            if key not in {"schema", "forecast"}})
    task_id = harness.tasks.create_task(harness.snapshot(), _requirement(), idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    planner, asked = scripted_gateway(harness.db, [ScriptedTurn(text=plan_json, usage=USAGE)])
    planned = propose_plan(task_id, gateway=planner, tasks=harness.tasks, position=LadderPosition.start(),
                           idempotency_key="plan-1")
    # The planner's recorded request: its schema requires executable examples (a scripted plan alone could
    # not show that stage 1 works from plain language).
    schema = json.loads(asked.requests[0].system.split("JSON Schema:\n", 1)[1])
    assert "examples" in schema["required"] and "pytest node ids" in asked.requests[0].system
    # ... and a trace (step → example and sentence numbers, issue 14 item 3), with the planner's own questions
    # optional (item 2); the request numbers the requirement's sentences and the person's examples for it.
    assert "trace" in schema["required"] and "questions" in schema["properties"]
    assert "questions" not in schema["required"]
    prompt = asked.requests[0].messages[0].text
    assert "sentences, numbered for `trace`:\n1. Make add() handle negative numbers" in prompt
    assert "1. test tests/test_calc.py::test_add_negative exists and passes" in prompt
    harness.tasks.approve_plan(task_id, revision=planned.revision, sha256=planned.sha256, idempotency_key=keys())

    outcome = run(harness, task_id, [*implementing_turns(), done()], policy=policy_for(harness))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert harness.tasks.show(task_id).task.state is TaskState.AWAITING_REVIEW
    rows = ledger(harness, task_id)
    assert len(rows) == 37
    for stage, row in rows.items():
        if stage in REAL:
            assert row.verdict.outcome is StageOutcome.SATISFIED, (stage, row.verdict)
            assert row.evidence, stage
        elif stage in (StageName.HUMAN_ACCEPTANCE, StageName.DELIVER):
            assert row.verdict.outcome is StageOutcome.BLOCKED
        elif stage is StageName.PROGRAM:  # the sample has no build configuration: nothing to build, said so
            assert row.verdict.outcome is StageOutcome.SKIPPED and "no build configuration" in str(row.verdict.reason)
        elif stage is StageName.ANTI_PATTERNS:  # phase B's static checks ran on the changed lines
            assert row.verdict.outcome is StageOutcome.SATISFIED and row.evidence["findings"] == []
        elif stage in (StageName.ATOM_OPTIMIZATION, StageName.ATOM_COMPLEXITY, StageName.ATOM_DOCUMENTATION):
            assert row.verdict.outcome is StageOutcome.SKIPPED, (stage, row.verdict)  # no function changed
        elif stage in (StageName.CONTRACTS, StageName.ATOMS):  # the change adds a constant, no function: said so
            assert row.verdict.outcome is StageOutcome.SKIPPED
            assert "adds or changes no function or method" in str(row.verdict.reason)
        elif stage is StageName.ADVERSARIAL:  # the sample's example is a named test, and it has no command
            assert row.verdict.outcome is StageOutcome.SKIPPED and "no command" in str(row.verdict.reason)
        elif stage in (StageName.ATOM_CASE_SYNTHESIS, StageName.ATOM_EXAMPLE_TESTS, StageName.ATOM_PROPERTY_TESTS,
                       StageName.ATOM_VERIFICATION, StageName.ATOM_FUZZ, StageName.ATOM_MUTATION,
                       *PHASES_C_AND_D):  # said so
            assert row.verdict.outcome is StageOutcome.SKIPPED and "no function or method" in str(row.verdict.reason)
        elif stage in (StageName.GLOBAL_INVARIANTS, StageName.REPETITION, StageName.NON_FUNCTIONAL):  # phase F
            assert row.verdict.outcome is StageOutcome.SATISFIED, (stage, row.verdict)
        elif stage is StageName.PLATFORM_MATRIX:  # the sample declares no Python version: said so
            assert row.verdict.outcome is StageOutcome.SKIPPED
            assert "declares no Python version" in str(row.verdict.reason)
        else:  # 6 recall: the harness's plan declares no atom, so there is nothing to look for — said so
            assert stage is StageName.RECALL and row.verdict.outcome is StageOutcome.SKIPPED, (stage, row.verdict)
            assert "declares no atom" in str(row.verdict.reason)
    repetition = rows[StageName.REPETITION].evidence
    phase_f = repetition["runs"]  # the harness stores pipeline.repetition.runs = 1: the setting in force is shown
    assert isinstance(phase_f, list) and len(phase_f) == 1 and phase_f[0]["failing"] == []
    assert repetition["runs_setting"] == {"key": "pipeline.repetition.runs", "value": 1, "default": 3,
                                          "source": "setting pipeline.repetition.runs, revision 0"}
    assert len(rows[StageName.NON_FUNCTIONAL].evidence["base_seconds"]) == 1  # type: ignore[arg-type]
    tests = rows[StageName.INTEGRATION_TESTS].evidence
    assert tests["argv"] == list(pytest_argv(harness.venv_python))
    assert tests["interpreter_source"] == ".venv in the repository"
    assert (tests["tests"], tests["passed"], tests["failures"]) == (2, 2, 0)
    assert tests["pytest_version"] and tests["python_version"]
    # the mocking report (evidence, not a gate) reads phase B's atoms: this change adds no function
    assert tests["mocking"] == {"measured": True, "atoms": [],
                                "why": "the diff adds or changes no function or method outside tests"}
    identity = rows[StageName.ASSEMBLY].evidence["diff_identity"]
    assert tests["diff_identity_before"] == identity == tests["diff_identity_after"]
    bundle = rows[StageName.EVIDENCE_BUNDLE].evidence
    assert bundle["clean"] is True and bundle["diff_identity"] == tests["diff_identity_before"]
    assert bundle["support"] == "python"  # a non-Python repository is labelled "experimental: generic checks only"
    assert len(bundle["not_examined"]) == 37 - len(PERFORMABLE_STAGES)  # type: ignore[arg-type]  # not-implemented
    clarification = rows[StageName.CLARIFICATION].evidence
    assert clarification["policy"] == "ask" and clarification["questions"] == []
    assert "meaning" in str(clarification["not_judged"])
    assert clarification["base_commit"] == clarification["task_base_revision"]  # looked up at the task's base
    coverage = rows[StageName.DECOMPOSITION_COVERAGE]
    assert coverage.evidence["uncovered_examples"] == []
    assert "meaning not judged" in (coverage.verdict.gate_evaluation or "")
    assert [step["examples"] for step in coverage.evidence["trace"]] == [[1], [1]]  # type: ignore[index,union-attr]
    worktree = harness.tasks.show(task_id).task.worktree
    assert not (worktree / ".codeflux-checks").exists() and not (worktree / "codeflux-scratch").exists()
    assert not (harness.driver.task_temp_directory(task_id) / "codeflux-scratch").exists()


def test_a_failing_test_is_a_failed_integration_stage_with_the_junit_counts(harness: Harness) -> None:
    task_id = harness.ready_task()
    fixed = rewriting_turns(expected=-3, previous=3, attempt=2)

    # the loop's own check at finish is red too: with no finish repairs the gates decide (issue 15 item 2)
    outcome = run(harness, task_id, [*implementing_turns(expected=3), done(), *fixed], policy=policy_for(harness),
                  limits=LoopLimits(max_finish_repairs=0))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 2  # sent back
    row = ledger(harness, task_id)[StageName.INTEGRATION_TESTS]
    assert row.verdict.outcome is StageOutcome.FAILED
    assert (row.evidence["tests"], row.evidence["passed"], row.evidence["failures"]) == (2, 1, 1)
    assert row.evidence["failing"] == ["tests.test_calc::test_add_negative"]
    bundle = ledger(harness, task_id)[StageName.EVIDENCE_BUNDLE]
    assert bundle.verdict.outcome is StageOutcome.SATISFIED
    # The requirement's example names the failing test, so the example does not hold either.
    assert bundle.evidence["hard_failures"] == ["integration-tests", "end-to-end-tests"]
    assert bundle.evidence["clean"] is False


def test_a_headless_run_whose_test_command_is_not_pre_approved_records_the_denial(harness: Harness) -> None:
    task_id = harness.ready_task(plan=a_plan_whose_check_is_not_the_test_command())

    outcome = run(harness, task_id, [*implementing_turns(), done()], policy=HeadlessPolicy())

    assert outcome.kind is RunOutcomeKind.DECISION_NEEDED
    assert len(outcome.denials) == 1 and "not in the pre-approved operations" in outcome.denials[0]
    row = ledger(harness, task_id)[StageName.INTEGRATION_TESTS]
    assert row.verdict.outcome is StageOutcome.BLOCKED and "headless-policy" in (row.verdict.reason or "")


def test_a_plain_requirement_without_any_example_asks_before_the_plan_is_approved(harness: Harness) -> None:
    """Issue 14 item 1: no example in the requirement and none in the plan — the approval is refused with the
    question (exit 4 in the one table), the task still awaits plan approval; nothing fails after approval."""
    plain = replace(a_plan_with_two_steps(), examples=())

    with pytest.raises(AcceptanceExampleNeededError, match="no executable acceptance example") as refused:
        harness.ready_task(plan=plain, requirement="Make add() handle negative numbers.")

    assert exit_code_for(refused.value) is ExitCode.DECISION_NEEDED
    task = harness.tasks.list_tasks(limit=1)[0]
    assert task.state is TaskState.AWAITING_PLAN_APPROVAL


def test_a_plain_requirement_runs_on_the_examples_approved_with_the_plan(harness: Harness) -> None:
    """Issue 14 item 1: no ACCEPTANCE block, the plan's example approved with it — stage 1 holds and says where
    the example came from, and stage 29 reproduces it."""
    task_id = harness.ready_task(requirement="Make add() handle negative numbers.")

    outcome = run(harness, task_id, [*implementing_turns(), done()], policy=policy_for(harness))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    instructions = ledger(harness, task_id)[StageName.INSTRUCTIONS]
    assert instructions.verdict.outcome is StageOutcome.SATISFIED
    assert instructions.evidence["source"] == "proposed by the model in plan revision 1, approved by the person with it"
    examples = ledger(harness, task_id)[StageName.END_TO_END_TESTS]
    assert examples.verdict.outcome is StageOutcome.SATISFIED


def test_the_planner_retries_once_with_the_schema_findings_then_records(harness: Harness) -> None:
    task_id = harness.tasks.create_task(harness.snapshot(), _requirement(), idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    valid = json.dumps({key: value for key, value in plan_to_document(a_plan_with_two_steps()).items()
                        if key not in {"schema", "forecast"}})
    gateway, adapter = scripted_gateway(harness.db, [ScriptedTurn(text='{"task_class": "bug-fix"}', usage=USAGE),
                                                     ScriptedTurn(text=f"Here it is: {valid}", usage=USAGE)])

    planned = propose_plan(task_id, gateway=gateway, tasks=harness.tasks, position=LadderPosition.start(),
                           idempotency_key="plan")

    assert planned.attempts == 2 and planned.revision == 1 and planned.plan.forecast is not None
    assert "refused" in adapter.requests[1].messages[-1].text
    assert "UNTRUSTED" in adapter.requests[0].messages[0].text
    assert harness.tasks.show(task_id).task.state is TaskState.AWAITING_PLAN_APPROVAL


def test_three_misfit_plans_fail_the_planner_and_record_nothing(harness: Harness) -> None:
    task_id = harness.tasks.create_task(harness.snapshot(), _requirement(), idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    gateway, adapter = scripted_gateway(harness.db, [ScriptedTurn(text="no plan", usage=USAGE),
                                                     ScriptedTurn(text='{"steps": []}', usage=USAGE),
                                                     ScriptedTurn(text='{"task_class": "rewrite"}', usage=USAGE)])

    with pytest.raises(PlannerFailedError) as failed:
        propose_plan(task_id, gateway=gateway, tasks=harness.tasks, position=LadderPosition.start(),
                     idempotency_key="plan")

    assert failed.value.attempts == 3 and len(adapter.requests) == 3
    assert "after 3 attempts" in str(failed.value)
    assert "steps" in adapter.requests[2].messages[-1].text  # the second reply's findings went back

    view = harness.tasks.show(task_id)
    assert view.plan is None and view.task.state is TaskState.FORECASTING


def _requirement() -> str:
    return REQUIREMENT


def _plan_reply() -> ScriptedTurn:
    plan_json = json.dumps({key: value for key, value in plan_to_document(a_plan_with_two_steps()).items()
                            if key not in {"schema", "forecast"}})
    return ScriptedTurn(text=plan_json, usage=USAGE)


def test_the_plans_forecast_is_priced_with_the_rates_in_force_for_the_ladders_models(harness: Harness) -> None:
    """Issue 14 item 10 (it used to be always unknown): the scripted models are priced $1 per million tokens
    in and out (the user's price revisions), so P50 and P90 are the token figures at that rate, rounded up;
    a ladder model with no price makes the P90 end unknown, naming the model."""
    task_id = harness.tasks.create_task(harness.snapshot(), _requirement(), idempotency_key=keys()).task_id
    harness.set_budget(task_id)
    planner, _ = scripted_gateway(harness.db, [_plan_reply()])
    forecast = propose_plan(task_id, gateway=planner, tasks=harness.tasks, position=LadderPosition.start(),
                            idempotency_key="plan-priced").plan.forecast
    assert forecast is not None and forecast.cost.is_known, forecast
    assert forecast.cost.low == Money(minor=-(-forecast.tokens.p50 // 10_000), currency=USD)  # cents, rounded up
    assert forecast.cost.high == Money(minor=-(-forecast.tokens.p90 // 10_000), currency=USD)
    assert "price-unavailable" not in forecast.uncertainty
    assert str(harness.tasks.show(task_id).plan.plan.forecast.cost).startswith("$")  # type: ignore[union-attr]

    other = harness.tasks.create_task(harness.snapshot(), _requirement(), idempotency_key=keys()).task_id
    harness.set_budget(other)
    route = ModelRoute(provider="scripted", adapter=ScriptedAdapter([_plan_reply()]), cheap_model="scripted-cheap",
                       capable_model="scripted-unpriced")
    unpriced = propose_plan(other, gateway=ModelGateway(harness.db, [route]), tasks=harness.tasks,
                            position=LadderPosition.start(), idempotency_key="plan-unpriced").plan.forecast
    assert unpriced is not None and unpriced.cost.low == forecast.cost.low
    assert str(unpriced.cost) == "unknown (no price for model scripted-unpriced)"
    assert "price-unavailable" in unpriced.uncertainty
