"""Scripted "natural model" runs through the real CLI (issue 15 items 2 and 5): the scripted provider (not a
model) plays a model that behaves as real ones do — it fixes the right file whatever the plan guessed, runs
the plan's check itself, calls ``finish`` while the tests are still red, tries a network command in a
headless run — and ``codeflux run`` goes through real worker processes, a real git repository and SQLite."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from codeflux.coordinator.runs.finish import FINISH_RED_MARKER
from tests.integration.test_headless_run import SHOWN_TEST_COMMAND, cli, demo, run_args

pytestmark = pytest.mark.slow

DEMO_SCRIPT = Path(__file__).parents[2] / "codeflux/cli/demo_files/script.json"
FIXED = "    return a + b\n"
BROKEN = "    return abs(a) + abs(b)\n"


def demo_script() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DEMO_SCRIPT.read_text())
    return loaded


def edit(call_id: str, old: str, new: str) -> dict[str, Any]:
    return {"text": "Editing calc/ops.py.", "usage": {"input_tokens": 400, "output_tokens": 80}, "tool_calls": [
        {"id": call_id, "name": "edit_file", "arguments": {"path": "calc/ops.py", "old_text": old, "new_text": new}}]}


def command(call_id: str, argv: list[str]) -> dict[str, Any]:
    return {"usage": {"input_tokens": 400, "output_tokens": 80},
            "tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"argv": argv}}]}


def finish(call_id: str, summary: str = "add() now returns a + b; the tests pass.") -> dict[str, Any]:
    return {"usage": {"input_tokens": 400, "output_tokens": 80}, "tool_calls": [
        {"id": call_id, "name": "finish", "arguments": {"summary": summary, "steps": [{"status": "done"}]}}]}


def write_script(tmp_path: Path, plan: dict[str, Any], run: list[dict[str, Any]]) -> Path:
    path = tmp_path / "natural.json"
    path.write_text(json.dumps({"plan": [{"json": plan, "usage": {"input_tokens": 400, "output_tokens": 80}}],
                                "run": run}))
    return path


def rows(data: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        return connection.execute(sql, params).fetchall()


def tool_results(data: Path) -> list[dict[str, Any]]:
    """Every tool result of the stored conversations, in order."""
    found = []
    for (parts,) in rows(data, "SELECT parts_json FROM loop_messages ORDER BY conversation_id, sequence"):
        found += [part for part in json.loads(parts) if part.get("type") == "tool-result"]
    return found


def test_a_plan_naming_the_wrong_file_and_a_right_fix_finishes_with_exit_0(tmp_path: Path) -> None:
    """Before: the plan's expected file was the loop's only completion rule, so the right fix in another file
    could never finish (13 paid calls, exit 5). Now the model fixes calc/ops.py, calls finish, the plan's
    check runs green, and the run reaches review."""
    repo, data = demo(tmp_path)
    plan = demo_script()["plan"][0]["json"]
    plan["steps"][0]["expected_files"] = ["calc/arith.py"]  # the planner's wrong guess
    script = write_script(tmp_path, plan, [edit("e1", BROKEN, FIXED), finish("f1")])

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 0, ran.out + ran.err
    assert "awaiting-review" in ran.out
    assert re.search(r"integration-tests\s+satisfied .*3 tests, 3 passed, 0 failed", ran.out), ran.out
    assert not (repo / "calc" / "arith.py").exists()
    assert rows(data, "SELECT count(*) FROM task_runs") == [(1,)]  # no stall, no second attempt
    said = [json.loads(payload)["text"] for (payload,) in rows(
        data, "SELECT payload_json FROM events WHERE kind = 'agent-message' ORDER BY created_at_us")]
    assert "finish: add() now returns a + b; the tests pass." in said  # the summary reaches the timeline


def test_the_plans_check_run_by_the_model_itself_is_allowed_by_the_plan_approval_headless(tmp_path: Path) -> None:
    """Before: headless, a natural ``python -m pytest -q`` was not pre-approved and ended the run with exit 4.
    Now the plan approval allows exactly its check, so the model's own run of it needs no ``--allow``."""
    repo, data = demo(tmp_path)
    plan = demo_script()["plan"][0]["json"]
    plan["checks"] = [{"name": "unit tests", "argv": ["python", "-m", "pytest", "-q"]}]
    script = write_script(tmp_path, plan, [edit("e1", BROKEN, FIXED), command("t1", ["python", "-m", "pytest", "-q"]),
                                           finish("f1")])

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 0, ran.out + ran.err
    assert re.search(r"run_command  python -m pytest -q  \[model\]\n\s+decision  allowed-once by user: check 'unit "
                     r"tests' of plan revision 1 \(sha256 [0-9a-f]{64}\)", ran.out), ran.out
    assert "denied" not in ran.out
    told = [result["content"] for result in tool_results(data) if result["call_id"] == "t1"]
    assert told and "exit code: 0" in told[0] and "passed" in told[0]


def test_finish_while_the_tests_are_red_gets_the_failure_back_and_repairs_without_a_stall(tmp_path: Path) -> None:
    """The model finishes three times with the same red test (the same failure three times would be a stall,
    and climb the ladder, if these repair turns fed the stall count); each time the failure comes back as the
    finish call's result in the same conversation; it repairs, finishes green, and the run exits 0 on its
    first attempt."""
    repo, data = demo(tmp_path)
    wrong = "    return a - b\n"
    run = [edit("e1", BROKEN, wrong), finish("f1", "Done, I think."), finish("f2", "Done."), finish("f3", "Done!"),
           edit("e2", wrong, FIXED), finish("f4")]
    script = write_script(tmp_path, demo_script()["plan"][0]["json"], run)

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 0, ran.out + ran.err
    assert re.search(r"integration-tests\s+satisfied .*3 tests, 3 passed, 0 failed", ran.out), ran.out
    results = {result["call_id"]: result for result in tool_results(data)}
    for call_id, repair in (("f1", 1), ("f2", 2), ("f3", 3)):
        red = results[call_id]
        assert red["is_error"] and red["content"].startswith(f"{FINISH_RED_MARKER} (repair {repair} of 3")
        assert "test_add_negative" in red["content"] and "exit code: 1" in red["content"]
    assert "f4" not in results  # accepted: the conversation ends with the finish turn
    assert rows(data, "SELECT count(*) FROM task_runs") == [(1,)]  # one attempt: no stall, no climb
    assert rows(data, "SELECT count(*) FROM events WHERE kind = 'attempt-sent-back'") == [(0,)]
    [(conversations,)] = rows(data, "SELECT count(DISTINCT conversation_id) FROM loop_messages")
    assert conversations == 1  # the failures came back in the same conversation


def test_a_headless_network_denial_reaches_the_model_which_finishes_and_the_run_exits_4(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    run = [command("n1", ["curl", "-fsS", "https://example.com/"]), edit("e1", BROKEN, FIXED), finish("f1")]
    script = write_script(tmp_path, demo_script()["plan"][0]["json"], run)

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 4, ran.out + ran.err
    assert "denied by headless-policy" in ran.out
    assert "run_command curl -fsS https://example.com/ is not in the pre-approved operations" in ran.out
    told = next(result for result in tool_results(data) if result["call_id"] == "n1")
    assert told["is_error"] and told["content"].startswith("refused (run_command curl -fsS https://example.com/): "
                                                           "this headless run did not pre-approve it")
    assert "`network:example.com`" in told["content"] and "finish without it" in told["content"]
    assert re.search(r"integration-tests\s+satisfied", ran.out), ran.out  # the model went on and finished
    assert "return a + b" in (Path(rows(data, "SELECT worktree_path FROM tasks")[0][0]) / "calc" / "ops.py").read_text()


def test_without_a_plan_check_or_allow_the_test_command_is_a_recorded_denial_and_exit_4(tmp_path: Path) -> None:
    """What the old "no --allow" test protected, now that a plan check is approved with the plan: a command
    neither the plan nor ``--allow`` approves is still denied headless, recorded, named, and exit 4."""
    repo, data = demo(tmp_path)
    plan = demo_script()["plan"][0]["json"]
    plan["checks"] = []
    script = write_script(tmp_path, plan, [edit("e1", BROKEN, FIXED), finish("f1")])

    ran = cli(data, *run_args(repo, "--script", str(script), "--yes"))

    assert ran.code == 4, ran.out + ran.err
    assert "denied by headless-policy" in ran.out
    assert "not in the pre-approved operations and prompting is off" in ran.out
    assert SHOWN_TEST_COMMAND in ran.out  # shell-quoted: nothing expands $TMPDIR before pytest
