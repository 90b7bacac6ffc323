"""Phase E: 28 integration-tests (26 assembly is :mod:`codeflux.pipeline.assembly`).

**integration-tests** runs the repository's test command in the task's worker, inside the worktree,
with the repository's own environment: the first of ``.venv/bin/python`` and ``venv/bin/python`` in the
worktree, then in the user's checkout, else ``python3`` on the worker's ``PATH``. The argv is fixed —
``<python> -m pytest -p no:cacheprovider --junitxml=$TMPDIR/codeflux-checks/junit.xml`` (see
:func:`pytest_argv`) — so a headless run can pre-approve exactly that operation. The junit report never
enters the worktree, so never the diff the checks, the evidence and the person see: pytest itself expands
``$TMPDIR`` (no shell is involved; the argv stays the same text for every task and names no host path), and
the worker's ``TMPDIR`` is the task's own temporary directory, writable in the box. The coordinator reads
the report there (:meth:`~codeflux.pipeline.ports.CheckCommandPort.temp_directory`) and removes it. The
evidence records argv, interpreter, Python and pytest
versions (from pytest's header), the diff identity seen before and after, and the counts. A missing
pytest is ``blocked`` naming the tool and how to install it; no collected test is ``skipped``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from xml.etree import ElementTree

from codeflux.domain.errors import CodefluxError
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "JUNIT_ARGUMENT",
    "JUNIT_IN_TEMP",
    "MAX_JUNIT_CASES",
    "JunitCounts",
    "TestCommand",
    "detect_test_command",
    "junit_case_of",
    "parse_junit_xml",
    "pytest_argv",
    "run_integration_tests",
]

JUNIT_IN_TEMP: Final = "codeflux-checks/junit.xml"
"""Where pytest writes its junit report, relative to the task's ``TMPDIR``."""
JUNIT_ARGUMENT: Final = f"--junitxml=$TMPDIR/{JUNIT_IN_TEMP}"
"""The report argument, as approved: pytest expands ``$TMPDIR`` from the worker's environment."""
_MAX_JUNIT_BYTES: Final = 16 * 1024 * 1024
_MAX_FAILING_SHOWN: Final = 50
_MAX_MESSAGE_CHARS: Final = 600
MAX_JUNIT_CASES: Final = 20_000
_MESSAGE_TAIL_LINES: Final = 6
_HEADER: Final = re.compile(r"platform \S+ -- Python (?P<python>[\w.+-]+), pytest-(?P<pytest>[\w.+-]+)")
_NO_PYTEST: Final = re.compile(r"No module named '?pytest'?")
_PYTEST_NO_TESTS: Final = 5  # pytest's exit status when it collected nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class TestCommand:
    """The detected test command: the interpreter (as argv[0]), where it came from, and the argv."""

    __test__ = False  # not a pytest test class

    interpreter: str
    source: str
    argv: tuple[str, ...]
    pytest_missing: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class JunitCounts:
    tests: int
    failures: int
    errors: int
    skipped: int
    failing: tuple[str, ...]
    failure_messages: tuple[str, ...] = ()
    """Per failing test (same order): the report's message, first lines only and cut (it is repository output)."""
    cases: tuple[tuple[str, str, str], ...] = ()
    """Every test case the report names (up to :data:`MAX_JUNIT_CASES`): (classname, name, status), status one
    of ``passed``, ``failed``, ``error``, ``skipped`` — what stage 29 looks named tests up in."""

    @property
    def passed(self) -> int:
        return max(0, self.tests - self.failures - self.errors - self.skipped)

    def status_of(self, node_id: str) -> str:
        """The status of the test ``node_id`` names (a pytest node id), ``not-collected`` when the report
        does not name it."""
        classname, name = junit_case_of(node_id)
        return next((status for case_class, case_name, status in self.cases
                     if case_class == classname and case_name == name), "not-collected")

    def failing_ids(self) -> tuple[str, ...]:
        """``classname::name`` of every failed or erroring case the report names."""
        return tuple(f"{case_class}::{name}" for case_class, name, status in self.cases
                     if status in ("failed", "error"))


def pytest_argv(interpreter: str) -> tuple[str, ...]:
    """The exact integration-test argv for ``interpreter`` (what a headless run pre-approves)."""
    return (interpreter, "-m", "pytest", "-p", "no:cacheprovider", JUNIT_ARGUMENT)


def _venv_has_pytest(python: Path) -> bool:
    return any(python.parent.parent.glob("lib/python*/site-packages/pytest"))


def detect_test_command(*, worktree: Path, repository_root: Path, search_path: str) -> TestCommand | None:
    """The repository's test command, or None when no Python interpreter can be found."""
    for base, label in ((worktree, "worktree"), (repository_root, "repository")):
        for folder in (".venv", "venv"):
            python = base / folder / "bin" / "python"
            if python.is_file() and os.access(python, os.X_OK):
                return TestCommand(interpreter=str(python), source=f"{folder} in the {label}",
                                   argv=pytest_argv(str(python)), pytest_missing=not _venv_has_pytest(python))
    if shutil.which("python3", path=search_path) is None:
        return None
    return TestCommand(interpreter="python3", source="python3 on the worker's PATH", argv=pytest_argv("python3"),
                       pytest_missing=False)


def junit_case_of(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's junit report gives the test ``node_id`` names."""
    path, _, rest = node_id.partition("::")
    parts = rest.split("::")
    module = path.removesuffix(".py").replace("\\", "/").strip("/").replace("/", ".")
    return ".".join([module, *parts[:-1]]), parts[-1]


def parse_junit_xml(data: bytes) -> JunitCounts:
    """Counts and failing test ids from pytest's junit XML. Entity declarations are refused (the file
    is written by code from the repository, so it is untrusted)."""
    if len(data) > _MAX_JUNIT_BYTES or b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("the junit report is too large or declares entities")
    root = ElementTree.fromstring(data)  # noqa: S314 (no DTD allowed above; size bounded)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failing: list[str] = []
    messages: list[str] = []
    cases: list[tuple[str, str, str]] = []
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        for case in suite.iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if len(cases) < MAX_JUNIT_CASES:
                status = ("failed" if case.find("failure") is not None else "error" if problem is not None
                          else "skipped" if case.find("skipped") is not None else "passed")
                cases.append((case.get("classname", ""), case.get("name", ""), status))
            if problem is not None:
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                if len(failing) < _MAX_FAILING_SHOWN:
                    failing.append(name)
                    messages.append(_failure_message(problem))
    return JunitCounts(failing=tuple(failing), failure_messages=tuple(messages), cases=tuple(cases), **totals)


def _failure_message(problem: ElementTree.Element) -> str:
    """The failure's message attribute, else the last lines of its text (where pytest puts the assertion and
    the last frame), cut to :data:`_MAX_MESSAGE_CHARS`."""
    message = (problem.get("message") or "").strip()
    text = (problem.text or "").strip()
    tail = "\n".join(text.splitlines()[-_MESSAGE_TAIL_LINES:])
    combined = message if not tail else f"{message}\n{tail}" if message and message not in tail else tail
    return combined[:_MAX_MESSAGE_CHARS]


def _read_junit(temp_directory: Path) -> bytes | None:
    report = temp_directory / JUNIT_IN_TEMP
    try:
        if report.is_symlink() or not report.is_file():
            return None
        return report.read_bytes()[: _MAX_JUNIT_BYTES + 1]
    finally:
        shutil.rmtree(report.parent, ignore_errors=True)


def _install_hint(command: TestCommand) -> str:
    return (f"pytest is not installed for {command.interpreter} ({command.source}); "
            f"install it with: {command.interpreter} -m pip install pytest")


def run_integration_tests(ports: PipelinePorts, *, attempt: int,
                          diff_identity: str | None) -> tuple[StageResult, JunitCounts | None]:
    """Stage 28 (see the module docstring), and the junit report it read (None when pytest wrote none that
    could be read): stage 29 looks the named tests up in it."""
    facts = ports.facts
    command = detect_test_command(worktree=facts.worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    stage = StageName.INTEGRATION_TESTS
    if command is None:
        return stage_result(stage, StageOutcome.BLOCKED, "no Python interpreter found: no .venv/venv in the worktree "
                            "or repository and no python3 on the worker's PATH; create a .venv with pytest", {}), None
    if command.pytest_missing:
        return stage_result(stage, StageOutcome.BLOCKED, _install_hint(command), {}), None
    temp_directory = ports.commands.temp_directory(facts.task_id)
    shutil.rmtree(temp_directory / Path(JUNIT_IN_TEMP).parent, ignore_errors=True)
    run = ports.commands.run_check_command(facts.task_id, command.argv, attempt=attempt)
    if not run.ran:
        return stage_result(stage, StageOutcome.BLOCKED, f"the test command did not run: {run.refusal}", {}), None
    report = _read_junit(temp_directory)
    header = _HEADER.search(run.stdout)
    evidence: dict[str, object] = {
        "argv": list(command.argv), "interpreter": command.interpreter, "interpreter_source": command.source,
        "python_version": header["python"] if header else None, "pytest_version": header["pytest"] if header else None,
        "diff_identity_before": diff_identity, "request_id": run.request_id, "state": run.state,
        "exit_code": run.exit_code,
    }
    evidence["diff_identity_after"] = _identity_after(ports)
    if report is None:
        if _NO_PYTEST.search(run.stderr) or _NO_PYTEST.search(run.stdout):
            return stage_result(stage, StageOutcome.BLOCKED, _install_hint(command), {}), None
        return stage_result(stage, StageOutcome.FAILED, f"pytest ended {run.state} (exit {run.exit_code}) and wrote no "
                        "junit report", evidence), None
    try:
        counts = parse_junit_xml(report)
    except (ValueError, ElementTree.ParseError):
        return stage_result(stage, StageOutcome.FAILED, "pytest's junit report could not be read", evidence), None
    evidence.update(tests=counts.tests, passed=counts.passed, failures=counts.failures, errors=counts.errors,
                    skipped=counts.skipped, failing=list(counts.failing),
                    failure_messages=list(counts.failure_messages))
    if run.exit_code == _PYTEST_NO_TESTS or counts.tests == 0:
        skipped = stage_result(stage, StageOutcome.SKIPPED, "pytest collected no tests in this repository", evidence)
        return skipped, counts
    seen = (f"pytest ran on diff {(diff_identity or 'unknown')[:12]}: {counts.tests} tests, {counts.passed} passed, "
            f"{counts.failures} failed, {counts.errors} errors, {counts.skipped} skipped (exit {run.exit_code})")
    held = run.exit_code == 0 and counts.failures == 0 and counts.errors == 0
    return stage_result(stage, StageOutcome.SATISFIED if held else StageOutcome.FAILED, seen, evidence), counts


def _identity_after(ports: PipelinePorts) -> str | None:
    try:
        return diff_against_base(ports.facts.worktree).identity
    except CodefluxError:
        return None
