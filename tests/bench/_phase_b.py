"""The phase-B half of ``bench pipeline``: the repositories, the one-function changes, and a timed phase B run.

Not a benchmark of its own (the leading underscore keeps ``cmd/codeflux-dev bench`` from listing it);
``tests/bench/pipeline.py`` runs it and ``tests/unit/bench/test_phase_b_harness.py`` checks its pieces.

**The cases.**

* ``demo`` — the sample repository ``codeflux demo init`` writes (:func:`~codeflux.coordinator.demo.sample_files`),
  the scripted demo's plan (``script.json``'s ``plan``) and its change (the script's ``edit_file`` calls:
  ``add()`` returns ``a + b``).
* ``toolz`` — toolz 1.2.0 (BSD-3-Clause, ``LICENSE.txt`` in the archive), vendored unmodified as its sdist
  ``tests/data/toolz-1.2.0.tar.gz`` (its own pytest suite is inside: ``toolz/tests``, 192 tests, pytest only, no
  network); the change rewrites the body of one function, ``toolz.itertoolz.frequencies`` (a dict instead of a
  ``defaultdict``, same results).

**A phase B run** (:func:`run_phase_b`) is what ``codeflux run`` does for one attempt, in process: a task with the
case's plan approved and started, its worktree, the change written into it, the test command and codeflux's
overlay install allowed once (as a person would), stage 26's assembly evaluated (not timed: it is not phase B),
then :func:`codeflux.pipeline.phase_b.record_atom_stages` — the real function, recording into the real ledger —
with each of :data:`~codeflux.pipeline.phase_b.ATOM_STAGES`' evaluations wrapped by a timer, and the pipeline's
command port wrapped by one that times each confined command and names it. Every command runs in the task's real
worker, confined, with coverage.py from the overlay, installed from ``.artifacts/wheelhouse``.

The repository's environment is ``.artifacts/bench-repo-env`` (a venv with pytest only, made by
``cmd/codeflux-dev bench pipeline``), linked as the repository's ``.venv`` (ignored by git, as a user's would be);
the raw baseline — the package's whole suite — runs with that same interpreter.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pkgutil
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Final

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.demo import demo_file_text, sample_files
from codeflux.coordinator.runs.pipeline_memory import CheckoutMemory
from codeflux.coordinator.runs.pipeline_ports import DriverCheckCommands, NoAcceptanceYet, submit_check_command
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.tasks.plan_schema import parse_plan_object
from codeflux.coordinator.tasks.service import Actor, PlanAuthor, TaskService
from codeflux.domain.ids import TaskId
from codeflux.domain.money import USD, Money
from codeflux.domain.pipeline import StageName, stage_named
from codeflux.domain.plans import Plan
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import open_repository
from codeflux.gitwork.worktrees import create_task_worktree
from codeflux.pipeline.assembly import evaluate_assembly
from codeflux.pipeline.coverage_map import coverage_argv
from codeflux.pipeline.growth_script import GROWTH_SCRIPT
from codeflux.pipeline.phase_b import ATOM_STAGES, AtomStage, record_atom_stages
from codeflux.pipeline.ports import CheckCommandRun, PipelinePorts, TaskFacts, ToolSource
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import StoredSettings
from codeflux.pipeline.tool_overlay import INSTALL_WORKING_DIRECTORY, install_argv
from codeflux.store.authority import execution_of_request
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.worker.environment import build_worker_environment

REPO: Final = Path(__file__).resolve().parents[2]
WHEELHOUSE: Final = (REPO / ".artifacts" / "wheelhouse").resolve()
REPO_ENV: Final = REPO / ".artifacts" / "bench-repo-env"
"""The benchmarked repositories' own environment: a venv with pytest only (coverage.py comes from the overlay)."""

SDIST: Final = REPO / "tests" / "data" / "toolz-1.2.0.tar.gz"
SDIST_TOP: Final = "toolz-1.2.0"
SDIST_LICENCE: Final = "LICENSE.txt"
TOOLZ_FILE: Final = "toolz/itertoolz.py"
TOOLZ_OLD: Final = (
    "    d = collections.defaultdict(int)\n"
    "    for item in seq:\n"
    "        d[item] += 1\n"
    "    return dict(d)\n"
)
TOOLZ_NEW: Final = (
    "    counts = {}\n"
    "    for item in seq:\n"
    "        counts[item] = counts.get(item, 0) + 1\n"
    "    return counts\n"
)
TOOLZ_PLAN: Final[dict[str, object]] = {
    "task_class": "refactor",
    "scope": {"summary": "frequencies() without a defaultdict", "paths": ["toolz"], "excluded": []},
    "steps": [{"title": "Rewrite frequencies()", "detail": "Count into a plain dict with dict.get",
               "expected_files": [TOOLZ_FILE],
               "atoms": [{"name": "frequencies", "signature": "def frequencies(seq)", "effects": []}]}],
    "checks": [{"name": "unit tests", "argv": ["python", "-m", "pytest", "-q"]}],
    "permissions": [], "assumptions": ["the repository's .venv has pytest"],
    "examples": [{"test": "toolz/tests/test_itertoolz.py::test_frequencies"}],
    "trace": [{"examples": [1], "sentences": [1]}],
}
SUITE_ARGV_TAIL: Final = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
"""The raw baseline: the package's whole suite, as its own configuration selects it."""

FUZZ: Final = StageName.ATOM_FUZZ
_GIT: Final = ("git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c", "init.defaultBranch=main",
               "-c", "user.name=bench", "-c", "user.email=bench@example.invalid")
_KEYS: Final = iter(range(1_000_000))


class HarnessError(RuntimeError):
    """A piece of the benchmark's set-up did not hold (the benchmark stops: no figure)."""


# ─── the repositories and their changes ───────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """Replace ``old`` (present exactly once) with ``new`` in ``path``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One benchmarked change: how its repository's files are written, its plan, its edits."""

    name: str
    about: str
    write_files: Callable[[Path], None]
    """Writes the repository's files at a path that does not exist yet."""
    plan: Plan
    edits: tuple[Edit, ...]
    requirement: str


def unpack_sdist(target: Path, sdist: Path = SDIST) -> Path:
    """Unpack ``sdist`` under ``target`` (tar's ``data`` filter: no links out, no devices); its top folder."""
    with tarfile.open(sdist, "r:gz") as archive:
        archive.extractall(target, filter="data")
    top = target / SDIST_TOP
    if not (top / SDIST_LICENCE).is_file():
        raise HarnessError(f"{sdist.name} has no {SDIST_TOP}/{SDIST_LICENCE}")
    return top


def _write_toolz(root: Path) -> None:
    """The sdist's tree at ``root`` (which must not exist yet), plus a ``.gitignore`` for the linked ``.venv``."""
    unpacked = root.parent / f"{root.name}.unpacked"
    unpack_sdist(unpacked).rename(root)
    unpacked.rmdir()
    (root / ".gitignore").write_text(".venv\n")


def _write_demo(root: Path) -> None:
    """The sample's files at ``root`` (its ``.gitignore`` already ignores ``.venv/``)."""
    for relative, content in sample_files().items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def _demo_script() -> dict[str, object]:
    script = json.loads(demo_file_text("script.json"))
    if not isinstance(script, dict):
        raise HarnessError("the shipped demo script is malformed")
    return script


def demo_edits() -> tuple[Edit, ...]:
    """The scripted demo's change: its ``edit_file`` calls, in order."""
    turns = _demo_script().get("run")
    calls = [call for turn in turns if isinstance(turn, dict) for call in turn.get("tool_calls", ())] \
        if isinstance(turns, list) else []
    edits = tuple(Edit(path=call["arguments"]["path"], old=call["arguments"]["old_text"],
                       new=call["arguments"]["new_text"]) for call in calls if call.get("name") == "edit_file")
    if not edits:
        raise HarnessError("the shipped demo script makes no edit_file call")
    return edits


def demo_case() -> Case:
    plans = _demo_script().get("plan")
    if not isinstance(plans, list) or not plans or not isinstance(plans[0], dict):
        raise HarnessError("the shipped demo script has no plan")
    return Case(name="demo", about="codeflux demo init's sample + the scripted demo's edit (calc.ops.add)",
                write_files=_write_demo, plan=parse_plan_object(plans[0]["json"]), edits=demo_edits(),
                requirement=sample_files()["TASK.md"])


def toolz_case() -> Case:
    return Case(name="toolz", about="toolz 1.2.0 sdist + one function rewritten (toolz.itertoolz.frequencies)",
                write_files=_write_toolz, plan=parse_plan_object(TOOLZ_PLAN),
                edits=(Edit(path=TOOLZ_FILE, old=TOOLZ_OLD, new=TOOLZ_NEW),),
                requirement="Count in frequencies() with a plain dict instead of a defaultdict.\n")


def apply_edits(root: Path, edits: tuple[Edit, ...]) -> None:
    """Write ``edits`` into the tree at ``root``; :class:`HarnessError` unless each old text is there exactly once."""
    for edit in edits:
        path = root / edit.path
        text = path.read_text(encoding="utf-8")
        if text.count(edit.old) != 1:
            raise HarnessError(f"{edit.path}: the text to replace occurs {text.count(edit.old)} times, not once")
        path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")


def git(root: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LC_ALL": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run([*_GIT, "-C", str(root), *args], env=env, capture_output=True, text=True,
                          check=True).stdout


def make_repository(case: Case, root: Path, *, python_env: Path = REPO_ENV) -> Path:
    """The case's files committed on ``main`` at ``root``, with ``.venv`` linking to ``python_env`` (untracked)."""
    case.write_files(root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{case.name}: base")
    (root / ".venv").symlink_to(python_env.resolve(), target_is_directory=True)
    return root


def suite_copy(case: Case, root: Path) -> Path:
    """A plain copy of the changed tree (files + edits, no git) at ``root`` (not there yet): where the suite runs."""
    case.write_files(root)
    apply_edits(root, case.edits)
    return root


def _unconfined(argv: list[str], root: Path, temp: Path) -> tuple[float, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(temp), "TMPDIR": str(temp),
           "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8"}
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode != 0:
        raise HarnessError(f"{argv[1:3]} failed in {root.name} (exit {done.returncode}): {last}")
    return seconds, last


def suite_seconds(python: Path, root: Path, temp: Path) -> tuple[float, str]:
    """The package's whole suite, unconfined, with ``python``: wall seconds and pytest's last line."""
    return _unconfined([str(python), *SUITE_ARGV_TAIL], root, temp)


def coverage_twin_seconds(python: Path, overlay_site: Path, root: Path, temp: Path, files: list[str]) -> float:
    """Stage 8's coverage run (the same fixed ``COVERAGE_SCRIPT`` and argv, the overlay's coverage.py) unconfined
    and outside the worker: what the measurement costs without the box."""
    (temp / "codeflux-checks").mkdir(parents=True, exist_ok=True)
    return _unconfined(list(coverage_argv(str(python), overlay_site, files)), root, temp)[0]


def overlay_site(bench: Bench) -> Path:
    """The overlay the bench's first phase B installed (one repository, one interpreter: one ``site``)."""
    sites = sorted(path for path in bench.driver.tools_directory.glob("*/*/site") if path.is_dir())
    if len(sites) != 1:
        raise HarnessError(f"expected one installed overlay, found {len(sites)}")
    return sites[0]


# ─── timing phase B ───────────────────────────────────────────────────────────────────────────────────────────


def _script_names() -> dict[str, str]:
    """Every ``*_SCRIPT`` text of codeflux's pipeline modules → its name (what a ``-c`` command runs)."""
    import codeflux.pipeline as package

    names: dict[str, str] = {}
    for module_info in pkgutil.iter_modules(package.__path__):
        module = import_module(f"{package.__name__}.{module_info.name}")
        for attribute, value in vars(module).items():
            if attribute.endswith("_SCRIPT") and isinstance(value, str):
                names.setdefault(value, attribute)
    return names


def command_label(argv: tuple[str, ...], scripts: dict[str, str]) -> str:
    """A short name for a check command: the fixed script it runs (and the module after ``-m``), else its argv."""
    parts: list[str] = []
    rest = list(argv[1:])
    while rest:
        item = rest.pop(0)
        if item == "-c" and rest:
            parts.append(scripts.get(rest.pop(0), "python -c <script>"))
        elif item == "-m" and rest:
            parts.append(f"-m {rest.pop(0)}")
            break
    return " ".join(parts) or " ".join(argv[:3])


@dataclass(slots=True)
class CommandTiming:
    """One confined check command: its stage, name, wall seconds around ``run_check_command`` (authority, worker,
    box, program), the program's own seconds as the worker measured them (the execution's ``duration_ms``: the
    boxed process from spawn to exit), its state, and whether it was stage 16's growth timing run."""

    stage: StageName | None
    label: str
    seconds: float
    program: float
    state: str
    growth: bool


@dataclass(slots=True)
class TimedCommands:
    """The pipeline's command port, each ``run_check_command`` timed and named (everything else passed through)."""

    inner: DriverCheckCommands
    scripts: dict[str, str]
    db: Database | None = None
    stage: StageName | None = None
    timings: list[CommandTiming] = field(default_factory=list)

    def temp_directory(self, task_id: TaskId) -> Path:
        return self.inner.temp_directory(task_id)

    def tools_directory(self) -> Path:
        return self.inner.tools_directory()

    def tool_source(self) -> ToolSource | None:
        return self.inner.tool_source()

    def run_check_command(self, task_id: TaskId, argv: tuple[str, ...], *, attempt: int,
                          working_directory: str | None = None, covered_by: tuple[str, ...] | None = None,
                          own_decision: bool = False) -> CheckCommandRun:
        started = time.perf_counter()
        done = self.inner.run_check_command(task_id, argv, attempt=attempt, working_directory=working_directory,
                                            covered_by=covered_by, own_decision=own_decision)
        seconds = time.perf_counter() - started
        self.timings.append(CommandTiming(stage=self.stage, label=command_label(argv, self.scripts),
                                          seconds=seconds, program=self._program_seconds(done.request_id),
                                          state=str(done.state) if done.ran else f"not run: {done.refusal}",
                                          growth=GROWTH_SCRIPT in argv))
        return done

    def _program_seconds(self, request_id: str | None) -> float:
        if self.db is None or request_id is None:
            return 0.0
        row = self.db.read(lambda view: execution_of_request(view, request_id))
        return 0.0 if row is None or row.result.duration_ms is None else row.result.duration_ms / 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class StageTiming:
    stage: StageName
    number: int
    seconds: float
    outcome: str
    said: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseBRun:
    """One phase B: its wall time (``record_atom_stages``, the ledger write included), each stage's, each command's."""

    case: str
    wall: float
    stages: tuple[StageTiming, ...]
    commands: tuple[CommandTiming, ...]

    @property
    def fuzz(self) -> float:
        return sum(item.seconds for item in self.stages if item.stage is FUZZ)

    @property
    def growth(self) -> float:
        return sum(item.seconds for item in self.commands if item.growth)

    @property
    def counted(self) -> float:
        """The wall time the target is about: fuzz's stage and growth's timing run taken off."""
        return self.wall - self.fuzz - self.growth

    def stage_seconds(self, stage: StageName) -> float:
        return sum(item.seconds for item in self.stages if item.stage is stage)


def timed_stages(commands: TimedCommands, stages: tuple[AtomStage, ...] = ATOM_STAGES,
                 ) -> tuple[tuple[AtomStage, ...], list[tuple[StageName, float, StageResult]]]:
    """``stages`` with each evaluation timed (and the command port told which stage runs); the list they fill."""
    seen: list[tuple[StageName, float, StageResult]] = []

    def wrap(stage: AtomStage) -> AtomStage:
        def evaluate(facts: object) -> StageResult:
            commands.stage = stage.stage
            started = time.perf_counter()
            try:
                result = stage.evaluate(facts)  # type: ignore[arg-type]
            finally:
                commands.stage = None
            seen.append((stage.stage, time.perf_counter() - started, result))
            return result
        return dataclasses.replace(stage, evaluate=evaluate)  # what it waits for and writes stays the stage's

    return tuple(wrap(stage) for stage in stages), seen


def _key() -> str:
    return f"bench-phase-b-{next(_KEYS)}"


@dataclass(slots=True)
class Bench:
    """One data directory, its store and tool driver, and the case's repository; tasks are made one per run."""

    case: Case
    root: Path
    repo: Path
    tasks: TaskService
    driver: ToolDriver
    settings: StoredSettings

    @property
    def python(self) -> Path:
        return self.repo / ".venv" / "bin" / "python"


@contextmanager
def open_bench(case: Case, root: Path) -> Iterator[Bench]:
    """A fresh data directory and repository for ``case`` under ``root``; leaving it stops the workers."""
    repo = make_repository(case, root / "repo")
    db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
    try:
        with ToolDriver(db, state_dir=root / "data" / "workers", base_environment={},
                        tool_source=ToolSource(wheelhouse=WHEELHOUSE)) as driver:
            yield Bench(case=case, root=root, repo=repo, tasks=TaskService(db, worktrees_root=root / "worktrees"),
                        driver=driver, settings=StoredSettings(db))
    finally:
        db.close()


def _allow(driver: ToolDriver, task_id: TaskId, argv: tuple[str, ...], *, working_directory: str | None = None
           ) -> None:
    request = submit_check_command(driver, task_id, argv, attempt=1, working_directory=working_directory)
    if request.outcome is DecisionOutcome.PENDING:
        driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the benchmark allows it, as a person would")


def started_ports(bench: Bench) -> tuple[PipelinePorts, TimedCommands]:
    """A new task of the case, planned, approved and started (attempt 1), its worktree made and the change written;
    its test command and the overlay install allowed once."""
    tasks, snapshot = bench.tasks, open_repository(bench.repo)
    created = tasks.create_task(snapshot, bench.case.requirement, idempotency_key=_key())
    BudgetService(tasks.changes.db).set_budget(created.task_id, hard_limit=Money(minor=10_000, currency=USD),
                                               expected_revision=None, idempotency_key=_key())
    planning = tasks.transition(created.task_id, TaskState.FORECASTING, expected_revision=created.revision,
                                reason="planning", actor=Actor.SYSTEM, idempotency_key=_key())
    drafted = tasks.record_plan_revision(created.task_id, bench.case.plan, created_by=PlanAuthor.SCRIPTED,
                                         expected_revision=planning.revision, idempotency_key=_key())
    view = tasks.show(created.task_id)
    if view.plan is None:
        raise HarnessError("the plan was not recorded")
    tasks.approve_plan(created.task_id, revision=drafted.plan_revision or 0, sha256=view.plan.sha256,
                       idempotency_key=_key())
    tasks.start_run(created.task_id, snapshot, expected_revision=tasks.show(created.task_id).task.revision,
                    idempotency_key=_key())
    view = tasks.show(created.task_id)
    if view.plan is None or view.task.base_revision is None:
        raise HarnessError("the task did not start")
    worktree = create_task_worktree(view.task.repository_root, worktrees_root=view.task.worktree.parent.parent,
                                    repo_key=view.task.worktree.parent.name, task_id=created.task_id,
                                    base_commit=view.task.base_revision)
    apply_edits(worktree.path, bench.case.edits)
    python = str(bench.python)
    _allow(bench.driver, created.task_id, pytest_argv(python))
    _allow(bench.driver, created.task_id, install_argv(python, ToolSource(wheelhouse=WHEELHOUSE)),
           working_directory=INSTALL_WORKING_DIRECTORY)
    facts = TaskFacts(task_id=created.task_id, requirement=bench.case.requirement, plan=view.plan.plan,
                      plan_revision=view.plan.revision, plan_sha256=view.plan.sha256, worktree=worktree)
    search_path = build_worker_environment(base=os.environ, home=worktree.path, tmpdir=worktree.path)["PATH"]
    commands = TimedCommands(inner=DriverCheckCommands(bench.driver), scripts=_script_names(), db=tasks.changes.db)
    ports = PipelinePorts(facts=facts, ledger=tasks, commands=commands, acceptance=NoAcceptanceYet(),
                          repository_root=view.task.repository_root, search_path=search_path,
                          settings=bench.settings, obligations=tasks,
                          memory=CheckoutMemory(tasks.changes.db, view.task.repository_root))
    return ports, commands


def run_phase_b(bench: Bench) -> PhaseBRun:
    """One timed phase B on a new task of the bench's case (see the module docstring)."""
    ports, commands = started_ports(bench)
    assembly = evaluate_assembly(ports, attempt=1)
    stages, seen = timed_stages(commands)
    started = time.perf_counter()
    recorded = record_atom_stages(ports, 1, assembly, stages=stages)
    wall = time.perf_counter() - started
    if len(recorded) != len(ATOM_STAGES) or not seen:
        raise HarnessError(f"phase B did not evaluate its stages (assembly: {assembly.verdict.outcome}: "
                           f"{assembly.verdict.reason})")
    timings = tuple(StageTiming(stage=name, number=stage_named(name).number, seconds=seconds,
                                outcome=str(result.verdict.outcome),
                                said=(result.verdict.reason or result.verdict.gate_evaluation or "")[:160])
                    for name, seconds, result in seen)
    task = bench.tasks.show(ports.facts.task_id).task  # one active task per repository: this one ends here
    bench.tasks.transition(task.task_id, TaskState.CANCELLED, expected_revision=task.revision,
                           reason="benchmark run done", actor=Actor.USER, idempotency_key=_key())
    return PhaseBRun(case=bench.case.name, wall=wall, stages=timings, commands=tuple(commands.timings))


# ─── the benchmark: samples, medians, the report ──────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseFigures:
    """One case's runs: the first phase B of a fresh data directory (the overlay installed), then ``warm`` runs
    interleaved with the suite's runs."""

    case: Case
    cold: PhaseBRun
    warm: tuple[PhaseBRun, ...]
    suite: tuple[float, ...]
    suite_said: str
    coverage_twin: tuple[float, ...]


TARGET: Final = 5.0


def bench_case(case: Case, root: Path, *, samples: int) -> CaseFigures:
    """``samples`` warm phase B runs of ``case`` interleaved with as many runs of its suite (after one cold run)."""
    warm: list[PhaseBRun] = []
    suite: list[float] = []
    twin: list[float] = []
    said = ""
    files = sorted({edit.path for edit in case.edits})
    with open_bench(case, root / "bench") as bench:
        cold = run_phase_b(bench)
        site = overlay_site(bench)
        for n in range(samples):
            warm.append(run_phase_b(bench))
            copy = suite_copy(case, root / f"suite-{n}")
            for name in ("suite", "twin"):
                (root / f"{name}-{n}-tmp").mkdir()
            seconds, said = suite_seconds(bench.python, copy, root / f"suite-{n}-tmp")
            suite.append(seconds)
            twin.append(coverage_twin_seconds(bench.python, site, copy, root / f"twin-{n}-tmp", files))
    return CaseFigures(case=case, cold=cold, warm=tuple(warm), suite=tuple(suite), suite_said=said,
                       coverage_twin=tuple(twin))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _commands_inside(runs: list[PhaseBRun], stage: StageName) -> str:
    """The commands ``stage`` ran, by name: the median over ``runs`` of their summed seconds (and how many)."""
    labels = sorted({item.label for item in runs[0].commands if item.stage is stage})
    parts = []
    for label in labels:
        count = sum(1 for item in runs[0].commands if item.stage is stage and item.label == label)
        chosen = [[item for item in run.commands if item.stage is stage and item.label == label] for run in runs]
        seconds = _median([sum(item.seconds for item in items) for items in chosen])
        program = _median([sum(item.program for item in items) for items in chosen])
        parts.append(f"{label}{f' x{count}' if count > 1 else ''} {seconds:.2f} ({program:.2f})")
    return ", ".join(parts)


def report_case(figures: CaseFigures, say: Callable[[str], None]) -> float:
    """Print one case's figures; returns the ratio the target is about (median counted phase B / median suite)."""
    warm = list(figures.warm)
    suite = _median(list(figures.suite))
    wall = _median([run.wall for run in warm])
    counted = _median([run.counted for run in warm])
    ratio = counted / suite
    say(f"  {figures.case.name}: {figures.case.about}")
    say(f"    the package's whole suite (unconfined, same interpreter): {suite:6.2f} s  ({figures.suite_said})")
    twin = _median(list(figures.coverage_twin))
    boxed = _median([sum(item.seconds for item in run.commands if item.label == "COVERAGE_SCRIPT") for run in warm])
    say(f"    stage 8's coverage run: in the box {boxed:.2f} s = {boxed / suite:.1f}x the suite; unconfined (same "
        f"script, argv, overlay) {twin:.2f} s = {twin / suite:.1f}x")
    say(f"    phase B wall (record_atom_stages, {len(warm)} warm runs): {wall:6.2f} s   "
        f"(first run, overlay installed: {figures.cold.wall:.2f} s)")
    say(f"    budgets reported apart: fuzz (stage 12) {_median([run.fuzz for run in warm]):.2f} s"
        f"{'' if any(item.stage is FUZZ for item in warm[0].stages) else ' (not in ATOM_STAGES yet)'}, "
        f"growth (stage 16's timing run) {_median([run.growth for run in warm]):.2f} s")
    say(f"    phase B without them: {counted:6.2f} s = {ratio:.1f}x the suite   target <= {TARGET:.0f}x   "
        f"{'met' if ratio <= TARGET else 'NOT met'}")
    inside = [[item for item in run.commands if item.stage is not None] for run in warm]
    around = _median([sum(item.seconds for item in items) for items in inside])
    programs = _median([sum(item.program for item in items) for items in inside])
    say(f"    of the wall: {len(inside[0])} confined commands {around:.2f} s (the boxed programs' own time "
        f"{programs:.2f} s), the coordinator's own work {wall - around:.2f} s")
    for stage in warm[0].stages:
        if stage.outcome == "blocked":
            say(f"    NOTE stage {stage.number} {stage.stage} was blocked (no measurement): {stage.said}")
    say("    per stage: median s, outcome, the confined commands it ran: median s around the call "
        "(the boxed program's own s)")
    for position, stage in enumerate(warm[0].stages):
        seconds = _median([run.stages[position].seconds for run in warm])
        say(f"      {stage.number:>2} {stage.stage:<24} {seconds:6.2f}  {stage.outcome:<10} "
            f"{_commands_inside(warm, stage.stage)}")
    return ratio


def bench_phase_b(samples: int, say: Callable[[str], None]) -> None:
    """Both cases, reported; nothing asserted on time (the figures go to docs/benchmarks.md)."""
    say(f"bench pipeline (phase B: stages 5, 7-17 as record_atom_stages runs them; real worker, confined, "
        f"coverage.py from the overlay ({WHEELHOUSE.relative_to(REPO)}); 1 cold + {samples} warm runs, medians)")
    measured: list[CaseFigures] = []
    for case in (demo_case(), toolz_case()):
        root = Path(tempfile.mkdtemp(prefix=f"bench-phase-b-{case.name}-"))
        try:
            measured.append(bench_case(case, root, samples=samples))
            report_case(measured[-1], say)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    demo, package = measured
    counted = _median([run.counted for run in demo.warm])
    suite = _median(list(package.suite))
    say(f"  the demo's phase B against the real package's suite (the baseline issue 17 names: \"against that "
        f"package's own full test-suite time\"): {counted:.2f} s / {suite:.2f} s = {counted / suite:.1f}x   "
        f"target <= {TARGET:.0f}x   {'met' if counted / suite <= TARGET else 'NOT met'}")
