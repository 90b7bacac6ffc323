"""Phase F (issue 18): 30 global-invariants, 32 repetition, 33 platform-matrix and 34 non-functional on one real
task — a real repository with its own environment, a real worker, every run confined — built once for the module;
each test rewrites the worktree and evaluates the stage on it. The reproduction of the issue's "Why": the four
stages were ``not-implemented`` — an undeclared ``subprocess`` call, an order-dependent test, a ``match`` statement
in a package claiming Python 3.8 and a change that doubles the suite's time all reached review unmentioned.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.contracts import AtomEffect, DeclaredAtom
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.domain.plans import Plan
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.assembly import evaluate_assembly
from codeflux.pipeline.global_invariants import evaluate_global_invariants
from codeflux.pipeline.platform_matrix import evaluate_platform_matrix
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.repetition import evaluate_non_functional, evaluate_repetition
from codeflux.pipeline.specification import StageResult
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.pipeline_tasks import SOURCE, allow, running_ports
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import Harness, a_plan_with_two_steps, make_harness, repository_environment

pytestmark = pytest.mark.slow

# every seed a test gives is used once in the module: the same argv in the same attempt is the same request, and the
# worker answers it with the run already recorded
HELD_28 = StageVerdict(stage=StageName.INTEGRATION_TESTS, outcome=StageOutcome.SATISFIED,
                       gate_evaluation="pytest ran: every test passed")
FAILED_28 = StageVerdict(stage=StageName.INTEGRATION_TESTS, outcome=StageOutcome.FAILED,
                         gate_evaluation="pytest ran: 1 failed")


def declaring_plan() -> Plan:
    """The harness's plan, its first step declaring ``add`` pure, ``run_tool`` with the effect ``process`` and
    ``load`` with ``deserialisation``."""
    plan = a_plan_with_two_steps()
    first = replace(plan.steps[0], atoms=(
        DeclaredAtom(name="add", signature="def add(a, b)"),
        DeclaredAtom(name="run_tool", signature="def run_tool(name)", effects=(AtomEffect.PROCESS,)),
        DeclaredAtom(name="load", signature="def load(blob)", effects=(AtomEffect.DESERIALISATION,))))
    return replace(plan, steps=(first, *plan.steps[1:]))


@dataclass(frozen=True, slots=True)
class Task:
    harness: Harness
    ports: PipelinePorts

    @property
    def worktree(self) -> Path:
        return self.ports.facts.worktree.path

    def reset(self, files: dict[str, str]) -> None:
        """The worktree back at the base revision, then ``files`` written over it."""
        subprocess.run(["git", "checkout", "--", "."], cwd=self.worktree, check=True, capture_output=True)
        subprocess.run(["git", "clean", "-fdq"], cwd=self.worktree, check=True, capture_output=True)
        for path, text in files.items():
            (self.worktree / path).parent.mkdir(parents=True, exist_ok=True)
            (self.worktree / path).write_text(text)

    def assembled(self) -> StageResult:
        result = evaluate_assembly(self.ports, attempt=1)
        assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
        return result


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Task]:
    root = tmp_path_factory.mktemp("phase-f")
    db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
    try:
        with ToolDriver(db, state_dir=root / "state", tool_source=SOURCE, base_environment={}) as driver:
            harness = make_harness(db, root, driver)
            yield Task(harness=harness, ports=running_ports(harness, plan=declaring_plan()))
    finally:
        db.close()


# ─── 30 global-invariants ──────────────────────────────────────────────────────────────────────────

DECLARED = (
    "import subprocess\n\n\ndef add(a, b):\n    return a + b\n\n\n"
    "def sub(a, b):\n    return a - b\n\n\n"
    "def run_tool(name):\n    return subprocess.run([name, '--version'], check=False).returncode\n"
)
UNDECLARED = (
    "import subprocess\n\n\ndef add(a, b):\n    subprocess.run('echo ' + str(a), shell=True)\n    return a + b\n\n\n"
    "def sub(a, b):\n    return a - b\n"
)


def test_30_capabilities_within_the_declared_effects_satisfy_it_and_bandit_s_lesser_findings_are_listed(
        task: Task) -> None:
    task.reset({"pkg/calc.py": DECLARED})

    result = evaluate_global_invariants(task.ports, task.assembled())

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    uses = result.evidence["capabilities"]
    assert isinstance(uses, list)
    assert {(u["capability"], u["what"], u["atom"], u["declared"]) for u in uses} == {
        ("process", "import subprocess", None, True),  # module level: the plan declares process for run_tool
        ("process", "subprocess.run", "pkg.calc.run_tool", True)}
    bandit = result.evidence["bandit"]
    assert isinstance(bandit, dict) and bandit["high_on_changed_lines"] == [] and bandit["version"] != "unknown"
    assert {item["test_id"] for item in bandit["listed"]} >= {"B404", "B603"}
    assert "no high-severity finding on a changed line" in (result.verdict.gate_evaluation or "")


def test_30_an_undeclared_subprocess_call_and_a_high_bandit_finding_fail_it_by_name(task: Task) -> None:
    task.reset({"pkg/calc.py": UNDECLARED})

    result = evaluate_global_invariants(task.ports, task.assembled())

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    findings = result.evidence["findings"]
    assert isinstance(findings, list)
    assert "undeclared process via subprocess.run at pkg/calc.py:5 (pkg.calc.add)" in findings
    assert any(f.startswith("bandit B602 (high severity) at pkg/calc.py:5: subprocess call with shell=True")
               for f in findings), findings
    said = result.verdict.gate_evaluation or ""
    assert "undeclared process via subprocess.run at pkg/calc.py:5" in said and "bandit B602" in said


def test_30_undeclared_eval_and_pickle_fail_a_declared_one_holds_and_a_package_file_read_is_no_capability(
        task: Task) -> None:
    source = ("import pickle\nfrom pathlib import Path\n\nDATA = Path(__file__).parent / 'data.txt'\n\n\n"
              "def add(a, b):\n    return eval(str(a)) + b\n\n\n"
              "def sub(a, b):\n    return pickle.loads(a) - b\n\n\n"
              "def run_tool(name):\n    return DATA.read_text()\n\n\n"
              "def load(blob):\n    return pickle.loads(blob)\n")
    task.reset({"pkg/calc.py": source})

    result = evaluate_global_invariants(task.ports, task.assembled())

    assert result.verdict.outcome is StageOutcome.FAILED
    findings = result.evidence["findings"]
    assert isinstance(findings, list)
    assert "undeclared dynamic-code via eval at pkg/calc.py:8 (pkg.calc.add)" in findings
    assert "undeclared deserialisation via pickle.loads at pkg/calc.py:12 (pkg.calc.sub)" in findings
    uses = result.evidence["capabilities"]
    assert isinstance(uses, list)
    # the plan declares deserialisation for load(): the same call there is listed, declared, and no finding
    loaded = next(u for u in uses if u["atom"] == "pkg.calc.load")
    assert (loaded["capability"], loaded["what"], loaded["declared"]) == ("deserialisation", "pickle.loads", True)
    assert not any("pkg.calc.load" in f for f in findings)
    read = next(u for u in uses if u["what"] == ".read_text()")
    assert read["inside_package"] is True and not any("read_text" in f for f in findings)


def test_30_no_changed_code_is_skipped_and_an_interpreter_without_bandit_blocks_it_naming_the_fix(
        task: Task) -> None:
    task.reset({"README.md": "# calc\n\nWords only.\n"})
    assert evaluate_global_invariants(task.ports, task.assembled()).verdict.outcome is StageOutcome.SKIPPED

    task.reset({"pkg/calc.py": DECLARED})
    result = evaluate_global_invariants(task.ports, task.assembled(), bandit_python=task.harness.venv_python)

    assert result.verdict.outcome is StageOutcome.BLOCKED
    reason = result.verdict.reason or ""
    assert reason.startswith("bandit could not run: bandit is not installed for codeflux's interpreter")
    assert "cmd/codeflux-dev setup" in reason


# ─── 32 repetition and 34 non-functional ──────────────────────────────────────────────────────────

SHARED_STATE = (
    "from pkg.calc import add\n\nSEEN = []\n\n\n"
    "def test_first():\n    SEEN.append(add(1, 2))\n\n\n"
    "def test_second():\n    assert SEEN == [3], SEEN\n"
)
FIRST, SECOND = "tests/test_state.py::test_first", "tests/test_state.py::test_second"
SUITE = ["tests/test_calc.py::test_add", FIRST, SECOND]  # the base test file has one test


def seed_for(*, second_first: bool) -> int:
    """A seed whose order (sorted by node id, shuffled with ``random.Random(seed)``) puts test_second first."""
    for seed in range(1, 10_000):
        order = sorted(SUITE)
        random.Random(seed).shuffle(order)
        if (order.index(SECOND) < order.index(FIRST)) is second_first:
            return seed
    raise AssertionError("no such seed")


def test_32_an_order_dependent_test_fails_it_with_the_seed_and_an_argv_that_reproduces_it(task: Task) -> None:
    task.reset({"tests/test_state.py": SHARED_STATE})
    identity = diff_against_base(task.ports.facts.worktree).identity
    good, bad = seed_for(second_first=False), seed_for(second_first=True)

    repetition = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, seeds=[good, bad], with_base=False)

    result = repetition.result
    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    assert result.evidence["flaky"] == [SECOND]
    said = result.verdict.gate_evaluation or ""
    assert f"{SECOND} is order-dependent or flaky: fails under seed {bad}, passes under seed {good}; passes in file " \
           "order (stage 28); reproduce with: " in said
    failed = next(run for run in repetition.change if run.seed == bad)
    assert failed.failing == (SECOND,) and failed.order.index(SECOND) < failed.order.index(FIRST)
    assert failed.command.startswith(f"{task.harness.venv_python} -c \"$CODEFLUX_SEEDED_ORDER_SCRIPT\" - {bad} -- ")
    # the recorded argv replays the failure in a fresh run (its own request, the next attempt)
    allow(task.harness.driver, task.ports.facts.task_id, pytest_argv(task.harness.venv_python), attempt=2)
    replay = task.ports.commands.run_check_command(task.ports.facts.task_id, failed.argv, attempt=2,
                                                   covered_by=pytest_argv(task.harness.venv_python))
    assert replay.ran and replay.exit_code == 1 and "assert SEEN == [3]" in replay.stdout, replay
    assert diff_against_base(task.ports.facts.worktree).identity == identity  # nothing written in the worktree
    temp = task.harness.driver.task_temp_directory(task.ports.facts.task_id)
    assert not (task.worktree / ".pytest_cache").exists() and not (temp / "codeflux-scratch" / "base").exists()


def test_32_a_stable_suite_satisfies_it_and_34_without_a_base_run_is_blocked_saying_so(task: Task) -> None:
    task.reset({"pkg/calc.py": BASE_FILES["pkg/calc.py"] + "\n\ndef mul(a, b):\n    return a * b\n"})

    repetition = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, seeds=[11, 12], with_base=False)

    result = repetition.result
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert result.evidence["seeds"] == [11, 12] and result.evidence["flaky"] == []
    assert (result.verdict.gate_evaluation or "").endswith("the same tests passed in every run")
    assert result.evidence["runs_setting"] == {"key": "pipeline.repetition.runs", "value": 3,
                                               "source": "default, this run reads no settings", "default": 3}
    timing = evaluate_non_functional(task.ports.settings, repetition)
    assert timing.verdict.outcome is StageOutcome.BLOCKED
    assert timing.verdict.reason == "the suite was not timed on the base revision: the base revision was not run"


def test_32_and_34_with_no_test_are_skipped_and_32_is_blocked_when_28_did_not_hold(task: Task) -> None:
    task.reset({})
    (task.worktree / "tests" / "test_calc.py").unlink()

    repetition = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, seeds=[3], with_base=False)

    assert repetition.result.verdict.outcome is StageOutcome.SKIPPED, repetition.result.verdict
    assert evaluate_non_functional(task.ports.settings, repetition).verdict.outcome is StageOutcome.SKIPPED
    blocked = evaluate_repetition(task.ports, attempt=1, integration=FAILED_28)
    assert blocked.result.verdict.outcome is StageOutcome.BLOCKED
    assert (blocked.result.verdict.reason or "").startswith("stage 28 integration-tests did not hold (failed)")
    assert evaluate_non_functional(task.ports.settings, blocked).verdict.outcome is StageOutcome.BLOCKED


def test_32_a_test_28_saw_failing_on_the_base_too_is_28_s_not_order_dependence(task: Task) -> None:
    broken = "def test_broken():\n    assert False, 'broken before this change'\n"
    task.reset({"tests/test_broken.py": broken})
    broken_id = "tests.test_broken::test_broken"  # as junit names it
    integration = {"failing": [broken_id], "failing_on_base_too": [broken_id]}

    repetition = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, integration_evidence=integration,
                                     seeds=[9], with_base=False)

    result = repetition.result
    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert result.evidence["failing_in_file_order_too"] == ["tests/test_broken.py::test_broken"]
    assert "1 test(s) failing in file order too" in (result.verdict.gate_evaluation or "")
    # without 28's list the same run says it passed in file order: order-dependence, named with its seed
    unknown = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, seeds=[10], with_base=False)
    assert unknown.result.verdict.outcome is StageOutcome.FAILED
    assert unknown.result.evidence["flaky"] == ["tests/test_broken.py::test_broken"]


SLOW_TEST = "import time\n\n\ndef test_waits():\n    time.sleep(2.0)\n"  # flagged while the base takes < 4 s


def test_34_a_change_that_doubles_the_suite_time_is_flagged_with_both_times_from_interleaved_runs(
        task: Task) -> None:
    task.reset({"tests/test_slow.py": SLOW_TEST})

    repetition = evaluate_repetition(task.ports, attempt=1, integration=HELD_28, seeds=[5])
    timing = evaluate_non_functional(task.ports.settings, repetition)

    assert repetition.result.verdict.outcome is StageOutcome.SATISFIED, repetition.result.verdict
    assert [run.side for run in (*repetition.change, *repetition.base)] == ["change", "base"]
    assert timing.verdict.outcome is StageOutcome.SATISFIED  # advisory: flagged, never failed
    evidence = timing.evidence
    assert evidence["slower"] is True, evidence
    change, base = evidence["change_median_s"], evidence["base_median_s"]
    assert isinstance(change, float) and isinstance(base, float) and change > base + 1.0
    said = timing.verdict.gate_evaluation or ""
    assert said.startswith(f"advisory, flagged: the suite takes {change:.2f} s with the change against {base:.2f} s "
                           "on the base revision (limit ")
    base_run = repetition.base[0]
    assert base_run.argv == repetition.change[0].argv and base_run.outcomes  # the same seeded argv, on the base copy
    assert "tests/test_slow.py::test_waits" not in base_run.outcomes


# ─── 33 platform-matrix ───────────────────────────────────────────────────────────────────────────

MATCHING = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def sub(a, b):\n    match (a, b):\n        case (0, _):\n            return -b\n        case _:\n"
    "            return a - b\n"
)


def pyproject(requires: str) -> str:
    return (f'[project]\nname = "calc"\nversion = "0"\nrequires-python = "{requires}"\n'
            'classifiers = ["Programming Language :: Python :: 3.10"]\n')


def integration_of(task: Task) -> dict[str, object]:
    return {"interpreter": task.harness.venv_python, "python_version": "3.11.2"}


def test_33_a_match_statement_in_a_package_claiming_3_8_names_the_syntax_error_for_3_8(task: Task) -> None:
    task.reset({"pkg/calc.py": MATCHING, "pyproject.toml": pyproject(">=3.8")})

    result = evaluate_platform_matrix(task.ports, attempt=1, assembly=task.assembled(),
                                      integration_evidence=integration_of(task))

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    findings = result.evidence["findings"]
    assert isinstance(findings, list)
    assert "Python 3.8 (declared): pkg/calc.py:10: Pattern matching is only supported in Python 3.10 and greater" \
        in findings
    assert "Python 3.9 (declared): pkg/calc.py:10: Pattern matching is only supported in Python 3.10 and greater" \
        in findings
    assert [item["version"] for item in result.evidence["syntax_checked"]] == ["3.8", "3.9", "3.10"]  # type: ignore[union-attr]
    assert [item["version"] for item in result.evidence["unchecked"]] == ["3.12", "3.13", "3.14"]  # type: ignore[union-attr]
    assert "API use" in str(result.evidence["not_proved"])


def test_33_another_environment_runs_the_suite_and_versions_not_run_are_claimed_not_run(task: Task) -> None:
    other = task.harness.repo / ".venv-3.11"
    same = task.harness.repo / ".venv-main"  # a link to the test command's own environment: not run twice
    shutil.copytree(repository_environment(), other, symlinks=True)
    same.symlink_to(repository_environment(), target_is_directory=True)
    try:
        task.reset({"pkg/calc.py": MATCHING, "pyproject.toml": pyproject(">=3.10")})

        result = evaluate_platform_matrix(task.ports, attempt=1, assembly=task.assembled(),
                                          integration_evidence=integration_of(task))
    finally:
        shutil.rmtree(other)
        same.unlink()

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert [env["folder"] for env in result.evidence["environments"]] == [".venv-3.11 in the repository"]  # type: ignore[union-attr]
    main, ran = result.evidence["run"]  # type: ignore[misc]
    assert main == {"version": "3.11", "by": "stage 28 integration-tests"}
    assert ran["folder"] == ".venv-3.11 in the repository" and ran["outcome"] == "passed" and ran["tests"] == 1, ran
    assert [item["version"] for item in result.evidence["syntax_checked"]] == ["3.10"]  # type: ignore[union-attr]
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("run: 3.11; syntax-checked (claimed, not run): 3.10; unchecked: 3.12, 3.13, 3.14")


def test_33_no_declared_version_is_skipped_and_an_unreadable_requires_python_blocks_it(task: Task) -> None:
    task.reset({"pkg/calc.py": MATCHING})
    skipped = evaluate_platform_matrix(task.ports, attempt=1, assembly=task.assembled(),
                                       integration_evidence=integration_of(task))
    assert skipped.verdict.outcome is StageOutcome.SKIPPED, skipped.verdict

    task.reset({"pkg/calc.py": MATCHING, "pyproject.toml": pyproject("at least 3.8")})
    blocked = evaluate_platform_matrix(task.ports, attempt=1, assembly=task.assembled(),
                                       integration_evidence=integration_of(task))
    assert blocked.verdict.outcome is StageOutcome.BLOCKED
    assert "requires-python 'at least 3.8' could not be read" in (blocked.verdict.reason or "")
