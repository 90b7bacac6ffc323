"""Stage 11 atom-verification (issue 17, sends back): the tests that execute the atoms run N times in a random
order, each order from a recorded seed (codeflux's own seeded-order pytest plugin), in a real worker, confined, with
coverage.py from codeflux's overlay (installed from the wheelhouse). The reproduction of the issue's "Why": the stage
was ``not-implemented`` — tests that pass only in file order (shared module state) reached review green.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.atom_examples import evaluate_atom_example_tests
from codeflux.pipeline.atom_verification import evaluate_atom_verification, report_name
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.tool_overlay import install_argv
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import (
    SOURCE,
    allow,
    allow_overlay_install,
    assembled_facts,
    no_install_driver,
    running_ports,
)
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import Harness, calc_tests, done, make_harness, scripted_gateway, write_file

ADD = "def add(a, b):\n    return sum((a, b))\n\n\ndef sub(a, b):\n    return a - b\n"
SHARED_STATE = (
    "from pkg.calc import add\n\nSEEN = []\n\n\n"
    "def test_first():\n    SEEN.append(add(1, 2))\n\n\n"
    "def test_second():\n    assert add(0, 0) == 0\n    assert SEEN == [3], SEEN\n"
)
FIRST, SECOND = "tests/test_state.py::test_first", "tests/test_state.py::test_second"


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)



def seeds_for(tests: list[str], *, second_first: bool) -> int:
    """A seed whose order (the plugin sorts by node id, then shuffles with ``random.Random(seed)``) puts
    ``test_second`` before ``test_first`` (or after it)."""
    for seed in range(1, 10_000):
        order = sorted(tests)
        random.Random(seed).shuffle(order)
        if (order.index(SECOND) < order.index(FIRST)) is second_first:
            return seed
    raise AssertionError("no such seed")


def runs_of(result: StageResult) -> list[dict[str, object]]:
    runs = result.evidence["runs"]
    assert isinstance(runs, list)
    return runs


def test_tests_that_pass_in_every_seeded_order_satisfy_it_and_every_seed_is_recorded(harness: Harness) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_calc.py").write_text(calc_tests(-3))
    facts = assembled_facts(ports)

    examples = evaluate_atom_example_tests(facts)
    result = evaluate_atom_verification(facts)

    assert examples.verdict.outcome is StageOutcome.SATISFIED
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    runs = runs_of(result)
    assert len(runs) == 3 and [run["seed"] for run in runs] == result.evidence["seeds"]
    assert all(run["outcome"] == "passed" for run in runs)
    # one confined command ran the three orders (a child forked per seed); each seed's own argv reproduces it
    assert len({run["request_id"] for run in runs}) == 1
    assert all(run["argv"][4] == str(run["seed"]) for run in runs)  # type: ignore[index]
    # this repository's environment has Hypothesis itself: its pytest plugin loads (and imports it), and the moment
    # it is imported it is seeded
    assert all(run["hypothesis_available"] is True and run["hypothesis_seeded"] is True for run in runs)
    assert all(sorted(run["order"]) == ["tests/test_calc.py::test_add",  # type: ignore[call-overload]
                                        "tests/test_calc.py::test_add_negative"] for run in runs)
    assert result.evidence["runs_setting"] == {"key": "pipeline.atom-verification.runs", "value": 3,
                                               "source": "default, this run reads no settings", "default": 3}
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("2 atom test(s) run 3 time(s) in random order, seeds ") and "every run passed" in said
    atom = result.evidence["atoms"][0]  # type: ignore[index]
    assert atom["qualified_name"] == "pkg.calc.add" and len(atom["seeds"]) == 3
    # the coverage map was measured once for both stages (one coverage run in the attempt)
    assert facts.shared["atom-coverage"] is not None
    assert result.evidence["tools"] == examples.evidence["tools"]
    # nothing was written in the worktree (no .hypothesis, no cache), and the reports were removed
    assert not (worktree / ".hypothesis").exists() and not (worktree / ".pytest_cache").exists()
    assert not list(harness.driver.task_temp_directory(ports.facts.task_id).glob("codeflux-checks/*"))


def test_tests_sharing_module_state_fail_under_a_seed_that_the_printed_command_reproduces(harness: Harness) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_state.py").write_text(SHARED_STATE)
    identity = diff_against_base(ports.facts.worktree).identity
    covering = ["tests/test_calc.py::test_add", FIRST, SECOND]
    bad, good = seeds_for(covering, second_first=True), seeds_for(covering, second_first=False)
    # the good order runs first, in the same command: had its module state (SEEN == [3]) reached the next order,
    # the bad order would pass — each order is a child forked before anything of the repository was imported

    result = evaluate_atom_verification(assembled_facts(ports), seeds=[good, bad])

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    passed, failed = runs_of(result)
    assert passed["outcome"] == "passed" and failed["outcome"] == "failed"
    assert failed["failing"] == [SECOND] and "assert SEEN == [3]" in str(failed["messages"])
    order = failed["order"]
    assert isinstance(order, list) and order.index(SECOND) < order.index(FIRST)
    said = result.verdict.gate_evaluation or ""
    assert f"seed {bad}: {SECOND} failed; reproduce with: " in said
    assert f"{SECOND} is flaky under seed {bad} (passes under seed {good})" in said
    command = str(failed["command"])
    assert command.startswith(f"{harness.venv_python} -c \"$CODEFLUX_SEEDED_ORDER_SCRIPT\" ")
    assert command.endswith(f" {bad} -- -p no:cacheprovider -p no:randomly {' '.join(sorted(covering))}")
    # the printed argv replays the failure exactly: the same order, the same failing test
    argv = tuple(str(part) for part in failed["argv"])  # type: ignore[attr-defined]
    allow(harness.driver, ports.facts.task_id, pytest_argv(harness.venv_python), attempt=2)  # a fresh request
    replay = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=2,
                                              covered_by=pytest_argv(harness.venv_python))
    assert replay.ran and replay.exit_code == 1 and replay.request_id != failed["request_id"], replay
    report = harness.driver.task_temp_directory(ports.facts.task_id) / report_name(bad)
    replayed = json.loads(report.read_text())
    assert replay.exit_code == 1 and replayed["order"] == order and replayed["outcomes"][SECOND] == "failed"
    assert diff_against_base(ports.facts.worktree).identity == identity == result.evidence["diff_identity"]


HYPOTHESIS_TESTS = (
    "import os\n\nfrom hypothesis import core, given, strategies as st\n\nfrom pkg.calc import add\n\n\n"
    "@given(st.integers(), st.integers())\n"
    "def test_add_commutes(a, b):\n    assert add(a, b) == add(b, a)\n\n\n"
    "def test_records_hypothesis_s_seed():\n"
    "    assert add(1, 2) == 3\n"
    "    with open(os.path.join(os.environ['TMPDIR'], 'seen-seed.txt'), 'w') as handle:\n"
    "        handle.write(repr(core.global_force_seed))\n"
)
RECORDS = "tests/test_props.py::test_records_hypothesis_s_seed"


def test_tests_that_import_hypothesis_get_the_run_s_seed_and_its_home_in_tmpdir(harness: Harness) -> None:
    """Hypothesis is seeded when the tests import it (the script seeds it the moment it is imported, not by
    importing it for every run): the forced seed a test sees is the run's, and its home is never the worktree."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "tests" / "test_props.py").write_text(HYPOTHESIS_TESTS)

    result = evaluate_atom_verification(assembled_facts(ports), seeds=[4242])

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    (run,) = runs_of(result)
    assert run["hypothesis_seeded"] is True and run["outcome"] == "passed", run
    assert RECORDS in run["order"]  # type: ignore[operator]
    seen = harness.driver.task_temp_directory(ports.facts.task_id) / "seen-seed.txt"
    assert seen.read_text() == "4242"  # written by the last run of the test: stage 11's, under seed 4242
    assert not (worktree / ".hypothesis").exists()


def test_a_repository_that_turns_warnings_into_errors_is_not_failed_by_the_seeding(harness: Harness) -> None:
    """Before, the script imported Hypothesis before pytest started whenever it was importable: pytest then warns
    that Hypothesis (a plugin's distribution) was imported before it could rewrite it, and a repository whose
    pytest configuration turns warnings into errors (toolz's does) saw every seeded order fail — a false send-back."""
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "pkg" / "calc.py").write_text(ADD)
    (worktree / "pyproject.toml").write_text('[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n')

    result = evaluate_atom_verification(assembled_facts(ports), seeds=[7])

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert [run["outcome"] for run in runs_of(result)] == ["passed"]


def test_no_atom_or_no_test_executing_one_is_skipped(harness: Harness) -> None:
    ports = running_ports(harness)
    allow_overlay_install(harness, ports.facts.task_id)
    worktree = ports.facts.worktree.path
    (worktree / "README.md").write_text("# calc\n\nWords only.\n")
    assert evaluate_atom_verification(assembled_facts(ports)).verdict.outcome is StageOutcome.SKIPPED

    (worktree / "pkg" / "calc.py").write_text(BASE_FILES["pkg/calc.py"] + "\n\ndef mul(a, b):\n    return a * b\n")
    result = evaluate_atom_verification(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.SKIPPED
    assert "no passing test executes the body of any atom" in (result.verdict.reason or "")


def test_without_coverage_and_no_way_to_install_it_the_stage_is_blocked_naming_the_tool(
        db: Database, tmp_path: Path) -> None:
    with no_install_driver(db, tmp_path) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        (ports.facts.worktree.path / "pkg" / "calc.py").write_text(ADD)

        result = evaluate_atom_verification(assembled_facts(ports))

    assert result.verdict.outcome is StageOutcome.BLOCKED
    reason = result.verdict.reason or ""
    assert reason.startswith("coverage is not in the repository's environment") and "CODEFLUX_TOOL_WHEELHOUSE" in reason


def test_the_catalog_says_stage_11_is_performed_and_what_it_measures() -> None:
    stage = stage_named(StageName.ATOM_VERIFICATION)
    assert stage.performable and stage.sends_back
    assert "recorded seed" in stage.gate and "Not checked" in stage.gate


ORDER_BOUND = "from pkg.calc import add\n\nCOUNT = [0]\n\n\n" + "".join(
    f"def test_step_{i}():\n    assert add(COUNT[0], 1) == {i + 1}\n    COUNT[0] += 1\n\n\n" for i in range(8))
INDEPENDENT = "from pkg.calc import add\n\n\n" + "".join(
    f"def test_step_{i}():\n    assert add({i}, 1) == {i + 1}\n\n\n" for i in range(8))


def test_a_run_whose_atom_tests_pass_only_in_file_order_is_sent_back_and_the_next_attempt_fixes_it(
        harness: Harness) -> None:
    """The whole run: eight tests that count through module state pass in file order (stage 28 holds) but fail in
    any shuffled order (the chance that three random orders all keep them in file order is 1 in 8!³); stage 11
    fails and sends the work back naming the seed and the failing tests; the attempt that makes them independent
    reaches review clean."""
    task_id = harness.ready_task()
    first = [write_file("pkg/calc.py", ADD, "w1", replacing=BASE_FILES["pkg/calc.py"]),
             write_file("tests/test_calc.py", calc_tests(-3), "w2", replacing=BASE_FILES["tests/test_calc.py"]),
             write_file("tests/test_steps.py", ORDER_BOUND, "w3"), done()]
    second = [write_file("tests/test_steps.py", INDEPENDENT, "a2w3", replacing=ORDER_BOUND), done()]
    gateway, adapter = scripted_gateway(harness.db, [*first, *second])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python)),
                                      PreapprovedOperation.command(install_argv(harness.venv_python, SOURCE))])

    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=policy)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean and outcome.attempt == 2, outcome.reason
    rows = {row.verdict.stage: row for row in harness.tasks.ledger(task_id, 1)}
    assert rows[StageName.INTEGRATION_TESTS].verdict.outcome is StageOutcome.SATISFIED  # file order passes
    verification = rows[StageName.ATOM_VERIFICATION]
    assert verification.verdict.outcome is StageOutcome.FAILED
    assert [send.gate for send in harness.tasks.send_backs(task_id)] == ["atom-verification"]
    failing_seed = next(run for run in verification.evidence["runs"]  # type: ignore[attr-defined]
                        if run["outcome"] == "failed")
    prompt = "\n".join(str(getattr(part, "text", "")) for message in adapter.requests[4].messages
                       for part in message.parts)
    assert "sent back by atom-verification" in prompt and f"seed {failing_seed['seed']}" in prompt
    assert "tests/test_steps.py::test_step_" in prompt and "make every test independent" in prompt
    second_rows = {row.verdict.stage: row for row in harness.tasks.ledger(task_id, 2)}
    assert second_rows[StageName.ATOM_VERIFICATION].verdict.outcome is StageOutcome.SATISFIED
