"""Stage 12 atom-fuzz: each atom that parses or decodes is fuzzed with Hypothesis, in the task's box, within a time
budget; it may raise only what its contract documents, and no input may hang it.

**Which atoms.** An atom *parses or decodes* when a parameter is annotated with text, bytes, a path or JSON — an
annotation naming ``str``, ``bytes``, ``bytearray``, ``memoryview``, ``AnyStr``, ``Path``, ``PurePath``,
``PathLike``, ``StrPath`` or anything with ``json`` in its name (``JSONValue``, ``JsonDict``) — or when its name
says so: a word of it (split at ``_`` and case changes) starting with ``parse``, ``decode``, ``load``, ``read``,
``deserial`` or ``unmarshal``, or the name starting with ``from_``. Every other atom is listed as not fuzzed with
that reason; async functions and properties are skipped (calling them does not run them). When no atom parses or
decodes the stage is ``skipped``.

**The contract's raises.** The exceptions the atom's docstring documents (a Google ``Raises:`` section, a NumPy
``Raises`` section or Sphinx ``:raises X:`` — :func:`~codeflux.domain.contracts.documented_raises`; plans declare
no raises of their own). An exception passes when its class or one of its bases is named there (``ValueError``
allows ``json.JSONDecodeError``); any other is a failure.

**How.** One command per stage evaluation: the test command's interpreter runs the fixed
:data:`~codeflux.pipeline.fuzz_script.FUZZ_SCRIPT` (which documents the inputs, the per-input deadline, the budget
and the report) with a JSON job, in a scratch copy of the final tree under the task's TMPDIR
(:data:`FUZZ_DIRECTORY`: the base tree with every changed file laid over it — a fuzzed atom never writes into the
worktree; removed afterwards), in the task's worker, confined (AGENTS.md rule 13), following the decision on the
test command this attempt (``covered_by``: the same interpreter importing the same code, no card of its own).
Hypothesis is the repository environment's, else codeflux's tool overlay's
(:func:`~codeflux.pipeline.tool_overlay.resolve_tools`, appended after site-packages); missing and not
installable → ``blocked`` naming the tool and the fix. Hypothesis's seed is drawn per evaluation and recorded; the
printed command of a finding replays the same inputs in the same order (the example database is off).

**Budget.** :data:`~codeflux.pipeline.thresholds.ATOM_FUZZ_BUDGET_S` seconds per atom (default 20, a setting);
each input has a deadline of the smaller of that and :data:`INPUT_DEADLINE_MAX_S`; a watchdog ends an atom that
outlives both (an input swallowing the deadline's exception) or whose preparation outlives :data:`PREPARE_S`, as a
hang; one run holds at most as many atoms as fit :data:`RUN_SECONDS` in that worst case (the others are listed
"not fuzzed"). The time spent is reported apart from
other timings (``fuzz_time`` in the evidence): it is a budget, not a cost of the checks, and phase B's benchmark
excludes it.

**Gate.** No fuzzed atom raised an exception its contract does not document and none hung. Not gating the run:
the findings (failing input — ``repr``, bounded — the exception, its traceback's tail, the command that reproduces
it) join the context of an attempt a send-back gate starts (:mod:`~codeflux.pipeline.findings`). Not proven
(:data:`DOES_NOT_PROVE`): that another input, a longer budget or another seed finds nothing — fuzzing samples.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.contracts import documented_raises
from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import atom_definition_in
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.coverage_map import CHECKS_FOLDER, read_box_json
from codeflux.pipeline.fuzz_script import FUZZ_REPORT, FUZZ_SCRIPT
from codeflux.pipeline.ports import CheckCommandRun
from codeflux.pipeline.program import detect_test_command
from codeflux.pipeline.specification import StageResult, stage_result
from codeflux.pipeline.thresholds import ATOM_FUZZ_BUDGET_S, threshold_of
from codeflux.pipeline.tool_overlay import HYPOTHESIS, ToolResolution, resolve_tools

__all__ = [
    "DOES_NOT_PROVE",
    "FUZZ_DIRECTORY",
    "HOSTILE_BUDGET_S",
    "HOSTILE_METHOD",
    "INPUT_DEADLINE_MAX_S",
    "METHOD",
    "PREPARE_S",
    "FuzzPlan",
    "evaluate_atom_fuzz",
    "fuzz_plan",
    "hostile_atoms",
    "shown_command",
]

FUZZ_DIRECTORY: Final = f"{SCRATCH_FOLDER}/fuzz"
"""The fuzzing copy, relative to the task's TMPDIR."""
FUZZ_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{FUZZ_DIRECTORY}"
INPUT_DEADLINE_MAX_S: Final = 5.0
PREPARE_S: Final = 15.0
"""How long importing an atom's module and building its strategies may take before the watchdog calls it hung."""
RUN_SECONDS: Final = 540.0
"""What one fuzz command may hold in the worst case (run_command is killed at 600 s)."""
MAX_REPR: Final = 300
"""How much of a failing input's ``repr`` is kept."""
_MAX_REPORT_BYTES: Final = 4 * 1024 * 1024
_MAX_JOB_BYTES: Final = 20 * 1024
_MAX_SHOWN_FINDING: Final = 1200
_MAX_GATE_TEXT: Final = 6000
"""The verdict's text is bounded (the ledger keeps at most 8192 characters); the evidence keeps every finding whole."""
_TEXTUAL: Final = frozenset({"str", "bytes", "bytearray", "memoryview", "AnyStr", "Path", "PurePath", "PurePosixPath",
                             "PosixPath", "PathLike", "StrPath", "StrOrBytesPath"})
_NAME_WORDS: Final = ("parse", "decode", "load", "read", "deserial", "unmarshal")
METHOD: Final = ("Hypothesis @given in the task's box on a scratch copy of the final tree: st.from_type of each "
                 "parameter's annotation (paths as relative paths, JSON-named or Any parameters as JSON-like values), "
                 "one recorded seed, no example database, a time budget per atom and a deadline per input; an "
                 "exception passes only when its class or a base is a documented raise")
HOSTILE_METHOD: Final = ("Hypothesis @given in the task's box on a scratch copy of the final tree, as stage 12, with "
                         "hostile values for each text or bytes parameter: empty, NUL, lone surrogates, a "
                         "right-to-left override, a byte-order mark, invalid UTF-8 bytes, format and path-traversal "
                         "strings, a 1 MB value and 10,000 newlines, then any text or bytes")
DOES_NOT_PROVE: Final = ("that the atom is correct or total: fuzzing samples inputs within a time budget — another "
                         "input, seed or longer budget may still find a crash or a hang; return values are not judged, "
                         "and a parameter's default is not varied unless it is text, bytes, a path or JSON")


@dataclass(frozen=True, slots=True, kw_only=True)
class FuzzPlan:
    """How one atom is fuzzed (the job's shape, :mod:`~codeflux.pipeline.fuzz_script`) and why it was chosen."""

    module: str
    local: str
    call: str
    inputs: tuple[str, ...]
    json_inputs: tuple[str, ...]
    allowed: tuple[str, ...]
    documented: tuple[str, ...]
    because: str

    def to_job(self, key: str) -> dict[str, object]:
        return {"key": key, "module": self.module, "local": self.local, "call": self.call,
                "inputs": list(self.inputs), "json": list(self.json_inputs), "allowed": list(self.allowed)}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Mode:
    """Stage 12's fuzzing, or stage 31's hostile input to public atoms taking text or bytes (:func:`hostile_atoms`):
    the stage recorded, the scratch folder, which atoms and inputs, and the budget."""

    stage: StageName
    directory: str
    hostile: bool


_FUZZ: Final = _Mode(stage=StageName.ATOM_FUZZ, directory=FUZZ_DIRECTORY, hostile=False)
_HOSTILE: Final = _Mode(stage=StageName.ADVERSARIAL, directory=f"{SCRATCH_FOLDER}/hostile", hostile=True)
HOSTILE_BUDGET_S: Final = 3
"""Seconds of hostile input per public text or bytes atom in stage 31 (shown in the evidence)."""
_HOSTILE_TYPES: Final = frozenset({"str", "bytes", "bytearray", "AnyStr"})


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)


def _top_names(annotation: ast.expr) -> list[str]:
    """The type names an annotation is at its top: the members of a union (``X | None``, ``Optional[X]``,
    ``Union[X, Y]``, ``Annotated[X, …]``), else its head (``list`` of ``list[str]``)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _top_names(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [*_top_names(annotation.left), *_top_names(annotation.right)]
    if isinstance(annotation, ast.Subscript):
        head = _top_names(annotation.value)
        if head and head[-1] in ("Optional", "Union", "Annotated"):
            inner = annotation.slice
            members = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
            return [name for member in (members[:1] if head[-1] == "Annotated" else members)
                    for name in _top_names(member)]
        return head
    if isinstance(annotation, ast.Name):
        return [annotation.id]
    if isinstance(annotation, ast.Attribute):
        return [annotation.attr]
    return []


def _annotation_kind(annotation: ast.expr | None) -> str | None:
    """``json`` (a name with ``json`` in it anywhere in the annotation), ``text`` (text, bytes or a path at its top:
    ``str``, ``str | None``, ``os.PathLike[str]`` — not ``list[str]``) or None."""
    if annotation is None:
        return None
    text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) \
        else ast.unparse(annotation)
    if any("json" in word.lower() for word in _words(text)):
        return "json"
    return "text" if any(name in _TEXTUAL for name in _top_names(annotation)) else None


def _name_parses(name: str) -> bool:
    if name.lower().lstrip("_").startswith("from_"):
        return True
    words = [word.lower() for part in name.split("_")
             for word in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", part)]
    return any(word.startswith(_NAME_WORDS) for word in words)


def _allowed(documented: Sequence[str]) -> tuple[str, ...]:
    """The documented names as the box compares them: each as written and its last dotted part."""
    names: list[str] = []
    for name in documented:
        names += [name, name.rpartition(".")[2]]
    return tuple(dict.fromkeys(name for name in names if name))


def fuzz_plan(atom: Atom, source: str, *, hostile: bool = False) -> FuzzPlan | str:
    """How to fuzz ``atom`` (defined in ``source``), or why it is not fuzzed (see the module docstring); ``hostile``:
    stage 31's selection instead — a public atom with a text or bytes parameter, only those given hostile input."""
    node = atom_definition_in(source, atom)
    if node is None:
        return "not fuzzed: the atom's definition was not found again in its source"
    if isinstance(node, ast.AsyncFunctionDef):
        return "skipped: an async function (calling it does not run it)"
    decorators = {_words(ast.unparse(decorator))[-1] if _words(ast.unparse(decorator)) else ""
                  for decorator in node.decorator_list}
    if decorators & {"property", "setter", "getter", "deleter", "cached_property"}:
        return "skipped: a property (not called with arguments)"
    arguments = node.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    kinds = {arg.arg: _annotation_kind(arg.annotation) for arg in every}
    inputs = tuple(name for name, kind in kinds.items() if kind is not None)
    json_inputs = tuple(name for name, kind in kinds.items() if kind == "json")
    if hostile:
        inputs = tuple(arg.arg for arg in every
                       if arg.annotation is not None and _HOSTILE_TYPES.intersection(_top_names(arg.annotation)))
        json_inputs = ()
        if not atom.public or not inputs:
            return ("not given hostile input: " + ("not public" if not atom.public else
                                                   "no parameter annotated as text or bytes"))
    if hostile:
        because = "public, takes " + ", ".join(f"{name} (text or bytes)" for name in inputs)
    elif inputs:
        because = "takes " + ", ".join(f"{name} ({'JSON' if kinds[name] == 'json' else 'text, bytes or a path'})"
                                       for name in inputs)
    elif _name_parses(atom.name):
        because = f"its name ({atom.name}) says it parses, decodes or loads"
    else:
        return ("not fuzzed: it does not parse or decode (no text, bytes, path or JSON parameter, and its name says "
                "neither)")
    call = "function"
    if atom.is_method:
        call = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "instance"
    documented = documented_raises(ast.get_docstring(node))
    module = atom.qualified_name[: len(atom.qualified_name) - len(atom.local_name)].rstrip(".")
    return FuzzPlan(module=module, local=atom.local_name, call=call, inputs=inputs, json_inputs=json_inputs,
                    allowed=_allowed(documented), documented=documented, because=because)


def shown_command(argv: Sequence[str]) -> str:
    """``argv`` as a shell command with the fixed script named rather than inlined (the evidence keeps it whole)."""
    return shlex.join(argv).replace(shlex.quote(FUZZ_SCRIPT), "\"$CODEFLUX_FUZZ_SCRIPT\"")


def _argv(interpreter: str, overlay: Path | None, job: Mapping[str, object]) -> tuple[str, ...]:
    return (interpreter, "-c", FUZZ_SCRIPT, "-" if overlay is None else str(overlay),
            json.dumps(job, sort_keys=True, separators=(",", ":")))


def _per_atom_seconds(budget: float, deadline: float) -> float:
    """The worst case one atom can hold the run (preparing it, and the script's grace, included)."""
    return PREPARE_S + budget * 1.5 + deadline + 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Chosen:
    entries: dict[str, dict[str, object]]
    plans: dict[str, FuzzPlan]


def _choose(facts: AtomFacts, budget: float, deadline: float, *, hostile: bool = False) -> _Chosen:
    sources = {file.path: file.source for file in facts.diff.files}
    entries: dict[str, dict[str, object]] = {}
    plans: dict[str, FuzzPlan] = {}
    fit = max(1, int(RUN_SECONDS // _per_atom_seconds(budget, deadline)))
    size = 0
    for atom in facts.diff.atoms:
        entry: dict[str, object] = {"qualified_name": atom.qualified_name, "path": atom.path,
                                    "lines": [atom.first_line, atom.last_line], "change": atom.change.value}
        entries[atom.qualified_name] = entry
        plan = fuzz_plan(atom, sources.get(atom.path, ""), hostile=hostile)
        if isinstance(plan, str):
            entry.update(fuzzed=False, detail=plan)
            continue
        entry.update(because=plan.because, documented_raises=list(plan.documented))
        size += len(json.dumps(plan.to_job(atom.qualified_name)))
        if len(plans) >= fit or size > _MAX_JOB_BYTES:
            entry.update(fuzzed=False, detail=f"not fuzzed: one fuzz run holds at most {len(plans)} atoms at this "
                                              "budget (the command's time and argv are bounded)")
            continue
        plans[atom.qualified_name] = plan
    return _Chosen(entries=entries, plans=plans)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ready:
    """What the run needs once nothing blocks it: the interpreter, the test command it follows, the tools."""

    chosen: _Chosen
    base: dict[str, object]
    budget: int
    deadline: float
    interpreter: str
    test_argv: tuple[str, ...]
    tools: ToolResolution


def _prepare(facts: AtomFacts, mode: _Mode) -> _Ready | StageResult:
    """The atoms to fuzz and what runs them — or the stage's ``skipped``/``blocked`` result."""
    ports = facts.ports
    stage = mode.stage
    if not facts.diff.atoms:
        return stage_result(stage, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom to fuzz", {"atoms": []})
    budget = threshold_of(ports.settings, ATOM_FUZZ_BUDGET_S)
    seconds = HOSTILE_BUDGET_S if mode.hostile else budget.value
    deadline = min(float(seconds), INPUT_DEADLINE_MAX_S)
    chosen = _choose(facts, float(seconds), deadline, hostile=mode.hostile)
    setting = {"value": HOSTILE_BUDGET_S, "source": "fixed"} if mode.hostile else budget.to_evidence()
    base: dict[str, object] = {"method": HOSTILE_METHOD if mode.hostile else METHOD,
                               "does_not_prove": DOES_NOT_PROVE, "diff_identity": facts.diff_identity,
                               "settings": {"budget_s": setting, "input_deadline_s": deadline}}
    if not chosen.plans:
        return stage_result(stage, StageOutcome.SKIPPED, "no public atom takes text or bytes" if mode.hostile else
                            "no atom parses or decodes (no text, bytes, path or JSON parameter, no parse/decode/load/"
                            "read name): there is nothing to fuzz", {**base, "atoms": list(chosen.entries.values())})
    if budget.problem is not None and not mode.hostile:
        return stage_result(stage, StageOutcome.BLOCKED, f"{budget.problem}; set it again or remove it", {})
    command = detect_test_command(worktree=ports.facts.worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        return stage_result(stage, StageOutcome.BLOCKED, "no usable test command (an interpreter with pytest), whose "
                            "interpreter runs the fuzzer (and whose decision allows it)", {})
    tools = resolve_tools(ports, attempt=facts.attempt, interpreter=command.interpreter, test_argv=command.argv,
                          tools=(HYPOTHESIS,), probes=facts.shared)
    if not tools.ready:
        return stage_result(stage, StageOutcome.BLOCKED, tools.blocked or "hypothesis is missing", {})
    return _Ready(chosen=chosen, base=base, budget=seconds, deadline=deadline, interpreter=command.interpreter,
                  test_argv=command.argv, tools=tools)


def _run(facts: AtomFacts, ready: _Ready, argv: tuple[str, ...], mode: _Mode
         ) -> tuple[CheckCommandRun, dict[str, object] | None, float] | StageResult:
    """Run ``argv`` in the scratch copy; the run, its report (None: none usable) and its wall time."""
    ports = facts.ports
    task_id = ports.facts.task_id
    temp = ports.commands.temp_directory(task_id)
    scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=mode.directory,
                                 overlay=facts.changed_paths)
    if scratch.path is None:
        return stage_result(mode.stage, StageOutcome.BLOCKED, f"the fuzzing copy could not be made: "
                            f"{scratch.refusal}", {})
    report_path = temp / PurePosixPath(FUZZ_REPORT)
    started = time.monotonic()
    try:
        if report_path.is_file() and not report_path.is_symlink() and not report_path.parent.is_symlink():
            report_path.unlink()
        done = ports.commands.run_check_command(task_id, argv, attempt=facts.attempt,
                                                working_directory=f"{TASK_TEMP_DIRECTORY}/{mode.directory}",
                                                covered_by=ready.test_argv)
        report = read_box_json(report_path, max_bytes=_MAX_REPORT_BYTES)
    finally:
        remove_base_scratch(temp, mode.directory)
        shutil.rmtree(temp / CHECKS_FOLDER, ignore_errors=True)  # never through a link: rmtree refuses one
    return done, report, time.monotonic() - started


def evaluate_atom_fuzz(facts: AtomFacts, *, seed: int | None = None) -> StageResult:
    """Stage 12 (see the module docstring); ``seed`` replaces the fresh random seed (a test replays a run)."""
    return _fuzz(facts, seed, _FUZZ)


def hostile_atoms(facts: AtomFacts, *, seed: int | None = None) -> StageResult:
    """Stage 31's part for atoms: every public atom of the diff with a parameter annotated as text or bytes is called
    for up to :data:`HOSTILE_BUDGET_S` s with hostile values there (:data:`HOSTILE_METHOD`) — the same run, judge and
    evidence as stage 12, recorded by stage 31 (:mod:`~codeflux.pipeline.adversarial`)."""
    return _fuzz(facts, seed, _HOSTILE)


def _fuzz(facts: AtomFacts, seed: int | None, mode: _Mode) -> StageResult:
    stage = mode.stage
    ready = _prepare(facts, mode)
    if isinstance(ready, StageResult):
        return ready
    entries, plans, base = ready.chosen.entries, ready.chosen.plans, ready.base
    chosen_seed = seed if seed is not None else secrets.randbelow(2**32)
    job_base = {"seed": chosen_seed, "budget_s": float(ready.budget), "input_deadline_s": ready.deadline,
                "prepare_s": PREPARE_S, "max_repr": MAX_REPR, **({"hostile": True} if mode.hostile else {})}
    argv = _argv(ready.interpreter, ready.tools.overlay_site,
                 {**job_base, "atoms": [plan.to_job(name) for name, plan in plans.items()]})
    ran = _run(facts, ready, argv, mode)
    if isinstance(ran, StageResult):
        return ran
    done, report, seconds = ran
    if not done.ran:
        return stage_result(stage, StageOutcome.BLOCKED, f"the fuzz run did not run: {done.refusal}", {})
    if report is None or not isinstance(report.get("results"), dict):
        tail = " | ".join(line.strip() for line in (done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
        return stage_result(stage, StageOutcome.BLOCKED, f"the fuzz run ended {done.state} (exit {done.exit_code}) "
                            f"without its report: {tail} (request {done.request_id})", {})
    run: dict[str, object] = {
        "seed": chosen_seed, "request_id": done.request_id, "exit_code": done.exit_code, "state": done.state,
        "argv": list(argv), "command": shown_command(argv), "interpreter": ready.interpreter,
        "hypothesis": str(report.get("hypothesis", ""))[:40], "working_directory": "a scratch copy of the final tree "
        f"($TMPDIR/{mode.directory}, removed afterwards)"}
    findings = _judge(entries, plans, report, job_base=job_base, interpreter=ready.interpreter,
                      overlay=ready.tools.overlay_site)
    evidence: dict[str, object] = {
        **base, "seed": chosen_seed, "seed_given": seed is not None, "run": run, "atoms": list(entries.values()),
        "findings": findings, "tools": ready.tools.to_evidence(),
        "fuzz_time": {"seconds": round(seconds, 3), "budget_s_per_atom": ready.budget, "atoms": len(plans),
                      "reported_apart": "a time budget, not a cost of the checks: phase B's benchmark excludes it"}}
    return _verdict(entries, plans, findings, evidence, ready=ready, seed=chosen_seed,
                    hypothesis=str(run["hypothesis"]), stage=stage)


def _verdict(entries: dict[str, dict[str, object]], plans: dict[str, FuzzPlan], findings: list[str],
             evidence: dict[str, object], *, ready: _Ready, seed: int, hypothesis: str,
             stage: StageName) -> StageResult:
    fuzzed = [name for name, entry in entries.items() if entry.get("fuzzed") is True]
    if not fuzzed and not findings:
        return stage_result(stage, StageOutcome.SKIPPED, "no atom could be fuzzed: " + "; ".join(
            f"{name}: {entry.get('detail')}" for name, entry in entries.items() if name in plans)[:600], evidence)
    inputs = sum(int(str(entries[name].get("inputs", 0))) for name in fuzzed)
    said = (f"{len(fuzzed)} atom(s) fuzzed with Hypothesis {hypothesis} for up to {ready.budget} s each "
            f"(seed {seed}, {inputs} inputs, a {ready.deadline:g} s deadline per input)")
    not_fuzzed = [name for name in plans if entries[name].get("fuzzed") is not True] + [
        name for name, entry in entries.items() if name not in plans and "because" in entry]
    if not_fuzzed:
        said += f"; not fuzzed: {', '.join(not_fuzzed[:6])}"
    if findings:
        shown = "; ".join([said, *(finding[:_MAX_SHOWN_FINDING] for finding in findings[:4])])
        return stage_result(stage, StageOutcome.FAILED, shown[:_MAX_GATE_TEXT], evidence)
    return stage_result(stage, StageOutcome.SATISFIED, f"{said}: no exception beyond the documented raises, no hang",
                        evidence)


def _text(value: object, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _judge(entries: dict[str, dict[str, object]], plans: dict[str, FuzzPlan], report: Mapping[str, object], *,
           job_base: Mapping[str, object], interpreter: str, overlay: Path | None) -> list[str]:
    """Fill each planned atom's entry from the (untrusted) report; the findings, in atom order."""
    results = report.get("results")
    results = results if isinstance(results, dict) else {}
    running = report.get("running")
    findings: list[str] = []
    for name, plan in plans.items():
        entry = entries[name]
        found = results.get(name)
        replay = _argv(interpreter, overlay, {**job_base, "atoms": [plan.to_job(name)]})
        if not isinstance(found, dict) and name == running:
            found = {"outcome": "hang", "stopped": "the command's timeout", "input": None}
        if not isinstance(found, dict):
            entry.update(fuzzed=False, detail="not fuzzed: the fuzz run reported nothing for it (it ended before "
                                              "reaching it)")
            continue
        outcome = found.get("outcome")
        inputs, seconds = found.get("inputs"), found.get("seconds")
        facts: dict[str, object] = {
            "inputs": inputs if isinstance(inputs, int) and not isinstance(inputs, bool) else 0,
            "seconds": round(seconds, 3) if isinstance(seconds, float) else None,
            "stopped": _text(found.get("stopped"), 60)}
        if outcome not in ("passed", "failed", "hang", "unusable"):
            entry.update(fuzzed=False, detail="not fuzzed: the fuzz run reported no outcome codeflux knows for it")
            continue
        if outcome == "unusable":
            entry.update(fuzzed=False, detail=f"skipped: {_text(found.get('detail'), 300) or 'not usable'}")
            continue
        if outcome == "passed":
            entry.update(fuzzed=True, outcome="passed", **facts,
                         detail=f"{facts['inputs']} inputs, no exception beyond "
                                + (", ".join(plan.documented) if plan.documented else "none documented")
                                + f"; stopped: {facts['stopped']}")
            continue
        shown_input = _text(found.get("input"), MAX_REPR + 20)
        traceback = found.get("traceback")
        tail = [str(line)[:300] for line in traceback[-12:]] if isinstance(traceback, list) else []
        command = shown_command(replay)
        if outcome == "hang":
            stopped = facts["stopped"] or "input deadline"
            finding = (f"{name} hung on input {shown_input or '(not recorded)'} (stopped by the {stopped}); "
                       f"reproduce with: {command}")
            entry.update(fuzzed=True, outcome="hang", **facts, input=shown_input, reproduce=command,
                         reproduce_argv=list(replay), detail="hung", findings=[finding])
        else:
            exception = _text(found.get("exception"), 400) or "an exception"
            documented = ", ".join(plan.documented) if plan.documented else "none documented"
            finding = (f"{name} raised {exception} on input {shown_input} (documented raises: {documented}); "
                       f"reproduce with: {command}")
            entry.update(fuzzed=True, outcome="failed", **facts, input=shown_input, exception=exception,
                         traceback_tail=tail, reproduce=command, reproduce_argv=list(replay),
                         detail=f"raised {exception.split(':', 1)[0]}", findings=[finding])
        findings.append(finding)
    return findings
