"""Stage 2 through the real CLI as subprocesses (issue 14 item 2), on `codeflux demo init` repositories with the
scripted provider (not a model): a headless run whose requirement names a file the repository lacks stops with
exit 4 printing the question; `task approve-plan` is refused (exit 4) until `task answer` records the answer in a
new revision, which is approved and runs; with `--clarification assume` the run goes on, the assumption stated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import cli, demo

pytestmark = pytest.mark.slow

ALLOW = f"run_command:{DEMO_TEST_COMMAND}"


def requirement_file(repo: Path, tmp_path: Path) -> Path:
    """The demo's requirement plus a sentence naming a file the demo repository does not have."""
    text = (repo / "TASK.md").read_text().replace(
        "negative numbers.", "negative numbers. Keep the notes in docs/NOTES.md in step with it.")
    path = tmp_path / "requirement.md"
    path.write_text(text)
    return path


def run_args(repo: Path, requirement: Path, *extra: str) -> list[str]:
    return ["run", "--repo", str(repo), "--requirement-file", str(requirement), "--provider", "scripted",
            "--budget", "1.00", "--allow", ALLOW, *extra]


def test_headless_ask_exits_4_with_the_question_then_answer_approve_and_run(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)

    ran = cli(data, *run_args(repo, requirement_file(repo, tmp_path), "--yes"))

    assert ran.code == 4, ran.out + ran.err
    assert re.search(r"question 1: The requirement names `docs/NOTES\.md`, which the repository does not have",
                     ran.out), ran.out
    assert "open questions (clarification policy ask), so it is not approved" in ran.out
    assert "sentence 2 Keep the notes in docs/NOTES.md in step with it." in ran.out  # the numbered sentences
    assert "serves   examples 1; sentences 1" in ran.out  # the plan's trace, step by step
    task_id = re.search(r"codeflux task answer (tsk_[0-9a-f]+)", ran.out).group(1)  # type: ignore[union-attr]
    first = re.search(r"revision 1 sha256 ([0-9a-f]{64})", ran.out).group(1)  # type: ignore[union-attr]

    refused = cli(data, "task", "approve-plan", task_id, "--revision", "1", "--sha256", first)
    assert refused.code == 4 and "open question" in refused.err, refused.out + refused.err

    answered = cli(data, "task", "answer", task_id, "--question", "1", "--text", "Leave the notes alone; no docs.")
    assert answered.code == 0, answered.err
    assert "answer   Leave the notes alone; no docs." in answered.out
    found = re.search(r"approve-plan \S+ --revision (2) --sha256 ([0-9a-f]{64})", answered.out)
    assert found, answered.out
    approved = cli(data, "task", "approve-plan", task_id, "--revision", "2", "--sha256", found.group(2))
    assert approved.code == 0 and "ready" in approved.out, approved.err

    started = cli(data, "task", "start", task_id, "--allow", ALLOW, "--provider", "scripted")

    assert started.code == 0, started.out + started.err
    assert re.search(r"2 clarification\s+satisfied .*1 question\(s\): 1 answered, 0 assumed", started.out), started.out
    assert re.search(r"4 decomposition-coverage satisfied .*1 of 1 acceptance example", started.out), started.out


def test_headless_assume_states_the_assumption_and_runs(tmp_path: Path) -> None:
    repo, data = demo(tmp_path)

    ran = cli(data, *run_args(repo, requirement_file(repo, tmp_path), "--yes", "--clarification", "assume"))

    assert ran.code == 0, ran.out + ran.err
    assert "question 1 [assumed, absent-name]" in ran.out
    assert "assumed  `docs/NOTES.md` is to be created by this change." in ran.out
    assert re.search(r"2 clarification\s+satisfied .*0 answered, 1 assumed \(policy assume\)", ran.out), ran.out
