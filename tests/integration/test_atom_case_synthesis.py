"""Stage 7 atom-case-synthesis (issue 17, non-gating): each atom's input ladder comes from its contract (the approved
plan's declared signature first), and the arguments the repository's own tests pass to the atom — recorded and
classified in a real worker's box, only the tests the coverage map says reach the atom — must cover every rung. The
reproduction of the issue's "Why": the stage was ``not-implemented``, and the reference's ladder was never checked
against what the tests pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.contracts import DeclaredAtom
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.domain.pipeline.ledger import LedgerRow
from codeflux.domain.plans import Plan
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.case_synthesis import evaluate_atom_case_synthesis
from codeflux.pipeline.findings import FINDINGS_JOIN_SEND_BACK, other_findings
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.specification import StageResult
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow_overlay_install,
    assembled_facts,
    keep_overlay,
    no_install_driver,
    running_ports,
)
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import Harness, a_plan_with_two_steps, make_harness

CALC = ("def add(a, b):\n    total = a + b\n    return total\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
        "def version() -> int:\n    return 2\n")
ANNOTATED = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
EVERY_RUNG = (
    "import pytest\n\nfrom pkg.calc import add\n\n\n"
    "@pytest.mark.parametrize((\"a\", \"b\"), [(2, 3), (0, 0), (1, -1), (10**6, 2**31 - 1), (2**200, -(2**200)),\n"
    "                                        (5, 10**9)],\n"
    "                         ids=[\"two\", \"zero\", \"one\", \"million\", \"huge\", \"billion\"])\n"
    "def test_add(a, b):\n    assert add(a, b) == a + b\n\n\n"
    "def test_add_refuses_other_types():\n    with pytest.raises(TypeError):\n        add(\"1\", 2)\n"
    "    with pytest.raises(TypeError):\n        add(1, \"2\")\n"
)
RUNGS = ["typical", "degenerate", "boundary", "large", "wrong-type", "pathological"]


def declaring_plan() -> Plan:
    """The harness's plan, its first step declaring ``add`` with annotations the code itself leaves out."""
    plan = a_plan_with_two_steps()
    first = replace(plan.steps[0], atoms=(DeclaredAtom(name="add", signature="def add(a: int, b: int) -> int"),
                                          DeclaredAtom(name="version", signature="def version() -> int")))
    return replace(plan, steps=(first, *plan.steps[1:]))


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)



def atoms_of(result: StageResult) -> dict[str, dict[str, object]]:
    found = result.evidence["atoms"]
    assert isinstance(found, list)
    return {str(item["qualified_name"]): item for item in found}


def rungs_of(atom: dict[str, object], parameter: str) -> dict[str, dict[str, object]]:
    parameters = atom["parameters"]
    assert isinstance(parameters, list)
    found = next(item for item in parameters if item["name"] == parameter)
    return {str(rung["rung"]): rung for rung in found["rungs"]}


def test_tests_passing_every_rung_satisfy_it_with_the_plans_contract_and_nothing_touches_the_worktree(
        harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness, plan=declaring_plan())
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(CALC)
    (worktree / "tests" / "test_ladder.py").write_text(EVERY_RUNG)
    identity = diff_against_base(ports.facts.worktree).identity
    facts = assembled_facts(ports)

    result = evaluate_atom_case_synthesis(facts)

    keep_overlay(harness, overlay_cache)
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    atoms = atoms_of(result)
    add = atoms["pkg.calc.add"]
    parameters = add["parameters"]
    assert isinstance(parameters, list)
    # the ladder's type is the plan's declared one: the code leaves a and b unannotated
    assert [(p["name"], p["annotation"], p["annotation_from"], p["kind"]) for p in parameters] == [
        ("a", "int", "plan step 1", {"kind": "int"}), ("b", "int", "plan step 1", {"kind": "int"})]
    a = rungs_of(add, "a")
    assert list(a) == RUNGS and all(rung["calls"] for rung in a.values())
    assert a["wrong-type"]["tests"] == ["tests/test_ladder.py::test_add_refuses_other_types"]
    assert a["pathological"]["tests"] == ["tests/test_ladder.py::test_add[huge]"]
    assert a["boundary"]["examples"] == ["1", "-1", "2147483647"] and a["boundary"]["rule"].startswith("±1")
    assert rungs_of(add, "b")["large"]["tests"] == ["tests/test_ladder.py::test_add[billion]"]
    assert str(atoms["pkg.calc.version"]["skipped"]).startswith("takes no parameter")
    assert result.evidence["findings"] == [] and result.evidence["generated_cases_run"] == 0
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("1 atom(s) with an input ladder: 12 of 12 rung(s) exercised by the repository's tests")
    # only the tests the coverage map says reach add ran, in the box; its report was removed, the worktree untouched
    assert result.evidence["tests"] == sorted(add["tests"])  # type: ignore[arg-type]
    assert "tests/test_calc.py::test_add" in result.evidence["tests"]  # type: ignore[operator]
    assert str(result.evidence["command"]).startswith(f"{harness.venv_python} -c \"$CODEFLUX_CASE_LADDER_SCRIPT\" ")
    assert not list(harness.driver.task_temp_directory(ports.facts.task_id).glob("codeflux-checks/*"))
    assert not (worktree / ".hypothesis").exists()
    assert diff_against_base(ports.facts.worktree).identity == identity == result.evidence["diff_identity"]


def test_a_weak_suite_fails_it_naming_each_unexercised_rung_and_the_findings_join_a_send_back(
        harness: Harness, overlay_cache: Path) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ANNOTATED)
    identity = diff_against_base(ports.facts.worktree).identity
    facts = assembled_facts(ports)

    result = evaluate_atom_case_synthesis(facts)  # the base suite only: add(1, 2)

    keep_overlay(harness, overlay_cache)
    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    add = atoms_of(result)["pkg.calc.add"]
    a, b = rungs_of(add, "a"), rungs_of(add, "b")
    assert [rung for rung, seen in a.items() if seen["calls"]] == ["boundary"]
    assert [rung for rung, seen in b.items() if seen["calls"]] == ["typical"]
    assert b["typical"]["tests"] == ["tests/test_calc.py::test_add"]
    findings = result.evidence["findings"]
    assert isinstance(findings, list) and len(findings) == 2
    assert findings[0].startswith("pkg.calc.add (pkg/calc.py:1) parameter a: no test passes it an input on rung(s) "
                                  "typical (e.g. 42, -7); degenerate (e.g. 0); large (e.g. 1000000, -1000000000); "
                                  "wrong-type (e.g. '1', 1.5); pathological (e.g. an int of 201 bits")
    assert "parameter b: no test passes it an input on rung(s) degenerate (e.g. 0); boundary" in findings[1]
    assert (result.verdict.gate_evaluation or "").startswith("1 atom(s) with an input ladder: 2 of 12 rung(s)")
    assert diff_against_base(ports.facts.worktree).identity == identity
    # non-gating: it never sends back, and its findings join an attempt a send-back gate starts
    assert stage_named(StageName.ATOM_CASE_SYNTHESIS).sends_back is False
    assert StageName.ATOM_CASE_SYNTHESIS in FINDINGS_JOIN_SEND_BACK
    row = LedgerRow(task_id=ports.facts.task_id, attempt=1, number=7, verdict=result.verdict,
                    evidence=result.evidence, recorded_at_us=1)
    section = other_findings([row])
    assert "- 7 atom-case-synthesis: pkg.calc.add (pkg/calc.py:1) parameter a: no test passes it" in section


def test_atoms_without_parameters_or_without_atoms_are_skipped_with_the_reason(harness: Harness) -> None:
    ports = running_ports(harness)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text("from typing import Any\n\n\ndef add(a, b):\n    return a + b\n\n\n"
                                              "def sub(a, b):\n    return a - b\n\n\n"
                                              "def version() -> int:\n    return 2\n\n\n"
                                              "def anything(value: Any) -> Any:\n    return value\n")

    parameterless = evaluate_atom_case_synthesis(assembled_facts(ports))

    assert parameterless.verdict.outcome is StageOutcome.SKIPPED, parameterless.verdict
    assert (parameterless.verdict.reason or "").startswith("no atom has a parameter with a type codeflux derives")
    atoms = atoms_of(parameterless)
    assert str(atoms["pkg.calc.version"]["skipped"]).startswith("takes no parameter other than self/cls")
    assert "Any, object, a type variable" in str(atoms["pkg.calc.anything"]["skipped"])
    (worktree / "pkg" / "calc.py").write_text(BASE_FILES["pkg/calc.py"])
    (worktree / "README.md").write_text("# calc\n\nWords only.\n")
    no_atoms = evaluate_atom_case_synthesis(assembled_facts(ports))
    assert no_atoms.verdict.outcome is StageOutcome.SKIPPED
    assert "no atom to derive input cases for" in (no_atoms.verdict.reason or "")


def test_without_coverage_and_no_way_to_install_it_the_stage_is_blocked_naming_the_tool(
        db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(ANNOTATED)

        result = evaluate_atom_case_synthesis(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.BLOCKED, result.verdict
    assert (result.verdict.reason or "").startswith("coverage is not in the repository's environment")
    assert result.evidence == {}  # the ledger stores a blocked verdict with no evidence


def test_the_catalog_says_stage_7_is_performed_in_phase_b_and_what_it_does_not_check() -> None:
    stage = stage_named(StageName.ATOM_CASE_SYNTHESIS)
    assert stage.performable and not stage.sends_back
    assert "recorded and classified in the task's box" in stage.gate and "Not checked" in stage.gate
    assert [item.stage for item in ATOM_STAGES][:2] == [StageName.CONTRACTS, StageName.ATOM_CASE_SYNTHESIS]
