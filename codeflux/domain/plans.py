"""Plans: what a task will do, as immutable values with one canonical JSON form and its sha256.

A :class:`Plan` states the task's class and scope, the steps with the files each expects to touch, the
checks it will run (argv, never a shell string), the permissions it expects (capability needs, each with
its reason), the assumptions it makes, and — attached by codeflux, never by the planner — the forecast
range shown next to it. Approval binds to a plan revision *and* its hash (:func:`plan_sha256`), so a
person approves exactly the plan they read; any new revision needs a new approval.

Every file a plan names is a repository-relative path: not absolute, no ``..`` or ``.`` component, no
backslash, no ``.git`` component, no control character. A plan naming a file outside the repository is
refused with :class:`InvalidValueError` before anything is recorded.

The canonical JSON (:func:`canonical_plan_json`) is compact, sorted by key and UTF-8; the sha256 is over
those bytes. :func:`plan_from_document` reads a stored document back and is strict: an unknown or
missing key is refused. Untrusted input (model or user JSON) goes through the pydantic schema in
``codeflux.coordinator.tasks.plan_schema`` first; the limits it enforces are the constants here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from codeflux.domain.acceptance import MAX_EXAMPLES, AcceptanceExample
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.clarification import MAX_SENTENCES, ClarificationPolicy, QuestionOrigin
from codeflux.domain.contracts import MAX_ATOMS_PER_STEP, AtomEffect, DeclaredAtom
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.forecast import CountRange, Forecast, TaskClass
from codeflux.domain.ids import TaskId
from codeflux.domain.money import Cost, CostRange, Currency, Money, UnknownCost

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGV_ITEMS",
    "MAX_ASSUMPTIONS",
    "MAX_CHECKS",
    "MAX_FILES_PER_STEP",
    "MAX_LONG_TEXT",
    "MAX_PATH_CHARS",
    "MAX_PERMISSIONS",
    "MAX_PLAN_JSON_BYTES",
    "MAX_QUESTIONS",
    "MAX_SCOPE_PATHS",
    "MAX_SHORT_TEXT",
    "MAX_STEPS",
    "PLAN_SCHEMA",
    "ClarityCheck",
    "Plan",
    "PlanAuthor",
    "PlanCheck",
    "PlanDecider",
    "PlanDecisionRow",
    "PlanForecast",
    "PlanPermission",
    "PlanQuestion",
    "PlanRevisionRow",
    "PlanScope",
    "PlanStep",
    "PlanVerdict",
    "PlanningSpend",
    "StepTrace",
    "canonical_plan_json",
    "check_repository_path",
    "plan_from_document",
    "plan_sha256",
    "plan_to_document",
]

PLAN_SCHEMA: Final = "codeflux-plan-v1"
MAX_PLAN_JSON_BYTES: Final = 256 * 1024
MAX_STEPS: Final = 50
MAX_FILES_PER_STEP: Final = 100
MAX_SCOPE_PATHS: Final = 100
MAX_CHECKS: Final = 20
MAX_ARGV_ITEMS: Final = 64
MAX_ARGUMENT_CHARS: Final = 4096
MAX_PERMISSIONS: Final = 20
MAX_ASSUMPTIONS: Final = 50
MAX_SHORT_TEXT: Final = 200
MAX_LONG_TEXT: Final = 4000
MAX_PATH_CHARS: Final = 1024
MAX_QUESTIONS: Final = 20

_KIND: Final = "plan"


def _refuse(reason: str) -> InvalidValueError:
    return InvalidValueError(kind=_KIND, reason=reason)


def _check_text(value: object, *, field: str, limit: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise _refuse(f"{field} must be non-empty text")
    if len(value) > limit:
        raise _refuse(f"{field} is longer than {limit} characters")
    if "\x00" in value:
        raise _refuse(f"{field} contains a NUL character")


def _check_items(values: object, *, field: str, limit: int, minimum: int = 0) -> tuple[object, ...]:
    if not isinstance(values, tuple):
        raise _refuse(f"{field} must be a tuple")
    if not minimum <= len(values) <= limit:
        raise _refuse(f"{field} must have {minimum} to {limit} items")
    return values


def check_repository_path(path: object, *, field: str) -> None:
    """Refuse ``path`` unless it is a clean repository-relative path (see the module docstring)."""
    _check_text(path, field=field, limit=MAX_PATH_CHARS)
    text = str(path)
    if any(ord(character) < 0x20 or character == "\x7f" for character in text):
        raise _refuse(f"{field} contains a control character")
    if text.startswith("/") or "\\" in text or (len(text) > 1 and text[1] == ":"):
        raise _refuse(f"{field} must be relative to the repository (no leading '/', drive or backslash)")
    for part in text.split("/"):
        if part in ("", ".", ".."):
            raise _refuse(f"{field} must stay inside the repository (no empty, '.' or '..' component)")
        if part.lower() == ".git":
            raise _refuse(f"{field} must not name git's own files (.git)")


def _check_paths(values: object, *, field: str, limit: int) -> None:
    paths = _check_items(values, field=field, limit=limit)
    for index, path in enumerate(paths):
        check_repository_path(path, field=f"{field}[{index}]")
    if len(set(paths)) != len(paths):
        raise _refuse(f"{field} lists a path twice")


class PlanAuthor(StrEnum):
    """Who wrote a plan revision; ``scripted`` is the scripted provider, never a model."""

    MODEL = "model"
    USER = "user"
    SCRIPTED = "scripted"


class PlanVerdict(StrEnum):
    """The one decision on a plan revision."""

    APPROVED = "approved"
    SENT_BACK = "sent-back"


class PlanDecider(StrEnum):
    """Who decided on a plan revision: a person, or the headless policy (``--yes``) standing in for one."""

    USER = "user"
    HEADLESS_POLICY = "headless-policy"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanScope:
    """What the change is about (``summary``), where it stays (``paths``) and what it will not do."""

    summary: str
    paths: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_text(self.summary, field="scope.summary", limit=MAX_LONG_TEXT)
        _check_paths(self.paths, field="scope.paths", limit=MAX_SCOPE_PATHS)
        for index, item in enumerate(_check_items(self.excluded, field="scope.excluded", limit=MAX_ASSUMPTIONS)):
            _check_text(item, field=f"scope.excluded[{index}]", limit=MAX_LONG_TEXT)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanStep:
    """One step: a short ``title``, what it does (``detail``), the files it expects to create or change, and the
    atoms — functions and methods — it declares it will add or change, each with its signature and effects
    (:class:`~codeflux.domain.contracts.DeclaredAtom`; stage 5 compares the diff with them). A step stored
    before atoms were declared has none."""

    title: str
    detail: str
    expected_files: tuple[str, ...] = ()
    atoms: tuple[DeclaredAtom, ...] = ()

    def __post_init__(self) -> None:
        _check_text(self.title, field="step.title", limit=MAX_SHORT_TEXT)
        _check_text(self.detail, field="step.detail", limit=MAX_LONG_TEXT)
        _check_paths(self.expected_files, field="step.expected_files", limit=MAX_FILES_PER_STEP)
        _check_items(self.atoms, field="step.atoms", limit=MAX_ATOMS_PER_STEP)
        if not all(isinstance(atom, DeclaredAtom) for atom in self.atoms):
            raise _refuse("step.atoms must be declared atoms")
        if len({atom.name for atom in self.atoms}) != len(self.atoms):
            raise _refuse("step.atoms declares a name twice")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanCheck:
    """A check the plan will run: its ``name`` and the exact ``argv`` (a program and its arguments)."""

    name: str
    argv: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_text(self.name, field="check.name", limit=MAX_SHORT_TEXT)
        for index, argument in enumerate(_check_items(self.argv, field="check.argv", limit=MAX_ARGV_ITEMS,
                                                      minimum=1)):
            if not isinstance(argument, str) or len(argument) > MAX_ARGUMENT_CHARS or "\x00" in argument:
                raise _refuse(f"check.argv[{index}] must be text of at most {MAX_ARGUMENT_CHARS} characters, no NUL")
        if not self.argv[0].strip():
            raise _refuse("check.argv[0] must name a program")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanPermission:
    """A capability the plan expects to need (``network:pypi.org``, ``process``) and why."""

    need: CapabilityNeed
    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.need, CapabilityNeed):
            raise _refuse("permission.need must be a capability need")
        _check_text(self.reason, field="permission.reason", limit=MAX_LONG_TEXT)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanForecast:
    """The forecast range shown with a plan (an estimate): P50–P90 time, tokens and cost, with the
    uncertainty reasons, the heuristic and the hash of the inputs it was computed from."""

    label: str
    heuristic: str
    inputs_sha256: str
    wall_seconds: CountRange
    tokens: CountRange
    cost: CostRange
    uncertainty: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_text(self.label, field="forecast.label", limit=MAX_SHORT_TEXT)
        _check_text(self.heuristic, field="forecast.heuristic", limit=MAX_SHORT_TEXT)
        if len(self.inputs_sha256) != 64 or not all(c in "0123456789abcdef" for c in self.inputs_sha256):
            raise _refuse("forecast.inputs_sha256 must be 64 lowercase hex digits")
        for index, reason in enumerate(_check_items(self.uncertainty, field="forecast.uncertainty", limit=20)):
            _check_text(reason, field=f"forecast.uncertainty[{index}]", limit=MAX_SHORT_TEXT)

    @classmethod
    def from_forecast(cls, forecast: Forecast) -> PlanForecast:
        """The range part of a computed :class:`Forecast`."""
        return cls(label=forecast.label, heuristic=forecast.heuristic, inputs_sha256=forecast.inputs_sha256,
                   wall_seconds=forecast.wall_seconds, tokens=forecast.tokens, cost=forecast.cost,
                   uncertainty=forecast.uncertainty)


def _check_numbers(values: object, *, field: str, limit: int) -> None:
    numbers = _check_items(values, field=field, limit=limit)
    if not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= limit for n in numbers):
        raise _refuse(f"{field} must hold numbers from 1 to {limit}")
    if len(set(numbers)) != len(numbers):
        raise _refuse(f"{field} names a number twice")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepTrace:
    """What one step serves, as the planner states it: acceptance example numbers and requirement sentence
    numbers (both from 1; see :mod:`codeflux.domain.clarification`)."""

    examples: tuple[int, ...] = ()
    sentences: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_numbers(self.examples, field="trace.examples", limit=MAX_EXAMPLES)
        _check_numbers(self.sentences, field="trace.sentences", limit=MAX_SENTENCES)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanQuestion:
    """An open point of the plan (stage 2): the ``question``, which check raised it, the reading assumed if it
    is not asked, and then either the person's ``answer`` or ``assumed`` (the policy ``assume`` applied)."""

    question: str
    origin: QuestionOrigin
    assumption: str
    answer: str | None = None
    assumed: bool = False

    def __post_init__(self) -> None:
        QuestionOrigin(self.origin)
        _check_text(self.question, field="question.question", limit=MAX_LONG_TEXT)
        _check_text(self.assumption, field="question.assumption", limit=MAX_LONG_TEXT)
        if self.answer is not None:
            _check_text(self.answer, field="question.answer", limit=MAX_LONG_TEXT)
        if self.answer is not None and self.assumed:
            raise _refuse("a question is answered or assumed, not both")

    @property
    def open(self) -> bool:
        """Neither answered by the person nor assumed under the policy ``assume``."""
        return self.answer is None and not self.assumed


@dataclass(frozen=True, slots=True, kw_only=True)
class ClarityCheck:
    """That codeflux ran the clarification check on this plan: under which policy, against which commit, and
    the names the requirement states explicitly that were looked up (``path:…`` / ``identifier:…``)."""

    policy: ClarificationPolicy
    base_commit: str
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        ClarificationPolicy(self.policy)
        _check_text(self.base_commit, field="clarity.base_commit", limit=MAX_SHORT_TEXT)
        for index, name in enumerate(_check_items(self.names, field="clarity.names", limit=MAX_ASSUMPTIONS)):
            _check_text(name, field=f"clarity.names[{index}]", limit=MAX_LONG_TEXT)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanningSpend:
    """What drafting a plan took, attached by codeflux: the planner's model calls, the read-only tool calls it
    made, and the sum of those calls' cost as the gateway settled them — unknown (with every reason) when any
    call's cost was unknown, never 0 standing in for it."""

    model_calls: int
    tool_calls: int
    cost: Cost

    def __post_init__(self) -> None:
        for name, value in (("model_calls", self.model_calls), ("tool_calls", self.tool_calls)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise _refuse(f"planning.{name} must be a count from 0")
        if not isinstance(self.cost, Money | UnknownCost):
            raise _refuse("planning.cost must be an amount or unknown")


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A whole plan. ``steps`` has 1..:data:`MAX_STEPS` items; ``forecast`` is attached by codeflux."""

    task_class: TaskClass
    scope: PlanScope
    steps: tuple[PlanStep, ...]
    checks: tuple[PlanCheck, ...] = ()
    permissions: tuple[PlanPermission, ...] = ()
    assumptions: tuple[str, ...] = ()
    forecast: PlanForecast | None = None
    examples: tuple[AcceptanceExample, ...] = ()
    """Executable acceptance examples the planner proposed (approved with this revision); see
    :mod:`codeflux.domain.acceptance`. The person's own ACCEPTANCE blocks, when the requirement has any, win."""
    trace: tuple[StepTrace, ...] | None = None
    """Per step (same order), the acceptance examples and requirement sentences it serves (stage 4); None for
    a plan that carries no trace."""
    questions: tuple[PlanQuestion, ...] = ()
    """Open points found by the clarification check or asked by the planner (stage 2), with their answers."""
    clarity: ClarityCheck | None = None
    """Set when codeflux ran the clarification check on this plan (the planner does); None otherwise."""
    examples_edited_in: tuple[int | None, ...] = ()
    """Per example (same order), the plan revision in which the person wrote or last changed it, None for one
    the planner proposed; empty when the person edited none (see :mod:`codeflux.domain.plan_examples`)."""
    planning: PlanningSpend | None = None
    """What drafting the plan took (set by the planner; a revision a person derives from it — an answer, an
    example edit — carries it on); None for a plan the planner did not draft."""

    def __post_init__(self) -> None:
        TaskClass(self.task_class)
        if self.trace is not None:
            _check_items(self.trace, field="trace", limit=MAX_STEPS, minimum=1)
            if not all(isinstance(step, StepTrace) for step in self.trace) or len(self.trace) != len(self.steps):
                raise _refuse("the trace has one entry per step")
        _check_items(self.questions, field="questions", limit=MAX_QUESTIONS)
        if not all(isinstance(question, PlanQuestion) for question in self.questions):
            raise _refuse("questions must be plan questions")
        _check_items(self.examples, field="examples", limit=MAX_EXAMPLES)
        if not all(isinstance(example, AcceptanceExample) for example in self.examples):
            raise _refuse("examples must be acceptance examples")
        _check_edited_in(self.examples_edited_in, examples=len(self.examples))
        if self.planning is not None and not isinstance(self.planning, PlanningSpend):
            raise _refuse("planning must be a planning spend")
        _check_items(self.steps, field="steps", limit=MAX_STEPS, minimum=1)
        _check_items(self.checks, field="checks", limit=MAX_CHECKS)
        _check_items(self.permissions, field="permissions", limit=MAX_PERMISSIONS)
        for index, assumption in enumerate(_check_items(self.assumptions, field="assumptions",
                                                        limit=MAX_ASSUMPTIONS)):
            _check_text(assumption, field=f"assumptions[{index}]", limit=MAX_LONG_TEXT)
        if len({check.name for check in self.checks}) != len(self.checks):
            raise _refuse("two checks have the same name")
        if len({permission.need for permission in self.permissions}) != len(self.permissions):
            raise _refuse("a permission is listed twice")

    @property
    def expected_files(self) -> tuple[str, ...]:
        """Every file any step expects to touch, sorted, each once."""
        return tuple(sorted({path for step in self.steps for path in step.expected_files}))

    def with_forecast(self, forecast: PlanForecast | None) -> Plan:
        """This plan with ``forecast`` attached (or removed)."""
        return replace(self, forecast=forecast)

    @property
    def open_questions(self) -> tuple[int, ...]:
        """The numbers (from 1) of the questions neither answered nor assumed."""
        return tuple(number for number, question in enumerate(self.questions, start=1) if question.open)

    def answered(self, number: int, answer: str) -> Plan:
        """This plan with question ``number`` (from 1) answered; :class:`InvalidValueError` for no such question."""
        if not 1 <= number <= len(self.questions):
            raise _refuse(f"there is no question {number} (the plan has {len(self.questions)})")
        questions = list(self.questions)
        questions[number - 1] = replace(questions[number - 1], answer=answer, assumed=False)
        return replace(self, questions=tuple(questions))


def _check_edited_in(values: object, *, examples: int) -> None:
    edited = _check_items(values, field="examples_edited_in", limit=MAX_EXAMPLES)
    if not edited:
        return
    if len(edited) != examples:
        raise _refuse("examples_edited_in has one entry per example")
    if not all(r is None or (isinstance(r, int) and not isinstance(r, bool) and r >= 1) for r in edited):
        raise _refuse("examples_edited_in holds revision numbers from 1, or null for a proposed example")
    if all(r is None for r in edited):
        raise _refuse("examples_edited_in is empty when the person edited no example")


# ─── canonical form ────────────────────────────────────────────────────────────────────────────────


def _cost_document(cost: Cost) -> dict[str, object]:
    if isinstance(cost, Money):
        return {"minor": cost.minor, "currency": cost.currency.code}
    return {"unknown": list(cost.reasons)}


def _range_document(value: CountRange) -> dict[str, object]:
    return {"p50": value.p50, "p90": value.p90}


def _forecast_document(forecast: PlanForecast) -> dict[str, object]:
    return {
        "label": forecast.label,
        "heuristic": forecast.heuristic,
        "inputs_sha256": forecast.inputs_sha256,
        "wall_seconds": _range_document(forecast.wall_seconds),
        "tokens": _range_document(forecast.tokens),
        "cost": {"low": _cost_document(forecast.cost.low), "high": _cost_document(forecast.cost.high)},
        "uncertainty": list(forecast.uncertainty),
    }


def plan_to_document(plan: Plan) -> dict[str, object]:
    """The plan as plain JSON values (the shape :func:`plan_from_document` reads back)."""
    return {
        "schema": PLAN_SCHEMA,
        "task_class": plan.task_class.value,
        "scope": {"summary": plan.scope.summary, "paths": list(plan.scope.paths),
                  "excluded": list(plan.scope.excluded)},
        # A step's atoms only when it declares any: a plan stored before declarations keeps its hash.
        "steps": [{"title": s.title, "detail": s.detail, "expected_files": list(s.expected_files),
                   **({"atoms": [atom.to_document() for atom in s.atoms]} if s.atoms else {})}
                  for s in plan.steps],
        "checks": [{"name": c.name, "argv": list(c.argv)} for c in plan.checks],
        "permissions": [{"need": str(p.need), "reason": p.reason} for p in plan.permissions],
        "assumptions": list(plan.assumptions),
        "forecast": None if plan.forecast is None else _forecast_document(plan.forecast),
        # Only when there are any: a plan without examples keeps the document (and hash) it always had.
        **({"examples": [_example_document(e) for e in plan.examples]} if plan.examples else {}),
        # The same for the trace, the questions and the clarity check: absent keys for plans without them.
        **({"trace": [{"examples": list(t.examples), "sentences": list(t.sentences)} for t in plan.trace]}
           if plan.trace is not None else {}),
        **({"questions": [_question_document(q) for q in plan.questions]} if plan.questions else {}),
        **({"clarity": {"policy": plan.clarity.policy.value, "base_commit": plan.clarity.base_commit,
                        "names": list(plan.clarity.names)}} if plan.clarity is not None else {}),
        **({"examples_edited_in": list(plan.examples_edited_in)} if plan.examples_edited_in else {}),
        **({"planning": {"model_calls": plan.planning.model_calls, "tool_calls": plan.planning.tool_calls,
                         "cost": _cost_document(plan.planning.cost)}} if plan.planning is not None else {}),
    }


def _question_document(question: PlanQuestion) -> dict[str, object]:
    return {"question": question.question, "origin": question.origin.value, "assumption": question.assumption,
            "answer": question.answer, "assumed": question.assumed}


def _example_document(example: AcceptanceExample) -> dict[str, object]:
    if example.test is not None:
        return {"test": example.test}
    return {"command": list(example.argv), "expected": list(example.expected)}


def canonical_plan_json(plan: Plan) -> str:
    """Compact, key-sorted JSON of the plan: the exact text that is stored and hashed."""
    return json.dumps(plan_to_document(plan), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def plan_sha256(plan: Plan) -> str:
    """sha256 (hex) of the UTF-8 bytes of :func:`canonical_plan_json`: what an approval binds to."""
    return hashlib.sha256(canonical_plan_json(plan).encode("utf-8")).hexdigest()


# ─── reading a stored document back ────────────────────────────────────────────────────────────────


def _object(value: object, *, field: str, keys: frozenset[str]) -> Mapping[str, object]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise _refuse(f"{field} must be an object")
    if set(value) != keys:
        unknown = sorted(set(value) - keys)
        missing = sorted(keys - set(value))
        raise _refuse(f"{field} has unknown keys {unknown} or misses {missing}")
    return value


def _strings(value: object, *, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _refuse(f"{field} must be a list of text")
    return tuple(value)


def _integer(value: object, *, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _refuse(f"{field} must be an integer")
    return value


def _list(value: object, *, field: str) -> list[object]:
    if not isinstance(value, list):
        raise _refuse(f"{field} must be a list")
    return value


def _count_range(value: object, *, field: str) -> CountRange:
    document = _object(value, field=field, keys=frozenset({"p50", "p90"}))
    return CountRange(p50=_integer(document["p50"], field=f"{field}.p50"),
                      p90=_integer(document["p90"], field=f"{field}.p90"))


def _cost(value: object, *, field: str) -> Cost:
    if isinstance(value, Mapping) and "unknown" in value:
        document = _object(value, field=field, keys=frozenset({"unknown"}))
        return UnknownCost(_strings(document["unknown"], field=f"{field}.unknown"))
    document = _object(value, field=field, keys=frozenset({"minor", "currency"}))
    currency = document["currency"]
    if not isinstance(currency, str):
        raise _refuse(f"{field}.currency must be text")
    return Money(minor=_integer(document["minor"], field=f"{field}.minor"), currency=Currency.parse(currency))


def _text(value: object, *, field: str) -> str:
    if not isinstance(value, str):
        raise _refuse(f"{field} must be text")
    return value


def _forecast(value: object) -> PlanForecast | None:
    if value is None:
        return None
    keys = frozenset({"label", "heuristic", "inputs_sha256", "wall_seconds", "tokens", "cost", "uncertainty"})
    document = _object(value, field="forecast", keys=keys)
    cost = _object(document["cost"], field="forecast.cost", keys=frozenset({"low", "high"}))
    return PlanForecast(
        label=_text(document["label"], field="forecast.label"),
        heuristic=_text(document["heuristic"], field="forecast.heuristic"),
        inputs_sha256=_text(document["inputs_sha256"], field="forecast.inputs_sha256"),
        wall_seconds=_count_range(document["wall_seconds"], field="forecast.wall_seconds"),
        tokens=_count_range(document["tokens"], field="forecast.tokens"),
        cost=CostRange(low=_cost(cost["low"], field="forecast.cost.low"),
                       high=_cost(cost["high"], field="forecast.cost.high")),
        uncertainty=_strings(document["uncertainty"], field="forecast.uncertainty"),
    )


_PLAN_KEYS: Final = frozenset(
    {"schema", "task_class", "scope", "steps", "checks", "permissions", "assumptions", "forecast"}
)


def _examples(value: object) -> tuple[AcceptanceExample, ...]:
    examples = []
    for item in _list(value, field="examples"):
        if isinstance(item, Mapping) and "test" in item:
            document = _object(item, field="example", keys=frozenset({"test"}))
            examples.append(AcceptanceExample(test=_text(document["test"], field="example.test")))
        else:
            document = _object(item, field="example", keys=frozenset({"command", "expected"}))
            examples.append(AcceptanceExample(argv=_strings(document["command"], field="example.command"),
                                              expected=_strings(document["expected"], field="example.expected")))
    return tuple(examples)


def _numbers(value: object, *, field: str) -> tuple[int, ...]:
    return tuple(_integer(item, field=field) for item in _list(value, field=field))


def _trace(value: object) -> tuple[StepTrace, ...]:
    steps = [_object(item, field="trace", keys=frozenset({"examples", "sentences"})) for item in
             _list(value, field="trace")]
    return tuple(StepTrace(examples=_numbers(step["examples"], field="trace.examples"),
                           sentences=_numbers(step["sentences"], field="trace.sentences")) for step in steps)


def _questions(value: object) -> tuple[PlanQuestion, ...]:
    keys = frozenset({"question", "origin", "assumption", "answer", "assumed"})
    questions = []
    for item in _list(value, field="questions"):
        document = _object(item, field="question", keys=keys)
        answer, assumed, origin = document["answer"], document["assumed"], _text(document["origin"], field="origin")
        if origin not in {member.value for member in QuestionOrigin} or not isinstance(assumed, bool):
            raise _refuse("a question's origin or assumed flag is not known")
        questions.append(PlanQuestion(question=_text(document["question"], field="question.question"),
                                      origin=QuestionOrigin(origin),
                                      assumption=_text(document["assumption"], field="question.assumption"),
                                      answer=None if answer is None else _text(answer, field="question.answer"),
                                      assumed=assumed))
    return tuple(questions)


def _clarity(value: object) -> ClarityCheck:
    document = _object(value, field="clarity", keys=frozenset({"policy", "base_commit", "names"}))
    policy = _text(document["policy"], field="clarity.policy")
    if policy not in {member.value for member in ClarificationPolicy}:
        raise _refuse("clarity.policy is not a known policy")
    return ClarityCheck(policy=ClarificationPolicy(policy), base_commit=_text(document["base_commit"],
                                                                              field="clarity.base_commit"),
                        names=_strings(document["names"], field="clarity.names"))


_STEP_KEYS: Final = frozenset({"title", "detail", "expected_files"})


def _step_keys(step: object) -> frozenset[str]:
    """A step's keys: ``atoms`` only when the step declares any (see :func:`plan_to_document`)."""
    return _STEP_KEYS | {"atoms"} if isinstance(step, Mapping) and "atoms" in step else _STEP_KEYS


def _declared_atoms(value: object) -> tuple[DeclaredAtom, ...]:
    items = _list(value, field="step.atoms")
    if not items:
        raise _refuse("step.atoms is left out when a step declares none")  # the canonical form has no empty list
    atoms = []
    for item in items:
        document = _object(item, field="step.atom", keys=frozenset({"name", "signature", "effects"}))
        effects = _strings(document["effects"], field="step.atom.effects")
        if not set(effects) <= {effect.value for effect in AtomEffect}:
            raise _refuse("step.atom.effects names an effect that is not known")
        atoms.append(DeclaredAtom(name=_text(document["name"], field="step.atom.name"),
                                  signature=_text(document["signature"], field="step.atom.signature"),
                                  effects=tuple(AtomEffect(effect) for effect in effects)))
    return tuple(atoms)


_OPTIONAL_KEYS: Final = ("examples", "trace", "questions", "clarity", "examples_edited_in", "planning")


def _planning(value: object) -> PlanningSpend:
    document = _object(value, field="planning", keys=frozenset({"model_calls", "tool_calls", "cost"}))
    return PlanningSpend(model_calls=_integer(document["model_calls"], field="planning.model_calls"),
                         tool_calls=_integer(document["tool_calls"], field="planning.tool_calls"),
                         cost=_cost(document["cost"], field="planning.cost"))


def _edited_in(value: object) -> tuple[int | None, ...]:
    return tuple(None if item is None else _integer(item, field="examples_edited_in")
                 for item in _list(value, field="examples_edited_in"))


def plan_from_document(document: object) -> Plan:
    """The plan a :func:`plan_to_document` document describes; :class:`InvalidValueError` otherwise."""
    optional: dict[str, object] = {}
    if isinstance(document, Mapping):
        optional = {key: document[key] for key in _OPTIONAL_KEYS if key in document}
        document = {key: value for key, value in document.items() if key not in _OPTIONAL_KEYS}
    examples = _examples(optional["examples"]) if "examples" in optional else ()
    top = _object(document, field="plan", keys=_PLAN_KEYS)
    if top["schema"] != PLAN_SCHEMA:
        raise _refuse(f"schema must be {PLAN_SCHEMA}")
    try:
        task_class = TaskClass(_text(top["task_class"], field="task_class"))
    except ValueError:
        raise _refuse("task_class is not a known task class") from None
    scope = _object(top["scope"], field="scope", keys=frozenset({"summary", "paths", "excluded"}))
    steps = [_object(s, field="step", keys=_step_keys(s)) for s in _list(top["steps"], field="steps")]
    checks = [_object(c, field="check", keys=frozenset({"name", "argv"})) for c in _list(top["checks"], field="checks")]
    permissions = [_object(p, field="permission", keys=frozenset({"need", "reason"}))
                   for p in _list(top["permissions"], field="permissions")]
    return Plan(
        task_class=task_class,
        scope=PlanScope(summary=_text(scope["summary"], field="scope.summary"),
                        paths=_strings(scope["paths"], field="scope.paths"),
                        excluded=_strings(scope["excluded"], field="scope.excluded")),
        steps=tuple(PlanStep(title=_text(s["title"], field="step.title"),
                             detail=_text(s["detail"], field="step.detail"),
                             expected_files=_strings(s["expected_files"], field="step.expected_files"),
                             atoms=_declared_atoms(s["atoms"]) if "atoms" in s else ())
                    for s in steps),
        checks=tuple(PlanCheck(name=_text(c["name"], field="check.name"), argv=_strings(c["argv"], field="check.argv"))
                     for c in checks),
        permissions=tuple(PlanPermission(need=CapabilityNeed.parse(_text(p["need"], field="permission.need")),
                                         reason=_text(p["reason"], field="permission.reason"))
                          for p in permissions),
        assumptions=_strings(top["assumptions"], field="assumptions"),
        forecast=_forecast(top["forecast"]),
        examples=examples,
        trace=_trace(optional["trace"]) if "trace" in optional else None,
        questions=_questions(optional["questions"]) if "questions" in optional else (),
        clarity=_clarity(optional["clarity"]) if "clarity" in optional else None,
        examples_edited_in=_edited_in(optional["examples_edited_in"]) if "examples_edited_in" in optional else (),
        planning=_planning(optional["planning"]) if "planning" in optional else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRevisionRow:
    """A recorded plan revision: the parsed plan and the sha256 of its canonical JSON (what approvals bind to)."""

    task_id: TaskId
    revision: int
    plan: Plan
    sha256: str
    created_by: PlanAuthor
    feedback: str | None
    created_at_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanDecisionRow:
    """The one decision on a plan revision, bound to that revision's hash."""

    task_id: TaskId
    revision: int
    sha256: str
    decision: PlanVerdict
    feedback: str | None
    decided_by: PlanDecider
    decided_at_us: int

    @property
    def approved(self) -> bool:
        return self.decision is PlanVerdict.APPROVED
