"""Stage 7 atom-case-synthesis (non-gating): each atom's input ladder, derived from its contract, and whether the
repository's tests pass it an input on every rung.

1. **The ladder** (codeflux's interpreter, no repository code runs). Per parameter of each atom (``self``/``cls`` of
   a method aside), its type comes from the contract: the annotation the approved plan's declaration gives it
   (:func:`~codeflux.pipeline.contracts.matching_declaration`, the declared signature parsed), else the atom's own
   annotation in its syntax tree, else the type of a literal default. The annotation becomes a *kind*
   (:func:`kind_of_annotation`: ``int``, ``float``, ``bool``, ``str``, ``bytes``, ``Path``, ``list``/``tuple``/
   ``set``/``dict`` and their abstract and ``typing`` spellings with their item types, ``Optional``/``Union``/``|``,
   ``Literal`` by its values' types, ``Callable``, any other class by name); ``Any``, ``object``, a type variable
   or no type at all gives no ladder (the parameter is listed, not judged). The kind's rungs — typical,
   degenerate/empty, boundary, large, wrong-type, pathological, as far as the kind has them — and the rules that
   put a value on each are :mod:`codeflux.pipeline.case_ladder`'s (version
   :data:`~codeflux.pipeline.case_ladder.RULES_VERSION`), with codeflux's own examples of every rung in the evidence.
   Those examples are never run: they show what a rung means, and only the repository's tests count.
2. **What the tests pass** (in the task's worker, confined). The tests the attempt's coverage map
   (:func:`~codeflux.pipeline.atom_coverage.atom_coverage`, shared with 8, 9, 11 and 13) saw executing an atom's
   body and passing run once more — only those, no extra whole-suite run — with the test command's interpreter:
   ``<python> -c LADDER_SCRIPT <job> -- -p no:cacheprovider -p no:randomly <node ids>``
   (:func:`ladder_argv`; the script is :mod:`~codeflux.pipeline.case_ladder`'s own text). Its profile hook is
   limited to the atoms' code objects; each call of an atom while a test runs (directly or through other code; a
   direct recursive call not again) has each argument classified **in the box** by the same rules — values never
   leave it — and ``$TMPDIR/codeflux-checks/case-ladder.json`` holds per atom, parameter and rung the number of
   calls and up to three tests, which the coordinator reads bounded and removes. The run follows the test command's
   decision (``covered_by``: no second card); Hypothesis, when importable there, keeps its database under
   ``$TMPDIR``. coverage.py is not needed for this run, but the coverage map is: without it the stage is
   ``blocked`` naming why (running the whole suite instead would add a full run to every attempt).

Gate: every rung of every judged parameter is exercised by at least one test; each unexercised rung is a finding
(with its rule and examples), one line per atom parameter. No atom, no atom with a parameter, or no parameter
with a ladder → ``skipped`` with the reason; no test command, no coverage map, or the run refused or without its
report → ``blocked``. Non-gating: a failure never sends work back; its findings join an attempt a send-back gate
starts (:mod:`codeflux.pipeline.findings`). Not proven: that the tests assert anything about the results on those
rungs, or that the rules' classes are the inputs that matter for this atom (a rung is a class of values, not a
case the contract names).
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any, Final

from codeflux.domain.atoms import Atom
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import atom_definition
from codeflux.pipeline.case_ladder import RULES_VERSION, examples_of, ladder_of, ladder_script, rule_of
from codeflux.pipeline.contracts import declarations_of, declared_function, matching_declaration
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "LADDER_REPORT_IN_TEMP",
    "NOT_PROVED",
    "ParameterLadder",
    "evaluate_atom_case_synthesis",
    "kind_of_annotation",
    "ladder_argv",
    "parameter_ladders",
]

_STAGE: Final = StageName.ATOM_CASE_SYNTHESIS
LADDER_REPORT_IN_TEMP: Final = f"{CHECKS_FOLDER}/case-ladder.json"
_MAX_REPORT_BYTES: Final = 4 * 1024 * 1024
_MAX_ATOMS: Final = 200
_MAX_TESTS: Final = 500
_MAX_PARAMETERS: Final = 40
_TAIL_LINES: Final = 8
NOT_PROVED: Final = (
    "that the tests assert anything about the atom's result on a rung, or that the rules' classes are the inputs "
    "that matter for this atom (a rung is a class of values, not a case the contract names); codeflux's own "
    "examples are shown, never run, and never count"
)

_ANY: Final[dict[str, Any]] = {"kind": "any"}
_NAMES: Final[Mapping[str, str]] = {
    "int": "int", "float": "float", "bool": "bool", "str": "str", "bytes": "bytes", "bytearray": "bytes",
    "memoryview": "bytes", "list": "list", "List": "list", "MutableSequence": "list", "tuple": "tuple",
    "Tuple": "tuple", "set": "set", "Set": "set", "frozenset": "set", "FrozenSet": "set", "AbstractSet": "set",
    "MutableSet": "set", "dict": "dict", "Dict": "dict", "Mapping": "dict", "MutableMapping": "dict",
    "OrderedDict": "dict", "defaultdict": "dict", "DefaultDict": "dict", "Counter": "dict",
    "Sequence": "sequence", "Collection": "sequence", "Iterable": "iterable", "Iterator": "iterable",
    "Generator": "iterable", "Path": "path", "PurePath": "path", "PosixPath": "path", "PurePosixPath": "path",
    "WindowsPath": "path", "PureWindowsPath": "path", "PathLike": "path", "None": "none", "NoneType": "none",
    "Callable": "callable", "Any": "any", "object": "any",
}
_UNWRAPPED: Final = frozenset({"Annotated", "Final", "Required", "NotRequired", "ReadOnly"})


def _dotted_tail(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _union(members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    flat: list[dict[str, Any]] = []
    for member in members:
        for part in member["of"] if member.get("kind") == "union" else [member]:
            if part.get("kind") == "any":
                return dict(_ANY)
            if part not in flat:
                flat.append(part)
    return flat[0] if len(flat) == 1 else {"kind": "union", "of": flat}


def _literal_kind(node: ast.expr) -> dict[str, Any]:
    values = node.elts if isinstance(node, ast.Tuple) else [node]
    kinds = []
    for value in values:
        if not isinstance(value, ast.Constant):
            return dict(_ANY)
        kinds.append({"kind": "none"} if value.value is None else
                     {"kind": _NAMES.get(type(value.value).__name__, "any")})
    return _union(kinds)


def _subscript_kind(node: ast.Subscript, type_variables: frozenset[str]) -> dict[str, Any]:
    base = _dotted_tail(node.value) or ""
    arguments = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if base in _UNWRAPPED:
        return _kind(arguments[0], type_variables)
    if base == "Optional":
        return _union([_kind(arguments[0], type_variables), {"kind": "none"}])
    if base == "Union":
        return _union([_kind(argument, type_variables) for argument in arguments])
    if base == "Literal":
        return _literal_kind(node.slice)
    name = _NAMES.get(base)
    if name in ("list", "set", "sequence", "iterable"):
        return {"kind": name, "item": _kind(arguments[0], type_variables)}
    if name == "tuple":
        items = [argument for argument in arguments if not (isinstance(argument, ast.Constant)
                                                           and argument.value is Ellipsis)]
        return {"kind": "tuple", "item": _union([_kind(item, type_variables) for item in items]) if items else _ANY}
    if name == "dict":
        key = _kind(arguments[0], type_variables)
        value = _kind(arguments[1], type_variables) if len(arguments) > 1 else dict(_ANY)
        return {"kind": "dict", "key": key, "value": value}
    if name is not None:
        return {"kind": name}
    return {"kind": "instance", "name": base} if base and base not in type_variables else dict(_ANY)


def _kind(node: ast.expr, type_variables: frozenset[str]) -> dict[str, Any]:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return {"kind": "none"}
        if isinstance(node.value, str):
            return kind_of_annotation(node.value, type_variables=type_variables)
        return dict(_ANY)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_kind(node.left, type_variables), _kind(node.right, type_variables)])
    if isinstance(node, ast.Subscript):
        return _subscript_kind(node, type_variables)
    name = _dotted_tail(node)
    if name is None or name in type_variables:
        return dict(_ANY)
    mapped = _NAMES.get(name)
    if mapped is not None:
        return {"kind": mapped}
    return {"kind": "instance", "name": name}


def kind_of_annotation(text: str, *, type_variables: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The kind (:mod:`codeflux.pipeline.case_ladder`) of an annotation's source text; ``any`` when it names no
    type codeflux derives a ladder for (``Any``, ``object``, a type variable, text that does not parse)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return dict(_ANY)
    return _kind(tree.body, type_variables)


def _default_kind(node: ast.expr | None) -> dict[str, Any] | None:
    """The kind a literal default implies (None: no default, or not a literal of a kind with a ladder)."""
    if node is None:
        return None
    literal = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set", ast.Dict: "dict"}.get(type(node))
    if literal is not None:
        return {"kind": literal}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    if isinstance(node, ast.Constant) and node.value is not None:
        name = _NAMES.get(type(node.value).__name__)
        return {"kind": name} if name not in (None, "any") else None
    return None


_TYPE_VARIABLE: Final = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*(?:[\w.]+\.)?(?:TypeVar|ParamSpec|"
                                   r"TypeVarTuple|NewType)\(", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParameterLadder:
    """One parameter: its name, how it is passed (``""``, ``*``, ``**``), its annotation and where it came from,
    and its kind (``any``: no ladder)."""

    name: str
    star: str
    annotation: str | None
    annotation_from: str
    kind: dict[str, Any]

    @property
    def rungs(self) -> tuple[str, ...]:
        return ladder_of(self.kind)

    def to_job(self) -> dict[str, object]:
        return {"name": self.name, "star": self.star, "kind": self.kind}


def _declared_annotations(signature: str, name: str) -> dict[str, str]:
    """Each parameter's annotation text in a declared signature (``def f(a: int) -> int``, ``f(a: int)``,
    ``(a: int)``); empty when it does not parse."""
    function = declared_function(signature, name)
    if function is None:
        return {}
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
             *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
    return {argument.arg: ast.unparse(argument.annotation) for argument in every if argument.annotation is not None}


def _listed(node: ast.FunctionDef | ast.AsyncFunctionDef, atom: Atom
            ) -> list[tuple[ast.arg, str, ast.expr | None]]:
    """The parameters with how they are passed and their default (``self``/``cls`` of a method aside)."""
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    listed: list[tuple[ast.arg, str, ast.expr | None]] = list(zip(positional, [""] * len(positional), defaults,
                                                                  strict=True))
    if arguments.vararg is not None:
        listed.append((arguments.vararg, "*", None))
    listed.extend(zip(arguments.kwonlyargs, [""] * len(arguments.kwonlyargs), arguments.kw_defaults, strict=True))
    if arguments.kwarg is not None:
        listed.append((arguments.kwarg, "**", None))
    static = any(_dotted_tail(d) == "staticmethod" for d in node.decorator_list)
    if atom.is_method and not static:
        listed = [item for item in listed if item[0].arg not in ("self", "cls")]
    return listed


def parameter_ladders(source: str, atom: Atom, declared: str | None, declared_by: str = "the plan"
                      ) -> tuple[ParameterLadder, ...] | None:
    """Each parameter of ``atom`` with its ladder's kind (see the module docstring); ``declared`` is the plan's
    declared signature, if any. None: its definition was not found in ``source``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node = atom_definition(tree, atom)
    if node is None:
        return None
    type_variables = frozenset(_TYPE_VARIABLE.findall(source))
    from_plan = _declared_annotations(declared, atom.name) if declared else {}
    ladders: list[ParameterLadder] = []
    for argument, star, default in _listed(node, atom)[:_MAX_PARAMETERS]:
        annotation: str | None = from_plan.get(argument.arg)
        origin = declared_by
        if annotation is None and argument.annotation is not None:
            annotation, origin = ast.unparse(argument.annotation), "the code"
        if annotation is not None:
            kind = kind_of_annotation(annotation, type_variables=type_variables)
        else:
            implied = _default_kind(default)
            kind, origin = (implied, "its literal default") if implied is not None else (dict(_ANY), "none")
        ladders.append(ParameterLadder(name=argument.arg, star=star, annotation=annotation, annotation_from=origin,
                                       kind=kind))
    return tuple(ladders)


def ladder_argv(interpreter: str, job: Mapping[str, object], tests: Sequence[str]) -> tuple[str, ...]:
    """The exact recording run (see the module docstring)."""
    return (interpreter, "-c", _script(), json.dumps(job, sort_keys=True, separators=(",", ":")), "--",
            "-p", "no:cacheprovider", "-p", "no:randomly", *tests)


@cache
def _script() -> str:
    return ladder_script()


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(argv).replace(shlex.quote(_script()), "\"$CODEFLUX_CASE_LADDER_SCRIPT\"")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Judged:
    atom: Atom
    parameters: tuple[ParameterLadder, ...]
    tests: tuple[str, ...]

    @property
    def laddered(self) -> tuple[ParameterLadder, ...]:
        return tuple(parameter for parameter in self.parameters if parameter.rungs)

    def to_job(self) -> dict[str, object]:
        return {"key": self.atom.qualified_name, "path": self.atom.path, "line": self.atom.first_line,
                "name": self.atom.name, "params": [parameter.to_job() for parameter in self.laddered]}


def _atoms_of(facts: AtomFacts) -> tuple[list[_Judged], list[dict[str, object]]]:
    """The atoms with a ladder to judge (their tests filled in later), and the entries of those without one."""
    declarations = declarations_of(facts.ports.facts.plan)
    sources = {file.path: file.source for file in facts.diff.files}
    judged: list[_Judged] = []
    others: list[dict[str, object]] = []
    for atom in facts.diff.atoms[:_MAX_ATOMS]:
        base: dict[str, object] = {"qualified_name": atom.qualified_name, "path": atom.path}
        declaration = matching_declaration(atom, declarations)
        declared = declaration.atom.signature if declaration is not None else None
        origin = f"plan step {declaration.step}" if declaration is not None else "the plan"
        parameters = parameter_ladders(sources.get(atom.path, ""), atom, declared, origin)
        if parameters is None:
            others.append({**base, "not_examined": "its definition was not found in the changed file"})
        elif not parameters:
            others.append({**base, "parameters": [], "skipped": "takes no parameter other than self/cls: there is "
                                                                 "no input to derive a ladder for"})
        elif not any(parameter.rungs for parameter in parameters):
            others.append({**base, "parameters": [_parameter_evidence(p, None) for p in parameters],
                           "skipped": "no parameter has a type codeflux derives a ladder from (Any, object, a type "
                                      "variable, or no annotation and no literal default)"})
        else:
            judged.append(_Judged(atom=atom, parameters=parameters, tests=()))
    return judged, others


def _parameter_evidence(parameter: ParameterLadder, recorded: Mapping[str, Any] | None) -> dict[str, object]:
    entry: dict[str, object] = {"name": (parameter.star + parameter.name), "annotation": parameter.annotation,
                                "annotation_from": parameter.annotation_from, "kind": parameter.kind}
    if not parameter.rungs:
        entry["no_ladder"] = "no type codeflux derives a ladder from (Any, object, a type variable, or no " \
                             "annotation and no literal default)"
        return entry
    rungs = []
    for rung in parameter.rungs:
        seen = (recorded or {}).get(rung) or {}
        rungs.append({"rung": rung, "rule": rule_of(parameter.kind, rung),
                      "examples": list(examples_of(parameter.kind, rung)),
                      "calls": int(seen.get("count", 0)), "tests": list(seen.get("tests", []))})
    entry["rungs"] = rungs
    entry["unexercised"] = [item["rung"] for item in rungs if not item["calls"]]
    return entry


def _recorded(document: Mapping[str, object], judged: Sequence[_Judged]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per atom and parameter, the rungs the box reported (validated: known atoms, parameters and rungs only)."""
    atoms = document.get("atoms")
    found: dict[str, dict[str, dict[str, Any]]] = {}
    if not isinstance(atoms, dict):
        return found
    for item in judged:
        entry = atoms.get(item.atom.qualified_name)
        params = entry.get("params") if isinstance(entry, dict) else None
        if not isinstance(params, dict):
            continue
        for parameter in item.laddered:
            rungs = params.get(parameter.name)
            if not isinstance(rungs, dict):
                continue
            kept: dict[str, Any] = {}
            for rung, seen in rungs.items():
                if rung not in parameter.rungs or not isinstance(seen, dict):
                    continue
                count = seen.get("count")
                tests = seen.get("tests")
                kept[rung] = {"count": count if isinstance(count, int) and count > 0 else 0,
                              "tests": [str(test)[:300] for test in tests[:3]] if isinstance(tests, list) else []}
            found.setdefault(item.atom.qualified_name, {})[parameter.name] = kept
    return found


def _examples_or_rule(parameter: ParameterLadder, rung: str) -> str:
    return ", ".join(examples_of(parameter.kind, rung)[:2]) or rule_of(parameter.kind, rung)


def _finding(atom: Atom, parameter: ParameterLadder, missing: Sequence[str], *, covered: bool) -> str:
    where = f"{atom.qualified_name} ({atom.path}:{atom.first_line}) parameter {parameter.star}{parameter.name}"
    shown = "; ".join(f"{rung} (e.g. {_examples_or_rule(parameter, rung)})" for rung in missing)
    lead = "no test passes it an input on rung(s)" if covered else "no passing test executes the atom, so no test " \
                                                                  "passes it an input on rung(s)"
    return f"{where}: {lead} {shown}"


def evaluate_atom_case_synthesis(facts: AtomFacts) -> StageResult:
    """Stage 7 (see the module docstring)."""
    if not facts.diff.atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom to derive input cases for", {"atoms": []})
    judged, others = _atoms_of(facts)
    base: dict[str, object] = {"rules_version": RULES_VERSION, "not_proved": NOT_PROVED,
                               "diff_identity": facts.diff_identity, "generated_cases_run": 0}
    if not judged:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "no atom has a parameter with a type codeflux derives an "
                            "input ladder from (atoms without parameters, or only Any/object/type variables/"
                            "unannotated parameters)", {**base, "atoms": others})
    measured = atom_coverage(facts)
    usable = measured.usable(to="find the atoms' tests and record the arguments they pass")
    if isinstance(usable, str):
        return stage_result(_STAGE, StageOutcome.BLOCKED, usable, {})  # a blocked row carries no evidence
    command, tools, coverage = usable
    worktree = facts.ports.facts.worktree.path
    judged = [_Judged(atom=item.atom, parameters=item.parameters, tests=tests_of_atom(worktree, item.atom, coverage))
              for item in judged]
    tests = sorted({test for item in judged for test in item.tests})[:_MAX_TESTS]
    run_evidence: dict[str, object] = {"tests": tests, "coverage_request_id": coverage.evidence.get("request_id")}
    recorded: dict[str, dict[str, dict[str, Any]]] = {}
    if tests:
        outcome = _record(facts, interpreter=tools.interpreter, covered_by=command.argv, judged=judged, tests=tests)
        if isinstance(outcome, str):
            return stage_result(_STAGE, StageOutcome.BLOCKED, outcome, {})
        recorded, details = outcome
        run_evidence.update(details)
    return _judgement(judged, others, recorded, {**base, **run_evidence})


def _record(facts: AtomFacts, *, interpreter: str, covered_by: tuple[str, ...], judged: Sequence[_Judged],
            tests: Sequence[str]) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, object]] | str:
    ports = facts.ports
    temp = ports.commands.temp_directory(ports.facts.task_id)
    report = temp / PurePosixPath(LADDER_REPORT_IN_TEMP)
    shutil.rmtree(report.parent, ignore_errors=True)  # never through a link: rmtree refuses one
    job = {"atoms": [item.to_job() for item in judged if item.tests], "max_tests": 3}
    argv = ladder_argv(interpreter, job, tests)
    try:
        run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=facts.attempt, covered_by=covered_by)
        if not run.ran:
            return f"the atoms' tests were not run to record their arguments: {run.refusal}"
        details: dict[str, object] = {"command": _shown(argv), "script_chars": len(_script()),
                                      "request_id": run.request_id, "exit_code": run.exit_code, "state": run.state}
        document = read_box_json(report, max_bytes=_MAX_REPORT_BYTES)
        if document is None:
            tail = (run.stderr or run.stdout).strip().splitlines()[-_TAIL_LINES:]
            shown = " | ".join(line[:200] for line in tail)
            return (f"the recording run ended {run.state} (exit {run.exit_code}) without its report: the arguments "
                    f"were not recorded{': ' + shown if shown else ''}")
        outcomes = document.get("outcomes")
        details.update(pytest=str(document.get("pytest", "")), rules_version_in_box=str(document.get("rules_version")),
                       outcomes={str(k): str(v) for k, v in outcomes.items()} if isinstance(outcomes, dict) else {})
        return _recorded(document, judged), details
    finally:
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)


def _judgement(judged: Sequence[_Judged], others: list[dict[str, object]],
               recorded: Mapping[str, Mapping[str, Mapping[str, Any]]], evidence: dict[str, object]) -> StageResult:
    findings: list[str] = []
    entries: list[dict[str, object]] = []
    rung_total = rung_exercised = 0
    for item in judged:
        atom_findings: list[str] = []
        parameters = []
        for parameter in item.parameters:
            shown = _parameter_evidence(parameter, recorded.get(item.atom.qualified_name, {}).get(parameter.name))
            parameters.append(shown)
            missing = shown.get("unexercised")
            if not isinstance(missing, list):
                continue
            rung_total += len(parameter.rungs)
            rung_exercised += len(parameter.rungs) - len(missing)
            if missing:
                atom_findings.append(_finding(item.atom, parameter, missing, covered=bool(item.tests)))
        findings.extend(atom_findings)
        entries.append({"qualified_name": item.atom.qualified_name, "path": item.atom.path,
                        "tests": list(item.tests), "parameters": parameters, "findings": atom_findings})
    evidence.update(atoms=[*entries, *others], findings=findings[:200], finding_count=len(findings))
    said = (f"{len(judged)} atom(s) with an input ladder: {rung_exercised} of {rung_total} rung(s) exercised by the "
            f"repository's tests (arguments recorded in the box, classified by rules v{RULES_VERSION})")
    if findings:
        return stage_result(_STAGE, StageOutcome.FAILED, "; ".join([said, *findings[:5]])[:2000], evidence)
    return stage_result(_STAGE, StageOutcome.SATISFIED, said, evidence)
