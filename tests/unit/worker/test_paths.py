"""The one worktree path resolver: canonical relative paths only, no '..', no '.git', no symlink, ever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import PathNotFoundError, PathRefusedError
from codeflux.worker.paths import resolve_worktree_path, resolve_worktree_root, worktree_components

TRAVERSALS = [
    "../x",
    "../../x",
    "a/../../x",
    "./../x",
    "..",
    "a/..",
    "/etc/passwd",
    "/abs",
    "//server/share/x",
    "..\\x",
    "a\\b",
    "C:/x",
    "C:\\x",
    "c:x",
    "",
    ".",
    "./a",
    "a/.",
    "   ",
    " a",
    "a ",
    "a/ b",
    "~/x",
    "~",
    "a\x00b",
    "a\nb",
    "a//b",
    "a/./b",
    "a/",
    ".git",
    ".git/hooks/x",
    ".git/config",
    "sub/.GIT/config",
    "sub/.Git",
    ".git./hooks/x",
    "x" * 256,
    "/".join(["d"] * 2100),
]


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "worktree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# hi\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("outside content\n")
    return directory


def listing(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


@pytest.mark.parametrize("relative", TRAVERSALS, ids=repr)
def test_a_traversal_or_non_canonical_path_is_refused_and_nothing_is_created(
    worktree: Path, outside: Path, relative: str
) -> None:
    before_inside, before_outside = listing(worktree), listing(outside)
    with pytest.raises(PathRefusedError) as refused:
        resolve_worktree_path(worktree, relative, must_exist=False)
    assert refused.value.failure_kind == "path-refused"
    assert not isinstance(refused.value, PathNotFoundError)
    assert listing(worktree) == before_inside
    assert listing(outside) == before_outside


@pytest.mark.parametrize(
    "relative",
    ["README.md", "src/app.py", "src/new.py", "new/dir/file.txt", "a b/c d.txt", "docs/.gitignore",
     ".github/workflows/ci.yml", "ünï/cødé.txt", "ab:c.txt", "x..y", "...", ".gitkeep"],
)
def test_a_plain_relative_path_resolves_inside_the_worktree(worktree: Path, relative: str) -> None:
    resolved = resolve_worktree_path(worktree, relative, must_exist=False)
    assert resolved == worktree.resolve() / relative
    assert resolved.is_relative_to(worktree.resolve())


def test_an_existing_file_resolves_with_must_exist(worktree: Path) -> None:
    assert resolve_worktree_path(worktree, "src/app.py", must_exist=True) == worktree.resolve() / "src/app.py"


def test_a_missing_path_with_must_exist_is_not_found(worktree: Path) -> None:
    with pytest.raises(PathNotFoundError) as missing:
        resolve_worktree_path(worktree, "src/nothing.py", must_exist=True)
    assert missing.value.failure_kind == "not-found"


def test_a_path_through_a_file_is_refused(worktree: Path) -> None:
    with pytest.raises(PathRefusedError, match="not a directory"):
        resolve_worktree_path(worktree, "README.md/x", must_exist=False)


def test_the_message_never_echoes_the_path(worktree: Path) -> None:
    with pytest.raises(PathRefusedError) as refused:
        resolve_worktree_path(worktree, "../sk-ant-api03-notreallyakeybutlongenough", must_exist=False)
    assert "sk-ant" not in str(refused.value)


@pytest.mark.parametrize("target_kind", ["file inside", "directory inside", "file outside", "directory outside",
                                         "root", "dangling"])
@pytest.mark.parametrize("relative", ["link", "link/x", "link/sub/new.txt"])
def test_a_planted_symlink_is_refused_wherever_it_points(
    worktree: Path, outside: Path, target_kind: str, relative: str
) -> None:
    targets = {
        "file inside": worktree / "README.md",
        "directory inside": worktree / "src",
        "file outside": outside / "secret.txt",
        "directory outside": outside,
        "root": Path("/"),
        "dangling": outside / "missing",
    }
    (worktree / "link").symlink_to(targets[target_kind])
    before = listing(outside)
    for must_exist in (False, True):
        with pytest.raises(PathRefusedError, match="symbolic link") as refused:
            resolve_worktree_path(worktree, relative, must_exist=must_exist)
        assert not isinstance(refused.value, PathNotFoundError)
    assert listing(outside) == before


def test_a_symlink_deep_in_the_path_is_refused(worktree: Path, outside: Path) -> None:
    (worktree / "src" / "escape").symlink_to(outside)
    with pytest.raises(PathRefusedError, match="symbolic link"):
        resolve_worktree_path(worktree, "src/escape/secret.txt", must_exist=True)


def test_a_worktree_behind_a_symlink_resolves_under_its_real_path(tmp_path: Path, worktree: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(worktree)
    assert resolve_worktree_path(alias, "src/app.py", must_exist=True) == worktree.resolve() / "src/app.py"


def test_a_relative_or_missing_worktree_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PathRefusedError, match="absolute"):
        resolve_worktree_path(Path("relative/worktree"), "x", must_exist=False)
    with pytest.raises(PathNotFoundError, match="worktree does not exist"):
        resolve_worktree_path(tmp_path / "gone", "x", must_exist=False)
    with pytest.raises(PathNotFoundError, match="worktree does not exist"):
        resolve_worktree_root(tmp_path / "gone")


def test_components_are_checked_without_touching_the_file_system() -> None:
    assert worktree_components("a/b/c.txt") == ("a", "b", "c.txt")
    with pytest.raises(PathRefusedError):
        worktree_components("a/../b")


_ALPHABET = st.sampled_from(["a", "b", ".", "..", "/", "\\", ":", "~", " ", "\x00", "git", "GIT", "link",
                             "inner", "src", "C", "\n", "ü"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_ALPHABET, max_size=12))
def test_no_accepted_path_ever_resolves_outside_the_worktree(worktree: Path, outside: Path, pieces: list[str]) -> None:
    if not (worktree / "link").is_symlink():
        (worktree / "link").symlink_to(outside)
        (worktree / "inner").symlink_to(worktree / "src")
    relative = "".join(pieces)
    try:
        resolved = resolve_worktree_path(worktree, relative, must_exist=False)
    except PathRefusedError:
        return
    root = worktree.resolve()
    assert resolved.is_relative_to(root) and resolved != root
    assert os.path.realpath(resolved).startswith(str(root) + os.sep)
    parts = resolved.relative_to(root).parts
    assert ".." not in parts and all(part.lower() != ".git" for part in parts)
    for depth in range(1, len(parts) + 1):
        assert not (root.joinpath(*parts[:depth])).is_symlink()
