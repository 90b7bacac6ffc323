"""Untrusted plan JSON becomes a domain plan only when it fits exactly: strict types, no extra fields, bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeflux.coordinator.tasks.plan_schema import PlanDocument, parse_plan_json, parse_plan_object
from codeflux.domain.errors import PlanInvalidError, UsageError
from codeflux.domain.forecast import TaskClass
from codeflux.domain.plans import MAX_PLAN_JSON_BYTES, MAX_STEPS, plan_sha256


def a_document() -> dict[str, Any]:
    return {
        "task_class": "bug-fix",
        "scope": {"summary": "Make add() handle negatives", "paths": ["pkg"]},
        "steps": [{"title": "Fix add", "detail": "Correct the sign", "expected_files": ["pkg/calc.py"]}],
        "checks": [{"name": "unit tests", "argv": ["python", "-m", "pytest", "-q"]}],
        "permissions": [{"need": "process", "reason": "run the tests"}],
        "assumptions": ["pytest is installed"],
        "examples": [{"test": "tests/test_calc.py::test_add_negative"},
                     {"command": ["python", "-c", "print(1)"], "expected": ["1"]}],
        "trace": [{"examples": [1, 2], "sentences": [1]}],
    }


def test_a_well_formed_plan_becomes_the_domain_plan() -> None:
    plan = parse_plan_json(json.dumps(a_document()))

    assert plan.task_class is TaskClass.BUG_FIX
    assert plan.steps[0].expected_files == ("pkg/calc.py",)
    assert plan.checks[0].argv == ("python", "-m", "pytest", "-q")
    assert str(plan.permissions[0].need) == "process"
    assert plan.forecast is None
    assert [example.describe() for example in plan.examples] == [
        "test tests/test_calc.py::test_add_negative exists and passes",
        "`python -c 'print(1)'` exits 0 and prints exactly: 1"]


def test_the_schema_the_planner_is_sent_requires_examples() -> None:
    """Issue 14 item 1: a plan states executable acceptance examples; the key cannot be left out."""
    schema = PlanDocument.model_json_schema()
    assert "examples" in schema["required"]
    document = a_document()
    del document["examples"]
    with pytest.raises(PlanInvalidError, match="examples: Field required"):
        parse_plan_json(json.dumps(document))


def test_the_schema_the_planner_is_sent_requires_a_trace_and_offers_questions() -> None:
    """Issue 14 items 2 and 3: the trace (step → example and sentence numbers) cannot be left out, has one entry
    per step, and the planner's own questions are optional; they become planner questions, still open."""
    schema = PlanDocument.model_json_schema()
    assert "trace" in schema["required"] and "questions" in schema["properties"]
    assert "questions" not in schema["required"]
    document = a_document()
    document["questions"] = [{"question": "Keep the old name?", "assumption": "Yes, keep it."}]
    plan = parse_plan_json(json.dumps(document))
    assert plan.trace is not None and plan.trace[0].examples == (1, 2) and plan.trace[0].sentences == (1,)
    assert plan.questions[0].origin == "planner" and plan.questions[0].open and plan.open_questions == (1,)
    del document["trace"]
    with pytest.raises(PlanInvalidError, match="trace: Field required"):
        parse_plan_json(json.dumps(document))
    document["trace"] = [{"examples": [1], "sentences": []}] * 2
    with pytest.raises(PlanInvalidError, match="one per step"):
        parse_plan_json(json.dumps(document))
    document["trace"] = [{"examples": [0], "sentences": []}]
    with pytest.raises(PlanInvalidError, match="trace"):
        parse_plan_json(json.dumps(document))


@pytest.mark.parametrize("example", [
    {"test": "tests/test_calc.py"},  # a whole file is not an example
    {"test": "t.py::a", "command": ["x"]},
    {"command": []},
    {"expected": ["1"]},
    {"test": "t.py::a", "expected": ["1"]},
])  # fmt: skip
def test_an_example_that_is_not_executable_is_refused(example: dict[str, Any]) -> None:
    document = a_document()
    document["examples"] = [example]
    with pytest.raises(PlanInvalidError):
        parse_plan_json(json.dumps(document))


def test_optional_lists_may_be_left_out_and_bytes_parse_like_text() -> None:
    document = {"task_class": "feature", "scope": {"summary": "s"}, "steps": [{"title": "t", "detail": "d"}],
                "examples": [], "trace": [{"examples": [], "sentences": []}]}

    from_text = parse_plan_json(json.dumps(document))
    from_bytes = parse_plan_json(json.dumps(document).encode("utf-8"))

    assert from_text == from_bytes and from_text.checks == () and from_text.assumptions == ()


def test_the_same_plan_from_json_text_or_a_decoded_object_has_the_same_hash() -> None:
    assert plan_sha256(parse_plan_json(json.dumps(a_document()))) == plan_sha256(parse_plan_object(a_document()))


@pytest.mark.parametrize(("where", "mutate"), [
    ("the top level", lambda d: d.update(forecast={"p50": 1})),
    ("scope", lambda d: d["scope"].update(owner="me")),
    ("steps.0", lambda d: d["steps"][0].update(priority=1)),
    ("checks.0", lambda d: d["checks"][0].update(command="pytest -q")),
])  # fmt: skip
def test_extra_fields_are_refused_at_every_level(where: str, mutate: Any) -> None:
    document = a_document()
    mutate(document)

    with pytest.raises(PlanInvalidError, match="Extra inputs are not permitted") as caught:
        parse_plan_json(json.dumps(document))

    assert isinstance(caught.value, UsageError)


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(task_class=3),
    lambda d: d.update(steps={"title": "t"}),
    lambda d: d["steps"][0].update(expected_files="pkg/calc.py"),
    lambda d: d["checks"][0].update(argv="python -m pytest"),
    lambda d: d["checks"][0].update(argv=["python", 3]),
    lambda d: d["scope"].update(summary=None),
    lambda d: d["permissions"][0].update(need=["process"]),
    lambda d: d.update(assumptions=[True]),
])  # fmt: skip
def test_wrong_types_are_refused_not_coerced(mutate: Any) -> None:
    document = a_document()
    mutate(document)

    with pytest.raises(PlanInvalidError):
        parse_plan_json(json.dumps(document))


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(task_class="rewrite-everything"),
    lambda d: d["permissions"][0].update(need="teleport"),
    lambda d: d["steps"][0].update(expected_files=["../../etc/passwd"]),
    lambda d: d["scope"].update(paths=["/home/user/.ssh"]),
    lambda d: d["steps"][0].update(expected_files=[".git/hooks/pre-commit"]),
    lambda d: d.update(steps=[]),
    lambda d: d["checks"][0].update(argv=[]),
    lambda d: d["steps"][0].update(title=""),
])  # fmt: skip
def test_values_the_domain_refuses_are_refused_with_a_plan_error(mutate: Any) -> None:
    document = a_document()
    mutate(document)

    with pytest.raises(PlanInvalidError):
        parse_plan_json(json.dumps(document))


def test_oversize_lists_and_texts_are_refused() -> None:
    too_many = a_document()
    too_many["steps"] = [{"title": "t", "detail": "d"}] * (MAX_STEPS + 1)
    too_long = a_document()
    too_long["steps"][0]["title"] = "t" * 201

    for document in (too_many, too_long):
        with pytest.raises(PlanInvalidError):
            parse_plan_json(json.dumps(document))


def test_a_document_over_the_byte_limit_is_refused_before_it_is_parsed() -> None:
    huge = '{"task_class": "' + "x" * MAX_PLAN_JSON_BYTES + '"}'

    with pytest.raises(PlanInvalidError, match="bytes"):
        parse_plan_json(huge)


def test_a_plan_whose_canonical_form_is_too_large_is_refused() -> None:
    document = a_document()
    document["steps"] = [{"title": f"step {n}", "detail": "d" * 3000, "expected_files": []} for n in range(MAX_STEPS)]
    document["trace"] = [{"examples": [], "sentences": []}] * MAX_STEPS
    document["assumptions"] = ["a" * 3000] * 50

    with pytest.raises(PlanInvalidError, match="bytes"):
        parse_plan_object(document)


@pytest.mark.parametrize("data", ["", "not json", "[]", "null", '{"task_class": "bug-fix"'])
def test_malformed_json_is_a_plan_error(data: str) -> None:
    with pytest.raises(PlanInvalidError):
        parse_plan_json(data)


def test_a_value_that_is_not_json_is_refused() -> None:
    with pytest.raises(PlanInvalidError, match="JSON"):
        parse_plan_object({"task_class": {1, 2}})


def test_refusals_never_echo_the_offered_value() -> None:
    document = a_document()
    document["steps"][0]["title"] = "SECRET-" + "q" * 300

    with pytest.raises(PlanInvalidError) as caught:
        parse_plan_json(json.dumps(document))

    assert "SECRET" not in str(caught.value)
    assert "steps.0.title" in str(caught.value)


def test_the_schema_is_immutable_and_forbids_extra_fields() -> None:
    document = PlanDocument.model_validate_json(json.dumps(a_document()))

    with pytest.raises(Exception, match="frozen"):
        document.task_class = "feature"  # type: ignore[misc]
    assert PlanDocument.model_config.get("extra") == "forbid"


def _properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every (object.property, property schema) pair of ``schema``, its ``$defs`` included."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name, definition in [("PlanDocument", schema), *schema["$defs"].items()]:
        found += [(f"{name}.{key}", value) for key, value in definition.get("properties", {}).items()]
    return found


def test_the_schema_sent_to_the_planner_describes_every_field() -> None:
    properties = _properties(PlanDocument.model_json_schema())

    assert len(properties) >= 25
    undescribed = [name for name, value in properties if len(value.get("description", "")) < 15]
    assert undescribed == []


def test_the_schema_lists_the_allowed_task_classes_and_capabilities() -> None:
    schema = PlanDocument.model_json_schema()

    reference = schema["properties"]["task_class"]["$ref"].rsplit("/", 1)[-1]
    assert schema["$defs"][reference]["enum"] == [member.value for member in TaskClass]
    need = schema["$defs"]["PermissionDocument"]["properties"]["need"]["description"]
    assert "`process`" in need and "`network`" in need and "`install`" in need
    hint = schema["$defs"]["StepDocument"]["properties"]["expected_files"]["description"]
    assert "hint" in hint and "not a completion rule" in hint
    assert "expected_files" not in schema["$defs"]["StepDocument"].get("required", [])


def test_steps_declare_atoms_with_known_effects_in_canonical_order() -> None:
    """Issue 17: the planner's schema offers each step's ``atoms`` (name, annotated signature, effects from the
    closed set); effects are stored once each in the set's order, an unknown effect or name is refused."""
    document = a_document()
    document["steps"][0]["atoms"] = [{"name": "pkg.calc.add", "signature": "def add(a: int, b: int) -> int",
                                      "effects": ["clock", "file", "clock"]}]
    atom = parse_plan_json(json.dumps(document)).steps[0].atoms[0]
    assert (atom.name, [e.value for e in atom.effects]) == ("pkg.calc.add", ["file", "clock"])
    schema = PlanDocument.model_json_schema()
    assert "atoms" in schema["$defs"]["StepDocument"]["properties"]
    assert "global-state" in schema["$defs"]["AtomDocument"]["properties"]["effects"]["description"]
    for bad in ({"name": "add()", "signature": "def add() -> int", "effects": []},
                {"name": "add", "signature": "def add() -> int", "effects": ["disk"]},
                {"name": "add", "signature": "", "effects": []}):
        document["steps"][0]["atoms"] = [bad]
        with pytest.raises(PlanInvalidError):
            parse_plan_json(json.dumps(document))
