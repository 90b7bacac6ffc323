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


def _settled(baseline: tuple[int, int, list[int]], *, timeout_s: float = 10.0) -> tuple[int, int, list[int]]:
    """The counts once they stop moving (threads and children end a moment after the task)."""
    deadline = time.monotonic() + timeout_s
    now = _counts()
    while now != baseline and time.monotonic() < deadline:
        time.sleep(0.05)
        now = _counts()
    return now


def test_a_whole_task_returns_descriptors_threads_and_children_to_their_baseline(db: Database,
                                                                                  tmp_path: Path) -> None:
    _one_task(db, tmp_path / "warm-up")
    baseline = _settled(_counts(), timeout_s=1.0)

    _one_task(db, tmp_path / "measured")

    fds, threads, children = _settled(baseline)
    assert (fds, threads, children) == baseline, (
        f"after a task: {fds} fds (baseline {baseline[0]}), {threads} threads ({baseline[1]}), "
        f"children {children} ({baseline[2]})")
