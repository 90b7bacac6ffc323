"""The "other findings" a send-back carries (issue 17): read generically from the ledger's ``findings`` of failed
stages 5, 7, 8, 9, 13 and 14 — whichever of them codeflux performs — bounded, and nothing for any other stage."""

from __future__ import annotations

from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict, stage_named
from codeflux.domain.pipeline.ledger import LedgerRow
from codeflux.pipeline.findings import MAX_FINDINGS_PER_STAGE, MAX_SECTION_CHARS, other_findings

TASK = TaskId.parse("tsk_0123456789abcdef")


def row(stage: StageName, outcome: StageOutcome, evidence: dict[str, object] | None = None) -> LedgerRow:
    evaluated = outcome in (StageOutcome.SATISFIED, StageOutcome.FAILED)
    verdict = StageVerdict.as_recorded(stage=stage, outcome=outcome, gate_evaluation="checked" if evaluated else None,
                                       reason=None if evaluated else "why")
    return LedgerRow(task_id=TASK, attempt=1, number=stage_named(stage.value).number, verdict=verdict,
                     evidence=evidence or {}, recorded_at_us=1)


def test_failed_advisory_stages_findings_are_listed_in_stage_order() -> None:
    rows = [
        row(StageName.ANTI_PATTERNS, StageOutcome.FAILED, {"findings": ["pkg/calc.py:3 E722 bare except"]}),
        row(StageName.CONTRACTS, StageOutcome.FAILED, {"findings": ["pkg.calc.neg is public and no plan step "
                                                                    "declares it", "  "]}),
        row(StageName.ATOM_MUTATION, StageOutcome.FAILED, {}),  # no findings recorded: its evaluation stands in
        row(StageName.ATOMS, StageOutcome.FAILED, {"findings": ["stage 10 is not carried"]}),
        row(StageName.INTEGRATION_TESTS, StageOutcome.FAILED, {"findings": ["the gate's own failure"]}),
        row(StageName.ATOM_PROPERTY_TESTS, StageOutcome.SATISFIED, {"findings": ["advisory, held"]}),
        row(StageName.ATOM_EXAMPLE_TESTS, StageOutcome.BLOCKED, {"findings": ["did not run"]}),
        row(StageName.ATOM_CASE_SYNTHESIS, StageOutcome.FAILED, {"findings": ["pkg.calc.add (pkg/calc.py:1) "
                                                                            "parameter a: no test passes it …"]}),
    ]

    section = other_findings(rows).splitlines()

    assert section[0].startswith("Other findings of this attempt")
    assert section[1:] == ["- 5 contracts: pkg.calc.neg is public and no plan step declares it",
                           "- 7 atom-case-synthesis: pkg.calc.add (pkg/calc.py:1) parameter a: no test passes it …",
                           "- 13 atom-mutation: checked", "- 14 anti-patterns: pkg/calc.py:3 E722 bare except"]


def test_nothing_failed_means_no_section_and_many_findings_are_bounded() -> None:
    assert other_findings([row(StageName.CONTRACTS, StageOutcome.SATISFIED, {"findings": []})]) == ""
    many: dict[str, list[str]] = {"findings": [f"finding {n} " + "x" * 400 for n in range(MAX_FINDINGS_PER_STAGE + 5)]}

    section = other_findings([row(StageName.CONTRACTS, StageOutcome.FAILED, many),
                              row(StageName.ANTI_PATTERNS, StageOutcome.FAILED, many)])

    assert len(section) <= MAX_SECTION_CHARS
    lines = section.splitlines()
    assert all(len(line) <= 320 for line in lines)
    assert lines[-1].startswith("- … ") and lines[-1].endswith("more line(s) not shown (see the stages' evidence)")
    few = other_findings([row(StageName.CONTRACTS, StageOutcome.FAILED, {"findings": ["short"] * 12})])
    assert "- 5 contracts: … and 2 more (see the stage's evidence)" in few.splitlines()
