"""Notes on lines of the final tree for the review's diff viewer (issue 18): each obligation of an attempt at the
line it belongs to — a composition at its call site, a control path at the line its branch arc leaves — and each
branch arc stage 25 path-coverage names as taken by no test.

Read from what was recorded (the obligation rows and stage 25's evidence), never measured again; a record without a
usable path and line gives no note rather than a guessed one. Sorted by path, line, kind and subject, so the same
records always give the same notes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.domain.pipeline.obligations import ObligationKind, ObligationRecord, ObligationState

__all__ = ["LineNote", "line_notes"]

UNCOVERED_ARC: Final = "uncovered-arc"
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


def line_notes(obligations: Iterable[ObligationRecord], path_coverage: Mapping[str, object] | None
               ) -> tuple[LineNote, ...]:
    """The notes of one attempt (see the module docstring): its obligation records and stage 25's evidence (None when
    the stage recorded none)."""
    notes = [note for record in obligations if (note := _obligation_note(record)) is not None]
    return tuple(sorted({*notes, *_uncovered_notes(path_coverage)}))
