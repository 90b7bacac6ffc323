"""Phase F's rules that need no worker (issue 18): stage 30's capability map and bandit run on source text, stage 33's
reading of declared versions and its syntax check, stage 34's limit and its settings."""

from __future__ import annotations

import pytest

from codeflux.domain.atoms import atoms_between
from codeflux.domain.contracts import AtomEffect
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.global_invariants import capability_map, run_bandit
from codeflux.pipeline.platform_matrix import declared_versions, requires_python_versions, syntax_errors
from codeflux.pipeline.repetition import Repetition, SuiteRun, evaluate_non_functional, time_limit
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import (
    NON_FUNCTIONAL_RATIO_PCT,
    NON_FUNCTIONAL_SLACK_MS,
    StoredSettings,
    set_threshold,
)
from codeflux.store.database import Database
from tests.fixtures.task_runs import a_plan_with_two_steps

# ─── 30: the capability map ───────────────────────────────────────────────────────────────────────


def mapped(source: str, declared: dict[str, tuple[AtomEffect, ...] | None] | None = None) -> set[tuple[str, str, int]]:
    changed = atoms_between("pkg/mod.py", None, source, module="pkg.mod")
    uses, unread = capability_map(DiffAtoms(files=(changed,), not_examined={}), a_plan_with_two_steps(),
                                  declared or {atom.qualified_name: None for atom in changed.atoms})
    assert unread == {}
    return {(use.capability, use.what, use.line) for use in uses if use.undeclared}


def test_yaml_is_deserialisation_unless_a_safe_loader_is_passed_and_numpy_only_with_pickles_allowed() -> None:
    source = ("import yaml\nimport numpy as np\n\n\n"
              "def read(text):\n"
              "    a = yaml.load(text, Loader=yaml.SafeLoader)\n"
              "    b = yaml.safe_load(text)\n"
              "    c = yaml.load(text)\n"
              "    d = yaml.full_load(text)\n"
              "    e = np.load(text)\n"
              "    f = np.load(text, allow_pickle=True)\n"
              "    return a, b, c, d, e, f\n")
    assert mapped(source) == {("deserialisation", "yaml.load", 8), ("deserialisation", "yaml.full_load", 9),
                              ("deserialisation", "numpy.load(allow_pickle=True)", 11)}


def test_eval_is_dynamic_code_only_when_it_is_the_builtin() -> None:
    assert mapped("def run(text):\n    return eval(text)\n") == {("dynamic-code", "eval", 2)}
    assert mapped("from safe import eval\n\n\ndef run(text):\n    return eval(text)\n") == set()
    assert mapped("import importlib\n\n\ndef run(name):\n    return importlib.import_module(name)\n") == {
        ("dynamic-code", "importlib.import_module", 5)}


def test_a_declared_effect_is_no_finding_and_module_level_code_is_judged_against_the_whole_plan() -> None:
    source = "import socket\n\n\ndef ping(host):\n    return socket.create_connection((host, 80))\n"
    assert mapped(source, {"pkg.mod.ping": (AtomEffect.NETWORK,)}) == {("network", "import socket", 1)}
    assert mapped(source, {"pkg.mod.ping": None}) == {("network", "import socket", 1),
                                                      ("network", "socket.create_connection", 5)}
    assert mapped("import os\n\nHOME = os.environ['HOME']\n") == {("env", "os.environ", 3)}


def test_bandit_ignores_nosec_and_maps_findings_back_to_the_repository_path() -> None:
    hidden = "import subprocess\n\n\ndef go(cmd):\n    subprocess.call(cmd, shell=True)  # nosec\n"
    report = run_bandit({"pkg/a.py": hidden, "pkg/b.py": "X = 1\n"})
    high = [finding for finding in report.findings if finding.severity == "HIGH"]
    assert [(finding.path, finding.line, finding.test_id) for finding in high] == [("pkg/a.py", 5, "B602")]
    assert report.argv[1:3] == ("-m", "bandit") and "--ignore-nosec" in report.argv


# ─── 33: declared versions and syntax ────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("specifier", "minors"), [
    (">=3.8", list(range(8, 15))),
    (">=3.8,<3.11", [8, 9, 10]),
    (">=3.8, !=3.9.*", [8, *range(10, 15)]),
    ("~=3.10", list(range(10, 15))),
    ("~=3.10.2", [10]),
    ("==3.11.*", [11]),
    ("<4", list(range(6, 15))),
    (">3.12", [12, 13, 14]),
    ("<3.9.5", [6, 7, 8, 9]),
])
def test_requires_python_is_read_per_minor_series(specifier: str, minors: list[int]) -> None:
    assert requires_python_versions(specifier) == tuple((3, minor) for minor in minors)


def test_an_unreadable_specifier_names_its_clause_and_classifiers_add_versions() -> None:
    with pytest.raises(ValueError, match=r"'at least 3\.8' is not a version specifier"):
        requires_python_versions("at least 3.8")
    versions, read = declared_versions('[project]\nclassifiers = ["Programming Language :: Python :: 3.9", '
                                       '"Programming Language :: Python :: 3 :: Only"]\n')
    assert versions == ((3, 9),) and read == {"requires_python": None, "classifier_versions": ["3.9"]}
    with pytest.raises(ValueError, match="not valid TOML"):
        declared_versions("[project\n")


def test_a_match_statement_is_a_syntax_error_before_3_10_and_parses_from_3_10() -> None:
    source = "def f(x):\n    match x:\n        case 1:\n            return 2\n"
    assert syntax_errors({"m.py": source}, (3, 8)) == [
        "m.py:4: Pattern matching is only supported in Python 3.10 and greater"]
    assert syntax_errors({"m.py": source}, (3, 10)) == []
    assert syntax_errors({"w.py": "if (n := 1):\n    pass\n"}, (3, 7)) == [
        "w.py:1: Assignment expressions are only supported in Python 3.8 and greater"]


# ─── 34: the limit and its settings ──────────────────────────────────────────────────────────────


def test_the_limit_is_the_larger_of_the_ratio_and_the_slack() -> None:
    assert time_limit(1.0, ratio_pct=150, slack_ms=500) == 1.5
    assert time_limit(0.2, ratio_pct=150, slack_ms=500) == pytest.approx(0.7)
    assert time_limit(4.0, ratio_pct=150, slack_ms=500) == 6.0


def timed(change: list[float], base: list[float]) -> Repetition:
    def run(side: str, seed: int, seconds: float) -> SuiteRun:
        return SuiteRun(side=side, seed=seed, argv=("python",), request_id=None, state="succeeded", exit_code=0,
                        wall_seconds=seconds, pytest_seconds=None, outcomes={"t::a": "passed"})
    held = StageResult(verdict=StageVerdict(stage=StageName.REPETITION, outcome=StageOutcome.SATISFIED,
                                            gate_evaluation="held"), evidence={})
    return Repetition(result=held, change=tuple(run("change", n, s) for n, s in enumerate(change)),
                      base=tuple(run("base", n, s) for n, s in enumerate(base)))


def test_the_medians_decide_and_the_stored_settings_are_shown(db: Database) -> None:
    flagged = evaluate_non_functional(None, timed([2.0, 2.2, 9.0], [1.0, 1.1, 0.9]))
    assert flagged.verdict.outcome is StageOutcome.SATISFIED and flagged.evidence["slower"] is True
    assert flagged.verdict.gate_evaluation == ("advisory, flagged: the suite takes 2.20 s with the change against "
                                               "1.00 s on the base revision (limit 1.50 s = max(150 % of base, base + "
                                               "500 ms))")
    set_threshold(db, NON_FUNCTIONAL_RATIO_PCT, 300, expected_revision=None)
    set_threshold(db, NON_FUNCTIONAL_SLACK_MS, 0, expected_revision=None)
    relaxed = evaluate_non_functional(StoredSettings(db), timed([2.0, 2.2, 9.0], [1.0, 1.1, 0.9]))
    assert relaxed.evidence["slower"] is False and relaxed.evidence["limit_s"] == 3.0
    assert relaxed.evidence["ratio_setting"] == {"key": "pipeline.non-functional.ratio-pct", "value": 300,
                                                 "source": "setting pipeline.non-functional.ratio-pct, revision 0",
                                                 "default": 150}
