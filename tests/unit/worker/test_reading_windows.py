"""Reading tools on a real worktree: results keep their head, say what was cut and how to get the rest, and
following those directions reaches everything once — nothing duplicated, nothing lost."""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.domain.tools import READ_MAX_LINE_CHARS, READ_RESULT_BYTES
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.results import ToolResult
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree
from tests.unit.worker.test_worker_tools import make_context, run, succeeded

NUMBERED = re.compile(r"^ *(\d+)\t(.*)$", flags=re.DOTALL)
CONTINUE = re.compile(r"call read_file with start_line=(\d+) to continue")


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


def reading_context(task: TaskWorktree, tmp_path: Path) -> ToolContext:
    """The limits the read tools have in production (their descriptor's output cap)."""
    return make_context(task, tmp_path, max_output_bytes=READ_RESULT_BYTES, max_file_bytes=512 * 1024)


def read_in_windows(context: ToolContext, path: str) -> tuple[list[tuple[int, str]], list[ToolResult]]:
    """Read ``path`` from line 1, following each result's own direction to continue, until it gives none."""
    shown: list[tuple[int, str]] = []
    results: list[ToolResult] = []
    arguments: dict[str, object] = {"path": path}
    while True:
        result = succeeded(run(context, "read_file", arguments)[0])
        results.append(result)
        for line in result.content.split("\n"):  # the tools' own line breaks, not every Unicode one
            numbered = NUMBERED.match(line)
            if numbered:
                shown.append((int(numbered.group(1)), numbered.group(2)))
        following = CONTINUE.search(result.message)
        if following is None:
            return shown, results
        assert len(results) < 1000
        arguments = {"path": path, "start_line": int(following.group(1))}


def test_a_100_kb_file_is_read_in_windows_that_say_how_to_continue(task: TaskWorktree, tmp_path: Path) -> None:
    lines = [f"def function_{number}(argument):  # {'padding ' * (number % 7)}" for number in range(1, 2634)]
    data = "".join(f"{line}\n" for line in lines).encode()
    assert len(data) > 100_000
    (task.worktree / "big.py").write_bytes(data)
    context = reading_context(task, tmp_path)

    first = succeeded(run(context, "read_file", {"path": "big.py"})[0])
    last_shown = int(NUMBERED.match(first.content.splitlines()[-2]).group(1))  # type: ignore[union-attr]
    assert first.message == (f"showing lines 1–{last_shown} of 2633; call read_file with start_line={last_shown + 1}"
                             f" to continue (no more lines fit the {READ_RESULT_BYTES:,}-byte output limit)")
    assert first.content.startswith("     1\tdef function_1(argument):  # padding \n")
    assert first.content.endswith(f"[codeflux: {first.message}]\n")
    assert len(first.content.encode()) <= READ_RESULT_BYTES
    assert first.content_sha256 == hashlib.sha256(data).hexdigest()

    shown, results = read_in_windows(context, "big.py")
    assert shown == list(enumerate(lines, start=1))  # every line once, in order, numbered as the file has it
    assert len(results) > 5
    assert {result.content_sha256 for result in results} == {hashlib.sha256(data).hexdigest()}
    assert results[-1].message.startswith("showing lines ") and results[-1].message.endswith(" of 2633")


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=3000),
                      max_size=300),
       final_newline=st.booleans())
def test_reading_on_as_told_shows_every_line_once(lines: list[str], final_newline: bool) -> None:
    with tempfile.TemporaryDirectory(dir=None) as directory:
        root = Path(directory)
        task = make_task_worktree(root)
        text = "\n".join(lines) + ("\n" if final_newline and lines else "")
        (task.worktree / "data.txt").write_text(text, encoding="utf-8")
        context = make_context(task, root, max_output_bytes=8 * 1024, max_file_bytes=512 * 1024)
        shown, results = read_in_windows(context, "data.txt")
    expected_lines = text.split("\n")
    if expected_lines and expected_lines[-1] == "":
        expected_lines.pop()
    assert [number for number, _ in shown] == list(range(1, len(expected_lines) + 1))
    for (_, body), line in zip(shown, expected_lines, strict=True):
        if len(line) <= READ_MAX_LINE_CHARS:
            assert body == line
        else:  # cut visibly, never silently
            assert body == f"{line[:READ_MAX_LINE_CHARS]}… [codeflux: line cut, " \
                           f"{len(line) - READ_MAX_LINE_CHARS:,} more characters]"
    if not expected_lines:
        assert results[0].message == "the file is empty (0 lines)"
    if any(len(line) > READ_MAX_LINE_CHARS for line in expected_lines):
        assert any("are longer than 2000 characters and are cut" in result.message for result in results)


def test_a_start_line_past_the_end_says_how_long_the_file_is(task: TaskWorktree, tmp_path: Path) -> None:
    context = reading_context(task, tmp_path)
    result = succeeded(run(context, "read_file", {"path": "docs/notes.txt", "start_line": 9})[0])
    assert result.message == "start_line=9 is past the end of the file: it has 2 lines"
    assert result.content == ""


def test_a_crlf_file_is_shown_without_the_carriage_returns_and_says_so(task: TaskWorktree, tmp_path: Path) -> None:
    (task.worktree / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    result = succeeded(run(reading_context(task, tmp_path), "read_file", {"path": "dos.txt"})[0])
    assert result.content == "     1\tone\n     2\ttwo\n"
    assert "CRLF line endings" in result.message


def test_a_long_listing_shows_its_head_and_the_offset_that_continues(task: TaskWorktree, tmp_path: Path) -> None:
    many = task.worktree / "many"
    many.mkdir()
    names = sorted(f"file_{number:05d}_{'n' * 40}.txt" for number in range(2000))
    for name in names:
        (many / name).write_text("")
    context = reading_context(task, tmp_path)
    seen: list[str] = []
    offset = 0
    while True:
        result = succeeded(run(context, "list_directory", {"path": "many", "offset": offset})[0])
        assert len(result.content.encode()) <= READ_RESULT_BYTES
        seen += [line for line in result.content.splitlines() if not line.startswith("[codeflux:")]
        following = re.search(r"call list_directory with offset=(\d+) for the next ones", result.message)
        if following is None:
            break
        assert result.message.startswith(f"showing entries {offset + 1}–{int(following.group(1))} of 2,000")
        assert result.content.endswith(f"[codeflux: {result.message}]\n")
        offset = int(following.group(1))
    assert seen == [f"many/{name}" for name in names]
    assert offset > 0


def test_glob_results_continue_by_offset_too(task: TaskWorktree, tmp_path: Path) -> None:
    for number in range(600):
        (task.worktree / "src" / f"module_{number:04d}_{'m' * 30}.py").write_text("")
    context = reading_context(task, tmp_path)
    first = succeeded(run(context, "glob", {"pattern": "src/*.py"})[0])
    following = re.search(r"showing matching paths 1–(\d+) of 602; call glob with offset=(\d+)", first.message)
    assert following is not None and following.group(1) == following.group(2)
    rest = succeeded(run(context, "glob", {"pattern": "src/*.py", "offset": int(following.group(2))})[0])
    paths = [line for result in (first, rest) for line in result.content.splitlines() if not line.startswith("[")]
    assert len(paths) == len(set(paths)) == 602


def test_grep_shows_its_first_matches_and_the_offset_for_the_rest(task: TaskWorktree, tmp_path: Path) -> None:
    (task.worktree / "src" / "many.py").write_text("".join(f"needle = {number}  # {'x' * 80}\n"
                                                           for number in range(1, 501)))
    context = reading_context(task, tmp_path)
    seen: list[str] = []
    offset = 0
    for _ in range(20):
        result = succeeded(run(context, "grep", {"pattern": "needle", "offset": offset})[0])
        seen += [line for line in result.content.splitlines() if not line.startswith("[codeflux:")]
        following = re.search(r"more matches exist \((.*?)\): call grep with offset=(\d+)", result.message)
        if following is None:
            assert result.message.startswith(f"showing matches {offset + 1}–500 of 500")
            break
        assert following.group(1) in {"max_results=200", f"no more fit the {READ_RESULT_BYTES:,}-byte output limit"}
        offset = int(following.group(2))
    assert seen == [f"src/many.py:{number}:needle = {number}  # {'x' * 80}" for number in range(1, 501)]


def test_a_long_matching_line_is_cut_visibly(task: TaskWorktree, tmp_path: Path) -> None:
    (task.worktree / "src" / "wide.py").write_text("needle" + "y" * 1000 + "\n")
    result = succeeded(run(reading_context(task, tmp_path), "grep", {"pattern": "needle"})[0])
    assert result.content == f"src/wide.py:1:needle{'y' * 494}… [codeflux: line cut, 506 more characters]\n"


def test_a_diff_over_the_cap_shows_its_head_and_names_the_files_not_shown(task: TaskWorktree, tmp_path: Path) -> None:
    for number in range(12):
        (task.worktree / "src" / f"changed_{number:02d}.py").write_text("".join(f"value_{row} = {row}\n"
                                                                            for row in range(200)))
    context = make_context(task, tmp_path, max_output_bytes=READ_RESULT_BYTES, base_commit=task.base)
    result = succeeded(run(context, "inspect_diff", {})[0])
    assert len(result.content.encode()) <= READ_RESULT_BYTES
    assert result.content.startswith("diff --git a/src/changed_00.py b/src/changed_00.py\n")
    note = result.content.splitlines()[-1]
    assert note.startswith("[codeflux: ") and "more characters" in note
    assert "not shown whole: " in note and "src/changed_11.py" in note and "src/changed_00.py" not in note
    assert "call inspect_diff with path=<one of them> to see its diff" in note
    assert "its head is shown" in result.message
    one = succeeded(run(context, "inspect_diff", {"path": "src/changed_11.py"})[0])
    assert "[codeflux:" not in one.content and one.content.count("\n+value_") == 200
