"""Stage 16's measured growth (issue 17): atoms with a sized input are timed at three sizes in the task's real,
confined worker and the exponent is fitted on a log-log scale — with the scripted provider (not a model), real
worker processes and the real pipeline.

Before this, stage 16 recorded every atom's growth as "not measured" whatever the atom did: a quadratic loop
and a linear one were indistinguishable. Now the evidence tells them apart, says why an atom was not timed, and
the timing run can neither write into the worktree (it runs in a scratch copy) nor outside its box.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.growth import DOES_NOT_PROVE, NO_SIZED_INPUT
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.thresholds import (
    ATOM_FUZZ_BUDGET_S,
    ATOM_GROWTH_BASE_SIZE,
    ATOM_GROWTH_BUDGET_MS,
    set_threshold,
)
from codeflux.store.database import Database
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import (
    FIXED_CALC,
    Harness,
    a_plan_whose_check_is_not_the_test_command,
    calc_tests,
    done,
    make_harness,
    scripted_gateway,
    write_file,
)

ATOMS = '''

def mix(a: int, b: float) -> float:
    """No sized input: two numbers."""
    return a * b

def total(items: list[int]) -> int:
    """Linear: one pass."""
    result = 0
    for item in items:
        result += item
    return result


def equal_pairs(items: list[int]) -> int:
    """Quadratic: every pair."""
    found = 0
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if items[i] == items[j]:
                found += 1
    return found


def stamp(text: str) -> int:
    """Writes next to its own module and into its working directory: the timing copy, never the worktree."""
    from pathlib import Path
    Path(__file__).with_name("stamped-by-timing.txt").write_text(text[:10])
    Path("cwd-stamped-by-timing.txt").write_text(text[:10])
    return len(text)


def leak(text: str) -> int:
    """Poisoned: writes outside the task's TMPDIR and worktree."""
    with open(LEAK_PATH, "w") as handle:
        handle.write(text)
    return len(text)


class Tally:
    def __init__(self, start: int) -> None:
        self.start = start

    def counted(self, items: list[int]) -> int:
        return self.start + len(items)
'''


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        built = make_harness(db, tmp_path, driver)
        set_threshold(db, ATOM_GROWTH_BASE_SIZE, 100, expected_revision=None)  # sizes 100, 400, 1600
        set_threshold(db, ATOM_GROWTH_BUDGET_MS, 1000, expected_revision=None)
        set_threshold(db, ATOM_FUZZ_BUDGET_S, 1, expected_revision=None)  # stage 12 fuzzes stamp and leak
        yield built


def atoms_source(leak_path: Path) -> str:
    return FIXED_CALC + f"\nLEAK_PATH = {str(leak_path)!r}\n" + ATOMS


def run_with(harness: Harness, source: str, **options: Any) -> TaskId:
    task_id = harness.ready_task(plan=options.get("plan"))
    turns = [write_file("pkg/calc.py", source, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(-3), "w2", replacing=BASE_FILES["tests/test_calc.py"]),
             done()]
    gateway, _ = scripted_gateway(harness.db, turns)
    policy = options.get("policy") or HeadlessPolicy.allowing(
        [PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks, repo_snapshot=harness.snapshot(),
             position=LadderPosition.start(), limits=LoopLimits(max_finish_repairs=0), headless_policy=policy)
    return task_id


def complexity_of(harness: Harness, task_id: TaskId) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
    row = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.ATOM_COMPLEXITY)
    evidence = dict(row.evidence)
    per_atom = {atom["qualified_name"]: atom["growth"] for atom in evidence["atoms"]}
    assert row.verdict.outcome is StageOutcome.SATISFIED, row.verdict.gate_evaluation  # radon: all within 10
    return str(row.verdict.gate_evaluation), evidence, per_atom


@pytest.mark.security
def test_growth_tells_linear_from_quadratic_in_the_box_and_never_writes_outside_it(harness: Harness,
                                                                                    tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    leak_path = outside / "leaked.txt"

    task_id = run_with(harness, atoms_source(leak_path))

    gate, evidence, growth = complexity_of(harness, task_id)
    linear, quadratic = growth["pkg.calc.total"], growth["pkg.calc.equal_pairs"]
    assert linear["measured"] is True and linear["sizes"] == [100, 400, 1600] and linear["sized"] == ["items"]
    assert 0.5 <= float(linear["exponent"]) <= 1.6, linear
    assert quadratic["measured"] is True and float(quadratic["exponent"]) >= 1.6, quadratic
    assert len(quadratic["seconds"]) == 3 and all(float(value) > 0 for value in quadratic["seconds"])
    # no sized input (two numbers), and a method whose class needs an argument: skipped, with why
    assert growth["pkg.calc.mix"] == {"measured": False, "detail": NO_SIZED_INPUT}
    assert growth["pkg.calc.Tally.counted"]["detail"] == ("skipped: the class Tally cannot be constructed with no "
                                                          "arguments (TypeError)")
    # the poisoned atom's write outside its TMPDIR failed inside the box (nothing was written) …
    assert growth["pkg.calc.leak"]["measured"] is False
    # (the box does not show the folder, or shows it read-only)
    assert growth["pkg.calc.leak"]["detail"] in (f"not measured: raised {name} at size 100"
                                                 for name in ("FileNotFoundError", "PermissionError", "OSError"))
    assert not leak_path.exists()
    leak_path.write_text("the same write unconfined succeeds")  # the twin: the path itself is writable
    # … and the atom writing beside its module and into its working directory wrote into the scratch copy only
    assert growth["pkg.calc.stamp"]["measured"] is True
    worktree = harness.tasks.show(task_id).task.worktree
    assert not (worktree / "pkg" / "stamped-by-timing.txt").exists()
    assert not (worktree / "cwd-stamped-by-timing.txt").exists()
    assert not (harness.driver.task_temp_directory(task_id) / "codeflux-scratch").exists()
    # the evidence: method, settings, what it does not prove; advisory in the stage's own sentence
    assert evidence["growth"]["ran"] is True and evidence["growth"]["does_not_prove"] == DOES_NOT_PROVE
    assert evidence["growth"]["settings"]["base_size"]["value"] == 100
    assert evidence["growth"]["settings"]["budget_ms"]["value"] == 1000
    assert "advisory growth (wall-clock, three sizes): pkg.calc.total ~ size^" in gate
    assert f"pkg.calc.equal_pairs ~ size^{quadratic['exponent']}" in gate
    # stage 12 ran in the same real run (budget 1 s, a stored setting): the atoms taking text were fuzzed, and the
    # poisoned one's refused write is an exception its contract does not document
    fuzz = next(row for row in harness.tasks.ledger(task_id, 1) if row.verdict.stage is StageName.ATOM_FUZZ)
    assert fuzz.verdict.outcome is StageOutcome.FAILED, fuzz.verdict
    assert [str(finding).split(" raised ")[0] for finding in fuzz.evidence["findings"]] == [  # type: ignore[attr-defined]
        "pkg.calc.leak"]
    assert fuzz.evidence["settings"]["budget_s"]["value"] == 1  # type: ignore[index]


def test_without_the_test_commands_allowance_growth_is_not_measured_and_radon_still_decides(harness: Harness,
                                                                                            tmp_path: Path) -> None:
    task_id = run_with(harness, atoms_source(tmp_path / "unused.txt"),
                       plan=a_plan_whose_check_is_not_the_test_command(), policy=HeadlessPolicy())

    gate, evidence, growth = complexity_of(harness, task_id)
    assert evidence["growth"]["ran"] is False
    assert growth["pkg.calc.total"]["measured"] is False
    assert growth["pkg.calc.total"]["detail"].startswith("not measured: the timing run did not run: the check it "
                                                         "follows")
    assert "was not allowed" in growth["pkg.calc.total"]["detail"]
    assert growth["pkg.calc.mix"]["detail"] == NO_SIZED_INPUT
    assert "growth not measured (advisory)" in gate
