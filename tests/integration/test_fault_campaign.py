"""The fault campaign (issue 16 item 7): the landing of an accept and the cleanup after it, killed at every
durable step, in fast-forward and merge modes, through the CLI and through ``codeflux start``.

The review-state fixture (a data directory, a repository, the task's worktree) is built once per mode under a
fixed path and restored by copy to that same path for each case, so every absolute path git and the database
recorded stays valid. Each case kills the accepting process with SIGKILL at a named step — strace injects the
signal at the Nth rename of the thread that lands (found by a calibration run of an accept that is not killed)
or at the first ``openat``/``unlink``/``rmdir`` of a named path (``-P``) — asserts the kill happened there (the
state the step leaves: a positive control), restarts (``task recovery`` or a new ``codeflux start``), retries the
accept once when the task still awaits review, and then asserts the end state: the user's checkout fully landed
(or untouched), no lock, no temporary file, ``git fsck`` clean, ``integrity-check`` ok, and an event naming what
happened (``accept-resolved`` with its resolution, ``task-accepted``). The product's own fault-injection points
(:class:`~codeflux.gitwork.landing.LandingFault`) are covered in process at the end, with the same end checks.

The table of kill point → final state is in ``docs/storage.md`` ("Fault campaign").
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pytest

from codeflux.coordinator.tasks.recovery import recover_interrupted
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.landing import LandingFault
from codeflux.gitwork.worktrees import removal_directory
from codeflux.store import accept_landings as landing_rows
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.task_records import require_task_record
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import commit_all, git, run_git, write_files
from tests.fixtures.reviews import Reviewable, a_task_awaiting_review
from tests.fixtures.tasks import a_repository

BIG = "".join(f"line {n}: reviewed content large enough to take several writes\n" for n in range(3000))
FIX = {"pkg/calc.py": "def add(a, b):\n    return a + b  # reviewed\n\n\ndef sub(a, b):\n    return a - b\n",
       "pkg/extra.py": "VALUE = 1\n", "docs/big.txt": BIG, "new/deep/file.txt": "deep\n"}
MEANWHILE = {"docs.md": "written meanwhile by the user\n"}  # merge mode: the branch moved on after the task began
RENAMES = "rename,renameat,renameat2"

pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (codeflux-dev setup does)"),
]


class Mode(StrEnum):
    FAST_FORWARD = "fast-forward"
    MERGE = "merge"


class Channel(StrEnum):
    CLI = "cli"
    START = "start"


class Point(StrEnum):
    """Where the accepting process is killed, in the order the landing reaches them."""

    INTENT = "intent"  # the intent committed; creating index.lock (nothing of the checkout touched)
    TASK_BRANCH = "task-branch"  # locks held; renaming the task branch to the snapshot commit
    FIRST_FILE = "first-file"  # renaming the first file into place
    LAST_FILE = "last-file"  # renaming the last file into place (every other file new)
    INDEX = "index"  # renaming the new index into place (every file new)
    BRANCH = "branch"  # renaming the branch's new target over the loose ref (files and index new)
    RELEASE = "release"  # releasing index.lock: landed on disk, not yet recorded in the database
    CLEANUP_WORKTREE = "cleanup-worktree"  # recorded landed; renaming the worktree folder aside to delete it
    CLEANUP_DELETING = "cleanup-deleting"  # the folder renamed aside and emptied; removing it
    CLEANUP_BRANCH = "cleanup-branch"  # recorded landed, worktree removed; locking the task branch to delete it


ROLLED_BACK = (Point.INTENT, Point.TASK_BRANCH, Point.FIRST_FILE, Point.LAST_FILE, Point.INDEX, Point.BRANCH)
CLEANUP = (Point.CLEANUP_WORKTREE, Point.CLEANUP_DELETING, Point.CLEANUP_BRANCH)


@dataclass(frozen=True)
class Fixture:
    """A review-state case: restore() puts the built template back at ``root`` (the same absolute path)."""

    mode: Mode
    root: Path
    template: Path
    reviewable: Reviewable

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def repo(self) -> Path:
        return self.root / "git" / "repo"

    @property
    def template_repo(self) -> Path:
        return self.template / "git" / "repo"

    def restore(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root, symlinks=True)

    @property
    def task(self) -> str:
        return self.reviewable.task_id.value


def build_fixture(root: Path, mode: Mode) -> Fixture:
    """A task awaiting review with FIX uncommitted in its worktree (merge mode: the user committed meanwhile)."""
    root.mkdir(parents=True)
    db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
    try:
        service = TaskService(db, worktrees_root=root / "worktrees")
        snapshot = a_repository(root / "git")
        if snapshot.root != root / "git" / "repo":
            raise AssertionError(f"a_repository made {snapshot.root}")
        reviewable = a_task_awaiting_review(service, snapshot, FIX)
    finally:
        db.close()
    if mode is Mode.MERGE:
        write_files(snapshot.root, MEANWHILE)
        commit_all(snapshot.root, "the user moved on")
    template = root.with_name(root.name + "-template")
    shutil.copytree(root, template, symlinks=True)
    return Fixture(mode=mode, root=root, template=template, reviewable=reviewable)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[Mode, Fixture]:
    base = tmp_path_factory.mktemp("campaign")
    return {mode: build_fixture(base / mode.value, mode) for mode in Mode}


# ─── processes ────────────────────────────────────────────────────────────────────────────────────


def codeflux_argv(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "codeflux", "--data-dir", str(data), *args]


def accept_argv(fx: Fixture) -> list[str]:
    return codeflux_argv(fx.data, "task", "accept", fx.task, "--identity", fx.reviewable.identity)


@dataclass
class Coordinator:
    process: subprocess.Popen[str]

    def stop(self) -> str:
        """SIGTERM, wait; returns what it said on stderr (startup recovery's lines are there)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=90)
        return err


def start_coordinator(data: Path) -> Coordinator:
    process = subprocess.Popen(
        codeflux_argv(data, "start", "--no-browser", "--address", "127.0.0.1:0"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "BROWSER": "false"}, start_new_session=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("open: "):
            return Coordinator(process)
    process.kill()
    _, err = process.communicate(timeout=30)
    raise AssertionError(f"codeflux start never served: {err}")


def traced_by(pid: int) -> bool:
    """Every thread of ``pid`` has a tracer (strace attached to all of them)."""
    tasks = list(Path(f"/proc/{pid}/task").iterdir())
    return bool(tasks) and all(
        re.search(r"^TracerPid:\s+[1-9]", (task / "status").read_text(), re.MULTILINE) for task in tasks)


def attach_strace(pid: int, options: list[str]) -> subprocess.Popen[bytes]:
    tracer = subprocess.Popen(["strace", "-f", "-qq", *options, "-p", str(pid)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not traced_by(pid):
        if time.monotonic() > deadline or tracer.poll() is not None:
            raise AssertionError("strace never attached to the coordinator")
        time.sleep(0.05)
    return tracer


# ─── calibration: which rename of the landing thread is which step ────────────────────────────────

_RENAME = re.compile(r'^(\d+)\s+rename(?:at2?)?\((?:AT_FDCWD, )?"([^"]+)", (?:AT_FDCWD, )?"([^"]+)"')


def landing_renames(trace: Path, fx: Fixture) -> list[str]:
    """The rename targets of the thread that renamed the checkout's index, in order."""
    by_thread: dict[str, list[str]] = {}
    for line in trace.read_text().splitlines():
        found = _RENAME.match(line)
        if found:
            by_thread.setdefault(found.group(1), []).append(found.group(3))
    index = str(fx.repo / ".git" / "index")
    return next(targets for targets in by_thread.values() if index in targets)


def calibrate(fx: Fixture, channel: Channel, trace: Path) -> list[str]:
    """Run one accept that is not killed under strace and return the landing thread's rename targets."""
    fx.restore()
    options = ["-o", str(trace), "-e", f"trace={RENAMES}"]
    if channel is Channel.CLI:
        done = subprocess.run(["strace", "-f", "-qq", *options, *accept_argv(fx)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    else:
        coordinator = start_coordinator(fx.data)
        tracer = attach_strace(coordinator.process.pid, options)
        try:
            done_run = run_codeflux("task", "accept", fx.task, "--identity", fx.reviewable.identity,
                                    data_dir=fx.data)
            assert done_run.code == 0, done_run.err
        finally:
            coordinator.stop()
            tracer.wait(timeout=30)
    return landing_renames(trace, fx)


@pytest.fixture(scope="module")
def calibrations(fixtures: dict[Mode, Fixture], tmp_path_factory: pytest.TempPathFactory
                 ) -> Callable[[Mode, Channel], list[str]]:
    found: dict[tuple[Mode, Channel], list[str]] = {}
    traces = tmp_path_factory.mktemp("traces")

    def of(mode: Mode, channel: Channel) -> list[str]:
        if (mode, channel) not in found:
            found[mode, channel] = calibrate(fixtures[mode], channel, traces / f"{mode}-{channel}.strace")
        return found[mode, channel]

    return of


def kill_options(fx: Fixture, point: Point, renames: list[str]) -> list[str]:
    """strace options that SIGKILL the accepting process at ``point``."""
    git_dir = fx.repo / ".git"
    files = [t for t in renames if t.startswith(f"{fx.repo}/") and not t.startswith(f"{git_dir}/")]
    task_branch = str(git_dir / fx.reviewable.worktree.branch_ref)
    by_rename = {Point.TASK_BRANCH: task_branch, Point.FIRST_FILE: files[0], Point.LAST_FILE: files[-1],
                 Point.INDEX: str(git_dir / "index"), Point.BRANCH: str(git_dir / "refs" / "heads" / "main")}
    if point in by_rename:
        nth = renames.index(by_rename[point]) + 1
        return ["-e", f"trace={RENAMES}", "-e", f"inject={RENAMES}:signal=SIGKILL:when={nth}"]
    by_path = {Point.INTENT: ("openat", git_dir / "index.lock"),
               Point.RELEASE: ("unlink,unlinkat", git_dir / "index.lock"),
               Point.CLEANUP_WORKTREE: ("rename,renameat,renameat2", fx.reviewable.worktree.path),
               Point.CLEANUP_DELETING: ("rmdir,unlinkat", removal_directory(fx.reviewable.worktree)),
               Point.CLEANUP_BRANCH: ("openat", Path(task_branch + ".lock"))}
    calls, path = by_path[point]
    nth = 2 if point is Point.CLEANUP_BRANCH else 1  # the task branch's lock is first taken to move it (snapshot)
    return ["-P", str(path), "-e", f"trace={calls}", "-e", f"inject={calls}:signal=SIGKILL:when={nth}"]


def killed_accept(fx: Fixture, channel: Channel, options: list[str]) -> None:
    """The accept, killed by strace; asserts the accepting process died of SIGKILL (not a normal end)."""
    if channel is Channel.CLI:
        done = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", *options, *accept_argv(fx)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), done.stderr
        return
    coordinator = start_coordinator(fx.data)
    tracer = attach_strace(coordinator.process.pid, ["-o", "/dev/null", *options])
    try:
        refused = run_codeflux("task", "accept", fx.task, "--identity", fx.reviewable.identity, data_dir=fx.data)
        assert refused.code != 0  # the coordinator died under the call
        assert coordinator.process.wait(timeout=60) == -signal.SIGKILL
    finally:
        if coordinator.process.poll() is None:
            coordinator.process.kill()
        coordinator.process.communicate(timeout=30)
        tracer.wait(timeout=30)
        with_children_gone(coordinator.process.pid)


def with_children_gone(session: int) -> None:
    """Processes the killed coordinator started (its workers) are ended: they belong to its session."""
    try:
        os.killpg(session, signal.SIGKILL)
    except ProcessLookupError:
        return


# ─── what the state is ───────────────────────────────────────────────────────────────────────────


def files_of(repo: Path) -> dict[str, str]:
    return {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}


def new_paths(fx: Fixture) -> list[str]:
    """The planned paths holding their new (reviewed) content."""
    return sorted(path for path, text in FIX.items()
                  if (fx.repo / path).is_file() and (fx.repo / path).read_text() == text)


def head(fx: Fixture) -> str:
    return git(fx.repo, "rev-parse", "HEAD").strip()


def template_head(fx: Fixture) -> str:
    return git(fx.template_repo, "rev-parse", "HEAD").strip()


def staged(fx: Fixture) -> bool:
    return bool(git(fx.repo, "diff", "--cached", "--name-only").strip())


def unfinished(fx: Fixture) -> bool:
    db = open_store(DataLocation(directory=fx.data), create=False, migrate=False)
    try:
        return bool(db.read(landing_rows.unfinished_landings))
    finally:
        db.close()


def events_of(fx: Fixture) -> list[tuple[str, dict[str, object]]]:
    db = open_store(DataLocation(directory=fx.data), create=False, migrate=False)
    try:
        session = db.read(lambda view: require_task_record(view, fx.reviewable.task_id)).session_id
        rows = db.read(lambda view: read_events_after(view, session_id=session, after_sequence=0, limit=1000))
        return [(e.kind, dict(e.payload)) for e in rows]
    finally:
        db.close()


def state(fx: Fixture) -> str:
    db = open_store(DataLocation(directory=fx.data), create=False, migrate=False)
    try:
        return db.read(lambda view: require_task_record(view, fx.reviewable.task_id)).state.value
    finally:
        db.close()


def assert_killed_at(fx: Fixture, point: Point, files: list[str]) -> None:
    """Positive control: the state the kill at ``point`` leaves (the process died exactly there)."""
    lock = fx.repo / ".git" / "index.lock"
    old = template_head(fx)
    if point in ROLLED_BACK:
        assert head(fx) == old and unfinished(fx)  # the branch never moved; the intent says a landing was under way
        assert not staged(fx) or point is Point.BRANCH
    expected_new = {Point.INTENT: 0, Point.TASK_BRANCH: 0, Point.FIRST_FILE: 0, Point.LAST_FILE: len(files) - 1}
    if point in expected_new:
        assert len(new_paths(fx)) == expected_new[point], new_paths(fx)
        ours = {k: v for k, v in files_of(fx.repo).items() if ".codeflux-" not in k}
        assert ours == files_of(fx.template_repo) or point is Point.LAST_FILE
    if point in (Point.FIRST_FILE, Point.LAST_FILE):  # killed at this file's rename: its temporary file is there
        target = Path(files[0] if point is Point.FIRST_FILE else files[-1])
        assert list(target.parent.glob(f".{target.name}.codeflux-*")), target
    if point is Point.INTENT:
        assert not lock.exists()  # killed creating the first lock
    elif point in ROLLED_BACK:
        assert lock.exists() and lock.stat().st_size == 0  # our empty lock, left by the kill
    if point is Point.INDEX:
        assert new_paths(fx) == sorted(FIX) and not staged(fx)  # files new, index old
    if point is Point.BRANCH:
        assert new_paths(fx) == sorted(FIX) and staged(fx)  # files and index new, branch old
    if point is Point.RELEASE:
        assert head(fx) != old and new_paths(fx) == sorted(FIX) and lock.exists() and unfinished(fx)
        assert state(fx) == TaskState.AWAITING_REVIEW.value  # on disk, not yet in the database
    if point in CLEANUP:
        assert head(fx) != old and not unfinished(fx) and state(fx) == TaskState.COMPLETED.value
        assert not lock.exists()
        assert_cleanup_killed_at(fx, point)


def assert_cleanup_killed_at(fx: Fixture, point: Point) -> None:
    """Positive control of a kill during the cleanup after a recorded landing."""
    if point is Point.CLEANUP_WORKTREE:  # killed renaming it aside: the worktree is whole where it was
        assert (fx.reviewable.worktree.path / ".git").exists()
        assert not removal_directory(fx.reviewable.worktree).exists()
    if point is Point.CLEANUP_DELETING:  # killed removing the emptied folder it was renamed to
        assert not fx.reviewable.worktree.path.exists() and removal_directory(fx.reviewable.worktree).is_dir()
    if point is Point.CLEANUP_BRANCH:
        assert not fx.reviewable.worktree.path.exists()  # the worktree went; the branch deletion was under way


def assert_landed(fx: Fixture) -> None:
    """The user's checkout fully landed, and git and the database are sound."""
    repo = fx.repo
    assert new_paths(fx) == sorted(FIX)
    parents = git(repo, "rev-list", "--parents", "-n", "1", "HEAD").split()
    assert parents[1] == template_head(fx)  # landed on what the user had
    assert len(parents) == (3 if fx.mode is Mode.MERGE else 2)
    if fx.mode is Mode.MERGE:
        assert (repo / "docs.md").read_text() == MEANWHILE["docs.md"]
    assert git(repo, "status", "--porcelain") == ""
    assert run_git(repo, "fsck", "--no-progress", check=False).returncode == 0
    assert not list((repo / ".git").rglob("*.lock")), "a stale lock"
    assert not [p for p in repo.rglob("*codeflux-*") if ".git" not in p.relative_to(repo).parts or
                "codeflux-landing-" in p.name], "a temporary file of the landing"
    checked = run_codeflux("integrity-check", data_dir=fx.data)
    assert checked.code == 0, checked.out + checked.err
    assert state(fx) == TaskState.COMPLETED.value


def resolution_events(fx: Fixture) -> list[tuple[object, object]]:
    return [(p["resolution"], p["by"]) for kind, p in events_of(fx) if kind == "accept-resolved"]


# ─── the campaign ────────────────────────────────────────────────────────────────────────────────

CASES = [(mode, point) for mode in Mode for point in Point]


def restart_and_retry(fx: Fixture, channel: Channel) -> str:
    """Restart (the CLI's ``task recovery`` / a new ``codeflux start``), then one retry of the accept when the
    task still awaits review. Returns what the restart said."""
    if channel is Channel.CLI:
        shown = run_codeflux("task", "recovery", data_dir=fx.data)
        assert shown.code == 0, shown.err
        said = shown.err
        if state(fx) == TaskState.AWAITING_REVIEW.value:
            retried = run_codeflux("task", "accept", fx.task, "--identity", fx.reviewable.identity, data_dir=fx.data)
            assert retried.code == 0, retried.err
        return said
    coordinator = start_coordinator(fx.data)
    try:
        if state(fx) == TaskState.AWAITING_REVIEW.value:
            retried = run_codeflux("task", "accept", fx.task, "--identity", fx.reviewable.identity, data_dir=fx.data)
            assert retried.code == 0, retried.err
    finally:
        said = coordinator.stop()
        with_children_gone(coordinator.process.pid)
    return said


@pytest.mark.parametrize("channel", list(Channel))
@pytest.mark.parametrize(("mode", "point"), CASES, ids=[f"{m}-{p}" for m, p in CASES])
def test_an_accept_killed_at_a_durable_step_ends_landed_after_restart_and_one_retry(
    fixtures: dict[Mode, Fixture], calibrations: Callable[[Mode, Channel], list[str]],
    mode: Mode, point: Point, channel: Channel,
) -> None:
    fx = fixtures[mode]
    renames = calibrations(mode, channel)
    files = [t for t in renames if t.startswith(f"{fx.repo}/") and not t.startswith(f"{fx.repo}/.git/")]
    assert len(files) == len(FIX)  # the calibration saw every file renamed into place
    fx.restore()

    killed_accept(fx, channel, kill_options(fx, point, renames))
    assert_killed_at(fx, point, files)

    said = restart_and_retry(fx, channel)

    task = fx.task
    if point in ROLLED_BACK:
        assert f"the interrupted accept of task {task} on main was rolled back" in said, said
        assert resolution_events(fx) == [("rolled-back", "recovery")]
    elif point is Point.RELEASE:
        assert f"the interrupted accept of task {task} had landed on main" in said, said
        assert resolution_events(fx) == [("finished", "recovery")]
    else:
        assert resolution_events(fx) == []  # the landing had been recorded: nothing to resolve
    accepted = [p for kind, p in events_of(fx) if kind == "task-accepted"]
    assert len(accepted) == 1 and accepted[0]["kind"] == ("merge-commit" if mode is Mode.MERGE else "fast-forward")
    assert accepted[0]["landed_head"] == head(fx)
    assert_landed(fx)


@pytest.mark.parametrize("point", CLEANUP)
def test_a_cleanup_killed_part_way_is_finished_by_the_restart(
    fixtures: dict[Mode, Fixture], calibrations: Callable[[Mode, Channel], list[str]], point: Point,
) -> None:
    fx = fixtures[Mode.FAST_FORWARD]
    renames = calibrations(Mode.FAST_FORWARD, Channel.CLI)
    fx.restore()
    killed_accept(fx, Channel.CLI, kill_options(fx, point, renames))
    assert_killed_at(fx, point, [])
    restart_and_retry(fx, Channel.CLI)
    branch = fx.reviewable.worktree.branch
    assert not fx.reviewable.worktree.path.exists()
    assert not removal_directory(fx.reviewable.worktree).exists()
    assert run_git(fx.repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode != 0
    assert git(fx.repo, "worktree", "list", "--porcelain").count("worktree ") == 1


# ─── the product's own fault-injection points, in process ────────────────────────────────────────


class Killed(BaseException):
    """Raised at a fault point: the process 'dies' there (no handler of the accept runs)."""


def at(point: LandingFault) -> Callable[[LandingFault], None]:
    def fault(reached: LandingFault) -> None:
        if reached is point:
            raise Killed(point.value)

    return fault


@pytest.fixture
def opened(fixtures: dict[Mode, Fixture]) -> Iterator[Callable[[Mode], tuple[Fixture, Database]]]:
    handles: list[Database] = []

    def open_mode(mode: Mode) -> tuple[Fixture, Database]:
        fx = fixtures[mode]
        fx.restore()
        handles.append(open_store(DataLocation(directory=fx.data), create=False, migrate=False))
        return fx, handles[-1]

    yield open_mode
    for handle in handles:
        handle.close()


_FAULTS = [(mode, point) for mode in Mode for point in LandingFault]


@pytest.mark.parametrize(("mode", "point"), _FAULTS, ids=[f"{m}-{p}" for m, p in _FAULTS])
def test_a_landing_failing_at_a_product_fault_point_ends_landed_after_recovery_and_one_retry(
    opened: Callable[[Mode], tuple[Fixture, Database]], mode: Mode, point: LandingFault,
) -> None:
    fx, db = opened(mode)
    reached: list[LandingFault] = []

    def fault(at_point: LandingFault) -> None:
        reached.append(at_point)
        at(point)(at_point)

    with pytest.raises(Killed):
        ReviewService(db, landing_fault=fault).accept_task(fx.reviewable.task_id,
                                                           reviewed_identity=fx.reviewable.identity)
    assert reached[-1] is point  # positive control: it died there
    assert db.read(landing_rows.unfinished_landings)
    found = recover_interrupted(db, DataLocation(directory=fx.data))
    assert found is not None and len(found.landings) == 1
    expected = "finished" if point is LandingFault.REF_MOVED else "rolled-back"
    assert resolution_events(fx) == [(expected, "recovery")]
    if expected == "rolled-back":
        assert head(fx) == template_head(fx) and files_of(fx.repo) == files_of(fx.template_repo)
        ReviewService(db).accept_task(fx.reviewable.task_id, reviewed_identity=fx.reviewable.identity)
    assert [kind for kind, _ in events_of(fx)].count("task-accepted") == 1
    assert_landed(fx)
