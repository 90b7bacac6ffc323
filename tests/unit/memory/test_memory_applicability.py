"""Memory against real git checkouts and a real SQLite file: an entry derived from a file is applicable until the
file changes, then refused with its reason and quarantined with everything derived from it (and never used again,
even when the file is restored); recall returns only applicable entries, the rest with reasons and no body."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.memory import ApplicabilityReason, EvidenceKind, EvidenceRef, MemoryState, StateCause, Toolchain
from codeflux.memory.checkout import dependency_hash_of, probe_toolchain, root_commit_of
from codeflux.memory.learn import learn_file_test_map, learn_repository_fact
from codeflux.memory.recall import (
    RecallContext,
    check_memory_entries,
    entries_by_id,
    invalidate_memory_entry,
    recall,
)
from codeflux.store.database import Database
from tests.fixtures.repos import commit_all, git, make_repository, write_files

TOOLS = Toolchain.of({"python": "3.11.2", "pytest": "8.0.0"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(tmp_path).path


def test_an_entry_derived_from_a_file_stops_being_applicable_when_that_file_changes(db: Database, repo: Path) -> None:
    mapping = learn_file_test_map(db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"],
                                  toolchain=TOOLS)
    derived = learn_repository_fact(db, root=repo, topic="test-command", fact="pytest tests/test_calc.py",
                                    derived_from=[mapping.entry_id], toolchain=TOOLS)
    before = check_memory_entries(db, repo, [mapping, derived], toolchain=TOOLS)
    assert [c.verdict.applicable for c in before] == [True, True]  # positive control

    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    after = check_memory_entries(db, repo, entries_by_id(db, [mapping.entry_id, derived.entry_id]), toolchain=TOOLS)

    assert after[0].verdict.reason is ApplicabilityReason.SOURCE_CHANGED and "pkg/calc.py" in after[0].verdict.detail
    assert after[0].entry.state is MemoryState.QUARANTINED and after[0].entry.state_cause is StateCause.EVIDENCE_CHANGED
    assert after[0].invalidation is not None and after[0].invalidation.quarantined == (derived.entry_id,)
    assert after[1].verdict.reason is ApplicabilityReason.QUARANTINED and not after[1].verdict.applicable

    git(repo, "checkout", "--", "pkg/calc.py")  # the file is back as it was: quarantine still holds
    again = check_memory_entries(db, repo, entries_by_id(db, [mapping.entry_id]), toolchain=TOOLS)
    assert again[0].verdict.reason is ApplicabilityReason.QUARANTINED
    with pytest.raises(TransitionNotAllowedError):
        invalidate_memory_entry(db, mapping.entry_id, cause=StateCause.PERSON, reason="again")


def test_another_toolchain_or_dependency_set_refuses_without_invalidating(db: Database, repo: Path) -> None:
    fact = learn_repository_fact(db, root=repo, topic="package-layout", fact="flat: pkg/", sources=["pkg/__init__.py"],
                                 toolchain=TOOLS)
    other_tools = Toolchain.of({"python": "3.12.1", "pytest": "8.0.0"})
    [checked] = check_memory_entries(db, repo, [fact], toolchain=other_tools)
    assert checked.verdict.reason is ApplicabilityReason.OTHER_TOOLCHAIN and checked.entry.state is MemoryState.ACTIVE

    hash_before = dependency_hash_of(repo)
    write_files(repo, {"pyproject.toml": '[project]\nname = "calc"\ndependencies = ["attrs>=22"]\n'})
    assert dependency_hash_of(repo) != hash_before
    [checked] = check_memory_entries(db, repo, entries_by_id(db, [fact.entry_id]), toolchain=TOOLS)
    assert checked.verdict.reason is ApplicabilityReason.OTHER_DEPENDENCIES
    assert checked.entry.state is MemoryState.ACTIVE
    write_files(repo, {"pyproject.toml": '[project]\nname = "calc"\ndescription = "x"\ndependencies = ["attrs>=22"]\n'})
    [checked] = check_memory_entries(db, repo, entries_by_id(db, [fact.entry_id]), toolchain=TOOLS)
    assert checked.verdict.reason is ApplicabilityReason.OTHER_DEPENDENCIES  # (the description is not a dependency)


def test_recall_returns_only_applicable_candidates_and_the_reasons_of_the_rest(db: Database, repo: Path,
                                                                                tmp_path: Path) -> None:
    command = learn_repository_fact(db, root=repo, topic="test-command", fact="pytest -q",
                                    sources=["tests/test_calc.py"], toolchain=TOOLS,
                                    evidence=[EvidenceRef(kind=EvidenceKind.TASK, ref="tsk_00000001")])
    stale = learn_repository_fact(db, root=repo, topic="test-command", fact="pytest -x", sources=["pkg/calc.py"],
                                  toolchain=TOOLS)
    context = RecallContext(root=repo, toolchain=TOOLS)
    first = recall(db, "which test command?", context)
    assert {r.entry.entry_id for r in first.usable} == {command.entry_id, stale.entry_id}  # positive control

    write_files(repo, {"pkg/calc.py": "changed = True\n"})
    commit_all(repo, "change calc")
    second = recall(db, "which test command?", context)

    assert [r.entry.entry_id for r in second.usable] == [command.entry_id]
    assert [(r.entry_id, r.verdict.reason) for r in second.refused] == [(stale.entry_id,
                                                                         ApplicabilityReason.SOURCE_CHANGED)]
    assert not hasattr(second.refused[0], "entry")
    other = tmp_path / "other"  # another history: another repository
    other.mkdir()
    git(other, "init", "-q")
    write_files(other, {"tests/test_calc.py": "def test_add():\n    pass\n"})
    commit_all(other, "another root")
    assert root_commit_of(other) != root_commit_of(repo)
    assert recall(db, "test command", RecallContext(root=other, toolchain=TOOLS)).usable == ()


def test_learning_needs_its_sources_to_be_files_of_the_checkout_and_probes_the_toolchain_without_running_it(
    db: Database, repo: Path,
) -> None:
    with pytest.raises(InvalidValueError):
        learn_repository_fact(db, root=repo, topic="t", fact="f", sources=["no/such/file.py"])
    venv = repo / ".venv"
    (venv / "lib" / "python3.11" / "site-packages" / "pytest-8.3.1.dist-info").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /nowhere\nversion = 3.11.9\n")
    assert probe_toolchain(repo).as_dict() == {"python": "3.11.9", "pytest": "8.3.1"}
    fact = learn_repository_fact(db, root=repo, topic="interpreter", fact=".venv python 3.11.9")
    assert fact.toolchain.as_dict()["python"] == "3.11.9"
