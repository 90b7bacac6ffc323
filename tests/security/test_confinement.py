"""Every process codeflux runs for a task is boxed in by the operating system — with real bubblewrap, real
Landlock + seccomp (the fallback, forced), and forced off (the unconfined rules).

An approved repository script (the "probe", written into the task worktree like code the agent wrote)
tries every reach an attacker wants: a TCP listener the test opened on 127.0.0.1, this process's environ
and memory (the test process stands in for the coordinator), the codeflux database and its ``-wal``, a
Unix socket in the data directory (the coordinator's socket lives there), the user's home, another task's
worktree, the repository's ``.git/hooks`` and ``.git/config``, and this process in ``/proc``. Each probe
reports what happened (``reached`` or the errno), and writes a marker in the worktree to prove it ran.
Every "must fail" is checked against its unconfined twin in the same test, which must reach it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import keyring.backend
import pytest

from codeflux.authority.decide import Decider, DecisionOutcome, UserDecision
from codeflux.authority.service import DerivedAllowance
from codeflux.coordinator.runs.tool_driver import ExecutionRecord, SubmittedRequest, ToolDriver
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError, UnconfinedStandingApprovalError
from codeflux.domain.ids import TaskId
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.worker.client.confinement import ConfinementChoice, choose_confinement
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.worktrees import two_running_tasks

pytestmark = pytest.mark.security

NETWORK = CapabilityNeed(capability=Capability.NETWORK)
CONFINED = (ConfinementMode.BUBBLEWRAP, ConfinementMode.LANDLOCK)
PROBE = textwrap.dedent('''\
    import errno, json, os, socket, sys

    targets = json.loads(sys.argv[1])
    results = {}

    def attempt(name, action):
        try:
            action()
            results[name] = "reached"
        except OSError as error:
            results[name] = errno.errorcode.get(error.errno, str(error.errno)) if error.errno else type(error).__name__
        except Exception as error:
            results[name] = type(error).__name__

    def tcp():
        socket.create_connection(("127.0.0.1", targets["port"]), timeout=3).close()

    def read(path, size=16):
        with open(path, "rb") as handle:
            handle.read(size)

    def unix():
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(3)
            client.connect(targets["socket"])

    def write(path):
        with open(path, "a") as handle:
            handle.write("probe was here\\n")

    def listed():
        if not os.path.exists(f"/proc/{targets['pid']}"):
            raise FileNotFoundError(errno.ENOENT, "not listed")

    attempt("tcp", tcp)
    attempt("environ", lambda: read(f"/proc/{targets['pid']}/environ"))
    attempt("memory", lambda: open(f"/proc/{targets['pid']}/mem", "rb").close())
    attempt("database", lambda: read(targets["database"]))
    attempt("wal", lambda: read(targets["wal"], 0))
    attempt("coordinator-socket", unix)
    attempt("home", lambda: write(targets["home"]))
    attempt("other-worktree", lambda: write(targets["other_worktree"]))
    attempt("hooks", lambda: write(targets["hook"]))
    attempt("git-config", lambda: write(targets["git_config"]))
    attempt("other-process", listed)
    attempt("parent-environ", lambda: read(f"/proc/{os.getppid()}/environ"))  # unboxed, the parent is the worker
    attempt("worktree", lambda: write("worktree-write.txt"))
    with open("probe-ran.txt", "w") as marker:
        marker.write("ran\\n")
    print(json.dumps(results))
''')
MUST_FAIL = ("tcp", "environ", "memory", "database", "wal", "coordinator-socket", "home", "other-worktree",
             "hooks", "git-config", "other-process")
# What the Landlock fallback does not hide, and its card says so: the process list, and — when codeflux runs
# as root, as here — other processes' environment (for an unprivileged user Landlock refuses it: see
# test_hardening.py, which runs as one).
LANDLOCK_GAPS = frozenset({"other-process", "environ"})


@dataclass
class World:
    db: Database
    location: DataLocation
    first: TaskId
    second: TaskId
    repository: Path
    worktree: Path
    second_worktree: Path
    listener: socket.socket
    accepted: list[int]
    coordinator_socket: socket.socket
    home_file: Path

    def targets(self) -> dict[str, object]:
        database = self.location.database
        return {
            "port": self.listener.getsockname()[1], "pid": os.getpid(), "database": str(database),
            "wal": f"{database}-wal", "socket": self.coordinator_socket.getsockname(), "home": str(self.home_file),
            "other_worktree": str(self.second_worktree / "planted.txt"),
            "hook": str(self.repository / ".git" / "hooks" / "post-checkout"),
            "git_config": str(self.repository / ".git" / "config"),
        }


def _accept_forever(listener: socket.socket, accepted: list[int]) -> None:
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        accepted.append(1)
        connection.close()


@pytest.fixture
def world(db: Database, data_location: DataLocation, tmp_path: Path) -> Iterator[World]:
    made = two_running_tasks(db, tmp_path / "git")
    first, second_worktree = made.first, made.second_worktree
    (made.worktree / "probe.py").write_text(PROBE)
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    threading.Thread(target=_accept_forever, args=(listener, accepted), daemon=True).start()
    coordinator_socket = socket.socket(socket.AF_UNIX)
    coordinator_socket.bind(str(data_location.directory / "c.sock"))
    coordinator_socket.listen(8)
    home = Path(os.path.expanduser("~"))
    home_file = home / f"codeflux-probe-{first.value}.txt"
    config_before = (made.repository / ".git" / "config").read_bytes()
    try:
        yield World(db=db, location=data_location, first=first, second=made.second, repository=made.repository,
                    worktree=made.worktree, second_worktree=second_worktree, listener=listener, accepted=accepted,
                    coordinator_socket=coordinator_socket, home_file=home_file)
    finally:
        listener.close()
        coordinator_socket.close()
        home_file.unlink(missing_ok=True)
        (made.repository / ".git" / "hooks" / "post-checkout").unlink(missing_ok=True)
        (made.repository / ".git" / "config").write_bytes(config_before)


@pytest.fixture
def drivers(world: World, tmp_path: Path) -> Iterator[dict[ConfinementMode, ToolDriver]]:
    made: dict[ConfinementMode, ToolDriver] = {}
    try:
        for mode in ConfinementMode:
            made[mode] = ToolDriver(world.db, state_dir=world.location.directory / "workers" / mode.value,
                                    data_dir=world.location.directory, confinement=choose_confinement(mode.value))
        yield made
    finally:
        for driver in made.values():
            driver.close()
    assert wait_until_no_process_works_under(tmp_path) == []


_keys = iter(range(1_000_000))


def submit(driver: ToolDriver, task_id: TaskId, tool: str, **raw: object) -> SubmittedRequest:
    return driver.submit_tool_request(task_id, tool, raw, idempotency_key=f"c{next(_keys)}", source="test")


def run_allowed(driver: ToolDriver, task_id: TaskId, argv: list[str], *,
                decision: UserDecision = UserDecision.ALLOW_ONCE) -> ExecutionRecord:
    request = submit(driver, task_id, "run_command", argv=argv)
    if request.outcome is DecisionOutcome.PENDING:
        driver.decide(request.request_id, decision, reason="the test allows it")
    return driver.execute(request.request_id)


def probe(world: World, driver: ToolDriver, *, network: bool = False) -> dict[str, str]:
    """Run the probe approved (allow-once); ``network`` makes its argv carry a URL, so it needs (and is
    granted) ``network`` for this exact operation."""
    (world.worktree / "probe-ran.txt").unlink(missing_ok=True)
    argv = [sys.executable, "probe.py", json.dumps(world.targets())]
    if network:
        argv.append("https://probe.example")  # an operand naming a host: the classifier adds network
    record = run_allowed(driver, world.first, argv)
    assert record.state == "succeeded", (record.message, record.stderr)
    assert (world.worktree / "probe-ran.txt").read_text() == "ran\n", "the probe did not run"
    return dict(json.loads(record.stdout or "{}"))


def undo_twin_writes(world: World, config: bytes) -> None:
    world.home_file.unlink(missing_ok=True)
    (world.second_worktree / "planted.txt").unlink(missing_ok=True)
    (world.repository / ".git" / "hooks" / "post-checkout").unlink(missing_ok=True)
    (world.repository / ".git" / "config").write_bytes(config)


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_an_approved_script_reaches_nothing_outside_its_box_and_its_unconfined_twin_reaches_all(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode) -> None:
    config = (world.repository / ".git" / "config").read_bytes()
    twin = probe(world, drivers[ConfinementMode.NONE])
    undo_twin_writes(world, config)
    assert {name: twin[name] for name in MUST_FAIL} == dict.fromkeys(MUST_FAIL, "reached"), \
        "the unconfined twin must reach everything, or the probes prove nothing"

    boxed = probe(world, drivers[mode])

    gaps = LANDLOCK_GAPS if mode is ConfinementMode.LANDLOCK else frozenset()
    assert {name: boxed[name] for name in MUST_FAIL if name not in gaps and boxed[name] == "reached"} == {}, boxed
    assert boxed["worktree"] == "reached"
    assert not world.home_file.exists()
    assert not (world.second_worktree / "planted.txt").exists()
    assert not (world.repository / ".git" / "hooks" / "post-checkout").exists()
    assert (world.repository / ".git" / "config").read_bytes() == config


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_the_network_is_there_only_for_the_exact_operation_granted_it_and_the_files_stay_boxed(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode) -> None:
    without = probe(world, drivers[mode])
    granted = probe(world, drivers[mode], network=True)

    assert without["tcp"] != "reached"
    assert granted["tcp"] == "reached"
    for name in ("home", "hooks", "git-config", "other-worktree", "database", "memory"):
        assert granted[name] != "reached", (name, granted)


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_a_script_rewritten_after_its_approval_still_cannot_connect(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode) -> None:
    driver = drivers[mode]
    (world.worktree / "script.py").write_text("print('harmless')\n")
    first = run_allowed(driver, world.first, [sys.executable, "script.py"], decision=UserDecision.ALLOW_FOR_TASK)
    assert (first.state, first.stdout) == ("succeeded", "harmless\n")
    asked = submit(driver, world.first, "run_command", argv=["curl", "-s", "https://example.com"])
    driver.decide(asked.request_id, UserDecision.DENY, reason="no network for this task", deny=(NETWORK,))
    port = world.listener.getsockname()[1]
    current = hashlib.sha256((world.worktree / "script.py").read_bytes()).hexdigest()
    rewrite = submit(driver, world.first, "write_file", path="script.py", expected_sha256=current,
                     content=textwrap.dedent(f'''\
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
            print("connected")
        except OSError as error:
            print("refused", error.errno)
        '''))
    assert rewrite.outcome is DecisionOutcome.AUTOMATIC
    assert driver.execute(rewrite.request_id).state == "succeeded"

    again = submit(driver, world.first, "run_command", argv=[sys.executable, "script.py"])
    assert again.outcome is DecisionOutcome.ALLOWED_FOR_TASK  # the same argv runs again, unasked…
    record = driver.execute(again.request_id)

    assert record.stdout is not None and record.stdout.startswith("refused")  # …but it ran boxed
    assert world.accepted == []
    assert record.confinement == mode.value

    # The reproduction, as it was before any box: the network denial covers no request of
    # `python3 script.py` (it needs only `process`), so unboxed the rewritten script connects.
    twin = run_allowed(drivers[ConfinementMode.NONE], world.first, [sys.executable, "script.py"])
    assert (twin.stdout, twin.confinement) == ("connected\n", "none")
    deadline = time.monotonic() + 5
    while not world.accepted and time.monotonic() < deadline:  # the listener's thread counts it
        time.sleep(0.01)
    assert len(world.accepted) == 1


def test_unconfined_a_program_is_allowed_once_at_a_time_and_standing_approvals_never_cover_it(
        world: World, drivers: dict[ConfinementMode, ToolDriver]) -> None:
    driver = drivers[ConfinementMode.NONE]
    asked = submit(driver, world.first, "run_command", argv=[sys.executable, "-c", "print(1)"])
    with pytest.raises(UnconfinedStandingApprovalError):
        driver.decide(asked.request_id, UserDecision.ALLOW_FOR_TASK, reason="always")
    driver.decide(asked.request_id, UserDecision.ALLOW_ONCE, reason="once")
    record = driver.execute(asked.request_id)
    assert (record.state, record.confinement) == ("succeeded", "none")
    # A standing approval given under a box does not carry over to a coordinator with none.
    confined = drivers[ConfinementMode.BUBBLEWRAP]
    granted = submit(confined, world.first, "run_command", argv=[sys.executable, "-c", "print(2)"])
    confined.decide(granted.request_id, UserDecision.ALLOW_FOR_TASK, reason="always, in the box")
    assert submit(confined, world.first, "run_command", argv=[sys.executable, "-c", "print(2)"]).outcome \
        is DecisionOutcome.ALLOWED_FOR_TASK
    assert submit(driver, world.first, "run_command", argv=[sys.executable, "-c", "print(2)"]).outcome \
        is DecisionOutcome.PENDING


@pytest.mark.parametrize("mode", list(ConfinementMode), ids=str)
def test_every_execution_records_the_box_it_ran_in(world: World, drivers: dict[ConfinementMode, ToolDriver],
                                                   mode: ConfinementMode) -> None:
    record = run_allowed(drivers[mode], world.first, [sys.executable, "-c", "print('x')"])
    status = submit(drivers[mode], world.first, "git_status")
    git_record = drivers[mode].execute(status.request_id)
    stored = world.db.read(lambda view: view.query_all(
        "SELECT confinement FROM tool_executions WHERE request_id IN (?, ?)", (record.request_id, status.request_id)))
    assert (record.state, git_record.state) == ("succeeded", "succeeded"), git_record.message
    assert sorted(row[0] for row in stored) == [mode.value, mode.value]


def test_a_forced_mode_the_machine_cannot_run_is_refused_never_downgraded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEFLUX_CONFINEMENT", "sandbox")
    with pytest.raises(InvalidValueError, match="CODEFLUX_CONFINEMENT"):
        choose_confinement()


def test_git_in_the_box_cannot_write_the_common_git_directory(world: World,
                                                              drivers: dict[ConfinementMode, ToolDriver]) -> None:
    # git itself (run_command) may update the worktree's own index, never objects, refs or config.
    driver = drivers[ConfinementMode.BUBBLEWRAP]
    git_path = shutil.which("git")
    assert git_path is not None
    config = (world.repository / ".git" / "config").read_bytes()
    record = run_allowed(driver, world.first, [git_path, "config", "core.hooksPath", "/tmp/evil"])
    assert record.state == "failed"
    assert (world.repository / ".git" / "config").read_bytes() == config
    status = run_allowed(driver, world.first, [git_path, "status", "--short"])
    assert status.state == "succeeded", status.stderr


def test_a_choice_knows_what_it_runs() -> None:
    choice = choose_confinement("none")
    assert choice == ConfinementChoice(mode=ConfinementMode.NONE, bubblewrap=None, forced=True,
                                       weaker_because=choice.weaker_because)


SECRET_PROBE = textwrap.dedent('''\
    import os, sys
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = sys.argv[1]  # the worker's environment has no bus: a script guesses
    try:
        import secretstorage
        connection = secretstorage.dbus_init()
        found = list(secretstorage.search_items(connection, {"service": "codeflux-probe", "username": "canary"}))
        import hashlib
        print("reached:" + (hashlib.sha256(found[0].get_secret()).hexdigest() if found else "nothing stored"))
    except Exception as error:
        print("refused:" + type(error).__name__)
    open("probe-ran.txt", "w").write("ran\\n")
''')


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_an_approved_script_cannot_reach_the_secret_service_and_its_unconfined_twin_can(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode,
        secret_service: keyring.backend.KeyringBackend) -> None:
    canary = f"sk-canary-{os.urandom(12).hex()}"
    secret_service.set_password("codeflux-probe", "canary", canary)
    try:
        (world.worktree / "secret_probe.py").write_text(SECRET_PROBE)
        argv = [sys.executable, "secret_probe.py", os.environ["DBUS_SESSION_BUS_ADDRESS"]]
        twin = run_allowed(drivers[ConfinementMode.NONE], world.first, argv)
        boxed = run_allowed(drivers[mode], world.first, argv)
    finally:
        secret_service.delete_password("codeflux-probe", "canary")
    # the probe is live: unconfined, it reads the canary (printed as its sha256, so nothing redacts it)
    assert (twin.stdout or "").strip() == f"reached:{hashlib.sha256(canary.encode()).hexdigest()}"
    assert (world.worktree / "probe-ran.txt").read_text() == "ran\n"
    assert (boxed.stdout or "").startswith("refused:"), boxed.stdout
    assert canary not in (boxed.stdout or "") + (boxed.stderr or "")


def test_a_worktree_venv_whose_interpreter_lives_under_a_home_runs_boxed_and_the_home_stays_hidden(
        world: World, drivers: dict[ConfinementMode, ToolDriver]) -> None:
    """pyenv, uv and poetry install Python under a home: the box shows that installation read-only, and
    nothing else of the home."""
    base = Path(sys.base_prefix).resolve()
    home = Path(os.path.expanduser("~")).resolve()
    neighbour = home / f"codeflux-neighbour-{world.first.value}.txt"
    neighbour.write_text("private\n")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(world.worktree / ".venv")], check=True)
        python = world.worktree / ".venv" / "bin" / "python"
        script = (f"import sys; print(sys.base_prefix); print(sys.prefix)\n"
                  f"try:\n    open({str(neighbour)!r}).read(); print('neighbour: reached')\n"
                  f"except OSError as error:\n    print('neighbour:', error.errno)\n")
        for mode in CONFINED:
            record = run_allowed(drivers[mode], world.first, [str(python), "-c", script])
            assert record.state == "succeeded", (mode, record.stderr)
            lines = (record.stdout or "").splitlines()
            assert lines[0] == str(base)
            assert lines[1] == str((world.worktree / ".venv").resolve()), (mode, "started as the venv's python")
            assert lines[2] != "neighbour: reached", mode
        twin = run_allowed(drivers[ConfinementMode.NONE], world.first, [str(python), "-c", script])
        assert (twin.stdout or "").splitlines()[1:] == [str((world.worktree / ".venv").resolve()), "neighbour: reached"]
    finally:
        neighbour.unlink(missing_ok=True)


SCRATCH_CWD = "$TMPDIR/codeflux-scratch/base"


def scratch_in_temp(driver: ToolDriver, task_id: TaskId) -> Path:
    """The base copy's folder under the task's TMPDIR on the host (made as the pipeline makes it: 0700)."""
    temp = driver.task_temp_directory(task_id)
    temp.mkdir(mode=0o700, parents=True, exist_ok=True)
    scratch = temp / "codeflux-scratch" / "base"
    scratch.mkdir(parents=True)
    return scratch


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_a_check_started_in_a_scratch_folder_of_the_task_tmpdir_is_boxed_the_same(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode) -> None:
    """The base-revision run (issues 14, 16) starts the test command in ``$TMPDIR/codeflux-scratch/base`` — never
    in the worktree: the folder's text is part of the operation's identity, only the pipeline may choose it, the
    worker resolves it under its own TMPDIR, and the box around it is the task's box."""
    driver = drivers[mode]
    scratch = scratch_in_temp(driver, world.first)
    (scratch / "probe.py").write_text(PROBE)
    argv = [sys.executable, "probe.py", json.dumps(world.targets())]
    with pytest.raises(InvalidValueError, match="only the pipeline"):
        driver.submit_tool_request(world.first, "run_command", {"argv": argv}, idempotency_key="m-cwd", source="model",
                                   working_directory=SCRATCH_CWD)
    request = driver.submit_tool_request(world.first, "run_command", {"argv": argv}, idempotency_key="p-cwd",
                                         source="pipeline", working_directory=SCRATCH_CWD)
    in_root = submit(driver, world.first, "run_command", argv=argv)
    assert request.operation_identity != in_root.operation_identity  # the folder is part of the identity
    stored = world.db.read(lambda view: authority_rows.read_tool_request(view, request.request_id)).operation
    assert stored.cwd == SCRATCH_CWD  # fixed text: no host path in the identity
    driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the test allows it")

    record = driver.execute(request.request_id)

    assert record.state == "succeeded", (record.message, record.stderr)
    assert (scratch / "probe-ran.txt").read_text() == "ran\n"  # it started in the TMPDIR scratch folder
    assert not (world.worktree / "probe-ran.txt").exists() and not (world.worktree / "codeflux-scratch").exists()
    boxed = dict(json.loads(record.stdout or "{}"))
    gaps = LANDLOCK_GAPS if mode is ConfinementMode.LANDLOCK else frozenset()
    assert {name: boxed[name] for name in MUST_FAIL if name not in gaps and boxed[name] == "reached"} == {}, boxed
    assert boxed["worktree"] == "reached"  # its relative write landed in the scratch folder: TMPDIR is writable
    assert (scratch / "worktree-write.txt").is_file() and not (world.worktree / "worktree-write.txt").exists()


@pytest.mark.parametrize("cwd", ["$TMPDIR/../x", "$TMPDIR/codeflux-scratch/../../x", "$TMPDIR", "$TMPDIR/",
                                 "$TMPDIR//x", "$TMPDIR/./x", "$HOME/x", "/tmp/x", "$TMPDIR/a\\b"])
def test_a_working_directory_that_could_leave_tmpdir_is_refused_before_any_identity(
        world: World, drivers: dict[ConfinementMode, ToolDriver], cwd: str) -> None:
    driver = drivers[ConfinementMode.NONE]
    with pytest.raises(InvalidValueError, match="working directory"):
        driver.submit_tool_request(world.first, "run_command", {"argv": [sys.executable, "-c", "pass"]},
                                   idempotency_key="p-bad", source="pipeline", working_directory=cwd)
    assert driver.pending_decisions(world.first) == []  # nothing was recorded


@pytest.mark.parametrize("mode", ConfinementMode, ids=str)
def test_a_tmpdir_scratch_folder_reached_through_a_symbolic_link_is_refused_in_the_worker(
        world: World, drivers: dict[ConfinementMode, ToolDriver], tmp_path: Path, mode: ConfinementMode) -> None:
    """What a confined command planted in TMPDIR (a link to anywhere) is never where the next command starts."""
    driver = drivers[mode]
    outside = tmp_path / "outside"
    outside.mkdir()
    scratch = scratch_in_temp(driver, world.first)
    (scratch.parent / "linked").symlink_to(outside, target_is_directory=True)
    (scratch / "file.txt").write_text("not a directory\n")
    refused = {}
    for key, cwd in (("link", "$TMPDIR/codeflux-scratch/linked"), ("file", f"{SCRATCH_CWD}/file.txt"),
                     ("missing", "$TMPDIR/codeflux-scratch/missing")):
        request = driver.submit_tool_request(world.first, "run_command",
                                             {"argv": [sys.executable, "-c", "open('x', 'w')"]},
                                             idempotency_key=f"p-{key}", source="pipeline", working_directory=cwd)
        driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the test allows it")
        record = driver.execute(request.request_id)
        refused[key] = (record.state, record.failure_kind, record.message or "")

    assert refused["link"][:2] == ("failed", "invalid-request") and "symbolic link" in refused["link"][2]
    assert refused["file"][:2] == ("failed", "invalid-request") and "not a directory" in refused["file"][2]
    assert refused["missing"][:2] == ("failed", "invalid-request")
    assert list(outside.iterdir()) == []


def test_a_scratch_folder_reached_through_a_symbolic_link_is_refused_in_the_worker(
        world: World, drivers: dict[ConfinementMode, ToolDriver], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (world.worktree / "linked").symlink_to(outside, target_is_directory=True)
    driver = drivers[ConfinementMode.NONE]
    request = driver.submit_tool_request(world.first, "run_command", {"argv": [sys.executable, "-c", "pass"]},
                                         idempotency_key="p-link", source="pipeline", working_directory="linked")
    driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the test allows it")

    record = driver.execute(request.request_id)

    assert record.state == "failed" and "symbolic link" in (record.message or ""), record.message


def test_a_base_run_is_allowed_only_by_derivation_from_an_allowed_check_and_never_shows_a_card(
        world: World, drivers: dict[ConfinementMode, ToolDriver]) -> None:
    driver = drivers[ConfinementMode.BUBBLEWRAP]
    scratch_in_temp(driver, world.first)
    argv = [sys.executable, "-c", "import os; print(os.path.basename(os.getcwd()))"]
    derived = DerivedAllowance(decided_by=Decider.USER, reason="the base-revision run of an allowed check")
    with pytest.raises(InvalidValueError, match="only the pipeline"):
        driver.submit_tool_request(world.first, "run_command", {"argv": argv}, idempotency_key="d-model",
                                   source="model", derived=derived)
    with pytest.raises(InvalidValueError):  # the rules never allow a program by themselves
        driver.submit_tool_request(world.first, "run_command", {"argv": argv}, idempotency_key="d-sys",
                                   source="pipeline", working_directory=SCRATCH_CWD,
                                   derived=DerivedAllowance(decided_by=Decider.SYSTEM, reason="x"))

    request = driver.submit_tool_request(world.first, "run_command", {"argv": argv}, idempotency_key="d-base",
                                         source="pipeline", working_directory=SCRATCH_CWD, derived=derived)

    assert request.outcome is DecisionOutcome.ALLOWED_ONCE and request.decision.decided_by is Decider.USER
    assert driver.pending_decisions(world.first) == []  # nobody was asked, not even for a moment
    record = driver.execute(request.request_id)
    assert (record.state, record.stdout) == ("succeeded", "base\n")


OVERLAY_PROBE = textwrap.dedent('''\
    import errno, json, sys

    targets = json.loads(sys.argv[1])
    results = {}

    def attempt(name, action):
        try:
            action()
            results[name] = "reached"
        except OSError as error:
            results[name] = errno.errorcode.get(error.errno, str(error.errno)) if error.errno else type(error).__name__

    def read(path):
        with open(path, "rb") as handle:
            handle.read(16)

    def write(path):
        with open(path, "a") as handle:
            handle.write("poisoned\\n")

    attempt("overlay-read", lambda: read(targets["tool"]))
    attempt("overlay-write", lambda: write(targets["tool"]))
    attempt("overlay-new-file", lambda: write(targets["beside"]))
    attempt("database", lambda: read(targets["database"]))
    attempt("other-data", lambda: read(targets["other"]))
    print(json.dumps(results))
''')


@pytest.mark.parametrize("mode", CONFINED, ids=str)
def test_the_tool_overlay_is_read_only_in_the_box_and_the_rest_of_the_data_directory_stays_hidden(
        world: World, drivers: dict[ConfinementMode, ToolDriver], mode: ConfinementMode) -> None:
    """Issue 17: checks import codeflux's check tools from ``<data>/tools`` — shown in the box read-only, so a
    repository's code can neither change a tool another task will run nor add one; everything else of the data
    directory (the database, other files beside the tools) stays hidden. The unconfined twin reaches all of it."""
    site = world.location.directory / "tools" / "cpython-3.11-linux_x86_64" / "site"
    site.mkdir(parents=True)
    tool = site / "tool.py"
    tool.write_text("VERSION = 1\n")
    other = world.location.directory / "beside-the-tools.txt"
    other.write_text("private\n")
    (world.worktree / "overlay_probe.py").write_text(OVERLAY_PROBE)
    targets = json.dumps({"tool": str(tool), "beside": str(site / "planted.py"),
                          "database": str(world.location.database), "other": str(other)})

    twin = run_allowed(drivers[ConfinementMode.NONE], world.first, [sys.executable, "overlay_probe.py", targets])
    assert json.loads(twin.stdout or "{}") == dict.fromkeys(
        ("overlay-read", "overlay-write", "overlay-new-file", "database", "other-data"), "reached")
    tool.write_text("VERSION = 1\n")
    (site / "planted.py").unlink()

    record = run_allowed(drivers[mode], world.first, [sys.executable, "overlay_probe.py", targets])

    assert record.state == "succeeded", (record.message, record.stderr)
    boxed = json.loads(record.stdout or "{}")
    assert boxed["overlay-read"] == "reached"
    assert {name: boxed[name] for name in ("overlay-write", "overlay-new-file", "database", "other-data")
            if boxed[name] == "reached"} == {}, boxed
    assert tool.read_text() == "VERSION = 1\n" and not (site / "planted.py").exists()
