"""The worker and the confinement launcher start isolated, write no bytecode, and read a cache prefix they are given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.domain.confinement import ConfinementMode
from codeflux.worker.confinement import Confinement
from codeflux.worker.confinement.landlock import landlock_abi, seccomp_supported
from codeflux.worker.confinement.launcher import launcher_argv
from codeflux.worker.confinement.paths import BoxPaths
from codeflux.worker.interpreter import (
    frozen_runtime_environment,
    isolated_python_argv,
    restore_library_path,
    without_frozen_runtime,
)


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


# ─── a frozen single-file build ──────────────────────────────────────────────────────────────────────────────

PYINSTALLER_VARIABLES = {"_PYI_ARCHIVE_FILE": "/opt/codeflux", "_PYI_APPLICATION_HOME_DIR": "/tmp/_MEIabc123",
                         "_PYI_PARENT_PROCESS_LEVEL": "1"}


def test_a_frozen_build_starts_its_helpers_through_the_hidden_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "pycache_prefix", "/cache/py")  # a frozen program reads no bytecode cache
    assert isolated_python_argv("codeflux.worker") == [sys.executable, "__worker__", "codeflux.worker"]
    paths = BoxPaths(worktree=Path("/w"), home=Path("/h"), tmpdir=Path("/t"))
    argv = launcher_argv("/opt/codeflux", paths, "/usr/bin/true", ["true"], network=False, abi=1)
    assert argv[:3] == ["/opt/codeflux", "__worker__", "codeflux.worker.confinement"]
    assert argv[-3:] == ["--", "/usr/bin/true", "true"]


def test_only_a_frozen_build_passes_the_pyinstaller_variables_on(monkeypatch: pytest.MonkeyPatch) -> None:
    environment = {**PYINSTALLER_VARIABLES, "PATH": "/usr/bin", "_PYI_SPLASH_IPC": "5"}
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert frozen_runtime_environment(environment) == {}
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert frozen_runtime_environment(environment) == PYINSTALLER_VARIABLES
    assert without_frozen_runtime(environment) == {"PATH": "/usr/bin", "_PYI_SPLASH_IPC": "5"}


@pytest.mark.parametrize("mode", list(ConfinementMode))
def test_a_boxed_program_never_gets_the_pyinstaller_variables_but_the_frozen_launcher_does(
        mode: ConfinementMode, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Landlock launcher of a frozen build is the binary again (it must run from the unpacked directory and
    removes the variables before its exec); every other box starts the program itself, without them."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    for name, value in PYINSTALLER_VARIABLES.items():
        monkeypatch.setenv(name, value)
    paths = BoxPaths(worktree=Path("/w"), home=Path("/h"), tmpdir=Path("/t"))
    confinement = Confinement(mode=mode, paths=paths, bubblewrap="/usr/bin/bwrap", landlock_abi=1)
    command = {"PATH": "/usr/bin", **PYINSTALLER_VARIABLES}
    expected = {"PATH": "/usr/bin", **(PYINSTALLER_VARIABLES if mode is ConfinementMode.LANDLOCK else {})}
    assert confinement.environment(command) == expected


def test_the_launcher_removes_the_pyinstaller_variables_before_it_runs_the_program(tmp_path: Path) -> None:
    """The real launcher (Landlock and seccomp applied): the program it execs sees none of the variables."""
    if landlock_abi() < 1 or not seccomp_supported():
        pytest.skip("Landlock or seccomp is unavailable on this kernel")
    paths = BoxPaths(worktree=tmp_path, home=tmp_path, tmpdir=tmp_path)
    env_program = "/usr/bin/env"
    argv = launcher_argv(sys.executable, paths, env_program, ["env"], network=False, abi=landlock_abi())
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "KEPT": "yes", **PYINSTALLER_VARIABLES})
    assert done.returncode == 0, done.stderr
    shown = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert shown.get("KEPT") == "yes" and not set(PYINSTALLER_VARIABLES) & set(shown)


def test_the_hidden_entry_runs_the_worker_and_refuses_any_other_module(tmp_path: Path) -> None:
    """``codeflux __worker__ MODULE`` through the real console script (the entry a frozen build uses too): the
    worker reads its startup line (a bad one: exit 2 naming it), another module is refused, --help never names it."""
    codeflux = Path(sys.executable).parent / "codeflux"
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(tmp_path),
           "PYTHONDONTWRITEBYTECODE": "1"}  # nothing beside the sources (the console script is not isolated)
    worker = subprocess.run([str(codeflux), "__worker__", "codeflux.worker"], input="{}\n", capture_output=True,
                            text=True, check=False, timeout=60, env=env, cwd=tmp_path)
    assert worker.returncode == 2 and worker.stderr.startswith("codeflux worker: "), worker.stderr
    other = subprocess.run([str(codeflux), "__worker__", "json.tool"], capture_output=True, text=True, check=False,
                           timeout=60, env=env, cwd=tmp_path)
    assert other.returncode == 2 and "__worker__ runs only codeflux.worker" in other.stderr
    assert other.stdout == ""
    shown = subprocess.run([str(codeflux), "--help"], capture_output=True, text=True, check=True, timeout=60,
                           env=env, cwd=tmp_path)
    assert "__worker__" not in shown.stdout + shown.stderr


def test_a_frozen_build_gives_the_programs_it_starts_the_users_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = {"LD_LIBRARY_PATH": "/tmp/_MEIabc123:/opt/lib", "LD_LIBRARY_PATH_ORIG": "/opt/lib", "PATH": "/bin"}
    unchanged = dict(bundled)
    monkeypatch.delattr(sys, "frozen", raising=False)
    restore_library_path(unchanged)
    assert unchanged == bundled
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    restored = dict(bundled)
    restore_library_path(restored)
    assert restored == {"LD_LIBRARY_PATH": "/opt/lib", "PATH": "/bin"}
    none_before = {"LD_LIBRARY_PATH": "/tmp/_MEIabc123", "PATH": "/bin"}
    restore_library_path(none_before)
    assert none_before == {"PATH": "/bin"}
