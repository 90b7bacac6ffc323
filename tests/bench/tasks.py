"""Benchmark: task start and diff identity, each against the git CLI on the same repository in the same run.

Run with `cmd/codeflux-dev bench tasks`.

* **task start** — ``TaskService.start_run`` (CAS, limits, run attempt, events), the task worktree
  (``create_task_worktree``, pygit2) and the plan-approved checkpoint (private ref + row), i.e. what
  ``run_task`` does before the first model turn; versus ``git worktree add -b BRANCH PATH BASE`` of the
  same repository (REPO_FILES files). Both sides are interleaved; the worktrees are removed between samples.
* **diff identity** — ``diff_against_base`` (verify, capture the working tree including untracked files,
  render the unified diff, sha256) of a worktree where CHANGED_FILES tracked files were modified, versus
  ``git diff BASE`` (CLI, tracked files only, so the baseline does strictly less work).

* **demo journey** — the README's headless demo end to end: ``codeflux run`` of the sample repository
  (``codeflux demo init``'s files, its ``TASK.md``) with the scripted provider (not a model), the test command
  pre-approved and ``--yes``, then ``codeflux task accept`` with the identity ``run`` printed — two CLI
  processes through the console script, as a user types them; versus doing the same work by hand with plain
  subprocess calls on an identical fresh sample: ``git worktree add``, writing the file content the scripted
  edit produces, the same pytest invocations the journey runs (the agent's own test run and stage 28's; stage
  29 reads stage 28's junit report, so it runs nothing), ``git commit``, ``git merge --ff-only`` into
  ``main``, and removing the worktree and its branch (as accept does). Both sides run ``python3`` from the
  same ``PATH`` with ``PYTHONDONTWRITEBYTECODE=1`` (what the worker sets for every command); the CLI processes
  keep their bytecode in a temp ``PYTHONPYCACHEPREFIX`` (an installed codeflux has compiled bytecode), warmed
  by one untimed journey that also creates the data directory. Each journey's time is then broken down by
  phase from the task's own records, read through ``inspect_stored_rows`` (what ``codeflux inspect`` shows):
  events, tool requests and executions (``duration_ms`` is the program's own time). Stage 28 also runs the
  test command on the base revision (failures the base shares, whether the examples discriminate): the hand
  version makes the same pytest invocation on the base commit checked out beside its worktree (with the
  attempt's test files copied over), and the ratio is also given with that run taken off both sides.

Prints p50/p99 per side and the ratio of medians (codeflux / baseline). Nothing is asserted on time: the
figures go to docs/benchmarks.md under ``## bench tasks``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from codeflux.coordinator.demo import DEMO_TEST_COMMAND, create_sample_repository, demo_file_text, sample_files
from codeflux.coordinator.maintenance import MAX_INSPECT_LIMIT, inspect_stored_rows
from codeflux.coordinator.runs.pipeline_ports import check_request_key
from codeflux.coordinator.tasks.checkpoints import CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.service import Actor, PlanAuthor, TaskService
from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.forecast import TaskClass
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import Plan, PlanScope, PlanStep, plan_sha256
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.gitwork.worktrees import create_task_worktree, remove_task_worktree
from codeflux.pipeline.base_revision import BASE_WORKING_DIRECTORY, is_test_file
from codeflux.pipeline.program import pytest_argv
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.worker.hardening import environment_without_secrets

REPO_FILES = int(os.environ.get("CODEFLUX_BENCH_REPO_FILES", "500"))
CHANGED_FILES = 1000
STARTS = int(os.environ.get("CODEFLUX_BENCH_STARTS", "20"))
DIFFS = int(os.environ.get("CODEFLUX_BENCH_DIFFS", "10"))
JOURNEYS = int(os.environ.get("CODEFLUX_BENCH_JOURNEYS", "5"))
JOURNEY_TARGET = 2.0
BASE_RUN_PHASES = ("checks: base-revision runs' own time (duration_ms)",
                   "checks: around the base-revision runs (worker, transport)")
_KEY = iter(range(1_000_000))
_GIT_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, env=dict(_GIT_ENV, HOME=str(cwd)), capture_output=True, text=True,
                          check=True).stdout


def _key() -> str:
    return f"bench-{next(_KEY)}"


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def _make_repository(root: Path, files: int) -> Path:
    repo = root / "repo"
    for n in range(files):
        path = repo / "pkg" / f"d{n % 20:02d}" / f"m{n:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE_{n} = {n}\n\n\ndef f_{n}(x):\n    return x + {n}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo


def _plan() -> Plan:
    return Plan(task_class=TaskClass.BUG_FIX, scope=PlanScope(summary="bench", paths=("pkg",)),
                steps=(PlanStep(title="Edit", detail="edit one file", expected_files=("pkg/d00/m0000.py",)),),
                examples=(AcceptanceExample(test="tests/test_m0000.py::test_f_0"),))


def _ready(tasks: TaskService, repo: Path) -> tuple[TaskId, int]:
    snapshot = open_repository(repo)
    created = tasks.create_task(snapshot, "bench requirement", idempotency_key=_key())
    planning = tasks.transition(created.task_id, TaskState.FORECASTING, expected_revision=created.revision,
                                reason="planning", actor=Actor.SYSTEM, idempotency_key=_key())
    drafted = tasks.record_plan_revision(created.task_id, _plan(), created_by=PlanAuthor.SCRIPTED,
                                         expected_revision=planning.revision, idempotency_key=_key())
    approved = tasks.approve_plan(created.task_id, revision=drafted.plan_revision or 0, sha256=plan_sha256(_plan()),
                                  idempotency_key=_key())
    return created.task_id, approved.revision


def bench_task_start(root: Path) -> tuple[list[float], list[float]]:
    repo = _make_repository(root, REPO_FILES)
    base = _git(repo, "rev-parse", "HEAD").strip()
    db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
    tasks = TaskService(db, worktrees_root=root / "worktrees")
    checkpoints = CheckpointService(tasks.changes)
    ours: list[float] = []
    theirs: list[float] = []
    try:
        for n in range(STARTS):
            task_id, revision = _ready(tasks, repo)
            snapshot = open_repository(repo)

            def start(task_id: TaskId = task_id, revision: int = revision,
                      snapshot: RepositorySnapshot = snapshot) -> None:
                tasks.start_run(task_id, snapshot, expected_revision=revision, idempotency_key=_key())
                where = tasks.show(task_id).task.worktree
                create_task_worktree(repo, worktrees_root=where.parent.parent, repo_key=where.parent.name,
                                     task_id=task_id, base_commit=base)
                checkpoints.capture_checkpoint(task_id, CheckpointTrigger.PLAN_APPROVED)

            ours.append(_timed(start))
            task = tasks.show(task_id).task
            tasks.transition(task_id, TaskState.CANCELLED, expected_revision=task.revision, reason="bench",
                             actor=Actor.USER, idempotency_key=_key())
            binding = TaskWorktree(repo_root=repo.resolve(), path=task.worktree.resolve(), task_id=task_id, base=base)
            remove_task_worktree(binding, keep_if_unsaved=False, outcome_ambiguous=False, delete_branch=True)
            path = root / "git-worktrees" / f"w{n}"
            argv = ("worktree", "add", "-q", "-b", f"bench/{n}", str(path), base)
            theirs.append(_timed(partial(_git, repo, *argv)))
            _git(repo, "worktree", "remove", "--force", str(path))
    finally:
        db.close()
    return ours, theirs


def bench_diff_identity(root: Path) -> tuple[list[float], list[float], int]:
    repo = _make_repository(root / "diff", CHANGED_FILES)
    base = _git(repo, "rev-parse", "HEAD").strip()
    task_id = TaskId.from_entropy(os.urandom(16))
    binding = create_task_worktree(repo, worktrees_root=root / "diff-worktrees", repo_key="bench", task_id=task_id,
                                   base_commit=base)
    for path in sorted((binding.path / "pkg").rglob("*.py")):
        path.write_text(path.read_text() + "\n# changed by the task\n")
    ours: list[float] = []
    theirs: list[float] = []
    size = 0
    for _ in range(DIFFS):
        ours.append(_timed(lambda: diff_against_base(binding)))
        theirs.append(_timed(lambda: _git(binding.path, "diff", base)))
    size = len(diff_against_base(binding).unified_diff)
    return ours, theirs, size


# ─── demo journey: codeflux run → accept versus the same work by hand ──────────────────────────────────

_ACCEPT_LINE = re.compile(r"codeflux task accept (tsk_[0-9a-f]+) --identity ([0-9a-f]{64})")
_FIXED = "    return a + b\n"
_CONSOLE_SCRIPT = Path(sys.executable).with_name("codeflux")
# What a user types: the console script (codeflux.cli.entry:main), else its twin `python -m codeflux`.
_CLI = (str(_CONSOLE_SCRIPT),) if _CONSOLE_SCRIPT.is_file() else (sys.executable, "-m", "codeflux")
# The CLI entered past the entry: the re-execution is decided only after the whole CLI was imported.
_CLI_PAST_THE_ENTRY = (sys.executable, "-m", "codeflux.cli.main")


class JourneyFailed(RuntimeError):
    """One side of the demo journey did not end as the demo does (the benchmark stops: no figure)."""


@dataclass(frozen=True, slots=True)
class Journey:
    """One codeflux journey: the task and when each CLI process started and ended (wall clock, µs)."""

    task_id: str
    run_started: int
    run_ended: int
    accept_started: int
    accept_ended: int

    @property
    def seconds(self) -> float:
        return ((self.run_ended - self.run_started) + (self.accept_ended - self.accept_started)) / 1e6


def _now_us() -> int:
    return time.time_ns() // 1000


def _script_turns() -> Iterator[dict[str, Any]]:
    """The tool calls of the shipped script's implementation turns, in order."""
    for turn in json.loads(demo_file_text("script.json"))["run"]:
        yield from turn.get("tool_calls", ())


def _edited_files() -> dict[str, str]:
    """Each file the scripted turns edit, with the content it has after their ``edit_file`` calls."""
    files = sample_files()
    edited: dict[str, str] = {}
    for call in _script_turns():
        if call["name"] == "edit_file":
            arguments = call["arguments"]
            path = arguments["path"]
            edited[path] = edited.get(path, files[path]).replace(arguments["old_text"], arguments["new_text"], 1)
    return edited


def _test_invocations() -> list[tuple[str, ...]]:
    """The commands the journey runs: the script's ``run_command`` calls, then stage 28's pytest."""
    scripted = [tuple(call["arguments"]["argv"]) for call in _script_turns() if call["name"] == "run_command"]
    return [*scripted, pytest_argv("python3")]


def _sample(root: Path, name: str) -> Path:
    return create_sample_repository(root / name)


def _cli_env(root: Path) -> dict[str, str]:
    """The bench's environment with the CLI's bytecode cached in a temp directory (an installed codeflux has
    its bytecode compiled; the worker it starts gets its own allow-listed environment either way)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def _codeflux(data: Path, env: dict[str, str], *args: str) -> tuple[str, int, int]:
    started = _now_us()
    done = subprocess.run([*_CLI, "--data-dir", str(data), *args], env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    ended = _now_us()
    if done.returncode != 0:
        raise JourneyFailed(f"codeflux {args[0]} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout, started, ended


def _codeflux_journey(repo: Path, data: Path, env: dict[str, str]) -> Journey:
    """The README's headless demo: ``codeflux run … --yes`` then ``codeflux task accept`` (both timed whole)."""
    out, run_started, run_ended = _codeflux(
        data, env, "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"), "--provider", "scripted",
        "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--budget", "1.00", "--yes")
    found = _ACCEPT_LINE.search(out)
    if found is None:
        raise JourneyFailed(f"codeflux run printed no accept command:\n{out}")
    task_id, identity = found.groups()
    _, accept_started, accept_ended = _codeflux(data, env, "task", "accept", task_id, "--identity", identity)
    _check_landed(repo)
    return Journey(task_id, run_started, run_ended, accept_started, accept_ended)


def _check_landed(repo: Path) -> None:
    if _FIXED not in (repo / "calc" / "ops.py").read_text() or _git(repo, "status", "--porcelain").strip():
        raise JourneyFailed(f"the fix did not land cleanly on main in {repo}")
    if _git(repo, "worktree", "list", "--porcelain").count("worktree ") != 1:
        raise JourneyFailed(f"a worktree of {repo} was left behind")


def _hand_journey(repo: Path, n: int) -> dict[str, float]:
    """The same work with plain subprocess calls; returns seconds per step."""
    worktree = repo.parent / f"{repo.name}-wt"
    branch = f"hand/{n}"
    steps: dict[str, float] = {}
    steps["git worktree add"] = _timed(partial(_git, repo, "worktree", "add", "-q", "-b", branch, str(worktree)))

    def edit() -> None:
        for path, content in _edited_files().items():
            (worktree / path).write_text(content, encoding="utf-8")

    steps["edit (write the file)"] = _timed(edit)
    for number, argv in enumerate(_test_invocations(), start=1):
        steps[f"pytest #{number}"] = _timed(partial(subprocess.run, argv, cwd=worktree, capture_output=True,
                                                    check=True, timeout=600))
    steps[_HAND_BASE_STEP] = _timed(partial(_hand_base_run, repo, worktree))

    def deliver() -> None:
        _git(worktree, "commit", "-q", "-a", "-m", "fix add()")
        _git(repo, "merge", "-q", "--ff-only", branch)
        _git(repo, "worktree", "remove", str(worktree))
        _git(repo, "branch", "-q", "-d", branch)

    steps["commit, merge --ff-only, remove worktree + branch"] = _timed(deliver)
    _check_landed(repo)
    return steps


_HAND_BASE_STEP: Final = "pytest on the base revision with the final test files"


def _hand_base_run(repo: Path, worktree: Path) -> None:
    """What stage 28's base run does, by hand: the base commit checked out beside the worktree, the attempt's
    test files copied over it, the same pytest there (whether the example discriminates), then removed."""
    base = repo.parent / f"{repo.name}-base"
    _git(repo, "worktree", "add", "-q", "--detach", str(base), "HEAD")
    for path in _edited_files():
        if is_test_file(path):
            shutil.copyfile(worktree / path, base / path)
    subprocess.run(pytest_argv("python3"), cwd=base, capture_output=True, check=False, timeout=600)
    _git(repo, "worktree", "remove", "--force", str(base))


def _rows(data: Path, entity: str, entity_id: str) -> list[dict[str, str]]:
    """Rows of one entity as ``codeflux inspect ENTITY --id ID`` shows them (the product's read path)."""
    found = inspect_stored_rows(DataLocation(directory=data), entity=entity, entity_id=entity_id,
                                limit=MAX_INSPECT_LIMIT)
    return [dict(zip(found.columns, row, strict=True)) for row in found.rows]


def _is_base_run(request: dict[str, str], task_id: str) -> bool:
    """Whether a pipeline request ran in the base revision's scratch (stage 28's base runs): its idempotency
    key ends with the working directory's part of :func:`check_request_key`."""
    task = TaskId.parse(task_id)
    suffix = check_request_key(task, 0, (), BASE_WORKING_DIRECTORY).removeprefix(check_request_key(task, 0, ()))
    return request["source"] == "pipeline" and request["idempotency_key"].endswith(suffix)


def _journey_phases(data: Path, journey: Journey) -> dict[str, float]:
    """Where one codeflux journey's time went, in seconds, from the task's events, tool requests and
    executions; the phases add up to the journey's time. The pipeline's runs on the base revision (the
    hand version never runs them) are phases of their own, named in :data:`BASE_RUN_PHASES`."""
    session = _rows(data, "tasks", journey.task_id)[0]["session_id"]
    events = [(row["kind"], json.loads(row["payload_json"]), int(row["created_at_us"]))
              for row in _rows(data, "events", session)]

    def first(kind: str, after: int = 0, **match: str) -> int:
        return next(at for k, payload, at in events
                    if k == kind and at >= after and all(payload.get(key) == v for key, v in match.items()))

    created, planned = first("task-created"), first("plan-revision-recorded")
    loop = first("model-call-planned", after=first("run-attempt-opened"))
    validating = first("task-state-changed", to="validating")
    review = first("task-state-changed", to="awaiting-review")
    completed = first("task-state-changed", to="completed")
    turns = {payload["request_id"]: at for kind, payload, at in events if kind == "model-call-planned" and at >= loop}
    turn_us = sum(first("model-call-finished", request_id=request) - at for request, at in turns.items())
    spans: dict[str, list[int]] = {"model": [0, 0], "pipeline": [0, 0], "base": [0, 0]}
    for request in _rows(data, "tool-requests", journey.task_id):
        for execution in _rows(data, "executions", request["id"]):
            span = spans["base" if _is_base_run(request, journey.task_id) else request["source"]]
            span[0] += int(execution["finished_at_us"]) - int(execution["intended_at_us"])
            span[1] += 1000 * int(execution["duration_ms"])
    (tools_us, programs_us), (checks_us, check_programs_us) = spans["model"], spans["pipeline"]
    base_us, base_programs_us = spans["base"]
    phases_us = {
        "run: process start → task created (imports, store, repository)": created - journey.run_started,
        "planning (budget, prices, the planner's turn, plan recorded)": planned - created,
        "approval, run start (worktree, checkpoint), stages 1-3": loop - planned,
        "loop: scripted model turns (gateway, ledger)": turn_us,
        "loop: tool programs' own time (duration_ms)": programs_us,
        "loop: around the tool programs (worker start, transport, results)": tools_us - programs_us,
        "loop: the rest (decisions, checkpoints, events)": validating - loop - turn_us - tools_us,
        "checks: the test command's own time (duration_ms)": check_programs_us,
        "checks: around the test command (worker, transport)": checks_us - check_programs_us,
        BASE_RUN_PHASES[0]: base_programs_us,
        BASE_RUN_PHASES[1]: base_us - base_programs_us,
        "checks: the rest (stages 4-35, diff, junit, ledger, base scratch)": review - validating - checks_us - base_us,
        "run: awaiting-review → process exit": journey.run_ended - review,
        "accept: process start → completed (imports, verify, merge)": completed - journey.accept_started,
        "accept: completed → process exit (worktree removal)": journey.accept_ended - completed,
    }
    return {name: us / 1e6 for name, us in phases_us.items()}


@dataclass(frozen=True, slots=True)
class CliStart:
    """Seconds for ``codeflux version`` (median of 3 each), all in the CLI's environment but the last."""

    as_run: float
    """Through the entry the journey uses (the re-execution decided before the CLI is imported)."""
    past_the_entry: float
    """``python -m codeflux.cli.main``: the re-execution decided after the whole CLI was imported."""
    without_variables: float
    """Through the entry, without the credential-like variables: no re-execution."""
    removed: list[str]
    """The variables that make every CLI process re-execute itself (``codeflux.worker.hardening.harden_process``)."""


def _cli_start(env: dict[str, str]) -> CliStart:
    """What a CLI process's start costs here, and what of it is the re-execution (:class:`CliStart`)."""
    kept, removed = environment_without_secrets(env)

    def median(cli: tuple[str, ...], environment: dict[str, str]) -> float:
        return statistics.median(_timed(partial(subprocess.run, [*cli, "version"], env=environment, check=True,
                                                capture_output=True)) for _ in range(3))

    return CliStart(median(_CLI, env), median(_CLI_PAST_THE_ENTRY, env), median(_CLI, kept), removed)


@dataclass(frozen=True, slots=True)
class JourneyFigures:
    journeys: list[Journey]
    phases: list[dict[str, float]]
    """Per codeflux journey: seconds per phase (:func:`_journey_phases`)."""
    hand: list[dict[str, float]]
    """Per hand journey: seconds per step."""
    cli_start: CliStart


def bench_demo_journey(root: Path) -> JourneyFigures:
    """JOURNEYS rounds, each side on its own fresh sample, the first side alternating; one untimed warm-up each."""
    data, env = root / "journey-data", _cli_env(root)
    _codeflux_journey(_sample(root, "warm-codeflux"), data, env)
    _hand_journey(_sample(root, "warm-hand"), -1)
    journeys: list[Journey] = []
    hand: list[dict[str, float]] = []
    for n in range(JOURNEYS):
        ours, theirs = _sample(root, f"codeflux-{n}"), _sample(root, f"hand-{n}")
        if n % 2:
            hand.append(_hand_journey(theirs, n))
            journeys.append(_codeflux_journey(ours, data, env))
        else:
            journeys.append(_codeflux_journey(ours, data, env))
            hand.append(_hand_journey(theirs, n))
    phases = [_journey_phases(data, journey) for journey in journeys]
    return JourneyFigures(journeys, phases, hand, _cli_start(env))


def _report_breakdown(title: str, steps: list[dict[str, float]]) -> None:
    print(f"  {title} (medians over {len(steps)}):")
    for name in steps[0]:
        print(f"    {1000 * statistics.median(s[name] for s in steps):8.1f} ms  {name}")


def _report_journey(figures: JourneyFigures) -> None:
    ours, theirs = [j.seconds for j in figures.journeys], [sum(steps.values()) for steps in figures.hand]
    _report(f"demo journey (codeflux run --provider scripted --yes + task accept vs git worktree add, edit, "
            f"{len(_test_invocations()) + 1} x pytest (one on the base), commit + merge)", ours, theirs,
            baseline="hand", target=JOURNEY_TARGET)
    without_base = [j.seconds - sum(p[name] for name in BASE_RUN_PHASES)
                    for j, p in zip(figures.journeys, figures.phases, strict=True)]
    hand_without = [sum(v for k, v in steps.items() if k != _HAND_BASE_STEP) for steps in figures.hand]
    print(f"  without the base-revision runs (taken off both sides): codeflux p50 "
          f"{1000 * statistics.median(without_base):.1f} ms | hand p50 {1000 * statistics.median(hand_without):.1f} ms"
          f" | ratio {statistics.median(without_base) / statistics.median(hand_without):.2f}x")
    _report_breakdown("codeflux, by phase", figures.phases)
    _report_breakdown("by hand, by step", figures.hand)
    start = figures.cli_start
    why = (f"re-executes without {', '.join(start.removed)}" if start.removed
           else "no credential-like variables: no re-execution")
    print(f"  CLI start, `{' '.join(Path(part).name for part in _CLI)} version` (bytecode cached; paid by each of "
          f"the 2 CLI processes): {1000 * start.as_run:.1f} ms in this environment ({why}); "
          f"{1000 * start.past_the_entry:.1f} ms entered past the entry (`python -m codeflux.cli.main`, the "
          f"re-execution after the CLI's import); {1000 * start.without_variables:.1f} ms without those variables")


def _report(name: str, ours: list[float], theirs: list[float], *, baseline: str = "git",
            target: float | None = None) -> None:
    ratio = statistics.median(ours) / statistics.median(theirs)
    verdict = "" if target is None else f"  target <= {target:g}x {'met' if ratio <= target else 'NOT met'}"
    print(f"{name}: codeflux p50 {1000 * _percentile(ours, 0.5):.1f} ms p99 {1000 * _percentile(ours, 0.99):.1f} ms"
          f" | {baseline} p50 {1000 * _percentile(theirs, 0.5):.1f} ms p99 {1000 * _percentile(theirs, 0.99):.1f} ms"
          f" | ratio (codeflux/{baseline}, medians) {ratio:.2f}x{verdict}  [n={len(ours)}]")


def main() -> int:
    if shutil.which("git") is None:
        print("bench tasks: the git CLI is needed for the baseline", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as tmp:
        root = Path(tmp)
        ours, theirs = bench_task_start(root)
        _report(f"task start ({REPO_FILES} files; start_run + worktree + checkpoint vs git worktree add)", ours, theirs)
        ours, theirs, size = bench_diff_identity(root)
        _report(f"diff identity ({CHANGED_FILES} changed files, {size} diff bytes; vs git diff)", ours, theirs)
        _report_journey(bench_demo_journey(root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
