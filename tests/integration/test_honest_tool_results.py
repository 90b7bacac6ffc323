"""What the model reads of a tool result, through a real SQLite file, git worktree and worker process.

The text is :func:`describe_execution` of the execution the tool driver stored — exactly what the loop
puts in the conversation. A cut is always said, with how to get the rest.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from codeflux.authority.decide import UserDecision
from codeflux.coordinator.runs.loop_steps import describe_execution
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task
from tests.fixtures.worktrees import make_task_worktree


@pytest.fixture
def task(db: Database, tmp_path: Path) -> tuple[TaskId, Path]:
    task_id = TaskId.from_entropy(os.urandom(16))
    made = make_task_worktree(tmp_path / "git", task=task_id.value)
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=made.repository, worktree=made.worktree,
                                    state=TaskState.RUNNING, base_revision=made.base))
    return task_id, made.worktree


def big_file(worktree: Path, lines: int = 2633) -> list[str]:
    """A file of ``lines`` numbered lines, well over 16,000 characters."""
    text = [f"line {number:05d}: " + "x" * 30 for number in range(1, lines + 1)]
    (worktree / "big.py").write_text("".join(f"{line}\n" for line in text))
    return text


def test_reading_a_large_file_shows_its_head_and_says_how_to_read_on(db: Database, tmp_path: Path,
                                                                     task: tuple[TaskId, Path]) -> None:
    task_id, worktree = task
    lines = big_file(worktree)
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        _, record = driver.submit_and_execute(task_id, "read_file", {"path": "big.py"}, idempotency_key="r1")
    assert record is not None
    text = describe_execution(record)
    numbered = re.findall(r"^ *(\d+)\t(.*)$", text, flags=re.MULTILINE)
    assert numbered[0] == ("1", lines[0])  # the head, numbered from 1 — never the tail
    last = int(numbered[-1][0])
    assert 1 < last < len(lines)
    assert [body for _, body in numbered] == lines[:last]
    assert f"showing lines 1–{last} of {len(lines)}" in text
    assert f"call read_file with start_line={last + 1}" in text
    assert "lines 1-2633 of 2633" not in text
    digest = hashlib.sha256((worktree / "big.py").read_bytes()).hexdigest()
    assert f"\nsha256 of the file now: {digest}\n" in text


ELIDED = re.compile(r"\[codeflux: ([\d,]+) characters \(([\d,]+) lines\) elided\]\n")


def test_long_command_output_shows_head_and_tail_with_the_total_elided(db: Database, tmp_path: Path,
                                                                        task: tuple[TaskId, Path]) -> None:
    task_id, _ = task
    full = "".join(f"{number}\n" for number in range(1, 100_001))  # 589 KB: cut when stored, and for the view
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        pending = driver.submit_tool_request(task_id, "run_command", {"argv": ["seq", "1", "100000"]},
                                             idempotency_key="c1")
        driver.decide(pending.request_id, UserDecision.ALLOW_ONCE, reason="the test runs it")
        record = driver.execute(pending.request_id)
    assert record.exit_code == 0 and record.stdout_truncated
    text = describe_execution(record)
    assert "\nstdout (cut: its head and tail are shown):\n1\n2\n3\n" in text
    assert text.endswith("\n99999\n100000\n")
    shown = text.split("stdout (cut: its head and tail are shown):\n", 1)[1]
    notes = list(ELIDED.finditer(shown))
    assert len(notes) == 1  # one note, however many times the output was cut on its way
    head, tail = shown[: notes[0].start()], shown[notes[0].end():]
    assert full.startswith(head) and full.endswith(tail)
    middle = full[len(head) : len(full) - len(tail)]
    assert notes[0].groups() == (f"{len(middle):,}", f"{middle.count(chr(10)):,}")
    assert len(shown) < 17_000


def test_a_failed_edit_tells_the_model_what_was_nearby(db: Database, tmp_path: Path,
                                                       task: tuple[TaskId, Path]) -> None:
    task_id, worktree = task
    (worktree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        _, record = driver.submit_and_execute(
            task_id, "edit_file", {"path": "calc.py", "old_text": "def add(a, b):\n  return a + b\n",
                                   "new_text": "def add(a, b):\n  return b + a\n"}, idempotency_key="e1")
    assert record is not None
    text = describe_execution(record)
    assert text.startswith("state: failed\nfailure: no-match\nmessage: calc.py: old_text does not occur exactly, "
                           "but matches lines 1–2 except for whitespace (indentation")
    assert "content:\n" in text and "     1\tdef add(a, b):\n     2\t    return a + b\n" in text


def test_a_cut_grep_says_how_to_see_the_rest(db: Database, tmp_path: Path, task: tuple[TaskId, Path]) -> None:
    task_id, worktree = task
    (worktree / "many.py").write_text("".join(f"target_{number} = {number}\n" for number in range(1, 301)))
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        _, record = driver.submit_and_execute(task_id, "grep", {"pattern": "target_"}, idempotency_key="g1")
    assert record is not None
    text = describe_execution(record)
    assert "message: showing matches 1–200; more matches exist (max_results=200): call grep with offset=200" in text
    assert "\nmany.py:1:target_1 = 1\n" in text and "many.py:201:" not in text
