"""Stage 8 atom-example-tests: every atom is executed by a test, and a test of it fails against the atom's stub.

1. The check tools: coverage.py from the repository's environment or codeflux's overlay
   (:func:`~codeflux.pipeline.tool_overlay.resolve_tools`); missing and not installable → ``blocked`` naming the
   tool and the command that fixes it.
2. The coverage map (:func:`~codeflux.pipeline.coverage_map.measure_coverage`): the repository's tests run once
   under coverage.py with one context per test; an atom's tests are those that executed a line of its body (its
   ``def`` line and decorators run at import and say nothing) and passed on the final tree.
3. The stubs: each covered atom's body is replaced by ``raise NotImplementedError``
   (:func:`~codeflux.pipeline.stubs.stub_atom`, libcst in codeflux, docstring kept), and every stub is judged in
   **one** confined run of stage 13's in-process switching runner (:data:`~codeflux.pipeline.mutation.MUTATION_SCRIPT`,
   ``<python> -c MUTATION_SCRIPT <overlay|->``, following the test command's decision) started in a scratch copy of
   the final tree under the task's TMPDIR (:data:`STUB_DIRECTORY`, ``$TMPDIR/codeflux-scratch/stub``; never the
   worktree): for each atom in turn it replaces the file with the stubbed source (a new file renamed over it, never
   written through a link), purges every module loaded from the scratch copy from ``sys.modules`` (code and tests,
   so the tests bind the stub; no bytecode is written), runs only that atom's covering tests with ``pytest.main`` in
   the same process — all of them, no ``-x`` —, records which failed (in setup, call or teardown) and which passed,
   and puts the final tree's source back before the next atom. Stage 13's mutants are judged in the same run
   (:func:`~codeflux.pipeline.mutation.with_mutants`: their baseline first, then the stubs, then the mutants), so one
   interpreter and one pytest start serve every stub and mutant; the coordinator reads the runner's report bounded
   (untrusted) and removes the copy.

Gate: every atom has at least one covering test, and at least one of its covering tests fails against its stub.
A covering test that still passes against the stub is named for the atom ("does not test this atom"); an atom no
test executes is a finding. Not claimed: that the tests were written before the body, or that they check the
atom's results (a test that fails because the stub raised proves the atom is on its path, not that its value is
asserted); state a test leaves outside the scratch copy's modules (an installed package's cache, say) outlives
the purge between two atoms' stubs, as between stage 13's mutants. No atoms → ``skipped``. The worktree's diff
identity before and after the stage is in the evidence, and the run's request, exit and process id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from codeflux.domain.errors import CodefluxError
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts, worktree_text
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CoverageMap
from codeflux.pipeline.mutation import SWITCHES_KEY, SharedSwitches, mutation_argv, run_switches, with_mutants
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.stubs import stub_atom

__all__ = ["STUB_DIRECTORY", "STUB_WORKING_DIRECTORY", "evaluate_atom_example_tests"]

STUB_DIRECTORY: Final = f"{SCRATCH_FOLDER}/stub"
STUB_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{STUB_DIRECTORY}"
MAX_TESTS_PER_STUB: Final = 200
_STAGE: Final = StageName.ATOM_EXAMPLE_TESTS


def _identity(facts: AtomFacts) -> str | None:
    try:
        return diff_against_base(facts.ports.facts.worktree).identity
    except CodefluxError:
        return None


def evaluate_atom_example_tests(facts: AtomFacts) -> StageResult:
    """Stage 8 (see the module docstring)."""
    atoms = facts.diff.atoms
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom to test", {"atoms": []})
    ports = facts.ports
    worktree = ports.facts.worktree
    usable = atom_coverage(facts).usable(to="measure which tests execute each atom")
    if isinstance(usable, str):  # a blocked row carries no evidence: the reason says what
        return stage_result(_STAGE, StageOutcome.BLOCKED, usable, {})
    command, tools, coverage = usable
    before = facts.diff_identity
    evidence: dict[str, object] = {"tools": tools.to_evidence(), "coverage": dict(coverage.evidence),
                                   "diff_identity_before": before}
    covering = {atom.qualified_name: tests_of_atom(worktree.path, atom, coverage) for atom in atoms}
    results, stubs_run, run = _run_stubs(facts, interpreter=command.interpreter, test_argv=command.argv,
                                         overlay=tools.overlay_site, coverage=coverage, covering=covering)
    evidence.update(atoms=results, stubs_run=stubs_run, run=run, diff_identity_after=_identity(facts))
    untested = [item["atom"] for item in results if not item["tests"]]
    unkilled = [item["atom"] for item in results if item["tests"] and not item["failed_against_stub"]]
    not_stubbed = [item["atom"] for item in results if item.get("stub_problem")]
    held = not untested and not unkilled and not not_stubbed
    seen = [f"{len(atoms)} atom(s); {stubs_run} stub run(s) in a scratch copy"]
    if untested:
        seen.append(f"no test executes: {', '.join(map(str, untested))}")
    if unkilled:
        seen.append(f"every covering test still passes against the stub of: {', '.join(map(str, unkilled))}")
    if not_stubbed:
        seen.append(f"not judged (the stub could not be made or run): {', '.join(map(str, not_stubbed))}")
    passing = sorted({f"{test} (does not test {item['atom']})" for item in results
                      for test in _texts(item["passed_against_stub"])})
    if passing:
        seen.append(f"still passing against a stub: {'; '.join(passing[:10])}")
    return stage_result(_STAGE, StageOutcome.SATISFIED if held else StageOutcome.FAILED, "; ".join(seen), evidence)


def _texts(value: object) -> list[str]:
    return [str(entry) for entry in value] if isinstance(value, list) else []


def _run_stubs(facts: AtomFacts, *, interpreter: str, test_argv: tuple[str, ...], overlay: Path | None,
               coverage: CoverageMap, covering: dict[str, tuple[str, ...]]
               ) -> tuple[list[dict[str, object]], int, dict[str, object]]:
    """Stub each covered atom (libcst, here) and judge every stub — with stage 13's mutants — in one confined run of
    the switching runner in a scratch copy of the final tree (see the module docstring): the per-atom results, the
    stubs judged, the run."""
    worktree = facts.ports.facts.worktree.path
    results: list[dict[str, object]] = []
    switches: list[dict[str, object]] = []
    originals: dict[str, str] = {}
    waiting: dict[str, dict[str, object]] = {}
    for atom in facts.diff.atoms:
        tests = covering[atom.qualified_name]
        item: dict[str, object] = {"atom": atom.qualified_name, "path": atom.path,
                                   "lines": [atom.first_line, atom.last_line], "tests": list(tests),
                                   "failed_against_stub": [], "passed_against_stub": []}
        results.append(item)
        if not tests:
            item["finding"] = "no test executes this atom's body"
            continue
        source = worktree_text(worktree / atom.path)
        if source is None:
            item["stub_problem"] = "the atom's file is not a regular UTF-8 file in the worktree"
            continue
        stubbed = stub_atom(source, local_name=atom.local_name, first_line=atom.first_line)
        if stubbed is None:
            item["stub_problem"] = "the atom was not found exactly once by libcst"
            continue
        identifier = f"stub.{len(switches)}"
        originals[atom.path] = source
        switches.append({"id": identifier, "path": atom.path, "source": stubbed,
                         "tests": list(tests[:MAX_TESTS_PER_STUB]), "stop_first": False, "timeout": 0})
        waiting[identifier] = item
    if not switches:
        return results, 0, {}
    job, planned = with_mutants(facts, coverage, {"mutants": switches, "tests": [], "baseline": False,
                                                  "originals": originals, "min_timeout": 0})
    report, run, problem = run_switches(facts.ports, attempt=facts.attempt, changed=facts.changed_paths,
                                        directory=STUB_DIRECTORY, working_directory=STUB_WORKING_DIRECTORY,
                                        argv=mutation_argv(interpreter, overlay), test_argv=test_argv, job=job,
                                        what="the stubs' and mutants' run")
    if job.get("baseline", True):  # the mutants were judged in this run: stage 13 reads them from here
        facts.shared[SWITCHES_KEY] = SharedSwitches(planned=planned, report=report, run=dict(run), problem=problem)
    if report is None:
        for item in waiting.values():
            item["stub_problem"] = problem or "the stubs' run wrote no report"
        return results, 0, run
    pid = report.get("pid")
    run.update(pid=pid if isinstance(pid, int) else None, complete=report.get("done") is True)
    judged = _by_id(report)
    stubs_run = 0
    for identifier, item in waiting.items():
        item.update(request_id=run.get("request_id"), exit_code=run.get("exit_code"))
        problem = _judge(item, judged.get(identifier))
        if problem is not None:
            item["stub_problem"] = problem
        else:
            stubs_run += 1
    return results, stubs_run, run


def _by_id(report: dict[str, object]) -> dict[str, dict[str, object]]:
    found = report.get("mutants")
    entries = [entry for entry in found if isinstance(entry, dict)] if isinstance(found, list) else []
    return {str(entry.get("id")): entry for entry in entries}


def _judge(item: dict[str, object], result: dict[str, object] | None) -> str | None:
    """Record in ``item`` which of its tests failed and passed against its stub; why it was not judged, or None."""
    if result is None:
        return "the stubs' run ended before this stub was judged"
    status = result.get("status")
    item["pytest_status"] = status
    failed, passed = _texts(result.get("failed_all")), _texts(result.get("passed_all"))
    tests = _texts(item["tests"])[:MAX_TESTS_PER_STUB]
    if not failed and not passed:
        return f"pytest ran none of the stub's tests (pytest exit status {status})"
    item["failed_against_stub"] = [test for test in tests if test in failed]
    item["passed_against_stub"] = [test for test in tests if test in passed and test not in failed]
    item["not_judged"] = [test for test in tests if test not in failed and test not in passed]
    return None
