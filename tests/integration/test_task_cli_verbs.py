"""The task verbs ``plan``, ``start`` (``--allow``), ``pause``, ``decide``, ``resume`` and ``diff`` through
the real CLI as separate processes, against ``codeflux demo init`` repositories and the scripted provider.

Also: checkpoint refs are pruned when the worktree is removed at a terminal state (rows kept), and kept
with a kept worktree."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import ENV, cli, demo, git

pytestmark = pytest.mark.slow

DEMO_ARGV = DEMO_TEST_COMMAND.split()
PLAN = json.loads((Path(__file__).parents[2] / "codeflux/cli/demo_files/script.json").read_text())["plan"]
PLAN[0]["json"]["checks"] = []
"""The demo's plan without its check: a plan approval pre-approves exactly its checks (issue 15 item 2), and
these tests exercise ``--allow`` and headless denials of the test command, so their plan names none."""
DONE = ("finish", {"summary": "add() returns a + b now.", "steps": [{"status": "done"}]})


FIX = ("edit_file", {"path": "calc/ops.py", "old_text": "    return abs(a) + abs(b)\n",
                     "new_text": "    return a + b\n"})


def turn(text: str, *calls: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"text": text, "usage": {"input_tokens": 10, "output_tokens": 5},
            "tool_calls": [{"id": f"c{i}", "name": name, "arguments": args} for i, (name, args) in enumerate(calls)]}


def script(path: Path, *run: dict[str, object]) -> Path:
    path.write_text(json.dumps({"plan": PLAN, "run": list(run)}))
    return path


def slow_script(path: Path) -> Path:
    """Fix add(), then a slow pre-approved command, then the tests, then done."""
    return script(path, turn("fix", FIX),
                  turn("wait", ("run_command", {"argv": ["sleep", "5"]})),
                  turn("test", ("run_command", {"argv": DEMO_ARGV})), turn("Every step is done.", DONE))


def planned_task(tmp_path: Path, scripted: Path) -> tuple[Path, Path, str]:
    """A demo repository and a task with a budget, planned via `task plan` and approved by its hash."""
    repo, data = demo(tmp_path)
    created = cli(data, "task", "create", "--repo", str(repo), "--requirement", (repo / "TASK.md").read_text().strip())
    assert created.code == 0, created.err
    task_id = re.search(r"task (tsk_[0-9a-f]+) created", created.out).group(1)  # type: ignore[union-attr]
    assert cli(data, "budget", "set", "--task", task_id, "--limit", "1.00").code == 0
    planned = cli(data, "task", "plan", task_id, "--provider", "scripted", "--script", str(scripted))
    assert planned.code == 0, planned.err
    found = re.search(r"approve-plan \S+ --revision (\d+) --sha256 ([0-9a-f]{64})", planned.out)
    assert found, planned.out
    approved = cli(data, "task", "approve-plan", task_id, "--revision", found.group(1), "--sha256", found.group(2))
    assert approved.code == 0 and "ready" in approved.out, approved.err
    return repo, data, task_id


def state(data: Path, task_id: str) -> str:
    shown = cli(data, "task", "show", task_id)
    found = re.search(r"state\s+(\S+)", shown.out)
    assert found, shown.out + shown.err
    return found.group(1)


def rows(data: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        return connection.execute(sql, params).fetchall()


def checkpoint_refs(repo: Path, task_id: str) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", f"refs/codeflux/checkpoints/{task_id}/")\
        .splitlines()


def test_plan_start_without_allow_denies_then_diff_pause_and_decide_refuse_by_state(tmp_path: Path) -> None:
    repo, data, task_id = planned_task(tmp_path, script(tmp_path / "s.json", *json.loads(
        (Path(__file__).parents[2] / "codeflux/cli/demo_files/script.json").read_text())["run"]))

    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(tmp_path / "s.json"))

    assert started.code == 4, started.out + started.err
    assert "0 pre-approved operation(s)" in started.out and "denied by headless-policy" in started.out
    # the model was told and went on; the run ends for review with exit 4 (before: paused at the first denial)
    assert state(data, task_id) == "awaiting-review"
    identity = re.search(r"diff identity ([0-9a-f]{64})", started.out).group(1)  # type: ignore[union-attr]
    request = re.search(r"(treq_[0-9a-f]+)\s+run_command", started.out).group(1)  # type: ignore[union-attr]

    diff = cli(data, "task", "diff", task_id)
    assert diff.code == 0, diff.err
    assert "-    return abs(a) + abs(b)\n+    return a + b" in diff.out
    assert f"diff identity {identity}" in diff.out and "1 file(s)" in diff.out
    assert git(repo, "status", "--porcelain") == ""  # the user's checkout is untouched

    paused_again = cli(data, "task", "pause", task_id)
    assert paused_again.code == 3 and "pause needs work in progress" in paused_again.err
    decided = cli(data, "task", "decide", task_id, "--request", request, "--allow-once")
    assert decided.code == 1 and "already decided (denied)" in decided.err
    assert state(data, task_id) == "awaiting-review"


def test_start_with_allow_runs_to_review_and_diff_of_a_never_started_task_is_refused(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", turn("fix", FIX),
               turn("test", ("run_command", {"argv": DEMO_ARGV})), turn("Every step is done.", DONE))
    _repo, data, task_id = planned_task(tmp_path, s)
    not_yet = cli(data, "task", "diff", task_id)
    assert not_yet.code == 3 and "never ran, so it has no diff" in not_yet.err

    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")

    assert started.code == 0, started.out + started.err
    assert "1 pre-approved operation(s)" in started.out and "awaiting-review" in started.out
    assert state(data, task_id) == "awaiting-review"
    again = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s))
    assert again.code != 0 and state(data, task_id) == "awaiting-review"


def test_pause_a_running_task_from_another_process_then_decide_a_pending_request_and_resume(
        tmp_path: Path) -> None:
    _repo, data, task_id = planned_task(tmp_path, slow_script(tmp_path / "slow.json"))
    argv = [sys.executable, "-m", "codeflux", "--data-dir", str(data), "task", "start", task_id,
            "--provider", "scripted", "--script", str(tmp_path / "slow.json"), "--allow", "run_command:sleep 5",
            "--allow", f"run_command:{DEMO_TEST_COMMAND}"]
    running = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **ENV})
    try:
        _wait_for_sleep(data, task_id)
        paused = cli(data, "task", "pause", task_id)
        assert paused.code == 0, paused.err
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 4, out + err
    assert "paused" in out and state(data, task_id) == "paused"
    assert rows(data, "SELECT trigger_kind FROM checkpoints WHERE task_id = ? AND trigger_kind = 'paused'", task_id)

    # the resumed attempt (a new process) continues the kept conversation: the fix of add() in attempt 1
    # already counts as the plan's step, so the script goes on with the tests and ends; nothing is written again
    resumed_script = script(tmp_path / "resume.json", turn("test", ("run_command", {"argv": DEMO_ARGV})),
                            turn("Every step is done.", DONE))
    resumed = cli(data, "task", "resume", task_id, "--provider", "scripted", "--script", str(resumed_script),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")
    assert resumed.code == 0, resumed.out + resumed.err
    assert "the run's conversation continues" in resumed.out and "1 of 1 plan step(s) done" in resumed.out
    assert "stage ledger (attempt 2)" in resumed.out and "3 passed" in resumed.out
    assert state(data, task_id) == "awaiting-review"
    # one conversation, written by both attempts, closed once the diff went to review
    assert rows(data, "SELECT count(*), min(closed_reason) FROM loop_conversations WHERE task_id = ?", task_id) == [
        (1, "the implementation went through validation")]
    attempts = rows(data, "SELECT DISTINCT m.attempt FROM loop_messages m JOIN loop_conversations c"
                    " ON c.id = m.conversation_id WHERE c.task_id = ? ORDER BY 1", task_id)
    assert attempts == [(1,), (2,)]
    assert rows(data, "SELECT count(*) FROM tool_requests WHERE task_id = ? AND tool IN ('write_file', 'edit_file')",
                task_id) == [(1,)]


def _wait_for_sleep(data: Path, task_id: str | None) -> None:
    """Until a ``sleep`` request of the task (of any task when None) is recorded."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [(0,)]
        if (data / "codeflux.sqlite3").exists():
            with contextlib.suppress(sqlite3.OperationalError):  # not migrated yet
                found = rows(data, "SELECT count(*) FROM tool_requests WHERE (?1 IS NULL OR task_id = ?1) "
                             "AND operation_json LIKE ?2", task_id, '%"sleep"%')
        if found and found[0][0]:
            return
        time.sleep(0.1)
    raise AssertionError("the slow command never started")


def test_checkpoint_refs_are_pruned_when_the_worktree_goes_and_the_rows_stay(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", turn("fix", FIX),
               turn("test", ("run_command", {"argv": DEMO_ARGV})), turn("Every step is done.", DONE))
    repo, data, task_id = planned_task(tmp_path, s)
    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s),
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}")
    assert started.code == 0, started.out + started.err
    recorded = rows(data, "SELECT ref_name, commit_id FROM checkpoints WHERE task_id = ? ORDER BY sequence", task_id)
    assert len(recorded) >= 2  # plan-approved and the material edit
    assert sorted(checkpoint_refs(repo, task_id)) == sorted(f"{ref} {commit}" for ref, commit in recorded)
    # a ref no row names is not ours to delete
    stray = f"refs/codeflux/checkpoints/{task_id}/999"
    git(repo, "update-ref", stray, str(recorded[0][1]))
    identity = re.search(r"--identity ([0-9a-f]{64})", started.out).group(1)  # type: ignore[union-attr]

    accepted = cli(data, "task", "accept", task_id, "--identity", identity)

    assert accepted.code == 0, accepted.err
    assert f"worktree removed with its branch; {len(recorded)} checkpoint ref(s) deleted" in accepted.out \
        or f"worktree removed; {len(recorded)} checkpoint ref(s) deleted" in accepted.out, accepted.out
    assert checkpoint_refs(repo, task_id) == [f"{stray} {recorded[0][1]}"]
    assert rows(data, "SELECT ref_name, commit_id FROM checkpoints WHERE task_id = ? ORDER BY sequence",
                task_id) == recorded
    subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], check=True, capture_output=True)


def test_a_moved_ref_is_left_alone_and_a_kept_worktree_keeps_its_refs(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", turn("fix", FIX), turn("test", ("run_command", {"argv": DEMO_ARGV})))
    repo, data, task_id = planned_task(tmp_path, s)
    started = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s))
    # the script runs out before finish: the task is paused with its conversation (and worktree) kept
    assert started.code == 1 and state(data, task_id) == "paused", started.out + started.err
    recorded = rows(data, "SELECT ref_name, commit_id FROM checkpoints WHERE task_id = ? ORDER BY sequence", task_id)
    worktree = Path(str(rows(data, "SELECT worktree_path FROM tasks WHERE id = ?", task_id)[0][0]))
    (worktree / "notes.txt").write_text("unsaved work\n")  # not in any stored patch: the worktree is kept

    cancelled = cli(data, "task", "cancel", task_id)

    assert cancelled.code == 0, cancelled.err
    assert "worktree kept" in cancelled.out
    assert sorted(checkpoint_refs(repo, task_id)) == sorted(f"{ref} {commit}" for ref, commit in recorded)


def test_retry_with_feedback_runs_another_attempt_on_the_same_plan(tmp_path: Path) -> None:
    """Issue 14 item 9: `codeflux task retry ID --feedback …` on a task awaiting review: a new attempt whose
    conversation begins with the person's words (used to be: no such verb)."""
    s = script(tmp_path / "s.json", turn("fix", FIX), turn("Every step is done.", DONE))
    _repo, data, task_id = planned_task(tmp_path, s)
    allow = ["--allow", f"run_command:{DEMO_TEST_COMMAND}"]
    first = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s), *allow)
    assert first.code == 0 and state(data, task_id) == "awaiting-review", first.out + first.err
    docstring = ("edit_file", {"path": "calc/ops.py", "old_text": "def add(a: int, b: int) -> int:\n",
                               "new_text": "def add(a: int, b: int) -> int:\n    \"\"\"The sum of a and b.\"\"\"\n"})
    second = script(tmp_path / "s2.json", turn("docstring", docstring), turn("Every step is done.", DONE))

    retried = cli(data, "task", "retry", task_id, "--feedback", "give add() a docstring", "--provider", "scripted",
                  "--script", str(second), *allow)

    assert retried.code == 0, retried.out + retried.err
    assert "stage ledger (attempt 2)" in retried.out and state(data, task_id) == "awaiting-review"
    stored = rows(data, "SELECT reason FROM task_transitions WHERE task_id = ? AND to_state = 'running'", task_id)
    assert any("give add() a docstring" in str(reason) for (reason,) in stored)
    blank = cli(data, "task", "retry", task_id, "--feedback", " ", "--provider", "scripted", "--script", str(second))
    assert blank.code == 2 and "feedback" in blank.err


def test_reject_with_retry_keeps_the_patch_and_runs_another_attempt_with_the_reason(tmp_path: Path) -> None:
    """Issue 14 item 9: `codeflux task reject ID --identity H --reason … --retry` rejects the reviewed diff (its
    patch kept, stage 36 failed with the reason, never `cancelled`) as a second attempt on the same plan starts
    with the reason in its conversation, and that attempt goes back to review (it used to be: no --retry; a
    reject ended the task). Item 10: `task show` and `task diff` (the terminal's review) show the measured spend
    and what remains of the hard limit, as `codeflux run` prints it."""
    s = script(tmp_path / "s.json", turn("fix", FIX), turn("Every step is done.", DONE))
    _repo, data, task_id = planned_task(tmp_path, s)
    allow = ["--allow", f"run_command:{DEMO_TEST_COMMAND}"]
    first = cli(data, "task", "start", task_id, "--provider", "scripted", "--script", str(s), *allow)
    assert first.code == 0 and state(data, task_id) == "awaiting-review", first.out + first.err
    reviewed = cli(data, "task", "diff", task_id)
    found = re.search(r"diff identity ([0-9a-f]{64})", reviewed.out)
    assert reviewed.code == 0 and found, reviewed.out + reviewed.err
    identity = found.group(1)
    spend = re.compile(r"spent (\S+|unknown \(.*?\)) of the hard limit \$1\.00; remaining .+; [\d,]+ tokens used")
    assert spend.search(reviewed.out), reviewed.out
    shown = cli(data, "task", "show", task_id)
    assert re.search(r"^  spend        " + spend.pattern, shown.out, re.MULTILINE), shown.out
    docstring = ("edit_file", {"path": "calc/ops.py", "old_text": "def add(a: int, b: int) -> int:\n",
                               "new_text": "def add(a: int, b: int) -> int:\n    \"\"\"The sum of a and b.\"\"\"\n"})
    second = script(tmp_path / "s2.json", turn("docstring", docstring), turn("Every step is done.", DONE))
    reason = "no docstring on add(); write one"

    blank = cli(data, "task", "reject", task_id, "--identity", identity, "--reason", " ", "--retry",
                "--provider", "scripted", "--script", str(second))
    assert blank.code == 2 and "reason" in blank.err and state(data, task_id) == "awaiting-review"
    retried = cli(data, "task", "reject", task_id, "--identity", identity, "--reason", reason, "--retry",
                  "--provider", "scripted", "--script", str(second), *allow)

    assert retried.code == 0, retried.out + retried.err
    assert "stage ledger (attempt 2)" in retried.out and state(data, task_id) == "awaiting-review"
    assert rows(data, "SELECT kind, diff_identity FROM task_patches WHERE task_id = ?", task_id) == [
        ("rejected", identity)]
    assert rows(data, "SELECT attempt, decision, diff_identity, human_acceptance, deliver, reason "
                      "FROM task_deliveries WHERE task_id = ?", task_id) == [
        (1, "rejected", identity, "failed", "blocked", reason)]
    moves = rows(data, "SELECT from_state, to_state, reason FROM task_transitions WHERE task_id = ? ORDER BY id",
                 task_id)
    assert ("awaiting-review", "running",
            f"diff {identity[:12]} rejected; retry under plan revision 1: {reason}") in moves
    assert all(to != "cancelled" for _, to, _ in moves)
    opened = rows(data, "SELECT m.parts_json FROM loop_messages m JOIN loop_conversations c "
                        "ON c.id = m.conversation_id WHERE m.task_id = ? AND c.opened_in_attempt = 2 "
                        "AND m.sequence = 1", task_id)
    assert opened and reason in str(opened[0][0]) and f"rejected the diff of attempt 1 (identity {identity[:12]}" \
        in str(opened[0][0])
    patch = cli(data, "task", "patch", task_id)
    assert patch.code == 0 and "calc/ops.py" in patch.out
