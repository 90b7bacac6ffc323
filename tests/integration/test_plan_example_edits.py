"""The person edits the plan's acceptance examples before approving it (issue 14 item 1), through the task service
and the method table, with the scripted provider (not a model), a real repository, real workers and the real
ledger.

The edit records a new plan revision by the person; the old revision can no longer be approved; the edited one
is approved and run, stage 1's evidence says the example was edited by the person in that revision, and stage 29
reproduces the edited example on the diff. While the requirement has its own ACCEPTANCE blocks, an edit is
refused: it would change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.errors import AcceptanceExampleNeededError, InvalidValueError, PlanChangedError, UsageError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.plan_examples import ExampleEdit
from codeflux.domain.plans import Plan, PlanAuthor, plan_sha256
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.services.registry import Code
from codeflux.store.database import Database
from tests.fixtures.service_runs import Coordinator, call, control, failure
from tests.fixtures.task_runs import (
    REQUIREMENT,
    Harness,
    a_plan_with_two_steps,
    done,
    implementing_turns,
    make_harness,
    scripted_gateway,
)
from tests.fixtures.tasks import keys

PLAIN = "Make add() handle negative numbers and cover it with a test."


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def awaiting_approval(harness: Harness, plan: Plan, requirement: str = PLAIN) -> TaskId:
    """A task with a budget whose plan revision 1 (``plan``, drafted by the scripted provider) awaits approval."""
    created = harness.tasks.create_task(harness.snapshot(), requirement, idempotency_key=keys())
    harness.set_budget(created.task_id)
    planning = harness.tasks.transition(created.task_id, TaskState.FORECASTING, expected_revision=created.revision,
                                        reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())
    harness.tasks.record_plan_revision(created.task_id, plan, created_by=PlanAuthor.SCRIPTED,
                                       expected_revision=planning.revision, idempotency_key=keys())
    return created.task_id


def evidence_of(harness: Harness, task_id: TaskId, stage: StageName) -> tuple[StageOutcome, dict[str, Any]]:
    row = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is stage)
    return row.verdict.outcome, dict(row.evidence)


def test_an_edited_revision_is_approved_run_and_its_example_reproduced(harness: Harness) -> None:
    plan = a_plan_with_two_steps()
    task_id = awaiting_approval(harness, plan)
    argv = (harness.venv_python, "-c", "from pkg.calc import add; print(add(-1, -2))")
    added = ExampleEdit(example=AcceptanceExample(argv=argv, expected=("-3",)), steps=(1,))

    change = harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan),
                                         edits=(ExampleEdit(number=1), added), idempotency_key=keys())

    assert change.plan_revision == 2
    view = harness.tasks.show(task_id)
    assert view.plan is not None and view.plan.created_by is PlanAuthor.USER
    edited = view.plan.plan
    assert edited.examples[1].argv == argv and edited.examples_edited_in == (None, 2)
    assert [t.examples for t in edited.trace or ()] == [(1, 2), (1,)]
    assert view.task.state is TaskState.AWAITING_PLAN_APPROVAL  # the edit decides nothing
    # the revision the person read before the edit is no longer the one to approve
    with pytest.raises(PlanChangedError):
        harness.tasks.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys())
    harness.tasks.approve_plan(task_id, revision=2, sha256=view.plan.sha256, idempotency_key=keys())

    gateway, _ = scripted_gateway(harness.db, [*implementing_turns(), done()])
    allowed = [PreapprovedOperation.command(pytest_argv(harness.venv_python)), PreapprovedOperation.command(list(argv))]
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=HeadlessPolicy.allowing(allowed))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    satisfied, instructions = evidence_of(harness, task_id, StageName.INSTRUCTIONS)
    assert satisfied is StageOutcome.SATISFIED
    assert [e["origin"] for e in instructions["examples"]] == ["proposed by the model",
                                                               "edited by the person in revision 2"]
    assert instructions["source"] == ("example(s) 1 proposed by the model; example(s) 2 edited by the person in "
                                      "revision 2; approved by the person with plan revision 2")
    reproduced, examples = evidence_of(harness, task_id, StageName.END_TO_END_TESTS)
    assert reproduced is StageOutcome.SATISFIED
    command = examples["examples"][1]
    assert command["argv"] == list(argv) and command["stdout_lines"] == ["-3"] and command["outcome"] == "satisfied"
    assert command["origin"] == "edited by the person in revision 2"


def test_an_edit_is_refused_when_the_requirements_own_blocks_win(harness: Harness) -> None:
    plan = a_plan_with_two_steps()
    task_id = awaiting_approval(harness, plan, requirement=REQUIREMENT)

    with pytest.raises(UsageError, match=r"ACCEPTANCE blocks .* would change nothing"):
        harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan),
                                    edits=(ExampleEdit(example=AcceptanceExample(test="tests/a.py::t"), steps=(1,)),),
                                    idempotency_key=keys())

    view = harness.tasks.show(task_id)
    assert view.plan is not None and view.plan.revision == 1  # nothing recorded


def test_a_stale_a_decided_or_an_invalid_edit_records_nothing(harness: Harness) -> None:
    plan = a_plan_with_two_steps()
    task_id = awaiting_approval(harness, plan)
    remove = (ExampleEdit(example=AcceptanceExample(test="tests/test_calc.py::test_add"), steps=(2,)),)

    with pytest.raises(PlanChangedError):
        harness.tasks.edit_examples(task_id, revision=1, sha256="0" * 64, edits=remove, idempotency_key=keys())
    with pytest.raises(InvalidValueError, match="removing the last one is refused"):
        harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan), edits=(), idempotency_key=keys())
    with pytest.raises(InvalidValueError, match="example 2 is new: name the step"):
        harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys(), edits=(
            ExampleEdit(number=1), ExampleEdit(example=AcceptanceExample(test="tests/test_calc.py::test_add")),))
    view = harness.tasks.show(task_id)
    assert view.plan is not None and view.plan.revision == 1

    harness.tasks.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys())
    with pytest.raises(UsageError, match="examples are edited while its plan awaits approval"):
        harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan), edits=remove,
                                    idempotency_key=keys())


def plain_demo_task(c: Coordinator, requirement: str) -> pb.TaskView:
    created = call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=control(), repository_path=str(c.repo), requirement=requirement))
    assert isinstance(created, pb.TaskView)
    call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=control(), task_id=created.task_id, choice="set",
                                                         hard_limit="1.00", currency="USD"))
    planned = call(c, "TaskService/DraftPlan", pb.DraftPlanRequest(control=control(), task_id=created.task_id))
    assert isinstance(planned, pb.TaskView)
    return planned


def test_edit_plan_examples_through_the_method_table(coordinator: Coordinator) -> None:
    """The one handler the browser and the CLI reach: the plan view lists the plan's own examples with their
    steps and origin; an invalid example is refused with the domain's reason; a valid edit records revision 2,
    which the view shows as edited by the person; the old revision is then stale."""
    c = coordinator
    planned = plain_demo_task(c, "Make add() in calc/ops.py return the correct sum for negative numbers.")
    plan = planned.plan
    assert plan.examples_editable and plan.examples_edit_note == ""
    assert [(e.number, e.test, list(e.steps), e.origin) for e in plan.plan_examples] == [
        (1, "tests/test_ops.py::test_add_negative", [1], "proposed by the model")]

    def edit(*entries: pb.PlanExampleEdit, revision: int = plan.revision, sha256: str = plan.sha256) -> object:
        return pb.EditPlanExamplesRequest(control=control(), task_id=planned.task_id, revision=revision,
                                          sha256=sha256, examples=list(entries))

    whole_file = failure(c, "TaskService/EditPlanExamples",
                         edit(pb.PlanExampleEdit(number=1, test="tests/test_ops.py")))
    assert whole_file.code == Code.INVALID_ARGUMENT and "a whole file or suite is not an example" in (
        whole_file.safe_message), whole_file

    edited = call(c, "TaskService/EditPlanExamples", edit(
        pb.PlanExampleEdit(number=1), pb.PlanExampleEdit(argv=["python3", "-m", "calc"], expected=["ok"])))

    assert isinstance(edited, pb.TaskView) and edited.plan.revision == 2 and edited.plan.author_label == "you"
    assert [(e.number, list(e.argv), list(e.steps), e.origin) for e in edited.plan.plan_examples][1] == (
        2, ["python3", "-m", "calc"], [1], "edited by the person in revision 2")
    assert edited.plan.examples[1] == ("`python3 -m calc` exits 0 and prints exactly: ok "
                                       "(edited by the person in revision 2)")
    assert "edited by the person in revision 2" in edited.plan.examples_source
    stale = failure(c, "TaskService/EditPlanExamples", edit(pb.PlanExampleEdit(number=1)))
    assert stale.code == Code.ABORTED, stale


def test_the_plan_view_says_why_the_examples_cannot_be_edited(coordinator: Coordinator) -> None:
    planned = plain_demo_task(coordinator, (coordinator.repo / "TASK.md").read_text())

    assert not planned.plan.examples_editable
    assert "ACCEPTANCE blocks (1 example(s)) are the examples this task is checked against" in (
        planned.plan.examples_edit_note)
    refused = failure(coordinator, "TaskService/EditPlanExamples", pb.EditPlanExamplesRequest(
        control=control(), task_id=planned.task_id, revision=planned.plan.revision, sha256=planned.plan.sha256,
        examples=[pb.PlanExampleEdit(number=1, test="tests/test_ops.py::test_add")]))
    assert refused.code == Code.INVALID_ARGUMENT and "would change nothing" in refused.safe_message


def test_a_plan_without_any_example_gets_one_from_the_person_and_is_then_approved(harness: Harness) -> None:
    """The question before approval (no example anywhere) answered by the person's own example."""
    plan = replace(a_plan_with_two_steps(), examples=(), trace=None)
    task_id = awaiting_approval(harness, plan)
    with pytest.raises(AcceptanceExampleNeededError, match="--add-example 'test: PATH::NAME'"):
        harness.tasks.approve_plan(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys())

    harness.tasks.edit_examples(task_id, revision=1, sha256=plan_sha256(plan), idempotency_key=keys(), edits=(
        ExampleEdit(example=AcceptanceExample(test="tests/test_calc.py::test_add_negative")),))

    view = harness.tasks.show(task_id)
    assert view.plan is not None and view.plan.plan.examples_edited_in == (2,)
    harness.tasks.approve_plan(task_id, revision=2, sha256=view.plan.sha256, idempotency_key=keys())
    assert harness.tasks.show(task_id).task.state is TaskState.READY
