"""Stage 7 atom-case-synthesis (non-gating): each atom's input ladder, derived from its contract, examples of each
rung drawn with Hypothesis in the task's box, and whether the repository's tests pass it an input on every rung.

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
   :data:`~codeflux.pipeline.case_ladder.RULES_VERSION`).
2. **One run in the box** (the task's worker, confined). The tests the attempt's coverage map
   (:func:`~codeflux.pipeline.atom_coverage.atom_coverage`, shared with 8, 9, 11 and 13) saw executing an atom's
   body and passing run once more — only those, no extra whole-suite run — with the test command's interpreter:
   ``<python> -c LADDER_LOADER_SCRIPT <script sha256> <job sha256> <overlay|->`` (:func:`ladder_argv`). The script
   (:func:`~codeflux.pipeline.case_ladder.ladder_script`, :mod:`~codeflux.pipeline.case_ladder`'s own text) and the
   job (:func:`ladder_job`: the atoms, the seed, pytest's arguments ``-p no:cacheprovider -p no:randomly <node
   ids>``) are written into a fresh ``$TMPDIR/codeflux-checks`` (:func:`write_ladder_files`) — too long for an argv —
   and run only when their digests are the argv's. Its profile hook is limited to the atoms' code objects; each call
   of an atom while a test runs (directly or through other code; a direct recursive call not again) has each
   argument classified **in the box** by the same rules — values never leave it — and
   ``$TMPDIR/codeflux-checks/case-ladder.json`` holds per atom, parameter and rung the number of calls and up to
   three tests. The run follows the test command's decision (``covered_by``: no second card). coverage.py is not
   needed for this run, but the coverage map is: without it the stage is ``blocked`` naming why (running the whole
   suite instead would add a full run to every attempt).
3. **The examples**, drawn in the same run after the tests (:func:`~codeflux.pipeline.case_ladder.draw_examples`)
   by Hypothesis — the repository environment's, else codeflux's tool overlay's
   (:func:`~codeflux.pipeline.tool_overlay.resolve_tools`, as stage 12; the overlay is appended after
   site-packages) — from the imported atom's real annotations (else the contract's kind): ``st.from_type`` for the
   typical rung, codeflux's own strategies for the others, each value classified by the same rules and kept only on
   its rung, with the seed :func:`seed_of` the diff (recorded; ``seed`` replaces it), no example database, bounded
   in count, length and time. ``$TMPDIR/codeflux-checks/case-examples.json`` is read as untrusted data
   (:func:`drawn_examples`). Each rung's evidence says where its examples came from; where nothing was drawn —
   Hypothesis missing and not installable, its strategy failing, no value landing on the rung — codeflux's fixed
   examples (:func:`~codeflux.pipeline.case_ladder.examples_of`) stand in, saying why, and the stage works as before.
   With no test reaching any atom the run only draws; without Hypothesis too, nothing runs. Hypothesis is never
   imported here.

Gate: every rung of every judged parameter is exercised by at least one test; each unexercised rung is a finding
(with two of its examples), one line per atom parameter. No atom, no atom with a parameter, or no parameter
with a ladder → ``skipped`` with the reason; no test command, no coverage map, or the recording run refused or
without its report → ``blocked``. Non-gating: a failure never sends work back; its findings join an attempt a
send-back gate starts (:mod:`codeflux.pipeline.findings`). Not proven: that the tests assert anything about the
results on those rungs, or that the rules' classes are the inputs that matter for this atom (a rung is a class of
values, not a case the contract names); the examples are never run and never count.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, Final

from codeflux.domain.atoms import Atom
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import atom_definition
from codeflux.pipeline.case_ladder import (
    DRAW_KEEP,
    DRAW_MAX_EXAMPLES,
    DRAW_PARAMETER_S,
    DRAW_TOTAL_S,
    LADDER_JOB_IN_CHECKS,
    LADDER_LOADER_SCRIPT,
    LADDER_SCRIPT_IN_CHECKS,
    RULES_VERSION,
    examples_of,
    ladder_of,
    ladder_script,
    rule_of,
)
from codeflux.pipeline.contracts import declarations_of, declared_function, matching_declaration
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.tool_overlay import HYPOTHESIS, ToolResolution, resolve_tools

__all__ = [
    "EXAMPLES_REPORT_IN_TEMP",
    "LADDER_REPORT_IN_TEMP",
    "NOT_PROVED",
    "DrawnExamples",
    "ParameterLadder",
    "drawn_examples",
    "evaluate_atom_case_synthesis",
    "job_text",
    "kind_of_annotation",
    "ladder_argv",
    "ladder_job",
    "parameter_ladders",
    "seed_of",
    "write_ladder_files",
]

_STAGE: Final = StageName.ATOM_CASE_SYNTHESIS
LADDER_REPORT_IN_TEMP: Final = f"{CHECKS_FOLDER}/case-ladder.json"
EXAMPLES_REPORT_IN_TEMP: Final = f"{CHECKS_FOLDER}/case-examples.json"
_MAX_EXAMPLES_BYTES: Final = 2 * 1024 * 1024
_EXAMPLE_CHARS: Final = 80
_VERSION: Final = re.compile(r"[A-Za-z0-9_.+!-]{1,40}")
_MAX_REPORT_BYTES: Final = 4 * 1024 * 1024
_MAX_ATOMS: Final = 200
_MAX_TESTS: Final = 500
_MAX_PARAMETERS: Final = 40
_TAIL_LINES: Final = 8
NOT_PROVED: Final = (
    "that the tests assert anything about the atom's result on a rung, or that the rules' classes are the inputs "
    "that matter for this atom (a rung is a class of values, not a case the contract names); the examples "
    "(drawn with Hypothesis in the box, or codeflux's fixed ones) are shown, never run, and never count"
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


def ladder_argv(interpreter: str, overlay_site: Path | None, job: str) -> tuple[str, ...]:
    """The exact run in the box (see the module docstring): the loader, the SHA-256 of the script and of the ``job``
    (:func:`job_text`) and codeflux's tool overlay to append after site-packages (None: ``-``)."""
    return (interpreter, "-c", LADDER_LOADER_SCRIPT, _script_sha256(), hashlib.sha256(job.encode()).hexdigest(),
            "-" if overlay_site is None else str(overlay_site))


def job_text(job: Mapping[str, object]) -> str:
    """The job as the file the box reads (its SHA-256 is in the argv)."""
    return json.dumps(job, sort_keys=True, separators=(",", ":"))


def ladder_job(judged_atoms: Sequence[Mapping[str, object]], tests: Sequence[str], *, draw: bool, seed: int
               ) -> dict[str, object]:
    """The run's job (see the module docstring): ``tests`` are recorded when there are any (none: it only draws)."""
    return {"atoms": list(judged_atoms), "max_tests": 3, "record": bool(tests), "draw": draw, "seed": seed,
            "pytest_args": ["-p", "no:cacheprovider", "-p", "no:randomly", *tests] if tests else []}


def write_ladder_files(temp: Path, job: str) -> bool:
    """Write the script and the ``job`` (:func:`job_text`) into the task's fresh ``codeflux-checks`` folder (False:
    it could not be made — a link or something else is in its place)."""
    checks = temp / CHECKS_FOLDER
    shutil.rmtree(checks, ignore_errors=True)  # never through a link: rmtree refuses one
    if checks.exists() or checks.is_symlink():
        return False
    checks.mkdir(parents=True)
    (checks / LADDER_SCRIPT_IN_CHECKS).write_text(_script(), encoding="utf-8")
    (checks / LADDER_JOB_IN_CHECKS).write_text(job, encoding="utf-8")
    return True


def seed_of(diff_identity: str | None) -> int:
    """The examples' seed when none is given: the first 32 bits of the SHA-256 of the diff's identity — the same
    diff draws the same examples, another diff others."""
    return int(hashlib.sha256((diff_identity or "").encode()).hexdigest()[:8], 16)


@cache
def _script() -> str:
    return ladder_script()


@cache
def _script_sha256() -> str:
    return hashlib.sha256(_script().encode("utf-8")).hexdigest()


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(argv).replace(shlex.quote(LADDER_LOADER_SCRIPT), "\"$CODEFLUX_CASE_LADDER_LOADER\"")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Judged:
    atom: Atom
    parameters: tuple[ParameterLadder, ...]
    tests: tuple[str, ...]

    @property
    def laddered(self) -> tuple[ParameterLadder, ...]:
        return tuple(parameter for parameter in self.parameters if parameter.rungs)

    def to_job(self) -> dict[str, object]:
        module = self.atom.qualified_name.removesuffix("." + self.atom.local_name)
        return {"key": self.atom.qualified_name, "path": self.atom.path, "line": self.atom.first_line,
                "name": self.atom.name, "module": module, "local": self.atom.local_name,
                "params": [parameter.to_job() for parameter in self.laddered]}


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


@dataclass(frozen=True, slots=True, kw_only=True)
class DrawnExamples:
    """What the box drew (:func:`drawn_examples`): Hypothesis's version and the seed, per atom and parameter what
    it drew — or, with ``why`` (short: each rung's evidence repeats it) and ``detail``, why nothing was drawn
    (codeflux's fixed examples stand in)."""

    hypothesis: str | None = None
    seed: int | None = None
    atoms: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None
    problems: Mapping[str, str] | None = None
    why: str | None = None
    detail: str | None = None

    def parameter(self, atom: str, name: str) -> Mapping[str, Any] | None:
        return (self.atoms or {}).get(atom, {}).get(name)

    def to_evidence(self, provided_by: str | None) -> dict[str, object]:
        if self.hypothesis is None:
            return {"source": "codeflux's fixed examples", "why": self.why, "detail": self.detail}
        return {"source": "hypothesis", "hypothesis": self.hypothesis, "provided_by": provided_by, "seed": self.seed,
                "max_examples": DRAW_MAX_EXAMPLES, "kept_per_rung": DRAW_KEEP, "parameter_budget_s": DRAW_PARAMETER_S,
                "total_budget_s": DRAW_TOTAL_S, "database": None, "problems": dict(self.problems or {})}


def _bounded(value: object, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _drawn_rung(seen: object) -> dict[str, Any] | None:
    if not isinstance(seen, dict):
        return None
    examples = seen.get("examples")
    kept: dict[str, Any] = {
        "examples": [text[:_EXAMPLE_CHARS] for text in examples[:DRAW_KEEP] if isinstance(text, str)]
        if isinstance(examples, list) else [],
        "source": "from_type" if seen.get("source") == "from_type" else "codeflux",
        "strategy": _bounded(seen.get("strategy"), 200), "drawn": _count(seen.get("drawn")),
        "dropped": _count(seen.get("dropped"))}
    if (problem := _bounded(seen.get("problem"), 300)) is not None:
        kept["problem"] = problem
    return kept


def _drawn_parameter(entry: object, rungs: Sequence[str]) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        return None
    found: dict[str, Any] = {"hint": _bounded(entry.get("hint"), 120),
                             "hint_from": "annotation" if entry.get("hint_from") == "annotation" else "contract"}
    for field in ("hint_problem", "problem"):
        if (text := _bounded(entry.get(field), 300)) is not None:
            found[field] = text
    drawn = entry.get("rungs")
    found["rungs"] = {rung: kept for rung in rungs
                      if (kept := _drawn_rung(drawn.get(rung) if isinstance(drawn, dict) else None)) is not None}
    return found


def drawn_examples(document: Mapping[str, object] | None, expected: Mapping[str, Mapping[str, Sequence[str]]],
                   *, missing: str, detail: str | None = None) -> DrawnExamples:
    """The box's ``case-examples.json`` read as untrusted data: only the ``expected`` atoms, parameters and rungs
    (atom key → parameter → its rungs), every text bounded, every count a non-negative int; ``missing`` says why
    nothing was drawn when there is no document (``detail``: more of it)."""
    if document is None:
        return DrawnExamples(why=missing, detail=detail)
    version = document.get("hypothesis")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        problem = _bounded(document.get("problem"), 300)
        return DrawnExamples(why=problem or "the box reported no Hypothesis version")
    seed = document.get("seed")
    atoms = document.get("atoms")
    found: dict[str, dict[str, Mapping[str, Any]]] = {}
    problems: dict[str, str] = {}
    for key, parameters in expected.items():
        entry = atoms.get(key) if isinstance(atoms, dict) else None
        if not isinstance(entry, dict):
            problems[key] = "not drawn (the box reported nothing for it)"
            continue
        if (problem := _bounded(entry.get("problem"), 300)) is not None:
            problems[key] = problem
        drawn = entry.get("params")
        for name, rungs in parameters.items():
            kept = _drawn_parameter(drawn.get(name) if isinstance(drawn, dict) else None, rungs)
            if kept is not None:
                found.setdefault(key, {})[name] = kept
    return DrawnExamples(hypothesis=version, seed=_count(seed), atoms=found, problems=problems)


def _rung_examples(parameter: ParameterLadder, rung: str, drawn: Mapping[str, Any] | None, meta: DrawnExamples,
                   atom_problem: str | None) -> dict[str, object]:
    """A rung's examples and where they came from: drawn by Hypothesis when the box kept any, else codeflux's."""
    seen = (drawn or {}).get("rungs", {}).get(rung)
    if seen is not None and seen["examples"]:
        origin = seen["strategy"] if seen["source"] == "from_type" else f"codeflux's strategy {seen['strategy']}"
        return {"examples": list(seen["examples"]),
                "examples_from": f"drawn by Hypothesis {meta.hypothesis} from {origin}, seed {meta.seed}",
                "drawn": seen["drawn"], "dropped": seen["dropped"]}
    fixed = list(examples_of(parameter.kind, rung))
    if meta.hypothesis is None:
        why = meta.why or "nothing was drawn"
    elif seen is None:
        why = (drawn or {}).get("problem") or atom_problem or "this rung was not drawn"
    elif "problem" in seen:
        why = f"drawing from {seen['strategy']} failed: {seen['problem']}" if seen["strategy"] else seen["problem"]
    else:
        why = f"none of the {seen['drawn']} value(s) drawn from {seen['strategy']} landed on this rung"
    entry: dict[str, object] = {"examples": fixed, "examples_from": f"codeflux's fixed examples ({why})"}
    if seen is not None:
        entry.update(drawn=seen["drawn"], dropped=seen["dropped"])
    return entry


def _parameter_evidence(parameter: ParameterLadder, recorded: Mapping[str, Any] | None,
                        drawn: Mapping[str, Any] | None = None, meta: DrawnExamples | None = None,
                        atom_problem: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"name": (parameter.star + parameter.name), "annotation": parameter.annotation,
                                "annotation_from": parameter.annotation_from, "kind": parameter.kind}
    if not parameter.rungs:
        entry["no_ladder"] = "no type codeflux derives a ladder from (Any, object, a type variable, or no " \
                             "annotation and no literal default)"
        return entry
    meta = meta or DrawnExamples(why="nothing was drawn")
    if drawn is not None:
        entry["drawn_from_type"] = drawn["hint"]
        entry["drawn_type_from"] = ("the atom's annotation (typing.get_type_hints)" if drawn["hint_from"] ==
                                    "annotation" else "the contract's kind")
        for field in ("hint_problem", "problem"):
            if field in drawn:
                entry[f"draw_{field}"] = drawn[field]
    rungs = []
    for rung in parameter.rungs:
        seen = (recorded or {}).get(rung) or {}
        rungs.append({"rung": rung, "rule": rule_of(parameter.kind, rung),
                      **_rung_examples(parameter, rung, drawn, meta, atom_problem),
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


def _examples_or_rule(rung: Mapping[str, Any]) -> str:
    examples = rung.get("examples")
    return ", ".join(examples[:2]) if isinstance(examples, list) and examples else str(rung.get("rule", ""))


def _finding(atom: Atom, parameter: ParameterLadder, missing: Sequence[Mapping[str, Any]], *, covered: bool) -> str:
    where = f"{atom.qualified_name} ({atom.path}:{atom.first_line}) parameter {parameter.star}{parameter.name}"
    shown = "; ".join(f"{rung['rung']} (e.g. {_examples_or_rule(rung)})" for rung in missing)
    lead = "no test passes it an input on rung(s)" if covered else "no passing test executes the atom, so no test " \
                                                                  "passes it an input on rung(s)"
    return f"{where}: {lead} {shown}"


def evaluate_atom_case_synthesis(facts: AtomFacts, *, seed: int | None = None) -> StageResult:
    """Stage 7 (see the module docstring); ``seed`` replaces the examples' seed (:func:`seed_of` the diff)."""
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
    hypothesis = resolve_tools(facts.ports, attempt=facts.attempt, interpreter=tools.interpreter,
                               test_argv=command.argv, tools=(HYPOTHESIS,), probes=facts.shared)
    chosen = seed_of(facts.diff_identity) if seed is None else seed
    outcome = _run_in_box(facts, hypothesis, covered_by=command.argv, judged=judged, tests=tests, seed=chosen)
    if isinstance(outcome, str):
        return stage_result(_STAGE, StageOutcome.BLOCKED, outcome, {})
    recorded, drawn, details = outcome
    run_evidence.update(details)
    provided_by = hypothesis.tools[0].provided_by if hypothesis.ready and hypothesis.tools else None
    run_evidence["examples"] = drawn.to_evidence(provided_by)
    return _judgement(judged, others, recorded, drawn, {**base, **run_evidence})


def _expected(judged: Sequence[_Judged]) -> dict[str, dict[str, tuple[str, ...]]]:
    return {item.atom.qualified_name: {parameter.name: parameter.rungs for parameter in item.laddered}
            for item in judged}


def _run_in_box(facts: AtomFacts, hypothesis: ToolResolution, *, covered_by: tuple[str, ...],
                judged: Sequence[_Judged], tests: Sequence[str], seed: int
                ) -> tuple[dict[str, dict[str, dict[str, Any]]], DrawnExamples, dict[str, object]] | str:
    """One run in the box: the tests recorded (when any reach an atom) and the examples drawn (when Hypothesis is
    there) — or, when the tests were to be recorded and were not, the blocked reason. Without tests a run that
    cannot draw (refused, no report) leaves codeflux's fixed examples, saying why; without either no run."""
    draw = hypothesis.ready
    unavailable = None if draw else DrawnExamples(why="Hypothesis is not available to the box",
                                                  detail=(hypothesis.blocked or "")[:600])
    if unavailable is not None and not tests:
        return {}, unavailable, {}
    ports = facts.ports
    temp = ports.commands.temp_directory(ports.facts.task_id)
    report = temp / PurePosixPath(LADDER_REPORT_IN_TEMP)
    job = job_text(ladder_job([item.to_job() for item in judged], tests, draw=draw, seed=seed))
    argv = ladder_argv(hypothesis.interpreter, hypothesis.overlay_site, job)
    try:
        if not write_ladder_files(temp, job):
            return f"the run's files could not be written: $TMPDIR/{CHECKS_FOLDER} is not a plain folder"
        run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=facts.attempt, covered_by=covered_by)
        details: dict[str, object] = {"command": _shown(argv), "script_chars": len(_script()),
                                      "script_sha256": _script_sha256(), "request_id": run.request_id,
                                      "exit_code": run.exit_code, "state": run.state}
        tail = " | ".join(line[:200] for line in (run.stderr or run.stdout).strip().splitlines()[-_TAIL_LINES:])
        if not run.ran:
            if tests:
                return f"the atoms' tests were not run to record their arguments: {run.refusal}"
            return {}, DrawnExamples(why="the drawing run was not run", detail=str(run.refusal)[:600]), {}
        drawn = unavailable or drawn_examples(
            read_box_json(temp / PurePosixPath(EXAMPLES_REPORT_IN_TEMP), max_bytes=_MAX_EXAMPLES_BYTES),
            _expected(judged), missing=f"the run ended {run.state} (exit {run.exit_code}) without the examples' report",
            detail=tail[:600] or None)
        if not tests:
            return {}, drawn, {**details, "drawing_only": True}
        document = read_box_json(report, max_bytes=_MAX_REPORT_BYTES)
        if document is None:
            return (f"the recording run ended {run.state} (exit {run.exit_code}) without its report: the arguments "
                    f"were not recorded{': ' + tail if tail else ''}")
        outcomes = document.get("outcomes")
        details.update(pytest=str(document.get("pytest", "")), rules_version_in_box=str(document.get("rules_version")),
                       outcomes={str(k): str(v) for k, v in outcomes.items()} if isinstance(outcomes, dict) else {})
        return _recorded(document, judged), drawn, details
    finally:
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)


def _judgement(judged: Sequence[_Judged], others: list[dict[str, object]],
               recorded: Mapping[str, Mapping[str, Mapping[str, Any]]], drawn: DrawnExamples,
               evidence: dict[str, object]) -> StageResult:
    findings: list[str] = []
    entries: list[dict[str, object]] = []
    rung_total = rung_exercised = 0
    for item in judged:
        atom_findings: list[str] = []
        parameters = []
        key = item.atom.qualified_name
        for parameter in item.parameters:
            shown = _parameter_evidence(parameter, recorded.get(key, {}).get(parameter.name),
                                        drawn.parameter(key, parameter.name), drawn, (drawn.problems or {}).get(key))
            parameters.append(shown)
            missing = shown.get("unexercised")
            rungs = shown.get("rungs")
            if not isinstance(missing, list) or not isinstance(rungs, list):
                continue
            rung_total += len(parameter.rungs)
            rung_exercised += len(parameter.rungs) - len(missing)
            if missing:
                atom_findings.append(_finding(item.atom, parameter, [rung for rung in rungs if rung["rung"] in missing],
                                              covered=bool(item.tests)))
        findings.extend(atom_findings)
        entry: dict[str, object] = {"qualified_name": key, "path": item.atom.path, "tests": list(item.tests),
                                    "parameters": parameters, "findings": atom_findings}
        if (problem := (drawn.problems or {}).get(key)) is not None:
            entry["draw_problem"] = problem
        entries.append(entry)
    evidence.update(atoms=[*entries, *others], findings=findings[:200], finding_count=len(findings))
    said = (f"{len(judged)} atom(s) with an input ladder: {rung_exercised} of {rung_total} rung(s) exercised by the "
            f"repository's tests (arguments recorded in the box, classified by rules v{RULES_VERSION})")
    if findings:
        return stage_result(_STAGE, StageOutcome.FAILED, "; ".join([said, *findings[:5]])[:2000], evidence)
    return stage_result(_STAGE, StageOutcome.SATISFIED, said, evidence)
