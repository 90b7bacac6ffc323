"""Phase B's coverage run selects tests per changed file from file-test-map memory (issue 19, 5b): the second task on
a repository whose map memory holds runs only the mapped tests — judged at the task's base revision, since the task
changes the mapped file — plus every test of a test file it changes; a file without an applicable map runs the whole
test command, saying why; a gate that fails under the selection is measured again on the whole test command before
it fails. Real git, real SQLite, a real worker, real pytest under coverage.py, confined.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.covering_tests import ChangedFile
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import MemoryState
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.memory.learn import learn_file_test_map
from codeflux.memory.recall import entries_by_id
from codeflux.pipeline.atom_coverage import atom_coverage
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, allow_overlay_install, assembled_facts, keep_overlay, running_ports
from tests.fixtures.repos import commit_all, write_files
from tests.fixtures.task_runs import Harness, make_harness

ADD = "tests/test_calc.py::test_add"
SUB_TESTS = ("tests/test_sub.py::test_sub", "tests/test_sub.py::test_sub_negative")
OTHER = "tests/test_other.py::test_shout"
MORE_FILES = {
    "pkg/other.py": "def shout(text):\n    return text.upper()\n",
    "tests/test_sub.py": ("from pkg.calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\n\n"
                          "def test_sub_negative():\n    assert sub(-1, -2) == 1\n"),
    "tests/test_other.py": "from pkg.other import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n",
}
NEW_ADD = "def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n    return a - b\n"
NEW_SUB = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + -b\n"


@pytest.fixture(scope="module")
def overlay_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("overlay-cache")


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        built = make_harness(db, tmp_path, driver)
        write_files(built.repo, dict(MORE_FILES))
        commit_all(built.repo, "more tests")
        yield built


def learn_calc_map(harness: Harness, *extra: str) -> str:
    """What an accepted first task would have learned: the tests covering pkg/calc.py's add."""
    return learn_file_test_map(harness.db, root=harness.repo, file="pkg/calc.py", tests=[ADD, *extra]).entry_id.value


def started(harness: Harness, overlay_cache: Path) -> PipelinePorts:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id, cache=overlay_cache)
    return ports


def ran(ports: PipelinePorts) -> tuple[set[str], dict[str, object]]:
    """The tests the attempt's coverage run ran, and what its evidence says about the selection."""
    measured = atom_coverage(assembled_facts(ports))
    assert measured.coverage is not None and measured.coverage.measured, measured
    return set(measured.coverage.outcomes), measured.selection_evidence()


def judged(ports: PipelinePorts, stage: StageName) -> StageResult:
    """``stage`` as phase B judges it (a coverage reader is judged again on the whole suite when it fails)."""
    return next(item for item in ATOM_STAGES if item.stage is stage).judge(assembled_facts(ports))


def test_a_second_task_runs_only_the_mapped_tests_and_the_stage_says_so(harness: Harness, overlay_cache: Path) -> None:
    ports = started(harness, overlay_cache)
    (ports.facts.worktree.path / "pkg" / "calc.py").write_text(NEW_ADD)
    changed = [ChangedFile(path="pkg/calc.py")]
    assert ports.memory is not None  # positive control: without the entry memory selects nothing, naming the file
    assert ports.memory.covering_tests(changed, ports.facts.worktree.base).whole_suite == \
        "no applicable file-test map for pkg/calc.py"
    entry = learn_calc_map(harness)

    result = judged(ports, StageName.ATOM_EXAMPLE_TESTS)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    said = result.evidence["test_selection"]
    assert isinstance(said, dict) and "remeasured" not in said
    assert said["said"] == f"selected from memory entries [{entry}] (1 of 4 tests)", said
    assert said["tests"] == [ADD] and said["selected"] == 1 and said["collected"] == 4
    coverage = result.evidence["coverage"]
    assert isinstance(coverage, dict) and coverage["tests_run"] == 1
    argv = coverage["argv"]
    assert isinstance(argv, list) and argv[argv.index("--select") + 1:argv.index("--")] == [ADD]
    keep_overlay(harness, overlay_cache)


def test_a_map_whose_test_file_changed_at_the_base_is_refused_and_the_whole_command_runs(
        harness: Harness, overlay_cache: Path) -> None:
    entry = learn_calc_map(harness)
    # the person edits the map's test file after it was learned; the task starts from that commit
    write_files(harness.repo, {"tests/test_calc.py": "from pkg.calc import add\n\n\ndef test_add():\n"
                                                     "    assert add(2, 2) == 4\n"})
    commit_all(harness.repo, "another test_add")
    ports = started(harness, overlay_cache)
    (ports.facts.worktree.path / "pkg" / "calc.py").write_text(NEW_ADD)

    every, said = ran(ports)

    assert every == {ADD, *SUB_TESTS, OTHER}
    assert said["said"] == "whole suite: no applicable file-test map for pkg/calc.py", said
    refused = said["refused"]
    assert isinstance(refused, list) and len(refused) == 1
    assert refused[0].startswith(f"{entry} (pkg/calc.py): source-changed: tests/test_calc.py changed since it was "
                                 "learned") and f"judged at revision {ports.facts.worktree.base[:12]}" in refused[0]
    # its evidence stopped holding in the person's checkout: quarantined, never used again
    (stored,) = entries_by_id(harness.db, [MemoryEntryId.parse(entry)])
    assert stored.state is MemoryState.QUARANTINED


def test_a_test_file_the_task_changes_runs_whole_beside_the_mapped_tests(harness: Harness, overlay_cache: Path) -> None:
    learn_calc_map(harness, "tests/test_calc.py::test_renamed_since")  # a name the collection no longer has
    ports = started(harness, overlay_cache)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(NEW_ADD)
    with (worktree / "tests" / "test_sub.py").open("a") as handle:
        handle.write("\n\ndef test_sub_zero():\n    assert sub(0, 0) == 0\n")

    only, said = ran(ports)

    assert only == {ADD, *SUB_TESTS, "tests/test_sub.py::test_sub_zero"}  # never tests/test_other.py
    assert said["test_files"] == ["tests/test_sub.py"] and said["selected"] == 4 and said["collected"] == 5
    assert said["missing"] == ["tests/test_calc.py::test_renamed_since"]  # reported, never a pytest usage error


def test_a_gate_failing_under_the_selection_is_measured_again_on_the_whole_suite_and_holds(
        harness: Harness, overlay_cache: Path) -> None:
    entry = learn_calc_map(harness)  # it names test_add only: the selection never runs tests/test_sub.py
    ports = started(harness, overlay_cache)
    (ports.facts.worktree.path / "pkg" / "calc.py").write_text(NEW_SUB)

    result = judged(ports, StageName.ATOM_EXAMPLE_TESTS)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    said = result.evidence["test_selection"]
    assert isinstance(said, dict)
    assert said["said"] == "whole suite: atom-example-tests failed under the tests selected from memory", said
    remeasured = str(said["remeasured"])
    assert remeasured.startswith("atom-example-tests failed under the tests selected from memory (") and \
        "pkg.calc.sub" in remeasured and remeasured.endswith("measured again on the whole test command and judged on "
                                                             "that")
    selected = said["selected_run"]
    assert isinstance(selected, dict)
    assert selected["said"] == f"selected from memory entries [{entry}] (1 of 4 tests)"
    sub = next(atom for atom in result.evidence["atoms"] if atom["atom"] == "pkg.calc.sub")  # type: ignore[union-attr]
    assert set(sub["tests"]) == set(SUB_TESTS), sub  # type: ignore[index]
