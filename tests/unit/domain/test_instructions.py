"""Instruction-file paths are checked, and the blocks the model is shown can be read back (what a change of
the approved set is measured on)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.instructions import (
    DEFAULT_INSTRUCTION_PATHS,
    MAX_STATEMENTS,
    approved_instructions_block,
    instruction_statements,
    instructions_update,
    is_instruction_path,
    parse_instruction_path,
    parse_instruction_paths,
    parse_sha256,
    sent_instructions_listing,
)

A, B = "a" * 64, "b" * 64


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../AGENTS.md", "docs/../x.md", ".git/config", "a//b",
                                  "a\\b", "a\x00b", "./AGENTS.md", "sub/.GIT/x"])
def test_a_path_that_is_not_plainly_inside_the_repository_is_refused(path: str) -> None:
    with pytest.raises(InvalidValueError):
        parse_instruction_path(path)


def test_configured_paths_are_deduplicated_and_the_names_agents_read_count_anywhere() -> None:
    assert parse_instruction_paths(["AGENTS.md", " AGENTS.md", "docs/RULES.md"]) == ("AGENTS.md", "docs/RULES.md")
    assert is_instruction_path(".github/copilot-instructions.md", DEFAULT_INSTRUCTION_PATHS)
    assert is_instruction_path("pkg/sub/Claude.md", ("docs/RULES.md",))
    assert is_instruction_path("docs/RULES.md", ("docs/RULES.md",)) and not is_instruction_path("README.md")


def test_a_sha256_is_64_hex_characters() -> None:
    assert parse_sha256(A.upper()) == A
    with pytest.raises(InvalidValueError):
        parse_sha256("abc")


def test_the_listing_told_is_read_back_from_the_newest_block_or_update() -> None:
    first = "Requirement …\n\n" + (approved_instructions_block([("AGENTS.md", A, "--- not a file line\nx")]) or "")
    assert sent_instructions_listing([first]) == (("AGENTS.md", A),)
    changed = instructions_update([("CLAUDE.md", B, "y"), ("AGENTS.md", A, "x")])
    assert sent_instructions_listing([first, changed]) == (("AGENTS.md", A), ("CLAUDE.md", B))
    assert sent_instructions_listing([first, changed, instructions_update([])]) == ()
    assert sent_instructions_listing(["no block here"]) == () and approved_instructions_block([]) is None


def test_statements_are_the_list_items_outside_code_blocks_each_once_in_order() -> None:
    text = ("# Title\nProse is not a rule.\n- Use ruff.\n  * Nested   item  here\n2) Numbered rule.\n- Use ruff.\n"
            "- short\n```sh\n- a command, not a rule\n```\n+ After the fence.\n")
    assert instruction_statements(text) == ("Use ruff.", "Nested item here", "Numbered rule.", "After the fence.")


@given(st.text(max_size=3000))
def test_statements_are_bounded_and_each_comes_from_one_line_of_the_file(text: str) -> None:
    found = instruction_statements(text)
    assert len(found) <= MAX_STATEMENTS and len(set(found)) == len(found)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for statement in found:
        assert 8 <= len(statement) <= 400 and "\n" not in statement
        assert any(line.endswith(statement) for line in lines)
