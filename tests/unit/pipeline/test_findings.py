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


def test_phase_f_findings_join_a_send_back_and_34_s_advisory_flag_does_not() -> None:
    """Issue 18: a failed 30, 32 or 33 never sends work back itself; its named findings join an attempt a gate
    starts (34 is advisory: it records ``satisfied`` with its flag)."""
    rows = [
        row(StageName.REPETITION, StageOutcome.FAILED, {"findings": ["tests/t.py::b is order-dependent or flaky: "
                                                                     "fails under seed 7"]}),
        row(StageName.GLOBAL_INVARIANTS, StageOutcome.FAILED, {"findings": ["undeclared process via subprocess.run "
                                                                            "at pkg/calc.py:5 (pkg.calc.add)"]}),
        row(StageName.PLATFORM_MATRIX, StageOutcome.FAILED, {"findings": ["Python 3.8 (declared): pkg/calc.py:10: "
                                                                          "Pattern matching is only supported in "
                                                                          "Python 3.10 and greater"]}),
        row(StageName.NON_FUNCTIONAL, StageOutcome.SATISFIED, {"findings": ["the suite takes 2.00 s …"]}),
    ]

    assert other_findings(rows).splitlines()[1:] == [
        "- 30 global-invariants: undeclared process via subprocess.run at pkg/calc.py:5 (pkg.calc.add)",
        "- 32 repetition: tests/t.py::b is order-dependent or flaky: fails under seed 7",
        "- 33 platform-matrix: Python 3.8 (declared): pkg/calc.py:10: Pattern matching is only supported in Python "
        "3.10 and greater"]
