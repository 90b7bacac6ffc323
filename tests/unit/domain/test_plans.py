"""Plans are immutable values with one canonical JSON form and its sha256; files stay inside the repository."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.clarification import ClarificationPolicy, QuestionOrigin
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.forecast import ForecastInputs, TaskClass, forecast_task
from codeflux.domain.ladder import Effort
from codeflux.domain.money import USD
from codeflux.domain.plans import (
    MAX_STEPS,
    PLAN_SCHEMA,
    ClarityCheck,
    Plan,
    PlanCheck,
    PlanForecast,
    PlanPermission,
    PlanQuestion,
    PlanScope,
    PlanStep,
    StepTrace,
    canonical_plan_json,
    check_repository_path,
    plan_from_document,
    plan_sha256,
    plan_to_document,
)
from codeflux.domain.pricing import Price

PRICE = Price.from_per_million_tokens(currency=USD, input_per_million="3.00", output_per_million="15.00")
INPUTS = ForecastInputs(task_class=TaskClass.BUG_FIX, repository_files=10, repository_bytes=1000, likely_files=1,
                        checks=1, model="claude-sonnet-4-5", effort=Effort.LOW)


def a_plan(**changes: object) -> Plan:
    plan = Plan(
        task_class=TaskClass.BUG_FIX,
        scope=PlanScope(summary="Make add() handle negative numbers", paths=("pkg",), excluded=("the CLI",)),
        steps=(
            PlanStep(title="Fix add", detail="Correct the sign handling", expected_files=("pkg/calc.py",)),
            PlanStep(title="Test it", detail="Add a regression test", expected_files=("tests/test_calc.py",
                                                                                       "pkg/calc.py")),
        ),
        checks=(PlanCheck(name="unit tests", argv=("python", "-m", "pytest", "-q")),),
        permissions=(PlanPermission(need=CapabilityNeed(capability=Capability.PROCESS), reason="run the tests"),),
        assumptions=("pytest is installed",),
    )
    return replace(plan, **changes)  # type: ignore[arg-type]


def test_the_canonical_json_is_compact_sorted_and_its_sha256_is_over_those_bytes() -> None:
    plan = a_plan()
    text = canonical_plan_json(plan)

    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(text)["schema"] == PLAN_SCHEMA
    assert plan_sha256(plan) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_plan_reads_back_from_its_document_unchanged_with_the_same_hash() -> None:
    plan = a_plan().with_forecast(PlanForecast.from_forecast(forecast_task(INPUTS, price=PRICE)))

    again = plan_from_document(json.loads(canonical_plan_json(plan)))

    assert again == plan
    assert plan_sha256(again) == plan_sha256(plan)


def test_an_unknown_forecast_cost_round_trips_with_its_reasons() -> None:
    forecast = PlanForecast.from_forecast(forecast_task(INPUTS, price=None))
    plan = a_plan().with_forecast(forecast)

    again = plan_from_document(plan_to_document(plan))

    assert again.forecast is not None and not again.forecast.cost.is_known
    assert again.forecast.cost.reasons == forecast.cost.reasons


def test_attaching_a_forecast_changes_the_hash_so_an_approval_covers_the_range_shown() -> None:
    plan = a_plan()
    with_range = plan.with_forecast(PlanForecast.from_forecast(forecast_task(INPUTS, price=PRICE)))

    assert plan_sha256(with_range) != plan_sha256(plan)
    assert with_range.with_forecast(None) == plan


def test_expected_files_are_every_step_file_once_sorted() -> None:
    assert a_plan().expected_files == ("pkg/calc.py", "tests/test_calc.py")


@pytest.mark.parametrize("path", [
    "../outside.py", "/etc/passwd", "pkg/../../x", "./pkg/calc.py", "pkg//calc.py", "pkg/", ".git/config",
    "pkg/.GIT/hooks/pre-commit", "pkg\\calc.py", "C:calc.py", "", " ", "pkg/\x01calc.py", "a\x00b",
])  # fmt: skip
def test_a_plan_naming_a_file_outside_the_repository_is_refused(path: str) -> None:
    with pytest.raises(InvalidValueError):
        PlanStep(title="t", detail="d", expected_files=(path,))
    with pytest.raises(InvalidValueError):
        PlanScope(summary="s", paths=(path,))


def test_repository_paths_with_dots_inside_names_are_fine() -> None:
    for path in ("pkg/calc.py", ".github/workflows/ci.yml", "a..b/c", "docs/.gitignore-notes"):
        check_repository_path(path, field="path")


def test_a_plan_needs_at_least_one_step_and_at_most_the_limit() -> None:
    step = PlanStep(title="t", detail="d")
    with pytest.raises(InvalidValueError, match="steps"):
        a_plan(steps=())
    with pytest.raises(InvalidValueError, match="steps"):
        a_plan(steps=(step,) * (MAX_STEPS + 1))


@pytest.mark.parametrize("argv", [(), ("",), ("pytest", "a\x00b"), ("x" * 5000,)])
def test_a_check_is_a_program_and_bounded_arguments(argv: tuple[str, ...]) -> None:
    with pytest.raises(InvalidValueError):
        PlanCheck(name="c", argv=argv)


def test_two_checks_with_one_name_or_a_permission_twice_are_refused() -> None:
    check = PlanCheck(name="tests", argv=("pytest",))
    need = PlanPermission(need=CapabilityNeed.parse("network:pypi.org"), reason="install")
    with pytest.raises(InvalidValueError, match="same name"):
        a_plan(checks=(check, check))
    with pytest.raises(InvalidValueError, match="twice"):
        a_plan(permissions=(need, need))


def test_text_fields_must_be_non_blank_and_bounded() -> None:
    with pytest.raises(InvalidValueError, match="title"):
        PlanStep(title="   ", detail="d")
    with pytest.raises(InvalidValueError, match="title"):
        PlanStep(title="t" * 201, detail="d")
    with pytest.raises(InvalidValueError, match="summary"):
        PlanScope(summary="")


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(extra=1),
    lambda d: d.pop("steps"),
    lambda d: d.update(schema="codeflux-plan-v0"),
    lambda d: d.update(task_class="rewrite-everything"),
    lambda d: d["steps"][0].update(expected_files="pkg/calc.py"),
    lambda d: d["checks"][0].update(argv=[True]),
    lambda d: d["permissions"][0].update(need="teleport"),
    lambda d: d.update(forecast={"label": "x"}),
])  # fmt: skip
def test_a_stored_document_that_does_not_fit_exactly_is_refused(mutate) -> None:  # type: ignore[no-untyped-def]
    document = json.loads(canonical_plan_json(a_plan()))
    mutate(document)
    with pytest.raises(InvalidValueError):
        plan_from_document(document)


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
_PATH = st.lists(_NAME, min_size=1, max_size=3).map("/".join)
_TEXT = st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "\x00" not in t)
_STEP = st.builds(PlanStep, title=_TEXT, detail=_TEXT,
                  expected_files=st.lists(_PATH, max_size=3, unique=True).map(tuple))
_PLAN = st.builds(
    Plan,
    task_class=st.sampled_from(TaskClass),
    scope=st.builds(PlanScope, summary=_TEXT, paths=st.lists(_PATH, max_size=2, unique=True).map(tuple)),
    steps=st.lists(_STEP, min_size=1, max_size=3).map(tuple),
    checks=st.lists(_NAME, max_size=3, unique=True).map(
        lambda names: tuple(PlanCheck(name=n, argv=("pytest", n)) for n in names)),
    assumptions=st.lists(_TEXT, max_size=2).map(tuple),
)


@given(_PLAN)
def test_every_plan_round_trips_through_its_canonical_json(plan: Plan) -> None:
    again = plan_from_document(json.loads(canonical_plan_json(plan)))
    assert again == plan
    assert canonical_plan_json(again) == canonical_plan_json(plan)


@given(_PLAN, _PLAN)
def test_distinct_plans_have_distinct_hashes(first: Plan, second: Plan) -> None:
    assert (plan_sha256(first) == plan_sha256(second)) == (first == second)


def test_examples_round_trip_and_a_plan_without_them_keeps_its_document_and_hash() -> None:
    from codeflux.domain.acceptance import AcceptanceExample
    from codeflux.domain.plans import plan_from_document, plan_sha256, plan_to_document

    plain = plan_from_document(json.loads(json.dumps(plan_to_document(a_plan()))))
    assert "examples" not in plan_to_document(plain)  # older revisions: same document, same hash
    with_examples = replace(plain, examples=(AcceptanceExample(test="tests/t.py::test_x"),
                                             AcceptanceExample(argv=("python", "-c", "print(2)"), expected=("2",))))
    document = plan_to_document(with_examples)
    assert document["examples"] == [{"test": "tests/t.py::test_x"},
                                    {"command": ["python", "-c", "print(2)"], "expected": ["2"]}]
    assert plan_from_document(json.loads(json.dumps(document))) == with_examples
    assert plan_sha256(with_examples) != plan_sha256(plain)


_NUMBERS = st.lists(st.integers(min_value=1, max_value=50), max_size=4, unique=True).map(tuple)
_QUESTION = st.builds(PlanQuestion, question=_TEXT, origin=st.sampled_from(QuestionOrigin), assumption=_TEXT,
                      answer=st.none() | _TEXT).flatmap(
    lambda q: st.just(q) if q.answer is not None else st.builds(replace, st.just(q), assumed=st.booleans()))
_CLARITY = st.builds(ClarityCheck, policy=st.sampled_from(ClarificationPolicy), base_commit=st.just("a" * 40),
                     names=st.lists(_TEXT, max_size=3).map(tuple))


def _with_stage_2_and_4(plan: Plan) -> st.SearchStrategy[Plan]:
    trace = st.lists(st.builds(StepTrace, examples=_NUMBERS, sentences=_NUMBERS), min_size=len(plan.steps),
                     max_size=len(plan.steps)).map(tuple)
    return st.builds(replace, st.just(plan), trace=st.none() | trace,
                     questions=st.lists(_QUESTION, max_size=3).map(tuple), clarity=st.none() | _CLARITY)


@given(_PLAN.flatmap(_with_stage_2_and_4))
def test_a_plan_with_a_trace_questions_and_a_clarity_check_round_trips(plan: Plan) -> None:
    again = plan_from_document(json.loads(canonical_plan_json(plan)))
    assert again == plan and plan_sha256(again) == plan_sha256(plan)


def test_a_plan_without_trace_questions_or_clarity_keeps_its_document_and_hash() -> None:
    plain = a_plan()
    document = plan_to_document(plain)
    assert not {"trace", "questions", "clarity"} & set(document)  # older revisions: same document, same hash
    traced = replace(plain, trace=(StepTrace(examples=(1,), sentences=(1,)), StepTrace()))
    assert plan_to_document(traced)["trace"] == [{"examples": [1], "sentences": [1]}, {"examples": [], "sentences": []}]
    assert plan_sha256(traced) != plan_sha256(plain)
    asked = replace(plain, questions=(PlanQuestion(question="Which?", origin=QuestionOrigin.PLANNER,
                                                   assumption="This one."),))
    assert asked.open_questions == (1,)
    answered = asked.answered(1, "That one.")
    assert answered.open_questions == () and answered.questions[0].answer == "That one."
    assert plan_sha256(answered) != plan_sha256(asked)
    with pytest.raises(InvalidValueError, match="no question 2"):
        asked.answered(2, "x")
    with pytest.raises(InvalidValueError, match="answered or assumed"):
        PlanQuestion(question="q", origin=QuestionOrigin.PLANNER, assumption="a", answer="b", assumed=True)


def test_declared_atoms_round_trip_and_a_plan_without_them_keeps_its_document_and_hash() -> None:
    """Issue 17: steps declare their atoms before code is written; a plan stored before that (no ``atoms`` key
    in any step) reads back to the same document and hash, so its approval still binds."""
    from codeflux.domain.contracts import AtomEffect, DeclaredAtom

    plain = a_plan()
    stored = canonical_plan_json(plain)
    assert all("atoms" not in step for step in json.loads(stored)["steps"])
    assert plan_sha256(plan_from_document(json.loads(stored))) == plan_sha256(plain)
    add = DeclaredAtom(name="add", signature="def add(a: int, b: int) -> int")
    load = DeclaredAtom(name="pkg.io.Loader.load", signature="def load(self, path: str) -> bytes",
                        effects=(AtomEffect.FILE, AtomEffect.CLOCK))
    declared = replace(plain, steps=(replace(plain.steps[0], atoms=(add, load)), plain.steps[1]))
    document = json.loads(canonical_plan_json(declared))
    assert document["steps"][0]["atoms"] == [
        {"name": "add", "signature": "def add(a: int, b: int) -> int", "effects": []},
        {"name": "pkg.io.Loader.load", "signature": "def load(self, path: str) -> bytes", "effects": ["file", "clock"]}]
    assert "atoms" not in document["steps"][1]
    again = plan_from_document(document)
    assert again == declared and plan_sha256(again) == plan_sha256(declared) != plan_sha256(plain)
    assert add.pure and not load.pure and "pure (no effects)" in add.describe() and "file, clock" in load.describe()


@pytest.mark.parametrize("atom", [
    {"name": "not a name", "signature": "def f() -> None", "effects": []},
    {"name": "f", "signature": " ", "effects": []},
    {"name": "f", "signature": "x" * 1001, "effects": []},
    {"name": "f", "signature": "def f() -> None", "effects": ["disk"]},
    {"name": "f", "signature": "def f() -> None", "effects": ["clock", "file"]},  # not in the canonical order
    {"name": "f", "signature": "def f() -> None", "effects": ["file", "file"]},
    {"name": "f", "signature": "def f() -> None"},
    None,  # an empty list: the canonical form leaves the key out
])
def test_a_stored_declaration_that_does_not_fit_is_refused(atom: dict[str, object] | None) -> None:
    document = plan_to_document(a_plan())
    document["steps"][0]["atoms"] = [atom] if atom is not None else []  # type: ignore[index]
    with pytest.raises(InvalidValueError):
        plan_from_document(json.loads(json.dumps(document)))


def test_a_step_declaring_one_name_twice_or_too_many_atoms_is_refused() -> None:
    from codeflux.domain.contracts import MAX_ATOMS_PER_STEP, DeclaredAtom

    add = DeclaredAtom(name="add", signature="def add(a: int, b: int) -> int")
    with pytest.raises(InvalidValueError, match="twice"):
        PlanStep(title="t", detail="d", atoms=(add, add))
    many = tuple(DeclaredAtom(name=f"f{n}", signature="def f() -> None") for n in range(MAX_ATOMS_PER_STEP + 1))
    with pytest.raises(InvalidValueError, match=r"step\.atoms"):
        PlanStep(title="t", detail="d", atoms=many)
