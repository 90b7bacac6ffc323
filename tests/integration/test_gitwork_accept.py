"""Accepting and rejecting task diffs against real repositories, checked with the git CLI (or pygit2
where the repository is booby-trapped and the CLI would spring the traps)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pygit2
import pytest

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.domain.errors import (
    CheckoutNotCleanError,
    DetachedHeadError,
    DiffChangedError,
    WorktreeNotUsableError,
)
from codeflux.domain.ids import TaskId
from codeflux.gitwork.accept import REVIEWED_IDENTITY_TRAILER, AcceptKind, accept_task_diff, reject_task_diff
from codeflux.gitwork.diff import CommitAuthor, commit_worktree_changes, diff_against_base
from codeflux.gitwork.worktrees import RemovalRefusal, TaskWorktree, create_task_worktree, remove_task_worktree
from tests.fixtures.repos import (
    BuiltRepository,
    RepoState,
    commit_all,
    executed_traps,
    git,
    make_repository,
    run_git,
    write_files,
)

TASK = TaskId.parse("tsk_0123456789abcdef")
USER = CommitAuthor(name="Test User", email="user@example.invalid")


@pytest.fixture
def built(tmp_path: Path) -> BuiltRepository:
    return make_repository(tmp_path, RepoState.CLEAN)


@pytest.fixture
def worktree(tmp_path: Path, built: BuiltRepository) -> TaskWorktree:
    assert built.head is not None
    return create_task_worktree(
        built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1", task_id=TASK, base_commit=built.head
    )


def task_edits(worktree: TaskWorktree) -> None:
    write_files(worktree.path, {
        "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
                       "def mul(a, b):\n    return a * b\n",
        "tests/test_mul.py": "from pkg.calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    })  # fmt: skip


def checkout_state(repo: Path) -> dict[str, object]:
    """Everything 'nothing half-applied' must leave as it was: refs, index bytes, every file."""
    files = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    git_dir = repo / ".git"
    return {
        "HEAD": (git_dir / "HEAD").read_text(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "index": (git_dir / "index").read_bytes(),
        "files": files,
        "operations": sorted(p.name for p in git_dir.iterdir() if p.name.endswith("_HEAD") and p.name != "ORIG_HEAD"),
    }


def assert_git_is_happy(repo: Path) -> None:
    assert git(repo, "status", "--porcelain") == ""
    assert run_git(repo, "fsck", "--no-progress").returncode == 0


# ------------------------------------------------------------------------------------------ landing


def test_accept_fast_forwards_an_unmoved_branch_including_uncommitted_and_untracked_files(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree)
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=reviewed.identity, committer=USER)
    assert outcome.kind is AcceptKind.FAST_FORWARD
    assert outcome.landed
    assert outcome.branch == "main"
    assert outcome.previous_head == built.head
    assert outcome.landed_head == outcome.task_commit == git(built.path, "rev-parse", "main").strip()
    assert git(built.path, "rev-parse", worktree.branch).strip() == outcome.task_commit
    message = git(built.path, "log", "-1", "--format=%B")
    assert f"{REVIEWED_IDENTITY_TRAILER}: {reviewed.identity}" in message
    assert (built.path / "tests" / "test_mul.py").read_text() == (worktree.path / "tests" / "test_mul.py").read_text()
    assert_git_is_happy(built.path)
    assert git(worktree.path, "status", "--porcelain") == ""  # the task worktree is clean too


def test_accept_of_committed_work_lands_the_task_commit_itself(built: BuiltRepository, worktree: TaskWorktree) -> None:
    task_edits(worktree)
    checkpoint = commit_worktree_changes(worktree, "task: add mul", author=USER)
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert outcome.kind is AcceptKind.FAST_FORWARD
    assert outcome.landed_head == checkpoint == git(built.path, "rev-parse", "HEAD").strip()
    assert_git_is_happy(built.path)


def test_accept_makes_a_merge_commit_when_the_users_branch_moved(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    write_files(built.path, {"README.md": "# calc\n\nA tiny package, documented by the user.\n"})
    user_head = commit_all(built.path, "user: docs")
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert outcome.kind is AcceptKind.MERGE_COMMIT
    assert outcome.previous_head == user_head
    head = git(built.path, "rev-parse", "HEAD").strip()
    assert outcome.landed_head == head
    assert git(built.path, "log", "-1", "--format=%P").split() == [user_head, outcome.task_commit]
    assert git(built.path, "log", "-1", "--format=%an <%ae>").strip() == "Test User <user@example.invalid>"
    assert "documented by the user" in (built.path / "README.md").read_text()
    assert "def mul" in (built.path / "pkg" / "calc.py").read_text()
    assert_git_is_happy(built.path)


def test_a_conflict_is_reported_with_nothing_half_applied(built: BuiltRepository, worktree: TaskWorktree) -> None:
    write_files(built.path, {"pkg/calc.py": "def add(a, b):\n    return a + b  # user\n"})
    commit_all(built.path, "user: comment")
    write_files(built.path, {"scratch.txt": "the user's untracked notes\n"})
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    user_before = checkout_state(built.path)
    task_branch_before = git(built.path, "rev-parse", worktree.branch).strip()
    task_status_before = git(worktree.path, "status", "--porcelain")
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert outcome.kind is AcceptKind.CONFLICT
    assert not outcome.landed
    assert outcome.conflicting_paths == ("pkg/calc.py",)
    assert outcome.landed_head == outcome.previous_head
    assert checkout_state(built.path) == user_before
    assert git(built.path, "rev-parse", worktree.branch).strip() == task_branch_before
    assert git(worktree.path, "status", "--porcelain") == task_status_before
    assert diff_against_base(worktree).identity == reviewed  # the review still stands


def test_a_second_accept_of_the_same_review_finds_it_already_present(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    first = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    state = checkout_state(built.path)
    again = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert again.kind is AcceptKind.ALREADY_PRESENT
    assert again.landed_head == first.landed_head
    assert checkout_state(built.path) == state


def test_an_accept_interrupted_after_its_snapshot_commit_is_finished_on_retry(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    # What accept leaves behind if it stops after committing the snapshot, before the user's branch moves.
    message = f"codeflux: changes of task {TASK}\n\n{REVIEWED_IDENTITY_TRAILER}: {reviewed}\n"
    snapshot = commit_worktree_changes(worktree, message, author=USER)
    assert diff_against_base(worktree).identity != reviewed  # the head moved
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert outcome.kind is AcceptKind.FAST_FORWARD
    assert outcome.task_commit == snapshot == git(built.path, "rev-parse", "HEAD").strip()


def test_a_task_commit_without_the_review_trailer_is_not_mistaken_for_a_snapshot(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    commit_worktree_changes(worktree, "an agent commit made after the review", author=USER)
    with pytest.raises(DiffChangedError):
        accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert git(built.path, "rev-parse", "HEAD").strip() == built.head


def test_an_empty_diff_has_nothing_to_land(built: BuiltRepository, worktree: TaskWorktree) -> None:
    state = checkout_state(built.path)
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert outcome.kind is AcceptKind.NOTHING_TO_LAND
    assert checkout_state(built.path) == state


# ----------------------------------------------------------------------------------------- refusals


def test_a_diff_changed_since_review_is_refused(built: BuiltRepository, worktree: TaskWorktree) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    write_files(worktree.path, {"sneaky.py": "import os\n"})
    state = checkout_state(built.path)
    with pytest.raises(DiffChangedError) as caught:
        accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert caught.value.reviewed == reviewed
    assert caught.value.current == diff_against_base(worktree).identity
    assert checkout_state(built.path) == state
    assert git(built.path, "rev-parse", worktree.branch).strip() == worktree.base


@pytest.mark.parametrize("staged", [False, True], ids=["unstaged", "staged"])
def test_a_checkout_with_uncommitted_changes_is_refused_listing_the_paths(
    built: BuiltRepository, worktree: TaskWorktree, staged: bool
) -> None:
    write_files(built.path, {"README.md": "user edit in progress\n"})
    if staged:
        git(built.path, "add", "README.md")
    task_edits(worktree)
    state = checkout_state(built.path)
    with pytest.raises(CheckoutNotCleanError) as caught:
        accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert caught.value.paths == ("README.md",)
    assert "README.md" in str(caught.value)
    assert exit_code_for(caught.value) is ExitCode.PREREQUISITE
    assert checkout_state(built.path) == state


def test_an_untracked_file_elsewhere_does_not_block_but_one_in_the_way_does(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    write_files(built.path, {"tests/test_mul.py": "the user's own file\n", "notes.txt": "unrelated\n"})
    state = checkout_state(built.path)
    with pytest.raises(CheckoutNotCleanError) as caught:
        accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert caught.value.paths == ("tests/test_mul.py",)
    assert checkout_state(built.path) == state
    (built.path / "tests" / "test_mul.py").unlink()
    outcome = accept_task_diff(built.path, worktree, reviewed_identity=reviewed, committer=USER)
    assert outcome.landed
    assert (built.path / "notes.txt").read_text() == "unrelated\n"


def test_a_checkout_in_the_middle_of_a_merge_is_refused(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.MID_MERGE)
    base = git(built.path, "rev-parse", "HEAD").strip()
    worktree = create_task_worktree(
        built.path, worktrees_root=tmp_path / "worktrees", repo_key="r", task_id=TASK, base_commit=base
    )
    task_edits(worktree)
    with pytest.raises(CheckoutNotCleanError) as caught:
        accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert caught.value.operations == ("merge",)
    assert "merge in progress" in str(caught.value)


def test_a_detached_head_is_refused_with_a_clear_message(built: BuiltRepository, worktree: TaskWorktree) -> None:
    git(built.path, "checkout", "-q", "--detach", "HEAD")
    task_edits(worktree)
    state = checkout_state(built.path)
    with pytest.raises(DetachedHeadError) as caught:
        accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert "detached HEAD" in str(caught.value)
    assert "check out the branch" in str(caught.value)
    assert checkout_state(built.path) == state


def test_a_worktree_of_another_repository_is_refused(tmp_path: Path, worktree: TaskWorktree) -> None:
    other = make_repository(tmp_path / "other", RepoState.CLEAN)
    task_edits(worktree)
    with pytest.raises(WorktreeNotUsableError) as caught:
        accept_task_diff(other.path, worktree, reviewed_identity=diff_against_base(worktree).identity)
    assert caught.value.problem == "foreign-repository"


# ------------------------------------------------------------------------------------------- reject


def test_reject_returns_the_patch_and_identity_and_changes_nothing(
    tmp_path: Path, built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree)
    state = checkout_state(built.path)
    status = git(worktree.path, "status", "--porcelain")
    rejected = reject_task_diff(worktree, reviewed_identity=reviewed.identity)
    assert rejected.patch == reviewed.unified_diff
    assert rejected.identity == reviewed.identity
    assert rejected.matches_review
    assert (rejected.base, rejected.head) == (worktree.base, worktree.base)
    assert checkout_state(built.path) == state
    assert git(worktree.path, "status", "--porcelain") == status
    patch = tmp_path / "rejected.patch"
    patch.write_bytes(rejected.patch)
    assert run_git(built.path, "apply", "--check", str(patch)).returncode == 0


def test_reject_keeps_what_the_worktree_holds_and_says_when_it_is_not_what_was_reviewed(
    worktree: TaskWorktree,
) -> None:
    task_edits(worktree)
    reviewed = diff_against_base(worktree).identity
    write_files(worktree.path, {"later.txt": "edited after review\n"})
    rejected = reject_task_diff(worktree, reviewed_identity=reviewed)
    assert not rejected.matches_review
    assert b"later.txt" in rejected.patch


# ---------------------------------------------------------------------------------- after the outcome


def test_after_accept_the_worktree_and_its_merged_branch_can_be_removed(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    accept_task_diff(built.path, worktree, reviewed_identity=diff_against_base(worktree).identity, committer=USER)
    removal = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False, delete_branch=True)
    assert removal.removed and removal.branch_deleted
    assert str(worktree.path) not in git(built.path, "worktree", "list")
    assert_git_is_happy(built.path)


def test_after_reject_the_worktree_is_removable_once_that_patch_is_stored(
    built: BuiltRepository, worktree: TaskWorktree
) -> None:
    task_edits(worktree)
    rejected = reject_task_diff(worktree, reviewed_identity=diff_against_base(worktree).identity)
    kept = remove_task_worktree(worktree, keep_if_unsaved=True, outcome_ambiguous=False)
    assert kept.refusal is RemovalRefusal.UNSAVED_WORK
    removal = remove_task_worktree(
        worktree, keep_if_unsaved=True, outcome_ambiguous=False, saved_patch_identity=rejected.identity
    )
    assert removal.removed
    assert_git_is_happy(built.path)


# -------------------------------------------------------------------------------- a hostile repository


def _commit_as_the_user(repo: Path, relative: str, content: str) -> None:
    """A user-side commit made through libgit2: the git CLI would spring the repository's traps."""
    repository = pygit2.Repository(str(repo))
    try:
        (repo / relative).write_text(content)
        index = repository.index
        index.add(relative)
        index.write()
        tree = index.write_tree()
        signature = pygit2.Signature("Test User", "user@example.invalid")
        repository.create_commit("HEAD", signature, signature, "user change", tree, [repository.head.target])
    finally:
        repository.free()


def test_a_whole_task_in_a_malicious_repository_runs_none_of_its_programs(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.MALICIOUS)
    assert built.head is not None
    roots = tmp_path / "worktrees"
    first = create_task_worktree(built.path, worktrees_root=roots, repo_key="r", task_id=TASK, base_commit=built.head)
    task_edits(first)
    commit_worktree_changes(first, "checkpoint", author=USER)
    write_files(first.path, {"more.txt": "uncommitted\n"})
    _commit_as_the_user(built.path, "README.md", "# calc\n\nchanged by the user\n")
    outcome = accept_task_diff(built.path, first, reviewed_identity=diff_against_base(first).identity, committer=USER)
    assert outcome.kind is AcceptKind.MERGE_COMMIT

    second_task = TaskId.parse("tsk_fedcba9876543210")
    second = create_task_worktree(
        built.path, worktrees_root=roots, repo_key="r", task_id=second_task, base_commit=outcome.landed_head
    )
    write_files(second.path, {"pkg/calc.py": "conflicting\n"})
    rejected = reject_task_diff(second, reviewed_identity=diff_against_base(second).identity)
    assert remove_task_worktree(
        second, keep_if_unsaved=True, outcome_ambiguous=False, saved_patch_identity=rejected.identity,
        delete_branch=True,
    ).removed  # fmt: skip
    assert remove_task_worktree(first, keep_if_unsaved=True, outcome_ambiguous=False, delete_branch=True).removed

    repository = pygit2.Repository(str(built.path))
    try:
        assert repository.status(untracked_files="all", ignored=False) == {}
        assert repository.head.target == pygit2.Oid(hex=outcome.landed_head)
    finally:
        repository.free()
    assert executed_traps(built.markers) == []
