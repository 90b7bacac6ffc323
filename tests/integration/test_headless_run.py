"""The headless "Done means" through the real CLI as subprocesses, keyring-free (the scripted provider, not a
model, needs no key): `codeflux demo init` → `codeflux run … --yes` → `codeflux task accept`, checked with
the git CLI; and the two exit-4 endings (no --yes; the test command not pre-approved)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.fixtures.cli import CliRun, run_codeflux
from tests.fixtures.task_runs import repository_environment

pytestmark = pytest.mark.slow

# How the demo's test command is shown: as a POSIX shell would quote it (its `$TMPDIR` is pytest's to expand).
SHOWN_TEST_COMMAND = shlex.join(shlex.split(DEMO_TEST_COMMAND))

# python3 on the worker's PATH must be an interpreter with pytest — and, like a user's, without coverage.py: the
# tests' own interpreter in a virtual environment holding pytest and Hypothesis only.
ENV = {"PATH": f"{repository_environment() / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def cli(data: Path, *args: str) -> CliRun:
    result = run_codeflux(*args, data_dir=data, env=ENV)
    print(f"$ codeflux {' '.join(args)}\n{result.out}{result.err}exit {result.code}\n")
    return result


def demo(tmp_path: Path) -> tuple[Path, Path]:
    repo, data = tmp_path / "demo", tmp_path / "data"
    made = cli(data, "demo", "init", str(repo))
    assert made.code == 0, made.err
    assert "--provider scripted" in made.out and DEMO_TEST_COMMAND in made.out and "--allow-check-tools" in made.out
    return repo, data


def run_args(repo: Path, *extra: str) -> list[str]:
    return ["run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"), "--provider", "scripted",
            "--budget", "1.00", *extra]


def test_demo_run_accept_lands_the_fix_on_the_users_branch(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    before = git(repo, "rev-parse", "HEAD").strip()

    ran = cli(data, *run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow-check-tools", "--yes"))

    assert ran.code == 0, ran.out + ran.err
    # Issue 17, "Done means": the demo's python3 has no coverage.py; --allow-check-tools pre-approves the one install
    # of codeflux's own into its overlay (no network), so the atom checks that run tests are decided on evidence.
    assert re.search(r"allowed-once by headless-policy: pre-approved for this headless run by --allow-check-tools: "
                     r"codeflux's check-tools install into its overlay, no network: run_command \S+ -m pip install ",
                     ran.out), ran.out
    for number, stage in ((5, "contracts"), (8, "atom-example-tests"), (11, "atom-verification"),
                          (13, "atom-mutation"), (14, "anti-patterns")):
        assert re.search(rf"\b{number} {stage}\s+satisfied ", ran.out), (stage, ran.out)
    assert "scripted (not a model)" in ran.out
    assert re.search(r"integration-tests\s+satisfied .*3 tests, 3 passed, 0 failed", ran.out), ran.out
    # Issue 17: the demo's plan declares add (pure) before the code is written; stage 5 compares the diff with it
    # and stage 10 checks that add reads nothing outside its arguments.
    assert "declares add: def add(a: int, b: int) -> int; pure (no effects)" in ran.out
    assert re.search(r"5 contracts\s+satisfied 1 atom\(s\) in the diff, 1 public: each declared", ran.out), ran.out
    assert re.search(r"10 atoms\s+satisfied 1 atom\(s\) declared pure read nothing outside", ran.out), ran.out
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        (stored,), = connection.execute("SELECT evidence_json FROM stage_ledger WHERE stage = 'contracts'").fetchall()
    evidence = json.loads(stored)
    (add,) = evidence["atoms"]
    assert (add["qualified_name"], add["declared"]["name"], add["effects_inferred"]) == ("calc.ops.add", "add", [])
    assert add["parameters"] == [{"name": "a", "annotation": "int"}, {"name": "b", "annotation": "int"}]
    assert evidence["findings"] == [] and evidence["effect_table_version"] == "1"
    # Stage 16 times atoms with a sized input; add takes two ints, so its growth is honestly not measured.
    assert re.search(r"16 atom-complexity\s+satisfied .*growth not measured \(advisory\)", ran.out), ran.out
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        (stored,), = connection.execute("SELECT evidence_json FROM stage_ledger WHERE stage = 'atom-complexity'"
                                        ).fetchall()
    (timed,) = json.loads(stored)["atoms"]
    assert (timed["qualified_name"], timed["growth"]) == ("calc.ops.add", {"measured": False,
                                                                           "detail": "not measured: no sized input"})
    assert "awaiting-review" in ran.out
    found = re.search(r"codeflux task accept (tsk_[0-9a-f]+) --identity ([0-9a-f]{64})", ran.out)
    assert found, ran.out
    task_id, identity = found.groups()
    worktrees = git(repo, "worktree", "list")
    assert task_id in worktrees

    accepted = cli(data, "task", "accept", task_id, "--identity", identity)

    assert accepted.code == 0, accepted.err
    assert "calc/ops.py" in git(repo, "log", "--stat", "-1")
    assert git(repo, "rev-parse", "HEAD").strip() != before
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    assert git(repo, "status", "--porcelain") == ""
    subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], check=True, capture_output=True)
    assert task_id not in git(repo, "worktree", "list")
    shown = cli(data, "task", "show", task_id)
    assert "completed" in shown.out


def test_without_yes_the_run_stops_after_the_plan_with_exit_4(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)

    ran = cli(data, *run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}"))

    assert ran.code == 4, ran.out + ran.err
    assert "plan approval needed and prompting is off" in ran.out
    assert "codeflux task approve-plan" in ran.out
    # Issue 21: the task's cost names the price its calls were charged at (the scripted provider's zero price,
    # recorded by `run` as a user revision) — in `task show` and its --json document.
    (task_id,) = set(re.findall(r"tsk_[0-9a-f]+", ran.out))
    shown = cli(data, "task", "show", task_id)
    assert re.search(r"^  prices       priced by scripted scripted-cheap revision 1, a user revision "
                     r"\(scripted \(not a model\): costs nothing\) recorded \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, "
                     r"effective 2000-01-01: \d+ calls?$", shown.out, re.MULTILINE), shown.out
    document = json.loads(cli(data, "task", "show", task_id, "--json").out)
    (use,) = document["task"]["budget"]["prices"]
    assert (use["provider"], use["model"], use["revision"], use["source"], use["effective_date"]) == (
        "scripted", "scripted-cheap", 1, "user", "2000-01-01")
    assert use["source_detail"] == "scripted (not a model): costs nothing" and use["request_ids"]
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        recorded = connection.execute("SELECT id, price_snapshot_id FROM model_requests WHERE task_id = ?"
                                      " ORDER BY planned_at_us, id", (task_id,)).fetchall()
    assert [request_id for request_id, _ in recorded] == use["request_ids"]
    assert {snapshot for _, snapshot in recorded} == {use["snapshot_id"]}


def test_without_the_allow_the_test_command_is_a_recorded_denial_and_exit_4(tmp_path: Path) -> None:
    """The demo's model runs the test command itself (not the plan's check, ``python3 -m pytest -q``, which
    the plan approval covers): without ``--allow`` that run is a recorded denial, named, and the run exits 4.
    The model is told and goes on (issue 15 item 5): the plan's check and the pipeline's tests still run."""
    repo, data = demo(tmp_path)

    ran = cli(data, *run_args(repo, "--yes"))

    assert ran.code == 4, ran.out + ran.err
    assert "denied by headless-policy" in ran.out
    assert "not in the pre-approved operations and prompting is off" in ran.out
    assert SHOWN_TEST_COMMAND in ran.out
    assert re.search(r"run_command  python3 -m pytest -q  \[pipeline\]\n\s+decision  allowed-once by user: "
                     r"check 'unit tests' of plan revision 1", ran.out), ran.out
    # without --allow-check-tools no install of codeflux's check tools is even asked for: the stages that need
    # coverage.py are blocked, saying how to allow it
    assert "pip install" not in ran.out
    assert re.search(r"8 atom-example-tests\s+blocked\s+coverage is not in the repository's environment", ran.out)
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        (stored,), = connection.execute("SELECT reason FROM stage_ledger WHERE stage = 'atom-example-tests'"
                                        ).fetchall()
    assert "only with --allow-check-tools" in stored, stored
    assert re.search(r"integration-tests\s+satisfied .*3 tests, 3 passed, 0 failed", ran.out), ran.out


def test_a_malformed_allow_is_a_usage_error(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)

    ran = cli(data, *run_args(repo, "--allow", "run_command", "--yes"))

    assert ran.code == 2 and "--allow wants TOOL:ARGUMENTS" in ran.err


@pytest.mark.security
def test_with_no_box_a_preapproved_program_needs_the_logged_opt_in(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)
    unconfined = {**ENV, "CODEFLUX_CONFINEMENT": "none"}

    refused = run_codeflux(*run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes"), data_dir=data,
                           env=unconfined)

    assert refused.code == 3, refused.out + refused.err
    assert "--allow-unconfined" in refused.err
    listed = run_codeflux("task", "list", data_dir=data, env=unconfined)
    assert (listed.code, "no codeflux database" in listed.err) == (3, True)  # refused before anything was written

    ran = run_codeflux(*run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow-unconfined", "--yes"),
                       data_dir=data, env=unconfined)

    assert ran.code == 0, ran.out + ran.err
    assert "UNCONFINED" in ran.err
    assert "[confinement: none]" in ran.out and "[confinement: bubblewrap]" not in ran.out
    logged = run_codeflux("inspect", "logs", "--limit", "50", data_dir=data, env=unconfined).out
    assert "confinement.unconfined-opt-in" in logged and SHOWN_TEST_COMMAND in logged
