"""A person's approval binds exactly (repository, path, sha256): it is refused for other content, a path not
configured or a file that cannot be read as text; it is recorded once with its event; a revocation is a new fact
row, and approving again after it adds a new approval. The rows refuse UPDATE and DELETE."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from codeflux.coordinator.journal import read_every_system_event
from codeflux.coordinator.memory_context import memory_block
from codeflux.coordinator.tasks.conventions import learn_instruction_conventions
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
from codeflux.domain.memory import ApplicabilityReason, MemoryEntry, MemoryKind, MemoryState, StateCause
from codeflux.gitwork.repository import open_repository
from codeflux.memory.recall import RecallContext, recall
from codeflux.store.database import Database
from codeflux.store.memory import list_memory_entries, memory_state_history
from tests.fixtures.repos import commit_all, make_repository, write_files

TEXT = "Run pytest -q before finishing.\n"
SHA = hashlib.sha256(TEXT.encode()).hexdigest()


def approve(db: Database, repo: Path, path: str = "AGENTS.md", sha256: str = SHA) -> object:
    tasks = TaskService(db, worktrees_root=repo.parent / "worktrees")
    return approve_instruction_file(db, open_repository(repo), path=path, sha256=sha256,
                                    register=tasks.register_repository).row


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


RULES = ("# Rules\n\nPlease keep it tidy.\n\n- Run pytest -q before finishing.\n* Never   print; use logging.\n"
         "1. Keep functions small.\n- Run pytest -q before finishing.\n- tiny\n```\n- not a rule, code\n```\n")
RULES_SHA = hashlib.sha256(RULES.encode()).hexdigest()


def conventions(db: Database) -> dict[str, MemoryEntry]:
    found = db.read(lambda view: list_memory_entries(view, kind=MemoryKind.CONVENTION))
    return {str(entry.body["statement"]): entry for entry in found}


def test_an_approved_file_s_list_items_become_conventions_and_revoking_quarantines_them_in_one_step(
        db: Database, tmp_path: Path) -> None:
    repo = a_repository(tmp_path)
    write_files(repo, {"AGENTS.md": RULES})
    commit_all(repo, "rules")
    learned = approve_instruction_file(db, open_repository(repo), path="AGENTS.md", sha256=RULES_SHA,
                                       register=TaskService(db, worktrees_root=tmp_path / "w").register_repository)
    assert not learned.learned.skipped
    held = conventions(db)
    assert sorted(held) == ["Keep functions small.", "Never print; use logging.", "Run pytest -q before finishing."]
    entry = held["Never print; use logging."]
    assert entry.body["origin"] == "instruction-file" and entry.body["sha256"] == RULES_SHA
    assert [source.path for source in entry.sources] == ["AGENTS.md"]
    assert set(learned.learned.entries) == {item.entry_id for item in held.values()}
    again = approve_instruction_file(db, open_repository(repo), path="AGENTS.md", sha256=RULES_SHA,
                                     register=TaskService(db, worktrees_root=tmp_path / "w").register_repository)
    assert again.learned.entries == () and len(conventions(db)) == 3  # approved already: nothing learned twice

    # Positive control: usable now. Not repeated in the model's memory block (the approved file is sent whole).
    found = recall(db, "logging", RecallContext(root=repo, kind=MemoryKind.CONVENTION))
    assert [item.entry.entry_id for item in found.usable] == [entry.entry_id]
    assert memory_block(db, root=repo, query="logging") is None

    revoke_instruction_file(db, open_repository(repo), path="AGENTS.md", sha256=RULES_SHA)
    after = conventions(db)
    assert {item.state for item in after.values()} == {MemoryState.QUARANTINED}
    history = db.read(lambda view: memory_state_history(view, entry.entry_id))
    assert history[-1].cause is StateCause.PERSON and "was revoked" in history[-1].reason
    assert recall(db, "logging", RecallContext(root=repo, kind=MemoryKind.CONVENTION)).usable == ()


def test_an_edited_instruction_file_makes_its_conventions_inapplicable(db: Database, tmp_path: Path) -> None:
    repo = a_repository(tmp_path)
    write_files(repo, {"AGENTS.md": RULES})
    commit_all(repo, "rules")
    approve_instruction_file(db, open_repository(repo), path="AGENTS.md", sha256=RULES_SHA,
                             register=TaskService(db, worktrees_root=tmp_path / "w").register_repository)
    assert len(recall(db, "logging", RecallContext(root=repo, kind=MemoryKind.CONVENTION)).usable) == 1
    write_files(repo, {"AGENTS.md": RULES + "- Also document every function.\n"})
    found = recall(db, "logging", RecallContext(root=repo, kind=MemoryKind.CONVENTION))
    assert found.usable == ()
    assert [item.verdict.reason for item in found.refused] == [ApplicabilityReason.SOURCE_CHANGED]


def test_a_file_changed_between_reading_and_approving_teaches_nothing(db: Database, tmp_path: Path) -> None:
    repo = a_repository(tmp_path)
    result = learn_instruction_conventions(db, repo, path="AGENTS.md", sha256=RULES_SHA, approval_id="a-1")
    assert result.entries == () and result.skipped == ("AGENTS.md changed since it was approved",)
    assert conventions(db) == {}
