from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.cli.main import COMMAND_MODULES, main
from codeflux.store.migrations import supported_schema_version
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import make_repository


def test_an_unknown_command_exits_2_with_a_did_you_mean(tmp_path: Path) -> None:
    run = run_codeflux("doctr", data_dir=tmp_path)
    assert run.code == 2
    assert "did you mean 'doctor'" in run.err
    assert "Traceback" not in run.err


def test_a_misspelled_flag_exits_2_with_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backup", "--ouput", "x"]) == 2
    assert "did you mean --output?" in capsys.readouterr().err


def test_a_missing_or_empty_value_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(tmp_path), "backup"]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["--data-dir", "", "doctor"]) == 2
    assert "empty" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: codeflux" in capsys.readouterr().err


def test_every_command_has_help_with_the_exit_code_table(capsys: pytest.CaptureFixture[str]) -> None:
    for module in COMMAND_MODULES:
        name = module.replace("_", "-")
        assert main([name, "--help"]) == 0, name
        assert "exit codes:" in capsys.readouterr().out


def test_stray_values_are_never_echoed_in_an_error(tmp_path: Path) -> None:
    run = run_codeflux("version", "sk-ant-api03-notarealkeybutlooksone", data_dir=tmp_path)
    assert run.code == 2
    assert "sk-ant" not in run.err
    assert "not shown" in run.err


def test_a_data_dir_that_is_a_file_gets_a_one_line_fix(tmp_path: Path) -> None:
    file = tmp_path / "plain-file"
    file.write_text("x")
    run = run_codeflux("migrate", data_dir=file)
    assert run.code == 3
    assert run.err.count("\n") == 1
    assert "not a directory" in run.err and "--data-dir" in run.err
    assert file.read_text() == "x"


def test_version_names_schema_and_libraries_and_on_request_sqlite_and_libgit2() -> None:
    run = run_codeflux("version")
    assert run.code == 0
    for label in ("codeflux:", f"schema-version: {supported_schema_version()}", "apsw:", "pygit2:"):
        assert label in run.out
    assert "sqlite:" not in run.out and "libgit2" not in run.out  # those need the libraries loaded
    loaded = run_codeflux("version", "--libraries")
    assert loaded.code == 0
    assert loaded.out.startswith(run.out)
    for label in ("sqlite: 3.", "libgit2: 1."):
        assert label in loaded.out


def test_an_option_of_another_command_is_unknown_here_and_never_suggested_as_itself(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["start", "--port", "47399"]) == 2
    err = capsys.readouterr().err
    assert "unknown option --port" in err
    assert "did you mean --port" not in err
    assert "47399" not in err


def test_a_reader_that_goes_away_is_not_reported_as_a_bug(tmp_path: Path) -> None:
    """`codeflux prices list | head -1`: the pipe closes early; no "internal error … this is a bug"."""
    process = subprocess.Popen([sys.executable, "-B", "-m", "codeflux", "--data-dir", str(tmp_path / "data"),
                                "prices", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader goes away before the command writes its first line
    with process.stderr:
        err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141  # as a shell reports a process that SIGPIPE ended
    assert err == "", err


def test_task_list_piped_into_head_exits_quietly_as_sigpipe_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`codeflux task list | head -c 0` in a real shell: the reader exits before the first line is written."""
    data = tmp_path / "data"
    repo = make_repository(tmp_path).path
    assert main(["--data-dir", str(data), "task", "create", "--repo", str(repo), "--requirement", "add mul"]) == 0
    script = 'set -o pipefail; "$0" -B -m codeflux --data-dir "$1" task list | head -c 0; echo "exit=$?"'
    shell = subprocess.run(["bash", "-c", script, sys.executable, str(data)], capture_output=True, text=True,
                           timeout=60, check=False)
    assert shell.stdout == "exit=141\n", shell
    assert shell.stderr == "", shell.stderr
    capsys.readouterr()
    assert main(["--data-dir", str(data), "task", "list"]) == 0  # the positive control: it has a line to write
    assert capsys.readouterr().out.startswith("tsk_")
