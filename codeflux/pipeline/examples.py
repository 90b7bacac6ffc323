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

Whether an example **discriminates** — fails on the base code with the final test files, passes after — is
not measured yet: the evidence says so for every example, never that it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JunitCounts
from codeflux.pipeline.specification import StageResult, acceptance_for

__all__ = ["evaluate_end_to_end_tests", "junit_case_of"]

_NOT_MEASURED: Final = "not measured: codeflux does not run examples on the base revision yet"
_SHOWN_LINES: Final = 20


def junit_case_of(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's junit report gives the test ``node_id`` names."""
    path, _, rest = node_id.partition("::")
    parts = rest.split("::")
    module = path.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
    return ".".join([module, *parts[:-1]]), parts[-1]


def _named_test(example: AcceptanceExample, junit: JunitCounts | None, why_no_report: str) -> dict[str, object]:
    test = example.test or ""
    record: dict[str, object] = {"kind": "named-test", "test": test, "discriminates": None,
                                 "discrimination": _NOT_MEASURED}
    if junit is None:
        return {**record, "outcome": "blocked", "detail": why_no_report}
    classname, name = junit_case_of(test)
    status = next((case_status for case_class, case_name, case_status in junit.cases
                   if case_class == classname and case_name == name), None)
    if status is None:
        return {**record, "outcome": "failed", "detail": f"pytest did not collect {test}: the named test does not "
                "exist on this diff"}
    if status != "passed":
        return {**record, "outcome": "failed", "detail": f"{test} {status}"}
    return {**record, "outcome": "satisfied", "detail": f"{test} passed"}


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _command(example: AcceptanceExample, ports: PipelinePorts, attempt: int) -> dict[str, object]:
    record: dict[str, object] = {"kind": "command", "argv": list(example.argv), "expected": list(example.expected),
                                 "discriminates": None, "discrimination": _NOT_MEASURED}
    run = ports.commands.run_check_command(ports.facts.task_id, example.argv, attempt=attempt)
    if not run.ran:
        return {**record, "outcome": "blocked", "detail": f"the command did not run: {run.refusal}"}
    got = _lines(run.stdout)
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
                              tests: StageVerdict) -> StageResult:
    """Stage 29 on this attempt's diff; ``junit`` and ``tests`` are stage 28's report and verdict."""
    found = acceptance_for(ports.facts)
    examples = found.examples
    why_no_report = (f"the test run produced no junit report to look the test up in "
                     f"({tests.outcome.value}: {tests.gate_evaluation or tests.reason or 'no detail'})")
    results = [_named_test(example, junit, why_no_report) if example.test is not None
               else _command(example, ports, attempt) for example in examples]
    verdict = _verdict(results)
    if verdict.outcome is StageOutcome.BLOCKED:
        return StageResult(verdict=verdict, evidence={})  # a stage that did not run keeps no evidence
    evidence: dict[str, object] = {"examples": results, "source": found.source,
                                   "discrimination": _NOT_MEASURED}
    return StageResult(verdict=verdict, evidence=evidence)


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
