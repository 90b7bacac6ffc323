"""Phase A, the stages codeflux performs: 1 instructions and 3 atomic-instructions.

**instructions** derives executable acceptance examples from the requirement text. A person writes
them as blocks the requirement carries verbatim::

    <<<ACCEPTANCE
    test: tests/test_calc.py::test_add_negative
    >>>
    <<<ACCEPTANCE
    command: python -m calc add -1 2
    expected: 1
    >>>

A ``test`` block names a test (pytest node id); a ``command`` block gives an argv (shell-like quoting,
never run through a shell) and, optionally, ``expected`` output lines. The gate holds when at least one
example is derived; a block that does not parse is recorded as a problem, never guessed at.

**atomic-instructions** reads the approved plan revision: every step must name the files it expects to
create or change (the implementation loop counts a step done only when a write to one of them
succeeded, so a step without files could never be shown done), and no two steps may share a title.
The evidence records the revision, its hash and each step; the tie of each step to the requirement is
the person's approval of that exact revision, which the evidence names.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.ports import TaskFacts

__all__ = [
    "AcceptanceExample",
    "StageResult",
    "derive_acceptance_examples",
    "evaluate_atomic_instructions",
    "evaluate_instructions",
]

_BLOCK: Final = re.compile(r"<<<ACCEPTANCE[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*>>>", re.DOTALL)
_LINE: Final = re.compile(r"^\s*(?P<key>test|command|expected)\s*:\s?(?P<value>.*)$")
_MAX_EXAMPLES: Final = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceExample:
    """One executable acceptance example: a named test, or a command with its expected output."""

    test: str | None = None
    argv: tuple[str, ...] = ()
    expected: tuple[str, ...] = ()

    def to_document(self) -> dict[str, object]:
        if self.test is not None:
            return {"kind": "named-test", "test": self.test}
        return {"kind": "command", "argv": list(self.argv), "expected": list(self.expected)}


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResult:
    """A stage's verdict and the evidence recorded with it (a JSON object)."""

    verdict: StageVerdict
    evidence: dict[str, object]


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
    if tests:
        if not tests[0] or fields.get("expected"):
            return "a test block names one test and no expected output"
        if "::" not in tests[0]:
            return ("a test block names one test by its pytest node id (path::name); a whole file or suite is not "
                    "an example")
        return AcceptanceExample(test=tests[0])
    try:
        argv = tuple(shlex.split(commands[0]))
    except ValueError:
        return "a command's quoting does not close"
    if not argv:
        return "a command block has an empty command"
    return AcceptanceExample(argv=argv, expected=tuple(fields.get("expected", [])))


def derive_acceptance_examples(requirement: str) -> tuple[tuple[AcceptanceExample, ...], tuple[str, ...]]:
    """The examples in ``requirement``'s ACCEPTANCE blocks, and one problem per block that did not parse."""
    examples: list[AcceptanceExample] = []
    problems: list[str] = []
    for index, match in enumerate(_BLOCK.finditer(requirement), start=1):
        found = _example(match["body"])
        if isinstance(found, str):
            problems.append(f"block {index}: {found}")
        elif len(examples) < _MAX_EXAMPLES:
            examples.append(found)
    return tuple(examples), tuple(problems)


def evaluate_instructions(facts: TaskFacts) -> StageResult:
    """Stage 1: at least one acceptance example derived from the requirement."""
    examples, problems = derive_acceptance_examples(facts.requirement)
    evidence: dict[str, object] = {"source": "requirement ACCEPTANCE blocks",
                                   "examples": [example.to_document() for example in examples],
                                   "problems": list(problems)}
    seen = f"derived {len(examples)} acceptance example(s) from the requirement"
    if problems:
        seen += f"; {len(problems)} block(s) did not parse"
    outcome = StageOutcome.SATISFIED if examples else StageOutcome.FAILED
    if not examples:
        seen += "; write <<<ACCEPTANCE blocks naming a test or a command with its expected output"
    verdict = StageVerdict(stage=StageName.INSTRUCTIONS, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)


def evaluate_atomic_instructions(facts: TaskFacts) -> StageResult:
    """Stage 3: the approved plan's steps are single-purpose units with their expected files."""
    steps = facts.plan.steps
    without_files = [step.title for step in steps if not step.expected_files]
    titles = [step.title for step in steps]
    repeated = sorted({title for title in titles if titles.count(title) > 1})
    evidence: dict[str, object] = {
        "plan_revision": facts.plan_revision, "plan_sha256": facts.plan_sha256,
        "approved_by": "the person who approved this exact revision and hash",
        "steps": [{"title": step.title, "expected_files": list(step.expected_files)} for step in steps],
        "steps_without_files": without_files, "repeated_titles": repeated,
    }
    seen = (f"plan revision {facts.plan_revision} has {len(steps)} step(s); "
            f"{len(steps) - len(without_files)} name their expected files")
    if repeated:
        seen += f"; repeated step titles: {', '.join(repeated)}"
    outcome = StageOutcome.FAILED if without_files or repeated else StageOutcome.SATISFIED
    verdict = StageVerdict(stage=StageName.ATOMIC_INSTRUCTIONS, outcome=outcome, gate_evaluation=seen)
    return StageResult(verdict=verdict, evidence=evidence)
