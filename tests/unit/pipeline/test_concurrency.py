"""The stage scheduler's rules (:mod:`codeflux.pipeline.concurrency`), with evaluations that record what ran beside
what: at most N at once, one scratch-writing stage at a time, an ``alone`` stage with nothing beside it, ``after``
respected, results in the given order whatever finished first, an error raised after the running ones end."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.concurrency import SCHEDULE_KEY, Scheduled, concurrency_of, evaluate_stages
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import PIPELINE_CONCURRENCY

STAGES = tuple(StageName)[6:16]


class Recorder:
    """Evaluations that note when they run; each holds for ``hold`` seconds so that neighbours can overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[StageName] = set()
        self.beside: dict[StageName, set[StageName]] = {}
        self.order: list[StageName] = []
        self.peak = 0

    def stage(self, stage: StageName, *, hold: float = 0.02, outcome: StageOutcome = StageOutcome.SATISFIED
              ) -> Callable[[], StageResult]:
        def evaluate() -> StageResult:
            with self.lock:
                self.order.append(stage)
                self.beside[stage] = set(self.running)
                for other in self.running:
                    self.beside[other].add(stage)
                self.running.add(stage)
                self.peak = max(self.peak, len(self.running))
            time.sleep(hold)
            with self.lock:
                self.running.discard(stage)
            return stage_result(stage, outcome, "held" if outcome is not StageOutcome.BLOCKED else "blocked", {})
        return evaluate


def _interval(result: StageResult) -> tuple[int, int]:
    schedule = result.evidence[SCHEDULE_KEY]
    assert isinstance(schedule, dict)
    return schedule["started_us"], schedule["ended_us"]


def test_independent_stages_overlap_and_the_results_keep_the_given_order() -> None:
    recorder = Recorder()
    items = [Scheduled(stage=stage, evaluate=recorder.stage(stage, hold=0.05 if index == 0 else 0.01))
             for index, stage in enumerate(STAGES[:4])]

    results = evaluate_stages(items, concurrency=4)

    assert [result.verdict.stage for result in results] == list(STAGES[:4])
    assert recorder.beside[STAGES[0]] == set(STAGES[1:4])  # the slow first one ran beside all the others
    first, second = _interval(results[0]), _interval(results[1])
    assert first[0] < second[1] and second[0] < first[1]  # the recorded times say so too
    assert {result.evidence[SCHEDULE_KEY]["concurrency"] for result in results} == {4}  # type: ignore[index]


def test_at_concurrency_1_nothing_runs_beside_anything() -> None:
    recorder = Recorder()
    results = evaluate_stages([Scheduled(stage=stage, evaluate=recorder.stage(stage)) for stage in STAGES[:3]],
                              concurrency=1)

    assert all(not beside for beside in recorder.beside.values())
    ends = [_interval(result) for result in results]
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(ends))


def test_scratch_stages_run_one_at_a_time_and_an_alone_stage_with_nothing_beside_it() -> None:
    recorder = Recorder()
    a, b, c, d, e = STAGES[:5]
    items = [Scheduled(stage=a, evaluate=recorder.stage(a), scratch=True),
             Scheduled(stage=b, evaluate=recorder.stage(b), scratch=True),
             Scheduled(stage=c, evaluate=recorder.stage(c, hold=0.05)),
             Scheduled(stage=d, evaluate=recorder.stage(d), alone=True),
             Scheduled(stage=e, evaluate=recorder.stage(e))]

    evaluate_stages(items, concurrency=4)

    assert b not in recorder.beside[a] and recorder.beside[d] == set()
    assert c in recorder.beside[a]  # positive control: a stage that writes nothing ran beside a scratch one
    assert recorder.order.index(e) < recorder.order.index(d)  # a later stage started while d waited


def test_a_stage_starts_after_what_it_waits_for_and_a_blocked_result_carries_no_schedule() -> None:
    recorder = Recorder()
    a, b, c = STAGES[:3]
    items = [Scheduled(stage=a, evaluate=recorder.stage(a, hold=0.05)),
             Scheduled(stage=b, evaluate=recorder.stage(b, outcome=StageOutcome.BLOCKED), after=frozenset({a})),
             Scheduled(stage=c, evaluate=recorder.stage(c))]

    results = evaluate_stages(items, concurrency=3)

    assert a not in recorder.beside[b] and recorder.order.index(a) < recorder.order.index(b)
    assert results[1].evidence == {}  # the ledger stores no evidence with a stage that did not run


def test_an_error_is_raised_after_the_running_stages_end_and_nothing_new_starts() -> None:
    recorder = Recorder()
    a, b, c = STAGES[:3]

    def broken() -> StageResult:
        raise RuntimeError("the evaluation broke")

    items = [Scheduled(stage=a, evaluate=recorder.stage(a, hold=0.05)), Scheduled(stage=b, evaluate=broken),
             Scheduled(stage=c, evaluate=recorder.stage(c), after=frozenset({b}))]

    with pytest.raises(RuntimeError, match="broke"):
        evaluate_stages(items, concurrency=2)
    assert recorder.running == set() and c not in recorder.order


def test_a_batch_that_cannot_be_ordered_is_refused() -> None:
    a, b = STAGES[:2]
    never = Recorder()
    with pytest.raises(ValueError, match="not in its batch"):
        evaluate_stages([Scheduled(stage=a, evaluate=never.stage(a), after=frozenset({b}))], concurrency=2)
    circle = [Scheduled(stage=a, evaluate=never.stage(a), after=frozenset({b})),
              Scheduled(stage=b, evaluate=never.stage(b), after=frozenset({a}))]
    for concurrency in (1, 2):
        with pytest.raises(ValueError, match="circle"):
            evaluate_stages(circle, concurrency=concurrency)
    assert never.order == []


class _Settings:
    def __init__(self, value: object) -> None:
        self.value = value

    def read_setting(self, key: str) -> tuple[dict[str, object], int] | None:
        return ({"value": self.value}, 1) if key == PIPELINE_CONCURRENCY.key else None


def test_the_setting_decides_and_an_unusable_value_runs_one_at_a_time() -> None:
    assert concurrency_of(None) == PIPELINE_CONCURRENCY.default
    assert concurrency_of(_Settings(4)) == 4
    assert concurrency_of(_Settings(9)) == 1 and concurrency_of(_Settings("4")) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.sets(st.integers(0, 5), max_size=2)), min_size=1,
                max_size=6), st.integers(1, 4))
def test_for_any_batch_the_rules_hold(shape: list[tuple[bool, bool, set[int]]], concurrency: int) -> None:
    recorder = Recorder()
    stages = STAGES[:len(shape)]
    items = [Scheduled(stage=stage, evaluate=recorder.stage(stage, hold=0.001), scratch=scratch, alone=alone,
                       after=frozenset(stages[index] for index in waits if index < position))
             for position, (stage, (scratch, alone, waits)) in enumerate(zip(stages, shape, strict=True))]

    results = evaluate_stages(items, concurrency=concurrency)

    assert [result.verdict.stage for result in results] == list(stages)
    assert recorder.peak <= concurrency
    for item in items:
        beside = recorder.beside[item.stage]
        assert not (item.alone and beside)
        assert not (item.scratch and any(other.scratch for other in items if other.stage in beside))
        assert all(recorder.order.index(first) < recorder.order.index(item.stage) for first in item.after)
        assert not beside & item.after
