"""A gating stage that could not run is never a green exit (a follow-up of issue 15's review)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.coordinator.demo import DEMO_TEST_COMMAND
from tests.integration.test_headless_run import cli, demo, git, run_args

pytestmark = pytest.mark.slow


def test_a_run_whose_tests_could_not_run_does_not_exit_0(tmp_path: Path) -> None:
    """Before: the repository's .venv has no pytest, stage 28 integration-tests is blocked ("pytest is not
    installed"), nothing checked the change — and `codeflux run` exited 0 as if it had."""
    repo, data = demo(tmp_path)
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", ".gitignore")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "ignore the venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)

    ran = cli(data, *run_args(repo, "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes"))

    assert "integration-tests" in ran.out and "pytest is not installed" in ran.out, ran.out
    assert ran.code == 3, ran.out + ran.err
    assert "gating stages not run: integration-tests" in ran.out
