"""The pure rules of memory: applicability verdicts (first failing check decides, with its reason) and the state
table (quarantine is final)."""

from __future__ import annotations

import dataclasses

import pytest

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import (
    ApplicabilityReason,
    ApplicabilityVerdict,
    CurrentFacts,
    MemoryEntry,
    MemoryKind,
    MemoryState,
    NewMemoryEntry,
    SourceFile,
    StateCause,
    Toolchain,
    judge_applicability,
    next_memory_state,
    parse_reason,
)

TOOLS = Toolchain.of({"python": "3.11.2", "pytest": "8.0.0"})
ENTRY = MemoryEntry(
    entry_id=MemoryEntryId.parse("mem_00000001"), kind=MemoryKind.FILE_TEST_MAP, text="tests covering pkg/calc.py",
    body={}, root_commit="a" * 40, toolchain=TOOLS, toolchain_hash=TOOLS.digest, dependency_hash="d" * 64,
    learned_at_commit="c" * 40, replaces=None, created_at_us=1, state=MemoryState.ACTIVE,
    state_cause=StateCause.LEARNED, state_reason="learned", state_since_us=1,
    sources=(SourceFile(path="pkg/calc.py", blob_sha="1" * 40), SourceFile(path="tests/t.py", blob_sha="2" * 40)))
FACTS = CurrentFacts(root_commit="a" * 40, toolchain_hash=TOOLS.digest, dependency_hash="d" * 64,
                     blobs={"pkg/calc.py": "1" * 40, "tests/t.py": "2" * 40})


def test_an_entry_is_applicable_only_when_repository_toolchain_dependencies_and_every_source_hold() -> None:
    assert judge_applicability(ENTRY, FACTS) == ApplicabilityVerdict(
        applicable=True, reason=ApplicabilityReason.APPLICABLE, detail=judge_applicability(ENTRY, FACTS).detail)
    cases = {
        ApplicabilityReason.OTHER_REPOSITORY: dataclasses.replace(FACTS, root_commit="b" * 40),
        ApplicabilityReason.OTHER_TOOLCHAIN: dataclasses.replace(
            FACTS, toolchain_hash=Toolchain.of({"python": "3.12.0", "pytest": "8.0.0"}).digest),
        ApplicabilityReason.OTHER_DEPENDENCIES: dataclasses.replace(FACTS, dependency_hash="e" * 64),
        ApplicabilityReason.SOURCE_CHANGED: dataclasses.replace(FACTS, blobs={**FACTS.blobs, "tests/t.py": "3" * 40}),
        ApplicabilityReason.SOURCE_MISSING: dataclasses.replace(FACTS, blobs={**FACTS.blobs, "pkg/calc.py": None}),
        ApplicabilityReason.SOURCE_UNKNOWN: dataclasses.replace(FACTS, blobs={"pkg/calc.py": "1" * 40}),
    }
    for reason, facts in cases.items():
        verdict = judge_applicability(ENTRY, facts)
        assert (verdict.applicable, verdict.reason) == (False, reason)
        assert verdict.detail
    changed = judge_applicability(ENTRY, cases[ApplicabilityReason.SOURCE_CHANGED])
    assert "tests/t.py changed" in changed.detail and changed.evidence_changed
    assert not judge_applicability(ENTRY, cases[ApplicabilityReason.OTHER_TOOLCHAIN]).evidence_changed


def test_an_entry_without_authority_is_never_applicable_whatever_the_facts() -> None:
    for state, reason in ((MemoryState.QUARANTINED, ApplicabilityReason.QUARANTINED),
                          (MemoryState.NEEDS_REVIEW, ApplicabilityReason.NEEDS_REVIEW)):
        entry = dataclasses.replace(ENTRY, state=state, state_reason="wrong test command")
        verdict = judge_applicability(entry, FACTS)
        assert (verdict.applicable, verdict.reason) == (False, reason)
        assert "wrong test command" in verdict.detail


def test_quarantine_is_final_and_review_can_only_follow_active() -> None:
    assert next_memory_state(MemoryState.ACTIVE, MemoryState.QUARANTINED) is MemoryState.QUARANTINED
    assert next_memory_state(MemoryState.NEEDS_REVIEW, MemoryState.ACTIVE) is MemoryState.ACTIVE
    for to in MemoryState:
        with pytest.raises(TransitionNotAllowedError):
            next_memory_state(MemoryState.QUARANTINED, to)
    with pytest.raises(TransitionNotAllowedError):
        next_memory_state(MemoryState.ACTIVE, MemoryState.ACTIVE)


def test_a_new_entry_refuses_bad_hashes_paths_and_double_provenance() -> None:
    good = dict(kind=MemoryKind.ATOM, text="atom", body={}, root_commit="a" * 40, toolchain=TOOLS,
                dependency_hash="d" * 64, learned_at_commit="c" * 40)
    NewMemoryEntry(**good)  # type: ignore[arg-type]
    source = MemoryEntryId.parse("mem_00000002")
    for change in ({"root_commit": "xyz"}, {"dependency_hash": "d" * 40}, {"text": " "},
                   {"derived_from": (source,), "influenced_by": (source,)}):
        with pytest.raises(InvalidValueError):
            NewMemoryEntry(**{**good, **change})  # type: ignore[arg-type]
    for path in ("/etc/passwd", "../x", "a//b", ""):
        with pytest.raises(InvalidValueError):
            SourceFile(path=path, blob_sha="1" * 40)
    with pytest.raises(InvalidValueError):
        parse_reason("   ")
    assert parse_reason(" the  test\ncommand changed ") == "the test command changed"
