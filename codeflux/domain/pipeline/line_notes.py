"""Notes on lines of the final tree for the review's diff viewer (issues 18 and 20): each obligation of an attempt at
the line it belongs to — a composition at its call site, a control path at the line its branch arc leaves —, each
branch arc stage 25 path-coverage names as taken by no test, each mutant stage 13 lists as surviving at the line it
changed, and each other stage's finding that names a line of a file of the diff (``path:line …``, the form the
stages write) at that line.

Read from what was recorded (the obligation rows and stage 25's evidence), never measured again; a record without a
usable path and line gives no note rather than a guessed one. Sorted by path, line, kind and subject, so the same
records always give the same notes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.domain.pipeline.obligations import ObligationKind, ObligationRecord, ObligationState

__all__ = ["LineNote", "line_notes"]

UNCOVERED_ARC: Final = "uncovered-arc"
SURVIVING_MUTANT: Final = "surviving-mutant"
FINDING: Final = "finding"
_MUTATION_STAGE: Final = "atom-mutation"
_FINDING_LINE: Final = re.compile(r":(?P<line>[0-9]+)(?=[\s:]|$)")
_ARC: Final = re.compile(r"^(?P<path>.+):(?P<start>[0-9]+)->(?P<end>[0-9]+|exit)$")


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class LineNote:
    """One note: where, what kind (an obligation kind or ``uncovered-arc``), about what, its state, in words."""

    path: str
    line: int
    kind: str
    subject: str
    state: str
    text: str


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _state_words(record: ObligationRecord) -> str:
    if record.state is ObligationState.DISCHARGED and record.discharged_by is not None:
        return f"discharged by {record.discharged_by}"
    if record.state is ObligationState.REGRESSED:
        return "regressed (it held in an earlier attempt and no longer does)"
    return "open"


def _obligation_note(record: ObligationRecord) -> LineNote | None:
    detail = record.detail
    path = detail.get("path")
    if not isinstance(path, str) or not path:
        return None
    if record.kind is ObligationKind.COMPOSITION:
        lines = detail.get("call_lines")
        line = _line(lines[0]) if isinstance(lines, list) and lines else None
        what = f"composition {record.subject}"
    elif record.kind is ObligationKind.CONTROL_PATH:
        line = _line(detail.get("from_line"))
        what = f"branch arc {record.subject}"
    else:
        return None
    if line is None:
        return None
    return LineNote(path=path, line=line, kind=record.kind.value, subject=record.subject.value,
                    state=record.state.value, text=f"{what}: {_state_words(record)}")


def _uncovered_notes(path_coverage: Mapping[str, object] | None) -> list[LineNote]:
    arcs = (path_coverage or {}).get("uncovered_arcs")
    notes = []
    for arc in arcs if isinstance(arcs, list) else []:
        found = _ARC.match(arc) if isinstance(arc, str) else None
        if found is not None:
            notes.append(LineNote(path=found["path"], line=int(found["start"]), kind=UNCOVERED_ARC, subject=str(arc),
                                  state="", text=f"uncovered: no test takes the branch arc {arc} (stage 25)"))
    return notes


def _dicts(value: object) -> list[Mapping[str, object]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _mutant_notes(mutation: Mapping[str, object]) -> list[LineNote]:
    notes = []
    for atom in _dicts(mutation.get("atoms")):
        path, name = atom.get("path"), atom.get("atom")
        if not isinstance(path, str) or not path:
            continue
        for mutant in _dicts(atom.get("surviving")):
            line = _line(mutant.get("line"))
            if line is None:
                continue
            change = f"{mutant.get('operator')}: {mutant.get('original')} → {mutant.get('replacement')}"
            unexecuted = " — no test executes this line" if mutant.get("uncovered") is True else ""
            notes.append(LineNote(path=path, line=line, kind=SURVIVING_MUTANT, subject=f"{name} {change}",
                                  state="survived",
                                  text=f"surviving mutant of {name} ({change}): no test failed{unexecuted} (stage 13)"))
    return notes


def _placed(finding: str, paths: Collection[str]) -> tuple[str, int, str] | None:
    """(path, line, what it says) of a finding written ``path:line …`` for one of ``paths`` (the longest that fits),
    else None."""
    for path in sorted((p for p in paths if finding.startswith(f"{p}:")), key=len, reverse=True):
        found = _FINDING_LINE.match(finding, len(path))
        if found is not None and (line := _line(int(found["line"]))) is not None:
            return path, line, finding[found.end():].lstrip(" :")
    return None


def _finding_notes(stage: str, evidence: Mapping[str, object], paths: Collection[str]) -> list[LineNote]:
    findings = evidence.get("findings")
    notes = []
    for finding in findings if isinstance(findings, list) else []:
        place = _placed(finding, paths) if isinstance(finding, str) else None
        if place is not None:
            path, line, said = place
            notes.append(LineNote(path=path, line=line, kind=FINDING, subject=stage, state="",
                                  text=f"finding of {stage}: {said}"))
    return notes


def line_notes(obligations: Iterable[ObligationRecord], path_coverage: Mapping[str, object] | None, *,
               stage_evidence: Mapping[str, Mapping[str, object]] | None = None, paths: Collection[str] = ()
               ) -> tuple[LineNote, ...]:
    """The notes of one attempt (see the module docstring): its obligation records, stage 25's evidence (None when
    the stage recorded none) and every stage's evidence by stage name; a finding is placed only on one of ``paths``
    (the diff's files), so a finding naming no file of the diff gives no note."""
    notes = [note for record in obligations if (note := _obligation_note(record)) is not None]
    for stage, evidence in (stage_evidence or {}).items():
        notes += _mutant_notes(evidence) if stage == _MUTATION_STAGE else _finding_notes(stage, evidence, paths)
    return tuple(sorted({*notes, *_uncovered_notes(path_coverage)}))
