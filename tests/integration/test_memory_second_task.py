"""Issue 19, "Done means": the second task on the demo repository uses what the first one learned, shown in its
evidence — through the real CLI (scripted provider, not a model; real git, real workers, real pytest).

Task 1 is the demo, run and accepted: memory then holds its test command, the verified atom ``calc.ops.add`` with
its contract hash, and the tests covering ``calc/ops.py`` (``codeflux memory list``). Task 2 declares ``add`` with
the same contract and a new ``double`` calling it: stage 6 records ``add`` as **reuse** naming task 1's entry (and
phase B verifies it again), ``double`` as **write**. The positive control for "not used": before task 1 was accepted
nothing was learned, and after the entry is invalidated by a person, a third task's stage 6 writes ``add`` again.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from codeflux.coordinator.memory_context import MEMORY_LABEL
from codeflux.domain.contracts import contract_hash
from tests.integration.test_headless_run import cli, demo, run_args

pytestmark = pytest.mark.slow

DEMO_SCRIPT = Path(__file__).resolve().parents[2] / "codeflux" / "cli" / "demo_files" / "script.json"
USAGE = {"input_tokens": 10, "output_tokens": 5}
DOUBLE = '\n\ndef double(a: int) -> int:\n    """Return a added to itself."""\n    return add(a, a)\n'
TEST_DOUBLE = "def test_double():\n    from calc.ops import double\n    assert double(3) == 6\n\n\n"


def second_script(path: Path) -> Path:
    """A plan declaring add (same contract as the demo's) and double; the loop appends double and its test."""
    script = json.loads(DEMO_SCRIPT.read_text(encoding="utf-8"))
    plan = script["plan"][0]["json"]
    plan["scope"]["summary"] = "Add double() on top of add()"
    plan["steps"][0].update(title="Add double()", detail="double(a) returns add(a, a)",
                            expected_files=["calc/ops.py", "tests/test_ops.py"])
    plan["steps"][0]["atoms"].append({"name": "double", "signature": "def double(a: int) -> int", "effects": []})
    plan["examples"] = [{"test": "tests/test_ops.py::test_double"}]
    calls = [("edit_file", {"path": "calc/ops.py", "old_text": "\n\ndef mul(a: int, b: int) -> int:",
                            "new_text": DOUBLE + "\n\ndef mul(a: int, b: int) -> int:"}),
             ("edit_file", {"path": "tests/test_ops.py", "old_text": "def test_mul():",
                            "new_text": TEST_DOUBLE + "def test_mul():"})]
    script["run"] = [
        {"text": "double() calls add().", "usage": USAGE,
         "tool_calls": [{"id": f"w{i}", "name": name, "arguments": args} for i, (name, args) in enumerate(calls)]},
        {"text": "Done.", "usage": USAGE, "tool_calls": [{"id": "f", "name": "finish", "arguments": {
            "summary": "double() added, calling add().", "steps": [{"status": "done"}]}}]}]
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def recall_evidence(data: Path, task_id: str, stage: str = "recall") -> dict[str, object]:
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        rows = connection.execute("SELECT outcome, evidence_json FROM stage_ledger WHERE stage = ? AND "
                                  "task_id = ? ORDER BY attempt DESC", (stage, task_id)).fetchall()
    outcome, text = rows[0]
    return {"outcome": outcome, **json.loads(text)}


def selection_said(data: Path, task_id: str) -> str:
    """What stage 8's evidence says about the tests its coverage run selected."""
    said = recall_evidence(data, task_id, "atom-example-tests")["test_selection"]
    assert isinstance(said, dict)
    return str(said["said"])


def first_loop_message(data: Path, task_id: str) -> str:
    """The first message of the task's implementation loop, as stored (redacted) in its conversation."""
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        (parts,), = connection.execute("SELECT parts_json FROM loop_messages WHERE task_id = ? AND sequence = 1",
                                       (task_id,)).fetchall()
    return json.dumps(json.loads(parts))


def run_task(data: Path, repo: Path, *extra: str) -> str:
    ran = cli(data, *run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow-check-tools", "--yes",
                              *extra))
    assert ran.code == 0, ran.out + ran.err
    found = re.search(r"codeflux task accept (tsk_[0-9a-f]+) --identity ([0-9a-f]{64})", ran.out)
    assert found, ran.out
    return found.group(1) + " " + found.group(2)


def test_the_second_task_reuses_the_atom_the_first_one_verified_and_a_quarantined_entry_is_not_used(
        tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    first, identity = run_task(data, repo).split()
    before = recall_evidence(data, first)  # positive control: nothing learned yet, so task 1 writes add
    assert before["outcome"] == "satisfied" and before["reused"] == [] and before["written"] == ["add"]
    assert selection_said(data, first) == "whole suite: no applicable file-test map for calc/ops.py"
    assert cli(data, "memory", "list").out.strip() == "no memory entries"

    assert cli(data, "task", "accept", first, "--identity", identity).code == 0

    listed = cli(data, "memory", "list").out
    assert re.search(r"atom calc\.ops\.add contract [0-9a-f]{64}", listed), listed
    assert "tests covering calc/ops.py: tests/test_ops.py::test_add" in listed
    assert "test-command: " in listed and "usable (applicable)" in listed
    entry = re.search(r"(mem_[0-9a-f]+)\s+atom\s", listed)
    assert entry, listed
    test_map = re.search(r"(mem_[0-9a-f]+)\s+file-test-map\s", listed)
    assert test_map, listed

    second, second_identity = run_task(data, repo, "--script", str(second_script(tmp_path / "second.json"))).split()

    recalled = recall_evidence(data, second)
    assert recalled["outcome"] == "satisfied" and recalled["reused"] == ["add"] and recalled["written"] == ["double"]
    add = next(atom for atom in recalled["atoms"] if atom["atom"] == "add")  # type: ignore[union-attr]
    assert add["entry"] == entry.group(1)
    assert add["contract_hash"] == contract_hash("def add(a: int, b: int) -> int", [])
    assert "this run verifies it again" in add["reason"]
    shown = cli(data, "task", "evidence", second, "--json")
    stages = {stage["stage"]: stage for stage in json.loads(shown.out)["stages"]}
    assert stages["recall"]["outcome"] == "satisfied" and "reuse add" in stages["recall"]["detail"]
    assert stages["atom-verification"]["outcome"] == "satisfied"  # phase B verified the reused atom again
    # the coverage run selected its tests from task 1's file-test map (judged at task 2's base revision, since task 2
    # changes calc/ops.py), plus every test of the test file task 2 changed
    assert re.fullmatch(rf"selected from memory entries \[{test_map.group(1)}\] \(\d+ of \d+ tests\)",
                        selection_said(data, second)), selection_said(data, second)
    told = first_loop_message(data, second)  # the loop was told what applies, labelled; task 1's loop was not
    assert MEMORY_LABEL.split(" — ")[0] in told and "atom calc.ops.add contract" in told and "test-command" in told
    assert MEMORY_LABEL.split(" — ")[0] not in first_loop_message(data, first)

    # a person invalidates the atom's entry: it is quarantined and never used again — the next task writes add
    invalidated = cli(data, "memory", "invalidate", entry.group(1), "--reason", "the contract was wrong")
    assert invalidated.code == 0, invalidated.err
    assert cli(data, "task", "reject", second, "--identity", second_identity, "--reason", "try again").code == 0
    third, _ = run_task(data, repo, "--script", str(second_script(tmp_path / "third.json"))).split()
    again = recall_evidence(data, third)
    assert again["reused"] == [] and "add" in again["written"]  # type: ignore[operator]
