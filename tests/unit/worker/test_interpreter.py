"""The worker and the confinement launcher start isolated, write no bytecode, and read a cache prefix they are given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.worker.confinement.launcher import launcher_argv
from codeflux.worker.confinement.paths import BoxPaths
from codeflux.worker.interpreter import isolated_python_argv


def test_without_a_prefix_the_helper_is_isolated_and_writes_no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", None)
    assert isolated_python_argv("codeflux.worker") == [sys.executable, "-I", "-B", "-m", "codeflux.worker"]


def test_a_prefix_this_process_was_given_is_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", "/cache/py")
    assert isolated_python_argv("codeflux.worker", python="/usr/bin/python3") == [
        "/usr/bin/python3", "-I", "-B", "-X", "pycache_prefix=/cache/py", "-m", "codeflux.worker"]


def test_the_confinement_launcher_starts_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", "/cache/py")
    paths = BoxPaths(worktree=Path("/w"), home=Path("/h"), tmpdir=Path("/t"))
    argv = launcher_argv("/p", paths, "/usr/bin/true", ["true"], network=False, abi=1)
    assert argv[:7] == ["/p", "-I", "-B", "-X", "pycache_prefix=/cache/py", "-m", "codeflux.worker.confinement"]
    assert argv[-3:] == ["--", "/usr/bin/true", "true"]


def test_an_isolated_child_reads_the_prefix_and_writes_nothing(tmp_path: Path) -> None:
    """A real child started the way the worker is: it sees the prefix (isolation alone would drop it), and -B
    keeps it from writing there or beside the sources."""
    prefix = tmp_path / "pycache"
    prefix.mkdir()
    code = "import sys; print(sys.pycache_prefix, sys.dont_write_bytecode, sys.flags.isolated)"
    argv = [sys.executable, "-B", "-X", f"pycache_prefix={prefix}", "-c",
            "import subprocess, sys\n"
            "from codeflux.worker.interpreter import isolated_python_argv\n"
            "argv = isolated_python_argv('json.tool')[:-2] + ['-c', sys.argv[1]]\n"
            "print(subprocess.run(argv, capture_output=True, text=True, check=True).stdout, end='')", code]
    shown = subprocess.run(argv, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert shown.split() == [str(prefix), "True", "1"]
    assert not any(prefix.iterdir())
