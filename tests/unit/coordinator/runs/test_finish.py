"""The finish tool's contract (issue 15 item 2): its arguments are validated against the plan, a problem is a
tool error the model can fix, a red check becomes the call's result, and the name never reaches a worker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeflux.coordinator.runs.finish import (
    FINISH_RED_MARKER,
    FINISH_SPEC,
    FINISH_TOOL_NAME,
    CheckRun,
    FinishProblem,
    FinishReport,
    StepStatus,
    accepted_reason,
    finish_repairs_in,
    parse_finish,
    red_check_result,
)
from codeflux.coordinator.runs.loop import _TOOLS
from codeflux.domain.errors import ToolRequestInvalidError
from codeflux.domain.models import Message, Role, ToolCall, ToolResult
from codeflux.domain.tools import TOOL_CATALOG, bind_tool_request
from tests.fixtures.task_runs import a_plan_with_two_steps

PLAN = a_plan_with_two_steps()  # two steps


def parsed(arguments: dict[str, Any]) -> FinishReport | FinishProblem:
    return parse_finish(arguments, PLAN)


def test_a_valid_finish_reports_each_step_in_order() -> None:
    report = parsed({"summary": "  Fixed add().  ", "steps": [
        {"status": "done"}, {"status": "not-needed", "reason": "the test already existed"}]})

    assert isinstance(report, FinishReport)
    assert report.summary == "Fixed add()."
    assert [step.status for step in report.steps] == [StepStatus.DONE, StepStatus.NOT_NEEDED]
    assert report.describe(PLAN).splitlines() == [
        "Fixed add().", "1. Handle negatives: done", "2. Test negatives: not-needed — the test already existed"]


@pytest.mark.parametrize(("arguments", "says"), [
    ({"summary": "x", "steps": [{"status": "done"}]}, "steps has 1 entries but the plan has 2 step(s)"),
    ({"summary": "x", "steps": [{"status": "done"}] * 3}, "steps has 3 entries but the plan has 2 step(s)"),
    ({"summary": "x", "steps": [{"status": "done"}, {"status": "not-needed"}]},
     "steps[2] is not-needed without a reason"),
    ({"summary": "x", "steps": [{"status": "done"}, {"status": "not-needed", "reason": "  "}]},
     "steps[2] is not-needed without a reason"),
    ({"summary": "x", "steps": [{"status": "finished"}, {"status": "done"}]},
     'steps[1].status must be "done" or "not-needed"'),
    ({"summary": "x", "steps": [{"status": "done", "files": []}, {"status": "done"}]}, "steps[1] has unknown key"),
    ({"summary": "", "steps": [{"status": "done"}] * 2}, "summary must be a non-empty text"),
    ({"steps": [{"status": "done"}] * 2}, "summary must be a non-empty text"),
    ({"summary": "x"}, "steps must be a list with one entry per plan step (2)"),
    ({"summary": "x", "steps": ["done", "done"]}, "steps[1] must be an object"),
    ({"summary": "x", "steps": [{"status": "done"}] * 2, "force": True}, "unknown argument(s) 'force'"),
    ({"summary": "x" * 8001, "steps": [{"status": "done"}] * 2}, "summary is longer than 8000 characters"),
])
def test_malformed_arguments_are_a_problem_the_model_can_fix(arguments: dict[str, Any], says: str) -> None:
    problem = parsed(arguments)

    assert isinstance(problem, FinishProblem)
    assert problem.text.startswith("refused: finish was not accepted: ") and says in problem.text
    assert problem.text.endswith("Call finish again with corrected arguments.")


def test_finish_is_sent_to_the_model_but_is_not_a_worker_tool() -> None:
    assert [spec.name for spec in _TOOLS][-1] == FINISH_TOOL_NAME
    assert FINISH_TOOL_NAME not in {name.value for name in TOOL_CATALOG}
    with pytest.raises(ToolRequestInvalidError):
        bind_tool_request(FINISH_TOOL_NAME, {"summary": "x", "steps": []})  # never dispatched to a worker
    schema = json.loads(FINISH_SPEC.input_schema_json)
    assert schema["required"] == ["summary", "steps"] and schema["additionalProperties"] is False
    assert schema["properties"]["steps"]["items"]["properties"]["status"]["enum"] == ["done", "not-needed"]
    assert FINISH_RED_MARKER in FINISH_SPEC.description and "not rules" in FINISH_SPEC.description


def test_a_red_check_is_the_finish_calls_result_and_the_repairs_are_counted_from_the_conversation() -> None:
    call = ToolCall(call_id="f1", name=FINISH_TOOL_NAME, arguments_json="{}")
    red = CheckRun(name="unit tests", argv=("python", "-m", "pytest"), passed=False, ran=True,
                   shown="state: succeeded\nexit code: 1\nstdout:\nFAILED tests/test_calc.py::test_add_negative")

    result = red_check_result(call, [red], repair=2, bound=3)

    assert result.call_id == "f1" and result.is_error
    assert result.content.startswith(f"{FINISH_RED_MARKER} (repair 2 of 3;")
    assert "check 'unit tests' (python -m pytest):\nstate: succeeded\nexit code: 1" in result.content
    assert "untrusted" in result.content
    conversation = [Message.user_text("prompt"), Message(role=Role.USER, parts=(result,)),
                    Message(role=Role.USER, parts=(ToolResult(call_id="x", content="state: failed"),))]
    assert finish_repairs_in(conversation) == 1


def test_the_accepted_reason_says_how_the_checks_ended_and_carries_the_report() -> None:
    report = parsed({"summary": "Fixed add().", "steps": [{"status": "done"}, {"status": "done"}]})
    assert isinstance(report, FinishReport)
    green = CheckRun(name="unit tests", argv=("pytest",), passed=True, ran=True, shown="")
    red = CheckRun(name="unit tests", argv=("pytest",), passed=False, ran=True, shown="")
    unrun = CheckRun(name="lint", argv=("ruff",), passed=False, ran=False, shown="")

    assert accepted_reason(report, PLAN, [green], repairs_used_up=False).startswith(
        "the model called finish (unit tests: passed)\nFixed add().")
    assert accepted_reason(report, PLAN, [red, unrun], repairs_used_up=True).startswith(
        "the model called finish after the repair bound with checks still red; the pipeline's gates decide "
        "(unit tests: failed; lint: did not run)")
    assert "no check command was found" in accepted_reason(report, PLAN, [], repairs_used_up=False)
