"""Evidence binds to the reviewed diff (issue 16 item 4), through the real CLI on the demo repository in a
checkout that does **not** ignore ``.codeflux-checks/``: the test command's junit report goes to the task's
TMPDIR (pytest expands ``$TMPDIR`` in the approved argv), so after a run the worktree holds only the agent's
change and every stage describes that diff; a worktree edited after validation makes ``task show`` and ``task
diff`` say the evidence is about another diff, and ``task accept`` refuses it (typed, exit 1) with the user's
branch untouched — where it used to land it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from codeflux.cli.exit_codes import ExitCode
from codeflux.pipeline.program import JUNIT_ARGUMENT
from tests.fixtures.cli import CliRun, run_codeflux

pytestmark = pytest.mark.slow

# python3 on the worker's PATH must be an interpreter with pytest: the one running these tests.
ENV = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.invalid",
                           *args], capture_output=True, text=True, check=True).stdout


def cli(data: Path, *args: str) -> CliRun:
    result = run_codeflux(*args, data_dir=data, env=ENV)
    print(f"$ codeflux {' '.join(args)}\n{result.out}{result.err}exit {result.code}\n")
    return result


def validated(tmp_path: Path) -> tuple[Path, Path, str, str, Path, str]:
    """The demo, with a .gitignore that does not name .codeflux-checks/, run to awaiting-review."""
    repo, data = tmp_path / "demo", tmp_path / "data"
    assert cli(data, "demo", "init", str(repo)).code == 0
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "commit", "-qam", "the user's .gitignore does not ignore .codeflux-checks/")
    ran = cli(data, "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"), "--provider",
              "scripted", "--budget", "1.00", "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes")
    assert ran.code == 0, ran.out + ran.err
    found = re.search(r"codeflux task accept (tsk_[0-9a-f]+) --identity ([0-9a-f]{64})", ran.out)
    assert found, ran.out
    task_id, identity = found.groups()
    [worktree] = (data / "worktrees").glob(f"*/{task_id}")
    return repo, data, task_id, identity, worktree, ran.out


def test_the_test_report_never_enters_the_worktree_and_every_stage_describes_the_reviewed_diff(
    tmp_path: Path
) -> None:
    assert "$TMPDIR/" in JUNIT_ARGUMENT and JUNIT_ARGUMENT in DEMO_TEST_COMMAND  # one fixed argv, no host path
    _, data, task_id, identity, worktree, transcript = validated(tmp_path)

    assert git(worktree, "status", "--porcelain", "--untracked-files=all") == " M calc/ops.py\n"
    assert not (worktree / ".codeflux-checks").exists()
    assert list((data / "workers" / task_id / "tmp" / "codeflux-checks").iterdir()) == []  # read there, removed
    assert not (data / "workers" / task_id / "tmp" / "codeflux-scratch").exists()  # no copy is left either
    short = identity[:12]
    assert re.search(rf"26 assembly\s+satisfied worktree verified; diff {short} changes 1 file", transcript)
    assert re.search(rf"28 integration-tests\s+satisfied pytest ran on diff {short}: 3 tests, 3 passed", transcript)
    assert re.search(rf"35 evidence-bundle\s+satisfied bundle of \d+ stages on diff {short}", transcript)
    assert "evidence was gathered on" not in transcript
    diff = cli(data, "task", "diff", task_id)
    assert diff.code == 0 and f"diff identity {identity}" in diff.out
    assert "junit" not in diff.out and "+++ b/calc/ops.py" in diff.out and diff.out.count("+++ b/") == 1
    assert "evidence was gathered on" not in diff.err
    assert "evidence was gathered on" not in cli(data, "task", "show", task_id).err


def test_an_edit_after_validation_is_said_by_show_and_diff_and_accept_refuses_it(tmp_path: Path) -> None:
    repo, data, task_id, identity, worktree, _ = validated(tmp_path)
    head = git(repo, "rev-parse", "HEAD").strip()
    with (worktree / "calc" / "ops.py").open("a") as handle:
        handle.write("\nUNCHECKED = 1  # written after the checks ran\n")

    shown = cli(data, "task", "show", task_id)
    diff = cli(data, "task", "diff", task_id)

    now = re.search(r"diff identity ([0-9a-f]{64})", diff.out)
    assert now and now.group(1) != identity
    for said in (shown.err, diff.err):
        assert f"the evidence was gathered on diff {identity[:12]}, but the worktree's diff is now " \
               f"{now.group(1)[:12]}" in said
    refused = cli(data, "task", "accept", task_id, "--identity", now.group(1))
    assert refused.code == ExitCode.FAILED.value
    assert f"the evidence was gathered on diff {identity[:12]}" in refused.err and "nothing was landed" in refused.err
    assert git(repo, "rev-parse", "HEAD").strip() == head  # the user's branch is untouched
    assert "UNCHECKED" not in (repo / "calc" / "ops.py").read_text()
    assert "awaiting-review" in cli(data, "task", "show", task_id).out
    stale = cli(data, "task", "accept", task_id, "--identity", identity)  # the checked identity: the diff moved on
    assert stale.code == ExitCode.FAILED.value and "changed since it was reviewed" in stale.err
