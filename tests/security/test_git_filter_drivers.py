"""Filter drivers the user's repository configures never run because of a ``.gitattributes`` the task wrote.

The repository's common ``.git/config`` (which the task worktree shares) defines ``clean``, ``smudge``
and ``process`` programs that leave a marker outside the worktree; the task then writes
``.gitattributes`` pointing every file at them. The twin in each test shows the trap is live: plain git,
with the same scrubbed environment but without codeflux's overrides, runs the programs. The worker's
git tools (through a real worker process) and the coordinator's libgit2 calls must not.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionState
from codeflux.domain.ids import TaskId
from codeflux.gitwork.accept import accept_task_diff
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.repository import open_repository
from codeflux.gitwork.worktrees import create_task_worktree
from codeflux.worker.client.handle import WorkerHandle
from codeflux.worker.tools.git import filter_names_in_listing, filter_overrides
from tests.fixtures.workers import execution_of, running_worker
from tests.fixtures.worktrees import TaskWorktree, git, make_task_worktree

pytestmark = pytest.mark.security

# Three filters: one with a dot in its name (a subsection may hold dots), one driven by a long-running
# process, each program leaving a marker named after itself.
DRIVERS = {
    "filter.evil.clean": "clean",
    "filter.evil.smudge": "smudge",
    "filter.odd.name.clean": "odd-clean",
    "filter.lfsish.process": "process",
    "filter.lfsish.required": None,
}
ATTRIBUTES = "* filter=evil\n*.py filter=lfsish\n*.md filter=odd.name\n"


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    directory = tmp_path / "markers"
    directory.mkdir()
    return directory


@pytest.fixture
def task(tmp_path: Path, markers: Path) -> TaskWorktree:
    task = make_task_worktree(tmp_path)
    plant_filters(task.repository, markers)
    return task


@pytest.fixture
def worker(task: TaskWorktree, tmp_path: Path) -> Iterator[WorkerHandle]:
    with running_worker(task.worktree, tmp_path / "state") as handle:
        yield handle


def plant_filters(repository: Path, markers: Path) -> None:
    for key, marker in DRIVERS.items():
        value = "true" if marker is None else f"sh -c 'touch {markers}/{marker}; cat'"
        if key.endswith(".process"):
            value = f"sh -c 'touch {markers}/{marker}; exit 1'"
        git(repository, "config", key, value)


def write_task_changes(worktree: Path) -> None:
    """The attributes, and changes git must hash again (same size, new mtime) to report."""
    (worktree / ".gitattributes").write_text(ATTRIBUTES)
    for relative, content in (("src/util.py", "VALUE = 7\n"), ("docs/notes.txt", "first line\nsecond LINE\n"),
                              ("README.md", "# DEMO\n\nA small repository for worker tests.\n")):
        path = worktree / relative
        path.write_text(content)
        os.utime(path, (1_000_000_000, 1_000_000_000))


def plain_git(worktree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as codeflux runs it (no system/global config, hooks off) but without the filter overrides."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(worktree), "LC_ALL": "C",
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
                          cwd=worktree, env=environment, capture_output=True, text=True, check=False, timeout=60)


def ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def test_the_worker_git_tools_run_no_configured_filter_while_plain_git_does(worker: WorkerHandle,
                                                                               task: TaskWorktree,
                                                                               markers: Path) -> None:
    write_task_changes(task.worktree)
    for tool, arguments in (("git_status", {}), ("inspect_diff", {}), ("inspect_diff", {"path": "src/util.py"}),
                            ("git_log", {"max_count": 3}), ("git_log", {"path": "README.md"})):
        outcome = worker.execute(execution_of(tool, arguments))
        assert outcome.state is ExecutionState.SUCCEEDED, (tool, outcome.failure_kind, outcome.message)
    diff = worker.execute(execution_of("inspect_diff", {}))
    assert "+VALUE = 7" in diff.content and "+second LINE" in diff.content  # unfiltered content, all of it
    patch = "--- a/docs/notes.txt\n+++ b/docs/notes.txt\n@@ -1,2 +1,2 @@\n first line\n-second LINE\n+patched\n"
    applied = worker.execute(execution_of("apply_patch", {"patch": patch}))
    assert applied.state is ExecutionState.SUCCEEDED, applied.message
    assert ran(markers) == []
    # The twin: the same repository, attributes and changes, plain git: every kind of driver runs.
    write_task_changes(task.worktree)
    plain_git(task.worktree, "status", "--porcelain")
    plain_git(task.worktree, "diff", task.base)
    assert {"clean", "odd-clean", "process"} <= set(ran(markers))


def test_smudge_runs_for_plain_git_checkout_but_no_worker_tool_checks_anything_out(worker: WorkerHandle,
                                                                                   task: TaskWorktree,
                                                                                   markers: Path) -> None:
    write_task_changes(task.worktree)
    for tool in ("git_status", "inspect_diff", "git_log"):
        assert worker.execute(execution_of(tool, {})).state is ExecutionState.SUCCEEDED
    assert ran(markers) == []
    (task.worktree / "docs/notes.txt").unlink()
    plain_git(task.worktree, "checkout", "--", "docs/notes.txt")
    assert "smudge" in ran(markers)


def test_a_filter_configured_only_inside_a_submodule_of_the_worktree_never_runs(worker: WorkerHandle,
                                                                                 task: TaskWorktree, tmp_path: Path,
                                                                                 markers: Path) -> None:
    """Task code can write a submodule's config (under ``.git/worktrees/<task>/modules``); the superproject's
    filter list does not name its filters, so the git tools must not start git inside the submodule."""
    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "-q")
    (library / "lib.txt").write_text("library line\n")
    git(library, "add", "-A")
    git(library, "commit", "-q", "-m", "library")
    git(task.worktree, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    module = task.worktree / "lib"
    git(module, "config", "filter.inner.clean", f"sh -c 'touch {markers}/inner-clean; cat'")
    (module / ".gitattributes").write_text("* filter=inner\n")
    (module / "lib.txt").write_text("LIBRARY line\n")
    os.utime(module / "lib.txt", (1_000_000_000, 1_000_000_000))
    for tool in ("git_status", "inspect_diff"):
        outcome = worker.execute(execution_of(tool, {}))
        assert outcome.state is ExecutionState.SUCCEEDED, (tool, outcome.message)
    assert ran(markers) == []
    plain_git(task.worktree, "status", "--porcelain")  # the twin: git recurses into the submodule
    assert ran(markers) == ["inner-clean"]


def test_the_coordinator_git_calls_go_through_libgit2_which_runs_no_filter(task: TaskWorktree, tmp_path: Path,
                                                                            markers: Path) -> None:
    bound = create_task_worktree(task.repository, worktrees_root=tmp_path / "coordinator-worktrees",
                                 repo_key="repo1", task_id=TaskId.parse("tsk_fedcba9876543210"), base_commit=task.base)
    write_task_changes(bound.path)
    originals = {path: path.read_bytes() for path in task.repository.rglob("*.*") if ".git" not in path.parts}
    write_task_changes(task.repository)  # the user's checkout, dirty through the filters too
    assert open_repository(task.repository).is_dirty
    for path, data in originals.items():
        path.write_bytes(data)
    (task.repository / ".gitattributes").unlink()
    diff = diff_against_base(bound)
    assert {file.path for file in diff.files} >= {".gitattributes", "src/util.py"}
    outcome = accept_task_diff(task.repository, bound, reviewed_identity=diff.identity)
    assert outcome.landed
    assert (task.repository / "src/util.py").read_text() == "VALUE = 7\n"  # checked out, no smudge
    assert ran(markers) == []
    # The twin: plain git in the same checkout, which now tracks the attributes, runs the clean filter.
    write_task_changes(task.repository)
    plain_git(task.repository, "status", "--porcelain")
    assert "clean" in ran(markers)


@pytest.mark.parametrize(("listing", "names"), [
    ("", ()),
    ("filter.evil.clean\nsh -c x\x00filter.evil.smudge\ncat\x00", ("evil",)),
    ("filter.odd.name.clean\nx\x00filter.Space Name.process\ny\x00", ("odd.name", "Space Name")),
    ("filter.flag.required\x00filter.noname\nz\x00", ("flag",)),
])
def test_filter_names_are_read_from_the_listing_with_dots_spaces_and_case_kept(listing: str,
                                                                                names: tuple[str, ...]) -> None:
    assert filter_names_in_listing(listing) == names


def test_each_listed_filter_gets_every_driver_switched_off() -> None:
    assert filter_overrides(["odd.name"]) == [
        "-c", "filter.odd.name.clean=", "-c", "filter.odd.name.smudge=", "-c", "filter.odd.name.process=",
        "-c", "filter.odd.name.required=false",
    ]


@pytest.mark.parametrize("name", ["a=b", "bad\ufffdbytes"])
def test_a_filter_name_git_cannot_switch_off_stops_the_tool(name: str) -> None:
    with pytest.raises(Exception, match="cannot switch off"):
        filter_overrides([name])
