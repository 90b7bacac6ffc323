"""Phases B–D at concurrency 1 and 4 (issue 18): the independent stages overlap — read from the start and end times
each records — two scratch-writing stages never do, and the verdicts, obligations and evidence are the same (the
evidence bounded by a time budget or a fresh seed excluded). Real worker, real coverage run, stubs and mutants in
scratch copies, two real databases."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.pipeline import StageName
from codeflux.pipeline.concurrency import SCHEDULE_KEY
from codeflux.pipeline.phase_b import ATOM_STAGES, record_atom_stages
from codeflux.pipeline.phase_cd import PHASE_CD
from codeflux.pipeline.runner import record_specification
from codeflux.pipeline.thresholds import PIPELINE_CONCURRENCY, set_threshold
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.stage_ledger import LedgerRow
from tests.fixtures.pipeline_tasks import SOURCE, keep_overlay
from tests.fixtures.task_runs import make_harness
from tests.integration.test_control_flow import ALL_PATHS, CALC, prepared

SCRATCH = frozenset(stage.stage for stage in ATOM_STAGES + PHASE_CD if stage.scratch)

# what a fresh seed or a time budget decides (which orders stage 11 drew, how many examples the fuzzer reached) and
# the ids of the requests that ran the commands; any duration (a key ending in seconds, _ms or _us) too
VARIABLE = frozenset({SCHEDULE_KEY, "pid", "seeds", "runs", "orders", "examples_run", "timings", "growth",
                      "request_id", "request_ids"})
HEX = re.compile(r"[0-9a-f]{16,}")  # a digest of the run's own repository: its diff identity, its overlay's key
TIME_BUDGETED = frozenset({StageName.ATOM_VERIFICATION, StageName.ATOM_FUZZ, StageName.ATOM_COMPLEXITY})


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@contextmanager
def _phase_at(root: Path, overlay_cache: Path, concurrency: int) -> Iterator[tuple[list[LedgerRow], list[object]]]:
    db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
    try:
        with ToolDriver(db, state_dir=root / "state", tool_source=SOURCE, base_environment={}) as driver:
            harness = make_harness(db, root, driver)
            set_threshold(db, PIPELINE_CONCURRENCY, concurrency, expected_revision=None)
            facts = prepared(harness, overlay_cache, CALC, ALL_PATHS)
            keep_overlay(harness, overlay_cache)
            task_id = facts.ports.facts.task_id
            assert record_specification(task_id, 1, ports=facts.ports) is None
            record_atom_stages(facts.ports, 1, facts.assembly, ATOM_STAGES + PHASE_CD, facts=facts)
            rows = [row for row in harness.tasks.ledger(task_id, 1)
                    if row.verdict.stage in {stage.stage for stage in ATOM_STAGES + PHASE_CD}]
            obligations = [(item.kind, item.subject, item.state, item.discharged_by)
                           for item in harness.tasks.obligations(task_id, 1)]
            yield rows, obligations
    finally:
        db.close()


def _interval(row: LedgerRow) -> tuple[int, int] | None:
    schedule = row.evidence.get(SCHEDULE_KEY)
    if not isinstance(schedule, Mapping):
        return None
    return int(str(schedule["started_us"])), int(str(schedule["ended_us"]))


def _overlapping(rows: list[LedgerRow]) -> set[frozenset[StageName]]:
    timed = [(row.verdict.stage, interval) for row in rows if (interval := _interval(row)) is not None]
    return {frozenset({first, second}) for index, (first, (start, end)) in enumerate(timed)
            for second, (other_start, other_end) in timed[index + 1:] if start < other_end and other_start < end}


def _steady(value: object, root: Path) -> object:
    """``value`` without what may differ between the two runs: the keys above, and the run's folder in a text."""
    if isinstance(value, Mapping):
        return {key: _steady(item, root) for key, item in value.items()
                if key not in VARIABLE and not str(key).endswith(("seconds", "_ms", "_us"))}
    if isinstance(value, list):
        return [_steady(item, root) for item in value]
    return HEX.sub("<hex>", value.replace(str(root), "<root>")) if isinstance(value, str) else value


def test_the_same_verdicts_at_concurrency_1_and_4_and_the_stages_overlap_only_at_4(
        tmp_path: Path, overlay_cache: Path) -> None:
    with _phase_at(tmp_path / "one", overlay_cache, 1) as (serial, serial_obligations), \
            _phase_at(tmp_path / "four", overlay_cache, 4) as (parallel, parallel_obligations):
        pass

    assert [row.verdict.outcome for row in parallel] == [row.verdict.outcome for row in serial]
    assert parallel_obligations == serial_obligations and serial_obligations
    for one, four in zip(serial, parallel, strict=True):
        if one.verdict.stage in TIME_BUDGETED:
            continue
        said = [one.verdict.reason, one.verdict.gate_evaluation]
        assert _steady([four.verdict.reason, four.verdict.gate_evaluation], tmp_path / "four") == _steady(
            said, tmp_path / "one"), one.verdict.stage
        assert _steady(four.evidence, tmp_path / "four") == _steady(one.evidence, tmp_path / "one"), one.verdict.stage
    assert all(_interval(row) for row in serial if row.evidence)  # every stage that ran says when
    assert _overlapping(serial) == set()  # positive control: one after another, nothing beside anything
    overlapped = _overlapping(parallel)
    assert overlapped, "at concurrency 4 no two stages ran at the same time"
    assert not [pair for pair in overlapped if pair <= SCRATCH], "two scratch-writing stages ran side by side"
    assert {row.evidence[SCHEDULE_KEY]["concurrency"] for row in parallel if row.evidence} == {4}  # type: ignore[index]
