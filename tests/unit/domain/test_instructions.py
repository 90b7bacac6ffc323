"""Instruction-file paths are checked, and the blocks the model is shown can be read back (what a change of
the approved set is measured on)."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.instructions import (
    DEFAULT_INSTRUCTION_PATHS,
    approved_instructions_block,
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
