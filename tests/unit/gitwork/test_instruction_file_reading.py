"""Instruction files are read from a checkout without leaving it: a link inside the repository is followed, a
link out of it (or into ``.git``) is refused, a directory or a FIFO is not a file, a large file is refused,
and content that is not UTF-8 is reported as such, with its sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from codeflux.domain.instructions import MAX_INSTRUCTION_FILE_BYTES, ReadProblem
from codeflux.gitwork.instruction_files import read_instruction_file, read_instruction_files


def test_a_utf8_file_is_read_with_its_sha256_and_size(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Run pytest -q.\n", encoding="utf-8")
    found = read_instruction_file(tmp_path, "AGENTS.md")
    assert (found.text, found.problem, found.size) == ("Run pytest -q.\n", None, 15)
    assert found.sha256 == hashlib.sha256(b"Run pytest -q.\n").hexdigest() and found.approvable


@pytest.mark.security
def test_a_link_inside_the_repository_is_followed_and_one_out_of_it_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "agents.md").write_text("inside\n")
    (repo / "AGENTS.md").symlink_to("docs/agents.md")
    (tmp_path / "secret.txt").write_text("outside\n")
    (repo / "CLAUDE.md").symlink_to(tmp_path / "secret.txt")
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("[core]\n")
    (repo / "CONTRIBUTING.md").symlink_to(".git/config")

    assert read_instruction_file(repo, "AGENTS.md").text == "inside\n"
    for path in ("CLAUDE.md", "CONTRIBUTING.md"):
        refused = read_instruction_file(repo, path)
        assert (refused.problem, refused.text, refused.sha256) == (ReadProblem.OUTSIDE, None, None)


def test_a_directory_a_fifo_a_large_file_and_non_utf8_bytes_are_reported_not_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").mkdir()
    os.mkfifo(tmp_path / "CLAUDE.md")
    (tmp_path / "CONTRIBUTING.md").write_bytes(b"x" * (MAX_INSTRUCTION_FILE_BYTES + 1))
    (tmp_path / "GEMINI.md").write_bytes(b"caf\xe9\n")

    assert read_instruction_file(tmp_path, "AGENTS.md").problem is ReadProblem.NOT_A_FILE
    assert read_instruction_file(tmp_path, "CLAUDE.md").problem is ReadProblem.NOT_A_FILE  # never blocks
    large = read_instruction_file(tmp_path, "CONTRIBUTING.md")
    assert (large.problem, large.size) == (ReadProblem.TOO_LARGE, MAX_INSTRUCTION_FILE_BYTES + 1)
    latin = read_instruction_file(tmp_path, "GEMINI.md")
    assert (latin.problem, latin.text, latin.sha256) == (ReadProblem.NOT_UTF8, None,
                                                         hashlib.sha256(b"caf\xe9\n").hexdigest())
    assert not latin.approvable


def test_missing_paths_are_left_out_of_the_listing(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("a\n")
    assert [file.path for file in read_instruction_files(tmp_path, ["AGENTS.md", "CLAUDE.md"])] == ["AGENTS.md"]
