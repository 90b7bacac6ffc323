"""`codeflux task evidence` printers: the text escapes what the repository named (an atom's name, a finding, a
fact) so it cannot disguise itself, and `--json` keeps facts as the JSON values the stage recorded."""

from __future__ import annotations

import io
import json

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.context import CliContext
from codeflux.cli.views import evidence_document, print_evidence

VIEW = pb.EvidenceView(
    task_id="tsk_1", attempt=2, diff_identity="ab" * 32, source="ledger", atom_count=1,
    atoms=[pb.AtomEvidenceView(
        qualified_name="calc.ops.add\u202egnp", path="calc/ops.py", first_line=4, last_line=6, change="added",
        stages=[pb.AtomStageEvidenceView(number=16, stage="atom-complexity", measures="complexity",
                                         outcome="satisfied", measured=True, summary="cyclomatic complexity 3",
                                         findings=["calc/ops.py:4 x\nfake line"],
                                         facts=[pb.AtomFactView(name="complexity", value_json="3"),
                                                pb.AtomFactView(name="nested", value_json="[]")]),
                pb.AtomStageEvidenceView(number=13, stage="atom-mutation", measures="mutation score",
                                         outcome="not-implemented",
                                         not_measured="not measured (stage 13 not-implemented: cannot yet)")])],
    stages=[pb.StageView(number=1, name="instructions", phase="Specification", outcome="satisfied", detail="ok")])


def test_the_text_says_each_stage_s_result_in_words_and_escapes_repository_text() -> None:
    out = io.StringIO()

    print_evidence(CliContext(stdout=out), VIEW)

    text = out.getvalue()
    assert "\u202e" not in text and "calc.ops.add\\u202egnp" in text
    assert "from the attempt's ledger rows (no evidence bundle recorded)" in text
    assert "16 complexity                    satisfied (stage atom-complexity): cyclomatic complexity 3" in text
    assert "finding: calc/ops.py:4 x\\u000afake line" in text and "\nfake line" not in text
    assert "13 mutation score                not measured (stage 13 not-implemented: cannot yet)" in text
    assert "   1 instructions               satisfied  ok" in text


def test_the_json_document_keeps_recorded_values_and_says_null_for_unknown() -> None:
    document = evidence_document(VIEW)

    assert json.loads(json.dumps(document)) == document
    (atom,) = document["atoms"]  # type: ignore[misc]
    complexity, mutation = atom["stages"]
    assert complexity["facts"] == {"complexity": 3, "nested": []} and complexity["not_measured"] is None
    assert (mutation["measured"], mutation["facts"], mutation["findings"]) == (False, {}, [])
    assert document["diff_identity"] == "ab" * 32 and document["source"] == "ledger"
    unknown = evidence_document(pb.EvidenceView(task_id="tsk_1", atoms=[pb.AtomEvidenceView(qualified_name="m.f")]))
    assert unknown["diff_identity"] is None
    assert unknown["atoms"] == [{"qualified_name": "m.f", "path": None, "lines": None, "change": None, "stages": []}]
