"""Opening a repository: read-only discovery, refusals, identity, the dirty-tree hash and pygit2 mapping."""

from __future__ import annotations

import hashlib
import inspect
import os
from pathlib import Path

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.domain.errors import GitOperationFailedError, RepositoryNotUsableError
from codeflux.gitwork import checkout
from codeflux.gitwork.checkout import GitOperation, git_failure, map_git_errors
from codeflux.gitwork.repository import (
    ChangeStatus,
    WorkingTreeChange,
    acknowledge_dirty_tree,
    dirty_tree_hash,
    open_repository,
    repository_identity,
)
from tests.fixtures.repos import (
    RepoState,
    commit_all,
    executed_traps,
    git,
    make_repository,
    run_git,
    write_files,
)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_dir_fingerprint(repo: Path) -> dict[str, tuple[int, int, bytes]]:
    """(size, mtime, bytes) of every file under .git except objects: what 'read-only' must leave alone."""
    found = {}
    for path in sorted((repo / ".git").rglob("*")):
        if path.is_file() and "objects" not in path.relative_to(repo / ".git").parts:
            info = path.stat()
            found[str(path)] = (info.st_size, info.st_mtime_ns, path.read_bytes())
    return found


# ------------------------------------------------------------------------------------------ discovery


def test_a_clean_repository_reports_head_branch_identity_and_no_changes(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.CLEAN)
    snapshot = open_repository(built.path)
    assert snapshot.root == built.path.resolve()
    assert snapshot.head == built.head == git(built.path, "rev-parse", "HEAD").strip()
    assert snapshot.branch == "main"
    assert not snapshot.is_detached
    assert snapshot.operations == ()
    assert snapshot.changes == ()
    assert not snapshot.is_dirty
    roots = tuple(git(built.path, "rev-list", "--max-parents=0", "HEAD").split())
    assert snapshot.root_commits == roots
    assert snapshot.identity == repository_identity(root=snapshot.root, root_commits=roots)


def test_opening_from_a_subdirectory_names_the_top_level(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.CLEAN)
    assert open_repository(built.path / "pkg").root == built.path.resolve()


def test_a_dirty_tree_lists_modified_added_deleted_and_untracked_files_but_not_ignored_ones(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.DIRTY)
    snapshot = open_repository(built.path)
    repo = built.path
    assert snapshot.changes == (
        WorkingTreeChange(path="README.md", status=ChangeStatus.DELETED, content_sha256=None),
        WorkingTreeChange(
            path="notes.txt", status=ChangeStatus.UNTRACKED, content_sha256=sha256_of(repo / "notes.txt")
        ),
        WorkingTreeChange(
            path="pkg/calc.py", status=ChangeStatus.MODIFIED, content_sha256=sha256_of(repo / "pkg/calc.py")
        ),
        WorkingTreeChange(
            path="pkg/extra.py", status=ChangeStatus.ADDED, content_sha256=sha256_of(repo / "pkg/extra.py")
        ),
    )
    assert snapshot.is_dirty
    assert snapshot.dirty_hash == dirty_tree_hash(snapshot.changes)


def test_opening_writes_nothing_in_the_git_directory_or_the_working_tree(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.DIRTY)
    before = git_dir_fingerprint(built.path)
    files_before = sorted(p for p in built.path.rglob("*") if ".git" not in p.parts)
    open_repository(built.path)
    assert git_dir_fingerprint(built.path) == before
    assert sorted(p for p in built.path.rglob("*") if ".git" not in p.parts) == files_before


def test_a_symlink_is_hashed_by_its_target_and_a_staged_then_removed_file_counts_as_deleted(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.CLEAN)
    os.symlink("pkg/calc.py", built.path / "link")
    write_files(built.path, {"gone.txt": "x\n"})
    git(built.path, "add", "gone.txt")
    (built.path / "gone.txt").unlink()
    changes = {c.path: c for c in open_repository(built.path).changes}
    assert changes["link"].content_sha256 == hashlib.sha256(b"pkg/calc.py").hexdigest()
    assert changes["gone.txt"].status is ChangeStatus.DELETED
    assert changes["gone.txt"].content_sha256 is None


def test_a_detached_head_has_no_branch(tmp_path: Path) -> None:
    snapshot = open_repository(make_repository(tmp_path, RepoState.DETACHED).path)
    assert snapshot.branch is None
    assert snapshot.is_detached


@pytest.mark.parametrize(
    ("state", "operation"), [(RepoState.MID_MERGE, GitOperation.MERGE), (RepoState.MID_REBASE, GitOperation.REBASE)]
)
def test_an_interrupted_merge_or_rebase_is_reported_with_its_conflict(
    tmp_path: Path, state: RepoState, operation: GitOperation
) -> None:
    snapshot = open_repository(make_repository(tmp_path, state).path)
    assert snapshot.operations == (operation,)
    assert [(c.path, c.status) for c in snapshot.changes] == [("pkg/calc.py", ChangeStatus.CONFLICTED)]


def _stop_cherry_pick(repo: Path) -> None:
    run_git(repo, "cherry-pick", "other", check=False)


def _stop_revert(repo: Path) -> None:
    run_git(repo, "revert", "--no-edit", "HEAD~1", check=False)


def _start_bisect(repo: Path) -> None:
    git(repo, "bisect", "start")
    git(repo, "bisect", "bad")


@pytest.mark.parametrize(
    ("start", "operation"),
    [(_stop_cherry_pick, GitOperation.CHERRY_PICK), (_stop_revert, GitOperation.REVERT),
     (_start_bisect, GitOperation.BISECT)],
)  # fmt: skip
def test_cherry_pick_revert_and_bisect_in_progress_are_read_from_the_git_directory(
    tmp_path: Path, start: object, operation: GitOperation
) -> None:
    repo = make_repository(tmp_path, RepoState.CLEAN).path
    git(repo, "checkout", "-q", "-b", "other")
    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    commit_all(repo, "other: swap")
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return a + b  # main\n"})
    commit_all(repo, "main: comment")
    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return a + b  # main, again\n"})
    commit_all(repo, "main: again")
    assert callable(start)
    start(repo)
    assert operation in open_repository(repo).operations


def test_a_nested_repository_is_one_untracked_entry_and_opens_as_its_own_repository(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.NESTED)
    outer = open_repository(built.path)
    assert outer.changes == (
        WorkingTreeChange(path="vendor/inner/", status=ChangeStatus.UNTRACKED, content_sha256=None),
    )
    inner = open_repository(built.path / "vendor" / "inner" / "sub")
    assert inner.root == (built.path / "vendor" / "inner").resolve()
    assert inner.root_commits != outer.root_commits


def test_opening_a_malicious_repository_runs_none_of_its_programs(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.MALICIOUS)
    write_files(built.path, {"pkg/calc.py": "changed\n", "new.txt": "new\n"})
    snapshot = open_repository(built.path)
    assert [c.path for c in snapshot.changes] == ["new.txt", "pkg/calc.py"]
    assert executed_traps(built.markers) == []


# ------------------------------------------------------------------------------------------- refusals


def _not_a_directory(tmp_path: Path) -> Path:
    (tmp_path / "file.txt").write_text("x")
    return tmp_path / "file.txt"


def _plain_directory(tmp_path: Path) -> Path:
    (tmp_path / "plain").mkdir()
    return tmp_path / "plain"


@pytest.mark.parametrize(
    ("make_path", "problem"),
    [
        (lambda tmp: tmp / "missing", "not-a-directory"),
        (_not_a_directory, "not-a-directory"),
        (_plain_directory, "not-a-repository"),
        (lambda tmp: make_repository(tmp, RepoState.NO_COMMITS).path, "no-commits"),
        (lambda tmp: make_repository(tmp, RepoState.BARE).path, "bare"),
    ],
    ids=["missing", "a-file", "plain-directory", "no-commits", "bare"],
)
def test_an_unusable_path_is_refused_saying_which_requirement_failed(
    tmp_path: Path, make_path: object, problem: str
) -> None:
    assert callable(make_path)
    path = make_path(tmp_path)
    with pytest.raises(RepositoryNotUsableError) as caught:
        open_repository(path)
    assert caught.value.problem == problem
    assert problem in str(caught.value)
    assert exit_code_for(caught.value) is ExitCode.PREREQUISITE


def test_a_git_pointer_to_nowhere_is_not_a_repository(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nonexistent/place\n")
    with pytest.raises(RepositoryNotUsableError) as caught:
        open_repository(broken)
    assert caught.value.problem == "not-a-repository"


def _break_config(repo: Path) -> None:
    (repo / ".git" / "config").write_text("[core\n")


def _break_head(repo: Path) -> None:
    (repo / ".git" / "HEAD").write_text("garbage\n")


@pytest.mark.parametrize("damage", [_break_config, _break_head], ids=["config", "HEAD"])
def test_a_damaged_repository_is_refused_as_unreadable_and_chained_from_pygit2(tmp_path: Path, damage: object) -> None:
    built = make_repository(tmp_path, RepoState.CLEAN)
    assert callable(damage)
    damage(built.path)
    with pytest.raises(RepositoryNotUsableError) as caught:
        open_repository(built.path)
    assert caught.value.problem == "unreadable"
    assert isinstance(caught.value.__cause__, pygit2.GitError)


# --------------------------------------------------------------------------------------- identity


def test_the_identity_is_stable_and_changes_with_the_path_or_an_unrelated_history(tmp_path: Path) -> None:
    built = make_repository(tmp_path / "a", RepoState.CLEAN)
    first = open_repository(built.path)
    assert open_repository(built.path).identity == first.identity
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(built.path), str(clone))
    cloned = open_repository(clone)
    assert cloned.root_commits == first.root_commits
    assert cloned.identity != first.identity
    unrelated = make_repository(tmp_path / "b", RepoState.CLEAN)
    git(unrelated.path, "commit", "-q", "--amend", "-m", "another first commit")
    assert open_repository(unrelated.path).root_commits != first.root_commits


# ------------------------------------------------------------------------------- dirty-tree hash


def test_an_acknowledgement_holds_until_the_tree_changes(tmp_path: Path) -> None:
    built = make_repository(tmp_path, RepoState.DIRTY)
    acknowledged = open_repository(built.path).dirty_hash
    assert acknowledge_dirty_tree(acknowledged, open_repository(built.path))
    (built.path / "notes.txt").write_text("edited after the acknowledgement\n")
    assert not acknowledge_dirty_tree(acknowledged, open_repository(built.path))
    (built.path / "notes.txt").write_text("untracked\n")
    assert acknowledge_dirty_tree(acknowledged, open_repository(built.path))
    write_files(built.path, {"another.txt": "new\n"})
    assert not acknowledge_dirty_tree(acknowledged, open_repository(built.path))


def test_the_dirty_hash_is_sha256_of_the_documented_canonical_json() -> None:
    changes = [
        WorkingTreeChange(path="b.txt", status=ChangeStatus.DELETED, content_sha256=None),
        WorkingTreeChange(path="a.txt", status=ChangeStatus.UNTRACKED, content_sha256="ab" * 32),
    ]
    expected = (
        '{"changes":[["a.txt","untracked","' + "ab" * 32 + '"],["b.txt","deleted",null]],'
        '"schema":"codeflux-dirty-tree-v1"}'
    )
    assert dirty_tree_hash(changes) == hashlib.sha256(expected.encode()).hexdigest()


_changes = st.lists(
    st.builds(
        WorkingTreeChange,
        path=st.text(min_size=1, max_size=20),
        status=st.sampled_from(ChangeStatus),
        content_sha256=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    ),
    max_size=8,
    unique_by=lambda change: change.path,
)


@given(data=st.data(), changes=_changes)
def test_the_dirty_hash_does_not_depend_on_discovery_order(
    data: st.DataObject, changes: list[WorkingTreeChange]
) -> None:
    shuffled = data.draw(st.permutations(changes))
    assert dirty_tree_hash(shuffled) == dirty_tree_hash(changes)


@given(changes=_changes.filter(bool), status=st.sampled_from(ChangeStatus), data=st.data())
def test_changing_one_entry_changes_the_dirty_hash(
    changes: list[WorkingTreeChange], status: ChangeStatus, data: st.DataObject
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(changes) - 1))
    original = changes[index]
    path, digest = original.path, original.content_sha256
    candidates = [
        WorkingTreeChange(path=path + "x", status=original.status, content_sha256=digest),
        WorkingTreeChange(path=path, status=status, content_sha256=digest),
        WorkingTreeChange(path=path, status=original.status, content_sha256="0" * 64),
    ]
    others = {c.path for c in changes if c is not original}
    replacement = data.draw(st.sampled_from(candidates).filter(lambda r: r != original and r.path not in others))
    edited = [*changes[:index], replacement, *changes[index + 1 :]]
    assert dirty_tree_hash(edited) != dirty_tree_hash(changes)


# ----------------------------------------------------------------------------- pygit2 error mapping

_UNRAISED_BY_CALLS = {pygit2.Passthrough}  # a signal a Python filter callback raises; we register none


def test_every_exception_type_pygit2_exports_has_an_explicit_mapping() -> None:
    exported = {
        obj for _, obj in inspect.getmembers(pygit2, inspect.isclass) if issubclass(obj, BaseException)
    } - _UNRAISED_BY_CALLS
    mapped = {kind for kind, _ in checkout._PROBLEM_BY_EXCEPTION}
    assert exported - mapped == set(), "map these pygit2 exceptions in codeflux/gitwork/checkout.py"


@pytest.mark.parametrize(("kind", "problem"), checkout._PROBLEM_BY_EXCEPTION)
def test_each_pygit2_exception_becomes_a_git_operation_failure_chained_with_from(
    kind: type[Exception], problem: str
) -> None:
    with pytest.raises(GitOperationFailedError) as caught, map_git_errors("do the thing"):
        raise kind("libgit2 said no")
    assert caught.value.problem == problem
    assert caught.value.__cause__ is not None
    assert type(caught.value.__cause__) is kind
    assert str(caught.value) == f"git could not do the thing ({problem})"
    assert "libgit2 said no" not in str(caught.value)
    assert git_failure("x", kind("y")).problem == problem
    assert exit_code_for(caught.value) is ExitCode.FAILED
