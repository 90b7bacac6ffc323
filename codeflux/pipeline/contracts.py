"""Stage 5, contracts: the diff's atoms against what the approved plan declared before the code was written.

**The contract** of an atom (a function or method the diff adds or changes outside tests, see
:mod:`codeflux.domain.atoms`) is its declaration in a plan step (name, signature text, effects), its parameter
and return annotations, the exceptions its docstring documents (``Raises:`` / ``:raises X:``), and the effects
the syntax tree shows (:mod:`codeflux.domain.contracts`, effect table version
:data:`~codeflux.domain.contracts.EFFECT_TABLE_VERSION`). All of it is read with :mod:`ast` by codeflux's own
interpreter; no repository code runs.

**Matching** a declaration to an atom: the declared name equals the atom's qualified name (``calc.ops.add``),
or is a dotted tail of it that includes part of the module (``ops.add``), or equals the name inside its module
(``add``, ``Calc.mean``) when the declaring step names the atom's file in ``expected_files`` — or names no
Python file at all (then the name alone decides). The first matching declaration in plan order counts.

**The gate** holds when every changed *public* atom (no part of its name starts with ``_``; dunders count as
public) is declared, annotates every parameter (``self``/``cls`` of a method excepted) and its return
(``__init__`` excepted), and has no inferred effect outside its declared effects. Each way it does not hold is
one line in the evidence's ``findings`` (what a send-back started by another gate carries to the loop), and in
the ``findings`` of that atom's entry under ``atoms``. Listed,
never failing: private helpers that are undeclared or unannotated, declared atoms the diff does not touch, and
declared signatures that differ from the written one. A diff with no atom is ``skipped`` with that reason.

What it does not prove: effects reached through calls into other functions, ``getattr``/``eval`` or objects
passed in are not followed (the table is a syntactic lower bound); pre- and postconditions are not checked;
documented exceptions are recorded, not verified.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.contracts import (
    EFFECT_TABLE_VERSION,
    AtomShape,
    DeclaredAtom,
    ModuleFacts,
    effect_order,
    module_facts,
    shape_of,
)
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.plans import Plan
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.atoms import MAX_FILE_BYTES, DiffAtoms
from codeflux.pipeline.ports import TaskFacts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "MAX_LISTED",
    "NOT_PROVED",
    "AtomContract",
    "Declaration",
    "atom_contracts",
    "check_contracts",
    "declarations_of",
    "declared_function",
    "evaluate_contracts",
    "matching_declaration",
]

NOT_PROVED: Final = (
    "effects reached through calls into other functions, getattr/eval or objects passed in are not followed "
    "(the effect table is a syntactic lower bound); pre- and postconditions are not checked; documented "
    "exceptions are recorded, not verified"
)
_FINDINGS_SHOWN: Final = 3
MAX_LISTED: Final = 200
"""Atoms (and findings, and each listed kind) kept in the evidence; the counts say how many there were."""
_MAX_GATE_TEXT: Final = 2000



@dataclass(frozen=True, slots=True, kw_only=True)
class Declaration:
    """One declared atom with the step (numbered from 1) that declares it and the files that step names."""

    step: int
    step_files: tuple[str, ...]
    atom: DeclaredAtom

    def to_evidence(self) -> dict[str, object]:
        return {"step": self.step, **self.atom.to_document()}


def declarations_of(plan: Plan) -> tuple[Declaration, ...]:
    """Every atom the plan's steps declare, in plan order."""
    return tuple(Declaration(step=number, step_files=step.expected_files, atom=atom)
                 for number, step in enumerate(plan.steps, start=1) for atom in step.atoms)


def _declares(declaration: Declaration, atom: Atom) -> bool:
    name = declaration.atom.name
    if name == atom.qualified_name:
        return True
    if atom.qualified_name.endswith("." + name) and name.count(".") > atom.local_name.count("."):
        return True  # a tail that names part of the module: ops.add for calc.ops.add
    if name != atom.local_name:
        return False
    return atom.path in declaration.step_files or not any(path.endswith(".py") for path in declaration.step_files)


def matching_declaration(atom: Atom, declarations: Sequence[Declaration]) -> Declaration | None:
    """The first declaration that names ``atom`` (see the module docstring), or None."""
    return next((declaration for declaration in declarations if _declares(declaration, atom)), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomContract:
    """One atom with its declaration (None: undeclared) and its shape (None: not examined, ``problem`` says
    why)."""

    atom: Atom
    declaration: Declaration | None
    shape: AtomShape | None
    problem: str | None = None

    @property
    def declared_pure(self) -> bool:
        return self.declaration is not None and self.declaration.atom.pure

    def undeclared_effects(self) -> tuple[str, ...]:
        """The inferred effects outside the declared ones, each with where it was seen."""
        if self.shape is None or self.declaration is None:
            return ()
        allowed = set(self.declaration.atom.effects)
        return tuple(f"{use.effect.value} (line {use.line}: {use.what})" for use in self.shape.effects
                     if use.effect not in allowed)

    def signature_difference(self) -> str | None:
        """How the declared signature differs from the written one (parameters and return), or None when they
        agree or the declared text does not parse as a signature."""
        if self.declaration is None:
            return None
        declared = _parsed_signature(self.declaration.atom.signature, self.atom.name)
        written = _parsed_signature(self.atom.signature, self.atom.name)
        if declared is None or written is None or declared == written:
            return None
        return f"declared `{self.declaration.atom.signature}`, written `{self.atom.signature}`"

    def to_evidence(self) -> dict[str, object]:
        evidence: dict[str, object] = {
            **self.atom.to_evidence(),
            "declared": None if self.declaration is None else self.declaration.to_evidence(),
        }
        if self.shape is None:
            evidence["not_examined"] = self.problem or "not examined"
            return evidence
        evidence.update({
            "parameters": [{"name": name, "annotation": annotation} for name, annotation in self.shape.parameters],
            "returns": self.shape.returns,
            "missing_annotations": list(self.shape.missing_annotations),
            "documented_raises": list(self.shape.documented_raises),
            "raised": list(self.shape.raised),
            "effects_inferred": [use.to_evidence() for use in self.shape.effects],
            "effects_declared": None if self.declaration is None else [e.value for e in self.declaration.atom.effects],
            "undeclared_effects": list(self.undeclared_effects()),
        })
        return evidence


def declared_function(text: str, name: str) -> ast.FunctionDef | None:
    """A declared signature — ``def name(…) -> R``, ``name(…) -> R`` or ``(…) -> R`` — as the syntax tree of a
    function with that signature; None when it does not parse as one."""
    body = text.strip().rstrip(":")
    for prefix in ("async def ", "def "):
        body = body.removeprefix(prefix)
    if body.startswith("("):
        body = name + body
    try:
        tree = ast.parse(f"def {body}: ...")
    except (SyntaxError, ValueError):
        return None
    function = tree.body[0] if tree.body else None
    return function if isinstance(function, ast.FunctionDef) else None


def _parsed_signature(text: str, name: str) -> tuple[str, str | None] | None:
    """(parameters, return) of a declared signature (:func:`declared_function`)."""
    function = declared_function(text, name)
    if function is None:
        return None
    return ast.unparse(function.args), None if function.returns is None else ast.unparse(function.returns)


def _read_source(worktree: TaskWorktree, path: str) -> str:
    """The file's text, read plainly inside the worktree (never through a link); :class:`ValueError` naming
    why not."""
    current = worktree.path
    for part in PurePosixPath(path).parts:
        current = current / part
        if current.is_symlink():
            raise ValueError("a symbolic link on the way")
    if not current.is_file() or current.stat().st_size > MAX_FILE_BYTES:
        raise ValueError("not a regular file within the size limit")
    try:
        return current.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None


def atom_contracts(worktree: TaskWorktree, atoms: Sequence[Atom], plan: Plan) -> tuple[AtomContract, ...]:
    """Each atom with its matching declaration and the shape its syntax tree shows (each file parsed once)."""
    declarations = declarations_of(plan)
    modules: dict[str, ModuleFacts | str] = {}
    contracts: list[AtomContract] = []
    for atom in atoms:
        if atom.path not in modules:
            try:
                modules[atom.path] = module_facts(_read_source(worktree, atom.path), filename=atom.path)
            except (ValueError, SyntaxError) as error:
                modules[atom.path] = f"not read: {error.msg if isinstance(error, SyntaxError) else error}"
        module = modules[atom.path]
        shape = None if isinstance(module, str) else shape_of(module, atom.local_name, is_method=atom.is_method)
        problem = module if isinstance(module, str) else (None if shape is not None else "its definition was not found")
        contracts.append(AtomContract(atom=atom, declaration=matching_declaration(atom, declarations), shape=shape,
                                      problem=problem))
    return tuple(contracts)


def _located(atom: Atom) -> str:
    return f"{atom.qualified_name} ({atom.path}:{atom.first_line})"


def _atom_findings(contract: AtomContract) -> list[str]:
    """The gate's findings on one atom (none for a private helper: those are listed, not judged)."""
    atom = contract.atom
    if not atom.public:
        return []
    findings: list[str] = []
    if contract.declaration is None:
        findings.append(f"{_located(atom)} is public and no plan step declares it")
    if contract.shape is None:
        findings.append(f"{_located(atom)} could not be examined: {contract.problem}")
        return findings
    if contract.shape.missing_annotations:
        findings.append(f"{_located(atom)} lacks annotations: {', '.join(contract.shape.missing_annotations)}")
    undeclared = contract.undeclared_effects()
    if undeclared:
        findings.append(f"{_located(atom)} has effects its declaration does not list: {'; '.join(undeclared)}")
    return findings


def _findings(contracts: Sequence[AtomContract]) -> list[str]:
    return [finding for contract in contracts for finding in _atom_findings(contract)]


def _skipped(reason: str, evidence: dict[str, object]) -> StageResult:
    return stage_result(StageName.CONTRACTS, StageOutcome.SKIPPED, reason, evidence)


def evaluate_contracts(facts: AtomFacts) -> StageResult:
    """Stage 5 as phase B runs it."""
    return check_contracts(facts.ports.facts, facts.diff, diff_identity=facts.diff_identity)


def check_contracts(task: TaskFacts, diff: DiffAtoms, *, diff_identity: str | None) -> StageResult:
    """Stage 5 (see the module docstring) on the task's approved plan and the diff's atoms."""
    plan = task.plan
    declarations = declarations_of(plan)
    base: dict[str, object] = {
        "effect_table_version": EFFECT_TABLE_VERSION, "diff_identity": diff_identity,
        "plan_revision": task.plan_revision, "plan_sha256": task.plan_sha256,
        "declared_count": len(declarations),
        "declared": [declaration.to_evidence() for declaration in declarations[:MAX_LISTED]],
        "not_examined": dict(sorted(diff.not_examined.items())), "not_proved": NOT_PROVED,
    }
    atoms = diff.atoms
    if not atoms:
        unexamined = f"; {len(diff.not_examined)} changed Python file(s) not examined" \
            if diff.not_examined else ""
        return _skipped("the diff adds or changes no function or method outside tests: there is no contract to "
                        f"compare{unexamined}", {**base, "atoms": [], "findings": []})
    contracts = atom_contracts(task.worktree, atoms, plan)
    findings = _findings(contracts)
    matched = {(c.declaration.step, c.declaration.atom.name) for c in contracts if c.declaration is not None}
    private = [c for c in contracts if not c.atom.public]
    evidence: dict[str, object] = {
        **base,
        "atom_count": len(contracts), "finding_count": len(findings),
        "atoms": [{**contract.to_evidence(), "findings": _atom_findings(contract)}
                  for contract in contracts[:MAX_LISTED]],
        "findings": findings[:MAX_LISTED],
        "undeclared_private": [_located(c.atom) for c in private if c.declaration is None][:MAX_LISTED],
        "unannotated_private": [f"{_located(c.atom)}: {', '.join(c.shape.missing_annotations)}" for c in private
                                if c.shape is not None and c.shape.missing_annotations][:MAX_LISTED],
        "declared_not_in_diff": [f"step {d.step}: {d.atom.name}" for d in declarations
                                 if (d.step, d.atom.name) not in matched][:MAX_LISTED],
        "signature_differences": [f"{c.atom.qualified_name}: {difference}" for c in contracts
                                  if (difference := c.signature_difference()) is not None][:MAX_LISTED],
    }
    public = sum(1 for contract in contracts if contract.atom.public)
    if findings:
        shown = "; ".join(findings[:_FINDINGS_SHOWN]) + ("; …" if len(findings) > _FINDINGS_SHOWN else "")
        return stage_result(StageName.CONTRACTS, StageOutcome.FAILED,
                            f"{len(findings)} finding(s) on {len(contracts)} atom(s): {shown}"[:_MAX_GATE_TEXT],
                            evidence)
    effects = sorted({e.value for c in contracts if c.shape is not None for e in effect_order(c.shape.effect_kinds)})
    return stage_result(
        StageName.CONTRACTS, StageOutcome.SATISFIED,
        f"{len(contracts)} atom(s) in the diff, {public} public: each declared in plan revision "
        f"{task.plan_revision}, annotated, with inferred effects ({', '.join(effects) or 'none'}) "
        f"within the declared (effect table v{EFFECT_TABLE_VERSION}); {len(private)} private helper(s) listed, "
        "not judged; pre- and postconditions not checked", evidence)

