"""Bad input ends in a clear state (issue 16, item 6): every input is checked before anything is created, an
input that is not UTF-8 is named with exit 2, a data directory that cannot be used says why with exit 3, a
checkout mid-rebase is refused before any acknowledgement is asked for, and the acknowledgement takes the
hash codeflux printed. Each case was an internal error, a misleading message or a stray draft task before.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import RepoState, make_repository


def _task_lines(data: Path) -> list[str]:
    listed = run_codeflux("task", "list", data_dir=data)
    assert listed.code == 0, listed.err
    return [line for line in listed.out.splitlines() if line.startswith("tsk_")]


def test_a_requirement_file_that_is_not_utf8_is_named_with_exit_2_and_creates_nothing(tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    requirement = tmp_path / "requirement.txt"
    requirement.write_bytes(b"fix \xff the sum\n")
    ran = run_codeflux("run", "--repo", str(repo), "--requirement-file", str(requirement), data_dir=tmp_path / "d")
    assert ran.code == 2, ran.err
    assert f"--requirement-file {requirement}: not valid UTF-8 (byte 5 of the file)" in ran.err
    assert "internal error" not in ran.err


def test_an_argument_that_is_not_utf8_is_named_with_exit_2(tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    # subprocess turns the surrogate back into the raw byte 0xff, as a shell passes it from a pasted name
    ran = run_codeflux("run", "--repo", str(repo), "--requirement", "fix \udcff it", data_dir=tmp_path / "d")
    assert ran.code == 2, ran.err
    assert "the value of --requirement is not valid UTF-8" in ran.err
    shown = run_codeflux("task", "show", "tsk_\udcff", data_dir=tmp_path / "d")
    assert shown.code == 2 and "argument 5 is not valid UTF-8" in shown.err  # after --data-dir PATH


def test_a_script_that_is_missing_or_not_utf8_is_refused_before_a_task_or_budget_exists(tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    data = tmp_path / "d"
    assert run_codeflux("migrate", data_dir=data).code == 0
    for attempt in range(2):  # a retry must not add a draft either
        ran = run_codeflux("run", "--repo", str(repo), "--requirement", "add mul", "--script",
                           str(tmp_path / "missing.json"), data_dir=data)
        assert ran.code == 2, ran.err
        assert f"--script {tmp_path / 'missing.json'}: no such file" in ran.err, attempt
        assert "created" not in ran.out
    garbled = tmp_path / "garbled.json"
    garbled.write_bytes(b'{"plan": [{"text": "\xfe"}]}')
    ran = run_codeflux("run", "--repo", str(repo), "--requirement", "add mul", "--script", str(garbled),
                       data_dir=data)
    assert ran.code == 2 and "not valid UTF-8" in ran.err, ran.err
    assert _task_lines(data) == []


def test_a_data_dir_that_names_a_file_says_so(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("x\n")
    for command in (("task", "list"), ("migrate",), ("inspect", "tasks")):
        ran = run_codeflux(*command, data_dir=a_file)
        assert ran.code == 3, (command, ran.err)
        assert f"--data-dir names {a_file}, which is not a directory" in ran.err
        assert "no codeflux database exists" not in ran.err


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) to mount the data directory read-only")
def test_a_read_only_data_directory_gives_exit_3_with_the_reason_for_every_command(tmp_path: Path) -> None:
    """A read-only mount (root ignores file modes, so a mount is what really makes it read-only here)."""
    data = tmp_path / "d"
    repo = make_repository(tmp_path).path
    assert run_codeflux("task", "create", "--repo", str(repo), "--requirement", "add mul", data_dir=data).code == 0
    task_id = _task_lines(data)[0].split()[0]
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("this machine does not allow a private mount namespace")
    commands = ["task list", f"task show {task_id}", "task recovery", "logs purge", "integrity-check",
                "inspect tasks"]
    script = (f"mount --bind {data} {data} && mount -o remount,bind,ro {data} && "
              + " ; ".join(f"{sys.executable} -m codeflux --data-dir {data} {c} >/dev/null 2>>{tmp_path}/err; "
                           f"echo $? >> {tmp_path}/codes" for c in commands))
    subprocess.run(["unshare", "-m", "sh", "-c", script], check=True, timeout=120)
    codes = (tmp_path / "codes").read_text().split()
    errors = (tmp_path / "err").read_text().splitlines()
    assert codes == ["3"] * len(commands), list(zip(commands, codes, errors, strict=False))
    assert all("the data directory is on a read-only file system" in line for line in errors), errors
    assert not any("internal error" in line for line in errors)


def test_a_rebase_in_progress_is_refused_before_the_uncommitted_changes_are_listed(tmp_path: Path) -> None:
    repo = make_repository(tmp_path, RepoState.MID_REBASE).path
    for command in (("run", "--repo", str(repo), "--requirement", "add mul"),
                    ("task", "create", "--repo", str(repo), "--requirement", "add mul")):
        ran = run_codeflux(*command, data_dir=tmp_path / "d")
        assert ran.code == 3, ran.err
        assert "the checkout has a rebase in progress; finish or abort the rebase" in ran.err
        assert "uncommitted changes" not in ran.out + ran.err  # no acknowledgement was asked for


def test_the_acknowledgement_takes_the_hash_codeflux_printed(tmp_path: Path) -> None:
    repo = make_repository(tmp_path, RepoState.DIRTY).path
    data = tmp_path / "d"
    asked = run_codeflux("task", "create", "--repo", str(repo), "--requirement", "add mul", data_dir=data)
    assert asked.code == 4
    printed = re.search(r"\(hash ([0-9a-f]+)\) first", asked.err)
    assert printed is not None, asked.err
    assert len(printed.group(1)) == 64  # the whole hash: what is printed is what is accepted
    created = run_codeflux("task", "create", "--repo", str(repo), "--requirement", "add mul", "--acknowledge-dirty",
                           printed.group(1), data_dir=data)
    assert created.code == 0, created.err
