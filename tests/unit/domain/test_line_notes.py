"""The review's line notes (:mod:`codeflux.domain.pipeline.line_notes`): each obligation at its line, stage 25's
uncovered arcs at the line they leave, the state in words, nothing guessed for a record without a line, the same
records in any order giving the same notes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName
from codeflux.domain.pipeline.line_notes import LineNote, line_notes
from codeflux.domain.pipeline.obligations import ObligationKind, ObligationRecord, ObligationState, ObligationSubject

TASK = TaskId.parse("tsk_0123456789abcdef")


def record(kind: ObligationKind, subject: str, detail: dict[str, object], state: ObligationState = ObligationState.OPEN,
           discharged_by: StageName | None = None) -> ObligationRecord:
    return ObligationRecord(task_id=TASK, attempt=1, kind=kind, subject=ObligationSubject(subject),
                            recorded_by=StageName.COMPOSITION_OBLIGATIONS, detail=detail, state=state,
                            discharged_by=discharged_by, revision=1, evidence={})


COMPOSITION = record(ObligationKind.COMPOSITION, "pkg.calc.total -> pkg.calc.add",
                     {"path": "pkg/calc.py", "call_lines": [14, 15], "caller": "pkg.calc.total"},
                     ObligationState.DISCHARGED, StageName.MOLECULE_VERIFICATION)
ARC = record(ObligationKind.CONTROL_PATH, "pkg/calc.py:6->7", {"path": "pkg/calc.py", "from_line": 6, "to_line": 7})


def test_each_obligation_sits_at_its_line_and_an_uncovered_arc_at_the_line_it_leaves() -> None:
    notes = line_notes([COMPOSITION, ARC], {"uncovered_arcs": ["pkg/calc.py:6->7", "pkg/calc.py:9->exit"]})

    assert notes == (
        LineNote(path="pkg/calc.py", line=6, kind="control-path", subject="pkg/calc.py:6->7", state="open",
                 text="branch arc pkg/calc.py:6->7: open"),
        LineNote(path="pkg/calc.py", line=6, kind="uncovered-arc", subject="pkg/calc.py:6->7", state="",
                 text="uncovered: no test takes the branch arc pkg/calc.py:6->7 (stage 25)"),
        LineNote(path="pkg/calc.py", line=9, kind="uncovered-arc", subject="pkg/calc.py:9->exit", state="",
                 text="uncovered: no test takes the branch arc pkg/calc.py:9->exit (stage 25)"),
        LineNote(path="pkg/calc.py", line=14, kind="composition", subject="pkg.calc.total -> pkg.calc.add",
                 state="discharged", text="composition pkg.calc.total -> pkg.calc.add: discharged by "
                                          "molecule-verification"))


def test_a_record_without_a_usable_place_gives_no_note_and_a_regression_says_so() -> None:
    lost = record(ObligationKind.CONTROL_PATH, "pkg/a.py:3->4", {"path": "pkg/a.py", "from_line": 3},
                  ObligationState.REGRESSED)
    unplaced = [record(ObligationKind.COMPOSITION, "a -> b", {"path": "pkg/a.py", "call_lines": []}),
                record(ObligationKind.CONTROL_PATH, "x", {"from_line": 3}),
                record(ObligationKind.CONTROL_PATH, "y", {"path": "pkg/a.py", "from_line": True}),
                record(ObligationKind.EFFECT, "z", {"path": "pkg/a.py", "from_line": 3})]

    notes = line_notes([*unplaced, lost], {"uncovered_arcs": ["not an arc", 7, "pkg/a.py:x->1"]})

    assert [(note.line, note.text) for note in notes] == [
        (3, "branch arc pkg/a.py:3->4: regressed (it held in an earlier attempt and no longer does)")]
    assert line_notes([], None) == ()


@given(st.permutations([COMPOSITION, ARC]))
def test_the_same_records_in_any_order_give_the_same_notes(records: list[ObligationRecord]) -> None:
    assert line_notes(records, {"uncovered_arcs": ["pkg/calc.py:6->7"]}) == line_notes(
        [COMPOSITION, ARC], {"uncovered_arcs": ["pkg/calc.py:6->7"]})


MUTATION = {"atoms": [
    {"atom": "pkg.calc.add", "path": "pkg/calc.py", "surviving": [
        {"operator": "binop", "line": 4, "original": "+", "replacement": "-", "uncovered": False},
        {"operator": "compare", "line": 9, "original": "<", "replacement": "<=", "uncovered": True},
        {"operator": "binop", "line": "4", "original": "+", "replacement": "*"}]},
    {"atom": "pkg.lost", "surviving": [{"operator": "binop", "line": 2}]}],
    "findings": ["pkg/calc.py:4 surviving mutant of pkg.calc.add (binop: + → -)"]}


def test_a_surviving_mutant_sits_at_the_line_it_changed_and_says_whether_any_test_ran_it() -> None:
    notes = line_notes([], None, stage_evidence={"atom-mutation": MUTATION}, paths=["pkg/calc.py"])

    assert [(note.path, note.line, note.kind, note.state, note.text) for note in notes] == [
        ("pkg/calc.py", 4, "surviving-mutant", "survived",
         "surviving mutant of pkg.calc.add (binop: + → -): no test failed (stage 13)"),
        ("pkg/calc.py", 9, "surviving-mutant", "survived",
         "surviving mutant of pkg.calc.add (compare: < → <=): no test failed — no test executes this line (stage 13)")]


def test_a_finding_is_placed_only_on_a_line_of_a_file_of_the_diff() -> None:
    evidence = {
        "anti-patterns": {"findings": ["pkg/calc.py:12 E711 comparison to None", "other/x.py:3 E711 elsewhere",
                                       "pkg/calc.py: no line here", "pkg/calc.py:0 line zero"]},
        "platform-matrix": {"findings": ["pkg/calc.py.bak:5: not a diff path", "pkg/calc.py:7: invalid syntax"]},
        "global-invariants": {"findings": ["network via socket at pkg/calc.py:3 (module level)"]},
        "atom-verification": {"findings": "not a list"}}

    notes = line_notes([], None, stage_evidence=evidence, paths=["pkg/calc.py", "pkg/calc.py.bak2"])

    assert [(note.line, note.kind, note.subject, note.text) for note in notes] == [
        (7, "finding", "platform-matrix", "finding of platform-matrix: invalid syntax"),
        (12, "finding", "anti-patterns", "finding of anti-patterns: E711 comparison to None")]


def test_the_longest_diff_path_a_finding_starts_with_places_it() -> None:
    notes = line_notes([], None, stage_evidence={"complexity": {"findings": ["a.py:b.py:5 too complex"]}},
                       paths=["a.py", "a.py:b.py"])

    assert [(note.path, note.line) for note in notes] == [("a.py:b.py", 5)]
