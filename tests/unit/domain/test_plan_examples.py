"""The person's edit of a plan's acceptance examples (issue 14 item 1): the whole new list replaces the old, the
trace is renumbered (a removed example leaves every step's list), a new example needs its steps unless the plan
has one step, the last example cannot be removed, invalid examples are refused with the domain's reason, and an
edited example says it was edited by the person in the new revision."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codeflux.domain.acceptance import AcceptanceExample, acceptance_of, parse_example
from codeflux.domain.clarification import QuestionOrigin
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.forecast import TaskClass
from codeflux.domain.plan_examples import ExampleEdit, edit_plan_examples
from codeflux.domain.plans import (
    Plan,
    PlanQuestion,
    PlanScope,
    PlanStep,
    StepTrace,
    plan_from_document,
    plan_sha256,
    plan_to_document,
)

NEG = AcceptanceExample(test="tests/test_calc.py::test_add_negative")
ZERO = AcceptanceExample(test="tests/test_calc.py::test_add_zero")
CLI = AcceptanceExample(argv=("python", "-m", "calc", "add", "1", "2"), expected=("3",))


def a_plan(**changes: object) -> Plan:
    """Two steps; step 1 serves examples 1 and 3, step 2 serves examples 2 and 3."""
    plan = Plan(
        task_class=TaskClass.BUG_FIX, scope=PlanScope(summary="Negative numbers in add()"),
        steps=(PlanStep(title="Fix add", detail="Correct the sign", expected_files=("pkg/calc.py",)),
               PlanStep(title="Test it", detail="Add tests", expected_files=("tests/test_calc.py",))),
        examples=(NEG, ZERO, CLI),
        trace=(StepTrace(examples=(1, 3), sentences=(1,)), StepTrace(examples=(2, 3), sentences=(2,))),
    )
    return replace(plan, **changes)  # type: ignore[arg-type]


def keep(*numbers: int) -> list[ExampleEdit]:
    return [ExampleEdit(number=number) for number in numbers]


def test_removing_an_example_drops_it_from_every_step_and_renumbers_the_rest() -> None:
    edited = edit_plan_examples(a_plan(), keep(1, 3), revision=2)

    assert edited.examples == (NEG, CLI)
    # example 2 (served by step 2) is gone; old example 3 is now 2 and still served by both steps
    assert edited.trace == (StepTrace(examples=(1, 2), sentences=(1,)), StepTrace(examples=(2,), sentences=(2,)))
    assert edited.examples_edited_in == ()  # nothing the person wrote is left: both are the model's


def test_reordering_renumbers_the_trace_by_the_new_positions() -> None:
    edited = edit_plan_examples(a_plan(), keep(3, 2, 1), revision=2)

    assert edited.examples == (CLI, ZERO, NEG)
    assert [t.examples for t in edited.trace or ()] == [(1, 3), (1, 2)]


def test_a_changed_example_keeps_its_steps_and_is_marked_edited_in_the_new_revision() -> None:
    edits = [ExampleEdit(number=1, example=AcceptanceExample(test="tests/test_calc.py::test_add_minus")), *keep(2, 3)]

    edited = edit_plan_examples(a_plan(), edits, revision=4)

    assert edited.examples[0].test == "tests/test_calc.py::test_add_minus"
    assert edited.trace == a_plan().trace
    assert edited.examples_edited_in == (4, None, None)
    source = acceptance_of("Fix add().", edited.examples, plan_revision=4, edited_in=edited.examples_edited_in)
    assert source.origins == ("edited by the person in revision 4", "proposed by the model", "proposed by the model")
    assert source.source == ("example(s) 2, 3 proposed by the model; example(s) 1 edited by the person in revision 4; "
                             "approved by the person with plan revision 4")


def test_an_example_kept_unchanged_keeps_the_revision_it_was_edited_in() -> None:
    once = edit_plan_examples(a_plan(), [ExampleEdit(number=1, example=AcceptanceExample(test="t.py::a")), *keep(2, 3)],
                              revision=2)
    twice = edit_plan_examples(once, [*keep(1, 2), ExampleEdit(number=3, example=AcceptanceExample(argv=("ls",)))],
                               revision=3)

    assert twice.examples_edited_in == (2, None, 3)


def test_a_new_example_needs_its_steps_in_a_plan_of_several_steps() -> None:
    with pytest.raises(InvalidValueError, match="example 4 is new: name the step"):
        edit_plan_examples(a_plan(), [*keep(1, 2, 3), ExampleEdit(example=AcceptanceExample(test="t.py::b"))],
                           revision=2)

    edited = edit_plan_examples(a_plan(), [*keep(1, 2, 3), ExampleEdit(example=AcceptanceExample(test="t.py::b"),
                                                                       steps=(2,))], revision=2)
    assert [t.examples for t in edited.trace or ()] == [(1, 3), (2, 3, 4)]
    assert edited.examples_edited_in == (None, None, None, 2)


def test_in_a_one_step_plan_a_new_example_is_served_by_that_step() -> None:
    plan = a_plan(steps=a_plan().steps[:1], trace=(StepTrace(examples=(1, 2, 3), sentences=(1,)),))

    edited = edit_plan_examples(plan, [*keep(1), ExampleEdit(example=AcceptanceExample(test="t.py::c"))], revision=2)

    assert edited.trace == (StepTrace(examples=(1, 2), sentences=(1,)),)


def test_named_steps_replace_the_old_ones_and_must_exist() -> None:
    edited = edit_plan_examples(a_plan(), [ExampleEdit(number=1, steps=(2,)), *keep(2, 3)], revision=2)
    assert [t.examples for t in edited.trace or ()] == [(3,), (1, 2, 3)]
    assert edited.examples_edited_in == ()  # only the trace changed: the example is the model's as it was

    with pytest.raises(InvalidValueError, match="names step\\(s\\) 3; the plan has 2 step"):
        edit_plan_examples(a_plan(), [ExampleEdit(number=1, steps=(3,)), *keep(2, 3)], revision=2)


def test_a_plan_without_a_trace_takes_no_steps() -> None:
    plan = a_plan(trace=None)
    assert edit_plan_examples(plan, keep(2), revision=2).trace is None
    with pytest.raises(InvalidValueError, match="plan has no trace"):
        edit_plan_examples(plan, [ExampleEdit(number=1, steps=(1,))], revision=2)


def test_removing_the_last_example_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="at least one acceptance example; removing the last one is refused"):
        edit_plan_examples(a_plan(), [], revision=2)


@pytest.mark.parametrize(("edits", "reason"), [
    (keep(1, 4), "there is no example 4"),
    (keep(1, 1), "example 1 appears twice"),
    (keep(1, 2, 3), "nothing changed"),
    ([*keep(1, 2, 3), ExampleEdit(example=NEG, steps=(1,))], "examples 1 and 4 are the same"),
    ([*keep(1, 2, 3), ExampleEdit(example=replace(CLI, expected=("4",)), steps=(1,))],
     "examples 3 and 4 run the same command but expect different output"),
])
def test_an_edit_a_rule_refuses_records_nothing(edits: list[ExampleEdit], reason: str) -> None:
    with pytest.raises(InvalidValueError, match=reason):
        edit_plan_examples(a_plan(), edits, revision=2)


@pytest.mark.parametrize(("body", "reason"), [
    ("test: tests/test_calc.py", "a whole file or suite is not an example"),
    ("test: tests/x.py::t\nexpected: 3", "a test block names one test and no expected output"),
    ("command: python -c 'print(1)", "quoting does not close"),
    ("run: ls", "a line is not 'test:', 'command:' or 'expected:'"),
])
def test_an_invalid_example_is_refused_with_the_domains_reason(body: str, reason: str) -> None:
    with pytest.raises(InvalidValueError, match=reason):
        parse_example(body)


def test_an_example_built_from_fields_is_refused_with_the_same_reason() -> None:
    """What EditPlanExamples builds from the browser's fields: the domain's own message."""
    with pytest.raises(InvalidValueError, match=r"invalid acceptance example: .*a whole file or suite is not"):
        AcceptanceExample(test="tests/test_calc.py")
    with pytest.raises(InvalidValueError, match="an example names exactly one test or one command"):
        AcceptanceExample(test="tests/a.py::t", argv=("ls",))


def test_a_command_is_split_into_its_argv_never_kept_as_a_shell_string() -> None:
    example = parse_example("command: python -m calc add '1 2' \"$HOME\"\nexpected: 3\nexpected: done")

    assert example.argv == ("python", "-m", "calc", "add", "1 2", "$HOME") and example.expected == ("3", "done")


def test_the_contradiction_questions_about_the_old_list_are_dropped_the_others_stay() -> None:
    questions = (PlanQuestion(question="Examples 3 and 4 disagree?", origin=QuestionOrigin.CONTRADICTING_EXAMPLES,
                              assumption="3 is right."),
                 PlanQuestion(question="Keep the CLI?", origin=QuestionOrigin.PLANNER, assumption="Yes."))

    edited = edit_plan_examples(a_plan(questions=questions), keep(1, 2), revision=2)

    assert [q.origin for q in edited.questions] == [QuestionOrigin.PLANNER]


def test_the_edited_plan_reads_back_exactly_and_an_unedited_plan_keeps_its_document_and_hash() -> None:
    edited = edit_plan_examples(a_plan(), [ExampleEdit(number=2, example=AcceptanceExample(test="t.py::z")),
                                           *keep(1)], revision=2)
    document = plan_to_document(edited)

    assert document["examples_edited_in"] == [2, None]
    assert plan_from_document(document) == edited
    assert "examples_edited_in" not in plan_to_document(a_plan())
    assert plan_sha256(edited) != plan_sha256(a_plan())


def test_a_plan_refuses_edit_marks_that_do_not_match_its_examples() -> None:
    with pytest.raises(InvalidValueError, match="one entry per example"):
        a_plan(examples_edited_in=(2,))
    with pytest.raises(InvalidValueError, match="empty when the person edited no example"):
        a_plan(examples_edited_in=(None, None, None))


def test_the_requirements_own_blocks_win_and_say_so_per_example() -> None:
    requirement = "Fix add().\n<<<ACCEPTANCE\ntest: tests/a.py::t\n>>>\n"

    source = acceptance_of(requirement, (NEG,), plan_revision=2, edited_in=(2,))

    assert source.examples == (AcceptanceExample(test="tests/a.py::t"),)
    assert source.origins == ("written by the person in the requirement",)
    unedited = acceptance_of("Fix add().", (NEG,), plan_revision=1)
    assert unedited.source == "proposed by the model in plan revision 1, approved by the person with it"
