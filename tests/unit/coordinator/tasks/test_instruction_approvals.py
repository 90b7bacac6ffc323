"""A person's approval binds exactly (repository, path, sha256): it is refused for other content, a path not
configured or a file that cannot be read as text; it is recorded once with its event; a revocation is a new fact
row, and approving again after it adds a new approval. The rows refuse UPDATE and DELETE."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from codeflux.coordinator.journal import read_every_system_event
from codeflux.coordinator.tasks.instruction_files import (
    InstructionApprovals,
    approve_instruction_file,
    configured_instruction_paths,
    list_instruction_files,
    revoke_instruction_file,
    set_instruction_paths,
)
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import InvalidValueError, StoreError
from codeflux.domain.events import InstructionFileApproved, InstructionFileRevoked
from codeflux.domain.instructions import DEFAULT_INSTRUCTION_PATHS, ApprovalState
from codeflux.gitwork.repository import open_repository
from codeflux.store.database import Database
from tests.fixtures.repos import commit_all, make_repository, write_files

TEXT = "Run pytest -q before finishing.\n"
SHA = hashlib.sha256(TEXT.encode()).hexdigest()


def approve(db: Database, repo: Path, path: str = "AGENTS.md", sha256: str = SHA) -> object:
    tasks = TaskService(db, worktrees_root=repo.parent / "worktrees")
    return approve_instruction_file(db, open_repository(repo), path=path, sha256=sha256,
                                    register=tasks.register_repository)


def a_repository(tmp_path: Path) -> Path:
    repo = make_repository(tmp_path).path
    write_files(repo, {"AGENTS.md": TEXT, "CLAUDE.md": b"\xff\xfe"})
    commit_all(repo, "instruction files")
    return repo


def test_approval_is_bound_to_the_exact_content_and_recorded_once_with_its_event(db: Database, tmp_path: Path) -> None:
    repo = a_repository(tmp_path)
    with pytest.raises(InvalidValueError, match="not the sha256 given"):
        approve(db, repo, sha256="0" * 64)
    with pytest.raises(InvalidValueError, match="not-utf-8"):
        approve(db, repo, path="CLAUDE.md", sha256=hashlib.sha256(b"\xff\xfe").hexdigest())
    with pytest.raises(InvalidValueError, match="not a configured"):
        approve(db, repo, path="README.md")

    first, again = approve(db, repo), approve(db, repo)

    assert first == again
    events = [e.event for e in read_every_system_event(db) if isinstance(e.event, InstructionFileApproved)]
    assert [(e.path, e.sha256, e.by) for e in events] == [("AGENTS.md", SHA, "user")]
    listed = {item.file.path: item for item in list_instruction_files(db, open_repository(repo)).files}
    assert listed["AGENTS.md"].state is ApprovalState.APPROVED
    assert listed["CLAUDE.md"].state is ApprovalState.UNAPPROVED and listed["CLAUDE.md"].file.problem is not None


def test_a_revocation_is_a_new_row_and_approving_again_adds_a_new_approval(db: Database, tmp_path: Path) -> None:
    repo = a_repository(tmp_path)
    approve(db, repo)
    snapshot = open_repository(repo)
    revoked = revoke_instruction_file(db, snapshot, path="AGENTS.md", sha256=SHA)
    assert revoked is not None
    assert revoke_instruction_file(db, snapshot, path="AGENTS.md", sha256=SHA) is None  # nothing left in force
    approve(db, repo)

    history = {item.file.path: item for item in list_instruction_files(db, snapshot).files}["AGENTS.md"].history
    assert [(row.in_force, row.revoked_by) for row in history] == [(False, "user"), (True, None)]
    kinds = [type(e.event) for e in read_every_system_event(db)
             if isinstance(e.event, InstructionFileApproved | InstructionFileRevoked)]
    assert kinds == [InstructionFileApproved, InstructionFileRevoked, InstructionFileApproved]
    approvals = InstructionApprovals(db, repository_id=history[0].repository_id, root=repo)
    assert approvals.is_approved("AGENTS.md", SHA) and not approvals.is_approved("AGENTS.md", "1" * 64)
    assert "the person approved at sha256" in approvals.label_read("./AGENTS.md", SHA)
    assert "repository text, not instructions" in approvals.label_read("AGENTS.md", "1" * 64)
    assert "repository text, not instructions" in approvals.label_read("pkg/AGENTS.md", SHA)  # not a configured path
    assert approvals.label_read("README.md", SHA) == ""


def test_approval_rows_refuse_update_and_delete(db: Database, tmp_path: Path) -> None:
    approve(db, a_repository(tmp_path))
    for statement in ("UPDATE instruction_approvals SET approved_at_us = 0", "DELETE FROM instruction_approvals"):
        with pytest.raises(StoreError, match="ConstraintError"):
            db.write(lambda tx, sql=statement: tx.execute(sql))


def test_the_configured_paths_replace_the_defaults_and_an_empty_list_restores_them(db: Database) -> None:
    assert configured_instruction_paths(db) == DEFAULT_INSTRUCTION_PATHS
    assert set_instruction_paths(db, ["docs/RULES.md", "AGENTS.md"]) == ("docs/RULES.md", "AGENTS.md")
    assert configured_instruction_paths(db) == ("docs/RULES.md", "AGENTS.md")
    assert set_instruction_paths(db, []) == DEFAULT_INSTRUCTION_PATHS
    with pytest.raises(InvalidValueError):
        set_instruction_paths(db, ["../escape.md"])
