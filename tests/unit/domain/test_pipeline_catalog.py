"""The stage catalog: 37 stages in 7 phases, names as identity, prerequisites that encode the order."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest

from codeflux.domain import pipeline
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.pipeline import (
    GATING_STAGES,
    PERFORMABLE_STAGES,
    SEND_BACK_STAGES,
    STAGES,
    PipelinePhase,
    Stage,
    StageName,
    StageOutcome,
    outcomes,
    stage_named,
    stages,
    transitive_order,
    transitive_prerequisites,
)

DOCS = Path(__file__).resolve().parents[3] / "docs"
N = StageName

# ARCHITECTURE §8.1, verbatim.
ARCHITECTURE_STAGES = """
A Specification: 1 instructions · 2 clarification · 3 atomic-instructions · 4 decomposition-coverage ·
5 contracts · 6 recall. B Atoms: 7 atom-case-synthesis · 8 atom-example-tests · 9 atom-property-tests ·
10 atoms · 11 atom-verification · 12 atom-fuzz · 13 atom-mutation · 14 anti-patterns ·
15 atom-optimization · 16 atom-complexity · 17 atom-documentation. C Molecules: 18 composition-obligations ·
19 molecule-tests · 20 molecules · 21 molecule-verification. D Control flow: 22 control-obligations ·
23 control-tests · 24 control-flow · 25 path-coverage. E Program: 26 assembly · 27 program ·
28 integration-tests · 29 end-to-end-tests. F Verification depth: 30 global-invariants · 31 adversarial ·
32 repetition · 33 platform-matrix · 34 non-functional. G Delivery: 35 evidence-bundle ·
36 human-acceptance · 37 deliver.
"""


def _architecture_catalog() -> list[tuple[int, str, str, str]]:
    """(number, name, phase letter, phase label) parsed from the architecture's paragraph."""
    text = " ".join(ARCHITECTURE_STAGES.split())
    rows = []
    for chunk in text.split(". "):
        head, _, body = chunk.partition(": ")
        letter, label = head.split(" ", 1)
        for item in body.rstrip(".").split(" · "):
            number, name = item.split(" ")
            rows.append((int(number), name, letter, label))
    return rows


def test_there_are_37_stages_numbered_1_to_37_in_order() -> None:
    assert len(STAGES) == 37
    assert [stage.number for stage in STAGES] == list(range(1, 38))


def test_names_are_unique_and_the_stage_name_enum_follows_the_catalog() -> None:
    names = [stage.name for stage in STAGES]
    assert len(set(names)) == 37
    assert names == list(StageName)


def test_the_catalog_matches_the_architecture_number_name_and_phase() -> None:
    expected = _architecture_catalog()
    assert [(s.number, s.name.value, s.phase.value, s.phase.label) for s in STAGES] == expected


def test_there_are_seven_phases_each_a_contiguous_run_of_stages() -> None:
    assert [phase.value for phase in PipelinePhase] == list("ABCDEFG")
    assert [phase.label for phase in PipelinePhase] == [
        "Specification", "Atoms", "Molecules", "Control flow", "Program", "Verification depth", "Delivery"
    ]  # fmt: skip
    phases_in_order = [stage.phase for stage in STAGES]
    assert sorted(phases_in_order) == phases_in_order
    assert set(phases_in_order) == set(PipelinePhase)


def test_prerequisites_name_only_earlier_stages_and_never_twice() -> None:
    for stage in STAGES:
        assert len(set(stage.prerequisites)) == len(stage.prerequisites), stage.name
        for prerequisite in stage.prerequisites:
            assert stage_named(prerequisite).number < stage.number, (stage.name, prerequisite)


def test_instructions_is_the_only_root_and_every_stage_is_reachable_from_it() -> None:
    assert [stage.name for stage in STAGES if not stage.prerequisites] == [N.INSTRUCTIONS]
    for stage in STAGES[1:]:
        assert N.INSTRUCTIONS in transitive_prerequisites(stage.name), stage.name


def test_exactly_the_five_gates_of_the_architecture_send_work_back() -> None:
    assert {N.ATOM_VERIFICATION, N.ASSEMBLY, N.INTEGRATION_TESTS, N.END_TO_END_TESTS, N.ADVERSARIAL} == SEND_BACK_STAGES
    assert SEND_BACK_STAGES | {N.ASSEMBLY, N.INTEGRATION_TESTS, N.END_TO_END_TESTS} == GATING_STAGES
    assert {stage.name for stage in STAGES if stage.sends_back} == SEND_BACK_STAGES


def test_performable_today_are_exactly_the_stages_this_product_evaluates() -> None:
    performable = {stage.number for stage in STAGES if stage.performable}
    assert performable == set(range(1, 38))  # 6 recall since issue 19: every stage is decided
    assert {stage.name for stage in STAGES if stage.performable} == PERFORMABLE_STAGES


def test_there_are_exactly_five_outcomes() -> None:
    assert [outcome.value for outcome in StageOutcome] == [
        "satisfied", "failed", "skipped", "blocked", "not-implemented"
    ]  # fmt: skip


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name.value)
def test_every_gate_is_one_plain_sentence(stage: Stage) -> None:
    assert stage.gate.endswith(".")
    assert stage.gate[0].isupper()
    assert "|" not in stage.gate
    assert "\n" not in stage.gate


def test_a_stage_is_found_by_its_name_and_any_other_text_is_refused() -> None:
    assert stage_named("assembly").number == 26
    assert stage_named(N.DELIVER).number == 37
    with pytest.raises(InvalidValueError, match="no stage is named 'Assembly'"):
        stage_named("Assembly")


# Order inside a phase is an argument (ARCHITECTURE §8.1); each is an edge (a prerequisite or order only).


@pytest.mark.parametrize(
    ("tests", "tested"),
    [
        (N.ATOM_EXAMPLE_TESTS, N.ATOMS),
        (N.ATOM_PROPERTY_TESTS, N.ATOMS),
        (N.ATOM_CASE_SYNTHESIS, N.ATOM_EXAMPLE_TESTS),
        (N.MOLECULE_TESTS, N.MOLECULES),
        (N.CONTROL_TESTS, N.CONTROL_FLOW),
    ],
)
def test_tests_exist_before_the_thing_they_test(tests: StageName, tested: StageName) -> None:
    assert tests in transitive_order(tested)


@pytest.mark.parametrize("derived", [N.ATOM_CASE_SYNTHESIS, N.ATOM_EXAMPLE_TESTS, N.ATOM_PROPERTY_TESTS])
def test_cases_come_from_the_contract_not_from_the_implementation(derived: StageName) -> None:
    assert N.CONTRACTS in transitive_order(derived)
    assert N.ATOMS not in transitive_order(derived)


def test_anti_pattern_detection_comes_after_verification() -> None:
    assert N.ATOM_VERIFICATION in transitive_order(N.ANTI_PATTERNS)


def test_optimization_comes_only_after_mutation_scoring() -> None:
    assert N.ATOM_MUTATION in transitive_order(N.ATOM_OPTIMIZATION)


def test_documentation_comes_last_in_the_atoms_phase() -> None:
    others = {s.name for s in STAGES if s.phase is PipelinePhase.ATOMS and s.name is not N.ATOM_DOCUMENTATION}
    assert others <= transitive_order(N.ATOM_DOCUMENTATION)


def test_delivery_needs_a_decision_and_a_decision_needs_the_evidence() -> None:
    assert N.HUMAN_ACCEPTANCE in transitive_prerequisites(N.DELIVER)
    assert N.EVIDENCE_BUNDLE in transitive_prerequisites(N.HUMAN_ACCEPTANCE)


def test_the_evidence_bundle_does_not_wait_for_the_checks_it_reports_on() -> None:
    reported = {s.name for s in STAGES if s.phase in {PipelinePhase.PROGRAM, PipelinePhase.VERIFICATION_DEPTH}}
    assert not reported & transitive_prerequisites(N.EVIDENCE_BUNDLE)


# The user document carries the catalog as a table; it is generated from the catalog and must match.


def render_stage_table() -> str:
    """The Markdown table of docs/pipeline.md, built from the catalog."""
    lines = [
        "| # | Stage | Phase | Gate (what must hold to count as satisfied) | Prerequisites (after: order only) | "
        "Sends back | "
        "Performable today |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in STAGES:
        prerequisites = ", ".join([*(f"`{p.value}`" for p in s.prerequisites),
                                   *(f"after `{a.value}`" for a in s.after)]) or "—"
        lines.append(
            f"| {s.number} | `{s.name.value}` | {s.phase.value} {s.phase.label} | {s.gate} | {prerequisites} | "
            f"{'yes' if s.sends_back else 'no'} | {'yes' if s.performable else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def test_docs_pipeline_md_carries_the_stage_table_generated_from_the_catalog() -> None:
    text = (DOCS / "pipeline.md").read_text()
    start = text.index("<!-- stage-table:begin -->\n") + len("<!-- stage-table:begin -->\n")
    end = text.index("<!-- stage-table:end -->")
    assert text[start:end] == render_stage_table()


def test_docs_pipeline_md_names_every_outcome() -> None:
    text = (DOCS / "pipeline.md").read_text()
    for outcome in StageOutcome:
        assert f"`{outcome.value}`" in text


def _public_names_defined_in(module: ModuleType) -> set[str]:
    tree = ast.parse(Path(str(module.__file__)).read_text())
    names = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        if isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", [stages, outcomes], ids=lambda m: m.__name__)
def test_all_lists_exactly_the_names_each_module_defines_publicly(module: ModuleType) -> None:
    assert set(module.__all__) == _public_names_defined_in(module)


def test_the_package_re_exports_every_public_name_of_its_modules() -> None:
    assert set(pipeline.__all__) == set(stages.__all__) | set(outcomes.__all__)
    for name in pipeline.__all__:
        assert getattr(pipeline, name) is getattr(stages if name in stages.__all__ else outcomes, name)


def test_no_phase_b_to_d_verdict_and_no_build_stops_assembly_or_the_tests() -> None:
    """Issue 14 item 5 (ARCHITECTURE §8.2): assembly and the tests always run — a blocked build (27) or a
    failed atom, molecule or control-flow gate is never a prerequisite of 26, 28 or 29."""
    atoms_to_control = {s.name for s in STAGES if s.phase in {PipelinePhase.ATOMS, PipelinePhase.MOLECULES,
                                                             PipelinePhase.CONTROL_FLOW}}
    for stage in (N.ASSEMBLY, N.INTEGRATION_TESTS, N.END_TO_END_TESTS):
        required = transitive_prerequisites(stage)
        assert not required & atoms_to_control, stage
        assert N.PROGRAM not in required, stage
    assert stage_named(N.INTEGRATION_TESTS.value).prerequisites == (N.ASSEMBLY,)
    assert stage_named(N.END_TO_END_TESTS.value).prerequisites == (N.INSTRUCTIONS, N.ASSEMBLY)
    assert stage_named(N.ASSEMBLY.value).prerequisites == (N.ATOMIC_INSTRUCTIONS,)


def test_a_ledger_row_an_older_codeflux_recorded_not_implemented_still_reads_for_a_stage_performed_today() -> None:
    """Stages 2, 4 and 27 became performable with issue 14: rows older versions stored for them say
    ``not-implemented`` and must keep reading (`codeflux task show` of an old task crashed on them)."""
    from codeflux.domain.errors import InvalidValueError
    from codeflux.domain.pipeline import StageOutcome, StageVerdict

    old = StageVerdict.as_recorded(stage=StageName.CLARIFICATION, outcome=StageOutcome.NOT_IMPLEMENTED,
                                   gate_evaluation=None, reason="codeflux cannot perform this stage yet")
    assert old.outcome is StageOutcome.NOT_IMPLEMENTED
    with pytest.raises(InvalidValueError, match="codeflux performs this stage"):
        StageVerdict(stage=StageName.CLARIFICATION, outcome=StageOutcome.NOT_IMPLEMENTED, reason="no")
    with pytest.raises(InvalidValueError, match="needs a reason"):  # every other rule still holds
        StageVerdict.as_recorded(stage=StageName.PROGRAM, outcome=StageOutcome.BLOCKED, gate_evaluation=None,
                                 reason=None)


def test_order_only_edges_point_back_and_a_failed_advisory_atom_check_never_blocks_atom_verification() -> None:
    """Issue 17: findings of failed 5, 8, 9, 10 and 14 join the attempt a send-back gate starts — so they must not
    block 11 (it sends back) or the static checks; hard edges stay where a stage consumes an earlier one's data."""
    for stage in STAGES:
        for earlier in stage.after:
            assert stage_named(earlier).number < stage.number and earlier not in stage.prerequisites
    verification = transitive_prerequisites(N.ATOM_VERIFICATION)
    for advisory in (N.CONTRACTS, N.ATOM_EXAMPLE_TESTS, N.ATOM_PROPERTY_TESTS, N.ATOMS):
        assert advisory not in verification
        assert advisory not in transitive_prerequisites(N.ANTI_PATTERNS)
    assert N.ATOM_VERIFICATION in transitive_prerequisites(N.ATOM_MUTATION)
    assert N.ATOM_MUTATION in transitive_prerequisites(N.ATOM_OPTIMIZATION)
    assert N.CONTRACTS in transitive_prerequisites(N.RECALL)


def test_phase_f_needs_only_an_assembled_diff_or_a_suite_that_passed_and_never_the_advisory_build() -> None:
    """Issue 18: 30 and 33 look at the assembled diff (a failed advisory build, 27, blocks neither); 32 repeats a suite
    stage 28 saw pass; 34 times 32's runs (order only: a flaky test does not stop the timing)."""
    assert stage_named(N.GLOBAL_INVARIANTS.value).prerequisites == (N.ASSEMBLY,)
    assert stage_named(N.PLATFORM_MATRIX.value).prerequisites == (N.ASSEMBLY,)
    assert stage_named(N.REPETITION.value).prerequisites == (N.INTEGRATION_TESTS,)
    assert stage_named(N.NON_FUNCTIONAL.value).after == (N.REPETITION,)
    for stage in (N.GLOBAL_INVARIANTS, N.REPETITION, N.PLATFORM_MATRIX, N.NON_FUNCTIONAL):
        assert N.PROGRAM not in transitive_prerequisites(stage)
        assert stage not in GATING_STAGES
