"""Stage 11 atom-verification (sends back): the tests that execute the atoms pass, run N times in a random order,
each order from a recorded seed.

1. The tests: every test the coverage map (:func:`~codeflux.pipeline.atom_coverage.atom_coverage`, shared with
   stage 8: measured once per attempt) saw executing a line of an atom's body and passing there (in file order). A
   test that fails in any order is stage 28's to report, with its base-revision comparison (a test failing on the
   base too is not this change's); this stage asks what only repetition in other orders shows.
2. The runs: :data:`~codeflux.pipeline.thresholds.ATOM_VERIFICATION_RUNS` times (default 3, a setting), each
   with a fresh seed (recorded), all in one command: ``<python> -c SEEDED_ORDER_SCRIPT <overlay|-> <seed>,<seed>,…
   -- -p no:cacheprovider -p no:randomly <node ids>`` (:func:`seeded_argv`) in the task's worker, confined,
   following the test command's decision (``covered_by``: no second card). The script imports pytest once and then
   **forks one child per seed, one after the other** (each order runs alone, never two at once: a suite's shared
   files and ports see what they see in a plain run); nothing of the repository or its tests is imported before the
   fork, so each order starts as clean as a fresh interpreter that imported pytest — state cannot pass from one
   order to the next — while the interpreter's and pytest's start-up are paid once, not per order. A single seed
   runs in the process itself, without a fork: that argv (:func:`seeded_argv` with one seed) is the printed command
   that reproduces an order. The fixed script is codeflux's own tiny pytest plugin, registered
   with ``pytest.main(args, plugins=[…])``: it sorts the collected tests by node id and shuffles them with
   ``random.Random(seed)``, reseeds ``random`` with the seed before each test, and — the moment Hypothesis is
   imported in the process (an import hook installed before pytest starts and kept ahead of pytest's own) — sets
   Hypothesis's forced seed to the seed (what ``--hypothesis-seed`` does, without importing Hypothesis in runs
   whose tests never use it) and points its home (its example database) at ``$TMPDIR/codeflux-checks/hypothesis``,
   never the worktree. Hypothesis's pytest plugin is not loaded from the overlay when the repository's own
   environment lacks Hypothesis (``OVERLAY_SITE_SCRIPT`` in :mod:`~codeflux.pipeline.tool_overlay`).
   pytest-randomly, if installed, is switched off so the order is the seed's alone. Each run writes its order and
   outcomes to ``$TMPDIR/codeflux-checks/verification-<seed>.json``, which the coordinator reads and removes.

Gate: every run ran and every test passed in every run. A run that fails names its seed, its failing tests and
the exact argv that reproduces it (the same seed gives the same order); a test that fails under one seed and
passes under another is named "flaky under seed X". No atom, or no test executing any atom → ``skipped``;
no test command, coverage missing, or a run refused → ``blocked``. Not claimed: that another order or seed would
pass too (N orders out of n! are tried), or that the tests assert anything.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_coverage import AtomCoverage, atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import ATOM_VERIFICATION_RUNS, threshold_of
from codeflux.pipeline.tool_overlay import OVERLAY_SITE_SCRIPT

__all__ = ["SEEDED_ORDER_SCRIPT", "evaluate_atom_verification", "report_name", "seeded_argv"]

_STAGE: Final = StageName.ATOM_VERIFICATION
_MAX_REPORT_BYTES: Final = 16 * 1024 * 1024
MAX_TESTS: Final = 500
_MESSAGE_CHARS: Final = 800

SEEDED_ORDER_SCRIPT: Final = (
    "import importlib.metadata, importlib.util, json, os, random, site, sys\n"
    + OVERLAY_SITE_SCRIPT +
    "seeds = [int(part) for part in sys.argv[2].split(',')]\n"
    "split = sys.argv.index('--')\n"
    "arguments = sys.argv[split + 1:]\n"
    "checks = os.path.join(os.environ['TMPDIR'], '" + CHECKS_FOLDER + "')\n"
    "os.makedirs(checks, exist_ok=True)\n"
    "import pytest\n"
    "seed, forked = seeds[0], False\n"
    "if len(seeds) > 1:\n"
    "    importlib.metadata.entry_points()\n"
    "    statuses = []\n"
    "    for each in seeds:\n"
    "        sys.stdout.flush()\n"
    "        sys.stderr.flush()\n"
    "        child = os.fork()\n"
    "        if child == 0:\n"
    "            seed, forked = each, True\n"
    "            break\n"
    "        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])\n"
    "        statuses.append(code if code >= 0 else 128 - code)\n"
    "    else:\n"
    "        sys.exit(next((code for code in statuses if code), 0))\n"
    "seeded = []\n"
    "def seed_hypothesis(module):\n"
    "    from hypothesis import core\n"
    "    from hypothesis.configuration import set_hypothesis_home_dir\n"
    "    set_hypothesis_home_dir(os.path.join(checks, 'hypothesis'))\n"
    "    core.global_force_seed = seed\n"
    "    seeded.append(True)\n"
    "class SeedingLoader:\n"
    "    def __init__(self, inner):\n"
    "        self.inner = inner\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(self.inner, name)\n"
    "    def create_module(self, spec):\n"
    "        return self.inner.create_module(spec)\n"
    "    def exec_module(self, module):\n"
    "        self.inner.exec_module(module)\n"
    "        if finder in sys.meta_path:\n"
    "            sys.meta_path.remove(finder)\n"
    "        seed_hypothesis(module)\n"
    "class SeedHypothesisOnImport:\n"
    "    busy = False\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name != 'hypothesis' or self.busy:\n"
    "            return None\n"
    "        self.busy = True\n"
    "        try:\n"
    "            spec = importlib.util.find_spec(name)\n"
    "        finally:\n"
    "            self.busy = False\n"
    "        if spec is not None and spec.loader is not None:\n"
    "            spec.loader = SeedingLoader(spec.loader)\n"
    "        return spec\n"
    "finder = SeedHypothesisOnImport()\n"
    "hypothesis = importlib.util.find_spec('hypothesis') is not None\n"
    "if 'hypothesis' in sys.modules:\n"
    "    seed_hypothesis(sys.modules['hypothesis'])\n"
    "elif hypothesis:\n"
    "    sys.meta_path.insert(0, finder)\n"
    "outcomes, messages, order = {}, {}, []\n"
    "class CodefluxSeededOrder:\n"
    "    @pytest.hookimpl(trylast=True)\n"
    "    def pytest_configure(self, config):\n"
    "        if finder in sys.meta_path:\n"
    "            sys.meta_path.remove(finder)\n"
    "            sys.meta_path.insert(0, finder)\n"
    "    @pytest.hookimpl(trylast=True)\n"
    "    def pytest_collection_modifyitems(self, session, config, items):\n"
    "        items.sort(key=lambda item: item.nodeid)\n"
    "        random.Random(seed).shuffle(items)\n"
    "    @pytest.hookimpl(tryfirst=True)\n"
    "    def pytest_runtest_setup(self, item):\n"
    "        random.seed(seed)\n"
    "        order.append(item.nodeid)\n"
    "    def pytest_runtest_logreport(self, report):\n"
    "        if report.failed:\n"
    "            outcomes[report.nodeid] = 'failed'\n"
    "            messages.setdefault(report.nodeid, report.longreprtext[-" + str(_MESSAGE_CHARS) + ":])\n"
    "        elif report.when == 'call' or report.skipped:\n"
    "            outcomes.setdefault(report.nodeid, report.outcome)\n"
    "status = pytest.main(overlay_plugins_off + arguments, plugins=[CodefluxSeededOrder()])\n"
    "report = {'seed': seed, 'exit_status': int(status), 'order': order, 'outcomes': outcomes,\n"
    "          'messages': messages, 'hypothesis_available': hypothesis, 'hypothesis_seeded': bool(seeded),\n"
    "          'pytest': pytest.__version__}\n"
    "with open(os.path.join(checks, 'verification-%d.json' % seed), 'w') as handle:\n"
    "    json.dump(report, handle)\n"
    "if forked:\n"
    "    sys.stdout.flush()\n"
    "    sys.stderr.flush()\n"
    "    os._exit(int(status))\n"
    "sys.exit(int(status))\n"
)
"""The seeded-order runs (see the module docstring); argv: overlay or ``-``, the seeds (comma-separated), ``--``,
pytest's arguments."""


def seeded_argv(interpreter: str, overlay_site: Path | None, seeds: int | Sequence[int], tests: Sequence[str]
                ) -> tuple[str, ...]:
    """The exact run of ``tests`` in the order of each seed (see the module docstring); one seed's argv is the
    command that reproduces that order."""
    chosen = [seeds] if isinstance(seeds, int) else list(seeds)
    return (interpreter, "-c", SEEDED_ORDER_SCRIPT, "-" if overlay_site is None else str(overlay_site),
            ",".join(str(seed) for seed in chosen), "--", "-p", "no:cacheprovider", "-p", "no:randomly", *tests)


def report_name(seed: int) -> str:
    return f"{CHECKS_FOLDER}/verification-{seed}.json"


def _read_report(path: Path) -> dict[str, object] | None:
    return read_box_json(path, max_bytes=_MAX_REPORT_BYTES)


def _shown(argv: Sequence[str]) -> str:
    """The argv as a shell command, the fixed script named rather than inlined (the evidence keeps it whole)."""
    return shlex.join(argv).replace(shlex.quote(SEEDED_ORDER_SCRIPT), "\"$CODEFLUX_SEEDED_ORDER_SCRIPT\"")


def evaluate_atom_verification(facts: AtomFacts, *, seeds: Sequence[int] | None = None) -> StageResult:
    """Stage 11 (see the module docstring); ``seeds`` replaces the fresh random seeds (tests replay an order)."""
    atoms = facts.diff.atoms
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom whose tests to repeat", {"atoms": []})
    measured = atom_coverage(facts)
    usable = measured.usable(to="find and repeat the atoms' tests")
    if isinstance(usable, str):
        return stage_result(_STAGE, StageOutcome.BLOCKED, usable, {})
    command, tools, coverage = usable
    ports = facts.ports
    worktree = ports.facts.worktree.path
    by_atom = {atom.qualified_name: tests_of_atom(worktree, atom, coverage) for atom in atoms}
    tests = sorted({test for found in by_atom.values() for test in found})
    if not tests:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "no passing test executes the body of any atom (stage 8 "
                            "names the atoms no test executes; stage 28 the failing tests): there is no atom test to "
                            "repeat", {"atoms": [
                                {"qualified_name": name, "tests": []} for name in by_atom]})
    runs_setting = threshold_of(ports.settings, ATOM_VERIFICATION_RUNS)
    if runs_setting.problem is not None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, runs_setting.problem, {})
    chosen = list(seeds) if seeds is not None else [secrets.randbelow(2**32) for _ in range(runs_setting.value)]
    kept = tests[:MAX_TESTS]
    temp = ports.commands.temp_directory(ports.facts.task_id)
    runs: list[dict[str, object]] = []
    try:
        for seed in chosen:
            report = temp / PurePosixPath(report_name(seed))
            if report.is_file() and not report.is_symlink() and not report.parent.is_symlink():
                report.unlink()
        ran = seeded_argv(tools.interpreter, tools.overlay_site, chosen, kept)
        run = ports.commands.run_check_command(ports.facts.task_id, ran, attempt=facts.attempt,
                                               covered_by=command.argv)
        if not run.ran:
            return stage_result(_STAGE, StageOutcome.BLOCKED, f"the atoms' tests were not run under seeds "
                                f"{', '.join(map(str, chosen))}: {run.refusal}", {})
        for seed in chosen:
            argv = seeded_argv(tools.interpreter, tools.overlay_site, seed, kept)
            entry: dict[str, object] = {"seed": seed, "argv": list(argv), "command": _shown(argv),
                                        "request_id": run.request_id, "exit_code": run.exit_code, "state": run.state}
            document = _read_report(temp / PurePosixPath(report_name(seed)))
            if document is None:
                tail = (run.stderr or run.stdout).strip().splitlines()[-8:]
                entry.update(outcome="failed", failing=[], order=[], output_tail=[line[:300] for line in tail],
                             problem=f"pytest ended {run.state} (exit {run.exit_code}) without its report")
            else:
                entry.update(_from_report(document, kept))
            runs.append(entry)
    finally:
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one
    return _judged(facts, by_atom=by_atom, kept=kept, tests=tests, runs=runs, setting=runs_setting.to_evidence(),
                   measured=measured, replayed=seeds is not None)


def _from_report(document: dict[str, object], kept: Sequence[str]) -> dict[str, object]:
    """One run's facts from the report its script wrote: order, outcomes, failing tests and their messages."""
    outcomes = document.get("outcomes")
    results = {str(k): str(v) for k, v in outcomes.items()} if isinstance(outcomes, dict) else {}
    messages = document.get("messages")
    order = document.get("order")
    failing = sorted(test for test, outcome in results.items() if outcome == "failed")
    status = document.get("exit_status")
    entry: dict[str, object] = {
        "outcome": "failed" if failing or status not in (0, 5) else "passed", "failing": failing,
        "order": [str(test) for test in order] if isinstance(order, list) else [], "outcomes": results,
        "not_run": sorted(test for test in kept if test not in results),
        "hypothesis_seeded": bool(document.get("hypothesis_seeded")),
        "hypothesis_available": bool(document.get("hypothesis_available")),
        "messages": {str(k): str(v)[-_MESSAGE_CHARS:] for k, v in messages.items() if str(k) in failing}
        if isinstance(messages, dict) else {}}
    if not failing and entry["outcome"] == "failed":
        entry["problem"] = f"pytest exited {status} with no failing test reported"
    return entry


def _atom_outcome(run: dict[str, object], atom_tests: Sequence[str]) -> str:
    failing = run.get("failing")
    if isinstance(failing, list) and any(test in failing for test in atom_tests):
        return "failed"
    return "passed" if run["outcome"] == "passed" else "not judged (the run failed)" if not failing else "passed"


def _judged(facts: AtomFacts, *, by_atom: dict[str, tuple[str, ...]], kept: list[str], tests: list[str],
            runs: list[dict[str, object]], setting: dict[str, object], measured: AtomCoverage, replayed: bool
            ) -> StageResult:
    failed_runs = [run for run in runs if run["outcome"] == "failed"]
    failing_in: dict[str, list[int]] = {}
    passing_in: dict[str, list[int]] = {}
    for run in runs:
        outcomes = run.get("outcomes")
        if not isinstance(outcomes, dict):
            continue
        for test, outcome in outcomes.items():
            (failing_in if outcome == "failed" else passing_in).setdefault(str(test), []).append(int(str(run["seed"])))
    flaky = sorted(test for test in failing_in if test in passing_in)
    findings: list[str] = []
    for run in failed_runs:
        failing = run.get("failing")
        names = ", ".join(str(test) for test in failing) if isinstance(failing, list) and failing else \
            str(run.get("problem", "a run failed"))
        findings.append(f"seed {run['seed']}: {names} failed; reproduce with: {run['command']}")
    for test in flaky:
        findings.append(f"{test} is flaky under seed {', '.join(map(str, failing_in[test]))} (passes under seed "
                        f"{', '.join(map(str, passing_in[test]))})")
    atoms = []
    for name, atom_tests in by_atom.items():
        seeds = [f"{run['seed']} {_atom_outcome(run, atom_tests)}" for run in runs]
        atoms.append({"qualified_name": name, "tests": list(atom_tests), "seeds": seeds,
                      "findings": [finding for finding in findings if any(t in finding for t in atom_tests)]})
    tools = measured.tools
    evidence: dict[str, object] = {
        "runs_setting": setting, "seeds": [run["seed"] for run in runs], "seeds_given": replayed,
        "tests": kept, "tests_left_out": len(tests) - len(kept), "runs": runs, "atoms": atoms,
        "flaky": flaky, "findings": findings, "diff_identity": facts.diff_identity,
        "tools": tools.to_evidence() if tools is not None else None,
    }
    seen = [f"{len(kept)} atom test(s) run {len(runs)} time(s) in random order, seeds "
            f"{', '.join(str(run['seed']) for run in runs)}"]
    if not failed_runs:
        seen.append("every run passed")
        return stage_result(_STAGE, StageOutcome.SATISFIED, "; ".join(seen), evidence)
    seen.extend(findings[:6])
    return stage_result(_STAGE, StageOutcome.FAILED, "; ".join(seen), evidence)
