"""The person edits a plan revision's acceptance examples before approving it (issue 14 item 1).

An edit is the whole new list of examples, in order (:class:`ExampleEdit` per entry), and makes the next
plan revision — authored by the person, so approval binds to the edited revision and its hash. The rules:

* An entry keeps or changes example ``number`` of the revision being edited, or is new (``number`` None).
  An example no entry names is **removed**: it disappears from every step's list in the trace. The rest are
  **renumbered** by their position in the new list, in the trace too.
* ``steps`` are the plan steps (from 1) that serve the entry. Left empty, a kept or changed example is served
  by the steps that served it before; a new example in a one-step plan is served by that step, and in a plan
  of more steps it must name its steps — refused otherwise (an example no step serves could not be approved).
  A plan without a trace records no steps per example: naming steps there is refused.
* At least one example and at most :data:`~codeflux.domain.acceptance.MAX_EXAMPLES`; no example twice; no two
  command examples run the same argv expecting different output. Each example must be executable
  (:class:`~codeflux.domain.acceptance.AcceptanceExample` refuses it with the reason otherwise).
* A changed or new example is recorded as "edited by the person in revision N" (``Plan.examples_edited_in``);
  one kept as it was keeps its origin.
* The revision's contradicting-examples questions (stage 2) numbered the old list: they are dropped; the
  edit itself refuses contradicting examples. Every other question and the requirement-sentence part of the
  trace stay as they were.
* An edit that changes nothing is refused.

When the requirement has the person's own ACCEPTANCE blocks, those are the examples (they always win) and
editing the plan's would change nothing: the caller refuses that before calling :func:`edit_plan_examples`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from codeflux.domain.acceptance import MAX_EXAMPLES, AcceptanceExample
from codeflux.domain.clarification import QuestionOrigin
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.plans import Plan, StepTrace

__all__ = ["ExampleEdit", "edit_plan_examples"]

_KIND: Final = "example edit"


def _refuse(reason: str) -> InvalidValueError:
    return InvalidValueError(kind=_KIND, reason=reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleEdit:
    """One entry of the edited list: which old example it keeps or changes (``number``, from 1; None for a new
    one), its content (``example``; None keeps example ``number`` as it is) and the steps serving it."""

    number: int | None = None
    example: AcceptanceExample | None = None
    steps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.number is None and self.example is None:
            raise _refuse("a new example needs its test or command")
        if self.number is not None and (isinstance(self.number, bool) or self.number < 1):
            raise _refuse("an example number counts from 1")


def _new_steps(plan: Plan, position: int, edit: ExampleEdit, old_steps: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The steps serving entry ``position`` (from 1) of the new list (see the module docstring)."""
    if plan.trace is None:
        if edit.steps:
            raise _refuse(f"plan has no trace (which step serves which example is not recorded), so example "
                          f"{position} cannot name steps")
        return ()
    bad = [step for step in edit.steps if not 1 <= step <= len(plan.steps)]
    if bad:
        raise _refuse(f"example {position} names step(s) {', '.join(map(str, bad))}; the plan has "
                      f"{len(plan.steps)} step(s)")
    if edit.steps:
        return tuple(sorted(set(edit.steps)))
    if edit.number is not None:
        return old_steps.get(edit.number, ())
    if len(plan.steps) == 1:
        return (1,)
    raise _refuse(f"example {position} is new: name the step(s) that serve it (the plan has {len(plan.steps)} steps)")


def _check_list(examples: Sequence[AcceptanceExample]) -> None:
    if not examples:
        raise _refuse("a plan needs at least one acceptance example; removing the last one is refused")
    if len(examples) > MAX_EXAMPLES:
        raise _refuse(f"at most {MAX_EXAMPLES} examples")
    first: dict[AcceptanceExample, int] = {}
    commands: dict[tuple[str, ...], int] = {}
    for number, example in enumerate(examples, start=1):
        earlier = first.setdefault(example, number)
        if earlier != number:
            raise _refuse(f"examples {earlier} and {number} are the same")
        if example.argv:
            other = commands.setdefault(example.argv, number)
            if other != number:
                raise _refuse(f"examples {other} and {number} run the same command but expect different output")


def edit_plan_examples(plan: Plan, edits: Sequence[ExampleEdit], *, revision: int) -> Plan:
    """``plan`` with its examples replaced by ``edits`` (the rules are in the module docstring); ``revision`` is
    the number the edited plan will be recorded as. :class:`InvalidValueError` when a rule refuses it."""
    named = [edit.number for edit in edits if edit.number is not None]
    unknown = sorted({number for number in named if number > len(plan.examples)})
    if unknown:
        raise _refuse(f"plan has {len(plan.examples)} example(s); there is no example {', '.join(map(str, unknown))}")
    twice = sorted({number for number in named if named.count(number) > 1})
    if twice:
        raise _refuse(f"example {', '.join(map(str, twice))} appears twice in the edited list")
    old_steps = _steps_by_example(plan)
    old_edited = plan.examples_edited_in or (None,) * len(plan.examples)
    examples: list[AcceptanceExample] = []
    edited_in: list[int | None] = []
    serving: list[tuple[int, ...]] = []
    for position, edit in enumerate(edits, start=1):
        kept = plan.examples[edit.number - 1] if edit.number is not None else None
        example = edit.example if edit.example is not None else kept
        if example is None:  # ExampleEdit refuses an entry with neither; this keeps mypy's view exact
            raise _refuse(f"example {position} needs its test or command")
        examples.append(example)
        unchanged = kept is not None and example == kept and edit.number is not None
        edited_in.append(old_edited[edit.number - 1] if unchanged and edit.number is not None else revision)
        serving.append(_new_steps(plan, position, edit, old_steps))
    _check_list(examples)
    trace = _trace(plan, serving)
    if tuple(examples) == plan.examples and trace == plan.trace:
        raise _refuse("nothing changed: the edited list is the plan's list, served by the same steps")
    kept_questions = tuple(q for q in plan.questions if q.origin is not QuestionOrigin.CONTRADICTING_EXAMPLES)
    return replace(plan, examples=tuple(examples), trace=trace, questions=kept_questions,
                   examples_edited_in=tuple(edited_in) if any(r is not None for r in edited_in) else ())


def _steps_by_example(plan: Plan) -> dict[int, tuple[int, ...]]:
    """Example number → the steps (from 1) whose trace names it."""
    found: dict[int, list[int]] = {}
    for step, trace in enumerate(plan.trace or (), start=1):
        for number in trace.examples:
            found.setdefault(number, []).append(step)
    return {number: tuple(steps) for number, steps in found.items()}


def _trace(plan: Plan, serving: Sequence[tuple[int, ...]]) -> tuple[StepTrace, ...] | None:
    """The plan's trace with each step's examples replaced by the new numbers ``serving`` names for it."""
    if plan.trace is None:
        return None
    return tuple(replace(trace, examples=tuple(number for number, steps in enumerate(serving, start=1)
                                               if step in steps))
                 for step, trace in enumerate(plan.trace, start=1))
