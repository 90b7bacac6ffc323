"""Stage 7 atom-case-synthesis (issue 17, non-gating): each atom's input ladder comes from its contract (the approved
plan's declared signature first), and the arguments the repository's own tests pass to the atom — recorded and
classified in a real worker's box, only the tests the coverage map says reach the atom — must cover every rung. The
reproduction of the issue's "Why": the stage was ``not-implemented``, and the reference's ladder was never checked
against what the tests pass. Each rung's examples are drawn by Hypothesis in the same box run — ``from_type`` of the
atom's real annotation (a repository's own dataclass built by it), codeflux's strategies for the other rungs, a
recorded seed that draws them again — and codeflux's fixed examples stand in, saying why, without Hypothesis.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import venv as venv_module
import zipfile
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
from codeflux.pipeline.case_ladder import examples_of, rung_of
from codeflux.pipeline.case_synthesis import evaluate_atom_case_synthesis, seed_of
from codeflux.pipeline.findings import FINDINGS_JOIN_SEND_BACK, other_findings
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.tool_overlay import COVERAGE, MANIFEST, repository_tools, resolve_tools
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    WHEELHOUSE,
    allow,
    allow_overlay_install,
    assembled_facts,
    keep_overlay,
    no_install_driver,
    running_ports,
    wheelhouse_version,
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
SHAPES = (
    "from __future__ import annotations\n\n"
    "from dataclasses import dataclass\n"
    "from typing import TYPE_CHECKING\n\n"
    "if TYPE_CHECKING:\n"
    "    from decimal import Decimal\n\n\n"
    "@dataclass(frozen=True)\n"
    "class Point:\n"
    "    x: int\n"
    "    y: int\n\n\n"
    "class Handle:\n"
    "    def __init__(self, raw):\n"
    "        self.raw = raw\n\n\n"
    "def shift(point: Point, handle: Handle, by: int) -> Point:\n"
    "    return Point(point.x + by, point.y + by)\n\n\n"
    "def scale(value: Decimal, factor: float) -> float:\n"
    "    return float(value) * factor\n"
)
SHAPES_TESTS = (
    "from pkg.shapes import Handle, Point, shift\n\n\n"
    "def test_shift():\n"
    "    assert shift(Point(1, 2), Handle(3), 1) == Point(2, 3)\n"
)


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
    assert a["boundary"]["rule"].startswith("±1")
    # the examples: drawn by Hypothesis in the box, with the diff's seed, from the contract's kind (the code has no
    # annotation): typical from from_type(int), the other rungs from codeflux's strategies; each on its own rung
    version, seed = importlib.metadata.version("hypothesis"), seed_of(identity)
    assert result.evidence["examples"] == {
        "source": "hypothesis", "hypothesis": version, "provided_by": "repository environment", "seed": seed,
        "max_examples": 20, "kept_per_rung": 3, "parameter_budget_s": 2.0, "total_budget_s": 20.0, "database": None,
        "problems": {}}
    first = parameters[0]
    assert (first["drawn_from_type"], first["drawn_type_from"]) == ("int", "the contract's kind")
    assert a["typical"]["examples_from"] == f"drawn by Hypothesis {version} from from_type(int), seed {seed}"
    assert a["boundary"]["examples_from"] == (f"drawn by Hypothesis {version} from codeflux's strategy sampled_from("
                                              "±1, ±2**k, ±(2**k - 1) for k in 7, 8, 15, 16, 31, 32, 63, 64), seed "
                                              f"{seed}")
    assert a["degenerate"]["examples"] == ["0"]
    for rung in ("typical", "boundary", "large"):
        assert 1 <= len(a[rung]["examples"]) <= 3
        numbers = [int(text) for text in a[rung]["examples"] if not text.startswith(("an int", "a negative int"))]
        assert numbers and {rung_of({"kind": "int"}, number) for number in numbers} == {rung}, a[rung]
    assert all(text.startswith(("an int of", "a negative int of")) for text in a["pathological"]["examples"])
    assert rungs_of(add, "b")["large"]["tests"] == ["tests/test_ladder.py::test_add[billion]"]
    assert str(atoms["pkg.calc.version"]["skipped"]).startswith("takes no parameter")
    assert result.evidence["findings"] == [] and result.evidence["generated_cases_run"] == 0
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("1 atom(s) with an input ladder: 12 of 12 rung(s) exercised by the repository's tests")
    # only the tests the coverage map says reach add ran, in the box; its report was removed, the worktree untouched
    assert result.evidence["tests"] == sorted(add["tests"])  # type: ignore[arg-type]
    assert "tests/test_calc.py::test_add" in result.evidence["tests"]  # type: ignore[operator]
    assert re.fullmatch(re.escape(f"{harness.venv_python} -c \"$CODEFLUX_CASE_LADDER_LOADER\" "
                                  f"{result.evidence['script_sha256']} ") + "[0-9a-f]{64} -",
                        str(result.evidence["command"]))  # the job's SHA-256; no overlay: Hypothesis is the .venv's
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
    # each unexercised rung with two of the examples Hypothesis drew for it (the diff's seed)
    assert re.fullmatch(r"pkg\.calc\.add \(pkg/calc\.py:1\) parameter a: no test passes it an input on rung\(s\) "
                        r"typical \(e\.g\. -?\d+, -?\d+\); degenerate \(e\.g\. 0\); large \(e\.g\. -?\d+, -?\d+\); "
                        r"wrong-type \(e\.g\. [^;]+\); pathological \(e\.g\. (a negative )?(an )?int of \d+ bits, .*\)",
                        findings[0]), findings[0]
    assert add["parameters"][0]["drawn_type_from"] == "the atom's annotation (typing.get_type_hints)"
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
    assert "drawn in the task's box by Hypothesis with a recorded seed" in stage.gate and "from_type" in stage.gate
    assert [item.stage for item in ATOM_STAGES][:3] == [StageName.CONTRACTS, StageName.RECALL,
                                                        StageName.ATOM_CASE_SYNTHESIS]


def examples(result: StageResult) -> dict[tuple[str, str, str], list[str]]:
    """Every rung's examples: (atom, parameter, rung) → the example texts."""
    found = {}
    for name, atom in atoms_of(result).items():
        for parameter in atom.get("parameters", []):  # type: ignore[attr-defined]
            for rung in parameter.get("rungs", []):
                found[(name, parameter["name"], rung["rung"])] = rung["examples"]
    return found


def test_examples_are_drawn_by_hypothesis_in_the_box_from_the_real_annotations_and_the_seed_reproduces_them(
        harness: Harness, overlay_cache: Path) -> None:
    """A repository's own dataclass is built by from_type; a class from_type cannot build, and annotations that do
    not resolve, are reported per parameter (codeflux's fixed examples stand in); the recorded seed draws the same
    examples again; with no test reaching any atom the run only draws."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "shapes.py").write_text(SHAPES)
    (worktree / "tests" / "test_shapes.py").write_text(SHAPES_TESTS)
    facts = assembled_facts(ports)

    result = evaluate_atom_case_synthesis(facts)

    keep_overlay(harness, overlay_cache)
    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict  # the suite passes one input per parameter
    version, seed = importlib.metadata.version("hypothesis"), seed_of(facts.diff_identity)
    assert result.evidence["examples"]["seed"] == seed  # type: ignore[index]
    shift = {p["name"]: p for p in atoms_of(result)["pkg.shapes.shift"]["parameters"]}  # type: ignore[union-attr]
    point = rungs_of(atoms_of(result)["pkg.shapes.shift"], "point")
    assert shift["point"]["drawn_from_type"] == "Point"
    assert shift["point"]["drawn_type_from"] == "the atom's annotation (typing.get_type_hints)"
    assert point["typical"]["examples_from"] == f"drawn by Hypothesis {version} from from_type(Point), seed {seed}"
    assert point["typical"]["examples"] and all(re.fullmatch(r"Point\(x=-?\d+, y=-?\d+\)", text)
                                                 for text in point["typical"]["examples"])
    assert point["typical"]["calls"] == 1 and point["wrong-type"]["examples"]
    # from_type cannot build Handle (its constructor's parameter has no annotation): reported, fixed examples shown
    handle = rungs_of(atoms_of(result)["pkg.shapes.shift"], "handle")
    assert handle["typical"]["examples"] == ["an instance of Handle"]
    assert handle["typical"]["examples_from"].startswith("codeflux's fixed examples (drawing from from_type(Handle) "
                                                         "failed: ResolutionFailed: ")
    # Decimal is imported only for type checkers: the annotations do not resolve, so the contract's kinds are used
    scale = {p["name"]: p for p in atoms_of(result)["pkg.shapes.scale"]["parameters"]}  # type: ignore[union-attr]
    assert str(scale["value"]["draw_hint_problem"]).startswith("its annotations could not be resolved (NameError")
    assert scale["value"]["drawn_from_type"] is None
    value = rungs_of(atoms_of(result)["pkg.shapes.scale"], "value")["typical"]
    assert value["examples"] == ["an instance of Decimal"]
    assert value["examples_from"] == ("codeflux's fixed examples (no type to build from_type on: neither the "
                                      "annotation nor the contract's kind names one codeflux can find)")
    factor = rungs_of(atoms_of(result)["pkg.shapes.scale"], "factor")
    assert scale["factor"]["drawn_type_from"] == "the contract's kind"
    assert factor["typical"]["examples_from"] == f"drawn by Hypothesis {version} from from_type(float), seed {seed}"
    assert sorted(factor["pathological"]["examples"]) == ["-inf", "inf", "nan"]
    assert not list(harness.driver.task_temp_directory(ports.facts.task_id).glob("codeflux-checks/*"))

    other = evaluate_atom_case_synthesis(facts, seed=seed + 1)  # another seed: other examples
    assert examples(other) != examples(result) and other.evidence["examples"]["seed"] == seed + 1  # type: ignore[index]
    (worktree / "tests" / "test_shapes.py").unlink()  # the next attempt: no test reaches any atom, the run only draws
    allow(harness.driver, ports.facts.task_id, pytest_argv(harness.venv_python), attempt=2)
    drawing = evaluate_atom_case_synthesis(assembled_facts(ports, attempt=2), seed=seed)  # the recorded seed
    assert drawing.evidence["tests"] == [] and drawing.evidence["drawing_only"] is True, drawing.verdict
    assert examples(drawing) == examples(result)
    findings = drawing.evidence["findings"]
    assert isinstance(findings, list) and all("no passing test executes the atom" in finding for finding in findings)


def venv_without_hypothesis(harness: Harness, root: Path) -> None:
    """The repository's ``.venv`` becomes a copy of the one it had without Hypothesis (it had no coverage)."""
    venv_module.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(root)
    site = next((root / "lib").glob("python3*/site-packages"))
    had = next((Path(os.path.realpath(harness.repo / ".venv")) / "lib").glob("python3*/site-packages"))
    shutil.copytree(had, site, dirs_exist_ok=True, ignore=shutil.ignore_patterns("hypothesis*", "_hypothesis*"))
    link = harness.repo / ".venv"
    link.unlink()
    link.symlink_to(root, target_is_directory=True)


def test_without_hypothesis_in_the_box_codefluxs_fixed_examples_are_shown_saying_why_and_the_gate_is_unchanged(
        db: Database, tmp_path: Path) -> None:
    """An environment without Hypothesis, an overlay holding coverage only (made before Hypothesis joined the check
    tools) and a run that may install nothing: the ladder still runs, its examples are codeflux's fixed ones."""
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        venv_without_hypothesis(harness, tmp_path / "plainvenv")
        ports = running_ports(harness)
        python = harness.venv_python
        key = resolve_tools(ports, attempt=1, interpreter=python, test_argv=pytest_argv(python), tools=(COVERAGE,)).key
        assert key is not None
        overlay = repository_tools(driver.tools_directory, harness.repo) / key
        wheel = next(WHEELHOUSE.glob("coverage-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(overlay / "site")
        (overlay / MANIFEST).write_text(json.dumps({"key": key, "tools": {"coverage": wheelhouse_version()}}))
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(ANNOTATED)

        result = evaluate_atom_case_synthesis(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict  # the same gate: add(1, 2) only
    source = result.evidence["examples"]
    assert isinstance(source, dict) and source["source"] == "codeflux's fixed examples"
    why = "Hypothesis is not available to the box"
    assert source["why"] == why and source["detail"].startswith("hypothesis is not in the repository's environment")
    a = rungs_of(atoms_of(result)["pkg.calc.add"], "a")
    assert [rung for rung, seen in a.items() if seen["calls"]] == ["boundary"]
    for rung, seen in a.items():
        assert seen["examples"] == list(examples_of({"kind": "int"}, rung))
        assert seen["examples_from"] == f"codeflux's fixed examples ({why})"
    assert str(result.evidence["command"]).endswith(" -")  # no overlay: there is nothing to draw with
    assert "typical (e.g. 42, -7); degenerate (e.g. 0)" in result.evidence["findings"][0]  # type: ignore[index]
