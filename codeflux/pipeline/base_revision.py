"""The checks run once more on the base revision, with the attempt's final test files.

Two facts need it (ARCHITECTURE §8.3, issue 14), from two runs:

* **failures the base shares** — the base code with its **own** test files, once per base commit: a test
  that fails on the final diff and fails there too was failing before the change; stage 28 lists it and never
  sends it back (its gate reads "no test fails that the base revision passes"). A test the change added is
  never excused this way: it is not in that run;
* **discrimination** — the base code with the attempt's **final** test files laid over it (a test the change
  adds exists there too): an acceptance example that already holds there does not show that the change was
  needed, and stage 29 says "not shown to need this change" (a finding, not a gate failure).

How: :func:`~codeflux.gitwork.base_scratch.write_base_scratch` writes the base tree into
:data:`BASE_DIRECTORY` under the task's TMPDIR (the worker's per-task temporary directory, writable in the box;
never the worktree, so the copy cannot reach the diff), for the second run with every test file the diff
adds, changes or deletes (by name: ``test_*.py``, ``*_test.py``, ``conftest.py``, anything under a
``tests``/``test`` folder) and the file of every named-test example laid over it. There the **same** test
command runs (same argv and program; its junit report lands in the task's TMPDIR, never the worktree), and
each example command once,
as the pipeline's own requests started in that directory (:data:`BASE_WORKING_DIRECTORY`,
``$TMPDIR/codeflux-scratch/base``: fixed text, so their identity includes it and is the same for every task;
their authority follows the decision on the same command in the worktree root). The scratch is removed right
after, and a run's start removes any a killed run left. When the diff changes no test file the two runs are
one.

Each run is kept in stage 28's evidence (``base_runs``) under a key — the base commit, the test command, the
plan revision's hash and the sha256 of every overlaid file — so a later attempt with the same key reuses it
and says from which attempt it came. When a run cannot be made (not allowed, no test command, the scratch
refused) nothing is assumed: every failure counts as the change's, and discrimination is "not measured" with
the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Final
from xml.etree import ElementTree

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JUNIT_IN_TEMP, JunitCounts, parse_junit_xml
from codeflux.pipeline.specification import StageResult

__all__ = [
    "BASE_DIRECTORY",
    "BASE_WORKING_DIRECTORY",
    "SCRATCH_FOLDER",
    "BaseRun",
    "base_overlay",
    "base_run_key",
    "command_key",
    "discrimination_of",
    "integration_with_base",
    "is_test_file",
    "measure_base",
    "output_lines",
    "pin_pytest_root",
]

SCRATCH_FOLDER: Final = "codeflux-scratch"
"""The pipeline's scratch copies, under the task's TMPDIR (not ``codeflux-checks``: the test run empties that)."""
BASE_DIRECTORY: Final = f"{SCRATCH_FOLDER}/base"
"""The base copy, relative to the task's TMPDIR."""
BASE_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{BASE_DIRECTORY}"
"""Where the base runs start, as their operation identity and the worker have it."""
_SHOWN_LINES: Final = 200
_MAX_FAILING_KEPT: Final = 500


def is_test_file(path: str) -> bool:
    """Whether ``path`` is a test file by pytest's usual names (see the module docstring)."""
    pure = PurePosixPath(path)
    name = pure.name
    if name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
        return True
    return any(part in ("tests", "test") for part in pure.parts[:-1])


def base_overlay(changed: Sequence[Mapping[str, object]], examples: Sequence[AcceptanceExample]) -> tuple[str, ...]:
    """The files laid over the base tree: the diff's test files (``changed`` as assembly's evidence lists
    them: ``path`` and ``kind``) and each named-test example's file."""
    paths = {str(item["path"]) for item in changed if is_test_file(str(item.get("path", "")))}
    paths.update(example.test.partition("::")[0] for example in examples if example.test)
    return tuple(sorted(path for path in paths if path))


def output_lines(text: str) -> list[str]:
    """A command's output as compared with an example's expected lines: trailing spaces and trailing blank
    lines ignored."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _file_digest(root: Path, path: str) -> str | None:
    target = root / path
    if target.is_symlink() or not target.is_file():
        return None
    return hashlib.sha256(target.read_bytes()).hexdigest()


def base_run_key(*, base: str, argv: Sequence[str] | None, commands: Sequence[AcceptanceExample], worktree: Path,
                 overlay: Sequence[str]) -> str:
    """The cache key of a base run: what ran there (the base commit, the test command, the example commands)
    and the sha256 of every file laid over the base tree."""
    document = {"base": base, "argv": list(argv) if argv else None,
                "commands": [list(example.argv) for example in commands],
                "overlay": [[path, _file_digest(worktree, path)] for path in overlay]}
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseRun:
    """What the base revision showed — or why it was not measured (``measured`` false, ``detail`` says why)."""

    key: str
    purpose: str
    """``failures the base shares`` (base test files) or ``discrimination`` (final test files)."""
    measured: bool
    detail: str
    tests_measured: bool = False
    failing: tuple[str, ...] = ()
    """junit ids (``classname::name``) of tests failing or erroring on the base revision."""
    statuses: Mapping[str, str] = field(default_factory=dict)
    """Each named-test example's status on the base: passed, failed, error, skipped or not-collected."""
    commands: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Each example command (its argv as JSON) → exit_code and stdout_lines on the base."""
    request_ids: tuple[str, ...] = ()
    from_attempt: int | None = None

    def to_evidence(self) -> dict[str, object]:
        return {"key": self.key, "purpose": self.purpose, "measured": self.measured, "detail": self.detail,
                "tests_measured": self.tests_measured, "failing": list(self.failing[:_MAX_FAILING_KEPT]),
                "statuses": dict(self.statuses), "commands": {k: dict(v) for k, v in self.commands.items()},
                "request_ids": list(self.request_ids), "from_attempt": self.from_attempt,
                "directory": BASE_WORKING_DIRECTORY}

    @classmethod
    def from_evidence(cls, document: Mapping[str, object], *, attempt: int) -> BaseRun | None:
        try:
            failing, statuses, commands = document["failing"], document["statuses"], document["commands"]
            if not (isinstance(failing, list) and isinstance(statuses, dict) and isinstance(commands, dict)):
                return None
            return cls(key=str(document["key"]), purpose=str(document.get("purpose", "")),
                       measured=bool(document["measured"]), detail=str(document["detail"]),
                       tests_measured=bool(document.get("tests_measured")),
                       failing=tuple(str(item) for item in failing),
                       statuses={str(k): str(v) for k, v in statuses.items()},
                       commands={str(k): v for k, v in commands.items() if isinstance(v, dict)},
                       request_ids=tuple(str(item) for item in _listed(document.get("request_ids"))),
                       from_attempt=int(str(document.get("from_attempt") or attempt)))
        except (KeyError, TypeError, ValueError):
            return None


_PYTEST_SECTIONS: Final = {"pytest.ini": None, ".pytest.ini": None, "pyproject.toml": "[tool.pytest.ini_options]",
                            "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}


def pin_pytest_root(scratch: Path) -> bool:
    """Make pytest take the base copy as its root, as it takes the repository's root when it runs there.

    pytest looks for its configuration from the directory it runs in *upwards*: above the copy are the
    task's TMPDIR and the worker's state directory, where a confined command may have left a ``pytest.ini``
    or ``conftest.py`` — another root, other test ids, other options. When no file at the copy's top holds a
    pytest section, an empty
    ``pytest.ini`` is written there (only in the copy), which changes nothing else: the base had no pytest
    configuration. Returns whether it was written."""
    for name, section in _PYTEST_SECTIONS.items():
        path = scratch / name
        if path.is_file() and not path.is_symlink():
            if section is None:
                return False
            try:
                if section in path.read_text(encoding="utf-8", errors="replace"):
                    return False
            except OSError:
                return False
    (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return True


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def command_key(argv: Sequence[str]) -> str:
    return json.dumps(list(argv), separators=(",", ":"))


def _cached(ports: PipelinePorts, attempt: int, key: str, earlier_runs: Sequence[BaseRun]) -> BaseRun | None:
    same = next((run for run in earlier_runs if run.key == key and run.measured), None)
    if same is not None:
        return same
    task_id = ports.facts.task_id
    for earlier in range(attempt - 1, 0, -1):
        for row in ports.ledger.ledger(task_id, earlier):
            if row.verdict.stage is not StageName.INTEGRATION_TESTS:
                continue
            for document in _listed(row.evidence.get("base_runs")):
                if isinstance(document, Mapping) and document.get("key") == key and document.get("measured"):
                    return BaseRun.from_evidence(document, attempt=earlier)
    return None


def measure_base(ports: PipelinePorts, *, attempt: int, purpose: str, test_argv: Sequence[str] | None,
                 examples: Sequence[AcceptanceExample], overlay: Sequence[str],
                 earlier_runs: Sequence[BaseRun] = ()) -> BaseRun:
    """Run (or find cached: ``earlier_runs`` of this attempt, then earlier attempts' evidence) one base run
    (see the module docstring). ``test_argv`` is stage 28's test command, None to run no tests there;
    ``examples`` are the example commands to run there; ``overlay`` the files laid over the base tree."""
    facts = ports.facts
    worktree = facts.worktree
    commands = tuple(example for example in examples if example.test is None and example.argv)
    key = base_run_key(base=worktree.base, argv=test_argv, commands=commands, worktree=worktree.path,
                       overlay=overlay)
    cached = _cached(ports, attempt, key, earlier_runs)
    if cached is not None:
        return replace(cached, purpose=purpose)
    if test_argv is None and not commands:
        return BaseRun(key=key, purpose=purpose, measured=False,
                       detail="not measured: the tests did not run on this diff, so there is nothing to compare")
    temp = ports.commands.temp_directory(facts.task_id)
    scratch = write_base_scratch(worktree, root=temp, directory=BASE_DIRECTORY, overlay=overlay)
    if scratch.path is None:
        return BaseRun(key=key, purpose=purpose, measured=False, detail=f"not measured: {scratch.refusal}")
    try:
        return _run_in_scratch(ports, attempt=attempt, key=key, purpose=purpose, scratch=scratch.path,
                               test_argv=test_argv, examples=examples)
    finally:
        remove_base_scratch(temp, BASE_DIRECTORY)


def _tests_on_base(ports: PipelinePorts, *, attempt: int, scratch: Path, test_argv: Sequence[str],
                   notes: list[str]) -> tuple[JunitCounts | None, str | None]:
    """The test command's report on the base copy (None when there is none: ``notes`` say why), and its
    request id."""
    if pin_pytest_root(scratch):
        notes.append("pytest's root pinned to the base copy (the base has no pytest configuration of its own)")
    report = ports.commands.temp_directory(ports.facts.task_id) / JUNIT_IN_TEMP  # the argv's $TMPDIR report
    report.unlink(missing_ok=True)
    run = ports.commands.run_check_command(ports.facts.task_id, tuple(test_argv), attempt=attempt,
                                           working_directory=BASE_WORKING_DIRECTORY)
    if not run.ran:
        notes.append(f"the test command did not run on the base: {run.refusal}")
        return None, run.request_id
    if report.is_symlink() or not report.is_file():
        notes.append(f"the test command ended {run.state} (exit {run.exit_code}) on the base and wrote no report")
        return None, run.request_id
    try:
        return parse_junit_xml(report.read_bytes()), run.request_id
    except (ValueError, ElementTree.ParseError, OSError):
        notes.append("the base run's junit report could not be read")
        return None, run.request_id
    finally:
        report.unlink(missing_ok=True)


def _run_in_scratch(ports: PipelinePorts, *, attempt: int, key: str, purpose: str, scratch: Path,
                    test_argv: Sequence[str] | None, examples: Sequence[AcceptanceExample]) -> BaseRun:
    request_ids: list[str] = []
    notes: list[str] = []
    named = [example.test for example in examples if example.test]
    counts = None
    if test_argv is not None:
        counts, request_id = _tests_on_base(ports, attempt=attempt, scratch=scratch, test_argv=test_argv,
                                            notes=notes)
        request_ids += [request_id] if request_id else []
    elif named:
        notes.append("no test command to run the named tests with on the base")
    commands: dict[str, dict[str, object]] = {}
    for example in examples:
        if example.test is not None or not example.argv:
            continue
        run = ports.commands.run_check_command(ports.facts.task_id, example.argv, attempt=attempt,
                                               working_directory=BASE_WORKING_DIRECTORY)
        request_ids += [run.request_id] if run.request_id else []
        if not run.ran:
            notes.append(f"an example command did not run on the base: {run.refusal}")
            continue
        commands[command_key(example.argv)] = {"exit_code": run.exit_code,
                                               "stdout_lines": output_lines(run.stdout)[:_SHOWN_LINES]}
    measured = counts is not None or bool(commands)
    problems = [note for note in notes if not note.startswith("pytest's root pinned")]
    detail = "; ".join(notes) if problems else "; ".join(["measured on the base revision", *notes])
    return BaseRun(key=key, purpose=purpose, measured=measured,
                   detail=detail if measured else f"not measured: {detail}", tests_measured=counts is not None,
                   failing=counts.failing_ids() if counts else (),
                   statuses={test: counts.status_of(test) for test in named} if counts else {},
                   commands=commands, request_ids=tuple(request_ids), from_attempt=attempt)


def integration_with_base(result: StageResult, counts: JunitCounts | None, runs: Sequence[BaseRun],
                          base: BaseRun | None) -> StageResult:
    """Stage 28's result with the base runs (``runs``, recorded in the evidence) and ``base``, the run of the
    base with its own test files: the gate reads "no test fails that the base revision passes" — failures the
    base shares are listed (``failing_on_base_too``), never counted against the change. Without that run
    measured, every failure counts."""
    if not runs or result.verdict.outcome in (StageOutcome.BLOCKED, StageOutcome.NOT_IMPLEMENTED):
        return result  # a stage that did not run keeps no evidence
    evidence = {**result.evidence, "base_runs": [run.to_evidence() for run in runs]}
    verdict = result.verdict
    if verdict.outcome is not StageOutcome.FAILED or counts is None or base is None or not base.tests_measured:
        return StageResult(verdict=verdict, evidence=evidence)
    failing_now = counts.failing_ids()
    on_base = set(base.failing)
    shared = [test for test in failing_now if test in on_base]
    evidence["failing_on_base_too"] = shared[:_MAX_FAILING_KEPT]
    seen = verdict.gate_evaluation or ""
    if failing_now and len(shared) == len(failing_now):
        return StageResult(evidence=evidence, verdict=replace(verdict, outcome=StageOutcome.SATISFIED, gate_evaluation=(
            f"{seen}; every failing test also fails on the base revision with these test files (listed; not "
            "caused by this change)")))
    new = len(failing_now) - len(shared)
    text = f"{seen}; {new} fail only with this change" + (f", {len(shared)} also fail on the base revision"
                                                          if shared else "")
    return StageResult(evidence=evidence, verdict=replace(verdict, gate_evaluation=text))


def discrimination_of(example: AcceptanceExample, base: BaseRun | None) -> tuple[bool | None, str]:
    """Whether ``example`` fails on the base revision (with the final test files) — it discriminates — or
    already holds there ("not shown to need this change"); None with the reason when not measured."""
    if base is None or not base.measured:
        return None, base.detail if base is not None else "not measured: the base revision was not run"
    if example.test is not None:
        if not base.tests_measured:
            return None, f"not measured on the base: {base.detail}"
        status = base.statuses.get(example.test, "not-collected")
        if status == "passed":
            return False, "not shown to need this change: it already passes on the base revision"
        return True, f"discriminates: {status} on the base revision, passes with this change"
    result = base.commands.get(command_key(example.argv))
    if result is None:
        return None, f"not measured on the base: {base.detail}"
    expected = [line.rstrip() for line in example.expected]
    holds = result.get("exit_code") == 0 and (not expected or result.get("stdout_lines") == expected)
    if holds:
        return False, "not shown to need this change: the command already gives this on the base revision"
    return True, f"discriminates: on the base revision it exits {result.get('exit_code')}" + (
        " with other output" if result.get("exit_code") == 0 else "")
