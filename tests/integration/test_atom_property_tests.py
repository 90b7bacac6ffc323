"""Stage 9 atom-property-tests (issue 17, non-gating): each atom taking variable data is reached by a Hypothesis
``@given`` test — found by syntax tree, confirmed by the coverage map (real pytest under coverage.py from codeflux's
overlay, in a real worker, confined). Skipped when the repository does not declare Hypothesis. The reproduction of
the issue's "Why": the stage was ``not-implemented`` (and the reference called any table loop a property test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.pipeline.atom_properties import evaluate_atom_property_tests, hypothesis_declared
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, allow_overlay_install, assembled_facts, running_ports
from tests.fixtures.task_runs import Harness, make_harness

ADD = "def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n    return a - b\n"
DECLARED = '[project]\nname = "calc"\nversion = "0"\n\n[project.optional-dependencies]\ntest = ["pytest", ' \
           '"hypothesis>=6"]\n'
PROPERTY_OF_ADD = (
    "from hypothesis import given, strategies as st\n\nfrom pkg.calc import add\n\n\n"
    "@given(st.integers(), st.integers())\ndef test_add_commutes(a, b):\n    assert add(a, b) == add(b, a)\n"
)
PROPERTY_OF_SUB = (
    "import hypothesis\nfrom hypothesis import strategies as st\n\nfrom pkg.calc import sub\n\n\n"
    "@hypothesis.given(st.integers())\ndef test_sub_self(a):\n    assert sub(a, a) == 0\n"
)


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def evaluate(ports: PipelinePorts) -> StageResult:
    return evaluate_atom_property_tests(assembled_facts(ports))


def test_an_atom_reached_by_a_given_test_satisfies_it(harness: Harness) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pyproject.toml").write_text(DECLARED)
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_props.py").write_text(PROPERTY_OF_ADD)

    result = evaluate(ports)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    atom = result.evidence["atoms"][0]  # type: ignore[index]
    assert atom == {"qualified_name": "pkg.calc.add", "path": "pkg/calc.py", "variable_inputs": ["a", "b"],
                    "property_tests": ["tests/test_props.py::test_add_commutes"]}
    assert result.evidence["hypothesis_declared_in"] == "pyproject.toml"


def test_a_given_test_that_never_reaches_the_atom_fails_it_with_a_finding_and_never_sends_back(
        harness: Harness) -> None:
    """Only example tests reach ``add``; the one ``@hypothesis.given`` test exercises ``sub`` (unchanged): found by
    the syntax tree, but the coverage map shows it never executes ``add``'s body."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "requirements-dev.txt").write_text("pytest\nhypothesis==6.*  # properties\n")
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_props.py").write_text(PROPERTY_OF_SUB)

    result = evaluate(ports)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    assert result.evidence["property_tests_found"] == ["tests/test_props.py::test_sub_self"]
    assert result.evidence["findings"] == ["no property test (Hypothesis @given) reaches pkg.calc.add (pkg/calc.py)"]
    assert result.evidence["hypothesis_declared_in"] == "requirements-dev.txt"
    assert stage_named(StageName.ATOM_PROPERTY_TESTS).sends_back is False


def test_without_hypothesis_declared_or_without_variable_data_it_is_skipped_with_the_reason(
        harness: Harness) -> None:
    ports = running_ports(harness)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_props.py").write_text(PROPERTY_OF_ADD)  # hypothesis is installed, not declared

    undeclared = evaluate(ports)

    assert undeclared.verdict.outcome is StageOutcome.SKIPPED
    assert "does not declare Hypothesis" in (undeclared.verdict.reason or "")
    (worktree / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b"
                                              "\n\n\ndef version():\n    return 2\n")
    fixed = evaluate(ports)
    assert fixed.verdict.outcome is StageOutcome.SKIPPED
    assert "no atom takes variable data" in (fixed.verdict.reason or "")


def test_where_hypothesis_is_declared_is_read_from_each_kind_of_file(tmp_path: Path) -> None:
    cases = {
        "pyproject.toml": '[dependency-groups]\ntest = ["hypothesis"]\n',
        "setup.cfg": "[options.extras_require]\ntest =\n    pytest\n    hypothesis>=6\n",
        "tox.ini": "[testenv]\ndeps =\n    pytest\n    hypothesis\n",
        "requirements/test.txt": "hypothesis[cli]\n",
    }
    for name, text in cases.items():
        root = tmp_path / name.replace("/", "-")
        (root / name).parent.mkdir(parents=True)
        (root / name).write_text(text)
        assert hypothesis_declared(root) == name, name
    other = tmp_path / "other"
    other.mkdir()
    (other / "requirements.txt").write_text("hypothesis-jsonschema\npytest  # no hypothesis\n")
    assert hypothesis_declared(other) is None
