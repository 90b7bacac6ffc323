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
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.clarification import MAX_SENTENCES, QuestionOrigin
from codeflux.domain.contracts import MAX_ATOMS_PER_STEP, MAX_SIGNATURE_CHARS, AtomEffect, DeclaredAtom, effect_order
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
    summary: LongText = Field(description="What the change is about, in a few sentences.")
    paths: list[RepositoryPath] = Field(
        default_factory=list, max_length=MAX_SCOPE_PATHS,
        description="Repository-relative files or folders the change stays within (e.g. `pkg`, `tests/test_calc.py`).")
    excluded: list[LongText] = Field(default_factory=list, max_length=MAX_ASSUMPTIONS,
                                     description="What the change deliberately leaves alone, one item each.")


AtomName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SHORT_TEXT,
                                            pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
SignatureText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SIGNATURE_CHARS)]


class AtomDocument(_Strict):
    """A function or method the step will add or change, declared before the code is written."""

    name: AtomName = Field(description="Its name: qualified (`calc.ops.add`, `calc.stats.Calc.mean`) or, inside "
                                       "a file the step names in `expected_files`, the function (`add`) or "
                                       "`Class.method`.")
    signature: SignatureText = Field(description="Its signature with type annotations for every parameter and "
                                                 "the return, e.g. `def add(a: int, b: int) -> int`.")
    effects: list[AtomEffect] = Field(
        max_length=len(AtomEffect),
        description="What it may do beyond computing from its arguments, among "
                    + ", ".join(f"`{e.value}`" for e in AtomEffect)
                    + " (`global-state`: reads or writes module-level mutable state); empty means pure. codeflux "
                      "checks the code against this list.")

    @field_validator("effects", mode="before")
    @classmethod
    def _effects_as_text(cls, value: object) -> object:
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            known = {effect.value for effect in AtomEffect}
            if not set(value) <= known:
                raise ValueError("unknown effect; use " + ", ".join(sorted(known)))
            return [AtomEffect(item) for item in value]
        return value

    def to_atom(self) -> DeclaredAtom:
        return DeclaredAtom(name=self.name, signature=self.signature, effects=effect_order(self.effects))


class StepDocument(_Strict):
    title: ShortText = Field(description="One line naming the step; no two steps share a title.")
    detail: LongText = Field(description="What the step does, concretely: which function or file changes and how.")
    expected_files: list[RepositoryPath] = Field(
        default_factory=list, max_length=MAX_FILES_PER_STEP,
        description="Optional hint: repository-relative files the step expects to create or change. Shown to the "
                    "person with the plan; not a completion rule (the implementation may touch other files).")
    atoms: list[AtomDocument] = Field(
        default_factory=list, max_length=MAX_ATOMS_PER_STEP,
        description="Every function or method (outside tests) this step adds or changes, with its signature and "
                    "effects. Stage 5 (contracts) fails when the change adds or changes a public function "
                    "no step declares, leaves one unannotated, or gives one an effect not declared here.")


class CheckDocument(_Strict):
    name: ShortText = Field(description="A short, unique name for the check, e.g. `unit tests`.")
    argv: list[Argument] = Field(min_length=1, max_length=MAX_ARGV_ITEMS,
                                 description="The program and its arguments as an array, e.g. "
                                             "[\"python\", \"-m\", \"pytest\", \"-q\"]; never a shell string.")


class PermissionDocument(_Strict):
    need: ShortText = Field(description="A capability the work needs beyond reading and editing the task worktree, "
                                        "optionally narrowed to a resource after a colon: one of "
                                        + ", ".join(f"`{c.value}`" for c in Capability)
                                        + ", e.g. `process` or `network:pypi.org`.")
    reason: LongText = Field(description="Why the plan expects to need it.")

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

    test: RepositoryPath | None = Field(
        default=None, description="A pytest node id, `path::test_name`, of a test the change adds or makes pass; "
                                  "give either `test` or `command`, not both.")
    command: list[Argument] | None = Field(
        default=None, min_length=1, max_length=MAX_ARGV_ITEMS,
        description="A command as an argv array whose output shows the change works; give either `test` or "
                    "`command`, not both.")
    expected: list[LongText] = Field(
        default_factory=list, max_length=MAX_EXPECTED_LINES,
        description="With `command`: the exact lines it must print, in order (none: only exit status 0 is "
                    "checked). Empty with `test`.")

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

    examples: list[ExampleNumber] = Field(
        max_length=MAX_EXAMPLES, description="The acceptance example numbers (from 1, as numbered in the request, or "
                                             "your own `examples` in order) this step serves; may be empty.")
    sentences: list[SentenceNumber] = Field(
        max_length=MAX_SENTENCES, description="The requirement sentence numbers (from 1, as numbered in the "
                                              "request) this step covers; may be empty.")

    def to_trace(self) -> StepTrace:
        return StepTrace(examples=tuple(dict.fromkeys(self.examples)), sentences=tuple(dict.fromkeys(self.sentences)))


class QuestionDocument(_Strict):
    """Something only the person can settle: the ``question``, and the reading you would ``assume`` if nobody
    answers it (stated in the plan as an assumption under the policy ``assume``)."""

    question: LongText = Field(description="The question, answerable by the person in a sentence.")
    assumption: LongText = Field(description="The reading you would go on if nobody answers it.")


class PlanDocument(_Strict):
    """A plan as a planner writes it (no forecast: codeflux attaches that)."""

    task_class: TaskClass = Field(description="What kind of work this is; it picks the forecast's base.")
    scope: ScopeDocument = Field(description="What the change is about and where it stays.")
    steps: list[StepDocument] = Field(min_length=1, max_length=MAX_STEPS,
                                      description="Small, single-purpose steps in the order they are done.")
    checks: list[CheckDocument] = Field(
        default_factory=list, max_length=MAX_CHECKS,
        description="Commands that check the change (e.g. the repository's test command); the person approves them "
                    "with the plan.")
    permissions: list[PermissionDocument] = Field(
        default_factory=list, max_length=MAX_PERMISSIONS,
        description="Capabilities the work is expected to need beyond reading and editing the worktree, each with "
                    "its reason; the person approves them with the plan.")
    assumptions: list[LongText] = Field(default_factory=list, max_length=MAX_ASSUMPTIONS,
                                        description="What the plan takes for granted, one item each.")
    examples: list[ExampleDocument] = Field(
        max_length=MAX_PLANNED_EXAMPLES,
        description="Required: how a person (and codeflux) will know the change is done — tests the change adds or "
                    "makes pass, or commands with their exact output. Empty only when none can be stated; then say "
                    "why in `assumptions` (the plan cannot be approved without an example).")
    trace: list[TraceDocument] = Field(
        min_length=1, max_length=MAX_STEPS,
        description="Required, one entry per step in step order: the acceptance example numbers and requirement "
                    "sentence numbers each step serves. Every acceptance example must be served by at least one step.")
    questions: list[QuestionDocument] = Field(
        default_factory=list, max_length=MAX_QUESTIONS,
        description="Optional: what only the person can settle before work starts, each with the reading you "
                    "would assume.")

    @model_validator(mode="after")
    def _one_trace_entry_per_step(self) -> PlanDocument:
        if len(self.trace) != len(self.steps):
            raise ValueError(f"trace has {len(self.trace)} entries for {len(self.steps)} steps; give one per step")
        return self

    def to_plan(self) -> Plan:
        """The domain plan (paths and needs checked again by the domain types)."""
        return Plan(
            task_class=self.task_class,
            scope=PlanScope(summary=self.scope.summary, paths=tuple(self.scope.paths),
                            excluded=tuple(self.scope.excluded)),
            steps=tuple(PlanStep(title=s.title, detail=s.detail, expected_files=tuple(s.expected_files),
                                 atoms=tuple(atom.to_atom() for atom in s.atoms))
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
