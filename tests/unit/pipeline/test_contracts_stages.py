"""Stage 5 (contracts) and stage 10 (atoms) on real task worktrees of a small typed package (issue 17): each
worktree is built once for the module; each test varies only the approved plan's declarations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.domain.atoms import Atom, AtomChange
from codeflux.domain.contracts import AtomEffect, DeclaredAtom
from codeflux.domain.forecast import TaskClass
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.domain.plans import Plan, PlanScope, PlanStep, plan_sha256
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.worktrees import TaskWorktree, create_task_worktree
from codeflux.pipeline.atoms import DiffAtoms, atoms_of_diff
from codeflux.pipeline.contracts import Declaration, check_contracts, matching_declaration
from codeflux.pipeline.ports import TaskFacts
from codeflux.pipeline.purity import check_purity
from codeflux.pipeline.specification import StageResult
from tests.fixtures.repos import RepoState, make_repository

E = AtomEffect

# The typed module the change writes over the base's pkg/calc.py (add changed, sub untouched, the rest added).
TYPED = '''"""Calculations."""

import os
from pathlib import Path

LIMIT = 10
HISTORY = []


def add(a: int, b: int) -> int:
    """The sum of a and b.

    Raises:
        ValueError: when a is over LIMIT.
    """
    if a > LIMIT:
        raise ValueError("a is over the limit")
    return a + b


def sub(a, b):
    return a - b


def load(path: str) -> str:
    return Path(path).read_text()


def scaled(a: int) -> int:
    return a * len(HISTORY)


def record(a: int) -> None:
    global HISTORY
    HISTORY = [*HISTORY, a]


def home() -> str:
    return os.environ.get("HOME", "")


def _twice(x):
    return x * 2


class Stats:
    def mean(self, values: list[float]) -> float:
        return sum(values) / len(values)
'''


Built = tuple[TaskWorktree, DiffAtoms]


def line(text: str) -> int:
    """The line of TYPED that starts with ``text`` (after its indentation)."""
    return next(number for number, found in enumerate(TYPED.splitlines(), start=1) if found.strip().startswith(text))


def _worktree(root: Path, name: str, files: dict[str, str]) -> Built:
    built = make_repository(root / name, RepoState.CLEAN)
    worktree = create_task_worktree(built.path, worktrees_root=root / name / "worktrees", repo_key=name,
                                    task_id=TaskId.parse(f"tsk_{name.encode().hex():0<16}"), base_commit=built.head)
    for path, text in files.items():
        (worktree.path / path).write_text(text)
    changed = [{"path": f.path, "kind": f.kind.value} for f in diff_against_base(worktree).files]
    return worktree, atoms_of_diff(worktree, changed)


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _worktree(tmp_path_factory.mktemp("typed"), "typed", {"pkg/calc.py": TYPED})


@pytest.fixture(scope="module")
def untyped(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """sub changed, left unannotated."""
    return _worktree(tmp_path_factory.mktemp("untyped"), "untyped",
                     {"pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return -(b - a)\n"})


@pytest.fixture(scope="module")
def no_atoms(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Only a comment and a test change: no atom."""
    return _worktree(tmp_path_factory.mktemp("plain"), "plain", {
        "pkg/calc.py": "def add(a, b):\n    return a + b  # the sum\n\n\ndef sub(a, b):\n    return a - b\n",
        "tests/test_calc.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"})


def atom(name: str, signature: str, *effects: AtomEffect) -> DeclaredAtom:
    return DeclaredAtom(name=name, signature=signature, effects=effects)


DECLARED = (
    atom("add", "def add(a: int, b: int) -> int"),
    atom("pkg.calc.load", "def load(path: str) -> str", E.FILE),
    atom("calc.scaled", "def scaled(a: int) -> int", E.GLOBAL_STATE),
    atom("record", "def record(a: int) -> None", E.GLOBAL_STATE),
    atom("home", "def home() -> str", E.ENV),
    atom("Stats.mean", "def mean(self, values: list[float]) -> float"),
    atom("pkg.calc.divide", "def divide(a: int, b: int) -> float"),
)


def task(worktree: TaskWorktree, *declared: DeclaredAtom, files: tuple[str, ...] = ("pkg/calc.py",)) -> TaskFacts:
    plan = Plan(task_class=TaskClass.FEATURE, scope=PlanScope(summary="Calculations"),
                steps=(PlanStep(title="Write calc", detail="The functions of pkg/calc.py", expected_files=files,
                                atoms=declared),))
    return TaskFacts(task_id=TaskId.parse("tsk_0123456789abcdef"), requirement="Calculations.", plan=plan,
                     plan_revision=1, plan_sha256=plan_sha256(plan), worktree=worktree)


def contracts(built: Built, *declared: DeclaredAtom) -> StageResult:
    worktree, diff = built
    return check_contracts(task(worktree, *declared), diff, diff_identity="d" * 64)


def purity(built: Built, *declared: DeclaredAtom) -> StageResult:
    worktree, diff = built
    return check_purity(task(worktree, *declared), diff, diff_identity="d" * 64)


def by_name(result: StageResult) -> dict[str, dict[str, object]]:
    return {str(item["qualified_name"]): item for item in result.evidence["atoms"]}  # type: ignore[union-attr]


def test_a_typed_change_matching_its_declarations_satisfies_contracts_with_per_atom_evidence(typed: Built) -> None:
    result = contracts(typed, *DECLARED)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert "7 atom(s) in the diff, 6 public" in (result.verdict.gate_evaluation or "")
    evidence = result.evidence
    assert evidence["effect_table_version"] == "1" and evidence["findings"] == []
    atoms = by_name(result)
    assert "pkg.calc.sub" not in atoms  # untouched: not an atom
    add = atoms["pkg.calc.add"]
    assert add["declared"] == {"step": 1, "name": "add", "signature": "def add(a: int, b: int) -> int", "effects": []}
    assert add["parameters"] == [{"name": "a", "annotation": "int"}, {"name": "b", "annotation": "int"}]
    assert (add["returns"], add["documented_raises"], add["raised"]) == ("int", ["ValueError"], ["ValueError"])
    assert atoms["pkg.calc.load"]["effects_inferred"] == [
        {"effect": "file", "line": line("return Path(path)"), "what": ".read_text()"}]
    assert atoms["pkg.calc.home"]["effects_inferred"][0]["effect"] == "env"  # type: ignore[index]
    assert atoms["pkg.calc.Stats.mean"]["declared"]["name"] == "Stats.mean"  # type: ignore[index]
    # listed, never failing: the private helper, and the declared atom the diff does not touch
    twice = line("def _twice")
    assert evidence["undeclared_private"] == [f"pkg.calc._twice (pkg/calc.py:{twice})"]
    assert evidence["unannotated_private"] == [f"pkg.calc._twice (pkg/calc.py:{twice}): parameter x, return"]
    assert evidence["declared_not_in_diff"] == ["step 1: pkg.calc.divide"]


def test_an_undeclared_public_atom_fails_contracts_naming_it(typed: Built) -> None:
    result = contracts(typed, *[declared for declared in DECLARED if declared.name != "home"])

    assert result.verdict.outcome is StageOutcome.FAILED
    assert result.evidence["findings"] == [
        f"pkg.calc.home (pkg/calc.py:{line('def home')}) is public and no plan step declares it"]
    assert "pkg.calc.home" in (result.verdict.gate_evaluation or "")
    # each atom's entry carries its own findings (the evidence bundle shows them per atom)
    listed = result.evidence["atoms"]
    assert isinstance(listed, list)
    entries = {entry["qualified_name"]: entry for entry in listed}
    assert entries["pkg.calc.home"]["findings"] == result.evidence["findings"]
    assert all(entry["findings"] == [] for name, entry in entries.items() if name != "pkg.calc.home")


def test_an_effect_outside_the_declared_fails_contracts_with_where_it_was_seen(typed: Built) -> None:
    pure_load = [atom("load", "def load(path: str) -> str") if d.name == "pkg.calc.load" else d for d in DECLARED]

    result = contracts(typed, *pure_load)

    assert result.verdict.outcome is StageOutcome.FAILED
    assert result.evidence["findings"] == [
        f"pkg.calc.load (pkg/calc.py:{line('def load')}) has effects its declaration does not list: "
        f"file (line {line('return Path(path)')}: .read_text())"]


def test_an_unannotated_public_atom_fails_contracts(untyped: Built) -> None:
    result = contracts(untyped, atom("sub", "def sub(a: int, b: int) -> int"))

    assert result.verdict.outcome is StageOutcome.FAILED
    assert result.evidence["findings"] == [
        "pkg.calc.sub (pkg/calc.py:5) lacks annotations: parameter a, parameter b, return"]
    assert result.evidence["signature_differences"] == [
        "pkg.calc.sub: declared `def sub(a: int, b: int) -> int`, written `def sub(a, b)`"]


def test_a_diff_without_atoms_skips_both_stages_with_the_reason(no_atoms: Built) -> None:
    declared = atom("add", "def add(a: int, b: int) -> int")
    for result in (contracts(no_atoms, declared), purity(no_atoms, declared)):
        assert result.verdict.outcome is StageOutcome.SKIPPED
        assert "adds or changes no function or method outside tests" in (result.verdict.reason or "")
    assert contracts(no_atoms, declared).evidence["declared"] == [
        {"step": 1, "name": "add", "signature": "def add(a: int, b: int) -> int", "effects": []}]


def test_atoms_declared_pure_that_read_only_their_arguments_satisfy_stage_10(typed: Built) -> None:
    result = purity(typed, *DECLARED)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert result.verdict.stage is StageName.ATOMS
    assert [item["qualified_name"] for item in result.evidence["atoms"]] == [  # type: ignore[union-attr,index]
        "pkg.calc.add", "pkg.calc.Stats.mean"]  # add reads LIMIT: a constant, not state
    assert "module-level mutable" in str(result.evidence["rule"])


def test_a_pure_declared_atom_reading_a_module_level_list_fails_stage_10(typed: Built) -> None:
    result = purity(typed, *DECLARED[:2], atom("scaled", "def scaled(a: int) -> int"))

    assert result.verdict.outcome is StageOutcome.FAILED
    assert result.evidence["findings"] == [
        f"pkg.calc.scaled (pkg/calc.py) is declared pure but reads module-level mutable HISTORY "
        f"(line {line('return a * len(HISTORY)')})"]


def test_a_pure_declared_atom_with_a_global_statement_fails_stage_10(typed: Built) -> None:
    result = purity(typed, atom("record", "def record(a: int) -> None"))

    assert result.verdict.outcome is StageOutcome.FAILED
    findings = result.evidence["findings"]
    assert findings == [
        f"pkg.calc.record (pkg/calc.py) is declared pure but declares global HISTORY (line {line('global HISTORY')})",
        "pkg.calc.record (pkg/calc.py) is declared pure but reads module-level mutable HISTORY "
        f"(line {line('HISTORY = [*HISTORY, a]')})"]


def test_stage_10_is_skipped_when_no_atom_of_the_diff_is_declared_pure(untyped: Built) -> None:
    result = purity(untyped, atom("sub", "def sub(a: int, b: int) -> int", E.CLOCK))

    assert result.verdict.outcome is StageOutcome.SKIPPED
    assert result.verdict.reason == "none of the diff's 1 atom(s) is declared pure (no effects) in the approved plan"


def _atom(path: str, qualified: str, local: str) -> Atom:
    return Atom(path=path, qualified_name=qualified, local_name=local, change=AtomChange.ADDED, first_line=1,
                last_line=2, signature="def f() -> None", changed=(1, 2), is_method="." in local, is_async=False)


@pytest.mark.parametrize(("name", "files", "matches"), [
    ("calc.ops.add", (), True),
    ("ops.add", ("elsewhere.py",), True),  # a tail naming part of the module
    ("add", ("calc/ops.py",), True),
    ("add", ("README.md",), True),  # the step names no Python file: the name decides
    ("add", ("calc/other.py",), False),
    ("calc.add", (), False),
    ("sub", ("calc/ops.py",), False),
])
def test_a_declaration_matches_its_atom_tolerating_the_module_prefix(name: str, files: tuple[str, ...],
                                                                      matches: bool) -> None:
    add = _atom("calc/ops.py", "calc.ops.add", "add")
    declaration = Declaration(step=1, step_files=files, atom=atom(name, "def add() -> None"))
    assert (matching_declaration(add, [declaration]) is declaration) is matches


def test_a_method_is_matched_by_class_and_name() -> None:
    mean = _atom("pkg/stats.py", "pkg.stats.Stats.mean", "Stats.mean")
    declared = Declaration(step=2, step_files=("pkg/stats.py",), atom=atom("Stats.mean", "def mean(self) -> float"))
    other = replace(declared, atom=atom("Other.mean", "def mean(self) -> float"))
    assert matching_declaration(mean, [other, declared]) is declared
