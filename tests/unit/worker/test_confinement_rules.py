"""The confinement layer's rules, without running a box: what a card says, what a worker accepts at
start, what a box hides, shows and lets a process write, and the argv it builds."""

from __future__ import annotations

import io
import json
import os
import pwd
import subprocess
import sys
import venv as venv_module
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.domain.confinement import (
    ConfinementMode,
    allow_for_task_refusal,
    describe_approval,
    describe_confinement,
    standing_approval_needs_opt_in,
)
from codeflux.domain.errors import InvalidValueError
from codeflux.worker.confinement import BoxPaths, Confinement, worker_confinement
from codeflux.worker.confinement.landlock import landlock_abi
from codeflux.worker.confinement.launcher import readable_roots
from codeflux.worker.confinement.paths import (
    install_prefix_to_expose,
    is_python_installation,
    python_prefixes,
    reveals_hidden,
)
from codeflux.worker.startup import STARTUP_PROTOCOL, read_startup_config


@pytest.mark.parametrize("mode", list(ConfinementMode), ids=str)
@pytest.mark.parametrize("network", [False, True])
def test_a_card_says_a_command_runs_worktree_code_and_what_the_box_gives(mode: ConfinementMode, network: bool) -> None:
    said = describe_approval(runs_program=True, network=network, mode=mode)
    assert said.startswith("runs code from the task's worktree, which the agent can change; ")
    assert said.endswith(describe_confinement(mode, network=network))
    assert ("unconfined" in said) is (mode is ConfinementMode.NONE)
    if mode is not ConfinementMode.NONE:
        assert ("no network" in said) is not network


def test_a_tool_that_runs_no_program_has_nothing_to_explain() -> None:
    assert describe_approval(runs_program=False, network=False, mode=ConfinementMode.NONE) == ""


def test_allow_for_task_is_refused_only_for_programs_with_no_box() -> None:
    assert allow_for_task_refusal(runs_program=True, mode=ConfinementMode.NONE)
    assert not allow_for_task_refusal(runs_program=False, mode=ConfinementMode.NONE)
    for mode in (ConfinementMode.BUBBLEWRAP, ConfinementMode.LANDLOCK):
        assert not allow_for_task_refusal(runs_program=True, mode=mode)
        assert not standing_approval_needs_opt_in(mode)
    assert standing_approval_needs_opt_in(ConfinementMode.NONE)


def _startup(box: dict[str, object]) -> io.BytesIO:
    line = {"protocol": STARTUP_PROTOCOL, "socket_path": "/tmp/cfw-x/w.sock",
            "lease_id": "lse_0123456789abcdef0123456789abcdef", "lease_token": "t" * 43, "worktree": "/wt",
            "task_id": "tsk_0123456789abcdef", "lease_interval_ms": 1000, "base_commit": None, "confinement": box}
    return io.BytesIO(json.dumps(line).encode() + b"\n")


GOOD_BOX: dict[str, object] = {"mode": "bubblewrap", "bubblewrap": "/usr/bin/bwrap", "hidden": ["/data"],
                               "readonly": [], "git_common_dir": "/repo/.git",
                               "git_admin_dir": "/repo/.git/worktrees/tsk", "tools": "/data/tools",
                               "worktree_readonly": False}


def test_a_worker_reads_the_box_the_coordinator_chose() -> None:
    box = read_startup_config(_startup(GOOD_BOX)).box
    assert (box.mode, box.bubblewrap, box.hidden) == (ConfinementMode.BUBBLEWRAP, "/usr/bin/bwrap", (Path("/data"),))
    assert box.git_admin_dir == Path("/repo/.git/worktrees/tsk")
    assert box.tools == Path("/data/tools")


@pytest.mark.parametrize("change", [
    {"mode": "sandbox"},
    {"mode": "landlock"},  # a bwrap path only in bubblewrap mode
    {"bubblewrap": None},  # and always there
    {"hidden": ["relative/path"]},
    {"hidden": "/data"},
    {"git_admin_dir": "/elsewhere/.git/worktrees/tsk"},  # writable git metadata only inside the common dir
    {"git_admin_dir": "/repo/.git/hooks"},
    {"extra": True},
    {"tools": "data/tools"},
    {"worktree_readonly": "yes"},
    {"worktree_readonly": None},
], ids=repr)
def test_a_worker_refuses_a_box_it_cannot_trust(change: dict[str, object]) -> None:
    with pytest.raises(InvalidValueError):
        read_startup_config(_startup({**GOOD_BOX, **change}))


def test_a_read_only_worktree_is_shown_but_never_writable(tmp_path: Path) -> None:
    """A watch's scratch copy (``worktree_readonly``): only HOME and TMPDIR are writable; the worktree is shown
    read-only; an ordinary task's worktree stays writable."""
    readonly = _worker_box(tmp_path, worktree_readonly=True).paths
    assert readonly.writable == (Path(os.path.realpath(tmp_path / "home")), Path(os.path.realpath(tmp_path / "tmp")))
    assert Path("/wt") in readonly.shown_readonly
    assert Path("/wt") in _worker_box(tmp_path).paths.writable


def test_landlock_reads_are_granted_around_the_hidden_directories_only(tmp_path: Path) -> None:
    visible, hidden = tmp_path / "visible", tmp_path / "hidden"
    (hidden / "inside").mkdir(parents=True)
    visible.mkdir()
    (tmp_path / "link-to-hidden").symlink_to(hidden)
    (tmp_path / "link-to-visible").symlink_to(visible)
    shown = hidden / "inside"

    granted = readable_roots([hidden], [shown])

    assert visible in granted and shown in granted
    assert tmp_path not in granted  # a hidden directory lies below it: carved, never granted whole
    assert hidden not in granted and tmp_path / "link-to-hidden" not in granted
    assert tmp_path / "link-to-visible" in granted
    assert not any(path != shown and (hidden == path or hidden in path.parents) for path in granted)


def test_a_hidden_interpreter_shows_its_installation_never_its_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prefix = home / ".local" / "python" / "3.11"
    (prefix / "lib" / "python3.11").mkdir(parents=True)
    (prefix / "lib" / "python3.11" / "os.py").write_text("")
    (prefix / "bin").mkdir()
    python = prefix / "bin" / "python3.11"
    python.write_text("")
    lonely = home / "bin" / "tool"
    lonely.parent.mkdir()
    lonely.write_text("")
    paths = BoxPaths(worktree=tmp_path / "wt", home=tmp_path / "h", tmpdir=tmp_path / "t", hidden=(home,))

    assert is_python_installation(prefix)
    assert install_prefix_to_expose(str(python), paths) == (prefix,)
    assert install_prefix_to_expose(str(lonely), paths) == (lonely,)  # the file alone, not ~/bin
    assert install_prefix_to_expose("/usr/bin/true", paths) == ()


def test_the_bubblewrap_argv_hides_then_shows_and_keeps_argv0(tmp_path: Path) -> None:
    worktree, data = tmp_path / "data" / "wt", tmp_path / "data"
    common = tmp_path / "repo" / ".git"
    admin = common / "worktrees" / "tsk"
    for directory in (worktree, admin):
        directory.mkdir(parents=True)
    paths = BoxPaths(worktree=worktree, home=worktree, tmpdir=worktree, hidden=(data,), git_common_dir=common,
                     git_admin_dir=admin)
    box = Confinement(mode=ConfinementMode.BUBBLEWRAP, paths=paths, bubblewrap="/usr/bin/bwrap")

    # python3 found on PATH as a link to the pinned interpreter: Python needs the name it was started as
    argv, program = box.command(["python3", "-c", "pass"], executable="/usr/bin/python3.11", network=False,
                                search_path="/usr/bin")

    assert program == "/usr/bin/bwrap" and "--share-net" not in argv
    hidden = {argv[i + 1] for i, word in enumerate(argv) if word == "--tmpfs"}
    assert {"/tmp", "/run", "/home", "/root"} <= hidden  # the data directory (here in /tmp) with them
    assert argv.index(str(common)) < argv.index(str(admin))  # the writable admin dir is mounted on top
    assert argv[argv.index("--ro-bind", argv.index("/dev/shm")) + 1] == str(common)
    assert argv[-6:] == ["-c", 'exec -a "$0" "$@"', "python3", "/usr/bin/python3.11", "-c", "pass"]
    # found on PATH as exactly the pinned file: no shell in between
    plain, _ = box.command(["true"], executable="/usr/bin/true", network=False, search_path="/usr/bin")
    assert plain[-2:] == ["--", "/usr/bin/true"]
    with_network, _ = box.command(["/usr/bin/python3"], executable="/usr/bin/python3", network=True)
    assert "--share-net" in with_network and with_network[-1] == "/usr/bin/python3"


def test_no_box_leaves_the_argv_as_it_is() -> None:
    box = Confinement(mode=ConfinementMode.NONE, paths=BoxPaths(worktree=Path("/w"), home=Path("/h"),
                                                                 tmpdir=Path("/t")))
    assert box.command(["ls", "-l"], executable="/usr/bin/ls", network=True) == (["ls", "-l"], "/usr/bin/ls")


def test_bubblewrap_mode_needs_its_program() -> None:
    with pytest.raises(InvalidValueError):
        Confinement(mode=ConfinementMode.BUBBLEWRAP, paths=BoxPaths(worktree=Path("/w"), home=Path("/h"),
                                                                     tmpdir=Path("/t")))


def test_a_home_is_hidden_wherever_the_password_database_puts_it() -> None:
    paths = BoxPaths(worktree=Path("/w"), home=Path("/h"), tmpdir=Path("/t"))
    home = Path(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    assert any(home == hidden or hidden in home.parents for hidden in paths.all_hidden)
    assert {Path("/tmp"), Path("/run"), Path("/home")} <= set(paths.all_hidden)


def _worker_box(tmp_path: Path, **box: object) -> Confinement:
    config = read_startup_config(_startup({**GOOD_BOX, "mode": "none", "bubblewrap": None, "git_common_dir": None,
                                           "git_admin_dir": None, **box}))
    return worker_confinement(config, {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")})


def test_a_poisoned_pyvenv_cfg_cannot_show_what_the_box_hides(tmp_path: Path) -> None:
    venv = tmp_path / "wt" / ".venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /bin\n")  # its "installation" would be / itself
    found = python_prefixes(tmp_path / "wt", "/usr/bin:/bin")
    box = _worker_box(tmp_path, readonly=[str(path) for path in found] + ["/", "/home"])
    assert Path("/") not in box.paths.readonly and Path("/home") not in box.paths.readonly
    assert all(not reveals_hidden(path, box.paths) for path in box.paths.readonly)


@pytest.mark.parametrize("common", ["/", "/home", "/tmp"])
def test_a_git_directory_that_would_show_a_hidden_one_is_refused(tmp_path: Path, common: str) -> None:
    with pytest.raises(InvalidValueError, match="contains a hidden one"):
        _worker_box(tmp_path, git_common_dir=common, git_admin_dir=None)


@pytest.mark.parametrize("tools", ["/", "/home", "/tmp", "DATA", "DATA/workers"])
def test_tool_overlays_that_would_show_a_hidden_directory_or_other_data_are_refused(tmp_path: Path, tools: str) -> None:
    """Issue 17: only the overlays' own ``tools`` folder is shown again — never the data directory around it."""
    data = tmp_path / "data"
    with pytest.raises(InvalidValueError, match="tool overlays"):
        _worker_box(tmp_path, hidden=[str(data)], tools=tools.replace("DATA", str(data)))


def test_the_tool_overlays_are_bound_read_only_inside_the_hidden_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "tools").mkdir(parents=True)
    box = _worker_box(tmp_path, hidden=[str(data)], tools=str(data / "tools"))
    assert box.paths.tools == data / "tools" and box.paths.is_visible(data / "tools" / "k" / "site")
    assert not box.paths.is_visible(data / "codeflux.sqlite3")
    paths = replace(box.paths, worktree=tmp_path)
    bwrap = Confinement(mode=ConfinementMode.BUBBLEWRAP, paths=paths, bubblewrap="/usr/bin/bwrap")
    argv, _ = bwrap.command(["/usr/bin/true"], executable="/usr/bin/true", network=False)
    shown = argv.index(str(data / "tools"))
    assert argv[shown - 1] == "--ro-bind" and argv.index("--tmpfs") < shown  # hidden first, then shown read-only


def test_the_launcher_runs_nothing_it_cannot_confine(tmp_path: Path) -> None:
    """A real launcher process: with a policy the kernel refuses (ABI 0: no Landlock), it exits 126 and the
    program — which would write a marker — never starts; with a working policy the same program runs."""
    marker = tmp_path / "ran"
    program = ["/bin/sh", "-c", f"echo ran > {marker}"]
    policy = {"readable": ["/"], "writable": [str(tmp_path)], "network": False}

    def launch(abi: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-I", "-B", "-m", "codeflux.worker.confinement",
                               json.dumps({**policy, "abi": abi}), "--", program[0], *program],
                              capture_output=True, text=True, check=False, timeout=60)

    refused = launch(0)
    assert (refused.returncode, marker.exists()) == (126, False)
    assert "could not confine the command; it did not run" in refused.stderr

    ran = launch(landlock_abi())
    assert (ran.returncode, marker.read_text()) == (0, "ran\n"), ran.stderr


def test_an_activated_virtual_environment_on_the_search_path_is_shown_but_never_a_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python3`` first on PATH is a venv's (one outside the worktree, under a hidden root): the box shows that
    environment read-only, not only the interpreter it links to — else the box's ``python3`` silently becomes the
    next one on PATH, with other packages. A "venv" that is a home is never shown."""
    environment = tmp_path / "env"
    venv_module.EnvBuilder(symlinks=True, with_pip=False).create(environment)
    found = python_prefixes(tmp_path / "wt", f"{environment / 'bin'}:/usr/bin:/bin")
    assert found[0] == Path(os.path.realpath(environment))
    assert Path(os.path.realpath(sys.base_prefix)) in found

    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "python3").symlink_to(sys.executable)
    (home / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setenv("HOME", str(home))
    assert Path(os.path.realpath(home)) not in python_prefixes(tmp_path / "wt", f"{home / 'bin'}:/usr/bin")
