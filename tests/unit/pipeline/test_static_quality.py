"""Phase B's static stages — 14 anti-patterns, 15 atom-optimization, 16 atom-complexity, 17 atom-documentation —
on real task worktrees (issue 17): each reaches satisfied, failed (naming the finding), skipped and blocked."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeflux.domain.pipeline import (
    GATING_STAGES,
    PERFORMABLE_STAGES,
    StageName,
    StageOutcome,
    StageVerdict,
    finalize_run,
    stage_named,
)
from codeflux.pipeline.anti_patterns import evaluate_anti_patterns
from codeflux.pipeline.complexity import GROWTH_NOT_MEASURED, evaluate_atom_complexity
from codeflux.pipeline.documentation import evaluate_atom_documentation
from codeflux.pipeline.optimization import NO_REWRITE_PROPOSED, evaluate_atom_optimization
from codeflux.pipeline.phase_b import ATOM_STAGES
from codeflux.pipeline.ruff_runner import codeflux_ruff
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import ATOM_COMPLEXITY_MAX, StoredSettings, set_threshold
from codeflux.store.database import Database
from codeflux.store.settings import put_setting
from tests.fixtures.atom_diffs import ChangedWorktree, changed_worktree

LEGACY = '''def legacy(items=[]):
    try:
        return items[0]
    except:
        pass
'''

GOOD = '''"""Small, typed, documented helpers."""

from __future__ import annotations

import sys


def scale(values: list[float], factor: float) -> list[float]:
    """Multiply each value by a factor.

    Args:
        values: The numbers to scale.
        factor: What to multiply by.

    Returns:
        The scaled numbers.

    Raises:
        ValueError: When the factor is negative.
    """
    if factor < 0:
        raise ValueError("factor must not be negative")
    return [value * factor for value in values]


def mean(values: list[float]) -> float:
    """Average the values.

    Parameters
    ----------
    values : list of float
        The numbers.

    Returns
    -------
    float
        Their mean.
    """
    return sum(values) / max(len(values), 1)


def clamp(value: float, low: float, high: float) -> float:
    """Clamp a value into a range.

    :param value: the value.
    :param low: the lower bound.
    :param high: the upper bound.
    :returns: the clamped value.
    """
    return min(max(value, low), high)


def main() -> int:
    """Run the helpers once.

    Returns:
        The exit status.
    """
    return 0 if clamp(scale([1.0], 2.0)[0], 0.0, 1.0) == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
'''

LEGACY_ADDITION = '''

def first(items: list[int]) -> int | None:
    """The first item, if any.

    Args:
        items: The items.

    Returns:
        The first item, or None.
    """
    return items[0] if items else None
'''

BAD = '''# ruff: noqa
import sys


def collect(items=[], verbose=False):  # noqa
    try:
        items.append(1)
    except:
        pass
    if verbose:
        sys.exit(2)
    assert items, "items must not be empty"
    return items


def tangled(n: int) -> int:
    """Walk a number through many branches.

    Args:
        n: How far to walk.

    Returns:
        The total.
    """
    total = 0
    for i in range(n):
        if i % 2:
            for j in range(i):
                if j % 3:
                    while total < 100:
                        if total % 7:
                            total += 1
                        else:
                            total += 2
    if n == 1:
        total += 1
    elif n == 2:
        total += 2
    elif n == 3:
        total += 3
    elif n == 4:
        total += 4
    elif n == 5:
        total += 5
    return total
'''

POISON = '''[tool.ruff]
exclude = ["*"]

[tool.ruff.lint]
select = []
ignore = ["ALL"]
'''


@dataclass(frozen=True)
class Changes:
    good: ChangedWorktree
    bad: ChangedWorktree
    constants_only: ChangedWorktree
    docs_only: ChangedWorktree


@pytest.fixture(scope="module")
def changes(tmp_path_factory: pytest.TempPathFactory) -> Changes:
    root = tmp_path_factory.mktemp("static-quality")
    return Changes(
        good=changed_worktree(root / "good", task=1, base={"pkg/legacy.py": LEGACY},
                              change={"pkg/good.py": GOOD, "pkg/legacy.py": LEGACY + LEGACY_ADDITION}),
        bad=changed_worktree(root / "bad", task=2, base={"pyproject.toml": POISON, "ruff.toml": "exclude = ['*']\n"},
                             change={"pkg/bad.py": BAD}),
        constants_only=changed_worktree(root / "constants", task=3, base={},
                                        change={"pkg/constants.py": "LIMIT = 3\n"}),
        docs_only=changed_worktree(root / "docs", task=4, base={}, change={"README.md": "# calc\n\nMore words.\n"}),
    )


def findings(result: StageResult) -> list[str]:
    listed = result.evidence["findings"]
    assert isinstance(listed, list)
    return [str(item) for item in listed]


# ─── 14 anti-patterns ─────────────────────────────────────────────────────────────────────────────────

def test_anti_patterns_holds_on_clean_changed_lines_and_leaves_untouched_findings_as_context(
        changes: Changes) -> None:
    result = evaluate_anti_patterns(changes.good.diff)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict.gate_evaluation
    assert findings(result) == []
    files = {item["path"]: item for item in result.evidence["files"]}  # type: ignore[attr-defined]
    # legacy()'s bare except, try-except-pass, mutable default and untyped parameter are on untouched lines
    assert files["pkg/legacy.py"]["findings"] == 0 and files["pkg/legacy.py"]["context_findings"] >= 4
    assert "ruff" in str(result.verdict.gate_evaluation)
    assert result.evidence["tool"]["version"]  # type: ignore[index]


def test_anti_patterns_fails_naming_each_finding_on_changed_lines_whatever_the_repository_configures(
        changes: Changes) -> None:
    result = evaluate_anti_patterns(changes.bad.diff)

    assert result.verdict.outcome is StageOutcome.FAILED
    assert [line.split(" ", 2)[:2] for line in findings(result)] == [
        ["pkg/bad.py:5", "ANN001"], ["pkg/bad.py:5", "ANN001"], ["pkg/bad.py:5", "ANN201"], ["pkg/bad.py:5", "B006"],
        ["pkg/bad.py:5", "FBT002"], ["pkg/bad.py:8", "E722"], ["pkg/bad.py:8", "S110"],
        ["pkg/bad.py:11", "exit-outside-main"], ["pkg/bad.py:12", "assert-in-product-code"],
        ["pkg/bad.py:16", "C901"], ["pkg/bad.py:31", "deep-nesting"]]
    assert str(result.verdict.gate_evaluation).startswith(
        "11 anti-pattern findings on the 45 changed lines of 1 Python file: pkg/bad.py:5 ANN001 Missing type "
        "annotation for function argument `items`;")
    collect = next(atom for atom in result.evidence["atoms"] if atom["qualified_name"] == "pkg.bad.collect")  # type: ignore[attr-defined]
    assert any(" B006 " in line for line in collect["findings"])
    # The repository's own configuration (and its noqa comments) would have hidden every one of them.
    own = subprocess.run([str(codeflux_ruff()), "check", "--no-cache", "--output-format", "json", "pkg/bad.py"],
                         cwd=changes.bad.worktree.path, capture_output=True, text=True, timeout=60, check=False)
    assert json.loads(own.stdout or "[]") == []


def test_anti_patterns_is_skipped_without_python_changes_and_runs_on_module_level_changes(changes: Changes) -> None:
    skipped = evaluate_anti_patterns(changes.docs_only.diff)
    assert skipped.verdict.outcome is StageOutcome.SKIPPED
    assert skipped.verdict.reason == "the diff adds or rewrites no line of a Python file outside the tests"

    module_level = evaluate_anti_patterns(changes.constants_only.diff)
    assert module_level.verdict.outcome is StageOutcome.SATISFIED


def test_anti_patterns_is_blocked_naming_a_missing_ruff(changes: Changes, tmp_path: Path) -> None:
    result = evaluate_anti_patterns(changes.bad.diff, ruff=tmp_path / "no-ruff-here")

    assert result.verdict.outcome is StageOutcome.BLOCKED
    assert str(result.verdict.reason).startswith(f"ruff is missing: {tmp_path / 'no-ruff-here'}")


def test_a_ruff_that_does_not_answer_json_blocks_the_stage(changes: Changes, tmp_path: Path) -> None:
    broken = tmp_path / "ruff"
    broken.write_text("#!/bin/sh\necho 'ruff 0.0.0'\nexit 0\n")
    broken.chmod(0o755)

    result = evaluate_anti_patterns(changes.good.diff, ruff=broken)

    assert result.verdict.outcome is StageOutcome.BLOCKED
    assert "ruff's report is not JSON" in str(result.verdict.reason)


# ─── 15 atom-optimization ─────────────────────────────────────────────────────────────────────────────

def test_atom_optimization_records_that_no_rewrite_was_proposed(changes: Changes) -> None:
    result = evaluate_atom_optimization(changes.good.diff)

    assert result.verdict.outcome is StageOutcome.SKIPPED
    assert str(result.verdict.reason).startswith(NO_REWRITE_PROPOSED)
    assert evaluate_atom_optimization(changes.docs_only.diff).verdict.outcome is StageOutcome.SKIPPED


# ─── 16 atom-complexity ───────────────────────────────────────────────────────────────────────────────

def test_atom_complexity_holds_within_the_default_limit_and_says_growth_was_not_measured(changes: Changes) -> None:
    result = evaluate_atom_complexity(changes.good.diff, settings=None)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict.gate_evaluation
    assert result.evidence["threshold"] == {"key": "pipeline.atom-complexity.max", "value": 10, "default": 10,
                                            "source": "default, this run reads no settings"}
    measured = {atom["qualified_name"]: atom["complexity"] for atom in result.evidence["atoms"]}  # type: ignore[attr-defined]
    assert measured["pkg.good.scale"] == 3 and measured["pkg.legacy.first"] == 2
    assert "pkg.legacy.legacy" not in measured  # untouched: not an atom
    assert result.evidence["growth"] == GROWTH_NOT_MEASURED


def test_atom_complexity_fails_naming_the_atom_over_the_limit(changes: Changes) -> None:
    result = evaluate_atom_complexity(changes.bad.diff, settings=None)

    assert result.verdict.outcome is StageOutcome.FAILED
    assert findings(result) == ["pkg/bad.py:16 atom-complexity pkg.bad.tangled has cyclomatic complexity 12 "
                                "(limit 10)"]


def test_atom_complexity_reads_its_limit_from_the_settings_table(changes: Changes, db: Database) -> None:
    set_threshold(db, ATOM_COMPLEXITY_MAX, 2, expected_revision=None)

    result = evaluate_atom_complexity(changes.good.diff, settings=StoredSettings(db))

    assert result.verdict.outcome is StageOutcome.FAILED
    assert result.evidence["threshold"]["source"] == "setting pipeline.atom-complexity.max, revision 0"  # type: ignore[index]
    assert "pkg/good.py:8 atom-complexity pkg.good.scale has cyclomatic complexity 3 (limit 2)" in findings(result)


def test_a_stored_limit_that_is_not_a_whole_number_blocks_the_stage(changes: Changes, db: Database) -> None:
    db.write(lambda tx: put_setting(tx, ATOM_COMPLEXITY_MAX.key, {"value": "ten"}, expected_revision=None))

    result = evaluate_atom_complexity(changes.good.diff, settings=StoredSettings(db))

    assert result.verdict.outcome is StageOutcome.BLOCKED
    assert "pipeline.atom-complexity.max is not a whole number" in str(result.verdict.reason)


def test_atom_complexity_is_skipped_without_atoms_and_blocked_without_radon(changes: Changes) -> None:
    skipped = evaluate_atom_complexity(changes.constants_only.diff, settings=None)
    assert skipped.verdict.outcome is StageOutcome.SKIPPED
    assert skipped.verdict.reason == "the diff adds or changes no function outside the tests"

    blocked = evaluate_atom_complexity(changes.good.diff, settings=None, radon_module="radon_is_not_installed")
    assert blocked.verdict.outcome is StageOutcome.BLOCKED
    assert str(blocked.verdict.reason).startswith("radon is missing")


# ─── 17 atom-documentation ────────────────────────────────────────────────────────────────────────────

def test_atom_documentation_holds_for_google_numpy_and_sphinx_docstrings(changes: Changes) -> None:
    result = evaluate_atom_documentation(changes.good.diff)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict.gate_evaluation
    assert findings(result) == []
    styles = {atom["qualified_name"]: atom["styles"] for atom in result.evidence["atoms"]}  # type: ignore[attr-defined]
    assert styles["pkg.good.scale"] == ["google"] and styles["pkg.good.mean"] == ["numpy"]
    assert styles["pkg.good.clamp"] == ["sphinx"]


def test_atom_documentation_is_advisory_naming_a_public_atom_without_a_docstring(changes: Changes) -> None:
    """Issue 17: 17 is advisory — satisfied with its findings listed, never failed."""
    result = evaluate_atom_documentation(changes.bad.diff)

    assert result.verdict.outcome is StageOutcome.SATISFIED
    assert "1 of 2 public atoms state their purpose" in str(result.verdict.gate_evaluation)
    assert findings(result) == ["pkg/bad.py:5 missing-docstring pkg.bad.collect: no docstring states its purpose"]


def test_atom_documentation_is_skipped_without_atoms(changes: Changes) -> None:
    for diff in (changes.constants_only.diff, changes.docs_only.diff):
        result = evaluate_atom_documentation(diff)
        assert result.verdict.outcome is StageOutcome.SKIPPED
        assert result.verdict.reason == "the diff adds or changes no function outside the tests"


def test_documentation_is_still_decided_when_anti_patterns_did_not_hold(changes: Changes, tmp_path: Path) -> None:
    """The catalog's order: documentation comes after anti-pattern detection, but that edge is order only — a
    failed or blocked 14 lists its findings and never keeps 17 from being decided (issue 17)."""
    for anti_patterns in (evaluate_anti_patterns(changes.good.diff, ruff=tmp_path / "missing"),
                          evaluate_anti_patterns(changes.bad.diff)):
        assert anti_patterns.verdict.outcome in (StageOutcome.BLOCKED, StageOutcome.FAILED)
        documented = evaluate_atom_documentation(changes.good.diff)
        assert documented.verdict.outcome is StageOutcome.SATISFIED
        final = {verdict.stage: verdict for verdict in finalize_run(
            [_held(StageName.INSTRUCTIONS), _held(StageName.CLARIFICATION), _held(StageName.ATOMIC_INSTRUCTIONS),
             _held(StageName.CONTRACTS), _held(StageName.ATOMS),
             anti_patterns.verdict, evaluate_atom_optimization(changes.good.diff).verdict,
             evaluate_atom_complexity(changes.good.diff, settings=None).verdict, documented.verdict],
            stopped_at=StageName.ATOM_DOCUMENTATION)}
        assert final[StageName.ANTI_PATTERNS].outcome is anti_patterns.verdict.outcome
        assert final[StageName.ATOM_COMPLEXITY].outcome is StageOutcome.SATISFIED
        assert final[StageName.ATOM_DOCUMENTATION].outcome is StageOutcome.SATISFIED


def test_the_static_stages_are_advisory_and_performable() -> None:
    static = {StageName.ANTI_PATTERNS, StageName.ATOM_OPTIMIZATION, StageName.ATOM_COMPLEXITY,
              StageName.ATOM_DOCUMENTATION}
    assert not static & GATING_STAGES  # their verdicts never decide a run's exit code
    assert static <= PERFORMABLE_STAGES
    assert [stage.stage for stage in ATOM_STAGES if stage.stage in static] == sorted(
        static, key=lambda name: stage_named(name).number)


def _held(stage: StageName) -> StageVerdict:
    return StageVerdict(stage=stage, outcome=StageOutcome.SATISFIED, gate_evaluation="held")
