"""``edit_file`` failures on a real worktree say what was nearby: every match's lines, a match but for
whitespace (and which whitespace), or the most similar region — and the file is never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.domain.execution import ExecutionState
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.edit_hints import no_match_hint
from codeflux.worker.tools.results import ToolResult
from tests.fixtures.worktrees import TaskWorktree, make_task_worktree
from tests.unit.worker.test_worker_tools import make_context, run, succeeded

SOURCE = """\
import os


def load(path):
    with open(path) as handle:
        return handle.read()


def save(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def remove(path):
    os.remove(path)
"""


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    made = make_task_worktree(tmp_path)
    (made.worktree / "src" / "files.py").write_text(SOURCE)
    return made


@pytest.fixture
def context(task: TaskWorktree, tmp_path: Path) -> ToolContext:
    return make_context(task, tmp_path)


def edit(context: ToolContext, old_text: str, new_text: str = "CHANGED") -> ToolResult:
    return run(context, "edit_file", {"path": "src/files.py", "old_text": old_text, "new_text": new_text})[0]


def refused(result: ToolResult, kind: str, task: TaskWorktree) -> ToolResult:
    assert result.state is ExecutionState.FAILED and result.failure_kind == kind, result.message
    assert (task.worktree / "src" / "files.py").read_text() == SOURCE  # nothing was written
    return result


def test_several_matches_are_listed_with_their_line_numbers(context: ToolContext, task: TaskWorktree) -> None:
    result = refused(edit(context, "    with open(path"), "ambiguous-match", task)
    assert result.message == ("src/files.py: old_text occurs 2 times (lines 5, 10); include more surrounding "
                              "lines so it occurs once")
    assert result.content.splitlines() == [
        "old_text occurs 2 times; each match begins on the line shown:",
        "     5\t    with open(path) as handle:",
        "    10\t    with open(path, \"w\") as handle:",
        "Include lines before or after the change in old_text so that it occurs exactly once.",
    ]


def test_wrong_indentation_is_called_out_with_the_lines_to_copy(context: ToolContext, task: TaskWorktree) -> None:
    wrong = "def load(path):\n  with open(path) as handle:\n    return handle.read()\n"
    result = refused(edit(context, wrong), "no-match", task)
    assert result.message.startswith("src/files.py: old_text does not occur exactly, but matches lines 4–6 except for "
                                     "whitespace (indentation (a line the file indents by 4 characters is "
                                     "indented by 2 in old_text))")
    assert "     4\tdef load(path):\n     5\t    with open(path) as handle:\n     6\t        return handle.read()\n" \
        in result.content
    # the hint is enough: copying the shown lines makes the edit succeed
    fixed = "def load(path):\n    with open(path) as handle:\n        return handle.read()\n"
    succeeded(edit(context, fixed, fixed.replace("read()", "read().strip()")))
    assert "handle.read().strip()" in (task.worktree / "src" / "files.py").read_text()


def test_tabs_trailing_blanks_and_crlf_are_named() -> None:
    text = "def f():\n    x = 1   \n    return x\r\n"
    assert "tabs versus spaces" in no_match_hint(text, "def f():\n\tx = 1\n").summary
    assert "trailing whitespace" in no_match_hint(text, "    x = 1\n").summary
    assert "line endings (the file has CRLF)" in no_match_hint(text, "    return x\n").summary
    assert "spacing inside lines" in no_match_hint(text, "x=1").summary


def test_a_near_miss_gets_a_did_you_mean_with_the_first_difference(context: ToolContext, task: TaskWorktree) -> None:
    near = "def save(path, text):\n    with open(path, \"wb\") as handle:\n        handle.write(text)\n"
    result = refused(edit(context, near), "no-match", task)
    assert result.message.startswith("src/files.py: old_text does not occur in the file; the most similar text "
                                     "is lines 9–11 (")
    assert "Did you mean lines 9–11" in result.content
    assert "    10\t    with open(path, \"w\") as handle:\n" in result.content
    assert ("First difference, at line 10:\n  the file has: '    with open(path, \"w\") as handle:'\n"
            "  old_text has: '    with open(path, \"wb\") as handle:'\n") in result.content


def test_text_unlike_anything_in_the_file_says_to_read_it(context: ToolContext, task: TaskWorktree) -> None:
    result = refused(edit(context, "class Unrelated(Exception):\n    pass\n"), "no-match", task)
    assert result.message == "src/files.py: old_text does not occur in the file and nothing similar was found"
    assert "read_file" in result.content


def test_the_hint_search_stays_bounded_in_a_large_file(tmp_path: Path) -> None:
    text = "".join(f"line_{number} = compute({number}, {number * 7})\n" for number in range(60_000))
    hint = no_match_hint(text, "line_31337 = compute(31337, 219359)\nline_31338 = compute(31338, 0)\n")
    assert "lines 31338–31339" in hint.summary  # anchored on the line it shares with the file


def test_a_near_miss_late_in_a_small_file_is_found() -> None:
    text = "".join(f"row_{number} = {number}\n" for number in range(2_000))
    hint = no_match_hint(text, "row_1998 = 1998\nrow_1999 = 19999\n")
    assert hint.summary.startswith("old_text does not occur in the file; the most similar text is lines 1999–2000")
