"""Stage 16's measured growth: each atom with a sized input timed at three sizes in the task's box, the exponent
fitted on a log-log scale. Advisory evidence, never a gate.

**Which atoms.** An atom has a *sized input* when one of its parameters is annotated ``str``, ``bytes``,
``bytearray``, ``list[…]``, ``tuple[…]``, ``dict[…]``, ``set[…]``, ``frozenset[…]`` or an abstract collection
(``Sequence``, ``Iterable``, ``Collection``, ``Mapping``…), or unannotated with such a literal as its default,
or a whole number (``int`` or unannotated) named like a size (``n``, ``size``, ``count``, ``length``, or ending in
``_size``, ``_count``, ``_length``, ``_len``). Every sized parameter without a default grows with the size (those
with a default — a separator, say — keep it, unless no required parameter is sized). The other parameters keep
their defaults; without one they get a simple value from their annotation (``int`` 3,
``float`` 1.5, ``bool`` False, an optional one None) — otherwise, or without an annotation, the atom is skipped
naming the parameter. Variadic parameters are left empty. Async functions and properties are skipped; a method
is called on an instance made with no arguments (static and class methods on the class), and skipped when the
class cannot be made so. The element types come from the annotation (``int``, ``float``, ``str``, ``bytes``;
anything else gets ints); the generators are deterministic and documented in
:mod:`~codeflux.pipeline.growth_script`.

**How.** One command per stage evaluation: the test command's interpreter runs the fixed
:data:`~codeflux.pipeline.growth_script.GROWTH_SCRIPT` with a JSON job on its argv, started in a scratch copy of
the final tree under the task's TMPDIR (:data:`GROWTH_DIRECTORY`: the base tree with every changed file laid
over it), so a timed atom never writes into the worktree, and the copy is removed afterwards. It runs in the
task's worker, confined like every check (AGENTS.md rule 13). Its authority follows the decision on the test
command this attempt (the same interpreter importing the same code, no card of its own); when that was not
allowed, or there is no interpreter, nothing runs and every atom's growth is "not measured" with the reason.

**Sizes and budget.** The sizes are ``b``, ``4b`` and ``16b`` for the setting
:data:`~codeflux.pipeline.thresholds.ATOM_GROWTH_BASE_SIZE` ``b`` (default 1000); each atom has the time budget
:data:`~codeflux.pipeline.thresholds.ATOM_GROWTH_BUDGET_MS` (default 5000 ms); the script stops an atom past it,
and a watchdog ends the whole run after the sum of budgets. Each size's time is the best of
:data:`REPETITIONS` means of calls that together last at least :data:`MIN_MEASURE_S`.

**The fit.** The exponent is the least-squares slope of log(seconds) over log(size) — about 1 for work linear in
the input, 2 for quadratic. It is wall-clock on this machine at three sizes: constant overheads flatten it at
small sizes, caches and the collector bend it, and it proves no complexity bound.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from codeflux.domain.atoms import Atom, FileAtoms
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.atoms import atom_definition_in
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.growth_script import GROWTH_MARKER, GROWTH_SCRIPT
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import detect_test_command
from codeflux.pipeline.thresholds import ATOM_GROWTH_BASE_SIZE, ATOM_GROWTH_BUDGET_MS, ThresholdValue, threshold_of

__all__ = [
    "DOES_NOT_PROVE",
    "GROWTH_DIRECTORY",
    "GROWTH_WORKING_DIRECTORY",
    "MAX_TIMED_ATOMS",
    "METHOD",
    "NO_SIZED_INPUT",
    "GrowthPlan",
    "GrowthRun",
    "fit_exponent",
    "growth_plan",
    "measure_growth",
]

GROWTH_DIRECTORY: Final = f"{SCRATCH_FOLDER}/growth"
"""The timing copy, relative to the task's TMPDIR."""
GROWTH_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{GROWTH_DIRECTORY}"
REPETITIONS: Final = 3
MIN_MEASURE_S: Final = 0.002
MAX_TIMED_ATOMS: Final = 20
RUN_SECONDS: Final = 540
"""The sum of the atoms' budgets one timing command may hold (run_command is killed at 600 s)."""
MAX_JOB_BYTES: Final = 20 * 1024
"""The job's bound (run_command's argv holds at most 32 KiB, the script included)."""
SIZE_FACTORS: Final = (1, 4, 16)
NO_SIZED_INPUT: Final = "not measured: no sized input"
METHOD: Final = ("the atom called in the task's box on deterministic inputs at three sizes (b, 4b, 16b); per size "
                 f"the best of {REPETITIONS} means of calls lasting at least {MIN_MEASURE_S * 1000:g} ms "
                 "(time.perf_counter, building the input not timed); exponent = least-squares slope of "
                 "log(seconds) over log(size)")
DOES_NOT_PROVE: Final = ("wall-clock on this machine, three sizes; not a complexity proof: other input shapes, "
                         "larger sizes and worst cases are not timed, and constant overheads flatten small sizes")

_SEQUENCES: Final = {"list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple", "set": "set", "Set": "set",
                     "frozenset": "frozenset", "FrozenSet": "frozenset", "Sequence": "list",
                     "MutableSequence": "list", "Iterable": "list", "Collection": "list", "Iterator": None,
                     "AbstractSet": "set", "MutableSet": "set", "Reversible": "list"}
_MAPPINGS: Final = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})
_TEXT: Final = {"str": "str", "bytes": "bytes", "bytearray": "bytes"}
_ELEMENTS: Final = frozenset({"int", "float", "str", "bytes"})
_SIZE_NAMES: Final = frozenset({"n", "size", "count", "length"})
_SIZE_SUFFIXES: Final = ("_size", "_count", "_length", "_len")
_SIMPLE: Final[dict[str, object]] = {"int": 3, "float": 1.5, "bool": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class GrowthPlan:
    """How one atom is called: its module, local name, call kind and per-parameter values (the job's shape,
    :mod:`~codeflux.pipeline.growth_script`), and which parameters are sized."""

    module: str
    local: str
    call: str
    params: tuple[dict[str, object], ...]
    sized: tuple[str, ...]

    def to_job(self, key: str) -> dict[str, object]:
        return {"key": key, "module": self.module, "local": self.local, "call": self.call,
                "params": [dict(param) for param in self.params]}


@dataclass(frozen=True, slots=True, kw_only=True)
class GrowthRun:
    """What measuring growth needs from the stage: the ports, the attempt and the diff's changed paths (laid over
    the base tree in the timing copy)."""

    ports: PipelinePorts
    attempt: int
    changed: tuple[str, ...] = field(default=())


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _name(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return ""
    return ""


def _subscript(node: ast.expr) -> tuple[str, list[ast.expr]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _subscript(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return "", []
    if isinstance(node, ast.Subscript):
        inner = node.slice
        return _name(node.value), list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    return _name(node), []


def _optional(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "None" in node.value.replace(" ", "").split("|") or node.value.startswith("Optional[")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return any(isinstance(side, ast.Constant) and side.value is None for side in (node.left, node.right))
    return _subscript(node)[0] == "Optional"


def _element(node: ast.expr | None) -> str:
    name = _name(node) if node is not None else ""
    return name if name in _ELEMENTS else "int"


def _sized_value(annotation: ast.expr | None, default: ast.expr | None, name: str) -> dict[str, object] | None:
    """The generator spec of a sized parameter, or None when it is not sized."""
    if annotation is not None:
        head, args = _subscript(annotation)
        if head in _TEXT:
            return {"gen": _TEXT[head]}
        if head in _SEQUENCES and _SEQUENCES[head] is not None:
            return {"gen": _SEQUENCES[head], "item": _element(args[0] if args else None)}
        if head in _MAPPINGS:
            return {"gen": "dict", "item": _element(args[0] if args else None),
                    "value": _element(args[1] if len(args) > 1 else None)}
        if head != "int":
            return None
    elif default is not None:
        literal = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set", ast.Dict: "dict"}.get(type(default))
        if literal is not None:
            return {"gen": literal, "item": "int", "value": "int"} if literal == "dict" else {"gen": literal,
                                                                                               "item": "int"}
        if isinstance(default, ast.Constant) and isinstance(default.value, (str, bytes)):
            return {"gen": "str" if isinstance(default.value, str) else "bytes"}
    size_named = name in _SIZE_NAMES or name.endswith(_SIZE_SUFFIXES)
    whole = annotation is not None or default is None or (isinstance(default, ast.Constant)
                                                          and type(default.value) is int)
    return {"size": True} if size_named and whole else None


def _simple(annotation: ast.expr | None) -> object:
    """A simple value for an unsized parameter without a default; raises LookupError when there is none."""
    if annotation is None:
        raise LookupError("has no annotation or default to build a value from")
    if _optional(annotation):
        return None
    head = _name(annotation)
    if head in _SIMPLE:
        return _SIMPLE[head]
    raise LookupError(f"(annotated {ast.unparse(annotation)[:60]}) has no default and no simple value")


def _call_kind(node: ast.FunctionDef, atom: Atom) -> str:
    if not atom.is_method:
        return "function"
    decorators = {_name(decorator) for decorator in node.decorator_list}
    if "staticmethod" in decorators:
        return "static"
    if "classmethod" in decorators:
        return "class"
    return "instance"


_Listed = list[tuple[ast.arg, ast.expr | None, str]]


def _listed(node: ast.FunctionDef, call: str) -> _Listed:
    """Each parameter the call passes (``self``/``cls`` dropped), with its default and how it is passed."""
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    if call in ("instance", "class") and positional:
        positional, defaults = positional[1:], defaults[1:]
    listed: _Listed = [(arg, default, "positional") for arg, default in zip(positional, defaults, strict=True)]
    listed += [(arg, default, "keyword") for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                                                  strict=True)]
    return listed


def _value(arg: ast.arg, default: ast.expr | None, sized: dict[str, object] | None
           ) -> dict[str, object] | str | None:
    """A parameter's value spec; None to leave it to its default; a str says why it has no value."""
    if sized is not None:
        return sized
    if default is not None:
        return None
    try:
        return {"literal": _simple(arg.annotation)}
    except LookupError as problem:
        return f"skipped: parameter {arg.arg} {problem}"


def _parameters(listed: _Listed, positional_only: list[ast.arg]) -> tuple[list[dict[str, object]], list[str]] | str:
    specs = [_sized_value(arg.annotation, default, arg.arg) for arg, default, _ in listed]
    required_sized = any(spec is not None and item[1] is None for spec, item in zip(specs, listed, strict=True))
    params: list[dict[str, object]] = []
    sized: list[str] = []
    unusable: str | None = None
    keyword_from_here = False
    for (arg, default, passing), spec in zip(listed, specs, strict=True):
        # a sized required parameter grows; an optional one (a separator…) keeps its default
        value = _value(arg, default, None if default is not None and required_sized else spec)
        if value is None:
            keyword_from_here = True  # left to its default: later positional ones are passed by keyword
            continue
        if isinstance(value, str):
            unusable = unusable or value
            continue
        if "gen" in value or "size" in value:
            sized.append(arg.arg)
        if passing == "positional" and keyword_from_here and arg in positional_only:
            return f"skipped: parameter {arg.arg} is positional-only after one left to its default"
        params.append({"name": arg.arg, "pass": "keyword" if keyword_from_here or passing == "keyword"
                       else "positional", "value": value})
    if not sized:
        return NO_SIZED_INPUT
    return unusable if unusable is not None else (params, sized)


def growth_plan(atom: Atom, source: str) -> GrowthPlan | str:
    """How to time ``atom`` (defined in ``source``), or why it is not timed (see the module docstring)."""
    node = atom_definition_in(source, atom)
    if node is None:
        return "not measured: the atom's definition was not found again in its source"
    if isinstance(node, ast.AsyncFunctionDef):
        return "skipped: an async function (calling it does not run it)"
    decorators = {_name(decorator) for decorator in node.decorator_list}
    if decorators & {"property", "setter", "getter", "deleter", "cached_property"}:
        return "skipped: a property (not called with arguments)"
    call = _call_kind(node, atom)
    found = _parameters(_listed(node, call), node.args.posonlyargs)
    if isinstance(found, str):
        return found
    params, sized = found
    module = atom.qualified_name[: len(atom.qualified_name) - len(atom.local_name)].rstrip(".")
    return GrowthPlan(module=module, local=atom.local_name, call=call, params=tuple(params), sized=tuple(sized))


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The least-squares slope of log(seconds) over log(size); raises ValueError for fewer than two points or a
    non-positive value."""
    if len(sizes) != len(seconds) or len(sizes) < 2 or min(sizes) <= 0 or min(seconds) <= 0:
        raise ValueError("two or more positive points are needed")
    xs = [math.log(size) for size in sizes]
    ys = [math.log(value) for value in seconds]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        raise ValueError("the sizes must differ")
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def _reported(stdout: str) -> dict[str, object] | None:
    line = next((line for line in reversed(stdout.splitlines()) if line.startswith(GROWTH_MARKER)), None)
    if line is None or len(line) > 1_000_000:
        return None
    try:
        document = json.loads(line[len(GROWTH_MARKER):])
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _numbers(value: object, kind: type) -> list[float] | None:
    if not isinstance(value, list) or len(value) != len(SIZE_FACTORS):
        return None
    if not all(isinstance(item, kind) and not isinstance(item, bool) for item in value):
        return None
    numbers = [float(item) for item in value]
    return numbers if all(math.isfinite(item) and item > 0 for item in numbers) else None


def _measured(reported: object, sizes: Sequence[int]) -> dict[str, object]:
    """One atom's growth evidence from the script's (untrusted) report."""
    if not isinstance(reported, dict):
        return {"measured": False, "detail": "not measured: the timing run reported nothing for it"}
    problem = reported.get("problem")
    if isinstance(problem, str):
        shown: dict[str, object] = {"measured": False, "detail": problem[:300]}
        partial, partial_sizes = reported.get("seconds"), reported.get("sizes")
        if (isinstance(partial, list) and isinstance(partial_sizes, list) and 0 < len(partial) == len(partial_sizes)
                and partial_sizes == list(sizes[:len(partial)])
                and all(isinstance(value, float) and math.isfinite(value) and value > 0 for value in partial)):
            shown["measured_before_the_budget_ran_out"] = {"sizes": partial_sizes,
                                                           "seconds": [f"{value:.3g}" for value in partial]}
        return shown
    seconds = _numbers(reported.get("seconds"), float)
    reported_sizes = _numbers(reported.get("sizes"), int)
    if seconds is None or reported_sizes != [float(size) for size in sizes]:
        return {"measured": False, "detail": "not measured: the timing run's report was not three positive timings"}
    exponent = fit_exponent(sizes, seconds)
    calls = reported.get("calls")
    return {"measured": True, "sizes": list(sizes), "seconds": [f"{value:.3g}" for value in seconds],
            "calls": calls if isinstance(calls, list) and all(isinstance(c, int) for c in calls) else None,
            "exponent": f"{exponent:.2f}",
            "detail": f"time grows like size^{exponent:.2f} over sizes {', '.join(str(size) for size in sizes)}"}


def _settings_evidence(budget: ThresholdValue, base: ThresholdValue) -> dict[str, object]:
    return {"budget_ms": budget.to_evidence(), "base_size": base.to_evidence()}


def _plans(files: Sequence[FileAtoms], atoms: Sequence[Atom]
           ) -> tuple[dict[str, dict[str, object]], dict[str, GrowthPlan]]:
    sources = {file.path: file.source for file in files}
    growth: dict[str, dict[str, object]] = {}
    plans: dict[str, GrowthPlan] = {}
    for atom in atoms:
        plan = growth_plan(atom, sources.get(atom.path, ""))
        if isinstance(plan, str):
            growth[atom.qualified_name] = {"measured": False, "detail": plan}
        elif len(plans) >= MAX_TIMED_ATOMS:
            growth[atom.qualified_name] = {"measured": False,
                                           "detail": f"not measured: only {MAX_TIMED_ATOMS} atoms are timed per run"}
        else:
            plans[atom.qualified_name] = plan
            growth[atom.qualified_name] = {"measured": False, "sized": list(plan.sized)}
    return growth, plans


def _within_one_run(plans: dict[str, GrowthPlan], growth: dict[str, dict[str, object]], budget_s: float
                    ) -> list[dict[str, object]]:
    """The jobs of the plans that fit one command: their budgets within :data:`RUN_SECONDS` (the command is killed
    at 600 s) and the job within :data:`MAX_JOB_BYTES` (argv is bounded); the others (dropped from ``plans``) are
    marked not measured."""
    jobs: list[dict[str, object]] = []
    size = 0
    for name in list(plans):
        job = plans[name].to_job(name)
        size += len(json.dumps(job, separators=(",", ":")))
        if (len(jobs) + 1) * budget_s > RUN_SECONDS or size > MAX_JOB_BYTES:
            del plans[name]
            growth[name] = {**growth[name], "detail": "not measured: one timing run holds no more atoms at this "
                                                      "budget (the command's time and argv are bounded)"}
            continue
        jobs.append(job)
    return jobs


def measure_growth(run: GrowthRun, files: Sequence[FileAtoms], atoms: Sequence[Atom]
                   ) -> tuple[dict[str, dict[str, object]], dict[str, object]]:
    """Each of ``atoms``' growth evidence (by qualified name) and the run's own evidence (see the module
    docstring); ``files`` hold the atoms' sources."""
    ports = run.ports
    budget = threshold_of(ports.settings, ATOM_GROWTH_BUDGET_MS)
    base = threshold_of(ports.settings, ATOM_GROWTH_BASE_SIZE)
    overview: dict[str, object] = {"method": METHOD, "does_not_prove": DOES_NOT_PROVE, "advisory": True,
                                   "settings": _settings_evidence(budget, base)}
    growth, plans = _plans(files, atoms)

    def refuse(reason: str) -> tuple[dict[str, dict[str, object]], dict[str, object]]:
        for name in plans:
            growth[name] = {**growth[name], "detail": f"not measured: {reason}"}
        return growth, {**overview, "ran": False, "detail": reason}

    if not plans:
        return growth, {**overview, "ran": False, "detail": "no atom with a sized input to time"}
    problem = budget.problem or base.problem
    if problem is not None:
        return refuse(f"{problem}; set it again or remove it")
    command = detect_test_command(worktree=ports.facts.worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        return refuse("no usable test command, whose interpreter times the atoms (and whose decision allows it)")
    sizes = [base.value * factor for factor in SIZE_FACTORS]
    job = {"sizes": sizes, "repetitions": REPETITIONS, "min_measure_s": MIN_MEASURE_S,
           "budget_s": budget.value / 1000, "atoms": _within_one_run(plans, growth, budget.value / 1000)}
    temp = ports.commands.temp_directory(ports.facts.task_id)
    scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=GROWTH_DIRECTORY, overlay=run.changed)
    if scratch.path is None:
        return refuse(f"the timing copy could not be made: {scratch.refusal}")
    argv = (command.interpreter, "-c", GROWTH_SCRIPT, json.dumps(job, sort_keys=True, separators=(",", ":")))
    try:
        done = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=run.attempt,
                                                working_directory=GROWTH_WORKING_DIRECTORY, covered_by=command.argv)
    finally:
        remove_base_scratch(temp, GROWTH_DIRECTORY)
    if not done.ran:
        return refuse(f"the timing run did not run: {done.refusal}")
    reported = _reported(done.stdout)
    if reported is None:
        return refuse(f"the timing run ended {done.state} (exit {done.exit_code}) without its report")
    for name in plans:
        growth[name] = {**growth[name], **_measured(reported.get(name), sizes)}
    return growth, {**overview, "ran": True, "request_id": done.request_id, "interpreter": command.interpreter,
                    "sizes": sizes, "detail": f"{len(plans)} atom(s) timed in the task's box"}
