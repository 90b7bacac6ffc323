"""Task worktrees against real repositories: creation without hooks, verification, removal rules."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pygit2
import pytest

from codeflux.domain.errors import (
    CodefluxError,
    InvalidValueError,
    RepositoryNotUsableError,
    WorktreeNotUsableError,
)
from codeflux.domain.ids import TaskId
from codeflux.gitwork.diff import CommitAuthor, commit_worktree_changes, diff_against_base
from codeflux.gitwork.worktrees import (
    RemovalRefusal,
    TaskWorktree,
    create_task_worktree,
    remove_task_worktree,
    verify_task_worktree,
)
from tests.fixtures.repos import (
    TRAP_HOOKS,
    BuiltRepository,
    RepoState,
    commit_all,
    executed_traps,
    git,
    make_repository,
    write_files,
)

TASK = TaskId.parse("tsk_0123456789abcdef")
OTHER_TASK = TaskId.parse("tsk_fedcba9876543210")
AUTHOR = CommitAuthor(name="codeflux agent", email="agent@example.invalid")


@pytest.fixture
def built(tmp_path: Path) -> BuiltRepository:
    return make_repository(tmp_path, RepoState.CLEAN)


def create(tmp_path: Path, built: BuiltRepository, *, task: TaskId = TASK, base: str | None = None) -> TaskWorktree:
    return create_task_worktree(
        built.path,
        worktrees_root=tmp_path / "worktrees",
        repo_key="repo1",
        task_id=task,
        base_commit=base or built.head or "",
    )


def listed_worktrees(repo: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]  # fmt: skip


# ------------------------------------------------------------------------------------------- creation


def test_a_task_worktree_is_created_at_root_repo_task_on_its_own_branch_at_the_base(
    tmp_path: Path, built: BuiltRepository
) -> None:
    worktree = create(tmp_path, built)
    expected = (tmp_path / "worktrees" / "repo1" / str(TASK)).resolve()
    assert worktree.path == expected
    assert worktree.branch == f"codeflux/task/{TASK}"
    assert str(expected) in listed_worktrees(built.path)
    assert git(expected, "rev-parse", "--abbrev-ref", "HEAD").strip() == worktree.branch
    assert git(built.path, "rev-parse", worktree.branch).strip() == built.head
    assert git(expected, "status", "--porcelain") == ""
    assert (expected / "pkg" / "calc.py").read_text() == (built.path / "pkg" / "calc.py").read_text()
    for folder in (tmp_path / "worktrees", tmp_path / "worktrees" / "repo1"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert verify_task_worktree(worktree) == built.head
    assert git(built.path, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # the user's checkout is untouched


def test_creating_a_worktree_runs_no_repository_hook(tmp_path: Path, built: BuiltRepository) -> None:
    hooks = built.path / ".git" / "hooks"
    for hook in TRAP_HOOKS:
        (hooks / hook).write_text(f'#!/bin/sh\ntouch "{built.markers}/{hook}"\n')
        (hooks / hook).chmod(0o755)
    # Proof the trap is armed: plain git (hooks on) runs it on a checkout.
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}  # fmt: skip
    subprocess.run(["git", "checkout", "-q", "-b", "probe"], cwd=built.path, env=environment, check=True)
    assert "post-checkout" in executed_traps(built.markers)
    git(built.path, "checkout", "-q", "main")
    for marker in built.markers.iterdir():
        marker.unlink()
    create(tmp_path, built)
    assert executed_traps(built.markers) == []


def test_a_malicious_repository_gets_a_worktree_without_running_anything(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.MALICIOUS)
    worktree = create(tmp_path, built)
    assert (worktree.path / "pkg" / "calc.py").exists()
    assert executed_traps(built.markers) == []


def test_an_existing_path_branch_or_missing_base_is_refused(tmp_path: Path, built: BuiltRepository) -> None:
    create(tmp_path, built)
    with pytest.raises(WorktreeNotUsableError) as caught:
        create(tmp_path, built)
    assert caught.value.problem == "path-exists"
    git(built.path, "branch", f"codeflux/task/{OTHER_TASK}")
    with pytest.raises(WorktreeNotUsableError) as caught:
        create(tmp_path, built, task=OTHER_TASK)
    assert caught.value.problem == "branch-exists"
    third = TaskId.parse("tsk_00000000000000ff")
    with pytest.raises(WorktreeNotUsableError) as caught:
        create(tmp_path, built, task=third, base="0" * 40)
    assert caught.value.problem == "base-missing"
    assert not (tmp_path / "worktrees" / "repo1" / str(third)).exists()


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"base_commit": "abc123"}, "base commit id"),
        ({"repo_key": "../escape"}, "repository key"),
        ({"repo_key": "a/b"}, "repository key"),
        ({"repo_key": ".."}, "repository key"),
        ({"worktrees_root": Path("relative/root")}, "worktrees root"),
    ],
)
def test_malformed_arguments_are_refused_before_anything_is_created(
    tmp_path: Path, built: BuiltRepository, change: dict[str, object], kind: str
) -> None:
    arguments: dict[str, object] = {
        "worktrees_root": tmp_path / "worktrees", "repo_key": "repo1", "task_id": TASK, "base_commit": built.head,
    }  # fmt: skip
    arguments.update(change)
    with pytest.raises(InvalidValueError) as caught:
        create_task_worktree(built.path, **arguments)  # type: ignore[arg-type]
    assert caught.value.kind == kind
    assert not (tmp_path / "worktrees").exists()


def test_a_worktrees_root_inside_the_repository_is_refused(tmp_path: Path, built: BuiltRepository) -> None:
    assert built.head is not None
    with pytest.raises(WorktreeNotUsableError) as caught:
        create_task_worktree(
            built.path, worktrees_root=built.path / ".wt", repo_key="r", task_id=TASK, base_commit=built.head
        )
    assert caught.value.problem == "overlaps-repository"


def test_a_path_that_is_not_a_usable_repository_is_refused(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.NO_COMMITS)
    with pytest.raises(RepositoryNotUsableError):
        create_task_worktree(
            built.path, worktrees_root=tmp_path / "worktrees", repo_key="r", task_id=TASK, base_commit="a" * 40
        )


def test_a_failed_creation_removes_the_branch_it_made(tmp_path: Path, built: BuiltRepository) -> None:
    admin = built.path / ".git" / "worktrees"
    admin.mkdir()
    (admin / str(TASK)).write_text("in the way")  # libgit2 cannot make its metadata folder here
    with pytest.raises(CodefluxError) as caught:
        create(tmp_path, built)
    assert isinstance(caught.value.__cause__, pygit2.GitError)
    assert git(built.path, "branch", "--list", f"codeflux/task/{TASK}") == ""
    assert not (tmp_path / "worktrees" / "repo1" / str(TASK)).exists()


# --------------------------------------------------------------------------------------- verification


def test_verification_fails_when_the_worktree_is_missing(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    git(built.path, "worktree", "remove", "--force", str(worktree.path))
    with pytest.raises(WorktreeNotUsableError) as caught:
        verify_task_worktree(worktree)
    assert caught.value.problem == "missing"


def test_verification_fails_on_another_branch(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    git(worktree.path, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(WorktreeNotUsableError) as caught:
        verify_task_worktree(worktree)
    assert caught.value.problem == "wrong-branch"


def test_verification_fails_when_head_no_longer_descends_from_the_base(tmp_path: Path, built: BuiltRepository) -> None:
    first = built.head
    write_files(built.path, {"second.txt": "2\n"})
    second = commit_all(built.path, "second")
    worktree = create(tmp_path, built, base=second)
    git(worktree.path, "reset", "-q", "--hard", first or "")
    with pytest.raises(WorktreeNotUsableError) as caught:
        verify_task_worktree(worktree)
    assert caught.value.problem == "not-descended-from-base"


def test_commits_on_the_task_branch_keep_it_verified(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    write_files(worktree.path, {"x.txt": "x\n"})
    commit = commit_worktree_changes(worktree, "checkpoint", author=AUTHOR)
    assert verify_task_worktree(worktree) == commit


def test_verification_fails_for_a_worktree_of_another_repository(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    other = make_repository(tmp_path / "other", RepoState.CLEAN)
    foreign = TaskWorktree(repo_root=other.path, path=worktree.path, task_id=TASK, base=worktree.base)
    with pytest.raises(WorktreeNotUsableError) as caught:
        verify_task_worktree(foreign)
    assert caught.value.problem == "foreign-repository"


def test_verification_fails_for_a_plain_clone_at_the_worktree_path(tmp_path: Path, built: BuiltRepository) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(built.path), str(clone))
    impostor = TaskWorktree(repo_root=built.path, path=clone, task_id=TASK, base=built.head or "")
    with pytest.raises(WorktreeNotUsableError) as caught:
        verify_task_worktree(impostor)
    assert caught.value.problem in {"foreign-repository", "not-a-worktree"}


# -------------------------------------------------------------------------------------------- removal


def test_a_clean_worktree_is_removed_its_metadata_pruned_and_its_branch_kept(
    tmp_path: Path, built: BuiltRepository
) -> None:
    worktree = create(tmp_path, built)
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False)
    assert removal.removed
    assert removal.refusal is None
    assert not removal.branch_deleted
    assert not worktree.path.exists()
    assert not (built.path / ".git" / "worktrees" / str(TASK)).exists()
    assert str(worktree.path) not in listed_worktrees(built.path)
    assert git(built.path, "branch", "--list", worktree.branch).strip() == worktree.branch
    assert git(built.path, "fsck", "--no-progress").strip() == ""


def test_an_ambiguous_outcome_keeps_the_worktree(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    removal = remove_task_worktree(worktree, keep_if_unsaved=False, outcome_ambiguous=True)
    assert not removal.removed
    assert removal.refusal is RemovalRefusal.OUTCOME_AMBIGUOUS
    assert worktree.path.is_dir()


def test_uncommitted_work_not_saved_as_a_patch_keeps_the_worktree(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    write_files(worktree.path, {"pkg/new.py": "NEW = 1\n"})
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False)
    assert removal.refusal is RemovalRefusal.UNSAVED_WORK
    assert (worktree.path / "pkg" / "new.py").read_text() == "NEW = 1\n"


def test_uncommitted_work_saved_as_exactly_this_patch_may_be_removed(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    write_files(worktree.path, {"pkg/new.py": "NEW = 1\n"})
    saved = diff_against_base(worktree).identity
    write_files(worktree.path, {"pkg/new.py": "NEW = 2\n"})
    stale = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, saved_patch_identity=saved)
    assert stale.refusal is RemovalRefusal.UNSAVED_WORK
    saved = diff_against_base(worktree).identity
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, saved_patch_identity=saved)
    assert removal.removed
    assert not worktree.path.exists()


def test_without_keep_if_unsaved_uncommitted_work_is_discarded(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    write_files(worktree.path, {"pkg/new.py": "NEW = 1\n"})
    assert remove_task_worktree(worktree, keep_if_unsaved=False, outcome_ambiguous=False).removed
    assert not worktree.path.exists()


def test_deleting_an_unmerged_branch_counts_as_losing_work(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    write_files(worktree.path, {"pkg/new.py": "NEW = 1\n"})
    commit_worktree_changes(worktree, "checkpoint", author=AUTHOR)
    kept = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, delete_branch=True)
    assert kept.refusal is RemovalRefusal.UNSAVED_WORK
    # The branch keeps the commit, so removing only the directory loses nothing.
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False)
    assert removal.removed and not removal.branch_deleted
    kept_again = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, delete_branch=True)
    assert kept_again.refusal is RemovalRefusal.UNSAVED_WORK
    forced = remove_task_worktree(worktree, keep_if_unsaved=False, outcome_ambiguous=False, delete_branch=True)
    assert forced.removed and forced.branch_deleted
    assert git(built.path, "branch", "--list", worktree.branch) == ""


def test_a_merged_branch_may_be_deleted_with_the_worktree(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, delete_branch=True)
    assert removal.removed and removal.branch_deleted
    assert git(built.path, "branch", "--list", worktree.branch) == ""


def test_a_worktree_that_fails_verification_is_kept_when_unsaved_work_matters(
    tmp_path: Path, built: BuiltRepository
) -> None:
    worktree = create(tmp_path, built)
    git(worktree.path, "switch", "-q", "-c", "elsewhere")
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False)
    assert removal.refusal is RemovalRefusal.UNVERIFIABLE
    assert worktree.path.is_dir()


def test_an_already_deleted_directory_only_has_its_metadata_pruned(tmp_path: Path, built: BuiltRepository) -> None:
    worktree = create(tmp_path, built)
    for path in sorted(worktree.path.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
    worktree.path.rmdir()
    assert remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False).removed
    assert not (built.path / ".git" / "worktrees" / str(TASK)).exists()


def test_a_directory_that_is_not_this_tasks_worktree_is_never_deleted(tmp_path: Path, built: BuiltRepository) -> None:
    precious = tmp_path / "precious"
    write_files(precious, {"thesis.txt": "years of work\n"})
    impostor = TaskWorktree(repo_root=built.path, path=precious, task_id=TASK, base=built.head or "")
    with pytest.raises(WorktreeNotUsableError):
        remove_task_worktree(impostor, keep_if_unsaved=False, outcome_ambiguous=False)
    assert (precious / "thesis.txt").read_text() == "years of work\n"
