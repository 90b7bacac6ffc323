"""Stage 8 atom-example-tests: every atom is executed by a test, and a test of it fails against the atom's stub.

1. The check tools: coverage.py from the repository's environment or codeflux's overlay
   (:func:`~codeflux.pipeline.tool_overlay.resolve_tools`); missing and not installable → ``blocked`` naming the
   tool and the command that fixes it.
2. The coverage map (:func:`~codeflux.pipeline.coverage_map.measure_coverage`): the repository's tests run once
   under coverage.py with one context per test; an atom's tests are those that executed a line of its body (its
   ``def`` line and decorators run at import and say nothing) and passed on the final tree.
3. The stubs: in one scratch copy of the final tree under the task's TMPDIR (:data:`STUB_DIRECTORY`, started in as
   ``$TMPDIR/codeflux-scratch/stub``; never the worktree), each covered atom's body in turn is replaced by ``raise
   NotImplementedError`` (:func:`~codeflux.pipeline.stubs.stub_atom`, docstring kept) and only its tests run there
   (``<python> -m pytest -p no:cacheprovider --junitxml=$TMPDIR/codeflux-checks/stub-junit.xml <node ids>``,
   following the test command's decision); the file is put back before the next atom.

Gate: every atom has at least one covering test, and at least one of its covering tests fails against its stub.
A covering test that still passes against the stub is named for the atom ("does not test this atom"); an atom no
test executes is a finding. Not claimed: that the tests were written before the body, or that they check the
atom's results (a test that fails because the stub raised proves the atom is on its path, not that its value is
asserted). No atoms → ``skipped``. The worktree's diff identity before and after the stage is in the evidence.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Final
from xml.etree import ElementTree

from codeflux.domain.atoms import Atom
from codeflux.domain.errors import CodefluxError
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CHECKS_FOLDER
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JunitCounts, parse_junit_xml
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.stubs import stub_atom

__all__ = ["STUB_DIRECTORY", "STUB_WORKING_DIRECTORY", "evaluate_atom_example_tests", "stub_argv"]

STUB_DIRECTORY: Final = f"{SCRATCH_FOLDER}/stub"
STUB_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{STUB_DIRECTORY}"
STUB_JUNIT_IN_TEMP: Final = f"{CHECKS_FOLDER}/stub-junit.xml"
MAX_TESTS_PER_STUB: Final = 200
_STAGE: Final = StageName.ATOM_EXAMPLE_TESTS
_MAX_JUNIT_BYTES: Final = 16 * 1024 * 1024



def stub_argv(interpreter: str, tests: Sequence[str]) -> tuple[str, ...]:
    return (interpreter, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml=$TMPDIR/{STUB_JUNIT_IN_TEMP}",
            *tests)


def _identity(facts: AtomFacts) -> str | None:
    try:
        return diff_against_base(facts.ports.facts.worktree).identity
    except CodefluxError:
        return None


def _read_junit(path: Path) -> JunitCounts | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_JUNIT_BYTES:
        return None
    try:
        return parse_junit_xml(path.read_bytes())
    except (ValueError, ElementTree.ParseError):
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
    results, stubs_run = _run_stubs(facts, command.interpreter, command.argv, atoms, covering)
    evidence.update(atoms=results, stubs_run=stubs_run, diff_identity_after=_identity(facts))
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


def _run_stubs(facts: AtomFacts, interpreter: str, test_argv: tuple[str, ...], atoms: Sequence[Atom],
               covering: dict[str, tuple[str, ...]]) -> tuple[list[dict[str, object]], int]:
    """Stub each covered atom in a scratch copy of the final tree and run its tests there. Each atom gets a fresh
    copy: what a confined run left in one (a link where a file was, say) is never written through."""
    ports = facts.ports
    temp = ports.commands.temp_directory(ports.facts.task_id)
    changed = sorted({str(item.get("path")) for item in _changed(facts)})
    results: list[dict[str, object]] = []
    stubs_run = 0
    try:
        for atom in atoms:
            tests = covering[atom.qualified_name]
            item: dict[str, object] = {"atom": atom.qualified_name, "path": atom.path,
                                       "lines": [atom.first_line, atom.last_line], "tests": list(tests),
                                       "failed_against_stub": [], "passed_against_stub": []}
            results.append(item)
            if not tests:
                item["finding"] = "no test executes this atom's body"
                continue
            problem = _stub_and_run(ports, facts.attempt, temp, changed, interpreter=interpreter, test_argv=test_argv,
                                    atom=atom, tests=tests[:MAX_TESTS_PER_STUB], item=item)
            if problem is not None:
                item["stub_problem"] = problem
            else:
                stubs_run += 1
    finally:
        remove_base_scratch(temp, STUB_DIRECTORY)
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one
    return results, stubs_run


def _changed(facts: AtomFacts) -> list[dict[str, object]]:
    files = facts.assembly.evidence.get("files")
    return [dict(item) for item in files if isinstance(item, dict)] if isinstance(files, list) else []


def _write_new(path: Path, text: str) -> bool:
    """Replace ``path`` (a regular file the coordinator just wrote) without following a link."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return True


def _stub_and_run(ports: PipelinePorts, attempt: int, temp: Path, changed: Sequence[str], *, interpreter: str,
                  test_argv: tuple[str, ...], atom: Atom, tests: Sequence[str], item: dict[str, object]) -> str | None:
    """Write a fresh scratch copy of the final tree with ``atom`` stubbed, run ``tests`` there, record what failed
    and passed in ``item``. Returns why it was not judged, or None."""
    scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=STUB_DIRECTORY, overlay=changed)
    if scratch.path is None:
        return f"the scratch copy could not be made: {scratch.refusal}"
    target = scratch.path / atom.path
    if target.is_symlink() or not target.is_file():
        return "the atom's file is not a regular file in the scratch copy"
    stubbed = stub_atom(target.read_text(encoding="utf-8"), local_name=atom.local_name, first_line=atom.first_line)
    if stubbed is None:
        return "the atom was not found exactly once by libcst"
    if not _write_new(target, stubbed):
        return "the stub could not be written into the scratch copy"
    report = temp / PurePosixPath(STUB_JUNIT_IN_TEMP)
    shutil.rmtree(report.parent, ignore_errors=True)
    argv = stub_argv(interpreter, tests)
    run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt,
                                           working_directory=STUB_WORKING_DIRECTORY, covered_by=test_argv)
    item.update(stub_argv=list(argv), request_id=run.request_id, exit_code=run.exit_code)
    if not run.ran:
        return f"the stub's tests did not run: {run.refusal}"
    counts = None if report.parent.is_symlink() else _read_junit(report)
    if counts is None:
        return f"pytest wrote no readable junit report against the stub (exit {run.exit_code})"
    statuses = {test: counts.status_of(test) for test in tests}
    item["failed_against_stub"] = [test for test, status in statuses.items() if status in ("failed", "error")]
    item["passed_against_stub"] = [test for test, status in statuses.items() if status == "passed"]
    item["not_judged"] = [test for test, status in statuses.items() if status not in ("failed", "error", "passed")]
    return None


