"""A tool call in one line for the timeline (`operation_summary`): names the command or file, never hides text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.display import SUMMARY_MAX_CHARS, needs_display_escape, operation_summary


def test_a_command_reads_as_a_shell_would_and_a_file_tool_as_its_path() -> None:
    assert operation_summary([("argv", ("python3", "-m", "pytest", "-k", "a b"))]) == "python3 -m pytest -k 'a b'"
    assert operation_summary([("path", "calc/ops.py"), ("content", "x = 1\n")]) == "calc/ops.py"
    assert operation_summary([("pattern", "*.py")]) == "*.py"
    assert operation_summary([]) == ""


def test_hidden_characters_are_escaped_and_a_long_call_is_cut() -> None:
    assert operation_summary([("path", "a\u202eb.py")]) == "a\\u202eb.py"
    long = operation_summary([("argv", ("echo", "x" * 500))])
    assert len(long) == SUMMARY_MAX_CHARS and long.endswith("…") and long.startswith("echo ")


@given(st.lists(st.text(max_size=80), max_size=8))
def test_any_argv_gives_one_short_line_with_nothing_hidden(argv: list[str]) -> None:
    shown = operation_summary([("argv", tuple(argv))])
    assert len(shown) <= SUMMARY_MAX_CHARS
    assert not any(needs_display_escape(character) for character in shown)
