"""apply_patch cannot be raced into writing outside the worktree.

A thread swaps a worktree directory and a symlink to an outside directory with
``renameat2(RENAME_EXCHANGE)`` in a tight loop, so every path below that directory alternates between
the real directory and the outside one, atomically, while a real worker applies patches that edit,
create, delete and rename files there. The outside directory holds the same names and contents, so a
write that followed the symlink would apply cleanly — and be seen: afterwards every outside entry must
have the same inode, bytes and mtime, and no entry may be added.

The probe is shown to be live in the same test: the swap loop is seen alternating, some patches fail
because they met the symlink, and plain ``git apply`` (how codeflux applied patches before) under the
same loop does create, replace or delete files outside.
"""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionState
from codeflux.worker.client.handle import WorkerHandle
from tests.fixtures.workers import execution_of, running_worker
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree

pytestmark = pytest.mark.security

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
RACE_SECONDS = 4.0
TWIN_SECONDS = 20.0

FILES = {"f.txt": b"A\n", "doomed.txt": b"doomed\n", "r1.txt": b"r\n"}
PATCHES = [
    "--- a/d/f.txt\n+++ b/d/f.txt\n@@ -1 +1 @@\n-A\n+B\n",
    "--- a/d/f.txt\n+++ b/d/f.txt\n@@ -1 +1 @@\n-B\n+A\n",
    "--- /dev/null\n+++ b/d/new.txt\n@@ -0,0 +1 @@\n+new\n",
    "--- a/d/new.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-new\n",
    "--- a/d/doomed.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-doomed\n",
    "--- /dev/null\n+++ b/d/doomed.txt\n@@ -0,0 +1 @@\n+doomed\n",
    "diff --git a/d/r1.txt b/d/r2.txt\nrename from d/r1.txt\nrename to d/r2.txt\n",
    "diff --git a/d/r2.txt b/d/r1.txt\nrename from d/r2.txt\nrename to d/r1.txt\n",
    "--- /dev/null\n+++ b/d/sub/x.txt\n@@ -0,0 +1 @@\n+x\n",
    "--- a/d/sub/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
]


class SwapLoop:
    """Exchanges two names with renameat2(RENAME_EXCHANGE) until stopped; counts the exchanges."""

    def __init__(self, first: Path, second: Path) -> None:
        self._names = (os.fsencode(first), os.fsencode(second))
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._stop = threading.Event()
        self.swaps = 0
        self.errors: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        first, second = self._names
        while not self._stop.is_set():
            if self._libc.renameat2(_AT_FDCWD, first, _AT_FDCWD, second, _RENAME_EXCHANGE) == 0:
                self.swaps += 1
            else:
                self.errors.append(ctypes.get_errno())
                return

    @contextmanager
    def running(self) -> Iterator[SwapLoop]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=10)


def snapshot(directory: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry below ``directory``: inode, mtime and bytes (a replacement changes the inode)."""
    found = {}
    for path in sorted(directory.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(directory))] = (info.st_ino, info.st_mtime_ns,
                                                   path.read_bytes() if path.is_file() else b"")
    return found


def plant(worktree: Path, outside: Path, *, real: str, link: str) -> None:
    """``worktree/real`` a directory and ``outside`` a directory, both holding FILES; ``worktree/link`` → outside."""
    for directory in (worktree / real, outside):
        directory.mkdir()
        for name, data in FILES.items():
            (directory / name).write_bytes(data)
    (worktree / link).symlink_to(outside)


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


@pytest.fixture
def worker(task: TaskWorktree, tmp_path: Path) -> Iterator[WorkerHandle]:
    with running_worker(task.worktree, tmp_path / "state") as handle:
        yield handle


def test_apply_patch_under_a_directory_symlink_swap_never_touches_the_outside(worker: WorkerHandle,
                                                                              task: TaskWorktree,
                                                                              tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    plant(task.worktree, outside, real="d", link="s")
    before = snapshot(outside)
    outcomes: dict[str, int] = {}
    seen_as_link: set[bool] = set()
    calls = 0
    with SwapLoop(task.worktree / "d", task.worktree / "s").running() as loop:
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline or calls < 200:
            for patch in PATCHES:
                seen_as_link.add((task.worktree / "d").is_symlink())
                outcome = worker.execute(execution_of("apply_patch", {"patch": patch}))
                key = "succeeded" if outcome.state is ExecutionState.SUCCEEDED else str(outcome.failure_kind)
                if "a parent directory is a symbolic link" in outcome.message:
                    key = "refused while opening"  # passed the resolver, then met the swap
                outcomes[key] = outcomes.get(key, 0) + 1
                calls += 1
    assert snapshot(outside) == before, f"outcomes: {outcomes}"
    # The probe was live: the loop alternated, some patches got through, and some passed the path check
    # only to meet the symlink while their directories were being opened.
    assert loop.errors == [] and loop.swaps > 1000, (loop.swaps, loop.errors)
    assert seen_as_link == {True, False}
    assert outcomes.get("succeeded", 0) > 0, outcomes
    assert outcomes.get("refused while opening", 0) > 0, outcomes


def test_plain_git_apply_under_the_same_swap_does_write_outside(task: TaskWorktree, tmp_path: Path) -> None:
    """The unconfined twin: what the race does to a tool that checks paths and then writes by path."""
    outside = tmp_path / "twin-outside"
    plant(task.worktree, outside, real="t", link="u")
    before = snapshot(outside)
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LC_ALL": "C",
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    patches = [patch.replace("/d/", "/t/").encode() for patch in PATCHES]
    with SwapLoop(task.worktree / "t", task.worktree / "u").running() as loop:
        deadline = time.monotonic() + TWIN_SECONDS
        while snapshot(outside) == before and time.monotonic() < deadline:
            for patch in patches:
                subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "apply", "-"], input=patch,
                               cwd=task.worktree, env=environment, capture_output=True, check=False, timeout=30)
    assert loop.swaps > 0
    assert snapshot(outside) != before, "plain git apply was expected to escape under the swap"


def test_renameat2_exchange_is_available_here(tmp_path: Path) -> None:
    """Without RENAME_EXCHANGE the race above would test nothing; say so plainly."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").symlink_to(tmp_path / "a")
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.renameat2(_AT_FDCWD, os.fsencode(tmp_path / "a"), _AT_FDCWD, os.fsencode(tmp_path / "b"),
                            _RENAME_EXCHANGE)
    assert result == 0, errno.errorcode.get(ctypes.get_errno(), "error")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_dir()
