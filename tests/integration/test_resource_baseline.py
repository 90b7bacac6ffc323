"""A whole task leaves nothing behind in the coordinator: after it, open file descriptors, threads and
child processes are back to their counts before it. Threads are compared after one warm-up task, so
pools a library starts once per process (gRPC's) belong to the baseline; a second task must add nothing."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.store.database import Database
from tests.fixtures.task_runs import make_harness, run_to_review

pytestmark = pytest.mark.slow


def _children() -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry.name))
    return found


def _counts() -> tuple[int, int, list[int]]:
    return len(os.listdir("/proc/self/fd")), threading.active_count(), _children()


def _one_task(db: Database, root: Path) -> None:
    with ToolDriver(db, state_dir=root / "workers") as driver:
        run_to_review(make_harness(db, root, driver))


def _within(now: tuple[int, int, list[int]], baseline: tuple[int, int, list[int]]) -> bool:
    """Nothing more than the baseline (something of an earlier test may end meanwhile, never start)."""
    return now[0] <= baseline[0] and now[1] <= baseline[1] and set(now[2]) <= set(baseline[2])


def _settled(baseline: tuple[int, int, list[int]], *, timeout_s: float = 10.0) -> tuple[int, int, list[int]]:
    """The counts once they are back within the baseline (threads and children end a moment after the task),
    or as they are at the deadline."""
    deadline = time.monotonic() + timeout_s
    now = _counts()
    while not _within(now, baseline) and time.monotonic() < deadline:
        time.sleep(0.05)
        now = _counts()
    return now


def test_a_whole_task_returns_descriptors_threads_and_children_to_their_baseline(db: Database,
                                                                                  tmp_path: Path) -> None:
    _one_task(db, tmp_path / "warm-up")
    time.sleep(0.5)  # what the warm-up task started winds down
    baseline = _counts()

    _one_task(db, tmp_path / "measured")

    fds, threads, children = _settled(baseline)
    assert _within((fds, threads, children), baseline), (
        f"after a task: {fds} fds (baseline {baseline[0]}), {threads} threads ({baseline[1]}), "
        f"children {children} ({baseline[2]})")
