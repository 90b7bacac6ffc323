"""Each worker tool on a real git worktree, in-process (no gRPC): what it does, and how it fails."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionLimits, ExecutionState
from codeflux.worker.confinement import unconfined
from codeflux.worker.environment import build_worker_environment
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.command import CommandOutput, CommandPin, CommandStarted
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.dispatch import ToolEvent, execute_tool
from codeflux.worker.tools.results import ToolResult
from tests.fixtures.workers import live_processes_in_group, pin_executable, wait_until_group_is_gone
from tests.fixtures.worktrees import TaskWorktree, git, make_task_worktree

NO_PIN = CommandPin(executable_path="", executable_sha256="", env_overrides={}, stdin=b"")


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


@pytest.fixture
def context(task: TaskWorktree, tmp_path: Path) -> ToolContext:
    return make_context(task, tmp_path)


def make_context(task: TaskWorktree, tmp_path: Path, *, timeout_ms: int = 20_000, max_output_bytes: int = 65_536,
                 max_file_bytes: int = 4096, base_commit: str | None = None) -> ToolContext:
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    return ToolContext(
        worktree=task.worktree.resolve(),
        confinement=unconfined(task.worktree.resolve()),  # these tests are about the tools, not the box
        limits=ExecutionLimits(timeout_ms=timeout_ms, max_output_bytes=max_output_bytes, max_file_bytes=max_file_bytes),
        deadline=time.monotonic() + timeout_ms / 1000,
        cancelled=threading.Event(),
        environment=build_worker_environment(base=os.environ, home=tmp_path / "home", tmpdir=tmp_path / "tmp"),
        processes=ProcessGroups(),
        base_commit=base_commit,
    )


def run(context: ToolContext, tool: str, arguments: Mapping[str, object], *, pin: CommandPin = NO_PIN
        ) -> tuple[ToolResult, list[ToolEvent]]:
    events: list[ToolEvent] = []
    generator = execute_tool(tool=tool, raw_arguments=arguments, context=context, pin=pin)
    while True:
        try:
            events.append(next(generator))
        except StopIteration as stop:
            return stop.value, events


def command(context: ToolContext, argv: list[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None,
            working_directory: str = ".") -> tuple[ToolResult, list[ToolEvent]]:
    pinned = pin_executable(argv[0])
    pin = CommandPin(executable_path=pinned.path, executable_sha256=pinned.sha256, env_overrides=env or {},
                     stdin=stdin, working_directory=working_directory)
    return run(context, "run_command", {"argv": argv}, pin=pin)


def output(events: list[ToolEvent], stream: str = "stdout") -> str:
    return "".join(event.text for event in events if isinstance(event, CommandOutput) and event.stream == stream)


def succeeded(result: ToolResult) -> ToolResult:
    assert result.state is ExecutionState.SUCCEEDED, (result.failure_kind, result.message)
    assert result.failure_kind == ""
    return result


def failed(result: ToolResult, kind: str) -> ToolResult:
    assert (result.state, result.failure_kind) == (ExecutionState.FAILED, kind), result.message
    assert result.message
    return result


def temporary_files(root: Path) -> list[Path]:
    return [path for path in root.rglob(".cfw-*")]


# ------------------------------------------------------------------------------------------- reading


def test_read_file_returns_the_text_and_the_sha256_write_file_needs(context: ToolContext, task: TaskWorktree) -> None:
    result = succeeded(run(context, "read_file", {"path": "docs/notes.txt"})[0])
    data = (task.worktree / "docs/notes.txt").read_bytes()
    assert result.content == "".join(f"{number:>6}\t{line}\n" for number, line in
                                     enumerate(data.decode().splitlines(), start=1))
    assert result.message == "lines 1–2 of 2 (the whole file)"
    assert result.content_sha256 == hashlib.sha256(data).hexdigest()


def test_read_file_returns_a_line_range(context: ToolContext) -> None:
    result = succeeded(run(context, "read_file", {"path": "docs/notes.txt", "start_line": 2, "line_count": 1})[0])
    assert result.content == "     2\tsecond line\n"
    assert result.message == "showing lines 2–2 of 2"
    first = succeeded(run(context, "read_file", {"path": "docs/notes.txt", "line_count": 1})[0])
    assert first.message == "showing lines 1–1 of 2; call read_file with start_line=2 to continue"
    assert first.content == f"     1\tfirst line\n[codeflux: {first.message}]\n"


@pytest.mark.parametrize(("setup", "path", "kind"), [
    (lambda root: (root / "bin.dat").write_bytes(b"a\x00b"), "bin.dat", "not-text"),
    (lambda root: (root / "big.txt").write_text("x" * 40_000), "big.txt", "too-large"),
    (lambda root: None, "src", "wrong-file-type"),
    (lambda root: None, "missing.txt", "not-found"),
    (lambda root: (root / "link.txt").symlink_to(root / "README.md"), "link.txt", "path-refused"),
    (lambda root: os.mkfifo(root / "pipe"), "pipe", "wrong-file-type"),
])
def test_read_file_refuses_what_it_cannot_show_as_text(context: ToolContext, task: TaskWorktree, setup: object,
                                                       path: str, kind: str) -> None:
    setup(task.worktree)  # type: ignore[operator]
    failed(run(context, "read_file", {"path": path})[0], kind)


def test_list_directory_never_shows_git_and_never_enters_a_symlink(context: ToolContext, task: TaskWorktree,
                                                                   tmp_path: Path) -> None:
    (task.worktree / "escape").symlink_to(tmp_path)
    flat = succeeded(run(context, "list_directory", {})[0]).content.splitlines()
    assert flat == ["README.md", "docs/", "escape@", "src/"]
    deep = succeeded(run(context, "list_directory", {"recursive": True})[0]).content.splitlines()
    assert "src/app.py" in deep and "escape@" in deep
    assert not any(line.startswith(("escape/", ".git")) for line in deep)
    assert succeeded(run(context, "list_directory", {"path": "src"})[0]).content == "src/app.py\nsrc/util.py\n"
    failed(run(context, "list_directory", {"path": "README.md"})[0], "wrong-file-type")
    failed(run(context, "list_directory", {"path": "escape"})[0], "path-refused")


# -------------------------------------------------------------------------------------------- search


def test_glob_matches_at_any_depth_and_below_a_directory(context: ToolContext) -> None:
    assert succeeded(run(context, "glob", {"pattern": "*.py"})[0]).content == "src/app.py\nsrc/util.py\n"
    assert succeeded(run(context, "glob", {"pattern": "**/notes.*"})[0]).content == "docs/notes.txt\n"
    assert succeeded(run(context, "glob", {"pattern": "a*.py", "path": "src"})[0]).content == "src/app.py\n"
    failed(run(context, "glob", {"pattern": "../*"})[0], "invalid-pattern")
    failed(run(context, "glob", {"pattern": "/etc/*"})[0], "invalid-pattern")


def test_grep_finds_lines_and_honours_its_options(context: ToolContext, task: TaskWorktree) -> None:
    assert succeeded(run(context, "grep", {"pattern": "line$"})[0]).content == \
        "docs/notes.txt:1:first line\ndocs/notes.txt:2:second line\n"
    assert succeeded(run(context, "grep", {"pattern": "FIRST", "ignore_case": True})[0]).content == \
        "docs/notes.txt:1:first line\n"
    (task.worktree / "src/regex.py").write_text("a = f(x)[0]\n")
    assert succeeded(run(context, "grep", {"pattern": "f(x)[0]", "fixed_string": True})[0]).content == \
        "src/regex.py:1:a = f(x)[0]\n"
    one = succeeded(run(context, "grep", {"pattern": "line", "max_results": 1})[0])
    assert one.content.splitlines()[0] == "docs/notes.txt:1:first line"
    assert "call grep with offset=1 for the next ones" in one.message
    assert succeeded(run(context, "grep", {"pattern": "line", "offset": 1})[0]).content == \
        "docs/notes.txt:2:second line\n"
    assert succeeded(run(context, "grep", {"pattern": "VALUE", "glob": "*.md"})[0]).content == ""
    assert succeeded(run(context, "grep", {"pattern": "VALUE", "path": "src/util.py"})[0]).content == \
        "src/util.py:1:VALUE = 1\n"
    failed(run(context, "grep", {"pattern": "(unclosed"})[0], "invalid-pattern")


def test_grep_skips_binary_files_git_and_symlinked_directories(context: ToolContext, task: TaskWorktree,
                                                               tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("NEEDLE outside\n")
    (task.worktree / "link").symlink_to(outside)
    (task.worktree / "bin.dat").write_bytes(b"NEEDLE\x00binary")
    (task.worktree / "hit.txt").write_text("NEEDLE inside\n")
    assert succeeded(run(context, "grep", {"pattern": "NEEDLE"})[0]).content == "hit.txt:1:NEEDLE inside\n"
    assert succeeded(run(context, "grep", {"pattern": "initial commit"})[0]).content == ""


# ------------------------------------------------------------------------------------------- writing


def test_write_file_creates_then_replaces_only_with_the_expected_sha256(context: ToolContext,
                                                                        task: TaskWorktree) -> None:
    created = succeeded(run(context, "write_file", {"path": "new/deep/file.txt", "content": "one\n"})[0])
    target = task.worktree / "new/deep/file.txt"
    assert target.read_text() == "one\n"
    assert created.content_sha256 == hashlib.sha256(b"one\n").hexdigest()
    failed(run(context, "write_file", {"path": "new/deep/file.txt", "content": "two\n"})[0], "already-exists")
    wrong = hashlib.sha256(b"something else").hexdigest()
    failed(run(context, "write_file", {"path": "new/deep/file.txt", "content": "two\n", "expected_sha256": wrong})[0],
           "content-mismatch")
    assert target.read_text() == "one\n"
    replaced = succeeded(run(context, "write_file", {"path": "new/deep/file.txt", "content": "two\n",
                                                     "expected_sha256": created.content_sha256})[0])
    assert target.read_text() == "two\n"
    assert replaced.content_sha256 == hashlib.sha256(b"two\n").hexdigest()
    failed(run(context, "write_file", {"path": "absent.txt", "content": "x", "expected_sha256": wrong})[0],
           "not-found")
    assert temporary_files(task.worktree) == []


def test_replacing_a_file_keeps_its_permission_bits(context: ToolContext, task: TaskWorktree) -> None:
    script = task.worktree / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    sha = hashlib.sha256(script.read_bytes()).hexdigest()
    succeeded(run(context, "write_file", {"path": "run.sh", "content": "#!/bin/sh\necho\n", "expected_sha256": sha})[0])
    assert script.stat().st_mode & 0o777 == 0o755


def test_oversized_content_is_refused_and_nothing_is_written(context: ToolContext, task: TaskWorktree) -> None:
    failed(run(context, "write_file", {"path": "big.txt", "content": "x" * 5000})[0], "too-large")
    assert not (task.worktree / "big.txt").exists()


def test_edit_file_replaces_exactly_one_occurrence(context: ToolContext, task: TaskWorktree) -> None:
    target = task.worktree / "src/app.py"
    result = succeeded(run(context, "edit_file", {"path": "src/app.py", "old_text": "hello", "new_text": "hi"})[0])
    assert target.read_text() == "def greet(name):\n    return f'hi {name}'\n"
    assert result.content_sha256 == hashlib.sha256(target.read_bytes()).hexdigest()
    failed(run(context, "edit_file", {"path": "src/app.py", "old_text": "absent", "new_text": "x"})[0], "no-match")
    failed(run(context, "edit_file", {"path": "src/app.py", "old_text": "e", "new_text": "x"})[0], "ambiguous-match")
    (task.worktree / "latin1.txt").write_bytes(b"caf\xe9\n")
    failed(run(context, "edit_file", {"path": "latin1.txt", "old_text": "caf", "new_text": "x"})[0], "not-text")
    assert target.read_text() == "def greet(name):\n    return f'hi {name}'\n"


def test_overlapping_occurrences_count_as_ambiguous(context: ToolContext, task: TaskWorktree) -> None:
    (task.worktree / "a.txt").write_text("aaa")
    failed(run(context, "edit_file", {"path": "a.txt", "old_text": "aa", "new_text": "b"})[0], "ambiguous-match")


def test_delete_file_removes_a_file_but_never_a_directory_or_a_link(context: ToolContext, task: TaskWorktree,
                                                                    tmp_path: Path) -> None:
    outside = tmp_path / "keep.txt"
    outside.write_text("keep\n")
    (task.worktree / "link.txt").symlink_to(outside)
    succeeded(run(context, "delete_file", {"path": "src/util.py"})[0])
    assert not (task.worktree / "src/util.py").exists()
    failed(run(context, "delete_file", {"path": "src"})[0], "wrong-file-type")
    failed(run(context, "delete_file", {"path": "link.txt"})[0], "path-refused")
    failed(run(context, "delete_file", {"path": "src/util.py"})[0], "not-found")
    assert outside.read_text() == "keep\n" and (task.worktree / "link.txt").is_symlink()


# ------------------------------------------------------------------------------------------- patches

GOOD_PATCH = """\
--- a/src/util.py
+++ b/src/util.py
@@ -1 +1,2 @@
-VALUE = 1
+VALUE = 2
+OTHER = 3
--- a/docs/notes.txt
+++ b/docs/notes.txt
@@ -1,2 +1,2 @@
 first line
-second line
+second line, edited
"""


def test_apply_patch_applies_every_file(context: ToolContext, task: TaskWorktree) -> None:
    result = succeeded(run(context, "apply_patch", {"patch": GOOD_PATCH})[0])
    assert result.content == "docs/notes.txt\nsrc/util.py\n"
    assert (task.worktree / "src/util.py").read_text() == "VALUE = 2\nOTHER = 3\n"
    assert (task.worktree / "docs/notes.txt").read_text() == "first line\nsecond line, edited\n"


def test_a_patch_with_one_failing_hunk_changes_nothing(context: ToolContext, task: TaskWorktree) -> None:
    broken = GOOD_PATCH.replace(" first line\n-second line", " first line\n-not what is there")
    failed(run(context, "apply_patch", {"patch": broken})[0], "patch-does-not-apply")
    assert (task.worktree / "src/util.py").read_text() == "VALUE = 1\n"


def test_apply_patch_renames_and_creates(context: ToolContext, task: TaskWorktree) -> None:
    patch = ("diff --git a/src/util.py b/src/moved.py\nsimilarity index 100%\nrename from src/util.py\n"
             "rename to src/moved.py\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n"
             "+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n")
    result = succeeded(run(context, "apply_patch", {"patch": patch})[0])
    assert result.content == "new.txt\nsrc/moved.py\nsrc/util.py\n"
    assert (task.worktree / "src/moved.py").read_text() == "VALUE = 1\n"
    assert (task.worktree / "new.txt").read_text() == "fresh\n"


@pytest.mark.parametrize("patch", [
    "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+echo pwned\n",
    "--- /dev/null\n+++ b/sub/.GIT/config\n@@ -0,0 +1 @@\n+x\n",
    "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n",
    "diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+/etc/passwd\n",
    "diff --git a/src/app.py b/.git/config\nrename from src/app.py\nrename to .git/config\n",
], ids=["git hooks", "nested .GIT", "traversal", "symlink", "rename into .git"])
def test_a_patch_touching_a_refused_path_or_making_a_symlink_is_refused(context: ToolContext,
                                                                        task: TaskWorktree, patch: str) -> None:
    failed(run(context, "apply_patch", {"patch": patch})[0], "patch-refused")
    assert git(task.worktree, "status", "--porcelain") == ""
    assert not (task.worktree.parent / "outside.txt").exists()


def test_a_patch_through_a_symlinked_directory_is_refused(context: ToolContext, task: TaskWorktree,
                                                          tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (task.worktree / "link").symlink_to(outside)
    patch = "--- /dev/null\n+++ b/link/planted.txt\n@@ -0,0 +1 @@\n+x\n"
    failed(run(context, "apply_patch", {"patch": patch})[0], "patch-refused")
    assert list(outside.iterdir()) == []


def test_a_patch_with_wrong_hunk_counts_is_applied_with_recounting(context: ToolContext, task: TaskWorktree) -> None:
    patch = "--- a/src/util.py\n+++ b/src/util.py\n@@ -1,7 +1,9 @@\n-VALUE = 1\n+VALUE = 2\n"
    succeeded(run(context, "apply_patch", {"patch": patch})[0])
    assert (task.worktree / "src/util.py").read_text() == "VALUE = 2\n"


def test_garbage_is_not_a_patch(context: ToolContext) -> None:
    failed(run(context, "apply_patch", {"patch": "this is not a diff\n"})[0], "patch-does-not-apply")


# ----------------------------------------------------------------------------------------------- git


def test_git_status_inspect_diff_and_git_log_see_the_task_changes(context: ToolContext, task: TaskWorktree,
                                                                   tmp_path: Path) -> None:
    (task.worktree / "src/util.py").write_text("VALUE = 2\n")
    (task.worktree / "untracked.txt").write_text("new\n")
    status = succeeded(run(context, "git_status", {})[0]).content
    assert " M src/util.py" in status and "?? untracked.txt" in status and status.startswith("## codeflux/task/")
    diff = succeeded(run(context, "inspect_diff", {})[0]).content
    assert "-VALUE = 1\n+VALUE = 2\n" in diff
    assert "+++ b/untracked.txt\n@@ -0,0 +1,1 @@\n+new\n" in diff
    only = succeeded(run(context, "inspect_diff", {"path": "untracked.txt"})[0]).content
    assert "src/util.py" not in only and "untracked.txt" in only
    git(task.worktree, "commit", "-q", "-am", "task change")
    based = make_context(task, tmp_path, base_commit=task.base)
    assert "+VALUE = 2" in succeeded(run(based, "inspect_diff", {})[0]).content
    log = succeeded(run(context, "git_log", {"max_count": 5})[0])
    assert log.message == "2 commits" and "    task change\n" in log.content
    assert succeeded(run(context, "git_log", {"path": "docs/notes.txt"})[0]).message == "1 commits"


# ------------------------------------------------------------------------------------------ commands


def test_a_command_streams_its_output_and_reports_its_exit_code(context: ToolContext) -> None:
    result, events = command(context, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    failed(result, "nonzero-exit")
    assert result.exit_code == 3
    assert isinstance(events[0], CommandStarted) and events[0].process_group_id > 1
    assert output(events) == "out\n" and output(events, "stderr") == "err\n"


def test_a_command_reads_the_request_stdin_and_sees_the_overrides(context: ToolContext) -> None:
    result, events = command(context, ["sh", "-c", 'cat; printf "%s" "$CI"'], stdin=b"from stdin\n",
                             env={"CI": "yes"})
    succeeded(result)
    assert output(events) == "from stdin\nyes"


def test_a_command_runs_in_the_worktree_with_the_per_task_home(context: ToolContext, tmp_path: Path) -> None:
    result, events = command(context, ["sh", "-c", 'pwd; printf "%s\\n" "$HOME" "$TMPDIR"'])
    succeeded(result)
    assert output(events).splitlines() == [str(context.worktree), str(tmp_path / "home"), str(tmp_path / "tmp")]


def test_a_command_can_start_in_a_folder_under_the_worker_tmpdir(context: ToolContext, tmp_path: Path) -> None:
    """``$TMPDIR/<path>`` (the pipeline's base copies, issue 16) resolves under the worker's own TMPDIR."""
    (tmp_path / "tmp" / "codeflux-scratch" / "base").mkdir(parents=True)
    result, events = command(context, ["sh", "-c", "pwd"], working_directory="$TMPDIR/codeflux-scratch/base")
    succeeded(result)
    assert output(events) == f"{(tmp_path / 'tmp' / 'codeflux-scratch' / 'base').resolve()}\n"


@pytest.mark.parametrize(("cwd", "problem"), [
    ("$TMPDIR/../home", "'..'"), ("$TMPDIR/linked", "symbolic link"), ("$TMPDIR/missing", "does not exist"),
    ("$TMPDIR/file.txt", "not a directory"), ("$TMPDIR", "plain relative path"), ("$HOME/x", "variable"),
    ("linked", "symbolic link"),
])
def test_a_working_directory_that_leaves_tmpdir_or_passes_a_link_is_refused(
        context: ToolContext, task: TaskWorktree, tmp_path: Path, cwd: str, problem: str) -> None:
    (tmp_path / "tmp" / "linked").symlink_to(tmp_path / "home", target_is_directory=True)
    (task.worktree / "linked").symlink_to(tmp_path / "home", target_is_directory=True)
    (tmp_path / "tmp" / "file.txt").write_text("a file\n")
    result, events = command(context, ["sh", "-c", "touch ran"], working_directory=cwd)
    failed(result, "invalid-request")
    assert problem in result.message and "working directory" in result.message
    assert not any(event for event in events if isinstance(event, CommandStarted))
    assert not list(tmp_path.rglob("ran"))


def test_a_command_past_its_timeout_is_killed_with_its_group(task: TaskWorktree, tmp_path: Path) -> None:
    context = make_context(task, tmp_path, timeout_ms=500)
    began = time.monotonic()
    result, events = command(context, ["sh", "-c", "sleep 30 & sleep 30"])
    failed(result, "timed-out")
    assert time.monotonic() - began < 5
    group = next(event.process_group_id for event in events if isinstance(event, CommandStarted))
    assert wait_until_group_is_gone(group) == []


def test_a_cancelled_command_ends_cancelled_with_its_group_killed(context: ToolContext) -> None:
    threading.Timer(0.3, context.cancelled.set).start()
    result, events = command(context, ["sleep", "30"])
    assert (result.state, result.failure_kind) == (ExecutionState.CANCELLED, "cancelled")
    group = next(event.process_group_id for event in events if isinstance(event, CommandStarted))
    assert wait_until_group_is_gone(group) == []


def test_non_utf8_output_arrives_with_replacement_characters(context: ToolContext) -> None:
    result, events = command(context, ["printf", "ok \\377\\376 end"])
    succeeded(result)
    assert output(events) == "ok \ufffd\ufffd end"


def test_output_past_the_cap_keeps_its_head_and_tail_and_says_what_was_elided(task: TaskWorktree,
                                                                              tmp_path: Path) -> None:
    context = make_context(task, tmp_path, max_output_bytes=1000)
    result, events = command(context, ["sh", "-c", "yes x | head -c 100000; echo the end"])
    succeeded(result)
    assert result.stdout_truncated and not result.stderr_truncated
    text = output(events)
    head, rest = text.split("[codeflux: ")
    note, tail = rest.split("]\n")
    assert head == "x\n" * 250  # half the cap, released as it came
    assert tail.endswith("x\nthe end\n") and tail.startswith("x\n")  # the end, from a line start
    elided = 100_000 + len("the end\n") - len(head) - len(tail)
    assert note == f"{elided:,} characters ({elided // 2:,} lines) elided"
    assert len(text.encode()) <= 1000


def test_a_changed_executable_is_refused_before_it_runs(context: ToolContext, task: TaskWorktree,
                                                        tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\ntouch ran-marker\n")
    script.chmod(0o755)
    pin = CommandPin(executable_path=str(script), executable_sha256=hashlib.sha256(b"other").hexdigest(),
                     env_overrides={}, stdin=b"")
    result, events = run(context, "run_command", {"argv": ["tool.sh"]}, pin=pin)
    failed(result, "executable-mismatch")
    assert events == [] and not (task.worktree / "ran-marker").exists()


@pytest.mark.parametrize(("pin", "kind"), [
    (NO_PIN, "invalid-request"),
    (CommandPin(executable_path="/nonexistent/prog", executable_sha256="0" * 64, env_overrides={}, stdin=b""),
     "command-not-found"),
    (CommandPin(executable_path="relative/prog", executable_sha256="0" * 64, env_overrides={}, stdin=b""),
     "invalid-request"),
])
def test_a_command_without_a_usable_pin_does_not_start(context: ToolContext, pin: CommandPin, kind: str) -> None:
    result, events = run(context, "run_command", {"argv": ["prog"]}, pin=pin)
    failed(result, kind)
    assert events == []


def test_a_sensitive_override_is_refused_before_the_command_starts(context: ToolContext) -> None:
    result, events = command(context, ["true"], env={"OPENAI_API_KEY": "sk-x"})
    failed(result, "unsafe-argument")
    assert events == []


# --------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("tool", "arguments", "kind"), [
    ("launch_missiles", {}, "invalid-request"),
    ("read_file", {"file": "README.md"}, "invalid-request"),
    ("read_file", {"path": "README.md", "cwd": "/"}, "invalid-request"),
    ("read_file", {}, "invalid-request"),
    ("read_file", {"path": 7}, "invalid-request"),
    ("read_file", {"path": "README.md", "start_line": True}, "invalid-request"),
    ("read_file", {"path": "README.md", "start_line": 0}, "invalid-request"),
    ("write_file", {"path": "x.txt", "content": "x" * (600 * 1024)}, "invalid-request"),
    ("read_file", {"path": "READ\x00ME.md"}, "unsafe-argument"),
    ("write_file", {"path": "x.txt", "content": "a\x00b"}, "unsafe-argument"),
    ("write_file", {"path": "x.txt", "content": "\udcff"}, "unsafe-argument"),
    ("run_command", {"argv": "echo hi"}, "invalid-request"),
    ("run_command", {"argv": []}, "invalid-request"),
    ("git_status", {"verbose": True}, "invalid-request"),
])
def test_bad_input_is_a_typed_failure_and_nothing_runs(context: ToolContext, task: TaskWorktree, tool: str,
                                                       arguments: dict[str, object], kind: str) -> None:
    result, events = run(context, tool, arguments)
    failed(result, kind)
    assert events == []
    assert git(task.worktree, "status", "--porcelain") == ""


def test_a_vanished_worktree_is_a_typed_failure(context: ToolContext, task: TaskWorktree) -> None:
    shutil.rmtree(task.worktree)
    failed(run(context, "read_file", {"path": "README.md"})[0], "worktree-missing")
    failed(command(context, ["true"])[0], "worktree-missing")


def test_a_request_cancelled_before_it_starts_does_nothing(context: ToolContext, task: TaskWorktree) -> None:
    context.cancelled.set()
    result, _ = run(context, "write_file", {"path": "late.txt", "content": "x"})
    assert (result.state, result.failure_kind) == (ExecutionState.CANCELLED, "cancelled")
    assert not (task.worktree / "late.txt").exists()


def test_no_process_started_by_a_tool_outlives_it(context: ToolContext) -> None:
    result, events = command(context, ["sh", "-c", "sleep 60 & echo started"])
    succeeded(result)
    group = next(event.process_group_id for event in events if isinstance(event, CommandStarted))
    assert wait_until_group_is_gone(group) == []
    assert live_processes_in_group(group) == []


def test_a_failure_names_the_path_it_was_about_so_misses_on_different_files_read_differently(
        context: ToolContext, task: TaskWorktree) -> None:
    """Issue 15 item 6: `not-found` on two files used to be the same text ("path refused: it does not exist")."""
    messages = []
    for path in ("src/missing_one.py", "./src/missing_two.py"):
        result, _ = run(context, "read_file", {"path": path})
        assert result.state is ExecutionState.FAILED and result.failure_kind == "not-found"
        messages.append(result.message)
    assert messages == ["src/missing_one.py: path refused: it does not exist",
                        "src/missing_two.py: path refused: it does not exist"]  # the canonical spelling
    written, _ = run(context, "write_file", {"path": "./src/new_module.py", "content": "x = 1\n"})
    assert written.state is ExecutionState.SUCCEEDED, written.message  # a ./ path is the worktree path
    assert (task.worktree / "src" / "new_module.py").read_text() == "x = 1\n"
