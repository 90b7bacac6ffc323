"""A scripted "natural model" session through the real CLI (issue 15, Tests): the scripted provider (not a model)
behaves as real models do — it reads a 100 KB file in windows, writes paths as ``./calc/ops.py``, gets an edit's
indentation wrong and fixes it from the hint, replaces a file it read without copying any hash, and finishes —
and ``codeflux run`` reaches review with green checks through real worker processes, git and SQLite."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.repos import commit_all
from tests.integration.test_finish_natural_runs import demo_script, finish, tool_results, write_script
from tests.integration.test_headless_run import cli, demo, run_args

pytestmark = pytest.mark.slow

TABLE_LINES = 2_500
DOC = '    """Return the sum of a and b."""'
NEW_TESTS = ("from calc.ops import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
             "def test_add_negative():\n    assert add(-1, -2) == -3\n\n\ndef test_add_mixed():\n"
             "    assert add(-1, 2) == 1\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n")


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"usage": {"input_tokens": 400, "output_tokens": 80},
            "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def result(results: dict[str, dict[str, Any]], call_id: str) -> str:
    content: str = results[call_id]["content"]
    return content


def test_a_natural_session_reads_in_windows_fixes_from_hints_replaces_a_read_file_and_reaches_review(
    tmp_path: Path,
) -> None:
    repo, data = demo(tmp_path)
    (repo / "calc" / "table.py").write_text("".join(f"VALUE_{n:05d} = {n:06d}  # {'padding ' * 4}\n"
                                                    for n in range(1, TABLE_LINES + 1)))
    commit_all(repo, "a 100 KB table")
    assert (repo / "calc" / "table.py").stat().st_size > 100_000
    run = [
        call("r1", "read_file", path="calc/table.py"),  # the default window: a head, never the tail
        call("r2", "read_file", path="calc/table.py", start_line=201, line_count=200),
        call("e1", "edit_file", path="./calc/ops.py", old_text=f"{DOC}\n  return abs(a) + abs(b)\n",
             new_text=f"{DOC}\n  return a + b\n"),  # the body indented two spaces where the file has four
        call("e2", "edit_file", path="./calc/ops.py", old_text=f"{DOC}\n    return abs(a) + abs(b)\n",
             new_text=f"{DOC}\n    return a + b\n"),
        call("t1", "read_file", path="tests/test_ops.py"),
        call("w1", "write_file", path="tests/test_ops.py", content=NEW_TESTS),  # no hash: it was read
        finish("f1", "add() returns a + b; a mixed-sign test was added."),
    ]
    script = write_script(tmp_path, demo_script()["plan"][0]["json"], run)

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 0, ran.out + ran.err
    assert "awaiting-review" in ran.out
    assert re.search(r"integration-tests\s+satisfied .*4 tests, 4 passed, 0 failed", ran.out), ran.out
    results = {found["call_id"]: found for found in tool_results(data)}
    head = result(results, "r1")
    shown = re.search(r"showing lines 1[–-](\d+) of 2,?500; call read_file with start_line=(\d+)", head)
    assert shown is not None, head[:400]
    assert int(shown.group(2)) == int(shown.group(1)) + 1  # the note names the line that continues
    assert "VALUE_00001 = 000001" in head and f"VALUE_{TABLE_LINES:05d}" not in head  # the head, not the tail
    window = result(results, "r2")
    assert "   201\tVALUE_00201" in window and "   400\tVALUE_00400" in window and "VALUE_00401" not in window
    assert results["e1"]["is_error"] and "indent" in result(results, "e1").lower(), result(results, "e1")
    assert not results["e2"]["is_error"] and not results["w1"]["is_error"], result(results, "w1")
    assert "pending" not in ran.out  # ./calc/ops.py is inside the worktree: written without asking
    assert (repo / "calc" / "ops.py").read_text().count("abs(") == 2  # the user's checkout is untouched
