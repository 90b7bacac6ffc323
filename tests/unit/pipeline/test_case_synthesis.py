"""Stage 7's coordinator side of the examples (issue 17): what the box reports it drew is read as untrusted data —
only the atoms, parameters and rungs codeflux asked for, every text bounded — and the seed of a diff is stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.pipeline.case_synthesis import DrawnExamples, drawn_examples, seed_of, write_ladder_files

EXPECTED = {"pkg.calc.add": {"a": ("typical", "degenerate", "wrong-type")}}


def test_only_the_asked_for_atoms_parameters_and_rungs_are_kept_and_every_text_is_bounded() -> None:
    document = {"hypothesis": "6.170.17", "seed": 12, "atoms": {
        "pkg.calc.add": {"params": {
            "a": {"hint": "int" * 100, "hint_from": "annotation", "rungs": {
                "typical": {"source": "from_type", "strategy": "from_type(int)", "examples": ["7", "x" * 500, 3, "9",
                                                                                             "10"],
                            "drawn": 6, "dropped": -2},
                "degenerate": {"source": "anything else", "strategy": "just(0)", "examples": "0", "drawn": True},
                "boundary": {"source": "codeflux", "examples": ["1"]},  # not a rung of the kind: left out
                "wrong-type": ["not", "a", "mapping"]}},
            "b": {"rungs": {}}}},  # not a parameter with a ladder
        "pkg.other.f": {"params": {}}}}  # not an atom codeflux asked for

    found = drawn_examples(document, EXPECTED, missing="unused")

    assert found.hypothesis == "6.170.17" and found.seed == 12 and found.why is None and found.problems == {}
    a = found.parameter("pkg.calc.add", "a")
    assert a is not None and a["hint"] == ("int" * 100)[:120] and a["hint_from"] == "annotation"
    assert a["rungs"]["typical"] == {"examples": ["7", "x" * 80],
                                     "source": "from_type", "strategy": "from_type(int)", "drawn": 6, "dropped": 0}
    assert a["rungs"]["degenerate"] == {"examples": [], "source": "codeflux", "strategy": "just(0)", "drawn": 0,
                                        "dropped": 0}
    assert set(a["rungs"]) == {"typical", "degenerate"}
    assert found.parameter("pkg.calc.add", "b") is None and found.parameter("pkg.other.f", "x") is None


def test_no_report_a_problem_instead_of_a_version_or_an_atom_left_out_says_why() -> None:
    assert drawn_examples(None, EXPECTED, missing="the run ended timed-out") == DrawnExamples(
        why="the run ended timed-out")
    said = drawn_examples({"hypothesis": None, "problem": "Hypothesis is not importable in the box (ImportError)"},
                          EXPECTED, missing="unused")
    assert said.hypothesis is None and said.why == "Hypothesis is not importable in the box (ImportError)"
    assert drawn_examples({"hypothesis": "6.1; rm -rf /"}, EXPECTED, missing="x").why == (
        "the box reported no Hypothesis version")
    partial = drawn_examples({"hypothesis": "6.1", "seed": "12", "atoms": {"pkg.calc.add": {"problem": "p" * 400}}},
                             EXPECTED, missing="x")
    assert partial.seed == 0 and partial.problems == {"pkg.calc.add": "p" * 300}
    assert drawn_examples({"hypothesis": "6.1", "atoms": {}}, EXPECTED, missing="x").problems == {
        "pkg.calc.add": "not drawn (the box reported nothing for it)"}
    assert partial.to_evidence("codeflux overlay")["provided_by"] == "codeflux overlay"
    assert said.to_evidence(None) == {"source": "codeflux's fixed examples",
                                      "why": "Hypothesis is not importable in the box (ImportError)", "detail": None}
    assert drawn_examples(None, EXPECTED, missing="no report", detail="tail") == DrawnExamples(why="no report",
                                                                                               detail="tail")


def test_a_diffs_seed_is_stable_and_differs_between_diffs() -> None:
    assert seed_of("abc") == seed_of("abc") == int("ba7816bf", 16)
    assert seed_of("abd") != seed_of("abc") and 0 <= seed_of(None) < 2**32


def test_the_run_files_are_written_into_a_fresh_checks_folder_never_through_a_link(tmp_path: Path) -> None:
    assert write_ladder_files(tmp_path, '{"atoms":[]}')
    checks = tmp_path / "codeflux-checks"
    assert sorted(entry.name for entry in checks.iterdir()) == ["case-ladder-job.json", "case-ladder.py"]
    (checks / "left-over").write_text("x")
    assert write_ladder_files(tmp_path, "{}") and not (checks / "left-over").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for entry in checks.iterdir():
        entry.unlink()
    checks.rmdir()
    checks.symlink_to(elsewhere, target_is_directory=True)
    assert write_ladder_files(tmp_path, "{}") is False and not list(elsewhere.iterdir())


@pytest.mark.parametrize("version", ["6.170.17", "6.100.0+local", "7.0.0rc1"])
def test_plain_version_texts_are_accepted(version: str) -> None:
    assert drawn_examples({"hypothesis": version, "atoms": {}}, {}, missing="x").hypothesis == version
