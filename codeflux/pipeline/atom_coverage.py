"""Which tests execute each atom — measured once per attempt and shared by the stages that need it (7, 8, 9, 11, 13).

:func:`atom_coverage` detects the test command, resolves coverage.py (the repository's own, else codeflux's
overlay; :func:`~codeflux.pipeline.tool_overlay.resolve_tools`) and runs the coverage map
(:func:`~codeflux.pipeline.coverage_map.measure_coverage`) over the diff's atom files. The result is kept in
the phase's :class:`~codeflux.pipeline.phase_b.AtomFacts` (its ``shared`` mapping), so the repository's tests run
under coverage once per attempt however many stages read the map. Nothing here judges a gate: each stage words
its own ``blocked`` reason from :attr:`AtomCoverage.problem`.

**Selection from memory** (:mod:`codeflux.domain.covering_tests` has the rule). Before the run, memory is asked
(:meth:`~codeflux.pipeline.ports.MemoryPort.covering_tests`) which tests cover the files the diff changes, from
file-test maps judged at the task's base revision. When it names a selection, only those tests run under coverage
(the same test command, the same box and decision: :func:`~codeflux.pipeline.coverage_map.coverage_argv`); when a
changed Python file has no applicable map, memory is absent or unreadable, or the selected run could not be used
(not measured, none of its tests collected), the whole test command runs as before. The coverage evidence says which
(``test_selection``: "selected from memory entries [ids] (N of M tests)" or "whole suite: <reason>").

A selection can only make the measured coverage smaller, so the gates it feeds get stricter. A stage reading the map
that **fails** under a selected run is judged again before it fails (:func:`judge_on_coverage`): the tests are
measured once more on the whole test command (once per attempt, in facts of their own:
:func:`whole_suite_facts`), the stage is evaluated on that, and its evidence says why it was re-measured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.covering_tests import ChangedFile, CoveringTests
from codeflux.domain.errors import CodefluxError, safe_error_message
from codeflux.domain.pipeline import StageOutcome
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.coverage_map import CoverageMap, atom_body_lines, measure_coverage
from codeflux.pipeline.program import TestCommand, detect_test_command
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.tool_overlay import COVERAGE, ToolResolution, resolve_tools

__all__ = ["AtomCoverage", "atom_coverage", "judge_on_coverage", "measured_coverage", "tests_of_atom",
           "whole_suite_facts"]

_KEY: Final = "atom-coverage"
_WHOLE_KEY: Final = "whole-suite-facts"
_MAX_LISTED: Final = 200



@dataclass(frozen=True, slots=True, kw_only=True)
class AtomCoverage:
    """The test command, the check tools and the coverage map — or ``problem``: which of them is missing
    (``no-command``, ``tools``, ``not-measured``) and ``detail`` saying why."""

    command: TestCommand | None = None
    tools: ToolResolution | None = None
    coverage: CoverageMap | None = None
    problem: str | None = None
    detail: str = ""
    selection: CoveringTests | None = None
    """What memory selected (or why the whole test command ran); None when no run was attempted."""

    @property
    def selected(self) -> bool:
        """Only tests selected from memory ran (a gate failing on this map is measured again on the whole suite)."""
        return self.coverage is not None and self.coverage.selection is not None

    def selection_evidence(self) -> dict[str, object]:
        """``said`` — "selected from memory entries [ids] (N of M tests)" or "whole suite: <reason>" — and what it
        rests on."""
        chosen = self.selection
        if chosen is None:
            return {}
        run = None if self.coverage is None else self.coverage.selection
        evidence: dict[str, object] = {"said": _said(chosen, self.coverage), "entries": list(chosen.entry_ids)}
        if run is not None:
            evidence.update(tests=list(chosen.tests[:_MAX_LISTED]), test_files=list(chosen.test_files),
                            selected=run.selected, collected=run.collected, missing=list(run.missing))
        if chosen.without_map:
            evidence["without_map"] = list(chosen.without_map)
        if chosen.refused:
            evidence["refused"] = list(chosen.refused[:20])
        return evidence

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


def _said(chosen: CoveringTests, coverage: CoverageMap | None) -> str:
    run = None if coverage is None else coverage.selection
    if chosen.whole_suite is not None or run is None:
        return chosen.describe()
    return f"selected from memory entries [{', '.join(chosen.entry_ids)}] ({run.selected} of {run.collected} tests)"


def measured_coverage(facts: AtomFacts) -> AtomCoverage | None:
    """The attempt's coverage map if a stage already measured it — never a run of its own (stage 28's mocking
    report reads what phase B measured, or says it was not measured); the whole suite's when a gate had it
    measured again (:func:`judge_on_coverage`)."""
    whole = facts.shared.get(_WHOLE_KEY)
    if isinstance(whole, AtomFacts) and isinstance(whole.shared.get(_KEY), AtomCoverage):
        return whole.shared[_KEY]  # type: ignore[return-value]
    cached = facts.shared.get(_KEY)
    return cached if isinstance(cached, AtomCoverage) else None


def whole_suite_facts(facts: AtomFacts, why: str) -> AtomFacts:
    """The attempt's facts whose coverage run is the whole test command (``why`` is recorded as its reason):
    made once per attempt, so every gate judged again shares one more run."""
    if facts.whole_suite is not None:
        return facts
    return facts.once(_WHOLE_KEY, AtomFacts, lambda: facts.for_whole_suite(why))


def judge_on_coverage(facts: AtomFacts, evaluate: Callable[[AtomFacts], StageResult]) -> StageResult:
    """``evaluate`` (a stage reading the coverage map) on ``facts``; when it fails on a run of tests selected from
    memory, evaluated again on the whole test command's run (see the module docstring). The result's evidence
    carries ``test_selection``: which run it was judged on, and on a re-measure, why."""
    result = evaluate(facts)
    measured = facts.shared.get(_KEY)
    if not isinstance(measured, AtomCoverage) or measured.selection is None:
        return result
    if result.verdict.outcome is not StageOutcome.FAILED or not measured.selected:
        return _with_selection(result, measured.selection_evidence())
    stage = result.verdict.stage.value
    failed = (result.verdict.gate_evaluation or "")[:500]
    whole = whole_suite_facts(facts, f"{stage} failed under the tests selected from memory")
    remeasured = atom_coverage(whole)
    why = f"{stage} failed under the tests selected from memory ({failed}); measured again on the whole test command"
    if remeasured.problem is not None:  # the failure on the selection stands, saying the whole run was not had
        return _with_selection(result, {**measured.selection_evidence(),
                                        "remeasured": f"{why}, which could not be measured: {remeasured.detail}"})
    again = evaluate(whole)
    return _with_selection(again, {**remeasured.selection_evidence(), "remeasured": f"{why} and judged on that",
                                   "selected_run": measured.selection_evidence()})


def _with_selection(result: StageResult, selection: Mapping[str, object]) -> StageResult:
    # only a judged gate says which run it was judged on: a blocked stage carries no evidence, and a skipped one may
    # have stopped before reading the map (whether it was measured by then depends on the stages beside it)
    if result.verdict.outcome not in (StageOutcome.SATISFIED, StageOutcome.FAILED) or not selection:
        return result
    return replace(result, evidence={**result.evidence, "test_selection": dict(selection)})


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
    chosen = _covering_tests(facts)
    if chosen.selective:
        coverage = measure_coverage(ports, attempt=facts.attempt, tools=tools, test_argv=command.argv, files=files,
                                    diff_identity=facts.diff_identity, selection=chosen.pytest_selection)
        unusable = _unusable_selection(coverage)
        if unusable is None:
            return _measured(command, tools, coverage, chosen)
        chosen = CoveringTests.whole(unusable, refused=chosen.refused)
    coverage = measure_coverage(ports, attempt=facts.attempt, tools=tools, test_argv=command.argv, files=files,
                                diff_identity=facts.diff_identity)
    return _measured(command, tools, coverage, chosen)


def _measured(command: TestCommand, tools: ToolResolution, coverage: CoverageMap, chosen: CoveringTests
              ) -> AtomCoverage:
    found = AtomCoverage(command=command, tools=tools, coverage=coverage, selection=chosen)
    coverage = replace(coverage, evidence={**coverage.evidence, "test_selection": found.selection_evidence()})
    if not coverage.measured:
        return AtomCoverage(command=command, tools=tools, coverage=coverage, problem="not-measured",
                            detail=coverage.detail, selection=chosen)
    return AtomCoverage(command=command, tools=tools, coverage=coverage, selection=chosen)


def _changed_files(facts: AtomFacts) -> list[ChangedFile]:
    files = facts.assembly.evidence.get("files")
    items = [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []
    return [ChangedFile(path=str(item.get("path", "")), deleted=item.get("kind") == "deleted") for item in items]


def _covering_tests(facts: AtomFacts) -> CoveringTests:
    """What memory selects for the diff — or why the whole test command runs."""
    if facts.whole_suite is not None:
        return CoveringTests.whole(facts.whole_suite)
    memory = facts.ports.memory
    if memory is None:
        return CoveringTests.whole("no memory in this run")
    try:
        return memory.covering_tests(_changed_files(facts), facts.ports.facts.worktree.base)
    except CodefluxError as error:
        return CoveringTests.whole(f"memory could not be read: {safe_error_message(error)}")
    except OSError as error:
        return CoveringTests.whole(f"memory could not be read: {type(error).__name__}")


def _unusable_selection(coverage: CoverageMap) -> str | None:
    """Why a selected run cannot stand for the measurement (then the whole test command runs), else None."""
    if not coverage.measured:
        return f"the run of the selected tests was not measured ({coverage.detail})"
    if coverage.selection is None:
        return "the run of the selected tests did not report what it selected"
    if coverage.selection.selected == 0:
        return "none of the selected tests is in the test command's collection"
    return None


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
