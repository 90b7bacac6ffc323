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
