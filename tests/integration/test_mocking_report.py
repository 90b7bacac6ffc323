"""Stage 28's mocking report (issue 18): from phase B's one coverage run (real worker, confined, coverage.py from
codeflux's overlay), which tests that execute a changed atom also replace it with a fake — evidence, never a gate.
The reproduction of the issue's point: a test that runs a changed function once and patches it for the call that
matters counted as covering it, and nothing said so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.pipeline.atom_coverage import measured_coverage
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.mocking import MOCKING_NOT_SEEN, mocking_evidence
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, allow_overlay_install, assembled_facts, running_ports
from tests.fixtures.task_runs import Harness, make_harness

CALC = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def scale(a, b):\n    return a * b\n\n\n"
    "def total(values):\n    return sum(scale(value, 2) for value in values)\n"
)
TESTS = (
    "from pkg import calc\n\n\n"
    "def test_scale():\n    assert calc.scale(2, 3) == 6\n\n\n"
    "def test_total_with_a_fake_scale(monkeypatch):\n"
    "    assert calc.scale(1, 1) == 1\n"
    "    monkeypatch.setattr(calc, 'scale', lambda a, b: 0)\n"
    "    assert calc.total([1, 2]) == 0\n"
)


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def test_the_tests_that_cover_a_changed_atom_and_replace_it_are_named(harness: Harness) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(CALC)
    (worktree / "tests" / "test_calc.py").write_text(TESTS)
    facts = assembled_facts(ports)
    assert mocking_evidence(facts)["measured"] is False  # nothing measured yet: it never runs the suite itself

    evaluate_atom_example_tests(facts)  # phase B measures the coverage map once
    evidence = mocking_evidence(facts)

    assert measured_coverage(facts) is not None and evidence["measured"] is True
    atoms = {entry["atom"]: entry for entry in evidence["atoms"]}  # type: ignore[union-attr]
    scale = atoms["pkg.calc.scale"]
    assert scale["tests"] == 2
    assert scale["mocked_in"] == ["tests/test_calc.py::test_total_with_a_fake_scale"]
    assert scale["replacements"] == [{"test": "tests/test_calc.py::test_total_with_a_fake_scale",
                                      "at": "tests/test_calc.py:10", "form": "monkeypatch.setattr",
                                      "target": "calc.scale", "match": "qualified name"}]
    assert atoms["pkg.calc.total"]["mocked_in"] == []
    assert evidence["mocked"] == ["pkg.calc.scale"] and evidence["not_seen"] == MOCKING_NOT_SEEN
    assert mocking_evidence(None) == {"measured": False, "why": "the diff did not assemble: no atom was examined"}
