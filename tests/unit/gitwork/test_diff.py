"""A task's diff against its base, the diff identity, and checkpoint commits on the task branch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError, NotFoundError, WorktreeNotUsableError
from codeflux.domain.ids import TaskId
from codeflux.gitwork.diff import (
    CommitAuthor,
    FileChangeKind,
    FileDiff,
    commit_worktree_changes,
    committed_diff,
    diff_against_base,
    diff_identity,
    patch_files,
)
from codeflux.gitwork.worktrees import TaskWorktree, create_task_worktree
from tests.fixtures.repos import BuiltRepository, RepoState, executed_traps, git, make_repository, run_git, write_files

TASK = TaskId.parse("tsk_0123456789abcdef")
AUTHOR = CommitAuthor(name="codeflux agent", email="agent@example.invalid", time=1_700_000_000)


def new_worktree(tmp_path: Path, built: BuiltRepository) -> TaskWorktree:
    assert built.head is not None
    return create_task_worktree(
        built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1", task_id=TASK, base_commit=built.head
    )


@pytest.fixture
def built(tmp_path: Path) -> BuiltRepository:
    return make_repository(tmp_path, RepoState.CLEAN)


@pytest.fixture
def worktree(tmp_path: Path, built: BuiltRepository) -> TaskWorktree:
    return new_worktree(tmp_path, built)


def edit_worktree(worktree: TaskWorktree) -> None:
    write_files(
        worktree.path,
        {
            "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
            "pkg/new.py": "NEW = True\n",
            "assets/logo.bin": bytes(range(256)) * 4,
            "debug.log": "ignored\n",
        },
    )
    (worktree.path / "README.md").unlink()


# -------------------------------------------------------------------------------- diff identity

BASE = "a" * 40
HEAD = "b" * 40


def test_diff_identity_is_sha256_of_the_documented_byte_layout() -> None:
    diff = b"diff --git a/x b/x\n+\xff\n"
    assert len(diff) == 22
    layout = b"codeflux-diff-identity-v1\nbase " + BASE.encode() + b"\nhead " + HEAD.encode() + b"\ndiff 22\n" + diff
    assert diff_identity(BASE, HEAD, diff) == hashlib.sha256(layout).hexdigest()


_ids = st.one_of(
    st.text(alphabet="0123456789abcdef", min_size=40, max_size=40),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)


@given(base=_ids, head=_ids, diff=st.binary(max_size=200), other=st.data())
def test_diff_identity_changes_when_any_of_base_head_or_diff_changes(
    base: str, head: str, diff: bytes, other: st.DataObject
) -> None:
    original = diff_identity(base, head, diff)
    changed = other.draw(st.sampled_from(["base", "head", "diff"]))
    if changed == "base":
        new_base = other.draw(_ids)
        assume(new_base != base)
        assert diff_identity(new_base, head, diff) != original
    elif changed == "head":
        new_head = other.draw(_ids)
        assume(new_head != head)
        assert diff_identity(base, new_head, diff) != original
    else:
        new_diff = other.draw(st.binary(max_size=200))
        assume(new_diff != diff)
        assert diff_identity(base, head, new_diff) != original


@given(base=_ids, head=_ids)
def test_swapping_base_and_head_changes_the_identity(base: str, head: str) -> None:
    assume(base != head)
    assert diff_identity(base, head, b"x") != diff_identity(head, base, b"x")


@pytest.mark.parametrize("bad", ["abc123", "A" * 40, "g" * 40, "a" * 41, "", "HEAD", "a" * 39 + "\n"])
def test_diff_identity_refuses_anything_but_full_lowercase_commit_ids(bad: str) -> None:
    with pytest.raises(InvalidValueError):
        diff_identity(bad, HEAD, b"")
    with pytest.raises(InvalidValueError):
        diff_identity(BASE, bad, b"")


def test_diff_identity_refuses_text_instead_of_bytes() -> None:
    with pytest.raises(InvalidValueError):
        diff_identity(BASE, HEAD, "diff text")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- the diff


def test_a_fresh_worktree_has_an_empty_diff(worktree: TaskWorktree) -> None:
    diff = diff_against_base(worktree)
    assert diff.is_empty
    assert diff.files == ()
    assert diff.head == diff.base == worktree.base
    assert diff.identity == diff_identity(worktree.base, worktree.base, b"")


def test_the_diff_holds_uncommitted_edits_untracked_files_deletions_and_marks_binaries(worktree: TaskWorktree) -> None:
    edit_worktree(worktree)
    diff = diff_against_base(worktree)
    assert diff.files == (
        FileDiff(path="README.md", kind=FileChangeKind.DELETED, binary=False, additions=0, deletions=3),
        FileDiff(path="assets/logo.bin", kind=FileChangeKind.ADDED, binary=True, additions=0, deletions=0),
        FileDiff(path="pkg/calc.py", kind=FileChangeKind.MODIFIED, binary=False, additions=2, deletions=2),
        FileDiff(path="pkg/new.py", kind=FileChangeKind.ADDED, binary=False, additions=1, deletions=0),
    )
    assert b"GIT binary patch" in diff.unified_diff
    assert b"debug.log" not in diff.unified_diff  # ignored
    assert diff.identity == diff_identity(diff.base, diff.head, diff.unified_diff)


def test_the_diff_is_deterministic_and_reading_it_changes_nothing(worktree: TaskWorktree) -> None:
    edit_worktree(worktree)
    index = Path(git(worktree.path, "rev-parse", "--git-path", "index").strip())
    index = index if index.is_absolute() else worktree.path / index
    status_before = git(worktree.path, "status", "--porcelain")  # git itself may refresh the index here
    index_before = index.read_bytes()
    first, second = diff_against_base(worktree), diff_against_base(worktree)
    assert first == second
    assert index.read_bytes() == index_before
    assert git(worktree.path, "status", "--porcelain") == status_before
    assert git(worktree.path, "rev-parse", "HEAD").strip() == worktree.base


def test_the_patch_applies_to_a_checkout_of_the_base_and_reproduces_the_worktree(
    tmp_path: Path, built: BuiltRepository, worktree: TaskWorktree
) -> None:
    edit_worktree(worktree)
    diff = diff_against_base(worktree)
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "-q", str(built.path), str(copy))
    (tmp_path / "task.patch").write_bytes(diff.unified_diff)
    git(copy, "apply", "--binary", str(tmp_path / "task.patch"))
    for relative in ("pkg/calc.py", "pkg/new.py", "assets/logo.bin"):
        assert (copy / relative).read_bytes() == (worktree.path / relative).read_bytes()
    assert not (copy / "README.md").exists()


def test_staged_changes_and_committed_changes_both_count(worktree: TaskWorktree) -> None:
    write_files(worktree.path, {"one.txt": "1\n"})
    git(worktree.path, "add", "one.txt")
    git(worktree.path, "commit", "-q", "-m", "one")
    write_files(worktree.path, {"two.txt": "2\n"})
    git(worktree.path, "add", "two.txt")
    diff = diff_against_base(worktree)
    assert [f.path for f in diff.files] == ["one.txt", "two.txt"]
    assert diff.head == git(worktree.path, "rev-parse", "HEAD").strip() != worktree.base


def test_a_nested_repository_in_the_worktree_is_listed_as_skipped_not_diffed(worktree: TaskWorktree) -> None:
    inner = worktree.path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    write_files(inner, {"lib.py": "X = 1\n"})
    diff = diff_against_base(worktree)
    assert diff.skipped_paths == ("inner/",)
    assert diff.is_empty


def test_a_worktree_that_fails_verification_is_not_diffed(worktree: TaskWorktree) -> None:
    git(worktree.path, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(WorktreeNotUsableError) as caught:
        diff_against_base(worktree)
    assert caught.value.problem == "wrong-branch"


# ----------------------------------------------------------------------------- checkpoint commits


def test_a_checkpoint_commits_everything_on_the_task_branch_and_leaves_the_worktree_clean(
    worktree: TaskWorktree,
) -> None:
    edit_worktree(worktree)
    before = diff_against_base(worktree)
    commit = commit_worktree_changes(worktree, "checkpoint: after edits", author=AUTHOR)
    assert commit is not None
    assert git(worktree.path, "rev-parse", worktree.branch).strip() == commit
    assert git(worktree.path, "rev-parse", f"{commit}^").strip() == worktree.base
    assert git(worktree.path, "status", "--porcelain") == ""
    assert git(worktree.path, "log", "-1", "--format=%an <%ae> %at %s") == (
        "codeflux agent <agent@example.invalid> 1700000000 checkpoint: after edits\n"
    )
    after = diff_against_base(worktree)
    assert after.unified_diff == before.unified_diff
    assert after.head == commit
    assert after.identity != before.identity  # the head is part of the identity


def test_a_committed_task_diff_renders_as_the_worktree_did_and_a_stored_patch_lists_its_files(
    worktree: TaskWorktree, built: BuiltRepository
) -> None:
    edit_worktree(worktree)
    before = diff_against_base(worktree)
    commit = commit_worktree_changes(worktree, "checkpoint: after edits", author=AUTHOR)
    assert commit is not None

    landed = committed_diff(built.path, base=worktree.base, commit=commit)  # read from the user's checkout

    assert landed.unified_diff == before.unified_diff and landed.files == before.files
    assert landed.head == commit and landed.identity == diff_identity(worktree.base, commit, landed.unified_diff)
    assert patch_files(before.unified_diff) == before.files  # the binary file too
    assert patch_files(b"") == ()
    with pytest.raises(NotFoundError):
        committed_diff(built.path, base=worktree.base, commit="0" * 40)


def test_a_checkpoint_with_nothing_uncommitted_changes_nothing(worktree: TaskWorktree) -> None:
    assert commit_worktree_changes(worktree, "nothing", author=AUTHOR) is None
    assert git(worktree.path, "rev-parse", "HEAD").strip() == worktree.base


def test_checkpoints_run_no_hook_and_do_not_sign(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.MALICIOUS)
    worktree = new_worktree(tmp_path, built)
    edit_worktree(worktree)
    assert commit_worktree_changes(worktree, "checkpoint", author=AUTHOR) is not None
    assert diff_against_base(worktree).files
    assert executed_traps(built.markers) == []


@pytest.mark.parametrize(
    ("name", "email"), [("", "a@b"), ("a", ""), ("a <b>", "a@b"), ("a", "a@b>\nx"), ("   ", "a@b")]
)
def test_a_commit_author_with_an_empty_or_unsafe_field_is_refused(name: str, email: str) -> None:
    with pytest.raises(InvalidValueError):
        CommitAuthor(name=name, email=email)


def test_an_empty_checkpoint_message_is_refused(worktree: TaskWorktree) -> None:
    with pytest.raises(InvalidValueError):
        commit_worktree_changes(worktree, "  \n", author=AUTHOR)


def test_the_git_cli_agrees_with_the_diff_of_committed_changes(worktree: TaskWorktree) -> None:
    edit_worktree(worktree)
    commit_worktree_changes(worktree, "checkpoint", author=AUTHOR)
    ours = diff_against_base(worktree)
    theirs = run_git(worktree.path, "diff", "--binary", "--full-index", worktree.base, "HEAD").stdout
    assert [f.path for f in ours.files] == sorted(
        line.split(" b/")[-1] for line in theirs.splitlines() if line.startswith("diff --git")
    )
