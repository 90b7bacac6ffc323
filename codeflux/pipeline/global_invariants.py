"""Stage 30 global-invariants: the capabilities the changed code reaches, against the plan's declared effects, and
bandit's high-severity findings on the changed lines.

Everything here reads source text with codeflux's own interpreter; no repository code runs.

**The changed code** is every changed atom (a function or method the diff adds or changes outside tests,
:func:`~codeflux.pipeline.atoms.atoms_of_diff`) as a whole, and every module-level statement of a changed non-test
Python file that touches a changed line (class bodies are not read).

**The capability map** lists, per place (``path:line``), what that code reaches:

* ``network``, ``process``, ``file``, ``env`` — stage 5's effect table (:mod:`codeflux.domain.contracts`, reused
  through :func:`~codeflux.pipeline.contracts.atom_contracts` for atoms and :func:`~codeflux.domain.contracts.
  inferred_effects` for module-level statements): calls and reads resolved through the module's imports. A file
  access on a line whose path comes from ``__file__`` or ``importlib.resources`` stays inside the package: it is
  listed with ``inside_package`` and is no capability (so is one through a module-level name bound to such a path);
* ``dynamic-code`` — the builtins ``eval``, ``exec``, ``compile`` and ``__import__`` (not shadowed by an import or a
  module-level name), ``importlib.import_module``, ``runpy.run_path``/``run_module``;
* ``deserialisation`` — loading data that can construct arbitrary objects: ``pickle``/``_pickle``/``cPickle``
  ``load``/``loads``/``Unpickler``, ``marshal.load(s)``, ``shelve.open``, ``dill``/``cloudpickle`` ``load(s)``,
  ``jsonpickle.decode``, ``joblib.load``, ``pandas.read_pickle``, ``numpy.load(…, allow_pickle=True)``, and
  ``yaml.load``/``load_all``/``full_load``/``unsafe_load`` unless a safe loader (``SafeLoader``, ``CSafeLoader``,
  ``BaseLoader``) is passed;
* an ``import`` on a changed line of a module that is wholly one capability (``subprocess``, ``socket``,
  ``requests``, ``pickle``, ``tempfile``, …: the table's whole-module entries and the deserialisation modules).

**Declared**: an atom's capabilities are compared with the effects its plan declaration lists (matched as stage 5
matches, :func:`~codeflux.pipeline.contracts.matching_declaration`; an undeclared atom declares nothing);
module-level code with the union of every effect the approved plan declares. Each capability is an effect a plan can
declare (:class:`~codeflux.domain.contracts.AtomEffect`: ``dynamic-code`` and ``deserialisation`` among them), so a
use the plan did not announce fails the gate and one it did is listed as declared.

**bandit** (a dependency of codeflux) runs as ``<codeflux's python> -m bandit -f json -q --ignore-nosec`` over
copies of the changed non-test Python files in an empty temporary directory (no configuration of the repository
is read, a ``# nosec`` comment switches nothing off), with an environment of nothing but a private ``HOME``, and a
timeout. A finding of severity ``HIGH`` whose line range meets a changed line fails the gate; the others are listed.

Gate: no capability outside the declared effects and no high-severity bandit finding on a changed line. No changed
non-test Python file → ``skipped``; bandit missing or not answering → ``blocked`` naming the fix. What it does not
prove: capabilities reached through calls into other functions or libraries, ``getattr``, or objects passed in are
not followed (a syntactic lower bound); whether a path really leaves the package is judged by the line's text; the
program's behaviour is not observed.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.atoms import FileAtoms
from codeflux.domain.contracts import (
    EFFECT_TABLE,
    EFFECT_TABLE_VERSION,
    AtomEffect,
    ModuleFacts,
    dotted_name,
    inferred_effects,
    module_facts,
)
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.plans import Plan
from codeflux.pipeline.atoms import DiffAtoms, atom_definition, atoms_of_diff
from codeflux.pipeline.contracts import atom_contracts
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "BANDIT_TIMEOUT_SECONDS",
    "CAPABILITIES",
    "NOT_PROVED",
    "BanditFinding",
    "BanditReport",
    "BanditUnavailable",
    "CapabilityUse",
    "capability_map",
    "evaluate_global_invariants",
    "run_bandit",
]

_STAGE: Final = StageName.GLOBAL_INVARIANTS
BANDIT_TIMEOUT_SECONDS: Final = 120.0
_MAX_OUTPUT_BYTES: Final = 16 * 1024 * 1024
_MAX_LISTED: Final = 200
_SHOWN: Final = 4
_MAX_TEXT: Final = 4000
NOT_PROVED: Final = (
    "capabilities reached through calls into other functions or libraries, getattr, or objects passed in are not "
    "followed (a syntactic lower bound); whether a file path really leaves the package is judged by the line's "
    "text; the program's behaviour is not observed"
)

DYNAMIC_CODE: Final = AtomEffect.DYNAMIC_CODE.value
DESERIALISATION: Final = AtomEffect.DESERIALISATION.value
_EFFECT_CAPABILITIES: Final = (AtomEffect.FILE, AtomEffect.NETWORK, AtomEffect.PROCESS, AtomEffect.ENV)
CAPABILITIES: Final = (*(effect.value for effect in _EFFECT_CAPABILITIES), DYNAMIC_CODE, DESERIALISATION)
"""Every capability the map can show."""

_DYNAMIC_BUILTINS: Final = frozenset({"eval", "exec", "compile", "__import__"})
_DYNAMIC_NAMES: Final = frozenset({"importlib.import_module", "importlib.__import__", "runpy.run_path",
                                   "runpy.run_module"})
_DESERIALISING_MODULES: Final = ("pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle",
                                 "jsonpickle")
_DESERIALISING_NAMES: Final = frozenset({
    "pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle.load", "_pickle.loads", "_pickle.Unpickler",
    "cPickle.load", "cPickle.loads", "marshal.load", "marshal.loads", "shelve.open", "dill.load", "dill.loads",
    "cloudpickle.load", "cloudpickle.loads", "jsonpickle.decode", "joblib.load", "pandas.read_pickle",
})
_YAML_LOADS: Final = frozenset({"yaml.load", "yaml.load_all", "yaml.full_load", "yaml.full_load_all",
                                "yaml.unsafe_load", "yaml.unsafe_load_all"})
_SAFE_LOADERS: Final = frozenset({"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"})
_INSIDE_PACKAGE_MARKS: Final = ("__file__", "importlib.resources", "importlib_resources", "resources.files")


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityUse:
    """One capability the changed code reaches: where, through what, in which atom (None: module level), and
    whether the plan declares it (``inside_package``: a file access that stays in the package, no capability)."""

    capability: str
    path: str
    line: int
    what: str
    atom: str | None
    declared: bool
    inside_package: bool = False

    @property
    def undeclared(self) -> bool:
        return not self.declared and not self.inside_package

    def describe(self) -> str:
        place = self.atom if self.atom is not None else "module level"
        return f"{self.capability} via {self.what} at {self.path}:{self.line} ({place})"

    def to_evidence(self) -> dict[str, object]:
        return {"capability": self.capability, "path": self.path, "line": self.line, "what": self.what,
                "atom": self.atom, "declared": self.declared, "inside_package": self.inside_package}


def _resolved(node: ast.expr, facts: ModuleFacts) -> str | None:
    dotted = dotted_name(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    target = facts.imports.get(head)
    if target is None:
        return dotted if not rest and head in _DYNAMIC_BUILTINS and head not in facts.mutable \
            and head not in facts.constants and head not in facts.code else None
    return f"{target}.{rest}" if rest else target


def _safe_yaml(call: ast.Call) -> bool:
    loaders = [keyword.value for keyword in call.keywords if keyword.arg == "Loader"] + call.args[1:2]
    return any((dotted_name(loader) or "").rpartition(".")[2] in _SAFE_LOADERS for loader in loaders)


def _extra_capability(call: ast.Call, facts: ModuleFacts) -> tuple[str, str] | None:
    """``dynamic-code`` or ``deserialisation`` for ``call`` (with the name it resolved to), else None."""
    name = _resolved(call.func, facts)
    if name is None:
        return None
    if name in _DYNAMIC_BUILTINS or name in _DYNAMIC_NAMES:
        return DYNAMIC_CODE, name
    if name in _DESERIALISING_NAMES:
        return DESERIALISATION, name
    if name in _YAML_LOADS:
        safe = name in ("yaml.load", "yaml.load_all") and _safe_yaml(call)
        return None if safe else (DESERIALISATION, name)
    if name == "numpy.load" and any(k.arg == "allow_pickle" and isinstance(k.value, ast.Constant)
                                    and k.value.value is True for k in call.keywords):
        return DESERIALISATION, "numpy.load(allow_pickle=True)"
    return None


def _whole_module_capability(module: str) -> str | None:
    for effect in _EFFECT_CAPABILITIES:
        for entry in EFFECT_TABLE[effect]:
            if entry.endswith(".") and (module + ".").startswith(entry):
                return effect.value
    return DESERIALISATION if module.partition(".")[0] in _DESERIALISING_MODULES else None


def _import_capabilities(node: ast.stmt) -> Iterable[tuple[str, str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            found = _whole_module_capability(alias.name)
            if found is not None:
                yield found, f"import {alias.name}"
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        found = _whole_module_capability(node.module)
        if found is not None:
            yield found, f"from {node.module} import {', '.join(alias.name for alias in node.names)}"


def _module_level(file: FileAtoms, tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements (definitions excepted) that touch a changed line."""
    changed = set(file.changed)
    chosen: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        end = getattr(node, "end_lineno", None) or node.lineno
        if any(line in changed for line in range(node.lineno, end + 1)):
            chosen.append(node)
    return chosen


def _package_names(tree: ast.Module, source: str) -> frozenset[str]:
    """Module-level names bound to a value whose text derives from ``__file__`` or ``importlib.resources``
    (``DATA = Path(__file__).parent / "data.txt"``)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            text = ast.get_source_segment(source, node.value) or ""
            if any(mark in text for mark in _INSIDE_PACKAGE_MARKS):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(target.id for target in targets if isinstance(target, ast.Name))
    return frozenset(names)


def _inside_package(lines: Sequence[str], line: int, names: frozenset[str]) -> bool:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return any(mark in text for mark in _INSIDE_PACKAGE_MARKS) or \
        any(re.search(rf"\b{re.escape(name)}\b", text) for name in names)


_Region = tuple[ast.FunctionDef | ast.AsyncFunctionDef, str | None, frozenset[AtomEffect]]


def _regions(file: FileAtoms, facts: ModuleFacts, statements: list[ast.stmt], *,
             atoms: Mapping[str, tuple[AtomEffect, ...] | None], plan_effects: frozenset[AtomEffect]) -> list[_Region]:
    """Each changed atom's definition with its declared effects, and the changed module-level statements held in
    one synthetic function (so stage 5's effect table reads them) with every effect the plan declares."""
    regions: list[_Region] = []
    for atom in file.atoms:
        definition = atom_definition(facts.tree, atom)
        if definition is not None:
            regions.append((definition, atom.qualified_name, frozenset(atoms.get(atom.qualified_name) or ())))
    body = [statement for statement in statements if not isinstance(statement, ast.Import | ast.ImportFrom)]
    if body:  # the imports stay the module's (so names resolve through them); they are mapped on their own
        holder = ast.FunctionDef(name="<module>", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                                      kw_defaults=[], defaults=[]),
                                 body=body, decorator_list=[], returns=None, lineno=body[0].lineno, col_offset=0)
        regions.append((holder, None, plan_effects))
    return regions


def _file_map(file: FileAtoms, facts: ModuleFacts, *, atoms: Mapping[str, tuple[AtomEffect, ...] | None],
              plan_effects: frozenset[AtomEffect]) -> list[CapabilityUse]:
    """The capability map of one changed file; ``atoms`` gives each changed atom's declared effects (None:
    undeclared)."""
    lines = file.source.splitlines()
    package_names = _package_names(facts.tree, file.source)
    found: dict[tuple[str, int, str, str | None], CapabilityUse] = {}

    def add(capability: str, line: int, what: str, atom: str | None, declared: frozenset[AtomEffect]) -> None:
        inside = capability == AtomEffect.FILE.value and _inside_package(lines, line, package_names)
        allowed = capability in {effect.value for effect in declared}
        found.setdefault((capability, line, what, atom), CapabilityUse(
            capability=capability, path=file.path, line=line, what=what, atom=atom, declared=allowed,
            inside_package=inside))

    statements = _module_level(file, facts.tree)
    for statement in statements:
        for capability, what in _import_capabilities(statement):
            add(capability, statement.lineno, what, None, plan_effects)
    for region, atom_name, declared in _regions(file, facts, statements, atoms=atoms, plan_effects=plan_effects):
        for use in inferred_effects(region, facts):
            if use.effect in _EFFECT_CAPABILITIES:
                add(use.effect.value, use.line, use.what, atom_name, declared)
        for node in ast.walk(region):
            if isinstance(node, ast.Call) and (extra := _extra_capability(node, facts)) is not None:
                add(extra[0], node.lineno, extra[1], atom_name, declared)
    return sorted(found.values(), key=lambda use: (use.path, use.line, use.capability, use.what))


def capability_map(diff: DiffAtoms, plan: Plan, worktree_contracts: Mapping[str, tuple[AtomEffect, ...] | None]
                   ) -> tuple[list[CapabilityUse], dict[str, str]]:
    """The capability map of the diff's changed non-test Python files (see the module docstring), and the files
    not read with why. ``worktree_contracts`` maps each changed atom's qualified name to its declared effects (None:
    undeclared)."""
    plan_effects = frozenset(effect for step in plan.steps for atom in step.atoms for effect in atom.effects)
    uses: list[CapabilityUse] = []
    unread: dict[str, str] = {}
    for file in diff.files:
        if file.problem is not None and not file.source:
            unread[file.path] = file.problem
            continue
        try:
            facts = module_facts(file.source, filename=file.path)
        except (SyntaxError, ValueError, RecursionError) as error:
            unread[file.path] = f"not parsed: {error}"
            continue
        uses.extend(_file_map(file, facts, atoms=worktree_contracts, plan_effects=plan_effects))
    return uses, unread


# ─── bandit ────────────────────────────────────────────────────────────────────────────────────────


class BanditUnavailable(Exception):
    """bandit could not be run or did not answer; ``str()`` is one line naming why and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BanditFinding:
    path: str
    line: int
    lines: tuple[int, ...]
    severity: str
    confidence: str
    test_id: str
    text: str

    def describe(self) -> str:
        return f"bandit {self.test_id} ({self.severity.lower()} severity) at {self.path}:{self.line}: {self.text}"

    def to_evidence(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "lines": list(self.lines), "severity": self.severity,
                "confidence": self.confidence, "test_id": self.test_id, "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class BanditReport:
    argv: tuple[str, ...]
    version: str
    findings: tuple[BanditFinding, ...]


def _bandit_fix(python: str) -> str:
    return (f"bandit is not installed for codeflux's interpreter {python}: reinstall codeflux with its dependencies "
            "(`pip install 'bandit>=1.7,<2'` into codeflux's environment; in a checkout, `cmd/codeflux-dev setup`)")


def run_bandit(sources: Mapping[str, str], *, python: str | None = None) -> BanditReport:
    """bandit's findings on ``sources`` (repository-relative path → text; see the module docstring), run with
    ``python`` (default: codeflux's own interpreter). :class:`BanditUnavailable` when it cannot answer."""
    interpreter = python or sys.executable
    names = {f"f{index:04d}.py": path for index, path in enumerate(sorted(sources))}
    with tempfile.TemporaryDirectory(prefix="codeflux-bandit-") as scratch, tempfile.TemporaryFile() as output, \
            tempfile.TemporaryFile() as errors:
        for name, path in names.items():
            Path(scratch, name).write_text(sources[path], encoding="utf-8")
        argv = (interpreter, "-m", "bandit", "-f", "json", "-q", "--ignore-nosec", *names)
        try:
            completed = subprocess.run(  # codeflux's own interpreter and tool over copies; no shell, no repository code
                argv, stdin=subprocess.DEVNULL, stdout=output, stderr=errors, cwd=scratch,
                env={"HOME": scratch, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"},
                timeout=BANDIT_TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired as error:
            raise BanditUnavailable(f"bandit did not answer within {BANDIT_TIMEOUT_SECONDS:g} s") from error
        except OSError as error:
            raise BanditUnavailable(f"{interpreter} could not be started to run bandit "
                                    f"({error.strerror or 'error'}); {_bandit_fix(interpreter)}") from error
        errors.seek(0)
        stderr = errors.read(64 * 1024).decode("utf-8", "replace")
        if "No module named bandit" in stderr:
            raise BanditUnavailable(_bandit_fix(interpreter))
        if completed.returncode not in (0, 1):
            raise BanditUnavailable(f"bandit exited {completed.returncode} without a report: "
                                    f"{' '.join(stderr.strip().splitlines()[-1:])[:300]}")
        if output.tell() > _MAX_OUTPUT_BYTES:
            raise BanditUnavailable("bandit's report is too large")
        output.seek(0)
        data = output.read(_MAX_OUTPUT_BYTES)
    version = "unknown"
    if python is None:
        try:
            version = importlib.metadata.version("bandit")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
    return BanditReport(argv=(interpreter, "-m", "bandit", "-f", "json", "-q", "--ignore-nosec", "<files>"),
                        version=version, findings=_bandit_findings(data, names))


def _bandit_findings(data: bytes, names: Mapping[str, str]) -> tuple[BanditFinding, ...]:
    """The findings of bandit's JSON report, their copies' names mapped back to repository paths."""
    try:
        report = json.loads(data)
    except ValueError as error:
        raise BanditUnavailable("bandit's report is not JSON") from error
    results = report.get("results") if isinstance(report, dict) else None
    if not isinstance(results, list):
        raise BanditUnavailable("bandit's report has no results list")
    findings: list[BanditFinding] = []
    for item in results:
        if not isinstance(item, dict) or not isinstance(item.get("line_number"), int):
            continue
        path = names.get(os.path.basename(str(item.get("filename", ""))))
        if path is None:
            continue
        span = item.get("line_range")
        lines = tuple(n for n in span if isinstance(n, int)) if isinstance(span, list) else ()
        findings.append(BanditFinding(
            path=path, line=int(item["line_number"]), lines=lines or (int(item["line_number"]),),
            severity=str(item.get("issue_severity", "")).upper(), confidence=str(item.get("issue_confidence", "")),
            test_id=str(item.get("test_id", "")), text=" ".join(str(item.get("issue_text", "")).split())[:300]))
    return tuple(findings)


# ─── the stage ─────────────────────────────────────────────────────────────────────────────────────


def _changed_files(assembly: StageResult) -> list[Mapping[str, object]]:
    files = assembly.evidence.get("files")
    return [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []


def evaluate_global_invariants(ports: PipelinePorts, assembly: StageResult, *, bandit_python: str | None = None
                               ) -> StageResult:
    """Stage 30 (see the module docstring) on assembly's diff; ``bandit_python`` runs bandit with another
    interpreter than codeflux's own (how a missing bandit is shown)."""
    task = ports.facts
    diff = atoms_of_diff(task.worktree, _changed_files(assembly))
    identity = assembly.evidence.get("diff_identity")
    base: dict[str, object] = {"diff_identity": identity if isinstance(identity, str) else None,
                               "effect_table_version": EFFECT_TABLE_VERSION, "capabilities_mapped": list(CAPABILITIES),
                               "not_examined": dict(sorted(diff.not_examined.items())), "not_proved": NOT_PROVED}
    readable = [file for file in diff.files if file.source]
    if not readable:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff changes no Python file outside tests: there is no "
                            "changed code whose capabilities to map", {**base, "capabilities": [], "findings": []})
    contracts = atom_contracts(task.worktree, diff.atoms, task.plan)
    declared = {c.atom.qualified_name: None if c.declaration is None else c.declaration.atom.effects
                for c in contracts}
    uses, unread = capability_map(diff, task.plan, declared)
    try:
        bandit = run_bandit({file.path: file.source for file in readable}, python=bandit_python)
    except BanditUnavailable as error:
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"bandit could not run: {error}", base)
    changed = {file.path: set(file.changed) for file in readable}
    high = [f for f in bandit.findings if f.severity == "HIGH" and changed.get(f.path, set()) & set(f.lines)]
    others = [f for f in bandit.findings if f not in high]
    undeclared = [use for use in uses if use.undeclared]
    findings = [f"undeclared {use.describe()}" for use in undeclared] + [finding.describe() for finding in high]
    evidence: dict[str, object] = {
        **base,
        "files": [file.path for file in readable], "not_read": unread,
        "declared": {name: None if effects is None else [e.value for e in effects] for name, effects in
                     declared.items()},
        "capabilities": [use.to_evidence() for use in uses[:_MAX_LISTED]], "capability_count": len(uses),
        "undeclared": [use.describe() for use in undeclared[:_MAX_LISTED]],
        "bandit": {"argv": list(bandit.argv), "version": bandit.version, "severity_failing": "HIGH",
                   "high_on_changed_lines": [f.to_evidence() for f in high[:_MAX_LISTED]],
                   "listed": [f.to_evidence() for f in others[:_MAX_LISTED]]},
        "findings": findings[:_MAX_LISTED],
    }
    kinds = sorted({use.capability for use in uses if not use.inside_package})
    seen = (f"{len(readable)} changed Python file(s) outside tests, {len(diff.atoms)} changed atom(s): capabilities "
            f"reached {', '.join(kinds) or 'none'}")
    if findings:
        shown = "; ".join(findings[:_SHOWN]) + ("; …" if len(findings) > _SHOWN else "")
        return stage_result(_STAGE, StageOutcome.FAILED, f"{seen}; {len(findings)} finding(s): {shown}"[:_MAX_TEXT],
                            evidence)
    return stage_result(_STAGE, StageOutcome.SATISFIED,
                        f"{seen}, each within the declared effects; bandit {bandit.version}: no high-severity finding "
                        f"on a changed line ({len(others)} other finding(s) listed)", evidence)
