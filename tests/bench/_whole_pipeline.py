"""The whole-pipeline half of ``bench pipeline`` (issue 18): all 37 stages as ``codeflux run`` runs them for one
attempt, against the package's own suite, in the same run.

Not a benchmark of its own (the leading underscore keeps ``cmd/codeflux-dev bench`` from listing it);
``tests/bench/pipeline.py`` runs it. The cases, the repositories and the started task are phase B's
(:mod:`_phase_b`: the demo's change and toolz's one-function change, the test command and the overlay install allowed
once, as a person would). A run is :func:`codeflux.pipeline.runner.run_pipeline` itself — the real function,
recording into the real ledger, every command in the task's real worker, confined — with the default settings
(stage 32 repeats the suite 3 times and times as many runs on the base for 34; stage 33 runs every other local
environment, here none, and syntax-checks the declared versions; stages run side by side at the default
``pipeline.concurrency``). What each stage took: phases B–D and F record it themselves (each stage's ``schedule``
evidence: start and end); phases A, E and G are timed around the runner's calls (its module functions wrapped for
the run — the benchmark's instrument, not the product's). The suite baseline runs unconfined with the same
interpreter, interleaved with the pipeline runs.

Nothing is asserted on time: the figures go to docs/benchmarks.md. Target (issue 18): the whole pipeline ≤ 10× one
suite run.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from _phase_b import (
    Bench,
    Case,
    HarnessError,
    _key,
    demo_case,
    open_bench,
    started_ports,
    suite_copy,
    suite_seconds,
    toolz_case,
)

from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.pipeline import StageName, stage_named
from codeflux.domain.tasks import TaskState
from codeflux.pipeline import runner
from codeflux.pipeline.concurrency import SCHEDULE_KEY, concurrency_of

TARGET: Final = 10.0
_AROUND: Final = {  # the runner's calls timed around, by the stages they are
    "record_specification": "1-4 specification",
    "evaluate_assembly": "26 assembly",
    "evaluate_program": "27 program",
    "run_integration_tests": "28 integration-tests",
    "_base_runs": "28/29 the base revision's runs",
    "evaluate_end_to_end_tests": "29 end-to-end-tests",
    "evaluate_evidence_bundle": "35 evidence-bundle",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class WholeRun:
    """One whole pipeline: its wall time, the seconds of each stage (or group) and each stage's outcome."""

    wall: float
    seconds: Mapping[str, float]
    outcomes: Mapping[str, str]
    batches: Mapping[str, float]


@contextmanager
def _timed_runner(seconds: dict[str, float]) -> Iterator[None]:
    """The runner's module functions in :data:`_AROUND` wrapped by a timer for the ``with`` block."""
    saved = {name: getattr(runner, name) for name in _AROUND}

    def timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                seconds[_AROUND[name]] = seconds.get(_AROUND[name], 0.0) + time.perf_counter() - started
        return wrapper

    try:
        for name, call in saved.items():
            setattr(runner, name, timed(name, call))
        yield
    finally:
        for name, call in saved.items():
            setattr(runner, name, call)


def _label(stage: StageName) -> str:
    return f"{stage_named(stage).number} {stage}"


def run_whole(bench: Bench) -> WholeRun:
    """One whole pipeline on a new task of the bench's case (see the module docstring)."""
    ports, _ = started_ports(bench)
    task_id = ports.facts.task_id
    seconds: dict[str, float] = {}
    with _timed_runner(seconds):
        started = time.perf_counter()
        verdicts = runner.run_pipeline(task_id, 1, ports=ports)
        wall = time.perf_counter() - started
    outcomes = {_label(verdict.stage): str(verdict.outcome) for verdict in verdicts}
    if outcomes.get(_label(StageName.ASSEMBLY)) != "satisfied":
        raise HarnessError(f"the pipeline stopped before the tests: {outcomes}")
    phases: dict[str, list[tuple[int, int]]] = {"B-D": [], "F": []}
    for row in bench.tasks.ledger(task_id, 1):
        schedule = row.evidence.get(SCHEDULE_KEY)
        if not isinstance(schedule, Mapping):
            continue
        start, end = int(str(schedule["started_us"])), int(str(schedule["ended_us"]))
        seconds[_label(row.verdict.stage)] = (end - start) / 1e6
        phases["F" if stage_named(row.verdict.stage).number >= 30 else "B-D"].append((start, end))
    batches = {name: (max(end for _, end in spans) - min(start for start, _ in spans)) / 1e6
               for name, spans in phases.items() if spans}
    task = bench.tasks.show(task_id).task  # one active task per repository: this one ends here
    bench.tasks.transition(task_id, TaskState.CANCELLED, expected_revision=task.revision, reason="benchmark run done",
                           actor=Actor.USER, idempotency_key=_key())
    return WholeRun(wall=wall, seconds=seconds, outcomes=outcomes, batches=batches)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def bench_case(case: Case, root: Path, *, samples: int, say: Callable[[str], None]) -> float:
    """``samples`` whole pipelines of ``case`` interleaved with as many suite runs (after one cold run that installs
    the overlay); prints the figures and returns the ratio the target is about."""
    runs: list[WholeRun] = []
    suite: list[float] = []
    said = ""
    with open_bench(case, root / "bench") as bench:
        concurrency = concurrency_of(bench.settings)
        cold = run_whole(bench)
        for n in range(samples):
            runs.append(run_whole(bench))
            (root / f"suite-{n}-tmp").mkdir()
            seconds, said = suite_seconds(bench.python, suite_copy(case, root / f"suite-{n}"), root / f"suite-{n}-tmp")
            suite.append(seconds)
    base, wall = _median(suite), _median([run.wall for run in runs])
    ratio = wall / base
    say(f"  {case.name}: {case.about}")
    say(f"    the package's whole suite (unconfined, same interpreter): {base:6.2f} s  ({said})")
    say(f"    the whole pipeline (run_pipeline, 37 stages, concurrency {concurrency}, {len(runs)} warm runs): "
        f"{wall:6.2f} s = {ratio:.1f}x the suite   target <= {TARGET:.0f}x   {'met' if ratio <= TARGET else 'NOT met'}"
        f"   (first run, overlay installed: {cold.wall:.2f} s)")
    for name in ("B-D", "F"):
        if name in runs[0].batches:
            say(f"    phase {name} batch wall: {_median([run.batches[name] for run in runs]):6.2f} s")
    say("    per stage (median s, share of the wall; B-D and F stages overlap, so their shares may add up to more "
        "than their batch):")
    labels = sorted(runs[0].seconds, key=lambda label: (int(label.split()[0].split("-")[0].split("/")[0]), label))
    for label in labels:
        seconds = _median([run.seconds.get(label, 0.0) for run in runs])
        outcome = runs[0].outcomes.get(label, "")
        say(f"      {label:<34} {seconds:7.2f}  {100 * seconds / wall:5.1f} %  {outcome}")
    return ratio


def bench_whole(samples: int, say: Callable[[str], None]) -> None:
    """Both cases, reported (see the module docstring)."""
    say(f"bench pipeline (the whole pipeline: 37 stages as run_pipeline runs them for one attempt; real worker, "
        f"confined; 1 cold + {samples} warm runs, medians)")
    for case in (demo_case(), toolz_case()):
        root = Path(tempfile.mkdtemp(prefix=f"bench-whole-{case.name}-"))
        try:
            bench_case(case, root, samples=samples, say=say)
        finally:
            shutil.rmtree(root, ignore_errors=True)
