"""Stage 33 platform-matrix: the suite on every other local interpreter that has an environment, and every other
Python version the project declares checked for syntax — each version said to be run, syntax-checked or unchecked.

**Run.** Stage 28 ran the suite with the repository's interpreter (its Python version is in 28's evidence). Every
other local environment — ``.venv-*``, ``.tox/*`` and ``.nox/*`` in the worktree or the user's checkout, with a
``bin/python`` and pytest in its ``site-packages`` (an environment without pytest is listed, not run) — runs the
same test command (:func:`~codeflux.pipeline.program.pytest_argv` for its interpreter) in the task's worker,
confined, following the test command's decision (``covered_by``); its junit report lands in the task's TMPDIR and
is read and removed as stage 28's is. Whether the environment holds every dependency of the repository is not
checked: a missing one shows as failing tests.

**Declared.** ``requires-python`` and the ``Programming Language :: Python :: 3.X`` classifiers of the worktree's
``pyproject.toml`` ``[project]`` table, as minor versions from :data:`OLDEST_KNOWN` to :data:`NEWEST_KNOWN` (a
specifier is read per minor series: ``>=3.8`` is 3.8 and every later one). Each declared version no environment
ran is **syntax-checked**: every changed Python file (tests included) is parsed with ``ast.parse(…,
feature_version=…)`` by codeflux's own interpreter — syntax only, best effort (Python's parser flags the newer
grammar it knows, such as ``match``, ``except*``, the walrus operator or parenthesised context managers); API use
(a function or module newer than the version) is **not** checked. A version newer than codeflux's interpreter, or
older than 3.4, cannot be checked by its parser and is listed **unchecked**. The evidence keeps the three lists
apart; every version not run is "claimed, not run".

Gate: every other environment's suite passed, and every changed file parses under every syntax-checked version.
No declared version and no other environment → ``skipped``; an unreadable ``pyproject.toml`` or
``requires-python``, or a run refused → ``blocked``.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final
from xml.etree import ElementTree

from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import JUNIT_IN_TEMP, detect_test_command, parse_junit_xml, pytest_argv
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "NEWEST_KNOWN",
    "OLDEST_KNOWN",
    "Environment",
    "declared_versions",
    "evaluate_platform_matrix",
    "local_environments",
    "requires_python_versions",
    "syntax_errors",
]

_STAGE: Final = StageName.PLATFORM_MATRIX
OLDEST_KNOWN: Final = (3, 6)
NEWEST_KNOWN: Final = (3, 14)
_PARSER_OLDEST: Final = (3, 4)
_MAX_FILE_BYTES: Final = 2 * 1024 * 1024
_MAX_FILES: Final = 500
_MAX_ENVIRONMENTS: Final = 20
_CLAUSE: Final = re.compile(r"^\s*(?P<op>~=|===|==|!=|<=|>=|<|>)\s*(?P<version>[0-9]+(?:\.(?:[0-9]+|\*))*)\s*$")
_CLASSIFIER: Final = re.compile(r"^Programming Language :: Python :: (?P<major>3)\.(?P<minor>[0-9]+)$")
_VERSION_LINE: Final = re.compile(r"^\s*version(?:_info)?\s*=\s*(?P<major>[0-9]+)\.(?P<minor>[0-9]+)", re.MULTILINE)

Version = tuple[int, int]


def _shown(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def _series_allowed(minor: int, op: str, parts: Sequence[str]) -> bool:
    """Whether the 3.``minor`` series has a release the clause ``op parts`` allows (see the module docstring)."""
    if parts[0] != "3":  # another major version: only a bound on the other side (or !=) lets 3.x through
        return op in ("!=", "<", "<=") if int(parts[0]) > 3 else op in ("!=", ">", ">=")
    if len(parts) == 1 or parts[1] == "*":
        return op != "!="
    bound = int(parts[1])
    patch = len(parts) > 2 and parts[2] != "*"
    wildcard = len(parts) > 2 and parts[2] == "*"
    match op:
        case ">=" | ">":
            return minor >= bound
        case "<":
            return minor <= bound if patch else minor < bound
        case "<=":
            return minor <= bound
        case "==" | "===":
            return minor == bound
        case "!=":
            return not (minor == bound and wildcard)
        case "~=":
            return minor == bound if patch else minor >= bound
    return False


def requires_python_versions(specifier: str) -> tuple[Version, ...]:
    """The minor versions from :data:`OLDEST_KNOWN` to :data:`NEWEST_KNOWN` that ``specifier`` allows;
    :class:`ValueError` naming the clause it cannot read."""
    clauses = [clause for clause in specifier.split(",") if clause.strip()]
    if not clauses:
        raise ValueError("it is empty")
    parsed: list[tuple[str, list[str]]] = []
    for clause in clauses:
        found = _CLAUSE.match(clause)
        if found is None:
            raise ValueError(f"the clause {clause.strip()[:60]!r} is not a version specifier")
        parsed.append((found["op"], found["version"].split(".")))
    return tuple((3, minor) for minor in range(OLDEST_KNOWN[1], NEWEST_KNOWN[1] + 1)
                 if all(_series_allowed(minor, op, parts) for op, parts in parsed))


def declared_versions(pyproject: str) -> tuple[tuple[Version, ...], dict[str, object]]:
    """The versions ``pyproject.toml``'s ``[project]`` declares, and what was read; :class:`ValueError` naming what
    could not be read."""
    try:
        document = tomllib.loads(pyproject)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"pyproject.toml is not valid TOML ({error})") from None
    project = document.get("project")
    project = project if isinstance(project, dict) else {}
    requires = project.get("requires-python")
    classifiers = project.get("classifiers")
    found: set[Version] = set()
    if isinstance(requires, str):
        try:
            found.update(requires_python_versions(requires))
        except ValueError as error:
            raise ValueError(f"requires-python {requires[:80]!r} could not be read: {error}") from None
    listed = [str(c) for c in classifiers if isinstance(c, str)] if isinstance(classifiers, list) else []
    from_classifiers = [(3, int(m["minor"])) for c in listed if (m := _CLASSIFIER.match(c.strip()))]
    found.update(from_classifiers)
    return tuple(sorted(found)), {"requires_python": requires if isinstance(requires, str) else None,
                                  "classifier_versions": [_shown(v) for v in sorted(set(from_classifiers))]}


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """A local environment: its folder (as found), interpreter, Python version (None: unknown) and whether it has
    pytest."""

    folder: str
    python: Path
    version: Version | None
    has_pytest: bool

    def to_evidence(self) -> dict[str, object]:
        return {"folder": self.folder, "python": str(self.python),
                "version": None if self.version is None else _shown(self.version), "has_pytest": self.has_pytest}


def _environment_version(root: Path) -> Version | None:
    try:
        found = _VERSION_LINE.search((root / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")[:8192])
    except OSError:
        found = None
    if found is not None:
        return int(found["major"]), int(found["minor"])
    for lib in sorted(root.glob("lib/python3.*")):
        minor = lib.name.removeprefix("python3.")
        if minor.isdigit():
            return 3, int(minor)
    return None


def local_environments(bases: Sequence[tuple[Path, str]], *, exclude: Path | None) -> tuple[Environment, ...]:
    """Every ``.venv-*``, ``.tox/*`` and ``.nox/*`` environment under each (folder, label) of ``bases`` with a
    ``bin/python``, the environment ``exclude`` (the test command's, or a link to it) left out."""
    found: list[Environment] = []
    seen: set[Path] = set()
    excluded = exclude.resolve() if exclude is not None else None
    for base, label in bases:
        candidates = [*sorted(base.glob(".venv-*")), *sorted(base.glob(".tox/*")), *sorted(base.glob(".nox/*"))]
        for root in candidates:
            python = root / "bin" / "python"
            if not python.is_file():
                continue
            resolved = root.resolve()
            if resolved in seen or resolved == excluded:
                continue
            seen.add(resolved)
            found.append(Environment(folder=f"{root.relative_to(base)} in the {label}", python=python,
                                     version=_environment_version(root),
                                     has_pytest=any(root.glob("lib/python*/site-packages/pytest"))))
    return tuple(found[:_MAX_ENVIRONMENTS])


def syntax_errors(sources: Mapping[str, str], version: Version) -> list[str]:
    """``path:line: message`` for each of ``sources`` that does not parse under ``version``'s grammar."""
    errors: list[str] = []
    for path, text in sorted(sources.items()):
        try:
            ast.parse(text, filename=path, feature_version=version)
        except SyntaxError as error:
            errors.append(f"{path}:{error.lineno or 0}: {error.msg}")
        except (ValueError, RecursionError) as error:
            errors.append(f"{path}: not parsed ({error})")
    return errors


def _read_plain(worktree: Path, path: str) -> str | None:
    current = worktree
    for part in PurePosixPath(path).parts:
        current = current / part
        if current.is_symlink():
            return None
    try:
        if not current.is_file() or current.stat().st_size > _MAX_FILE_BYTES:
            return None
        return current.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _changed_sources(worktree: Path, assembly: StageResult) -> dict[str, str]:
    files = assembly.evidence.get("files")
    listed = [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []
    paths = sorted({str(item.get("path", "")) for item in listed
                    if item.get("kind") in ("added", "modified") and str(item.get("path", "")).endswith(".py")})
    sources: dict[str, str] = {}
    for path in paths[:_MAX_FILES]:
        text = _read_plain(worktree, path)
        if text is not None:
            sources[path] = text
    return sources


def _run_environment(ports: PipelinePorts, *, attempt: int, environment: Environment,
                     covered_by: tuple[str, ...]) -> dict[str, object] | str:
    """The suite on ``environment`` (its entry in the evidence), or why it did not run."""
    temp = ports.commands.temp_directory(ports.facts.task_id)
    report = temp / JUNIT_IN_TEMP
    shutil.rmtree(report.parent, ignore_errors=True)
    argv = pytest_argv(str(environment.python))
    run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt, covered_by=covered_by)
    if not run.ran:
        return f"the suite was not run with {environment.folder}: {run.refusal}"
    entry: dict[str, object] = {**environment.to_evidence(), "argv": list(argv), "request_id": run.request_id,
                                "state": run.state, "exit_code": run.exit_code}
    try:
        data = report.read_bytes() if report.is_file() and not report.is_symlink() else None
    finally:
        shutil.rmtree(report.parent, ignore_errors=True)
    if data is None:
        tail = " ".join((run.stderr or run.stdout).strip().splitlines()[-3:])[:300]
        entry.update(outcome="failed", problem=f"pytest ended {run.state} (exit {run.exit_code}) and wrote no junit "
                                               f"report: {tail}")
        return entry
    try:
        counts = parse_junit_xml(data)
    except (ValueError, ElementTree.ParseError):
        entry.update(outcome="failed", problem="the junit report could not be read")
        return entry
    held = run.exit_code in (0, 5) and counts.failures == 0 and counts.errors == 0
    entry.update(outcome="passed" if held else "failed", tests=counts.tests, passed=counts.passed,
                 failing=list(counts.failing))
    return entry


def _version_of(text: object) -> Version | None:
    parts = text.split(".") if isinstance(text, str) else []
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def _syntax_checked(declared: Sequence[Version], ran: set[Version], sources: Mapping[str, str]
                    ) -> tuple[list[dict[str, object]], list[dict[str, object]], list[str]]:
    """Each declared version not run: syntax-checked (with its errors) or unchecked (why), and the findings."""
    newest = (sys.version_info.major, sys.version_info.minor)
    checked: list[dict[str, object]] = []
    unchecked: list[dict[str, object]] = []
    findings: list[str] = []
    for version in declared:
        if version in ran:
            continue
        if not (_PARSER_OLDEST <= version <= newest):
            unchecked.append({"version": _shown(version), "status": "claimed, not run, unchecked",
                              "why": f"codeflux's interpreter ({_shown(newest)}) cannot parse with that grammar"})
            continue
        errors = syntax_errors(sources, version)
        findings += [f"Python {_shown(version)} (declared): {error}" for error in errors]
        checked.append({"version": _shown(version), "status": "claimed, not run, syntax-checked",
                        "files": sorted(sources), "syntax_errors": errors})
    return checked, unchecked, findings


def evaluate_platform_matrix(ports: PipelinePorts, *, attempt: int, assembly: StageResult,
                             integration_evidence: Mapping[str, object]) -> StageResult:
    """Stage 33 (see the module docstring); ``integration_evidence`` is stage 28's (the version it ran)."""
    worktree = ports.facts.worktree.path
    pyproject = _read_plain(worktree, "pyproject.toml")
    declared: tuple[Version, ...] = ()
    read: dict[str, object] = {"requires_python": None, "classifier_versions": []}
    if pyproject is not None:
        try:
            declared, read = declared_versions(pyproject)
        except ValueError as error:
            return stage_result(_STAGE, StageOutcome.BLOCKED, f"the declared Python versions could not be read: "
                                f"{error}; fix pyproject.toml", {})
    main_version = integration_evidence.get("python_version")
    main = _version_of(main_version)
    command = detect_test_command(worktree=worktree, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    main_python = Path(command.interpreter) if command is not None and Path(command.interpreter).is_absolute() else None
    environments = local_environments(((worktree, "worktree"), (ports.repository_root, "repository")),
                                      exclude=None if main_python is None else main_python.parent.parent)
    evidence: dict[str, object] = {
        "declared": [_shown(v) for v in declared], **read, "known_range": [_shown(OLDEST_KNOWN), _shown(NEWEST_KNOWN)],
        "main": {"interpreter": integration_evidence.get("interpreter"), "version": main_version,
                 "by": "stage 28 integration-tests"},
        "environments": [environment.to_evidence() for environment in environments],
        "not_proved": "syntax only, best effort: API use (functions or modules newer than a version) is not checked "
                      "for versions not run; whether an environment holds every dependency is not checked",
    }
    if not declared and not environments:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the project declares no Python version (no requires-python "
                            "or version classifiers in pyproject.toml) and has no other local environment: stage 28's "
                            "run is the only platform", {**evidence, "run": [], "syntax_checked": [], "unchecked": []})
    if command is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, "no test command was found to run the suite with", evidence)
    runs: list[dict[str, object]] = []
    for environment in environments:
        if not environment.has_pytest:
            continue
        entry = _run_environment(ports, attempt=attempt, environment=environment, covered_by=command.argv)
        if isinstance(entry, str):
            return stage_result(_STAGE, StageOutcome.BLOCKED, entry, evidence)
        runs.append(entry)
    ran = {version for version in (main, *(_version_of(r.get("version")) for r in runs)) if version is not None}
    checked, unchecked, syntax_findings = _syntax_checked(declared, ran, _changed_sources(worktree, assembly))
    evidence.update(run=[{"version": _shown(main) if main else main_version, "by": "stage 28 integration-tests"},
                         *runs], syntax_checked=checked, unchecked=unchecked,
                    not_run_pytest_missing=[e.folder for e in environments if not e.has_pytest])
    findings = [f"{entry['folder']} (Python {entry['version']}): the suite failed"
                + (f" — {entry['failing']}" if entry.get("failing") else "")
                + (f" — {entry['problem']}" if entry.get("problem") else "")
                for entry in runs if entry["outcome"] != "passed"]
    findings += syntax_findings
    evidence["findings"] = findings
    summary = (f"run: {', '.join(sorted(_shown(v) for v in ran)) or 'none'}; syntax-checked (claimed, not run): "
               f"{', '.join(str(c['version']) for c in checked) or 'none'}; unchecked: "
               f"{', '.join(str(u['version']) for u in unchecked) or 'none'}")
    if findings:
        return stage_result(_STAGE, StageOutcome.FAILED, (f"{summary}; " + "; ".join(findings[:4]))[:4000], evidence)
    return stage_result(_STAGE, StageOutcome.SATISFIED, f"{summary}; every run passed and every changed file parses "
                        "under every syntax-checked version (syntax only: API use is not checked)", evidence)
