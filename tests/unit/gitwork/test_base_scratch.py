"""The base revision written into a scratch folder of the task worktree, with the attempt's test files over it
(issue 14: tests that fail on the base are never sent back; examples are checked for discrimination)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.ids import TaskId
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.worktrees import TaskWorktree, create_task_worktree
from tests.fixtures.repos import BASE_FILES, RepoState, commit_all, make_repository, write_files

TASK = TaskId.parse("tsk_0123456789abcdef")
SCRATCH = ".codeflux-checks/base"


@pytest.fixture
def worktree(tmp_path: Path) -> TaskWorktree:
    built = make_repository(tmp_path / "src", RepoState.CLEAN)
    write_files(built.path, {"tools/run.sh": "#!/bin/sh\necho hi\n", "tests/test_old.py": "def test_old(): pass\n"})
    os.chmod(built.path / "tools" / "run.sh", 0o700)
    os.symlink("calc.py", built.path / "pkg" / "alias.py")
    head = commit_all(built.path, "more files")
    return create_task_worktree(built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1", task_id=TASK,
                                base_commit=head)


def test_the_base_tree_is_written_with_the_attempts_test_files_over_it(worktree: TaskWorktree) -> None:
    (worktree.path / "pkg" / "calc.py").write_text("def add(a, b):\n    return 0\n")  # the change: not laid over
    (worktree.path / "tests" / "test_calc.py").write_text("def test_new(): pass\n")
    (worktree.path / "tests" / "test_old.py").unlink()  # the attempt deleted it: gone in the scratch too

    scratch = write_base_scratch(worktree, directory=SCRATCH, overlay=["tests/test_calc.py", "tests/test_old.py"])

    assert scratch.path == worktree.path / SCRATCH and scratch.refusal is None
    assert (scratch.path / "pkg" / "calc.py").read_text() == BASE_FILES["pkg/calc.py"]
    assert (scratch.path / "tests" / "test_calc.py").read_text() == "def test_new(): pass\n"
    assert not (scratch.path / "tests" / "test_old.py").exists()
    assert scratch.overlaid == ("tests/test_calc.py",) and scratch.removed == ("tests/test_old.py",)
    assert os.access(scratch.path / "tools" / "run.sh", os.X_OK)
    assert os.readlink(scratch.path / "pkg" / "alias.py") == "calc.py"

    remove_base_scratch(worktree, SCRATCH)

    assert not (worktree.path / ".codeflux-checks").exists()
    assert ".codeflux-checks" not in {change.path.split("/")[0] for change in diff_against_base(worktree).files}


def test_a_planted_link_in_the_scratch_path_is_refused_and_nothing_outside_is_touched(
        worktree: TaskWorktree, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "base").mkdir(parents=True)
    (outside / "base" / "keep.txt").write_text("the user's file\n")
    (worktree.path / ".codeflux-checks").symlink_to(outside, target_is_directory=True)

    scratch = write_base_scratch(worktree, directory=SCRATCH, overlay=())
    remove_base_scratch(worktree, SCRATCH)

    assert scratch.path is None and scratch.refusal is not None
    assert (outside / "base" / "keep.txt").read_text() == "the user's file\n"
    assert sorted(p.name for p in outside.rglob("*")) == ["base", "keep.txt"]


def test_an_overlay_file_that_is_a_link_is_not_followed(worktree: TaskWorktree, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the worktree\n")
    (worktree.path / "tests" / "test_calc.py").unlink()
    (worktree.path / "tests" / "test_calc.py").symlink_to(secret)

    scratch = write_base_scratch(worktree, directory=SCRATCH, overlay=["tests/test_calc.py", "../escape.py"])

    assert scratch.path is not None
    assert not (scratch.path / "tests" / "test_calc.py").exists()  # treated as absent: never read through a link
    assert not (worktree.path / ".codeflux-checks" / "escape.py").exists()
    remove_base_scratch(worktree, SCRATCH)
