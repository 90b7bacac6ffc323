"""`codeflux repo instructions`: list with sha256 and state, show the content, approve exactly what was read,
see an edit turn it into "changed since it was approved", revoke (issue 19, item 6). A real git repository and
the real CLI process, through the in-process method table (no coordinator is running)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import commit_all, make_repository, write_files


def test_list_show_approve_edit_and_revoke_from_the_cli(tmp_path: Path) -> None:
    repo, data = make_repository(tmp_path).path, tmp_path / "data"
    text = "Run pytest -q.\n\x1b[2J\n"
    write_files(repo, {"AGENTS.md": text, "CLAUDE.md": b"\xff\xfe"})
    commit_all(repo, "instruction files")
    sha = hashlib.sha256(text.encode()).hexdigest()

    shown = run_codeflux("repo", "instructions", "show", "--repo", str(repo), data_dir=data)
    assert shown.code == 0, shown.err
    assert "AGENTS.md: not approved: NOT sent to the model as instructions" in shown.out
    assert f"sha256 {sha}" in shown.out and "  | Run pytest -q." in shown.out
    assert "\x1b" not in shown.out  # a control character in the file is shown escaped, never sent to the terminal
    assert "CLAUDE.md" in shown.out and "cannot be approved or sent: not-utf-8" in shown.out

    wrong = run_codeflux("repo", "instructions", "approve", "AGENTS.md", "--sha256", "0" * 64, "--repo", str(repo),
                         data_dir=data)
    assert wrong.code == 2 and "not the sha256 given" in wrong.err
    approved = run_codeflux("repo", "instructions", "approve", "AGENTS.md", "--sha256", sha, "--repo", str(repo),
                            data_dir=data)
    assert approved.code == 0, approved.err
    assert f"approved AGENTS.md at sha256 {sha}" in approved.out
    assert "AGENTS.md: approved at this content: sent to the model as instructions" in approved.out

    write_files(repo, {"AGENTS.md": "Run pytest -q -x.\n"})
    listed = run_codeflux("repo", "instructions", "--repo", str(repo), data_dir=data)
    assert "AGENTS.md: changed since it was approved: NOT sent to the model until approved again" in listed.out

    revoked = run_codeflux("repo", "instructions", "revoke", "AGENTS.md", "--sha256", sha, "--repo", str(repo),
                           data_dir=data)
    assert revoked.code == 0 and f"revoked the approval of AGENTS.md at sha256 {sha}" in revoked.out
    assert "AGENTS.md: not approved" in revoked.out and ", revoked by user at " in revoked.out
