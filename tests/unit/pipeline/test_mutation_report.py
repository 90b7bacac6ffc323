"""Stage 13 reads the in-box runner's report as untrusted: malformed entries judge nothing, a link is never read."""

from __future__ import annotations

import json
from pathlib import Path

from codeflux.domain.atoms import Atom, AtomChange
from codeflux.domain.pipeline import StageOutcome
from codeflux.pipeline.mutants import mutants_of_atom
from codeflux.pipeline.mutation import _judged, _Planned, _read_report

SOURCE = "def scale(a, b):\n    return a * b\n"
ATOM = Atom(path="pkg/calc.py", qualified_name="pkg.calc.scale", local_name="scale", change=AtomChange.CHANGED,
            first_line=1, last_line=2, signature="def scale(a, b)", changed=(2,), is_method=False, is_async=False)


def planned() -> list[_Planned]:
    found = mutants_of_atom(SOURCE, local_name="scale", first_line=1, lines=[2])
    assert found is not None and len(found) == 2  # return → return None; a * b → a / b (source order)
    return [_Planned(ATOM, SOURCE, found, [("t::a",), ("t::a",)], None)]


def test_a_report_whose_entries_are_malformed_judges_nothing_and_blocks() -> None:
    report: dict[str, object] = {"mutants": ["x", {"id": "0.0", "hung": "yes", "failed": "t::a", "status": "0"}]}
    result = _judged(planned(), report, 70, {})
    assert result.verdict.outcome is StageOutcome.BLOCKED
    assert "no mutant was judged" in (result.verdict.reason or "")


def test_one_killed_and_one_survivor_is_fifty_percent_and_the_survivor_is_named_with_its_diff() -> None:
    report: dict[str, object] = {"mutants": [{"id": "0.0", "hung": False, "failed": ["t::a"], "status": 1},
                                             {"id": "0.1", "hung": False, "failed": [], "status": 0, "passed": 1}],
                                 "done": True, "mutants_seconds": 0.2}
    result = _judged(planned(), report, 70, {})
    assert result.verdict.outcome is StageOutcome.FAILED
    atom = result.evidence["atoms"][0]  # type: ignore[index]
    assert (atom["judged"], atom["killed"], atom["survived"], atom["score"]) == (2, 1, 1, 50.0)
    assert "-    return a * b\n+    return a / b\n" in atom["surviving"][0]["diff"]
    assert result.evidence["findings"] == ["pkg/calc.py:2 surviving mutant of pkg.calc.scale (arithmetic: "
                                           "a * b → a / b)"]
    assert _judged(planned(), report, 50, {}).verdict.outcome is StageOutcome.SATISFIED


def test_a_report_planted_as_a_link_or_too_large_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"mutants": []}))
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "mutation-report.json").symlink_to(outside)
    assert _read_report(tmp_path / "checks" / "mutation-report.json") is None
    (tmp_path / "plain.json").write_text("[1, 2]")
    assert _read_report(tmp_path / "plain.json") is None
