"""One walker writes a git tree to disk for both callers (issue 16): the planner's commit view (private modes,
files past its bounds left out) and the pipeline's base copy (the repository's modes, refused past its bound).
Both write the same tracked content from the object store, links last and never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

import pygit2
import pytest

from codeflux.domain.ids import TaskId
from codeflux.gitwork.base_scratch import write_base_scratch
from codeflux.gitwork.checkout import opened_checkout
from codeflux.gitwork.commit_view import write_commit_view
from codeflux.gitwork.tree_files import EntryKind, TreeWriter, tracked_entries, write_entries
from codeflux.gitwork.worktrees import create_task_worktree
from tests.fixtures.repos import commit_all, make_repository, write_files

TASK = TaskId.parse("tsk_0123456789abcdef")


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def written(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under ``root``: its kind and permission bits."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        info = os.lstat(path)
        kind = "link" if stat.S_ISLNK(info.st_mode) else "dir" if stat.S_ISDIR(info.st_mode) else "file"
        found[path.relative_to(root).as_posix()] = (kind, 0 if kind == "link" else stat.S_IMODE(info.st_mode))
    return found


def test_the_commit_view_and_the_base_copy_write_the_same_tree_each_with_its_own_modes(tmp_path: Path) -> None:
    built = make_repository(tmp_path / "src")
    write_files(built.path, {"tools/run.sh": "#!/bin/sh\necho hi\n"})
    os.chmod(built.path / "tools" / "run.sh", 0o700)  # git keeps only "executable"
    os.symlink("calc.py", built.path / "pkg" / "alias.py")
    head = commit_all(built.path, "an executable and a link")
    view_root = tmp_path / "view"
    view_root.mkdir()

    view = write_commit_view(built.path, view_root, commit=head)
    worktree = create_task_worktree(built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1",
                                    task_id=TASK, base_commit=head)
    copy = write_base_scratch(worktree, root=tmp_path / "task-tmp", directory="codeflux-scratch/base", overlay=())

    assert copy.path is not None
    in_view, in_copy = written(view_root), written(copy.path)
    assert in_view.keys() == in_copy.keys()  # the same walk: same files, folders and links
    assert in_view["pkg/alias.py"] == in_copy["pkg/alias.py"] == ("link", 0)
    assert os.readlink(view_root / "pkg" / "alias.py") == os.readlink(copy.path / "pkg" / "alias.py") == "calc.py"
    kept = ~current_umask()
    assert (in_view["tools/run.sh"], in_copy["tools/run.sh"]) == (("file", 0o700 & kept), ("file", 0o755 & kept))
    assert (in_view["pkg/calc.py"], in_copy["pkg/calc.py"]) == (("file", 0o600 & kept), ("file", 0o644 & kept))
    assert (in_view["pkg"], in_copy["pkg"]) == (("dir", 0o700 & kept), ("dir", 0o755 & kept))
    assert all((view_root / path).read_bytes() == (copy.path / path).read_bytes()
               for path, (kind, _) in in_view.items() if kind == "file")
    assert view.written == copy.files == sum(1 for kind, _ in in_view.values() if kind == "file")


def test_a_link_is_written_last_and_a_folder_reached_through_a_link_is_refused(tmp_path: Path) -> None:
    built = make_repository(tmp_path / "src")
    os.symlink("../outside", built.path / "pkg" / "escape")
    head = commit_all(built.path, "a link that points out")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "tree"
    target.mkdir()

    with opened_checkout(built.path) as (repository, _):
        commit = repository[head]
        assert isinstance(commit, pygit2.Commit)
        entries, complete = tracked_entries(repository, commit.tree, limit=10_000)
        writer = TreeWriter(target, private=True)
        write_entries(repository, entries, writer)
        assert not os.path.lexists(target / "pkg" / "escape")  # links wait until every file is written
        writer.write_links()

    assert complete and any(entry.kind is EntryKind.LINK for entry, _ in entries)
    assert os.readlink(target / "pkg" / "escape") == "../outside"
    with pytest.raises(FileExistsError):
        writer.folder(PurePosixPath("pkg/escape/inner"))
    assert list(outside.iterdir()) == []
