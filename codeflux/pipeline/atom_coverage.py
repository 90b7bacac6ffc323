"""Which tests execute each atom — measured once per attempt and shared by the stages that need it (7, 8, 9, 11, 13).

:func:`atom_coverage` detects the test command, resolves coverage.py (the repository's own, else codeflux's
overlay; :func:`~codeflux.pipeline.tool_overlay.resolve_tools`) and runs the coverage map
(:func:`~codeflux.pipeline.coverage_map.measure_coverage`) over the diff's atom files. The result is kept in
the phase's :class:`~codeflux.pipeline.phase_b.AtomFacts` (its ``shared`` mapping), so the repository's tests run
under coverage once per attempt however many stages read the map. Nothing here judges a gate: each stage words
its own ``blocked`` reason from :attr:`AtomCoverage.problem`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.coverage_map import CoverageMap, atom_body_lines, measure_coverage
from codeflux.pipeline.program import TestCommand, detect_test_command
from codeflux.pipeline.tool_overlay import COVERAGE, ToolResolution, resolve_tools

__all__ = ["AtomCoverage", "atom_coverage", "measured_coverage", "tests_of_atom"]

_KEY: Final = "atom-coverage"



@dataclass(frozen=True, slots=True, kw_only=True)
class AtomCoverage:
    """The test command, the check tools and the coverage map — or ``problem``: which of them is missing
    (``no-command``, ``tools``, ``not-measured``) and ``detail`` saying why."""

    command: TestCommand | None = None
    tools: ToolResolution | None = None
    coverage: CoverageMap | None = None
    problem: str | None = None
    detail: str = ""

    def usable(self, *, to: str, what: str = "each atom") -> tuple[TestCommand, ToolResolution, CoverageMap] | str:
        """The command, tools and map a stage runs with — or its ``blocked`` reason: ``to`` says what the test
        command was needed for, ``what`` what the map was to show for that stage."""
        if self.problem == "no-command" or self.command is None:
            return f"no usable test command (an interpreter with pytest) to {to}"
        if self.problem == "tools" or self.tools is None:
            return self.detail or "coverage is missing"
        if self.coverage is None or not self.coverage.measured:
            return f"which tests execute {what} was not measured: {self.detail}"
        return self.command, self.tools, self.coverage


def measured_coverage(facts: AtomFacts) -> AtomCoverage | None:
    """The attempt's coverage map if a stage already measured it — never a run of its own (stage 28's mocking
    report reads what phase B measured, or says it was not measured)."""
    cached = facts.shared.get(_KEY)
    return cached if isinstance(cached, AtomCoverage) else None


def atom_coverage(facts: AtomFacts) -> AtomCoverage:
    """The attempt's coverage map of the diff's atoms (see the module docstring), measured on first use."""
    return facts.once(_KEY, AtomCoverage, lambda: _measure(facts))


def _measure(facts: AtomFacts) -> AtomCoverage:
    ports = facts.ports
    command = detect_test_command(worktree=ports.facts.worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        return AtomCoverage(command=command, problem="no-command",
                            detail="no usable test command (an interpreter with pytest)")
    tools = resolve_tools(ports, attempt=facts.attempt, interpreter=command.interpreter, test_argv=command.argv,
                          tools=(COVERAGE,), probes=facts.shared)
    if not tools.ready:
        return AtomCoverage(command=command, tools=tools, problem="tools",
                            detail=tools.blocked or "coverage is missing")
    files = sorted({atom.path for atom in facts.diff.atoms})
    coverage = measure_coverage(ports, attempt=facts.attempt, tools=tools, test_argv=command.argv, files=files,
                                diff_identity=facts.diff_identity)
    if not coverage.measured:
        return AtomCoverage(command=command, tools=tools, coverage=coverage, problem="not-measured",
                            detail=coverage.detail)
    return AtomCoverage(command=command, tools=tools, coverage=coverage)


def tests_of_atom(worktree: Path, atom: Atom, coverage: CoverageMap, *, passed_only: bool = True) -> tuple[str, ...]:
    """The tests that executed a line of ``atom``'s body (its ``def`` line and decorators run at import and say
    nothing); with ``passed_only`` only those that passed in the coverage run."""
    try:
        source = (worktree / atom.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    body = atom_body_lines(source, atom)
    tests = coverage.tests_of_lines(atom.path, body)
    return tuple(test for test in tests if coverage.outcomes.get(test) == "passed") if passed_only else tests
