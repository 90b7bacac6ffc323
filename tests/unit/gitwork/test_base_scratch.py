"""The base revision written into a scratch folder under the task's TMPDIR (never the worktree), with the attempt's
test files over it (issue 14: tests that fail on the base are never sent back; examples are checked for
discrimination; issue 16: codeflux's own copies never enter the diff)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codeflux.domain.ids import TaskId
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.worktrees import TaskWorktree, create_task_worktree
from tests.fixtures.repos import BASE_FILES, RepoState, commit_all, make_repository, write_files

TASK = TaskId.parse("tsk_0123456789abcdef")
SCRATCH = "codeflux-scratch/base"


@pytest.fixture
def worktree(tmp_path: Path) -> TaskWorktree:
    built = make_repository(tmp_path / "src", RepoState.CLEAN)
    write_files(built.path, {"tools/run.sh": "#!/bin/sh\necho hi\n", "tests/test_old.py": "def test_old(): pass\n"})
    os.chmod(built.path / "tools" / "run.sh", 0o700)
    os.symlink("calc.py", built.path / "pkg" / "alias.py")
    head = commit_all(built.path, "more files")
    return create_task_worktree(built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1", task_id=TASK,
                                base_commit=head)


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    """The task's TMPDIR on the host, not made yet (the worker has not started)."""
    return tmp_path / "workers" / TASK.value / "tmp"


def tracked_and_untracked(worktree: TaskWorktree) -> set[str]:
    return {str(path.relative_to(worktree.path)).split("/")[0] for path in worktree.path.iterdir()}


def test_the_base_tree_is_written_with_the_attempts_test_files_over_it(worktree: TaskWorktree, temp: Path) -> None:
    (worktree.path / "pkg" / "calc.py").write_text("def add(a, b):\n    return 0\n")  # the change: not laid over
    (worktree.path / "tests" / "test_calc.py").write_text("def test_new(): pass\n")
    (worktree.path / "tests" / "test_old.py").unlink()  # the attempt deleted it: gone in the scratch too

    before = tracked_and_untracked(worktree)
    scratch = write_base_scratch(worktree, root=temp, directory=SCRATCH,
                                 overlay=["tests/test_calc.py", "tests/test_old.py"])

    assert scratch.path == temp / SCRATCH and scratch.refusal is None
    assert tracked_and_untracked(worktree) == before  # nothing of the copy is in the worktree
    assert stat.S_IMODE(temp.stat().st_mode) == 0o700 and stat.S_IMODE(temp.parent.stat().st_mode) == 0o700
    assert (scratch.path / "pkg" / "calc.py").read_text() == BASE_FILES["pkg/calc.py"]
    assert (scratch.path / "tests" / "test_calc.py").read_text() == "def test_new(): pass\n"
    assert not (scratch.path / "tests" / "test_old.py").exists()
    assert scratch.overlaid == ("tests/test_calc.py",) and scratch.removed == ("tests/test_old.py",)
    assert os.access(scratch.path / "tools" / "run.sh", os.X_OK)
    assert os.readlink(scratch.path / "pkg" / "alias.py") == "calc.py"

    remove_base_scratch(temp, SCRATCH)

    assert list(temp.iterdir()) == []  # the folders made only to hold it went too; TMPDIR itself stays
    assert {change.path for change in diff_against_base(worktree).files} == {
        "pkg/calc.py", "tests/test_calc.py", "tests/test_old.py"}


def test_a_planted_link_in_the_scratch_path_is_refused_and_nothing_outside_is_touched(
        worktree: TaskWorktree, temp: Path, tmp_path: Path) -> None:
    """A confined command can write TMPDIR: a link it plants where the copy goes is never followed."""
    outside = tmp_path / "outside"
    (outside / "base").mkdir(parents=True)
    (outside / "base" / "keep.txt").write_text("the user's file\n")
    temp.mkdir(parents=True)
    (temp / "codeflux-scratch").symlink_to(outside, target_is_directory=True)

    scratch = write_base_scratch(worktree, root=temp, directory=SCRATCH, overlay=())
    remove_base_scratch(temp, SCRATCH)

    assert scratch.path is None and scratch.refusal is not None
    assert (outside / "base" / "keep.txt").read_text() == "the user's file\n"
    assert sorted(p.name for p in outside.rglob("*")) == ["base", "keep.txt"]


def test_an_overlay_file_that_is_a_link_is_not_followed(worktree: TaskWorktree, temp: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the worktree\n")
    (worktree.path / "tests" / "test_calc.py").unlink()
    (worktree.path / "tests" / "test_calc.py").symlink_to(secret)

    scratch = write_base_scratch(worktree, root=temp, directory=SCRATCH, overlay=["tests/test_calc.py", "../escape.py"])

    assert scratch.path is not None
    assert not (scratch.path / "tests" / "test_calc.py").exists()  # treated as absent: never read through a link
    assert not (temp / "codeflux-scratch" / "escape.py").exists()
    remove_base_scratch(temp, SCRATCH)


def test_a_root_that_is_a_link_or_relative_is_refused(worktree: TaskWorktree, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "linked-tmp"
    linked.symlink_to(elsewhere, target_is_directory=True)

    through_link = write_base_scratch(worktree, root=linked, directory=SCRATCH, overlay=())
    relative = write_base_scratch(worktree, root=Path("relative-tmp"), directory=SCRATCH, overlay=())
    escaping = write_base_scratch(worktree, root=tmp_path / "tmp", directory="../escape", overlay=())

    assert through_link.path is None and "scratch root" in str(through_link.refusal)
    assert relative.path is None and not Path("relative-tmp").exists()
    assert escaping.path is None and "plain relative path" in str(escaping.refusal)
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "escape").exists()
