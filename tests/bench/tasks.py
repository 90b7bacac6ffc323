"""Benchmark: task start and diff identity, each against the git CLI on the same repository in the same run.

Run with `cmd/codeflux-dev bench tasks`.

* **task start** — ``TaskService.start_run`` (CAS, limits, run attempt, events), the task worktree
  (``create_task_worktree``, pygit2) and the plan-approved checkpoint (private ref + row), i.e. what
  ``run_task`` does before the first model turn; versus ``git worktree add -b BRANCH PATH BASE`` of the
  same repository (REPO_FILES files). Both sides are interleaved; the worktrees are removed between samples.
* **diff identity** — ``diff_against_base`` (verify, capture the working tree including untracked files,
  render the unified diff, sha256) of a worktree where CHANGED_FILES tracked files were modified, versus
  ``git diff BASE`` (CLI, tracked files only, so the baseline does strictly less work).

Prints p50/p99 per side and the ratio of medians (codeflux / git). Nothing is asserted on time: the
figures go to docs/benchmarks.md under ``## bench tasks``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

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
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

REPO_FILES = int(os.environ.get("CODEFLUX_BENCH_REPO_FILES", "500"))
CHANGED_FILES = 1000
STARTS = int(os.environ.get("CODEFLUX_BENCH_STARTS", "20"))
DIFFS = int(os.environ.get("CODEFLUX_BENCH_DIFFS", "10"))
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


def _report(name: str, ours: list[float], theirs: list[float]) -> None:
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"{name}: codeflux p50 {1000 * _percentile(ours, 0.5):.1f} ms p99 {1000 * _percentile(ours, 0.99):.1f} ms"
          f" | git p50 {1000 * _percentile(theirs, 0.5):.1f} ms p99 {1000 * _percentile(theirs, 0.99):.1f} ms"
          f" | ratio (codeflux/git, medians) {ratio:.2f}x  [n={len(ours)}]")


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
