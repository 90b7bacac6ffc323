"""Stage 31 adversarial (sends back): the commands this change is about, run confined on hostile input.

**Two parts.** The commands below, and the public atoms of the diff taking text or bytes, given hostile values with
Hypothesis (:func:`~codeflux.pipeline.fuzz.hostile_atoms`); the verdict joins them (:func:`_combined`).

**What runs.** Every *command* acceptance example of the task (the person's own examples: ``argv`` with the output
it must print) and every console entry point the change touches — a ``[project.scripts]`` entry of the worktree's
``pyproject.toml`` whose module file the diff adds or changes — and every package whose ``__main__.py`` the diff adds
or changes (run as ``python -m`` would). Entry points and packages start through
:data:`~codeflux.pipeline.adversarial_script.ENTRY_SCRIPT` with the test command's interpreter, as an installed
script would. Nothing else: a change that touches no command is ``skipped`` with that reason.

**How.** One confined command per decision it follows, in a scratch copy of the final tree under the task's TMPDIR
(:data:`ADVERSARIAL_DIRECTORY`; a command that writes files never writes into the worktree; removed afterwards): the
test command's interpreter runs the fixed :data:`~codeflux.pipeline.adversarial_script.ADVERSARIAL_SCRIPT` (whose
docstring lists the hostile cases: no stdin, empty, random bytes, invalid UTF-8, NUL, a 10 MiB line, a missing
file argument) with a job codeflux wrote. Entry points and packages follow the decision on the test command (the
same interpreter importing the same code); each example follows the decision on that example's own command this
attempt (stage 29 ran it) — an example that was not allowed is not run here either. Every run has a made-up secret
(a fresh canary per evaluation) in its environment, a per-case time limit (the setting
:data:`~codeflux.pipeline.thresholds.ADVERSARIAL_TIMEOUT_S`, default 10 s) and a recorded seed for its random bytes.

**Gate.** For every command and case: it ended within the limit (else a **hang**), its output shows no uncaught
Python traceback, and the canary never appears in its output; and where an example passes an existing file as an
argument — the person's own example says the command reads that file — it does not exit 0 when that file is
missing. Each broken rule is a finding naming the command, the case and the last line of its error output; a
failure sends the work back (after 28 and 29). Not judged (:data:`DOES_NOT_PROVE`): an exit 0 on other garbage (no
contract says which garbage a command must refuse), what the output says, inputs other than these seven, commands
the change does not touch, and console entry points declared outside ``pyproject.toml`` (``setup.cfg``,
``setup.py``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.adversarial_script import (
    ADVERSARIAL_JOB,
    ADVERSARIAL_REPORT,
    ADVERSARIAL_SCRIPT,
    CASES,
    ENTRY_SCRIPT,
)
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.fuzz import hostile_atoms
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import detect_test_command
from codeflux.pipeline.specification import StageResult, acceptance_for, stage_result
from codeflux.pipeline.thresholds import ADVERSARIAL_TIMEOUT_S, threshold_of

__all__ = ["ADVERSARIAL_DIRECTORY", "DOES_NOT_PROVE", "Target", "adversarial_targets", "evaluate_adversarial"]

_STAGE: Final = StageName.ADVERSARIAL
ADVERSARIAL_DIRECTORY: Final = f"{SCRATCH_FOLDER}/adversarial"
ADVERSARIAL_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{ADVERSARIAL_DIRECTORY}"
CANARY_NAME: Final = "SERVICE_API_KEY"
"""The canary's variable: named like a real credential, so code that dumps credentials dumps it."""
HUGE_LINE_BYTES: Final = 10 * 1024 * 1024
MAX_TARGETS: Final = 20
_MAX_REPORT_BYTES: Final = 4 * 1024 * 1024
DOES_NOT_PROVE: Final = (
    "that an exit 0 on other garbage is wrong (no contract says which garbage a command must refuse), that the output "
    "is right, that other inputs are handled, anything about commands the change does not touch, or about entry "
    "points declared outside pyproject.toml"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One command to attack: what a person reads, the argv in the box, the argument naming an existing file (its
    index) and the argv of the check whose decision it follows (None: the test command's)."""

    key: str
    argv: tuple[str, ...]
    origin: str
    file_argument: int | None = None
    follows: tuple[str, ...] | None = None


def _module_files(module: str) -> tuple[str, ...]:
    path = module.replace(".", "/")
    return tuple(f"{prefix}{path}{suffix}" for prefix in ("", "src/") for suffix in (".py", "/__init__.py"))


def _scripts(worktree: Path) -> dict[str, str]:
    project = worktree / "pyproject.toml"
    if project.is_symlink() or not project.is_file():
        return {}
    try:
        document = tomllib.loads(project.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    scripts = document.get("project", {}).get("scripts", {}) if isinstance(document.get("project"), dict) else {}
    return {str(name): str(value) for name, value in scripts.items() if isinstance(value, str)} \
        if isinstance(scripts, dict) else {}


def _file_argument(worktree: Path, argv: Sequence[str]) -> int | None:
    for index, argument in enumerate(argv[1:], start=1):
        if argument.startswith("-") or not argument or PurePosixPath(argument).is_absolute() or ".." in argument:
            continue
        candidate = worktree / argument
        if not candidate.is_symlink() and candidate.is_file():
            return index
    return None


def adversarial_targets(worktree: Path, changed: Sequence[str], examples: Sequence[AcceptanceExample],
                        interpreter: str) -> list[Target]:
    """The commands to attack (see the module docstring), examples first, at most :data:`MAX_TARGETS`."""
    targets = [Target(key=f"example {number}: {shlex.join(example.argv)}", argv=example.argv,
                      origin="a command acceptance example", file_argument=_file_argument(worktree, example.argv),
                      follows=example.argv)
               for number, example in enumerate(examples, start=1) if example.test is None and example.argv]
    touched = set(changed)
    for name, value in sorted(_scripts(worktree).items()):
        module, _, attribute = value.partition(":")
        module, attribute = module.strip(), attribute.split("[", 1)[0].strip()
        if module and attribute and touched.intersection(_module_files(module)):
            targets.append(Target(key=f"entry point {name} ({module}:{attribute})", origin="a console entry point "
                                  "whose module the change touches", argv=(interpreter, "-c", ENTRY_SCRIPT, "call",
                                                                            module, attribute, name)))
    for path in sorted(touched):
        parts = PurePosixPath(path).parts
        if len(parts) >= 2 and parts[-1] == "__main__.py":
            package = ".".join(parts[1:-1] if parts[0] == "src" and len(parts) > 2 else parts[:-1])
            targets.append(Target(key=f"python -m {package}", origin="a package whose __main__.py the change touches",
                                  argv=(interpreter, "-c", ENTRY_SCRIPT, "module", package, package)))
    return targets[:MAX_TARGETS]


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(argv).replace(shlex.quote(ENTRY_SCRIPT), "\"$CODEFLUX_ENTRY_SCRIPT\"")


def evaluate_adversarial(ports: PipelinePorts, *, attempt: int, changed: Sequence[str],
                         atoms: AtomFacts | None = None, seed: int | None = None) -> StageResult:
    """Stage 31 (see the module docstring): the commands, and — with ``atoms``, phase B's facts — the public atoms
    taking text or bytes (:func:`~codeflux.pipeline.fuzz.hostile_atoms`); ``seed`` replaces the fresh one (tests
    replay the random bytes and draws)."""
    commands = _commands(ports, attempt=attempt, changed=changed, seed=seed)
    hostile = hostile_atoms(atoms, seed=seed) if atoms is not None else None
    return _combined(commands, hostile)


def _said(result: StageResult) -> str:
    return result.verdict.gate_evaluation or result.verdict.reason or str(result.verdict.outcome)


def _combined(commands: StageResult, hostile: StageResult | None) -> StageResult:
    """One verdict from the commands' part and the atoms' part: failed when either failed, blocked when either
    was blocked (and nothing failed), skipped when both had nothing to attack, else satisfied."""
    parts = [("commands", commands), *([("atoms", hostile)] if hostile is not None else [])]
    outcomes = {result.verdict.outcome for _, result in parts}
    findings = [str(item) for item in _listed(commands.evidence.get("findings"))]
    failing = [str(item) for item in _listed(commands.evidence.get("failing"))]
    evidence: dict[str, object] = {**commands.evidence, "commands": {"outcome": str(commands.verdict.outcome),
                                                                     "said": _said(commands)}}
    if hostile is None:
        evidence["hostile_atoms"] = {"outcome": "not examined", "why": "the diff did not assemble: no atom"}
    else:
        evidence["hostile_atoms"] = {"outcome": str(hostile.verdict.outcome), "said": _said(hostile),
                                     **hostile.evidence}
        findings.extend(str(item) for item in _listed(hostile.evidence.get("findings")))
        atoms = [entry for entry in _listed(hostile.evidence.get("atoms")) if isinstance(entry, Mapping)]
        failing.extend(f"{entry.get('qualified_name')} on hostile input" for entry in atoms
                       if entry.get("outcome") in ("failed", "hang"))
    evidence.update(findings=findings, failing=failing)
    said = "; ".join(f"{name}: {_said(result)}" for name, result in parts)
    if outcomes == {StageOutcome.SKIPPED}:
        return stage_result(_STAGE, StageOutcome.SKIPPED, said, evidence)
    if StageOutcome.FAILED in outcomes:
        return stage_result(_STAGE, StageOutcome.FAILED, said, evidence)
    if StageOutcome.BLOCKED in outcomes:  # a blocked stage carries no evidence: the reason says what did not run
        return stage_result(_STAGE, StageOutcome.BLOCKED, said, {})
    return stage_result(_STAGE, StageOutcome.SATISFIED, said, evidence)


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _commands(ports: PipelinePorts, *, attempt: int, changed: Sequence[str], seed: int | None) -> StageResult:
    """The commands' part (see the module docstring)."""
    worktree = ports.facts.worktree.path
    command = detect_test_command(worktree=worktree, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    interpreter = command.interpreter if command is not None else "python3"
    targets = adversarial_targets(worktree, changed, acceptance_for(ports.facts).examples, interpreter)
    if not targets:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "no command acceptance example, and the change touches no "
                            "console entry point (pyproject.toml [project.scripts]) or package __main__.py: there is "
                            "no command to give hostile input", {"targets": []})
    if command is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, "no Python interpreter to run the hostile-input runner "
                            "with (the test command's interpreter: a .venv, venv or python3 on PATH)", {})
    limit = threshold_of(ports.settings, ADVERSARIAL_TIMEOUT_S)
    if limit.problem is not None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, limit.problem, {})
    chosen_seed = seed if seed is not None else secrets.randbelow(2**32)
    canary = f"cf-canary-{secrets.token_hex(12)}"
    groups: dict[tuple[str, ...], list[Target]] = {}
    for target in targets:
        groups.setdefault(target.follows or command.argv, []).append(target)
    results: dict[str, dict[str, object]] = {}
    runs: list[dict[str, object]] = []
    for follows, members in groups.items():
        job = {"seed": chosen_seed, "timeout_s": limit.value, "huge_bytes": HUGE_LINE_BYTES,
               "canary_name": CANARY_NAME, "canary": canary, "cases": list(CASES),
               "targets": [{"key": target.key, "argv": list(target.argv), "file_argument": target.file_argument}
                           for target in members]}
        report, run = _run(ports, attempt=attempt, changed=changed, interpreter=interpreter, follows=follows,
                           job=job)
        runs.append(run)
        found = _targets_of(report)
        for target in members:
            results[target.key] = found.get(target.key) or {"not_run": run.get("problem") or "no report for it"}
    return _judged(targets, results, runs, seed=chosen_seed, limit=limit.to_evidence())


def _run(ports: PipelinePorts, *, attempt: int, changed: Sequence[str], interpreter: str,
         follows: tuple[str, ...], job: Mapping[str, object]) -> tuple[dict[str, object] | None, dict[str, object]]:
    """One confined run of the runner over ``job`` in a fresh scratch copy (see the module docstring)."""
    temp = ports.commands.temp_directory(ports.facts.task_id)
    text = json.dumps(job, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    argv = (interpreter, "-c", ADVERSARIAL_SCRIPT, digest)
    evidence: dict[str, object] = {"argv": [interpreter, "-c", "ADVERSARIAL_SCRIPT", digest],
                                   "follows": _shown(follows)}
    try:
        scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=ADVERSARIAL_DIRECTORY,
                                     overlay=changed)
        if scratch.path is None:
            evidence["problem"] = f"the scratch copy could not be made: {scratch.refusal}"
            return None, evidence
        checks = temp / CHECKS_FOLDER
        shutil.rmtree(checks, ignore_errors=True)
        if checks.exists() or checks.is_symlink():
            evidence["problem"] = "the job could not be written to the task's TMPDIR"
            return None, evidence
        checks.mkdir(parents=True)
        (temp / PurePosixPath(ADVERSARIAL_JOB)).write_text(text, encoding="utf-8")
        run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt,
                                               working_directory=ADVERSARIAL_WORKING_DIRECTORY, covered_by=follows)
        evidence.update(request_id=run.request_id, exit_code=run.exit_code, state=run.state)
        if not run.ran:
            evidence["problem"] = f"not run: {run.refusal}"
            return None, evidence
        report = read_box_json(temp / PurePosixPath(ADVERSARIAL_REPORT), max_bytes=_MAX_REPORT_BYTES)
        if report is None:
            tail = (run.stderr or run.stdout).strip().splitlines()[-6:]
            evidence["problem"] = (f"the runner ended {run.state} (exit {run.exit_code}) without its report: "
                                   + " | ".join(line[:200] for line in tail))
        return report, evidence
    finally:
        remove_base_scratch(temp, ADVERSARIAL_DIRECTORY)
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one


def _targets_of(report: Mapping[str, object] | None) -> dict[str, dict[str, object]]:
    found = report.get("targets") if report is not None else None
    entries = [entry for entry in found if isinstance(entry, dict)] if isinstance(found, list) else []
    return {str(entry.get("key")): entry for entry in entries}


def _stream(case: Mapping[str, object], name: str) -> Mapping[str, object]:
    value = case.get(name)
    return value if isinstance(value, dict) else {}


def _last_error_line(case: Mapping[str, object]) -> str:
    tail = _stream(case, "stderr").get("tail")
    lines = [str(line) for line in tail if str(line).strip()] if isinstance(tail, list) else []
    return lines[-1][:200] if lines else "(no error output)"


def _case_findings(target: Target, case: Mapping[str, object]) -> list[str]:
    name = str(case.get("case"))
    where = f"{target.key} on {name}"
    if case.get("not_started"):
        return [f"{where}: could not be started ({case['not_started']})"]
    found: list[str] = []
    if case.get("hung") is True:
        found.append(f"{where}: hangs (still running at the time limit; its process group was killed)")
    if any(_stream(case, stream).get("traceback") is True for stream in ("stdout", "stderr")):
        found.append(f"{where}: an uncaught traceback ({_last_error_line(case)})")
    if any(_stream(case, stream).get("canary") is True for stream in ("stdout", "stderr")):
        found.append(f"{where}: prints the secret from its environment ({CANARY_NAME})")
    if name == "missing-file" and target.file_argument is not None and case.get("exit") == 0:
        found.append(f"{where}: exits 0 although the file its example reads (argument {target.file_argument}) is "
                     "missing")
    return found


def _judged(targets: Sequence[Target], results: Mapping[str, Mapping[str, object]], runs: list[dict[str, object]],
            *, seed: int, limit: dict[str, object]) -> StageResult:
    findings: list[str] = []
    failing: list[str] = []
    shown: list[dict[str, object]] = []
    not_run: list[str] = []
    for target in targets:
        result = results.get(target.key, {})
        listed = result.get("cases")
        cases = [case for case in listed if isinstance(case, dict)] if isinstance(listed, list) else []
        entry: dict[str, object] = {"key": target.key, "origin": target.origin, "command": _shown(target.argv),
                                    "file_argument": target.file_argument}
        if not cases:
            not_run.append(target.key)
            entry["not_run"] = str(result.get("not_run") or "no case ran")
            shown.append(entry)
            continue
        mine = [finding for case in cases for finding in _case_findings(target, case)]
        findings.extend(mine)
        failing.extend(f"{target.key} on {case.get('case')}" for case in cases if _case_findings(target, case))
        entry.update(findings=mine, cases=[{
            "case": case.get("case"), "exit": case.get("exit"), "hung": case.get("hung"),
            "seconds": case.get("seconds"), "not_started": case.get("not_started"),
            "stdout_bytes": _stream(case, "stdout").get("bytes"), "stderr_bytes": _stream(case, "stderr").get("bytes"),
            "stderr_tail": _stream(case, "stderr").get("tail")} for case in cases])
        shown.append(entry)
    evidence: dict[str, object] = {"targets": shown, "findings": findings, "failing": failing, "seed": seed,
                                   "cases": list(CASES),
                                   "timeout": limit, "canary_variable": CANARY_NAME, "runs": runs,
                                   "huge_line_bytes": HUGE_LINE_BYTES, "does_not_prove": DOES_NOT_PROVE}
    judged = len(targets) - len(not_run)
    if judged == 0:
        reasons = "; ".join(f"{entry['key']}: {entry.get('not_run')}" for entry in shown)
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"no command was given hostile input — {reasons}", {})
    seen = [f"{judged} command(s) × {len(CASES)} hostile input(s) (seed {seed}, {limit.get('value')} s each)"]
    if not_run:
        seen.append(f"not run: {', '.join(not_run)}")
    if findings:
        seen.extend(findings[:6])
        return stage_result(_STAGE, StageOutcome.FAILED, "; ".join(seen), evidence)
    if not_run:  # what ran held, but not every command was tried: not a verdict on them
        seen.extend(f"{entry['key']}: {entry.get('not_run')}" for entry in shown if "not_run" in entry)
        return stage_result(_STAGE, StageOutcome.BLOCKED, "; ".join(seen), {})
    seen.append("no hang, no uncaught traceback, the canary never printed")
    return stage_result(_STAGE, StageOutcome.SATISFIED, "; ".join(seen), evidence)
