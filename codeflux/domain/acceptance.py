"""Acceptance examples: the executable statements of "done" a task is checked against (stages 1 and 29).

An example is either a **named test** — one pytest node id (``tests/test_calc.py::test_add_negative``);
a whole file or suite is not an example — or a **command** (an argv, never a shell string) with, optionally,
the exact lines it must print.

They come from one of two places, and the first that has any wins:

1. the person's own ``<<<ACCEPTANCE`` blocks in the requirement (:func:`examples_in_requirement`)::

       <<<ACCEPTANCE
       test: tests/test_calc.py::test_add_negative
       >>>
       <<<ACCEPTANCE
       command: python -m calc add -1 2
       expected: 1
       >>>

2. the examples the planner proposed with the plan (``Plan.examples``), which the person approved with that
   exact plan revision — so a plain requirement ("Add a docstring to greet()") still gets examples. The
   person may edit them before approving (:mod:`codeflux.domain.plan_examples`): an example the person wrote
   or changed is "edited by the person in revision N" (``Plan.examples_edited_in``).

:func:`acceptance_of` picks, and says where the examples came from, as a whole and per example (the evidence
of stages 1 and 29 names it). A block that does not parse is reported as a problem, never guessed at.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "MAX_EXAMPLES",
    "AcceptanceExample",
    "AcceptanceSource",
    "acceptance_of",
    "example_problem",
    "examples_in_requirement",
    "parse_example",
]

MAX_EXAMPLES: Final = 50
_MAX_TEXT: Final = 4096
_BLOCK: Final = re.compile(r"<<<ACCEPTANCE[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*>>>", re.DOTALL)
_LINE: Final = re.compile(r"^\s*(?P<key>test|command|expected)\s*:\s?(?P<value>.*)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceExample:
    """One executable acceptance example: a named test, or a command with its expected output lines."""

    test: str | None = None
    argv: tuple[str, ...] = ()
    expected: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problem = example_problem(self)
        if problem is not None:
            raise InvalidValueError(kind="acceptance example", reason=problem)

    def to_document(self) -> dict[str, object]:
        if self.test is not None:
            return {"kind": "named-test", "test": self.test}
        return {"kind": "command", "argv": list(self.argv), "expected": list(self.expected)}

    def describe(self) -> str:
        """One line for a person: the test, or the command and what it must print."""
        if self.test is not None:
            return f"test {self.test} exists and passes"
        printed = " | ".join(self.expected)
        return f"`{shlex.join(self.argv)}` exits 0" + (f" and prints exactly: {printed}" if printed else "")


def example_problem(example: AcceptanceExample) -> str | None:
    """Why ``example`` is not an executable example, or None."""
    if (example.test is None) == (not example.argv):
        return "an example names exactly one test or one command"
    if example.test is not None:
        if example.expected:
            return "a test example has no expected output"
        if "::" not in example.test or not example.test.strip() or len(example.test) > _MAX_TEXT:
            return ("a test example names one test by its pytest node id (path::name); a whole file or suite is "
                    "not an example")
        return None
    if any(not part or "\x00" in part or len(part) > _MAX_TEXT for part in example.argv) or len(example.argv) > 256:
        return "a command example is a non-empty argv of bounded text"
    if any("\x00" in line or len(line) > _MAX_TEXT for line in example.expected) or len(example.expected) > 200:
        return "a command example's expected output is bounded text"
    return None


def _example(body: str) -> AcceptanceExample | str:
    fields: dict[str, list[str]] = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            return "a line is not 'test:', 'command:' or 'expected:'"
        fields.setdefault(match["key"], []).append(match["value"].strip())
    tests, commands = fields.get("test", []), fields.get("command", [])
    if len(tests) + len(commands) != 1:
        return "a block names exactly one test or one command"
    if tests and (not tests[0] or fields.get("expected")):
        return "a test block names one test and no expected output"
    try:
        if tests:
            return AcceptanceExample(test=tests[0])
        argv = tuple(shlex.split(commands[0]))
        if not argv:
            return "a command block has an empty command"
        return AcceptanceExample(argv=argv, expected=tuple(fields.get("expected", [])))
    except ValueError:
        return "a command's quoting does not close"
    except InvalidValueError as error:
        return error.reason


def parse_example(body: str) -> AcceptanceExample:
    """One example written as an ACCEPTANCE block's body (``test: …``, or ``command: …`` split as a POSIX shell
    would split words — never run by one — with ``expected: …`` lines); :class:`InvalidValueError` saying why not."""
    found = _example(body)
    if isinstance(found, str):
        raise InvalidValueError(kind="acceptance example", reason=found)
    return found


def examples_in_requirement(requirement: str) -> tuple[tuple[AcceptanceExample, ...], tuple[str, ...]]:
    """The examples in ``requirement``'s ACCEPTANCE blocks, and one problem per block that did not parse."""
    examples: list[AcceptanceExample] = []
    problems: list[str] = []
    for index, match in enumerate(_BLOCK.finditer(requirement), start=1):
        found = _example(match["body"])
        if isinstance(found, str):
            problems.append(f"block {index}: {found}")
        elif len(examples) < MAX_EXAMPLES:
            examples.append(found)
    return tuple(examples), tuple(problems)


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceSource:
    """The examples a task is checked against, where they came from (as a whole, and per example in
    ``origins``, same order), and the blocks that did not parse."""

    examples: tuple[AcceptanceExample, ...]
    source: str
    problems: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()


_WRITTEN: Final = "the person's ACCEPTANCE blocks in the requirement"


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(str(number) for number in numbers)


def _planned_source(edited_in: Sequence[int | None], revision: str) -> tuple[str, tuple[str, ...]]:
    """The whole source line and one origin per example of a plan's examples (``edited_in``: see
    ``Plan.examples_edited_in``, one entry per example)."""
    origins = tuple("proposed by the model" if edited is None else f"edited by the person in revision {edited}"
                    for edited in edited_in)
    if all(edited is None for edited in edited_in):
        return f"proposed by the model in {revision}, approved by the person with it", origins
    parts = []
    proposed = [number for number, edited in enumerate(edited_in, start=1) if edited is None]
    if proposed:
        parts.append(f"example(s) {_numbers(proposed)} proposed by the model")
    for revision_number in sorted({edited for edited in edited_in if edited is not None}):
        numbers = [number for number, edited in enumerate(edited_in, start=1) if edited == revision_number]
        parts.append(f"example(s) {_numbers(numbers)} edited by the person in revision {revision_number}")
    return f"{'; '.join(parts)}; approved by the person with {revision}", origins


def acceptance_of(requirement: str, planned: tuple[AcceptanceExample, ...], *, plan_revision: int | None,
                  edited_in: Sequence[int | None] = ()) -> AcceptanceSource:
    """The person's own examples when the requirement has any, else the ones the plan proposed (``edited_in``:
    the plan's ``examples_edited_in``, empty when the person edited none)."""
    written, problems = examples_in_requirement(requirement)
    if written:
        return AcceptanceSource(examples=written, source=_WRITTEN, problems=problems,
                                origins=tuple("written by the person in the requirement" for _ in written))
    if planned:
        examples = planned[:MAX_EXAMPLES]
        revision = "the plan" if plan_revision is None else f"plan revision {plan_revision}"
        marks = tuple(edited_in)[:len(examples)] if edited_in else ()
        source, origins = _planned_source(marks or (None,) * len(examples), revision)
        return AcceptanceSource(examples=examples, problems=problems, source=source, origins=origins)
    return AcceptanceSource(examples=(), source="none: neither the requirement nor the plan has an example",
                            problems=problems)
