"""Stage 13 atom-mutation: mutants on the changed lines of each atom, each judged against only the tests that run
its line, switched in one process in the task's box.

1. The coverage map (:func:`~codeflux.pipeline.coverage_map.measure_coverage`, coverage.py from the repository's
   environment or codeflux's overlay; missing and not installable → ``blocked`` naming the tool and the fix).
2. The mutants (:func:`~codeflux.pipeline.mutants.mutants_of_atom`, libcst in codeflux — nothing of the repository
   runs): on the lines of each atom's body the diff adds or rewrites, at most :data:`MAX_MUTANTS_PER_ATOM` per atom
   and :data:`MAX_MUTANTS` in all. A mutant's tests are the tests that executed its line and passed on the final
   tree; a mutant no test executes survives (nothing could kill it) and is listed as such.
3. One confined command per stage run (``<python> -c MUTATION_SCRIPT <overlay|->``, started in a scratch copy of
   the final tree under the task's TMPDIR — :data:`MUTATION_WORKING_DIRECTORY`, never the worktree — following the
   test command's decision, no second card) runs the fixed :data:`MUTATION_SCRIPT`. It reads the job the
   coordinator wrote to ``$TMPDIR/codeflux-checks/mutation-job.json`` and first runs every covering test once on
   the unmutated copy (the baseline: a test that does not pass there is dropped from every mutant). Then, for each
   mutant: it puts the mutant's source in place (a new file renamed over the old one, never written through a
   link), **purges from ``sys.modules`` every module loaded from the
   scratch copy** (code and tests, so a test's ``from pkg.mod import f`` binds the mutant, not a function object
   of an earlier run; bytecode is never written, so no stale ``.pyc`` is read), runs the mutant's tests with
   ``pytest.main([...], plugins=[...])`` in the same process (``-x``: the first failure kills), and puts the
   original source back. A per-mutant timer (``SIGALRM``: ten times the baseline's duration, at least
   :data:`MIN_TIMEOUT_SECONDS`) interrupts a mutant that hangs; it counts as killed by timeout, reported apart.
   This is mutmut's design (switch mutants inside one process) — a confined pytest per mutant would pay the
   interpreter's and pytest's start-up for every mutant. The script writes ``mutation-report.json`` next to the job
   after every mutant, which the coordinator reads bounded (untrusted: the repository's tests ran in that process).
   The same runner judges stage 8's stubs (:func:`run_switches`; each stub's tests run to the end, without a timer,
   and every failing and passing test named) — **in the same run**: stage 8 adds these mutants to its job
   (:func:`with_mutants`; the baseline first, then the stubs, then the mutants) and leaves the run in
   ``facts.shared`` (:data:`SWITCHES_KEY`), so one interpreter and pytest start-up serve both stages and this stage
   reads its results from there (``run.shared_with`` in the evidence). Without stage 8 it starts the runner itself.

Gate: for every atom with a judged mutant, killed (a covering test failed, or it timed out) ÷ judged ≥ the
threshold :data:`~codeflux.pipeline.thresholds.ATOM_MUTATION_SCORE_MIN` (default 70 %). Failed names each
surviving mutant with its diff (``findings``: they join a send-back's context; the stage never sends back itself).
No atoms, no mutable place on the changed lines, or no covering test at all → ``skipped``. Not proven: that the
tests are right — only that they notice these six kinds of change on these lines; an equivalent mutant (one
that behaves like the original) survives and lowers the score. The worktree's diff identity before and after is in
the evidence.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.errors import CodefluxError
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_coverage import atom_coverage
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, CoverageMap, atom_body_lines, read_box_json
from codeflux.pipeline.mutants import Mutant, mutant_diff, mutants_of_atom
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import ATOM_MUTATION_SCORE_MIN, threshold_of
from codeflux.pipeline.tool_overlay import OVERLAY_SITE_SCRIPT

__all__ = ["MUTATION_DIRECTORY", "MUTATION_SCRIPT", "MUTATION_WORKING_DIRECTORY", "evaluate_atom_mutation",
           "mutation_argv", "run_switches", "write_switch_job"]

MUTATION_DIRECTORY: Final = f"{SCRATCH_FOLDER}/mutation"
MUTATION_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{MUTATION_DIRECTORY}"
JOB_IN_TEMP: Final = f"{CHECKS_FOLDER}/mutation-job.json"
REPORT_IN_TEMP: Final = f"{CHECKS_FOLDER}/mutation-report.json"
MAX_MUTANTS_PER_ATOM: Final = 60
MAX_MUTANTS: Final = 300
MAX_TESTS_PER_MUTANT: Final = 200
MIN_TIMEOUT_SECONDS: Final = 2.0
_MAX_REPORT_BYTES: Final = 8 * 1024 * 1024
_MAX_LISTED: Final = 20
_STAGE: Final = StageName.ATOM_MUTATION

MUTATION_SCRIPT: Final = (
    "import importlib, json, os, signal, site, sys, time\n"
    + OVERLAY_SITE_SCRIPT +
    "sys.dont_write_bytecode = True\n"
    "checks = os.path.join(os.environ['TMPDIR'], '" + CHECKS_FOLDER + "')\n"
    "with open(os.path.join(checks, 'mutation-job.json')) as handle:\n"
    "    job = json.load(handle)\n"
    "root = os.getcwd()\n"
    "inside = root + os.sep\n"
    "import pytest\n"
    "class Outcomes:\n"
    "    def __init__(self):\n"
    "        self.failed, self.passed = [], []\n"
    "    def pytest_runtest_logreport(self, report):\n"
    "        if report.failed:\n"
    "            self.failed.append(report.nodeid)\n"
    "        elif report.when == 'call' and report.passed:\n"
    "            self.passed.append(report.nodeid)\n"
    "class Hung(KeyboardInterrupt):\n"
    "    pass\n"
    "def alarm(signum, frame):\n"
    "    raise Hung()\n"
    "signal.signal(signal.SIGALRM, alarm)\n"
    "def purge():\n"
    "    for name, module in list(sys.modules.items()):\n"
    "        where = getattr(module, '__file__', None)\n"
    "        if isinstance(where, str) and os.path.abspath(where).startswith(inside):\n"
    "            del sys.modules[name]\n"
    "    importlib.invalidate_caches()\n"
    "def run(tests, timeout, stop_first):\n"
    "    purge()\n"
    "    outcomes = Outcomes()\n"
    "    arguments = [*overlay_plugins_off, '-p', 'no:cacheprovider', '-q', '--tb=no', '--no-header', '-o',\n"
    "                 'addopts=']\n"
    "    if stop_first:\n"
    "        arguments.append('-x')\n"
    "    started = time.monotonic()\n"
    "    hung = False\n"
    "    status = None\n"
    "    try:\n"
    "        if timeout:\n"
    "            signal.setitimer(signal.ITIMER_REAL, timeout)\n"
    "        status = int(pytest.main(arguments + list(tests), plugins=[outcomes]))\n"
    "        if status == 2 and timeout and time.monotonic() - started >= timeout:\n"
    "            hung = True\n"
    "    except Hung:\n"
    "        hung = True\n"
    "    finally:\n"
    "        signal.setitimer(signal.ITIMER_REAL, 0)\n"
    "    result = {'status': status, 'hung': hung, 'seconds': time.monotonic() - started,\n"
    "              'failed': outcomes.failed[:5], 'passed': len(outcomes.passed)}\n"
    "    if not stop_first:\n"
    "        outcome_lists(result, outcomes)\n"
    "    return result\n"
    "def outcome_lists(result, outcomes):\n"
    "    result['failed_all'] = list(dict.fromkeys(outcomes.failed))\n"
    "    result['passed_all'] = [test for test in outcomes.passed if test not in outcomes.failed]\n"
    "report = {'tools': {'pytest': pytest.__version__}, 'locations': {'pytest': os.path.dirname(pytest.__file__)},\n"
    "          'python': sys.version.split()[0], 'pid': os.getpid(), 'mutants': []}\n"
    "def save():\n"
    "    with open(os.path.join(checks, 'mutation-report.json'), 'w') as handle:\n"
    "        json.dump(report, handle)\n"
    "def put(target, text):\n"
    "    staged = target + '.codeflux-switch'\n"
    "    with open(staged, 'w', encoding='utf-8') as handle:\n"
    "        handle.write(text)\n"
    "    os.replace(staged, target)\n"
    "originals = job.get('originals') or {}\n"
    "if job.get('baseline', True):\n"
    "    baseline = run(job['tests'], 0, False)\n"
    "    broken = set(baseline.pop('failed_all'))\n"
    "    del baseline['passed_all']\n"
    "    report['baseline'] = baseline\n"
    "    timeout = max(job['min_timeout'], 10 * baseline['seconds'])\n"
    "else:\n"
    "    broken = set()\n"
    "    timeout = job.get('timeout') or 0\n"
    "report['timeout_seconds'] = timeout\n"
    "save()\n"
    "started = time.monotonic()\n"
    "for mutant in job['mutants']:\n"
    "    target = os.path.join(root, mutant['path'])\n"
    "    original = originals.get(mutant['path'])\n"
    "    if original is None:\n"
    "        with open(target, encoding='utf-8') as handle:\n"
    "            original = handle.read()\n"
    "    put(target, mutant['source'])\n"
    "    stop_first = mutant.get('stop_first', True)\n"
    "    try:\n"
    "        tests = [test for test in mutant['tests'] if test not in broken]\n"
    "        idle = {'status': None, 'hung': False, 'seconds': 0.0, 'failed': [], 'passed': 0}\n"
    "        result = run(tests, mutant.get('timeout', timeout), stop_first) if tests else idle\n"
    "    finally:\n"
    "        put(target, original)\n"
    "    result['id'] = mutant['id']\n"
    "    result['tests'] = len(tests)\n"
    "    report['mutants'].append(result)\n"
    "    report['mutants_seconds'] = time.monotonic() - started\n"
    "    save()\n"
    "purge()\n"
    "report['done'] = True\n"
    "save()\n"
)
"""The fixed in-box runner (see the module docstring); argv: the overlay's site folder or ``-``."""



def mutation_argv(interpreter: str, overlay_site: Path | None) -> tuple[str, ...]:
    """The exact in-box run (see the module docstring)."""
    return (interpreter, "-c", MUTATION_SCRIPT, "-" if overlay_site is None else str(overlay_site))


def _identity(ports: PipelinePorts) -> str | None:
    try:
        return diff_against_base(ports.facts.worktree).identity
    except CodefluxError:
        return None


class _Planned:
    """One atom's mutants and each mutant's covering tests."""

    def __init__(self, atom: Atom, source: str, mutants: Sequence[Mutant], tests: Sequence[tuple[str, ...]],
                 problem: str | None) -> None:
        self.atom = atom
        self.source = source
        self.mutants = tuple(mutants)
        self.tests = tuple(tests)
        self.problem = problem


def _plan(worktree: Path, atoms: Sequence[Atom], coverage: CoverageMap) -> list[_Planned]:
    planned: list[_Planned] = []
    total = 0
    for atom in atoms:
        try:
            source = (worktree / atom.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            planned.append(_Planned(atom, "", (), (), "the atom's file could not be read"))
            continue
        body = set(atom_body_lines(source, atom))
        lines = sorted(body.intersection(atom.changed))
        room = max(0, min(MAX_MUTANTS_PER_ATOM, MAX_MUTANTS - total))
        found = mutants_of_atom(source, local_name=atom.local_name, first_line=atom.first_line, lines=lines,
                                limit=room)
        if found is None:
            planned.append(_Planned(atom, source, (), (), "the atom was not found exactly once by libcst"))
            continue
        total += len(found)
        tests = [tuple(test for test in coverage.tests_of_line(atom.path, mutant.line)
                       if coverage.outcomes.get(test) == "passed")[:MAX_TESTS_PER_MUTANT] for mutant in found]
        planned.append(_Planned(atom, source, found, tests, None))
    return planned


def _read_report(path: Path) -> dict[str, object] | None:
    return read_box_json(path, max_bytes=_MAX_REPORT_BYTES)


def _job(planned: Sequence[_Planned]) -> dict[str, object]:
    mutants = [{"id": f"{index}.{number}", "path": item.atom.path, "source": mutant.source, "tests": list(tests)}
               for index, item in enumerate(planned)
               for number, (mutant, tests) in enumerate(zip(item.mutants, item.tests, strict=True)) if tests]
    every = sorted({test for item in planned for tests in item.tests for test in tests})
    originals = {item.atom.path: item.source for item in planned if item.mutants}
    return {"mutants": mutants, "tests": every, "min_timeout": MIN_TIMEOUT_SECONDS, "originals": originals}


def write_switch_job(temp: Path, job: dict[str, object]) -> bool:
    """Write ``job`` for :data:`MUTATION_SCRIPT` into the task's fresh ``codeflux-checks`` folder (False: it could
    not be made — a link or something else is in its place)."""
    checks = temp / CHECKS_FOLDER
    shutil.rmtree(checks, ignore_errors=True)
    if checks.exists() or checks.is_symlink():
        return False
    checks.mkdir(parents=True)
    (checks / PurePosixPath(JOB_IN_TEMP).name).write_text(json.dumps(job), encoding="utf-8")
    return True


SWITCHES_KEY: Final = "atom-switches"
"""Where stage 8 leaves, in ``facts.shared``, the run that judged its stubs and this stage's mutants together."""


@dataclass(frozen=True, slots=True)
class SharedSwitches:
    """Stage 8's run of the switching runner that judged this stage's mutants too: what was planned, and the run."""

    planned: tuple[_Planned, ...]
    report: dict[str, object] | None
    run: dict[str, object]
    problem: str | None


def with_mutants(facts: AtomFacts, coverage: CoverageMap, job: dict[str, object]
                 ) -> tuple[dict[str, object], tuple[_Planned, ...]]:
    """Stage 8's stub ``job`` with this stage's mutants added, so one runner process judges both (see the module
    docstring): the mutants' baseline runs first, then the stubs (no timer, as before), then the mutants."""
    planned = tuple(_plan(facts.ports.facts.worktree.path, facts.diff.atoms, coverage))
    mutants = _job(planned)
    entries = mutants["mutants"]
    if not isinstance(entries, list) or not entries:
        return job, planned
    stubs = job["mutants"]
    originals = {**_mapping(mutants["originals"]), **_mapping(job["originals"])}
    return {"mutants": [*(stubs if isinstance(stubs, list) else []), *entries], "tests": mutants["tests"],
            "min_timeout": MIN_TIMEOUT_SECONDS, "originals": originals}, planned


def _mapping(value: object) -> dict[str, object]:
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}


def evaluate_atom_mutation(facts: AtomFacts) -> StageResult:
    """Stage 13 (see the module docstring)."""
    atoms = facts.diff.atoms
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom to mutate", {"atoms": []})
    ports = facts.ports
    worktree = ports.facts.worktree
    # The attempt's one coverage map (shared with 8, 9 and 11): a second identical coverage request in the same
    # attempt would be the first one again (same idempotency key) and find its map already read.
    usable = atom_coverage(facts).usable(to="run the mutants' tests", what="each changed line")
    if isinstance(usable, str):
        return stage_result(_STAGE, StageOutcome.BLOCKED, usable, {})
    command, tools, coverage = usable
    threshold = threshold_of(ports.settings, ATOM_MUTATION_SCORE_MIN)
    if threshold.problem is not None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, threshold.problem, {})
    before = facts.diff_identity
    shared = facts.shared.get(SWITCHES_KEY)
    planned = list(shared.planned) if isinstance(shared, SharedSwitches) else _plan(worktree.path, atoms, coverage)
    evidence: dict[str, object] = {"tools": tools.to_evidence(), "coverage": dict(coverage.evidence),
                                   "threshold": threshold.to_evidence(), "diff_identity_before": before,
                                   "operators": ["arithmetic", "comparison", "boolean", "constant", "return-value",
                                                 "removed-call"]}
    mutant_count = sum(len(item.mutants) for item in planned)
    covered = sum(1 for item in planned for tests in item.tests if tests)
    if mutant_count == 0:
        evidence.update(atoms=[_atom_evidence(item, None) for item in planned], mutants_judged=0)
        return stage_result(_STAGE, StageOutcome.SKIPPED, "no mutable place (operator, comparison, constant, return, "
                            "call) on the lines the diff adds or changes in its atoms", evidence)
    if covered == 0:
        evidence.update(atoms=[_atom_evidence(item, None) for item in planned], mutants_judged=0)
        return stage_result(_STAGE, StageOutcome.SKIPPED, f"{mutant_count} mutant(s), but no passing test executes "
                            "any mutated line: nothing could judge them (stage 8 names the untested atoms)", evidence)
    if isinstance(shared, SharedSwitches):
        report, problem = shared.report, shared.problem
        run_evidence = {**shared.run, "shared_with": str(StageName.ATOM_EXAMPLE_TESTS)}
    else:
        report, run_evidence, problem = _run(facts, command.interpreter, command.argv, tools.overlay_site, planned)
    evidence.update(run=run_evidence, diff_identity_after=_identity(ports))
    if report is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, problem or "the mutants' run wrote no report", {})
    return _judged(planned, report, threshold.value, evidence)


def _run(facts: AtomFacts, interpreter: str, test_argv: tuple[str, ...], overlay: Path | None,
         planned: Sequence[_Planned]) -> tuple[dict[str, object] | None, dict[str, object], str | None]:
    return run_switches(facts.ports, attempt=facts.attempt, changed=facts.changed_paths, directory=MUTATION_DIRECTORY,
                        working_directory=MUTATION_WORKING_DIRECTORY, argv=mutation_argv(interpreter, overlay),
                        test_argv=test_argv, job=_job(planned), what="the mutants' run")


def run_switches(ports: PipelinePorts, *, attempt: int, changed: Sequence[str], directory: str,
                 working_directory: str, argv: tuple[str, ...], test_argv: tuple[str, ...], job: dict[str, object],
                 what: str) -> tuple[dict[str, object] | None, dict[str, object], str | None]:
    """One run of the in-process switching runner (``argv``: :func:`mutation_argv`) over ``job``, started in a
    fresh scratch copy of the final tree (``directory`` under the task's TMPDIR, never the worktree) that is removed
    afterwards with the job and its report: the report (None: none usable), the run's evidence, and why not."""
    temp = ports.commands.temp_directory(ports.facts.task_id)
    evidence: dict[str, object] = {}
    try:
        scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=directory, overlay=changed)
        if scratch.path is None:
            return None, evidence, f"the scratch copy could not be made: {scratch.refusal}"
        if not write_switch_job(temp, job):
            return None, evidence, f"{what}'s job could not be written to the task's TMPDIR"
        run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt,
                                               working_directory=working_directory, covered_by=test_argv)
        evidence.update(argv=[*argv[:2], "MUTATION_SCRIPT", *argv[3:]], request_id=run.request_id,
                        exit_code=run.exit_code, state=run.state)
        if not run.ran:
            return None, evidence, f"{what} did not run: {run.refusal}"
        report = _read_report(temp / PurePosixPath(REPORT_IN_TEMP))
        if report is None:
            tail = (run.stderr or run.stdout).strip().splitlines()[-8:]
            return None, evidence, (f"{what} ended {run.state} (exit {run.exit_code}) without its report: "
                                    + " | ".join(line[:200] for line in tail))
        return report, evidence, None
    finally:
        remove_base_scratch(temp, directory)
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _outcomes(report: dict[str, object]) -> dict[str, dict[str, object]]:
    found = report.get("mutants")
    results = [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []
    return {str(item.get("id")): item for item in results}


def _verdict_of(result: dict[str, object] | None, tests: tuple[str, ...]) -> str:
    if not tests:
        return "survived-uncovered"
    if result is None:
        return "not-run"
    if result.get("hung") is True:
        return "timed-out"
    failed = result.get("failed")
    if isinstance(failed, list) and failed:
        return "killed"
    if result.get("status") == 0 and _number(result.get("passed")) > 0:
        return "survived"
    return "not-run"


def _atom_evidence(item: _Planned, results: dict[str, dict[str, object]] | None,
                   index: int = 0) -> dict[str, object]:
    shown: dict[str, object] = {"atom": item.atom.qualified_name, "path": item.atom.path,
                                "changed_lines": list(item.atom.changed), "mutants": len(item.mutants),
                                "tests": sorted({test for tests in item.tests for test in tests})}
    if item.problem:
        shown["problem"] = item.problem
    if results is None:
        return shown
    verdicts = [_verdict_of(results.get(f"{index}.{number}"), tests)
                for number, tests in enumerate(item.tests)]
    killed = verdicts.count("killed")
    timed_out = verdicts.count("timed-out")
    survived = [number for number, verdict in enumerate(verdicts) if verdict.startswith("survived")]
    judged = killed + timed_out + len(survived)
    shown.update(judged=judged, killed=killed, timed_out=timed_out, survived=len(survived),
                 not_run=verdicts.count("not-run"),
                 score=None if judged == 0 else round(100.0 * (killed + timed_out) / judged, 1),
                 surviving=[{"operator": item.mutants[number].operator, "line": item.mutants[number].line,
                             "original": item.mutants[number].original,
                             "replacement": item.mutants[number].replacement,
                             "uncovered": not item.tests[number],
                             "diff": mutant_diff(item.atom.path, item.source, item.mutants[number])}
                            for number in survived[:_MAX_LISTED]])
    return shown


def _judged(planned: Sequence[_Planned], report: dict[str, object], minimum: int,
            evidence: dict[str, object]) -> StageResult:
    results = _outcomes(report)
    atoms = [_atom_evidence(item, results, index) for index, item in enumerate(planned)]
    judged = sum(int(_number(atom.get("judged"))) for atom in atoms)
    killed = sum(int(_number(atom.get("killed"))) for atom in atoms)
    timed_out = sum(int(_number(atom.get("timed_out"))) for atom in atoms)
    survived = sum(int(_number(atom.get("survived"))) for atom in atoms)
    seconds = _number(report.get("mutants_seconds"))
    tools = report.get("tools")
    evidence.update(atoms=atoms, mutants_judged=judged, killed=killed, timed_out=timed_out, survived=survived,
                    not_run=sum(int(_number(atom.get("not_run"))) for atom in atoms),
                    mutants_seconds=round(seconds, 3), baseline=report.get("baseline"),
                    timeout_seconds=report.get("timeout_seconds"),
                    measured_with=tools if isinstance(tools, dict) else {},
                    complete=report.get("done") is True)
    low = [atom for atom in atoms if atom.get("score") is not None and _number(atom.get("score")) < minimum]
    findings = [f"{atom['path']}:{mutant['line']} surviving mutant of {atom['atom']} ({mutant['operator']}: "
                f"{mutant['original']} → {mutant['replacement']})"
                + (" — no test executes this line" if mutant["uncovered"] else "")
                for atom in low for mutant in _dicts(atom.get("surviving"))]
    evidence["findings"] = findings
    seen = [f"{judged} mutant(s) judged on changed lines: {killed} killed, {timed_out} timed out, {survived} "
            f"survived; threshold {minimum}% per atom"]
    for atom in atoms:
        if atom.get("score") is not None:
            seen.append(f"{atom['atom']}: {atom['score']}%")
    if low:
        seen.append("below the threshold: " + ", ".join(str(atom["atom"]) for atom in low))
    outcome = StageOutcome.FAILED if low else StageOutcome.SATISFIED
    if judged == 0:
        return stage_result(_STAGE, StageOutcome.BLOCKED, "no mutant was judged: the mutants' tests did not run "
                            "(see the baseline in the run's report)", {})
    return stage_result(_STAGE, outcome, "; ".join(seen), evidence)


def _dicts(value: object) -> list[dict[str, object]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
