"""The coverage map: which of the repository's tests execute each changed line, measured with coverage.py.

The repository's test command runs once more, under coverage.py, in the task's worker, confined, with the
repository's environment and codeflux's tool overlay appended after it (:mod:`~codeflux.pipeline.tool_overlay`):
``<python> -c COVERAGE_SCRIPT <overlay|-> <file>… -- -p no:cacheprovider`` (:func:`coverage_argv`). The fixed
script builds coverage.py's configuration itself — ``config_file=False``, so no ``.coveragerc``, ``setup.cfg``,
``tox.ini`` or ``[tool.coverage]`` of the repository is read and none can redirect the data file — with branch
data on, the data file in ``$TMPDIR/codeflux-checks/coverage.data``, measurement limited to the worktree, and one
dynamic context per test: the test's pytest node id (switched around each test's setup, call and teardown).
pytest runs in that process; afterwards the script exports, for the diff's files only, ``{file: {line: [node
ids]}}``, the file's arcs, its branch arcs (coverage.py's analysis: every arc leaving a line with more than one
exit, taken or not) and, per branch arc taken, the tests that took it (each test's context queried by its exact name)
to ``$TMPDIR/codeflux-checks/coverage-map.json``, which the coordinator reads and removes. Nothing is written in the
worktree. The run follows the test command's decision (``covered_by``: the same interpreter in the same box) — no
second card.

With a selection (tests memory proposes: :mod:`codeflux.domain.covering_tests`) the argv names it after the files:
``<file>… --select <node id or test file>… -- -p no:cacheprovider``. pytest still collects as the whole run would
(same configuration, conftest files and options), and the script keeps only the selected items (last among the
collection hooks, reporting the others deselected): the report counts the collected and the selected tests and lists
any selected name the collection no longer has — a stale node id is reported, never a usage error.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.tool_overlay import OVERLAY_SITE_SCRIPT, ToolResolution

__all__ = [
    "COVERAGE_MAP_IN_TEMP",
    "COVERAGE_SCRIPT",
    "SELECT_MARK",
    "CoverageMap",
    "SelectedRun",
    "atom_body_lines",
    "coverage_argv",
    "measure_coverage",
    "read_box_json",
]

CHECKS_FOLDER: Final = "codeflux-checks"
SELECT_MARK: Final = "--select"
COVERAGE_MAP_IN_TEMP: Final = f"{CHECKS_FOLDER}/coverage-map.json"
_MAX_MAP_BYTES: Final = 32 * 1024 * 1024
_TAIL_LINES: Final = 8

COVERAGE_SCRIPT: Final = (
    "import json, os, site, sys\n"
    + OVERLAY_SITE_SCRIPT +
    "split = sys.argv.index('--')\n"
    "wanted = sys.argv[2:split]\n"
    "chosen = None\n"
    "if '" + SELECT_MARK + "' in wanted:\n"
    "    at = wanted.index('" + SELECT_MARK + "')\n"
    "    wanted, chosen = wanted[:at], set(wanted[at + 1:])\n"
    "arguments = sys.argv[split + 1:]\n"
    "selection = {}\n"
    "checks = os.path.join(os.environ['TMPDIR'], '" + CHECKS_FOLDER + "')\n"
    "os.makedirs(checks, exist_ok=True)\n"
    "root = os.getcwd()\n"
    "import coverage\n"
    "cov = coverage.Coverage(data_file=os.path.join(checks, 'coverage.data'), config_file=False, branch=True,\n"
    "                        source=[root])\n"
    "cov.start()\n"
    "import pytest\n"
    "outcomes = {}\n"
    "class CodefluxContexts:\n"
    "    @pytest.hookimpl(hookwrapper=True)\n"
    "    def pytest_runtest_protocol(self, item, nextitem):\n"
    "        cov.switch_context(item.nodeid)\n"
    "        yield\n"
    "        cov.switch_context('')\n"
    "    @pytest.hookimpl(trylast=True)\n"
    "    def pytest_collection_modifyitems(self, session, config, items):\n"
    "        if chosen is None:\n"
    "            return\n"
    "        kept = lambda item: item.nodeid in chosen or item.nodeid.split('::')[0] in chosen\n"
    "        keep = [item for item in items if kept(item)]\n"
    "        drop = [item for item in items if not kept(item)]\n"
    "        seen = {item.nodeid for item in items} | {item.nodeid.split('::')[0] for item in items}\n"
    "        selection.update(collected=len(items), selected=len(keep),\n"
    "                         missing=sorted(name for name in chosen if name not in seen))\n"
    "        if drop:\n"
    "            config.hook.pytest_deselected(items=drop)\n"
    "        items[:] = keep\n"
    "    def pytest_runtest_logreport(self, report):\n"
    "        if report.failed:\n"
    "            outcomes[report.nodeid] = 'failed'\n"
    "        elif report.when == 'call' or report.skipped:\n"
    "            outcomes.setdefault(report.nodeid, report.outcome)\n"
    "status = pytest.main(overlay_plugins_off + arguments, plugins=[CodefluxContexts()])\n"
    "cov.stop()\n"
    "cov.save()\n"
    "data = cov.get_data()\n"
    "files = {}\n"
    "measured_as = {}\n"
    "for measured in data.measured_files():\n"
    "    relative = os.path.relpath(measured, root).replace(os.sep, '/')\n"
    "    if relative not in wanted:\n"
    "        continue\n"
    "    lines = {str(line): sorted(c for c in contexts if c) for line, contexts in\n"
    "             data.contexts_by_lineno(measured).items()}\n"
    "    files[relative] = {'lines': lines, 'arcs': sorted(data.arcs(measured) or [])}\n"
    "    measured_as[relative] = measured\n"
    "    try:\n"
    "        analysis = cov._analyze(measured)\n"
    "        ends = list(analysis.executed_branch_arcs().items()) + list(analysis.missing_branch_arcs().items())\n"
    "        files[relative]['branches'] = sorted({(line, end) for line, targets in ends for end in targets})\n"
    "    except Exception as error:\n"
    "        files[relative]['branch_problem'] = type(error).__name__ + ': ' + str(error)[:200]\n"
    "for relative, found in files.items():\n"
    "    wanted_arcs = set(map(tuple, found.get('branches', ())))\n"
    "    by_arc = {}\n"
    "    for test in sorted({c for names in found['lines'].values() for c in names}) if wanted_arcs else ():\n"
    "        data.set_query_context(test)\n"
    "        for arc in data.arcs(measured_as[relative]) or ():\n"
    "            if tuple(arc) in wanted_arcs:\n"
    "                by_arc.setdefault('%d,%d' % tuple(arc), []).append(test)\n"
    "    data.set_query_contexts(None)\n"
    "    found['arc_tests'] = by_arc\n"
    "report = {'exit_status': int(status),\n"
    "          'tools': {'coverage': coverage.__version__, 'pytest': pytest.__version__},\n"
    "          'locations': {'coverage': os.path.dirname(coverage.__file__),\n"
    "                        'pytest': os.path.dirname(pytest.__file__)},\n"
    "          'files': files, 'outcomes': outcomes, 'selection': selection}\n"
    "with open(os.path.join(checks, 'coverage-map.json'), 'w') as handle:\n"
    "    json.dump(report, handle)\n"
    "sys.exit(int(status))\n"
)


def coverage_argv(interpreter: str, overlay_site: Path | None, files: Sequence[str],
                  selection: Sequence[str] = ()) -> tuple[str, ...]:
    """The exact coverage run (see the module docstring); with ``selection`` (node ids and test files) only those
    tests run."""
    chosen = (SELECT_MARK, *selection) if selection else ()
    return (interpreter, "-c", COVERAGE_SCRIPT, "-" if overlay_site is None else str(overlay_site), *files, *chosen,
            "--", "-p", "no:cacheprovider")


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectedRun:
    """A selected coverage run: ``selected`` of the ``collected`` tests ran; ``missing`` are selected names the
    collection did not have (a test renamed or removed since a map was learned)."""

    collected: int
    selected: int
    missing: tuple[str, ...] = ()


def _selection_counts(found: object) -> SelectedRun | None:
    if not isinstance(found, dict):
        return None
    collected, selected = found.get("collected"), found.get("selected")
    if not isinstance(collected, int) or not isinstance(selected, int):
        return None
    missing = found.get("missing")
    return SelectedRun(collected=collected, selected=selected,
                       missing=tuple(str(name) for name in missing)[:50] if isinstance(missing, list) else ())


@dataclass(frozen=True, slots=True, kw_only=True)
class CoverageMap:
    """Per measured file of the diff: each executed line's tests (node ids; a line run outside any test — an
    import at collection — has none) and its arcs. ``measured`` is False when it could not be measured
    (``detail`` says why)."""

    measured: bool
    detail: str
    lines: Mapping[str, Mapping[int, tuple[str, ...]]] = field(default_factory=dict)
    arcs: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    exit_status: int | None = None
    outcomes: Mapping[str, str] = field(default_factory=dict)
    """Each test's outcome in that run (``passed``, ``failed``, ``skipped``), by node id."""
    evidence: Mapping[str, object] = field(default_factory=dict)
    branches: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """Per file, every branch arc coverage.py's analysis finds (taken or not); a negative end is an exit from the
    code object."""
    arc_tests: Mapping[str, Mapping[tuple[int, int], tuple[str, ...]]] = field(default_factory=dict)
    """Per file, each branch arc some test took: the tests (node ids, sorted) whose context recorded it."""
    branch_problems: Mapping[str, str] = field(default_factory=dict)
    """Per file, why its branch arcs could not be read (the file then has no ``branches`` entry)."""

    selection: SelectedRun | None = None
    """Set when only selected tests ran: how many the test command collected and how many were kept."""

    def tests_of_lines(self, path: str, lines: Sequence[int]) -> tuple[str, ...]:
        """Every test that executed any of ``lines`` of ``path``, sorted."""
        measured = self.lines.get(path, {})
        return tuple(sorted({test for line in lines for test in measured.get(line, ())}))

    def tests_of_line(self, path: str, line: int) -> tuple[str, ...]:
        return tuple(self.lines.get(path, {}).get(line, ()))


def atom_body_lines(source: str, atom: Atom) -> tuple[int, ...]:
    """The lines of ``atom``'s body in ``source`` (its first statement after the docstring to its end): what only
    a call executes — its ``def`` line and decorators run at import, so they say nothing about a test."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        if start != atom.first_line:
            continue
        body = node.body
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        end = node.end_lineno or body[-1].lineno
        return tuple(range(body[0].lineno, end + 1))
    return ()


def read_box_json(path: Path, *, max_bytes: int) -> dict[str, object] | None:
    """A JSON object a confined check wrote into the task's TMPDIR — untrusted: never read through a link it planted
    (the folder or the file), at most ``max_bytes``; None for anything else."""
    if path.parent.is_symlink() or path.is_symlink() or not path.is_file() or path.stat().st_size > max_bytes:
        return None
    try:
        document = json.loads(path.read_bytes())
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _read_map(path: Path) -> Mapping[str, object] | None:
    return read_box_json(path, max_bytes=_MAX_MAP_BYTES)


def _pairs(found: object) -> tuple[tuple[int, int], ...]:
    return tuple((int(pair[0]), int(pair[1])) for pair in found if isinstance(pair, list) and len(pair) == 2
                 and all(isinstance(value, int) and not isinstance(value, bool) for value in pair)
                 ) if isinstance(found, list) else ()


def _arc_key(text: str) -> tuple[int, int] | None:
    first, _, second = text.partition(",")
    try:
        return int(first), int(second)
    except ValueError:
        return None


def _branch_data(files: object) -> tuple[dict[str, tuple[tuple[int, int], ...]],
                                         dict[str, dict[tuple[int, int], tuple[str, ...]]], dict[str, str]]:
    """The branch arcs, the tests of each taken one and the files whose branches were not read."""
    branches: dict[str, tuple[tuple[int, int], ...]] = {}
    arc_tests: dict[str, dict[tuple[int, int], tuple[str, ...]]] = {}
    problems: dict[str, str] = {}
    for path, measured in files.items() if isinstance(files, dict) else ():
        if not isinstance(measured, dict):
            continue
        if isinstance(measured.get("branch_problem"), str):
            problems[str(path)] = str(measured["branch_problem"])[:300]
        if "branches" in measured:
            branches[str(path)] = _pairs(measured.get("branches"))
        taken = measured.get("arc_tests")
        by_arc: dict[tuple[int, int], tuple[str, ...]] = {}
        for key, tests in taken.items() if isinstance(taken, dict) else ():
            arc = _arc_key(str(key))
            if arc is not None and isinstance(tests, list):
                by_arc[arc] = tuple(sorted({str(test) for test in tests}))
        arc_tests[str(path)] = by_arc
    return branches, arc_tests, problems


def _decoded(files: object) -> tuple[dict[str, dict[int, tuple[str, ...]]], dict[str, tuple[tuple[int, int], ...]]]:
    lines: dict[str, dict[int, tuple[str, ...]]] = {}
    arcs: dict[str, tuple[tuple[int, int], ...]] = {}
    if not isinstance(files, dict):
        return lines, arcs
    for path, measured in files.items():
        if not isinstance(measured, dict):
            continue
        by_line = measured.get("lines")
        if isinstance(by_line, dict):
            lines[str(path)] = {int(line): tuple(str(test) for test in tests) for line, tests in by_line.items()
                                if str(line).isdigit() and isinstance(tests, list)}
        found = measured.get("arcs")
        if isinstance(found, list):
            arcs[str(path)] = tuple((int(pair[0]), int(pair[1])) for pair in found
                                    if isinstance(pair, list) and len(pair) == 2
                                    and all(isinstance(value, int) for value in pair))
    return lines, arcs


def measure_coverage(ports: PipelinePorts, *, attempt: int, tools: ToolResolution, test_argv: tuple[str, ...],
                     files: Sequence[str], diff_identity: str | None, selection: Sequence[str] = ()) -> CoverageMap:
    """Run the tests under coverage.py (see the module docstring) and read the map of ``files``; with
    ``selection`` only the tests it names run (:attr:`CoverageMap.selection` counts them)."""
    task_id = ports.facts.task_id
    temp = ports.commands.temp_directory(task_id)
    report = temp / PurePosixPath(COVERAGE_MAP_IN_TEMP)
    shutil.rmtree(report.parent, ignore_errors=True)
    argv = coverage_argv(tools.interpreter, tools.overlay_site, files, selection)
    evidence: dict[str, object] = {"argv": list(argv), "tools": [tool.to_evidence() for tool in tools.tools],
                                   "diff_identity": diff_identity, "files": list(files)}
    try:
        run = ports.commands.run_check_command(task_id, argv, attempt=attempt, covered_by=test_argv)
        evidence.update(request_id=run.request_id, exit_code=run.exit_code, state=run.state)
        if not run.ran:
            return CoverageMap(measured=False, detail=f"the coverage run did not run: {run.refusal}", evidence=evidence)
        document = _read_map(report)
        if document is None:
            tail = (run.stderr or run.stdout).strip().splitlines()[-_TAIL_LINES:]
            evidence["output_tail"] = [line[:300] for line in tail]
            return CoverageMap(measured=False, detail=f"the coverage run ended {run.state} (exit {run.exit_code}) "
                               "without its map", evidence=evidence)
        reported = document.get("tools")
        if isinstance(reported, dict):
            evidence["measured_with"] = {str(name): str(version) for name, version in reported.items()}
        lines, arcs = _decoded(document.get("files"))
        branches, arc_tests, branch_problems = _branch_data(document.get("files"))
        status = document.get("exit_status")
        found = document.get("outcomes")
        outcomes = {str(test): str(outcome) for test, outcome in found.items()} if isinstance(found, dict) else {}
        evidence["tests_run"] = len(outcomes)
        counted = _selection_counts(document.get("selection")) if selection else None
        return CoverageMap(measured=True, detail=f"measured {len(lines)} of {len(files)} file(s) of the diff",
                           lines=lines, arcs=arcs, exit_status=status if isinstance(status, int) else None,
                           outcomes=outcomes, evidence=evidence, branches=branches, arc_tests=arc_tests,
                           branch_problems=branch_problems, selection=counted)
    finally:
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one
