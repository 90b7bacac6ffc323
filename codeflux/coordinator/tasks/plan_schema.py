"""The plan schema: untrusted plan JSON (a model's reply, a person's file, a script) becomes a domain plan.

Strict types (a list must be a JSON array, text must be a JSON string: nothing is coerced), extra fields
forbidden at every level, immutable models, and every size bounded by the limits in
:mod:`codeflux.domain.plans`: a document larger than :data:`~codeflux.domain.plans.MAX_PLAN_JSON_BYTES`
is refused before it is parsed. The input carries no forecast — codeflux computes the forecast range and
attaches it — and its paths and capability needs are checked by the domain types.

Every refusal is one :class:`~codeflux.domain.errors.PlanInvalidError` listing where the document did
not fit and why, never the offered values (they may hold anything a model wrote).
"""

from __future__ import annotations

import json
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from codeflux.domain.acceptance import MAX_EXAMPLES, AcceptanceExample
from codeflux.domain.capabilities import CapabilityNeed
from codeflux.domain.clarification import MAX_SENTENCES, QuestionOrigin
from codeflux.domain.errors import InvalidValueError, PlanInvalidError
from codeflux.domain.forecast import TaskClass
from codeflux.domain.plans import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGV_ITEMS,
    MAX_ASSUMPTIONS,
    MAX_CHECKS,
    MAX_FILES_PER_STEP,
    MAX_LONG_TEXT,
    MAX_PATH_CHARS,
    MAX_PERMISSIONS,
    MAX_PLAN_JSON_BYTES,
    MAX_QUESTIONS,
    MAX_SCOPE_PATHS,
    MAX_SHORT_TEXT,
    MAX_STEPS,
    Plan,
    PlanCheck,
    PlanPermission,
    PlanQuestion,
    PlanScope,
    PlanStep,
    StepTrace,
    canonical_plan_json,
)

__all__ = ["PlanDocument", "parse_plan_json", "parse_plan_object", "require_plan_size"]

_LOCATION_PART_CHARS: Final = 40
_PROBLEMS_KEPT: Final = 20
MAX_PLANNED_EXAMPLES: Final = 20
MAX_EXPECTED_LINES: Final = 200

ShortText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SHORT_TEXT)]
LongText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LONG_TEXT)]
RepositoryPath = Annotated[str, StringConstraints(min_length=1, max_length=MAX_PATH_CHARS)]
Argument = Annotated[str, StringConstraints(max_length=MAX_ARGUMENT_CHARS)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ScopeDocument(_Strict):
    summary: LongText
    """What the change is about, in a few sentences."""
    paths: list[RepositoryPath] = Field(default_factory=list, max_length=MAX_SCOPE_PATHS)
    """Repository-relative files or folders the change stays within."""
    excluded: list[LongText] = Field(default_factory=list, max_length=MAX_ASSUMPTIONS)
    """What the change deliberately leaves alone."""


class StepDocument(_Strict):
    title: ShortText
    """One line naming the step."""
    detail: LongText
    """What the step does."""
    expected_files: list[RepositoryPath] = Field(default_factory=list, max_length=MAX_FILES_PER_STEP)
    """Repository-relative files the step expects to create or change."""


class CheckDocument(_Strict):
    name: ShortText
    """A short, unique name for the check (``unit tests``)."""
    argv: list[Argument] = Field(min_length=1, max_length=MAX_ARGV_ITEMS)
    """The program and its arguments; never a shell string."""


class PermissionDocument(_Strict):
    need: ShortText
    """A capability, optionally narrowed to a resource: ``process``, ``network:pypi.org``."""
    reason: LongText
    """Why the plan expects to need it."""

    @field_validator("need")
    @classmethod
    def _known_need(cls, value: str) -> str:
        try:
            CapabilityNeed.parse(value)
        except InvalidValueError as error:
            raise ValueError(error.reason) from None
        return value


class ExampleDocument(_Strict):
    """One executable acceptance example: ``test`` (a pytest node id, ``path::name``) or ``command`` (an argv)
    with the exact ``expected`` output lines (none: only the exit status 0 is checked)."""

    test: RepositoryPath | None = None
    command: list[Argument] | None = Field(default=None, min_length=1, max_length=MAX_ARGV_ITEMS)
    expected: list[LongText] = Field(default_factory=list, max_length=MAX_EXPECTED_LINES)

    def to_example(self) -> AcceptanceExample:
        return AcceptanceExample(test=self.test, argv=tuple(self.command or ()), expected=tuple(self.expected))

    @model_validator(mode="after")
    def _one_executable_example(self) -> ExampleDocument:
        try:
            self.to_example()
        except InvalidValueError as error:
            raise ValueError(error.reason) from None
        return self


ExampleNumber = Annotated[int, Field(ge=1, le=MAX_EXAMPLES)]
SentenceNumber = Annotated[int, Field(ge=1, le=MAX_SENTENCES)]


class TraceDocument(_Strict):
    """What one step serves, by number: ``examples`` — acceptance example numbers (from 1), ``sentences`` —
    requirement sentence numbers (from 1), as numbered in the request."""

    examples: list[ExampleNumber] = Field(max_length=MAX_EXAMPLES)
    sentences: list[SentenceNumber] = Field(max_length=MAX_SENTENCES)

    def to_trace(self) -> StepTrace:
        return StepTrace(examples=tuple(dict.fromkeys(self.examples)), sentences=tuple(dict.fromkeys(self.sentences)))


class QuestionDocument(_Strict):
    """Something only the person can settle: the ``question``, and the reading you would ``assume`` if nobody
    answers it (stated in the plan as an assumption under the policy ``assume``)."""

    question: LongText
    assumption: LongText


class PlanDocument(_Strict):
    """A plan as a planner writes it (no forecast: codeflux attaches that)."""

    task_class: ShortText
    """One of the task classes (``bug-fix``, ``feature``, …); it picks the forecast's base."""
    scope: ScopeDocument
    steps: list[StepDocument] = Field(min_length=1, max_length=MAX_STEPS)
    checks: list[CheckDocument] = Field(default_factory=list, max_length=MAX_CHECKS)
    permissions: list[PermissionDocument] = Field(default_factory=list, max_length=MAX_PERMISSIONS)
    assumptions: list[LongText] = Field(default_factory=list, max_length=MAX_ASSUMPTIONS)
    examples: list[ExampleDocument] = Field(max_length=MAX_PLANNED_EXAMPLES)
    """Required: how a person (and codeflux) will know the change is done — tests the change adds or makes
    pass, or commands with their exact output. Empty only when none can be stated; then say why in
    ``assumptions`` (the plan cannot be approved without an example)."""
    trace: list[TraceDocument] = Field(min_length=1, max_length=MAX_STEPS)
    """Required, one entry per step in step order: the acceptance example numbers and requirement sentence
    numbers each step serves. Every acceptance example must be served by at least one step."""
    questions: list[QuestionDocument] = Field(default_factory=list, max_length=MAX_QUESTIONS)
    """Optional: what only the person can settle before work starts, each with the reading you would assume."""

    @model_validator(mode="after")
    def _one_trace_entry_per_step(self) -> PlanDocument:
        if len(self.trace) != len(self.steps):
            raise ValueError(f"trace has {len(self.trace)} entries for {len(self.steps)} steps; give one per step")
        return self

    @field_validator("task_class")
    @classmethod
    def _known_class(cls, value: str) -> str:
        if value not in {member.value for member in TaskClass}:
            raise ValueError(f"must be one of {', '.join(member.value for member in TaskClass)}")
        return value

    def to_plan(self) -> Plan:
        """The domain plan (paths and needs checked again by the domain types)."""
        return Plan(
            task_class=TaskClass(self.task_class),
            scope=PlanScope(summary=self.scope.summary, paths=tuple(self.scope.paths),
                            excluded=tuple(self.scope.excluded)),
            steps=tuple(PlanStep(title=s.title, detail=s.detail, expected_files=tuple(s.expected_files))
                        for s in self.steps),
            checks=tuple(PlanCheck(name=c.name, argv=tuple(c.argv)) for c in self.checks),
            permissions=tuple(PlanPermission(need=CapabilityNeed.parse(p.need), reason=p.reason)
                              for p in self.permissions),
            assumptions=tuple(self.assumptions),
            examples=tuple(example.to_example() for example in self.examples),
            trace=tuple(entry.to_trace() for entry in self.trace),
            questions=tuple(PlanQuestion(question=q.question, origin=QuestionOrigin.PLANNER, assumption=q.assumption)
                            for q in self.questions),
        )


def _location(parts: tuple[int | str, ...]) -> str:
    shown = [str(part)[:_LOCATION_PART_CHARS] for part in parts]
    return ".".join(shown) or "the top level"


def _problems(error: ValidationError) -> tuple[str, ...]:
    details = error.errors(include_url=False, include_input=False, include_context=False)
    return tuple(f"{_location(tuple(d['loc']))}: {d['msg']}" for d in details[:_PROBLEMS_KEPT])


def _to_domain(document: PlanDocument) -> Plan:
    try:
        plan = document.to_plan()
    except InvalidValueError as error:
        raise PlanInvalidError(problems=(error.reason,)) from None
    require_plan_size(plan)
    return plan


def require_plan_size(plan: Plan) -> None:
    """Refuse a plan whose canonical JSON is larger than the stored limit."""
    size = len(canonical_plan_json(plan).encode("utf-8"))
    if size > MAX_PLAN_JSON_BYTES:
        raise PlanInvalidError(problems=(f"the plan is {size} bytes; at most {MAX_PLAN_JSON_BYTES} are kept",))


def parse_plan_json(data: str | bytes) -> Plan:
    """The domain plan written as JSON in ``data``, or :class:`PlanInvalidError` (nothing is coerced)."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > MAX_PLAN_JSON_BYTES:
        raise PlanInvalidError(problems=(f"the document is {size} bytes; at most {MAX_PLAN_JSON_BYTES} are read",))
    try:
        document = PlanDocument.model_validate_json(data)
    except ValidationError as error:
        raise PlanInvalidError(problems=_problems(error)) from None
    return _to_domain(document)


def parse_plan_object(value: object) -> Plan:
    """The domain plan in an already decoded JSON value (a tool call's arguments), or :class:`PlanInvalidError`.

    The value must be made of JSON types only (dicts, lists, str, int, float, bool, None).
    """
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise PlanInvalidError(problems=("the plan is not made of JSON values",)) from None
    return parse_plan_json(encoded)
