"""apply_patch without git: reading diffs, placing hunks, and the all-or-nothing write beneath the worktree."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import PathRefusedError, ToolFailedError
from codeflux.domain.execution import ExecutionState
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.file_changes import FileChanges, FileState
from codeflux.worker.tools.hunks import apply_hunks, split_lines
from codeflux.worker.tools.results import ToolResult
from codeflux.worker.tools.unified_diff import parse_unified_diff
from tests.fixtures.worktrees import TaskWorktree, git, make_task_worktree
from tests.unit.worker.test_worker_tools import make_context, run


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


@pytest.fixture
def context(task: TaskWorktree, tmp_path: Path) -> ToolContext:
    return make_context(task, tmp_path)


def applied(context: ToolContext, patch: str) -> ToolResult:
    result = run(context, "apply_patch", {"patch": patch})[0]
    assert result.state is ExecutionState.SUCCEEDED, (result.failure_kind, result.message)
    return result


def refused(context: ToolContext, patch: str, kind: str) -> str:
    result = run(context, "apply_patch", {"patch": patch})[0]
    assert (result.state, result.failure_kind) == (ExecutionState.FAILED, kind), result.message
    return result.message


def tree_state(root: Path) -> dict[str, tuple[int, bytes]]:
    return {str(path.relative_to(root)): (path.lstat().st_mode, b"" if path.is_dir() else path.read_bytes())
            for path in sorted(root.rglob("*")) if ".git" not in path.relative_to(root).parts}


def one_file(patch: str) -> bytes:
    sections = parse_unified_diff(patch.encode())
    assert len(sections) == 1
    return apply_hunks(SOURCE, sections[0].hunks, path="x")


SOURCE = b"".join(f"line {number}\n".encode() for number in range(1, 21))


# ------------------------------------------------------------------------------------------ reading diffs


def test_a_git_diff_with_renames_copies_modes_and_new_files_is_read_section_by_section() -> None:
    patch = (
        "Subject: a mail around the diff\n\n---\n a | 1 +\n\n"
        "diff --git a/src/util.py b/src/moved.py\nsimilarity index 90%\nrename from src/util.py\n"
        "rename to src/moved.py\nindex 1111111..2222222 100644\n--- a/src/util.py\n+++ b/src/moved.py\n"
        "@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/docs/notes.txt b/docs/copy.txt\ncopy from docs/notes.txt\ncopy to docs/copy.txt\n"
        'diff --git "a/caf\\303\\251 menu.txt" "b/caf\\303\\251 menu.txt"\nnew file mode 100755\nindex 0..1\n'
        "--- /dev/null\n+++ \"b/caf\\303\\251 menu.txt\"\n@@ -0,0 +1 @@\n+espresso\n"
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n-- \n2.39.5\n"
    )
    sections = parse_unified_diff(patch.encode())
    described = [(s.old_path, s.new_path, s.copy, s.new_mode, len(s.hunks)) for s in sections]
    assert described == [
        ("src/util.py", "src/moved.py", False, None, 1),
        ("run.sh", "run.sh", False, 0o100755, 0),
        ("docs/notes.txt", "docs/copy.txt", True, None, 0),
        (None, "café menu.txt", False, 0o100755, 1),
        ("gone.txt", None, False, None, 0),
    ]


@pytest.mark.parametrize(("patch", "kind"), [
    ("diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+/etc\n", "patch-refused"),
    ("diff --git a/m b/m\nindex 1..2 160000\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-a\n+b\n", "patch-refused"),
    ("diff --git a/x b/x\ndeleted file mode 120000\n", "patch-refused"),
    ("diff --git a/img.png b/img.png\nindex 1..2 100644\nGIT binary patch\nliteral 5\nabc\n", "patch-refused"),
    ("diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n",
     "patch-refused"),
    ("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "patch-does-not-apply"),
    ("diff --git a/x b/x\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "patch-does-not-apply"),
    ("diff --git a/x b/x\nindex 1..2\n", "patch-does-not-apply"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@ \n", "patch-does-not-apply"),
], ids=["symlink", "submodule", "deleting a symlink", "binary", "binary, summary only", "two names, no rename",
        "header disagrees", "changes nothing", "empty hunk"])
def test_what_cannot_be_applied_is_refused_while_reading(patch: str, kind: str) -> None:
    with pytest.raises(ToolFailedError) as raised:
        parse_unified_diff(patch.encode())
    assert raised.value.failure_kind == kind
    assert raised.value.message.startswith("patch line ")


def test_a_binary_patch_says_why_it_is_refused(context: ToolContext) -> None:
    message = refused(context, "diff --git a/x.bin b/x.bin\nGIT binary patch\nliteral 1\nA\n", "patch-refused")
    assert "binary" in message


@pytest.mark.parametrize("header", ["@@ -3,9 +3,1 @@", "@@ -3 +3 @@", "@@ -3,2 +3,2 @@", "@@ @@", "@@"])
def test_wrong_or_missing_hunk_counts_are_recounted_from_the_lines(header: str) -> None:
    patch = f"--- a/x\n+++ b/x\n{header}\n line 3\n-line 4\n+line four\n+line 4.5\n line 5\n"
    assert split_lines(one_file(patch))[2:6] == [b"line 3\n", b"line four\n", b"line 4.5\n", b"line 5\n"]


def test_a_recounted_hunk_stops_at_the_next_file_header_and_at_a_signature() -> None:
    patch = ("--- a/x\n+++ b/x\n@@ -1,9 +1,9 @@\n a\n-b\n+c\n--- a/y\n+++ b/y\n@@ -1,1 +1,1 @@\n-q\n+r\n"
             "-- \n2.39.5\n")
    sections = parse_unified_diff(patch.encode())
    assert [(s.old_path, s.hunks[0].preimage, s.hunks[0].postimage) for s in sections] == [
        ("x", (b"a\n", b"b\n"), (b"a\n", b"c\n")), ("y", (b"q\n",), (b"r\n",)),
    ]


def test_a_removed_line_that_looks_like_a_header_stays_in_its_hunk_when_the_counts_fit() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- not a header\n+++ still a line\n context\n"
    (section,) = parse_unified_diff(patch.encode())
    assert section.hunks[0].preimage == (b"-- not a header\n", b"context\n")


@pytest.mark.parametrize(("body", "source", "expected"), [
    # The empty line was a separator: only without it does the hunk fit.
    (" a\n-b\n+B\n c\n\n", b"a\nb\nc\n", b"a\nB\nc\n"),
    # The empty line is blank context: with it the hunk has trailing context and need not end the file.
    (" a\n-b\n+B\n\n", b"a\nb\n\nc\n", b"a\nB\n\nc\n"),
])
def test_empty_lines_ending_a_recounted_hunk_are_context_if_they_fit_else_a_separator(body: str, source: bytes,
                                                                                       expected: bytes) -> None:
    (section,) = parse_unified_diff(f"--- a/x\n+++ b/x\n@@ -1,9 +1,9 @@\n{body}".encode())
    assert apply_hunks(source, section.hunks, path="x") == expected


def test_no_newline_at_end_of_file_is_kept_on_each_side() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n"
    (section,) = parse_unified_diff(patch.encode())
    assert (section.hunks[0].preimage, section.hunks[0].postimage) == ((b"old",), (b"new\n",))
    assert apply_hunks(b"old", section.hunks, path="x") == b"new\n"


# A few distinct lines, so files repeat lines and a hunk's context can match in more than one place.
LINES = st.lists(st.sampled_from(["alpha\n", "beta\n", "gamma\n", "\n", "    return x\n", "}\n"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(before=LINES, after=LINES, context=st.integers(min_value=1, max_value=3))
def test_any_unified_diff_turns_the_old_file_into_the_new_one(before: list[str], after: list[str],
                                                              context: int) -> None:
    diff = "".join(difflib.unified_diff(before, after, "a/f.txt", "b/f.txt", n=context))
    assume(diff)  # identical files have no diff to apply
    (section,) = parse_unified_diff(diff.encode())
    assert apply_hunks("".join(before).encode(), section.hunks, path="f.txt") == "".join(after).encode()


# --------------------------------------------------------------------------------------------- placing


def test_a_hunk_with_stale_line_numbers_lands_on_the_nearest_match() -> None:
    source = b"a\nx\nb\n" + b"pad\n" * 10 + b"a\nx\nb\nend\n"
    patch = "--- a/f\n+++ b/f\n@@ -12,3 +12,3 @@\n a\n-x\n+y\n b\n"  # the second a/x/b starts at line 14
    (section,) = parse_unified_diff(patch.encode())
    assert apply_hunks(source, section.hunks, path="f") == b"a\nx\nb\n" + b"pad\n" * 10 + b"a\ny\nb\nend\n"
    patch = "--- a/x\n+++ b/x\n@@ -40,2 +40,2 @@\n-line 7\n+line seven\n line 8\n"  # past the end of the file
    assert split_lines(one_file(patch))[6] == b"line seven\n"


def test_hunks_anchored_at_an_end_of_the_file_only_match_there() -> None:
    at_start = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-line 2\n+two\n line 3\n"  # starts at line 1: must match there
    with pytest.raises(ToolFailedError, match="hunk 1"):
        one_file(at_start)
    at_end = "--- a/x\n+++ b/x\n@@ -5,2 +5,3 @@\n line 5\n line 6\n+appended\n"  # no trailing context
    with pytest.raises(ToolFailedError, match="does not match"):
        one_file(at_end)
    real_end = "--- a/x\n+++ b/x\n@@ -20 +20,2 @@\n line 20\n+appended\n"
    assert one_file(real_end).endswith(b"line 20\nappended\n")


def test_later_hunks_apply_to_the_result_of_earlier_ones() -> None:
    patch = ("--- a/x\n+++ b/x\n@@ -2,2 +2,4 @@\n line 2\n+new a\n+new b\n line 3\n"
             "@@ -10,3 +12,2 @@\n line 10\n-line 11\n line 12\n")
    lines = split_lines(one_file(patch))
    assert lines[1:5] == [b"line 2\n", b"new a\n", b"new b\n", b"line 3\n"]
    assert b"line 11\n" not in lines and len(lines) == 21


def test_carriage_returns_are_content_and_must_match() -> None:
    patch = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\r\n+b\r\n"
    (section,) = parse_unified_diff(patch)
    assert apply_hunks(b"a\r\n", section.hunks, path="x") == b"b\r\n"
    with pytest.raises(ToolFailedError):
        apply_hunks(b"a\n", section.hunks, path="x")


# ------------------------------------------------------------------------------------- through the tool


def test_a_new_executable_file_and_a_mode_change_get_the_executable_bit(context: ToolContext,
                                                                       task: TaskWorktree) -> None:
    patch = ("diff --git a/bin/run.sh b/bin/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/bin/run.sh\n"
             "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
             "diff --git a/src/util.py b/src/util.py\nold mode 100644\nnew mode 100755\n")
    assert applied(context, patch).content == "bin/run.sh\nsrc/util.py\n"
    assert (task.worktree / "bin/run.sh").stat().st_mode & 0o111
    assert (task.worktree / "src/util.py").stat().st_mode & 0o111
    assert (task.worktree / "src/util.py").read_text() == "VALUE = 1\n"
    assert git(task.worktree, "status", "--porcelain") == " M src/util.py\n?? bin/\n"
    applied(context, "diff --git a/src/util.py b/src/util.py\nold mode 100755\nnew mode 100644\n")
    assert not (task.worktree / "src/util.py").stat().st_mode & 0o111


def test_a_deletion_removes_the_file_and_the_folder_it_emptied(context: ToolContext, task: TaskWorktree) -> None:
    applied(context, "--- a/docs/notes.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-first line\n-second line\n")
    assert not (task.worktree / "docs").exists()


def test_a_deletion_that_leaves_lines_behind_changes_nothing(context: ToolContext, task: TaskWorktree) -> None:
    before = tree_state(task.worktree)
    message = refused(context, "--- a/docs/notes.txt\n+++ /dev/null\n@@ -1,2 +1 @@\n-first line\n second line\n",
                      "patch-does-not-apply")
    assert "leave" in message
    assert tree_state(task.worktree) == before


def test_a_rename_with_an_edit_and_a_copy_keep_the_permission_bits(context: ToolContext, task: TaskWorktree) -> None:
    (task.worktree / "src/util.py").chmod(0o750)
    patch = ("diff --git a/src/util.py b/lib/util.py\nrename from src/util.py\nrename to lib/util.py\n"
             "--- a/src/util.py\n+++ b/lib/util.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 3\n"
             "diff --git a/docs/notes.txt b/docs/again.txt\ncopy from docs/notes.txt\ncopy to docs/again.txt\n")
    applied(context, patch)
    assert not (task.worktree / "src/util.py").exists()
    moved = task.worktree / "lib/util.py"
    assert moved.read_text() == "VALUE = 3\n" and stat.S_IMODE(moved.stat().st_mode) == 0o750
    assert (task.worktree / "docs/again.txt").read_text() == (task.worktree / "docs/notes.txt").read_text()


def test_two_sections_for_one_file_apply_in_turn(context: ToolContext, task: TaskWorktree) -> None:
    patch = ("--- a/src/util.py\n+++ b/src/util.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"
             "--- a/src/util.py\n+++ b/src/util.py\n@@ -1 +1,2 @@\n VALUE = 2\n+MORE = 1\n")
    applied(context, patch)
    assert (task.worktree / "src/util.py").read_text() == "VALUE = 2\nMORE = 1\n"


def test_a_new_file_edited_by_a_later_section_still_gets_the_usual_permissions(context: ToolContext,
                                                                                task: TaskWorktree) -> None:
    patch = ("--- /dev/null\n+++ b/fresh.txt\n@@ -0,0 +1 @@\n+one\n"
             "--- a/fresh.txt\n+++ b/fresh.txt\n@@ -1 +1,2 @@\n one\n+two\n")
    applied(context, patch)
    reference = task.worktree / "reference.txt"
    reference.write_text("made by open(2) under the same umask\n")
    fresh = task.worktree / "fresh.txt"
    assert fresh.read_text() == "one\ntwo\n"
    assert stat.S_IMODE(fresh.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode)


@pytest.mark.parametrize(("patch", "why"), [
    ("--- /dev/null\n+++ b/README.md\n@@ -0,0 +1 @@\n+x\n", "already exists"),
    ("--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n", "does not exist"),
    ("diff --git a/src/util.py b/README.md\nrename from src/util.py\nrename to README.md\n", "already exists"),
], ids=["create over a file", "edit a missing file", "rename onto a file"])
def test_a_section_that_does_not_fit_the_worktree_changes_nothing(context: ToolContext, task: TaskWorktree,
                                                                  patch: str, why: str) -> None:
    before = tree_state(task.worktree)
    first = "--- a/docs/notes.txt\n+++ b/docs/notes.txt\n@@ -1,2 +1,2 @@\n-first line\n+FIRST\n second line\n"
    assert why in refused(context, first + patch, "patch-does-not-apply")
    assert tree_state(task.worktree) == before


def test_a_result_over_the_size_limit_is_refused(task: TaskWorktree, tmp_path: Path) -> None:
    small = make_context(task, tmp_path, max_file_bytes=64)  # files up to 8 × 64 bytes
    patch = "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1 @@\n+" + "x" * 600 + "\n"
    refused(small, patch, "too-large")
    assert not (task.worktree / "big.txt").exists()


def test_a_patch_to_a_symlinked_file_is_refused(context: ToolContext, task: TaskWorktree, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("a\n")
    (task.worktree / "link.txt").symlink_to(outside)
    refused(context, "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-a\n+b\n", "patch-refused")
    assert outside.read_text() == "a\n"


# ------------------------------------------------------------------------------- the change set itself


def test_a_failed_write_undoes_every_earlier_change(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "keep").mkdir(parents=True)
    (root / "keep" / "a.txt").write_bytes(b"a\n")
    (root / "keep" / "a.txt").chmod(0o640)
    (root / "only" / "deep").mkdir(parents=True)
    (root / "only" / "deep" / "gone.txt").write_bytes(b"gone\n")
    before = tree_state(root)
    with FileChanges(root, max_bytes=1024) as changes:
        changes.stage(("keep", "a.txt"), FileState(data=b"changed\n", mode=0o600))
        changes.stage(("only", "deep", "gone.txt"), None)
        changes.stage(("new", "dir", "b.txt"), FileState(data=b"b\n", mode=0o666), new_file_mode=True)
        changes.stage(("late.txt",), FileState(data=b"mine\n", mode=0o666), new_file_mode=True)
        (root / "late.txt").write_bytes(b"someone else's\n")  # appears between planning and writing
        with pytest.raises(ToolFailedError) as raised:
            changes.commit()
    assert raised.value.failure_kind == "already-exists"
    assert raised.value.message.startswith("nothing was changed")
    after = tree_state(root)
    assert after.pop("late.txt") == ((root / "late.txt").lstat().st_mode, b"someone else's\n")
    assert after == before
    assert list(root.rglob(".cfw-*")) == []


def test_a_directory_swapped_for_a_symlink_after_planning_is_written_through_the_descriptor_held(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "f.txt").write_bytes(b"inside\n")
    (outside / "f.txt").write_bytes(b"outside\n")
    with FileChanges(root, max_bytes=1024) as changes:
        current = changes.read(("sub", "f.txt"))
        assert current is not None and current.data == b"inside\n"
        changes.stage(("sub", "f.txt"), FileState(data=b"patched\n", mode=current.mode))
        os.rename(root / "sub", root / "moved")
        (root / "sub").symlink_to(outside)
        changes.commit()
    assert (outside / "f.txt").read_bytes() == b"outside\n"
    assert (root / "moved" / "f.txt").read_bytes() == b"patched\n"


def test_a_directory_that_is_a_symlink_when_first_opened_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "sub").symlink_to(outside)
    with FileChanges(root, max_bytes=1024) as changes, pytest.raises(PathRefusedError):
        changes.stage(("sub", "new.txt"), FileState(data=b"x\n", mode=0o666), new_file_mode=True)
    assert list(outside.iterdir()) == []
