"""Stage 32 repetition and stage 34 non-functional: the whole suite N times in seeded random orders, on the change
and — interleaved, in the same run — on the base revision, timed.

**The runs.** The repository's test command (:func:`~codeflux.pipeline.program.detect_test_command`, as stage 28)
runs the whole suite :data:`~codeflux.pipeline.thresholds.REPETITION_RUNS` times (default 3, a setting), each time
in the order of a fresh recorded seed, through stage 11's seeded-order script
(:data:`~codeflux.pipeline.atom_verification.SEEDED_ORDER_SCRIPT`, :func:`~codeflux.pipeline.atom_verification.
seeded_argv` with no test named: pytest collects what its configuration says, as in stage 28; pytest-randomly, if
installed, is switched off so the order is the seed's alone) — in the task's worker, confined, following the test
command's decision (``covered_by``). After each run on the change, the same argv runs on the base revision: the
base tree with its own test files written into ``$TMPDIR/codeflux-scratch/base``
(:func:`~codeflux.gitwork.base_scratch.write_base_scratch`, as :mod:`~codeflux.pipeline.base_revision` makes it;
pytest's root pinned there), so both sides are measured in the same run, alternately, under the same load. Each run
is timed by the coordinator (wall time of the whole confined run: interpreter start, collection, the tests) and
pytest's own "in N s" is recorded beside it.

**32 repetition** compares the pass sets of the change's runs: a test that fails under one seed and passes under
another, or fails under a seed while it passed in file order (stage 28 held; a test 28 saw failing — it held because
each such test fails on the base revision too — is 28's and listed apart), is order-dependent or flaky — the
gate fails naming the seed and the exact argv that reproduces it (the same seed gives the same order). Gate: every
run ran and every test passed in every run. No test collected in any run → ``skipped``; no test command, a run
refused, or an invalid runs setting → ``blocked`` (so is a stage 28 that did not hold; one that was skipped —
nothing collected — skips this stage without a run). Not claimed: that other orders or seeds would pass (N orders out
of n! are tried), or that the tests assert anything.

**34 non-functional** (advisory: ``satisfied`` with findings) reuses those runs: the median wall time of the suite
with the change against the median on the base, limit ``max(ratio × base, base + slack)`` (settings
:data:`~codeflux.pipeline.thresholds.NON_FUNCTIONAL_RATIO_PCT`, default 150 %, and
:data:`~codeflux.pipeline.thresholds.NON_FUNCTIONAL_SLACK_MS`, default 500 ms); a slower change is flagged with both
times. No base run measured → ``blocked`` with why; no test → ``skipped``. Not claimed: memory, latency of single
operations, or any time on another machine.
"""

from __future__ import annotations

import re
import secrets
import shlex
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.atom_verification import SEEDED_ORDER_SCRIPT, report_name, seeded_argv
from codeflux.pipeline.base_revision import BASE_DIRECTORY, BASE_WORKING_DIRECTORY, pin_pytest_root
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.ports import PipelinePorts, SettingsPort
from codeflux.pipeline.program import detect_test_command, junit_case_of
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import (
    NON_FUNCTIONAL_RATIO_PCT,
    NON_FUNCTIONAL_SLACK_MS,
    REPETITION_RUNS,
    threshold_of,
)

__all__ = ["Repetition", "SuiteRun", "evaluate_non_functional", "evaluate_repetition", "time_limit"]

_REPETITION: Final = StageName.REPETITION
_NON_FUNCTIONAL: Final = StageName.NON_FUNCTIONAL
_MAX_REPORT_BYTES: Final = 16 * 1024 * 1024
_MESSAGE_CHARS: Final = 800
_MAX_LISTED: Final = 500
_PYTEST_TIME: Final = re.compile(r" in (?P<seconds>\d+(?:\.\d+)?)s\b")
_HELD: Final = frozenset({StageOutcome.SATISFIED, StageOutcome.SKIPPED})


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteRun:
    """One seeded run of the whole suite on the change or the base: what ran, how long it took, what it gave."""

    side: str
    seed: int
    argv: tuple[str, ...]
    request_id: str | None
    state: str
    exit_code: int | None
    wall_seconds: float
    pytest_seconds: float | None
    outcomes: Mapping[str, str] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    messages: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(sorted(test for test, outcome in self.outcomes.items() if outcome == "failed"))

    @property
    def collected_nothing(self) -> bool:
        return self.problem is None and not self.outcomes and self.exit_code == 5

    @property
    def command(self) -> str:
        """The argv as a shell command, the fixed script named rather than inlined (``argv`` keeps it whole)."""
        return shlex.join(self.argv).replace(shlex.quote(SEEDED_ORDER_SCRIPT), "\"$CODEFLUX_SEEDED_ORDER_SCRIPT\"")

    def to_evidence(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "side": self.side, "seed": self.seed, "argv": list(self.argv), "command": self.command,
            "request_id": self.request_id, "state": self.state, "exit_code": self.exit_code,
            "wall_seconds": round(self.wall_seconds, 3), "pytest_seconds": self.pytest_seconds,
            "failing": list(self.failing), "tests": len(self.outcomes),
            "passed": sum(1 for outcome in self.outcomes.values() if outcome == "passed")}
        if self.side == "change":
            shown.update(order=list(self.order[:_MAX_LISTED]),
                         messages={k: v for k, v in self.messages.items() if k in self.failing})
        if self.problem is not None:
            shown["problem"] = self.problem
        return shown


@dataclass(frozen=True, slots=True, kw_only=True)
class Repetition:
    """Stage 32's result and the runs stage 34 reads (``base_detail``: why the base was not measured)."""

    result: StageResult
    change: tuple[SuiteRun, ...] = ()
    base: tuple[SuiteRun, ...] = ()
    base_detail: str | None = None


def _report(temp: Path, seed: int) -> dict[str, object] | None:
    path = temp / PurePosixPath(report_name(seed))
    try:
        return read_box_json(path, max_bytes=_MAX_REPORT_BYTES)
    finally:
        if path.is_file() and not path.is_symlink() and not path.parent.is_symlink():
            path.unlink()


def _run(ports: PipelinePorts, *, attempt: int, side: str, seed: int, argv: tuple[str, ...],
         covered_by: tuple[str, ...]) -> SuiteRun | str:
    """One run (``side`` change: in the worktree; base: in the base copy), or why it did not run."""
    temp = ports.commands.temp_directory(ports.facts.task_id)
    stale = temp / PurePosixPath(report_name(seed))
    if stale.is_file() and not stale.is_symlink() and not stale.parent.is_symlink():
        stale.unlink()
    started = time.monotonic()
    run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt, covered_by=covered_by,
                                           working_directory=BASE_WORKING_DIRECTORY if side == "base" else None)
    wall = time.monotonic() - started
    if not run.ran:
        return f"the suite was not run on the {side} under seed {seed}: {run.refusal}"
    timed = _PYTEST_TIME.findall(run.stdout.strip().splitlines()[-1]) if run.stdout.strip() else []
    document = _report(temp, seed)
    measured = SuiteRun(side=side, seed=seed, argv=argv, request_id=run.request_id, state=run.state,
                        exit_code=run.exit_code, wall_seconds=wall,
                        pytest_seconds=float(timed[-1]) if timed else None)
    if document is None:
        tail = " ".join((run.stderr or run.stdout).strip().splitlines()[-3:])[:300]
        return replace(measured, problem=f"pytest ended {run.state} (exit {run.exit_code}) without its report: {tail}")
    outcomes = document.get("outcomes")
    messages = document.get("messages")
    order = document.get("order")
    results = {str(k): str(v) for k, v in outcomes.items()} if isinstance(outcomes, dict) else {}
    status = document.get("exit_status")
    problem = None
    if status not in (0, 1, 5) or (status == 1 and not any(v == "failed" for v in results.values())):
        problem = f"pytest exited {status} with no failing test reported"
    return replace(measured, outcomes=results,
                   order=tuple(str(t) for t in order) if isinstance(order, list) else (),
                   messages={str(k): str(v)[-_MESSAGE_CHARS:] for k, v in messages.items()}
                   if isinstance(messages, dict) else {}, problem=problem)


def _prepare_base(ports: PipelinePorts, temp: Path, *, with_base: bool) -> str | None:
    """Write the base copy (its own test files, pytest's root pinned there); why not, else None."""
    if not with_base:
        return "the base revision was not run"
    scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=BASE_DIRECTORY, overlay=())
    if scratch.path is None:
        return f"the base copy could not be written: {scratch.refusal}"
    pin_pytest_root(scratch.path)
    return None


def evaluate_repetition(ports: PipelinePorts, *, attempt: int, integration: StageVerdict,
                        integration_evidence: Mapping[str, object] | None = None,
                        seeds: Sequence[int] | None = None, with_base: bool = True) -> Repetition:
    """Stage 32 and the runs for 34 (see the module docstring); ``integration`` is stage 28's stored verdict (and
    ``integration_evidence`` its evidence: the tests it saw failing in file order, each failing on the base too),
    ``seeds`` replaces the fresh random seeds (tests replay an order), ``with_base`` false leaves the base out."""
    if integration.outcome not in _HELD:
        return Repetition(result=stage_result(_REPETITION, StageOutcome.BLOCKED, "stage 28 integration-tests did not "
                                              f"hold ({integration.outcome.value}): the suite is repeated only once "
                                              "it passes in file order", {}),
                          base_detail="stage 28 did not hold")
    if integration.outcome is StageOutcome.SKIPPED:
        return Repetition(result=stage_result(_REPETITION, StageOutcome.SKIPPED, "stage 28 collected no tests: there "
                                              "is no suite to repeat", {}), base_detail="no tests")
    facts = ports.facts
    command = detect_test_command(worktree=facts.worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        return Repetition(result=stage_result(_REPETITION, StageOutcome.BLOCKED, "no usable test command (an "
                                              "interpreter with pytest) to repeat the suite with", {}),
                          base_detail="no test command")
    setting = threshold_of(ports.settings, REPETITION_RUNS)
    if setting.problem is not None:
        return Repetition(result=stage_result(_REPETITION, StageOutcome.BLOCKED, setting.problem, {}),
                          base_detail=setting.problem)
    chosen = list(seeds) if seeds is not None else [secrets.randbelow(2**32) for _ in range(setting.value)]
    temp = ports.commands.temp_directory(facts.task_id)
    base_detail = _prepare_base(ports, temp, with_base=with_base)
    change: list[SuiteRun] = []
    base: list[SuiteRun] = []
    try:
        for seed in chosen:
            argv = seeded_argv(command.interpreter, None, seed, ())
            ran = _run(ports, attempt=attempt, side="change", seed=seed, argv=argv, covered_by=command.argv)
            if isinstance(ran, str):
                return Repetition(result=stage_result(_REPETITION, StageOutcome.BLOCKED, ran, {}), base_detail=ran)
            change.append(ran)
            if base_detail is None:
                on_base = _run(ports, attempt=attempt, side="base", seed=seed, argv=argv, covered_by=command.argv)
                if isinstance(on_base, str):
                    base_detail = on_base
                else:
                    base.append(on_base)
    finally:
        remove_base_scratch(temp, BASE_DIRECTORY)
        # each report was read and removed; Hypothesis's home goes too (never through a link: rmtree refuses one)
        shutil.rmtree(temp / CHECKS_FOLDER / "hypothesis", ignore_errors=True)
    seen_failing = [str(item) for key in ("failing", "failing_on_base_too")
                    for item in _listed((integration_evidence or {}).get(key))]
    result = _judged(change, integration=integration, setting=setting.to_evidence(), seeds_given=seeds is not None,
                     interpreter=command.interpreter, file_order_failing=seen_failing)
    return Repetition(result=result, change=tuple(change), base=tuple(base), base_detail=base_detail)


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _judged(runs: Sequence[SuiteRun], *, integration: StageVerdict, file_order_failing: Sequence[str],
            setting: dict[str, object], seeds_given: bool, interpreter: str) -> StageResult:
    """The pass sets compared. ``file_order_failing`` are the junit ids (``classname::name``) stage 28 saw failing in
    file order — a held 28 with failures: each also fails on the base revision — which fail in every order too and
    are 28's to report, not order-dependence."""
    evidence: dict[str, object] = {"runs_setting": setting, "seeds": [run.seed for run in runs],
                                   "seeds_given": seeds_given, "interpreter": interpreter,
                                   "runs": [run.to_evidence() for run in runs],
                                   "file_order": f"stage 28 {integration.outcome.value}"}
    if all(run.collected_nothing for run in runs):
        return stage_result(_REPETITION, StageOutcome.SKIPPED, "pytest collected no tests in any run: there is no "
                            "suite to repeat", {**evidence, "findings": []})
    passed_in: dict[str, list[int]] = {}
    failed_in: dict[str, list[int]] = {}
    for run in runs:
        for test, outcome in run.outcomes.items():
            (failed_in if outcome == "failed" else passed_in).setdefault(test, []).append(run.seed)
    known = set(file_order_failing)
    findings = [f"seed {run.seed}: {run.problem}; reproduce with: {run.command}" for run in runs
                if run.problem is not None]
    flaky: list[str] = []
    also_in_file_order: list[str] = []
    for test in sorted(failed_in):
        passes = passed_in.get(test, [])
        in_file_order = "::".join(junit_case_of(test)) not in known
        if not passes and not in_file_order:
            also_in_file_order.append(test)
            continue
        flaky.append(test)
        failing_run = next(run for run in runs if test in run.failing)
        elsewhere = [f"passes under seed {', '.join(map(str, passes))}"] if passes else []
        elsewhere += ["passes in file order (stage 28)"] if in_file_order else []
        findings.append(f"{test} is order-dependent or flaky: fails under seed {', '.join(map(str, failed_in[test]))}, "
                        f"{'; '.join(elsewhere)}; reproduce with: {failing_run.command}")
    evidence.update(flaky=flaky, findings=findings, failing_in_file_order_too=also_in_file_order[:_MAX_LISTED],
                    pass_sets={str(run.seed): sorted(t for t, o in run.outcomes.items() if o == "passed")[:_MAX_LISTED]
                               for run in runs})
    tests = len({test for run in runs for test in run.outcomes})
    seen = (f"the whole suite ({tests} test(s)) run {len(runs)} time(s) in random order, seeds "
            f"{', '.join(str(run.seed) for run in runs)}")
    if findings:
        return stage_result(_REPETITION, StageOutcome.FAILED, (f"{seen}; " + "; ".join(findings[:4]))[:6000],
                            evidence)
    known_text = (f"; {len(also_in_file_order)} test(s) failing in file order too (stage 28 lists them: they fail on "
                  "the base revision as well) fail in every order") if also_in_file_order else ""
    return stage_result(_REPETITION, StageOutcome.SATISFIED, f"{seen}; the same tests passed in every run{known_text}",
                        evidence)


def time_limit(base_seconds: float, *, ratio_pct: int, slack_ms: int) -> float:
    """The most the suite may take with the change: ``max(ratio × base, base + slack)``."""
    return max(base_seconds * ratio_pct / 100, base_seconds + slack_ms / 1000)


def evaluate_non_functional(settings: SettingsPort | None, repetition: Repetition) -> StageResult:
    """Stage 34 (advisory; see the module docstring) from stage 32's runs."""
    outcome = repetition.result.verdict.outcome
    if outcome is StageOutcome.SKIPPED:
        return stage_result(_NON_FUNCTIONAL, StageOutcome.SKIPPED, "pytest collected no tests: there is no suite to "
                            "time", {})
    change = [run for run in repetition.change if not run.collected_nothing]
    if not change:
        reason = repetition.result.verdict.reason or "stage 32 made no run"
        return stage_result(_NON_FUNCTIONAL, StageOutcome.BLOCKED, f"the suite was not timed with the change: {reason}",
                            {})
    if not repetition.base:
        return stage_result(_NON_FUNCTIONAL, StageOutcome.BLOCKED, "the suite was not timed on the base revision: "
                            f"{repetition.base_detail or 'no base run'}", {})
    ratio = threshold_of(settings, NON_FUNCTIONAL_RATIO_PCT)
    slack = threshold_of(settings, NON_FUNCTIONAL_SLACK_MS)
    for chosen in (ratio, slack):
        if chosen.problem is not None:
            return stage_result(_NON_FUNCTIONAL, StageOutcome.BLOCKED, chosen.problem, {})
    changed = round(statistics.median(run.wall_seconds for run in change), 3)  # as the evidence shows them
    before = round(statistics.median(run.wall_seconds for run in repetition.base), 3)
    limit = time_limit(before, ratio_pct=ratio.value, slack_ms=slack.value)
    slower = changed > limit
    findings = [f"the suite takes {changed:.2f} s with the change against {before:.2f} s on the base revision (limit "
                f"{limit:.2f} s = max({ratio.value} % of base, base + {slack.value} ms))"] if slower else []
    evidence: dict[str, object] = {
        "measure": "median wall time of the whole confined suite run (coordinator clock), change and base runs "
                   "interleaved in the same pipeline run, same seeds",
        "change_seconds": [round(run.wall_seconds, 3) for run in change],
        "base_seconds": [round(run.wall_seconds, 3) for run in repetition.base],
        "change_pytest_seconds": [run.pytest_seconds for run in change],
        "base_pytest_seconds": [run.pytest_seconds for run in repetition.base],
        "change_median_s": changed, "base_median_s": before, "limit_s": round(limit, 3),
        "slower": slower, "ratio_setting": ratio.to_evidence(), "slack_setting": slack.to_evidence(),
        "seeds": [run.seed for run in change], "findings": findings,
        "not_proved": "memory, single-operation latency and time on other machines are not measured",
    }
    if slower:
        return stage_result(_NON_FUNCTIONAL, StageOutcome.SATISFIED, f"advisory, flagged: {findings[0]}", evidence)
    return stage_result(_NON_FUNCTIONAL, StageOutcome.SATISFIED,
                        f"the suite takes {changed:.2f} s with the change against {before:.2f} s on the base revision "
                        f"(median of {len(change)} and {len(repetition.base)} interleaved runs), within the limit "
                        f"{limit:.2f} s", evidence)
