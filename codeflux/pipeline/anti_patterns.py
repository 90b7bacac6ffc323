"""Stage 14 anti-patterns: a fixed rule set, on the lines the diff adds or rewrites.

Two checkers look at each Python file the diff adds or changes outside the tests (the source read once by
:func:`~codeflux.pipeline.atoms.atoms_of_diff`, never again from the worktree):

* codeflux's own ruff (:mod:`~codeflux.pipeline.ruff_runner`: isolated from the repository's configuration and
  its ``noqa`` comments) with exactly :data:`RUFF_RULES` — swallowed errors (``BLE001`` blind except, ``E722``
  bare except, ``S110`` try-except-pass), ``B006`` mutable default arguments, ``PLW0603`` global statements,
  untyped parameters and returns (``ANN001``–``ANN003``, ``ANN201``, ``ANN202``), boolean flag arguments
  (``FBT001``, ``FBT002``), shadowed builtins (``A001``, ``A002``), ``PLW2901`` loop variables overwritten, and
  ``C901`` cyclomatic complexity above :data:`MAX_COMPLEXITY`;
* :mod:`ast` checks ruff lacks or has only in preview: ``exit-outside-main`` (``sys.exit``, ``exit``,
  ``quit`` or ``os._exit`` called outside an ``if __name__ == "__main__":`` block, in a module that is not a
  ``__main__.py``), ``assert-in-product-code`` (``assert`` vanishes under ``python -O``, so it validates
  nothing) and ``deep-nesting`` (a block nested more than :data:`MAX_NESTING` deep inside a function; ``elif``
  does not nest).

Only findings on changed lines count — a finding whose line span touches a line the diff adds or rewrites, or
a ``C901`` on a function the diff changed (its complexity is the function's, wherever its lines changed);
every other finding is context, counted but not listed. The gate holds when no finding counts. Files left
when the stage's :data:`TIME_BUDGET_SECONDS` run out are listed as not examined. The stage is
advisory (it never fails a run's exit code); its ``findings`` (``path:line rule message``) join the context of
an attempt a send-back gate starts. A missing or broken ruff is ``blocked`` naming it. What the stage does not
prove: that code without findings is well designed — only these rules were checked.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom, FileAtoms
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.ruff_runner import RuffFinding, RuffTool, RuffUnavailable, locate_ruff
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = [
    "MAX_COMPLEXITY",
    "MAX_NESTING",
    "OWN_CHECKS",
    "RUFF_RULES",
    "TIME_BUDGET_SECONDS",
    "Finding",
    "evaluate_anti_patterns",
    "own_findings",
]

MAX_COMPLEXITY: Final = 10
TIME_BUDGET_SECONDS: Final = 300.0
MAX_NESTING: Final = 5
RUFF_RULES: Final = ("BLE001", "E722", "S110", "B006", "PLW0603", "ANN001", "ANN002", "ANN003", "ANN201", "ANN202",
                     "FBT001", "FBT002", "A001", "A002", "PLW2901", "C901")
OWN_CHECKS: Final = ("exit-outside-main", "assert-in-product-code", "deep-nesting")
_RUFF_CONFIG: Final = (f"lint.mccabe.max-complexity = {MAX_COMPLEXITY}",)
_STAGE: Final = StageName.ANTI_PATTERNS
_SHOWN: Final = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    path: str
    line: int
    end_line: int
    rule: str
    message: str

    def shown(self) -> str:
        return f"{self.path}:{self.line} {self.rule} {self.message}"


# ─── codeflux's own AST checks ────────────────────────────────────────────────────────────────────────

_EXITS: Final = frozenset({("sys", "exit"), ("os", "_exit"), ("", "exit"), ("", "quit")})
_BLOCKS: Final = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.TryStar, ast.With, ast.AsyncWith,
                  ast.Match)
_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides))


def _exit_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and ("", func.id) in _EXITS:
        return func.id
    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and (func.value.id, func.attr) in _EXITS):
        return f"{func.value.id}.{func.attr}"
    return None


def _exits(node: ast.AST, path: str, *, in_main: bool) -> Iterator[Finding]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_main_guard(child):
            for statement in child.body:
                yield from _exits(statement, path, in_main=True)
            for statement in child.orelse:
                yield from _exits(statement, path, in_main=in_main)
            continue
        if isinstance(child, ast.Call) and not in_main:
            name = _exit_name(child)
            if name is not None:
                yield Finding(path=path, line=child.lineno, end_line=child.end_lineno or child.lineno,
                              rule="exit-outside-main",
                              message=f"{name}() outside an `if __name__ == \"__main__\":` block ends the "
                                      "caller's process; raise an exception instead")
        yield from _exits(child, path, in_main=in_main)


def _nested(body: Sequence[ast.stmt], depth: int, path: str) -> Iterator[Finding]:
    """Blocks deeper than :data:`MAX_NESTING` in ``body`` (at block depth ``depth``), the outermost one of each
    too-deep run only."""
    for statement in body:
        if isinstance(statement, _FUNCTIONS):
            yield from _nested(statement.body, 0, path)
            continue
        if isinstance(statement, ast.ClassDef):
            yield from _nested(statement.body, depth, path)
            continue
        if not isinstance(statement, _BLOCKS):
            continue
        level = depth + 1
        if level > MAX_NESTING:
            yield Finding(path=path, line=statement.lineno, end_line=statement.end_lineno or statement.lineno,
                          rule="deep-nesting",
                          message=f"a block nested {level} deep in a function (limit {MAX_NESTING})")
            continue
        yield from _inner(statement, level, path)


def _inner(statement: ast.stmt, level: int, path: str) -> Iterator[Finding]:
    if isinstance(statement, ast.If):
        yield from _nested(statement.body, level, path)
        orelse = statement.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif: the same depth as its if
            yield from _nested(orelse, level - 1, path)
        else:
            yield from _nested(orelse, level, path)
        return
    if isinstance(statement, ast.Match):
        for case in statement.cases:
            yield from _nested(case.body, level, path)
        return
    for field in ("body", "orelse", "finalbody"):
        yield from _nested(getattr(statement, field, []), level, path)
    for handler in getattr(statement, "handlers", []):
        yield from _nested(handler.body, level, path)


def _depth_in_functions(tree: ast.Module, path: str) -> Iterator[Finding]:
    # Module-level blocks are not counted: the nesting limit is about function bodies.
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _nested(node.body, 0, path)


def own_findings(path: str, source: str) -> tuple[Finding, ...]:
    """What codeflux's AST checks find in ``source`` (every line; the caller keeps the changed ones)."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return ()
    found: list[Finding] = []
    if PurePosixPath(path).name != "__main__.py":
        found.extend(_exits(tree, path, in_main=False))
    found.extend(Finding(path=path, line=node.lineno, end_line=node.end_lineno or node.lineno,
                         rule="assert-in-product-code",
                         message="assert validates nothing under python -O; raise an exception instead")
                 for node in ast.walk(tree) if isinstance(node, ast.Assert))
    # A nested function restarts the count, so each function is walked once from its own body.
    seen: set[tuple[int, int]] = set()
    for finding in _depth_in_functions(tree, path):
        if (finding.line, finding.end_line) not in seen:
            seen.add((finding.line, finding.end_line))
            found.append(finding)
    return tuple(sorted(found, key=lambda item: (item.line, item.rule)))


# ─── the stage ────────────────────────────────────────────────────────────────────────────────────────

def _counts(finding: Finding, changed: frozenset[int], atoms: Sequence[Atom]) -> bool:
    if any(line in changed for line in range(finding.line, finding.end_line + 1)):
        return True
    return finding.rule == "C901" and any(atom.changed and atom.first_line <= finding.line <= atom.last_line
                                          for atom in atoms)


def _file_findings(tool: RuffTool, file: FileAtoms) -> tuple[list[Finding], int]:
    """The findings on ``file``'s changed lines, and how many others (context) there were."""
    ruff: tuple[RuffFinding, ...] = tool.check(file.source, filename=file.path, rules=RUFF_RULES,
                                               config=_RUFF_CONFIG)
    every = [Finding(path=file.path, line=item.line, end_line=item.end_line, rule=item.rule, message=item.message)
             for item in ruff]
    every.extend(own_findings(file.path, file.source))
    changed = frozenset(file.changed)
    counted = [finding for finding in every if _counts(finding, changed, file.atoms)]
    counted.sort(key=lambda item: (item.line, item.rule))
    return counted, len(every) - len(counted)


def evaluate_anti_patterns(diff: DiffAtoms, *, ruff: Path | None = None) -> StageResult:
    """Stage 14 (see the module docstring); ``ruff`` names the binary (default: codeflux's own)."""
    files = [file for file in diff.files if file.problem is None and file.changed]
    not_examined = dict(sorted(diff.not_examined.items()))
    rules = {"ruff": list(RUFF_RULES), "ruff_max_complexity": MAX_COMPLEXITY, "own": list(OWN_CHECKS),
             "max_nesting": MAX_NESTING}
    if not files:
        return stage_result(_STAGE, StageOutcome.SKIPPED,
                            "the diff adds or rewrites no line of a Python file outside the tests",
                            {"rules": rules, "not_examined": not_examined})
    per_file: list[tuple[FileAtoms, list[Finding], int]] = []
    try:
        tool = locate_ruff(ruff)
        deadline = time.monotonic() + TIME_BUDGET_SECONDS
        for file in files:
            if time.monotonic() > deadline:
                not_examined[file.path] = f"the stage's time budget ({TIME_BUDGET_SECONDS:g} s) ran out before it"
                continue
            per_file.append((file, *_file_findings(tool, file)))
    except RuffUnavailable as error:
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"{error}; codeflux's own ruff is needed for this stage "
                            "(reinstall codeflux: its ruff dependency provides it)",
                            {"tool": "ruff", "problem": str(error), "rules": rules})
    findings = [finding for _, counted, _ in per_file for finding in counted]
    files = [file for file, _, _ in per_file]
    changed_lines = sum(len(file.changed) for file in files)
    evidence: dict[str, object] = {
        "tool": {"name": "ruff", "version": tool.version, "provided_by": "codeflux's own installation",
                 "isolated": "repository configuration and noqa comments ignored"},
        "rules": rules,
        "scope": "changed lines only (a C901 also on a changed function); other findings are context",
        "files": [{"path": file.path, "changed_lines": len(file.changed), "findings": len(counted),
                   "context_findings": context} for file, counted, context in per_file],
        "findings": [finding.shown() for finding in findings],
        "atoms": [{"qualified_name": atom.qualified_name, "path": atom.path,
                   "findings": [finding.shown() for finding in findings
                                if finding.path == atom.path and atom.first_line <= finding.line <= atom.last_line]}
                  for file in files for atom in file.atoms],
        "not_examined": not_examined,
        "does_not_prove": "that code without findings is well designed: only the listed rules were checked",
    }
    scope = (f"{changed_lines} changed line{'s' if changed_lines != 1 else ''} of {len(files)} Python "
             f"file{'s' if len(files) != 1 else ''}")
    if not findings:
        return stage_result(_STAGE, StageOutcome.SATISFIED,
                            f"ruff {tool.version} ({len(RUFF_RULES)} fixed rules, the repository's configuration "
                            f"ignored) and codeflux's {len(OWN_CHECKS)} AST checks found nothing on the {scope}",
                            evidence)
    shown = "; ".join(finding.shown() for finding in findings[:_SHOWN])
    more = f" and {len(findings) - _SHOWN} more" if len(findings) > _SHOWN else ""
    return stage_result(_STAGE, StageOutcome.FAILED,
                        f"{len(findings)} anti-pattern finding{'s' if len(findings) != 1 else ''} on the {scope}: "
                        f"{shown}{more}", evidence)
