"""The coordinator and workers keep their environment and memory from other processes of the same user,
and a box keeps an approved script from them too — as an unprivileged user, because root reads any
process's ``/proc/<pid>/environ`` whatever it does (``PR_SET_DUMPABLE`` does not bind root).

The user is created by the test when it runs as root (``useradd``, removed afterwards); otherwise the
current user is the unprivileged one. The processes run with Debian's ``/usr/bin/python3`` and import
codeflux from this checkout (the test venv's interpreter may live in a home the user cannot enter).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import codeflux
from codeflux.domain.confinement import ConfinementMode
from codeflux.worker.client.confinement import choose_confinement
from codeflux.worker.confinement import BoxPaths, Confinement
from codeflux.worker.confinement.landlock import landlock_abi
from codeflux.worker.hardening import environment_without_secrets

pytestmark = pytest.mark.security

REPOSITORY = Path(codeflux.__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"
QUIET = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ in the checkout
TARGET = f"""
import sys, time
sys.path.insert(0, {str(REPOSITORY)!r})
if sys.argv[1] == "hardened":
    from codeflux.worker.hardening import make_undumpable
    assert make_undumpable()
print("ready", flush=True)
time.sleep(60)
"""
READER = """
import errno, sys
try:
    with open(f"/proc/{sys.argv[1]}/environ", "rb") as handle:
        print(handle.read().decode("utf-8", "replace"))
except OSError as error:
    print("refused:" + errno.errorcode.get(error.errno, str(error.errno)))
"""


@dataclass(frozen=True, slots=True)
class User:
    uid: int
    gid: int
    name: str


@pytest.fixture
def unprivileged() -> Iterator[User]:
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.getuid())
        yield User(uid=entry.pw_uid, gid=entry.pw_gid, name=entry.pw_name)
        return
    if shutil.which("useradd") is None or not os.path.exists(SYSTEM_PYTHON):
        pytest.fail("running as root, this test needs useradd and /usr/bin/python3 to create an unprivileged user")
    name = f"cfprobe{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        yield User(uid=entry.pw_uid, gid=entry.pw_gid, name=name)
    finally:
        subprocess.run(["userdel", name], check=False)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user can enter (pytest's own temp directories are private)."""
    directory = Path(tempfile.mkdtemp(prefix="cf-hardening-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _as(user: User, argv: list[str], **options: object) -> subprocess.Popen[str]:
    extra = {} if os.geteuid() != 0 else {"user": user.uid, "group": user.gid, "extra_groups": []}
    return subprocess.Popen(argv, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # type: ignore[call-overload]
                            **extra, **options)


def _target(user: User, *, hardened: bool, canary: str) -> subprocess.Popen[str]:
    process = _as(user, [SYSTEM_PYTHON, "-c", TARGET, "hardened" if hardened else "plain"],
                  env={**QUIET, "CANARY_API_KEY": canary}, cwd="/")
    assert process.stdout is not None and process.stdout.readline().strip() == "ready", process.stderr
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate(timeout=30)  # reaps it and closes its pipes


def _read_environ(user: User, pid: int, *, wrap: list[str] | None = None, cwd: str = "/") -> str:
    argv = [SYSTEM_PYTHON, "-c", READER, str(pid)]
    reader = _as(user, [*(wrap or []), *argv], env=QUIET, cwd=cwd)
    out, err = reader.communicate(timeout=30)
    assert reader.returncode == 0, err
    return out.strip()


def test_a_hardened_process_hides_its_environment_from_its_own_user_and_a_plain_one_does_not(
        unprivileged: User) -> None:
    canary = f"canary-{secrets.token_hex(8)}"
    hardened, plain = _target(unprivileged, hardened=True, canary=canary), _target(unprivileged, hardened=False,
                                                                                   canary=canary)
    try:
        assert canary in _read_environ(unprivileged, plain.pid)  # the probe is live
        assert _read_environ(unprivileged, hardened.pid) == "refused:EACCES"
    finally:
        for process in (hardened, plain):
            _stop(process)


@pytest.mark.parametrize("mode", [ConfinementMode.BUBBLEWRAP, ConfinementMode.LANDLOCK], ids=str)
def test_a_boxed_script_of_an_unprivileged_user_cannot_read_that_users_other_processes(
        unprivileged: User, shared_dir: Path, mode: ConfinementMode) -> None:
    choice = choose_confinement(mode.value)
    worktree, home, tmp = (shared_dir / name for name in ("worktree", "home", "tmp"))
    for directory in (worktree, home, tmp):
        directory.mkdir()
        os.chown(directory, unprivileged.uid, unprivileged.gid)
    box = Confinement(mode=mode, paths=BoxPaths(worktree=worktree, home=home, tmpdir=tmp),
                      bubblewrap=choice.bubblewrap, landlock_abi=landlock_abi(), python=SYSTEM_PYTHON)
    boxed, _ = box.command([SYSTEM_PYTHON, "-c", READER, "PID"], executable=SYSTEM_PYTHON, network=False)
    if mode is ConfinementMode.LANDLOCK:
        # The launcher is `python -I -m codeflux.worker.confinement`; Debian's python finds codeflux from
        # this checkout instead (-I ignores PYTHONPATH), through the same main().
        start = boxed.index("-m")
        launcher = (f"import sys; sys.path.insert(0, {str(REPOSITORY)!r}); "
                    "from codeflux.worker.confinement.launcher import main; sys.exit(main(sys.argv[1:]))")
        boxed = [boxed[0], "-B", "-c", launcher, *boxed[start + 2:]]
    canary = f"canary-{secrets.token_hex(8)}"
    plain = _target(unprivileged, hardened=False, canary=canary)
    try:
        assert canary in _read_environ(unprivileged, plain.pid)  # unboxed, the same user reads it
        wrapped = [part if part != "PID" else str(plain.pid) for part in boxed]
        reader = _as(unprivileged, wrapped, env={**QUIET, "HOME": str(home), "TMPDIR": str(tmp)},
                     cwd=str(worktree))
        out, err = reader.communicate(timeout=30)
        assert reader.returncode == 0, err
        # bubblewrap: another pid namespace, the process does not exist there.
        # Landlock: the process is listed, but the box may not trace (so not read the environment of) a
        # process outside it — for this unprivileged user; root's CAP_SYS_PTRACE still reads it.
        assert out.strip() == ("refused:ENOENT" if mode is ConfinementMode.BUBBLEWRAP else "refused:EACCES")
    finally:
        _stop(plain)


# The two ways in that a user types: the console script (`[project.scripts]`) and `python -m codeflux`.
ENTRIES = {"console script": [str(Path(sys.executable).with_name("codeflux"))],
           "python -m codeflux": [sys.executable, "-m", "codeflux"]}
IMPORT_LOG_HEADER = "import time: self [us] | cumulative | imported package"
HEAVY = ("codeflux.cli.main", "codeflux.cli.channel", "codeflux.coordinator", "codeflux.services", "grpc", "apsw")


def _entry(name: str) -> list[str]:
    argv = ENTRIES[name]
    if not Path(argv[0]).is_file():
        pytest.fail(f"no {argv[0]}: install codeflux into this interpreter's environment (cmd/codeflux-dev setup)")
    return argv


def _imports_per_process(log: str) -> list[set[str]]:
    """The modules each process imported, in the order the processes ran, from ``-X importtime`` output on a
    shared stderr: an ``execve`` keeps the stream, and each interpreter prints the header before its first
    import."""
    processes: list[set[str]] = []
    for line in log.splitlines():
        if line.startswith(IMPORT_LOG_HEADER):
            processes.append(set())
        elif line.startswith("import time:") and processes:
            processes[-1].add(line.rsplit("|", 1)[1].strip())
    return processes


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_the_coordinator_starts_again_without_credential_variables(tmp_path: Path, entry: str) -> None:
    """The real ``codeflux start``: the same pid, once it serves, was started without the credential variables;
    and the process that re-executed had not imported the CLI (it only checked the environment). The provider keys
    among them were handed over anyway: ``provider list``, answered by that coordinator, names their variables."""
    canary = f"sk-ant-{secrets.token_hex(16)}"
    environment = {**os.environ, "ANTHROPIC_API_KEY": canary, "MY_SERVICE_TOKEN": canary,
                   "CODEFLUX_OPENAI_API_KEY": canary, "CODEFLUX_HOME": str(tmp_path / "data"),
                   "PYTHONPROFILEIMPORTTIME": "1"}
    import_log = tmp_path / "imports.log"
    with import_log.open("w") as log:
        process = subprocess.Popen([*_entry(entry), "start", "--no-browser", "--address", "127.0.0.1:0"],
                                   env=environment, stdout=subprocess.PIPE, stderr=log, text=True, cwd=tmp_path)
    try:
        assert process.stdout is not None
        served = any("open: http://" in line for line in iter(process.stdout.readline, ""))
        assert served, import_log.read_text()[-2000:]
        seen = Path(f"/proc/{process.pid}/environ").read_bytes()
        assert process.poll() is None
        assert b"CODEFLUX_HOME" in seen  # the same process (the pid survives exec), its configuration kept
        assert canary.encode() not in seen
        assert b"ANTHROPIC_API_KEY" not in seen and b"MY_SERVICE_TOKEN" not in seen
        assert b"CODEFLUX_OPENAI_API_KEY" not in seen  # a key for codeflux is handed over by a pipe, not kept
        if entry == "console script":  # the coordinator holds the keys it was handed and says where they come from
            kept, _ = environment_without_secrets(os.environ)
            listed = subprocess.run([*_entry(entry), "provider", "list"], capture_output=True, text=True, timeout=120,
                                    env={**kept, "CODEFLUX_HOME": str(tmp_path / "data")}, check=False)
            lines = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
            assert lines["anthropic"].endswith("key from: environment (ANTHROPIC_API_KEY)"), listed.stdout
            assert lines["openai"].endswith("key from: environment (CODEFLUX_OPENAI_API_KEY)"), listed.stdout
            assert canary not in listed.stdout + listed.stderr
    finally:
        process.terminate()
        process.communicate(timeout=30)
    first, final = _imports_per_process(import_log.read_text())
    assert "codeflux.cli.entry" in first
    assert not first & set(HEAVY), sorted(first & set(HEAVY))
    assert "codeflux.cli.main" in final


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_the_cli_decides_the_re_execution_before_importing_itself(tmp_path: Path, entry: str) -> None:
    """``codeflux version`` with a credential-like variable runs as two processes (one ``execve``): the first
    imports the entry and the hardening module and nothing of the CLI (so the CLI is imported once, in the
    second); without such a variable it is one process. Read from each interpreter's own import log."""
    kept, _ = environment_without_secrets(os.environ)
    runs = {}
    for label, extra in (("with", {"CANARY_API_KEY": f"canary-{secrets.token_hex(8)}"}), ("without", {})):
        done = subprocess.run([*_entry(entry), "version"], env={**kept, **extra, "PYTHONPROFILEIMPORTTIME": "1"},
                              capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
        assert done.returncode == 0 and done.stdout.startswith("codeflux: "), done.stderr[-2000:]
        runs[label] = _imports_per_process(done.stderr)
    assert len(runs["without"]) == 1 and "codeflux.cli.main" in runs["without"][0]  # the probe sees the CLI
    first, final = runs["with"]
    assert {"codeflux.cli.entry", "codeflux.worker.hardening"} <= first
    assert not first & set(HEAVY), sorted(first & set(HEAVY))
    assert {"codeflux.cli.entry", "codeflux.cli.main"} <= final


def test_the_re_executed_cli_does_not_run_a_codeflux_module_of_the_current_directory(tmp_path: Path) -> None:
    """The console script re-executes as ``python -m codeflux``; run from a repository holding its own
    ``codeflux.py``, the re-executed process still runs codeflux, not that file. The twin proves the planted
    module is found when the current directory is on the path (``python -m codeflux`` run there)."""
    marker = f"planted-{secrets.token_hex(8)}"
    (tmp_path / "codeflux.py").write_text(f"print({marker!r})\n")
    kept, _ = environment_without_secrets(os.environ)
    environment = {**kept, "CANARY_API_KEY": f"canary-{secrets.token_hex(8)}"}
    ran = {name: subprocess.run([*_entry(name), "version"], env=environment, capture_output=True, text=True,
                                cwd=tmp_path, timeout=120, check=False) for name in ENTRIES}
    script = ran["console script"]
    assert script.returncode == 0 and script.stdout.startswith("codeflux: "), script.stderr[-2000:]
    assert marker not in script.stdout + script.stderr
    assert marker in ran["python -m codeflux"].stdout  # the plant is live where the user put cwd on the path


def test_the_coordinator_keeps_what_it_needs_and_drops_what_could_carry_a_credential() -> None:
    kept, removed = environment_without_secrets({
        "PATH": "/usr/bin", "HOME": "/home/a", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus",
        "CODEFLUX_HOME": "/d", "OPENAI_API_KEY": "x", "GITHUB_TOKEN": "y", "AWS_SECRET_ACCESS_KEY": "z",
        "DISPLAY": ":0", "SSH_AUTH_SOCK": "/run/agent", "CODEFLUX_ANTHROPIC_API_KEY": "k",
        "CODEFLUX_KEY_HANDOFF": "3:1",
    })
    assert json.dumps(sorted(kept)) == json.dumps(sorted(
        ["PATH", "HOME", "DBUS_SESSION_BUS_ADDRESS", "CODEFLUX_HOME", "DISPLAY"]))
    assert removed == ["AWS_SECRET_ACCESS_KEY", "CODEFLUX_ANTHROPIC_API_KEY", "CODEFLUX_KEY_HANDOFF", "GITHUB_TOKEN",
                       "OPENAI_API_KEY", "SSH_AUTH_SOCK"]


@pytest.fixture
def checkout_venv(shared_dir: Path) -> Path:
    """A venv of Debian's python that imports codeflux (and its dependencies) from this checkout, for a user
    who cannot enter the home the test interpreter lives in."""
    venv = shared_dir / "venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*")) / "site-packages"
    ours = next(Path(sys.prefix, "lib").glob("python3*")) / "site-packages"  # codeflux's dependencies
    (site / "codeflux-checkout.pth").write_text(f"{REPOSITORY}\n{ours}\n")
    return venv / "bin" / "python"


def _owned_directories(user: User, *directories: Path) -> None:
    for directory in directories:
        directory.mkdir()
        os.chown(directory, user.uid, user.gid)


def test_the_confinement_probe_run_whole_as_an_unprivileged_user(unprivileged: User, shared_dir: Path,
                                                                 checkout_venv: Path) -> None:
    """tests/security/unprivileged_scenario.py, as that user: a hardened stand-in coordinator, real workers,
    the probe in every mode. Unconfined, the probe reaches everything but the environment and memory of the
    coordinator and of the real worker that started it (both undumpable); boxed, it reaches none of it
    (Landlock lists processes, no more)."""
    work, home = shared_dir / "work", shared_dir / "home"
    _owned_directories(unprivileged, work, home)
    scenario = _as(unprivileged, [str(checkout_venv), "-m", "tests.security.unprivileged_scenario", str(work)],
                   env={**QUIET, "HOME": str(home)}, cwd=str(REPOSITORY))
    out, err = scenario.communicate(timeout=300)
    assert scenario.returncode == 0, err[-2000:]
    results = json.loads(out.strip().splitlines()[-1])
    reachable = {"tcp", "database", "wal", "coordinator-socket", "home", "other-worktree", "hooks", "git-config",
                 "other-process"}
    twin = results["none"]
    assert (twin["state"], twin["confinement"]) == ("succeeded", "none"), twin["stderr"]
    assert {name for name, seen in twin["probe"].items() if seen == "reached"} == reachable | {"worktree"}
    assert (twin["probe"]["environ"], twin["probe"]["memory"]) == ("EACCES", "EACCES")  # the coordinator's hardening
    assert twin["probe"]["parent-environ"] == "EACCES"  # the real worker's own hardening
    for mode in ("bubblewrap", "landlock"):
        boxed = results[mode]
        assert (boxed["state"], boxed["confinement"]) == ("succeeded", mode), boxed["stderr"]
        # in bubblewrap the parent is the box's own init, inside it; in Landlock it is the worker (refused)
        own = {"other-process"} if mode == "landlock" else {"parent-environ"}
        assert {name for name, seen in boxed["probe"].items() if seen == "reached"} == {"worktree"} | own, boxed


def test_a_running_coordinator_hides_its_environment_from_its_own_user(unprivileged: User, shared_dir: Path,
                                                                        checkout_venv: Path) -> None:
    """The real ``codeflux start``, run by the unprivileged user: another process of that user cannot read its
    environment; a plain process of the same user, started the same way, can (the probe is live)."""
    home, data = shared_dir / "home", shared_dir / "data"
    _owned_directories(unprivileged, home, data)
    marker = f"marker-{secrets.token_hex(8)}"
    environment = {**QUIET, "HOME": str(home), "CODEFLUX_HOME": str(data), "CANARY_MARK": marker}
    coordinator = _as(unprivileged, [str(checkout_venv), "-m", "codeflux", "start", "--no-browser", "--address",
                                     "127.0.0.1:0"], env=environment, cwd="/")
    plain = _as(unprivileged, [str(checkout_venv), "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                env=environment, cwd="/")
    try:
        assert coordinator.stdout is not None and plain.stdout is not None
        assert any("open: http://" in line for line in iter(coordinator.stdout.readline, "")), "no launch URL"
        assert plain.stdout.readline().strip() == "ready"
        assert marker in _read_environ(unprivileged, plain.pid)
        assert _read_environ(unprivileged, coordinator.pid) == "refused:EACCES"
    finally:
        coordinator.terminate()
        coordinator.communicate(timeout=60)
        _stop(plain)
