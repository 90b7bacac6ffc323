"""Stage 29, end-to-end-tests: every acceptance example reproduced exactly on the attempt's final diff.

The examples are the ones stage 1 recorded (:func:`~codeflux.pipeline.specification.acceptance_for`: the
person's ACCEPTANCE blocks, else the examples approved with the plan):

* a **named test** (a pytest node id, ``tests/test_ops.py::test_add_negative``) must exist and pass. It is
  looked up in the junit report of stage 28's run of the whole suite on this same diff — pytest names a
  case ``tests.test_ops`` / ``test_add_negative`` (class parts join the module with dots) — so no second
  run is needed: not collected means the test does not exist, and skipped is not passed;
* a **command** runs confined in the task's worker as the pipeline's own request (its authority settled
  before validation, like the test command); it holds when it exits 0 and its stdout, line by line (trailing
  spaces and trailing blank lines ignored), is exactly the expected lines — when the example gives some.

The gate fails when any example does not hold (it sends the work back); it is ``blocked`` when an example
could not be checked (no junit report, a command that was not allowed to run), naming why.

Whether an example **discriminates** — fails on the base code with the final test files, passes after — comes
from the base run (:mod:`codeflux.pipeline.base_revision`): an example that already holds on the base is
listed as "not shown to need this change" (a finding, not a gate failure); when the base run could not be made
the evidence says "not measured" and why, never that it discriminates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.base_revision import BaseRun, discrimination_of, output_lines
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JunitCounts
from codeflux.pipeline.specification import StageResult, acceptance_for

__all__ = ["evaluate_end_to_end_tests"]

_SHOWN_LINES: Final = 20


def _on_base(example: AcceptanceExample, base: BaseRun | None) -> dict[str, object]:
    discriminates, detail = discrimination_of(example, base)
    return {"discriminates": discriminates, "discrimination": detail}


def _named_test(example: AcceptanceExample, junit: JunitCounts | None, why_no_report: str,
                base: BaseRun | None) -> dict[str, object]:
    test = example.test or ""
    record: dict[str, object] = {"kind": "named-test", "test": test, **_on_base(example, base)}
    if junit is None:
        return {**record, "outcome": "blocked", "detail": why_no_report}
    status = junit.status_of(test)
    if status == "not-collected":
        return {**record, "outcome": "failed", "detail": f"pytest did not collect {test}: the named test does not "
                "exist on this diff"}
    if status != "passed":
        return {**record, "outcome": "failed", "detail": f"{test} {status}"}
    return {**record, "outcome": "satisfied", "detail": f"{test} passed"}


def _command(example: AcceptanceExample, ports: PipelinePorts, attempt: int, base: BaseRun | None) -> dict[str, object]:
    record: dict[str, object] = {"kind": "command", "argv": list(example.argv), "expected": list(example.expected),
                                 **_on_base(example, base)}
    run = ports.commands.run_check_command(ports.facts.task_id, example.argv, attempt=attempt)
    if not run.ran:
        return {**record, "outcome": "blocked", "detail": f"the command did not run: {run.refusal}"}
    got = output_lines(run.stdout)
    record.update(request_id=run.request_id, exit_code=run.exit_code, stdout_lines=got[:_SHOWN_LINES])
    if run.exit_code != 0:
        return {**record, "outcome": "failed", "detail": f"exited {run.exit_code} ({run.state})"}
    expected = [line.rstrip() for line in example.expected]
    if expected and got != expected:
        first = next((index for index, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                     min(len(got), len(expected)))
        return {**record, "outcome": "failed", "detail": f"stdout differs from the expected output at line {first + 1}"}
    return {**record, "outcome": "satisfied",
            "detail": "exited 0" + (" with exactly the expected output" if expected else "")}


def evaluate_end_to_end_tests(ports: PipelinePorts, *, attempt: int, junit: JunitCounts | None,
                              tests: StageVerdict, base: BaseRun | None) -> StageResult:
    """Stage 29 on this attempt's diff; ``junit`` and ``tests`` are stage 28's report and verdict, ``base``
    the base revision's run (None when none was made)."""
    found = acceptance_for(ports.facts)
    examples = found.examples
    why_no_report = (f"the test run produced no junit report to look the test up in "
                     f"({tests.outcome.value}: {tests.gate_evaluation or tests.reason or 'no detail'})")
    results = [{**(_named_test(example, junit, why_no_report, base) if example.test is not None
                   else _command(example, ports, attempt, base)), "origin": origin}
               for example, origin in zip(examples, found.origins, strict=True)]
    verdict = _verdict(results)
    if verdict.outcome is StageOutcome.BLOCKED:
        return StageResult(verdict=verdict, evidence={})  # a stage that did not run keeps no evidence
    not_shown = [_named(r) for r in results if r["discriminates"] is False]
    measured = sum(1 for r in results if r["discriminates"] is not None)
    discrimination = (f"{measured} of {len(results)} example(s) measured on the base revision; "
                      f"{len(not_shown)} not shown to need this change")
    evidence: dict[str, object] = {"examples": results, "source": found.source,
                                   "not_shown_to_need_this_change": not_shown, "discrimination": discrimination}
    return StageResult(verdict=replace(verdict, gate_evaluation=f"{verdict.gate_evaluation}; {discrimination}"),
                       evidence=evidence)


def _named(result: dict[str, object]) -> str:
    argv = result.get("argv")
    return str(result.get("test") or (" ".join(str(part) for part in argv) if isinstance(argv, list) else ""))


def _verdict(results: Sequence[dict[str, object]]) -> StageVerdict:
    stage = StageName.END_TO_END_TESTS
    if not results:
        return StageVerdict(stage=stage, outcome=StageOutcome.BLOCKED, reason="no acceptance example to reproduce")
    failed = [r for r in results if r["outcome"] == "failed"]
    blocked = [r for r in results if r["outcome"] == "blocked"]
    held = len(results) - len(failed) - len(blocked)
    seen = f"{held} of {len(results)} acceptance example(s) reproduced on this diff"
    if failed:
        details = "; ".join(str(r["detail"]) for r in failed[:5])
        return StageVerdict(stage=stage, outcome=StageOutcome.FAILED, gate_evaluation=f"{seen}; failed: {details}")
    if blocked:
        return StageVerdict(stage=stage, outcome=StageOutcome.BLOCKED,
                            reason=f"{seen}; could not check: {blocked[0]['detail']}")
    return StageVerdict(stage=stage, outcome=StageOutcome.SATISFIED, gate_evaluation=seen)
