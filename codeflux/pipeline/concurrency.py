"""Evaluating independent stages side by side: :func:`evaluate_stages` (issue 18).

A phase's stages are handed over as :class:`Scheduled` items, in stage order. Each names the stages of the same
batch it reads what they measured or recorded (``after``: stage 13 reads the run stage 8 judged its stubs and
mutants in; 19–21 read the composition obligations 18 recorded), and whether it writes under the task's TMPDIR
(``scratch``: a copy of the tree with stubs or mutants laid over it, or its reports in the one check folder, which
each such stage clears when it ends — so they run one at a time) or must run with nothing beside it
(``alone``: stage 32's runs are what 34 times). With ``concurrency`` N, at most N stages run at once, in threads
(each waits on the worker's commands, not on the interpreter), started in stage order as their ``after`` stages end;
at most one ``scratch`` stage runs at a time; an ``alone`` stage starts when nothing else runs (the stages after it
that may start meanwhile do) and nothing starts beside it. What several stages read — the coverage map (measured
before the batch), the interpreter's tool probe, an install into the overlay — is made once per attempt behind
:meth:`~codeflux.pipeline.atom_facts.AtomFacts.once`, and the same check command is never executed twice at the
same time (:class:`~codeflux.coordinator.runs.pipeline_ports.DriverCheckCommands`), so the
verdicts do not depend on N: only evidence bounded by a time budget (fuzzing, timing) may differ.

Every result that carries evidence gets the stage's :data:`SCHEDULE_KEY`: when it started and ended (wall clock,
microseconds since the epoch) and the concurrency it ran at — so a reader (and a test) sees what ran beside what. A
``blocked`` result carries none: the ledger stores no evidence with a stage that did not run.

A stage that raises stops the batch: the stages not started are not started, the running ones are waited for,
and the error is raised again (as it would be without concurrency).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.ports import SettingsPort
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import PIPELINE_CONCURRENCY, threshold_of

__all__ = ["SCHEDULE_KEY", "Scheduled", "concurrency_of", "evaluate_stages"]

SCHEDULE_KEY: Final = "schedule"
"""The evidence key of when a stage ran: ``{"started_us", "ended_us", "concurrency"}``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scheduled:
    """One stage to evaluate: its name, its evaluation and what it may run beside (see the module docstring)."""

    stage: StageName
    evaluate: Callable[[], StageResult]
    after: frozenset[StageName] = frozenset()
    scratch: bool = False
    alone: bool = False


def concurrency_of(settings: SettingsPort | None) -> int:
    """How many stages may run at once: the ``pipeline.concurrency`` setting, else its default; 1 when the stored
    value is not usable (the stages then run one after another — never a value nobody chose)."""
    found = threshold_of(settings, PIPELINE_CONCURRENCY)
    return 1 if found.problem is not None else found.value


def _now_us() -> int:
    return time.time_ns() // 1000


def _timed(item: Scheduled, concurrency: int) -> StageResult:
    started = _now_us()
    result = item.evaluate()
    if result.verdict.stage is not item.stage:
        raise ValueError(f"the evaluation of {item.stage} returned a verdict of {result.verdict.stage}")
    if result.verdict.outcome is StageOutcome.BLOCKED:
        return result
    schedule = {"started_us": started, "ended_us": _now_us(), "concurrency": concurrency}
    return StageResult(verdict=result.verdict, evidence={**result.evidence, SCHEDULE_KEY: schedule})


class _Batch:
    """The bookkeeping of one :func:`evaluate_stages` call: what is done, running, and may start next."""

    def __init__(self, items: Sequence[Scheduled]) -> None:
        names = [item.stage for item in items]
        if len(set(names)) != len(names):
            raise ValueError("a stage is scheduled twice")
        known = set(names)
        for item in items:
            if not item.after <= known:
                missing = ", ".join(sorted(str(stage) for stage in item.after - known))
                raise ValueError(f"{item.stage} waits for stages that are not in its batch: {missing}")
        self.waiting = list(items)
        self.done: set[StageName] = set()
        self.running: dict[Future[StageResult], Scheduled] = {}

    def ready(self, concurrency: int) -> Scheduled | None:
        """The first waiting stage (in stage order) that may start now, or None."""
        if len(self.running) >= concurrency or any(item.alone for item in self.running.values()):
            return None
        scratch_busy = any(item.scratch for item in self.running.values())
        for item in self.waiting:
            if not item.after <= self.done:
                continue
            if item.alone and self.running:
                continue  # it waits for the running ones to end; later ones may start meanwhile
            if item.scratch and scratch_busy:
                continue
            return item
        return None


def evaluate_stages(items: Sequence[Scheduled], *, concurrency: int) -> tuple[StageResult, ...]:
    """Evaluate ``items`` with at most ``concurrency`` at once (see the module docstring); the results in the
    order of ``items``."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    batch = _Batch(items)
    results: dict[StageName, StageResult] = {}
    if concurrency == 1:
        for one in _ordered(items):
            results[one.stage] = _timed(one, 1)
        return tuple(results[one.stage] for one in items)
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="cf-stage") as pool:
        while batch.waiting or batch.running:
            while failure is None and (next_up := batch.ready(concurrency)) is not None:
                batch.waiting.remove(next_up)
                batch.running[pool.submit(_timed, next_up, concurrency)] = next_up
            if not batch.running:
                if failure is not None:
                    break
                raise ValueError("the stages wait for each other in a circle")  # _Batch checked the names
            finished, _ = wait(tuple(batch.running), return_when=FIRST_COMPLETED)
            for future in finished:
                item = batch.running.pop(future)
                try:
                    results[item.stage] = future.result()
                except BaseException as error:  # raised again below, after the running ones end
                    failure = failure or error
                batch.done.add(item.stage)
    if failure is not None:
        raise failure
    return tuple(results[item.stage] for item in items)


def _ordered(items: Sequence[Scheduled]) -> list[Scheduled]:
    """``items`` one after another: in stage order, each after what it waits for."""
    done: set[StageName] = set()
    waiting = list(items)
    ordered: list[Scheduled] = []
    while waiting:
        item = next((item for item in waiting if item.after <= done), None)
        if item is None:
            raise ValueError("the stages wait for each other in a circle")
        waiting.remove(item)
        ordered.append(item)
        done.add(item.stage)
    return ordered

