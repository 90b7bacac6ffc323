"""Accept journaled, re-entrant and durable (issue 16 items 1 and 2), against real repositories, a real
SQLite file and — where the user's path matters — the real CLI:

* a lock another git process holds (``.git/index.lock``, ``refs/heads/main.lock``, the task branch's) is a
  typed refusal that names it, never "internal error"; the checkout is byte-identical, no lock of ours is
  left, and the retry after the lock goes away lands;
* a failure between the files and the index/ref leaves every path old or new; the accept itself, its
  retry or startup recovery finishes or rolls back, and an ``accept-resolved`` event says which;
* ``codeflux task accept`` killed with SIGKILL after its intent committed, and at the index rename (strace
  injects the SIGKILL there): after restart the recovery says what it did and the retry lands;
* strace shows the landing's fsyncs before the database commit that records it as landed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.coordinator.tasks.recovery import recover_interrupted
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import GitLockHeldError, GitOperationFailedError, LandingChangedSinceError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.gitwork import landing
from codeflux.gitwork.accept import accept_task_diff
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.landing import LandingFault
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.gitwork.worktrees import create_task_worktree
from codeflux.store import accept_landings as landing_rows
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.task_records import require_task_record
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import git, run_git, write_files
from tests.fixtures.reviews import Reviewable, a_task_awaiting_review
from tests.fixtures.tasks import a_repository

BIG = "".join(f"line {n}: the reviewed content of a file large enough to take several writes\n" for n in range(3000))
FIX = {"pkg/calc.py": "def add(a, b):\n    return a + b  # reviewed\n\n\ndef sub(a, b):\n    return a - b\n",
       "pkg/extra.py": "VALUE = 1\n", "docs/big.txt": BIG, "new/deep/file.txt": "deep\n"}


NEEDS_STRACE = pytest.mark.skipif(shutil.which("strace") is None,
                                  reason="strace is not installed (cmd/codeflux-dev setup installs it)")


class Killed(BaseException):
    """Raised by a fault hook: the process 'dies' there (no handler of the accept runs)."""


@pytest.fixture
def snapshot(tmp_path: Path) -> RepositorySnapshot:
    return a_repository(tmp_path / "git")


@pytest.fixture
def service(db: Database, tmp_path: Path) -> TaskService:
    return TaskService(db, worktrees_root=tmp_path / "worktrees")


@pytest.fixture
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landing, "LOCK_WAIT_SECONDS", 0.4)


def checkout_state(repo: Path) -> dict[str, object]:
    """Everything 'untouched' must leave as it was: HEAD, the user's refs, index bytes, every file, every lock
    and temporary file (codeflux's own task branch may hold the reviewed snapshot: a retry recognises it)."""
    files = {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    git_dir = repo / ".git"
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return {"HEAD": (git_dir / "HEAD").read_text(), "refs": [line for line in refs
                     if not line.startswith("refs/heads/codeflux/")],
            "index": (git_dir / "index").read_bytes(), "files": files,
            "locks": sorted(str(p.relative_to(git_dir)) for p in git_dir.rglob("*.lock")),
            "temps": sorted(str(p) for p in repo.rglob("*codeflux-*"))}


def assert_git_is_happy(repo: Path) -> None:
    assert git(repo, "status", "--porcelain") == ""
    assert run_git(repo, "fsck", "--no-progress").returncode == 0
    assert not list((repo / ".git").rglob("*.lock"))


def resolutions(db: Database, reviewable: Reviewable) -> list[tuple[object, object]]:
    session = db.read(lambda view: require_task_record(view, reviewable.task_id)).session_id
    events = db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=1000))
    return [(e.payload["resolution"], e.payload["by"]) for e in events if e.kind == "accept-resolved"]


def state_of(service: TaskService, reviewable: Reviewable) -> TaskState:
    return service.show(reviewable.task_id).task.state


def landed_fully(repo: Path, result_head: str) -> None:
    assert git(repo, "rev-parse", "HEAD").strip() == result_head
    assert (repo / "pkg/extra.py").read_text() == "VALUE = 1\n"
    assert (repo / "docs/big.txt").read_text() == BIG
    assert_git_is_happy(repo)


# ─── a lock another git process holds ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize("lock", [".git/index.lock", ".git/refs/heads/main.lock"])
@pytest.mark.usefixtures("short_wait")
def test_a_held_git_lock_is_a_typed_refusal_naming_it_with_the_checkout_untouched_then_the_retry_lands(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, lock: str
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    repo = snapshot.root
    (repo / lock).write_text("held by another git process\n")
    before = checkout_state(repo)

    with pytest.raises(GitLockHeldError) as refused:
        ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)

    assert refused.value.lock == lock and lock in str(refused.value) and "try again" in str(refused.value)
    assert exit_code_for(refused.value) is ExitCode.PREREQUISITE
    assert checkout_state(repo) == before  # byte-identical; only the other process's lock is there
    assert (repo / lock).read_text() == "held by another git process\n"  # never removed: not ours
    assert resolutions(db, reviewable) == [("rolled-back", "accept")]
    assert state_of(service, reviewable) is TaskState.AWAITING_REVIEW

    (repo / lock).unlink()  # the other process finished
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert result.change is not None and result.change.state is TaskState.COMPLETED
    landed_fully(repo, result.outcome.landed_head)


def test_a_lock_released_within_the_wait_is_waited_for_and_the_accept_lands(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    held = snapshot.root / ".git" / "index.lock"
    held.write_bytes(b"")
    releaser = threading.Timer(0.5, held.unlink)
    releaser.start()
    started = time.monotonic()
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    releaser.join()
    assert time.monotonic() - started >= 0.5  # it waited for the other process
    landed_fully(snapshot.root, result.outcome.landed_head)


@pytest.mark.usefixtures("short_wait")
def test_a_held_task_branch_lock_libgit2_reports_as_oserror_is_typed_not_internal(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)  # uncommitted: the accept moves the task branch
    lock = snapshot.root / ".git" / f"{reviewable.worktree.branch_ref}.lock"
    lock.write_text("held\n")
    before = checkout_state(snapshot.root)
    with pytest.raises(GitLockHeldError) as refused:
        ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert reviewable.worktree.branch_ref in str(refused.value)
    assert checkout_state(snapshot.root) == before
    lock.unlink()
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    landed_fully(snapshot.root, result.outcome.landed_head)


# ─── failures part-way: finished or rolled back, never half ────────────────────────────────────────


def failing_at(point: LandingFault, error: BaseException):
    def fault(reached: LandingFault) -> None:
        if reached is point:
            raise error

    return fault


def test_a_failure_after_the_files_is_rolled_back_by_the_accept_itself(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    before = checkout_state(snapshot.root)
    full = failing_at(LandingFault.FILES_WRITTEN, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(GitOperationFailedError) as failed:
        ReviewService(db, landing_fault=full).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert failed.value.problem == "disk-full" and "internal error" not in str(failed.value)
    assert checkout_state(snapshot.root) == before  # every file back, the index never replaced
    assert git(snapshot.root, "status", "--porcelain") == ""
    assert resolutions(db, reviewable) == [("rolled-back", "accept")]


@pytest.mark.parametrize(("point", "resolution"), [
    (LandingFault.PATH_WRITTEN, "rolled-back"), (LandingFault.FILES_WRITTEN, "rolled-back"),
    (LandingFault.INDEX_WRITTEN, "rolled-back"), (LandingFault.REF_MOVED, "finished"),
])
def test_a_landing_killed_part_way_is_resolved_by_startup_recovery_and_the_retry_ends_landed(  # noqa: PLR0917
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation,
    point: LandingFault, resolution: str,
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    repo = snapshot.root
    with pytest.raises(Killed):
        ReviewService(db, landing_fault=failing_at(point, Killed())).accept_task(
            reviewable.task_id, reviewed_identity=reviewable.identity)
    assert db.read(landing_rows.unfinished_landings)  # the intent says an accept was under way
    if point is not LandingFault.REF_MOVED:
        assert git(repo, "status", "--porcelain") != ""  # part-way: something of the landing is in the checkout

    found = recover_interrupted(db, data_location)

    assert found is not None and len(found.landings) == 1
    assert resolutions(db, reviewable) == [(resolution, "recovery")]
    assert not db.read(landing_rows.unfinished_landings)
    if resolution == "finished":
        assert "finished; the task is completed" in found.landings[0]
        assert state_of(service, reviewable) is TaskState.COMPLETED
        assert_git_is_happy(repo)
        return
    assert "rolled back" in found.landings[0]
    assert git(repo, "rev-parse", "HEAD").strip() == snapshot.head
    assert_git_is_happy(repo)
    assert not (repo / "pkg/extra.py").exists() and not (repo / "new").exists()
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert result.change is not None and result.change.state is TaskState.COMPLETED
    landed_fully(repo, result.outcome.landed_head)


def test_a_retry_after_a_kill_part_way_lands_without_blaming_the_user_for_codeflux_bytes(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    with pytest.raises(Killed):
        ReviewService(db, landing_fault=failing_at(LandingFault.INDEX_WRITTEN, Killed())).accept_task(
            reviewable.task_id, reviewed_identity=reviewable.identity)
    result = ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert result.change is not None and result.change.state is TaskState.COMPLETED
    assert resolutions(db, reviewable) == [("rolled-back", "retry")]
    landed_fully(snapshot.root, result.outcome.landed_head)


def test_a_path_the_user_edited_after_the_interruption_is_named_and_kept(
    db: Database, service: TaskService, snapshot: RepositorySnapshot
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    with pytest.raises(Killed):
        ReviewService(db, landing_fault=failing_at(LandingFault.FILES_WRITTEN, Killed())).accept_task(
            reviewable.task_id, reviewed_identity=reviewable.identity)
    (snapshot.root / "pkg/extra.py").write_text("VALUE = 2  # the user's own edit\n")
    with pytest.raises(LandingChangedSinceError) as refused:
        ReviewService(db).accept_task(reviewable.task_id, reviewed_identity=reviewable.identity)
    assert refused.value.paths == ("pkg/extra.py",) and "pkg/extra.py" in str(refused.value)
    assert "commit, stash" not in str(refused.value)
    assert (snapshot.root / "pkg/extra.py").read_text() == "VALUE = 2  # the user's own edit\n"  # kept
    assert db.read(landing_rows.unfinished_landings)  # still unfinished: nothing decided for the user


# ─── the real CLI killed with SIGKILL ──────────────────────────────────────────────────────────────


def codeflux_argv(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "codeflux", "--data-dir", str(data), *args]


def wait_until(condition, process: subprocess.Popen[str], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            said = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"never got there (exit {process.poll()}): {said}")
        time.sleep(0.05)


def test_the_cli_killed_after_its_intent_is_reported_by_recovery_and_the_retry_lands(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    repo = snapshot.root
    held = repo / ".git" / "index.lock"
    held.write_bytes(b"")  # the accept waits here: its intent is committed, nothing is touched
    before = checkout_state(repo)
    accept = subprocess.Popen(codeflux_argv(data_location.directory, "task", "accept", reviewable.task_id.value,
                                            "--identity", reviewable.identity),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(lambda: bool(db.read(landing_rows.unfinished_landings)), accept)
    finally:
        os.killpg(accept.pid, signal.SIGKILL)
        assert accept.wait(timeout=30) == -signal.SIGKILL  # the kill happened while the accept was under way
        if accept.stderr is not None:
            accept.stderr.close()
    held.unlink()
    assert checkout_state(repo) == before | {"locks": []}
    doctor = run_codeflux("doctor", "--json", data_dir=data_location.directory)
    accepts = next(c for c in json.loads(doctor.out)["checks"] if c["id"] == "accepts")
    assert accepts["status"] == "degraded" and str(reviewable.task_id) in str(accepts["summary"])

    shown = run_codeflux("task", "recovery", data_dir=data_location.directory)
    assert shown.code == 0, shown.err
    assert f"the interrupted accept of task {reviewable.task_id} on main was rolled back" in shown.err
    assert resolutions(db, reviewable) == [("rolled-back", "recovery")]

    retried = run_codeflux("task", "accept", reviewable.task_id.value, "--identity", reviewable.identity,
                           data_dir=data_location.directory)
    assert retried.code == 0, retried.err
    assert "accepted (fast-forward) on main" in retried.out
    landed_fully(repo, git(repo, "rev-parse", "main").strip())


# The accept of this fixture renames, in order: 1 the task branch, 2 the task worktree's index, 3-6 the four
# files (docs/big.txt, new/deep/file.txt, pkg/calc.py, pkg/extra.py), 7 the index, 8 the branch. strace kills
# the process at the Nth rename, before it happens.
_KILLED_AT = {4: "the second file", 7: "the index", 8: "the branch"}


@NEEDS_STRACE
@pytest.mark.parametrize("rename", sorted(_KILLED_AT))
def test_the_cli_killed_at_a_rename_of_the_landing_is_rolled_back_by_recovery_and_the_retry_lands(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation, rename: int
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    repo = snapshot.root
    killed = subprocess.run(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
         "-e", f"inject=rename,renameat,renameat2:signal=SIGKILL:when={rename}",
         *codeflux_argv(data_location.directory, "task", "accept", reviewable.task_id.value, "--identity",
                        reviewable.identity)],
        capture_output=True, text=True, timeout=120, check=False)
    assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), killed.stderr  # killed there, not done
    # positive controls: the kill happened at the rename of _KILLED_AT[rename]
    assert (repo / "docs/big.txt").read_text() == BIG
    assert (repo / "new/deep/file.txt").exists() is (rename > 4)
    assert bool(git(repo, "diff", "--cached", "--name-only").strip()) is (rename == 8)  # index replaced
    assert git(repo, "rev-parse", "HEAD").strip() == snapshot.head  # the branch never moved
    assert (repo / ".git" / "index.lock").exists()  # our stale (empty) lock, as a kill leaves it

    shown = run_codeflux("task", "recovery", data_dir=data_location.directory)
    assert f"the interrupted accept of task {reviewable.task_id} on main was rolled back" in shown.err, shown.err
    assert resolutions(db, reviewable) == [("rolled-back", "recovery")]
    assert_git_is_happy(repo)  # no stale lock, nothing staged, no file of the landing, no temporary file
    assert not (repo / "pkg/extra.py").exists() and not list(repo.rglob("*codeflux-*"))
    retried = run_codeflux("task", "accept", reviewable.task_id.value, "--identity", reviewable.identity,
                           data_dir=data_location.directory)
    assert retried.code == 0, retried.err
    landed_fully(repo, git(repo, "rev-parse", "main").strip())


# ─── durable: the landing's fsyncs precede the database commit ─────────────────────────────────────


@NEEDS_STRACE
def test_the_landing_is_fsynced_before_the_database_records_it_landed(
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation, tmp_path: Path
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    trace = tmp_path / "accept.strace"
    accepted = subprocess.run(
        ["strace", "-f", "-qq", "-y", "-s", "0", "-o", str(trace), "-e",
         "trace=fsync,fdatasync,rename,renameat,renameat2,pwrite64,write",
         *codeflux_argv(data_location.directory, "task", "accept", reviewable.task_id.value, "--identity",
                        reviewable.identity)],
        capture_output=True, text=True, timeout=120, check=False)
    assert accepted.returncode == 0, accepted.stderr
    lines = trace.read_text().splitlines()
    ref = str(snapshot.root / ".git" / "refs" / "heads" / "main")
    ref_rename = next(n for n, line in enumerate(lines) if "rename" in line and f'"{ref}"' in line)
    wal_writes = [n for n, line in enumerate(lines) if "codeflux.sqlite3-wal>" in line and "pwrite64" in line]
    db_commit = next(n for n in wal_writes if n > ref_rename)  # the transaction recording the landing
    fsyncs = [line for line in lines[:db_commit] if re.search(r"\bf(data)?sync\(", line)]

    def fsynced(fragment: str) -> bool:
        return any(fragment in line for line in fsyncs)

    assert fsynced("/pkg/.extra.py.codeflux-") and fsynced("/docs/.big.txt.codeflux-")  # every file before rename
    assert fsynced("/.git/codeflux-landing-") and fsynced(".index>")  # the new index
    assert fsynced(".ref>")  # the branch's new target
    assert fsynced("/.git/logs/HEAD>") and fsynced("/.git/logs/refs/heads/main>")
    assert fsynced("/.git/objects/")  # libgit2's fsync: the snapshot commit's objects
    assert fsynced(f"{snapshot.root}/pkg>") and fsynced(f"{snapshot.root}/.git/refs/heads>")  # the folders
    completed = db.read(lambda view: require_task_record(view, reviewable.task_id)).state
    assert completed is TaskState.COMPLETED


# ─── a linked worktree as the user's checkout ──────────────────────────────────────────────────────


@pytest.mark.usefixtures("short_wait")
def test_a_linked_worktree_checkout_lands_under_its_own_index_lock_and_the_common_ref_lock(
    snapshot: RepositorySnapshot, tmp_path: Path
) -> None:
    repo = snapshot.root
    side = tmp_path / "side"
    git(repo, "worktree", "add", "-q", str(side), "-b", "side")
    main_index = (repo / ".git" / "index").read_bytes()
    assert snapshot.head is not None
    task = create_task_worktree(repo, worktrees_root=tmp_path / "worktrees", repo_key="repo1",
                                task_id=TaskId.parse("tsk_0123456789abcdef"), base_commit=snapshot.head)
    write_files(task.path, FIX)
    assert (side / ".git").read_text().startswith("gitdir:")  # a linked worktree: its git dir is .git/worktrees/side
    side_git_dir = repo / ".git" / "worktrees" / "side"
    (side_git_dir / "index.lock").write_text("held\n")  # the side checkout's own index lock

    with pytest.raises(GitLockHeldError) as refused:
        accept_task_diff(side, task, reviewed_identity=diff_against_base(task).identity)
    assert "worktrees/side/index.lock" in refused.value.lock
    (side_git_dir / "index.lock").unlink()

    outcome = accept_task_diff(side, task, reviewed_identity=diff_against_base(task).identity)
    assert git(side, "rev-parse", "side").strip() == outcome.landed_head
    assert git(repo, "rev-parse", "main").strip() == snapshot.head  # the main checkout's branch did not move
    assert (repo / ".git" / "index").read_bytes() == main_index  # nor its index
    assert (side / "pkg/extra.py").read_text() == "VALUE = 1\n"
    assert git(side, "status", "--porcelain") == "" and git(repo, "status", "--porcelain") == ""
    assert "side" in git(side, "reflog", "-1", "side")
    assert run_git(repo, "fsck", "--no-progress").returncode == 0
    assert not list((repo / ".git").rglob("*.lock"))


# ─── a later command says what an earlier command's recovery resolved ─────────────────────────────


@pytest.mark.parametrize(("point", "said"), [
    (LandingFault.FILES_WRITTEN, "rolled back by startup recovery: main stays at {previous}, the checkout as before "
                                 "(why: codeflux stopped during the accept)"),
    (LandingFault.REF_MOVED, "finished by startup recovery: landed on main at {landed} (why: codeflux stopped after "
                             "the branch moved: the accept was complete)"),
])
def test_a_later_task_recovery_lists_the_landing_an_earlier_commands_recovery_resolved(  # noqa: PLR0917
    db: Database, service: TaskService, snapshot: RepositorySnapshot, data_location: DataLocation,
    point: LandingFault, said: str,
) -> None:
    reviewable = a_task_awaiting_review(service, snapshot, FIX)
    with pytest.raises(Killed):
        ReviewService(db, landing_fault=failing_at(point, Killed())).accept_task(
            reviewable.task_id, reviewed_identity=reviewable.identity)
    [landing] = db.read(landing_rows.unfinished_landings)
    assert landing.task_id == reviewable.task_id  # the kill happened at the durable step, the intent unfinished

    first = run_codeflux("task", "list", data_dir=data_location.directory)  # its startup recovery resolves it
    assert first.code == 0, first.err
    assert f"the interrupted accept of task {reviewable.task_id}" in first.err
    assert not db.read(landing_rows.unfinished_landings)

    later = run_codeflux("task", "recovery", data_dir=data_location.directory)  # a separate invocation

    assert later.code == 0, later.err
    line = said.format(previous=landing.previous_head[:12], landed=landing.landed_head[:12])
    assert "interrupted accept" not in later.err  # nothing was left for this command's recovery to do
    lines = later.out.splitlines()
    assert "landings recovery resolved (interrupted accepts, most recent first)" in lines, later.out
    [listed] = [text for text in lines if f"task {reviewable.task_id}" in text]
    assert re.fullmatch(rf"  \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC  task {reviewable.task_id}  {re.escape(line)}",
                        listed), later.out
    shown = run_codeflux("task", "show", reviewable.task_id.value, data_dir=data_location.directory)
    assert shown.code == 0, shown.err
    assert "  landings recovery resolved (interrupted accepts, most recent first)" in shown.out.splitlines()
    assert line in shown.out, shown.out
