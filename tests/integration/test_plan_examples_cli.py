"""`codeflux task plan TASK --set-example / --add-example / --remove-example` through the real CLI as subprocesses
(issue 14 item 1), on a `codeflux demo init` repository with the scripted provider (not a model) and a plain
requirement (no ACCEPTANCE block): each edit records a new revision by the person; a bad edit exits 2 with the
domain's reason and records nothing; the revision read before an edit can no longer be approved (exit 1); the
edited one is approved and the run reproduces the added command example (stage 29)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import cli, demo

pytestmark = pytest.mark.slow

PLAIN = "Make add() in calc/ops.py return the correct sum for negative numbers."
SUM = "python3 -c 'from calc.ops import add; print(add(-1, -2))'"


def planned(tmp_path: Path, requirement: str | None = PLAIN) -> tuple[Path, str, str]:
    """A demo repository's data directory, a task with a budget and plan revision 1's sha256 (``requirement``
    None: the demo's TASK.md, with its ACCEPTANCE block)."""
    repo, data = demo(tmp_path)
    text = requirement if requirement is not None else (repo / "TASK.md").read_text().strip()
    created = cli(data, "task", "create", "--repo", str(repo), "--requirement", text)
    assert created.code == 0, created.err
    task_id = re.search(r"task (tsk_[0-9a-f]+) created", created.out).group(1)  # type: ignore[union-attr]
    assert cli(data, "budget", "set", "--task", task_id, "--limit", "1.00").code == 0
    drafted = cli(data, "task", "plan", task_id, "--provider", "scripted")
    assert drafted.code == 0, drafted.err
    return data, task_id, re.search(r"revision 1 sha256 ([0-9a-f]{64})", drafted.out).group(1)  # type: ignore[union-attr]


def approve_hint(out: str) -> tuple[str, str]:
    found = re.search(r"approve-plan \S+ --revision (\d+) --sha256 ([0-9a-f]{64})", out)
    assert found, out
    return found.group(1), found.group(2)


def test_edit_the_examples_then_approve_and_run_the_edited_revision(tmp_path: Path) -> None:
    data, task_id, first = planned(tmp_path)

    added = cli(data, "task", "plan", task_id, "--add-example", f"command: {SUM}", "--expected", "-3", "--step", "1")

    assert added.code == 0, added.out + added.err
    assert "the examples of plan revision 1 edited; plan revision 2 records them (by you)" in added.out
    assert "1. test tests/test_ops.py::test_add_negative exists and passes" in added.out
    assert ("2. `python3 -c 'from calc.ops import add; print(add(-1, -2))'` exits 0 and prints exactly: -3 "
            "(edited by the person in revision 2)") in added.out
    assert "serves   examples 1, 2" in added.out  # the one step serves both
    revision, second = approve_hint(added.out)
    assert revision == "2"

    stale = cli(data, "task", "approve-plan", task_id, "--revision", "1", "--sha256", first)
    assert stale.code == 1 and "plan" in stale.err, stale.out + stale.err

    approved = cli(data, "task", "approve-plan", task_id, "--revision", "2", "--sha256", second)
    assert approved.code == 0 and "ready" in approved.out, approved.err
    started = cli(data, "task", "start", task_id, "--provider", "scripted",
                  "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow", f"run_command:{SUM}")

    assert started.code == 0, started.out + started.err
    assert re.search(r"1 instructions\s+satisfied .*example\(s\) 2 edited by the person in revision 2", started.out), (
        started.out)
    assert re.search(r"29 end-to-end-tests\s+satisfied .*2 of 2 acceptance example\(s\) reproduced", started.out), (
        started.out)


def test_a_bad_edit_exits_2_with_the_reason_and_records_nothing(tmp_path: Path) -> None:
    data, task_id, _ = planned(tmp_path)

    whole_file = cli(data, "task", "plan", task_id, "--set-example", "1", "test: tests/test_ops.py")
    last = cli(data, "task", "plan", task_id, "--remove-example", "1")
    no_such = cli(data, "task", "plan", task_id, "--remove-example", "2")
    stray = cli(data, "task", "plan", task_id, "--step", "1")
    both = cli(data, "task", "plan", task_id, "--remove-example", "1", "--add-example", "test: a.py::b")

    assert whole_file.code == 2 and "a whole file or suite is not an example" in whole_file.err, whole_file.err
    assert last.code == 2 and "removing the last one is refused" in last.err, last.err
    assert no_such.code == 2 and "there is no example 2 (the plan has 1)" in no_such.err, no_such.err
    assert stray.code == 2 and "--step go with --set-example" in stray.err, stray.err
    assert both.code == 2 and "not allowed with argument" in both.err, both.err
    shown = cli(data, "task", "show", task_id)
    assert re.findall(r"plan\s+revision (\d+) sha256", shown.out) == ["1"], shown.out  # nothing recorded

    changed = cli(data, "task", "plan", task_id, "--set-example", "1", "test: tests/test_ops.py::test_add")
    assert changed.code == 0, changed.err
    assert "1. test tests/test_ops.py::test_add exists and passes (edited by the person in revision 2)" in changed.out


def test_the_requirements_own_blocks_win_so_an_edit_is_refused_saying_so(tmp_path: Path) -> None:
    data, task_id, _ = planned(tmp_path, requirement=None)

    refused = cli(data, "task", "plan", task_id, "--add-example", "test: tests/test_ops.py::test_add")

    assert refused.code == 2, refused.out + refused.err
    assert "ACCEPTANCE blocks (1 example(s)) are the examples this task is checked against" in refused.err
    assert "editing the plan's examples would change nothing" in refused.err
    shown = cli(data, "task", "show", task_id)
    assert "(not editable: the requirement's own ACCEPTANCE blocks" in shown.out


def test_help_documents_the_edit_flags(tmp_path: Path) -> None:
    shown = cli(tmp_path / "data", "task", "plan", "--help")

    assert shown.code == 0
    for flag in ("--set-example N SPEC", "--add-example SPEC", "--remove-example N", "--expected LINE", "--step N"):
        assert flag in shown.out, flag
    assert "never run by a shell" in shown.out
