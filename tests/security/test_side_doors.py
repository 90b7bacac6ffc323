"""A network denial refuses every side door to the network, end to end through the real ToolDriver.

The person denies ``network`` for the task; each request below reaches the network (or runs anything)
in a way that once looked like a plain ``process`` request. Each must now be refused when it is
submitted — outcome ``refused-denied-capability``, nobody asked — and executing it must raise
:class:`CapabilityDeniedError` with no execution recorded.

The driver pins argv[0] to a real executable. A side door whose program is not installed here runs
through ``sh -c`` instead (the same words, read by the same classifier rules); the classifier's unit
tests (``tests/unit/authority/test_classify_side_doors.py``) cover each spelling directly.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.errors import CapabilityDeniedError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database, Transaction
from codeflux.store.tasks import insert_task
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.worktrees import make_task_worktree

pytestmark = pytest.mark.security

NETWORK = CapabilityNeed(capability=Capability.NETWORK)
CURL = ["curl", "-s", "https://example.com/x"]
CURL_TEXT = shlex.join(CURL)


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    task_id: TaskId
    worktree: Path


@pytest.fixture
def task(db: Database, tmp_path: Path) -> Task:
    task_id = TaskId.from_entropy(os.urandom(16))
    made = make_task_worktree(tmp_path / "git", task=task_id.value)

    def record(tx: Transaction) -> None:
        insert_task(tx, task_id=task_id, repository_root=made.repository, worktree=made.worktree,
                    state=TaskState.RUNNING, base_revision=made.base)

    db.write(record)
    client = made.worktree / "client"  # repository code that is given a destination
    client.write_text("#!/bin/sh\nexit 0\n")
    client.chmod(0o755)
    return Task(task_id=task_id, worktree=made.worktree)


@pytest.fixture
def driver(db: Database, tmp_path: Path) -> Iterator[ToolDriver]:
    with ToolDriver(db, state_dir=tmp_path / "state") as tool_driver:
        yield tool_driver
    assert wait_until_no_process_works_under(tmp_path) == []


SIDE_DOORS: list[tuple[str, list[str]]] = [
    # bash's socket paths, in every shell's -c string
    ("bash /dev/tcp", ["bash", "-c", "echo hi >/dev/tcp/example.com/80"]),
    ("bash /dev/udp", ["bash", "-c", "echo hi >/dev/udp/example.com/53"]),
    ("bash exec 3<>/dev/tcp", ["bash", "-c", "exec 3<>/dev/tcp/example.com/80; echo GET / >&3; cat <&3"]),
    ("sh /dev/tcp", ["sh", "-c", "cat </dev/tcp/example.com/80"]),
    ("zsh /dev/tcp", ["zsh", "-c", "echo hi >/dev/tcp/example.com/80"]),
    ("bash run-time target", ["bash", "-c", "target=/dev/tcp/example.com/80; echo hi > $target"]),
    # sqlite3 dot commands
    ("sqlite3 .shell", ["sqlite3", "app.db", f".shell {CURL_TEXT}"]),
    ("sqlite3 .system", ["sqlite3", "app.db", f".system {CURL_TEXT}"]),
    ("sqlite3 -cmd", ["sqlite3", "-cmd", f".system {CURL_TEXT}", "app.db"]),
    ("sqlite3 .sh inside SQL", ["sqlite3", "app.db", f"select 1;\n.sh {CURL_TEXT}"]),
    # make, zip, man
    ("make --eval", ["make", "--eval", f"$(shell {CURL_TEXT})"]),
    ("make -E", ["make", "-E", f"x := $(shell {CURL_TEXT})"]),
    ("zip -TT", ["zip", "-T", "-TT", CURL_TEXT, "a.zip", "README.md"]),
    ("zip --unzip-command", ["zip", "-T", f"--unzip-command={CURL_TEXT}", "a.zip", "README.md"]),
    ("man -P", ["man", "-P", CURL_TEXT, "ls"]),
    ("man --pager", ["man", f"--pager={CURL_TEXT}", "ls"]),
    # git
    ("git grep -O", ["git", "grep", f"-O{CURL_TEXT}", "demo"]),
    ("git grep --open-files-in-pager", ["git", "grep", f"--open-files-in-pager={CURL_TEXT}", "demo"]),
    ("git -c diff.external", ["git", "-c", f"diff.external={CURL_TEXT}", "diff"]),
    ("git -c gpg.program", ["git", "-c", f"gpg.program={CURL_TEXT}", "log", "--show-signature"]),
    ("git -c http.proxy", ["git", "-c", "http.proxy=http://proxy.example.com:3128", "status"]),
    ("git -c core.pager", ["git", "-c", f"core.pager={CURL_TEXT}", "log"]),
    ("git -c credential.helper", ["git", "-c", f"credential.helper=!{CURL_TEXT}", "status"]),
    ("git -c url.insteadOf", ["git", "-c", "url.https://example.com/.insteadOf=https://github.com/", "status"]),
    ("git -c include.path", ["git", "-c", "include.path=../evil.cfg", "status"]),
    # busybox network applets
    ("busybox ftpget", ["busybox", "ftpget", "example.com", "local.txt", "remote.txt"]),
    ("busybox ftpput", ["busybox", "ftpput", "example.com", "remote.txt", "README.md"]),
    ("busybox ssl_client", ["busybox", "ssl_client", "-s", "3", "-n", "example.com"]),
    ("busybox wget", ["busybox", "wget", "https://example.com/x"]),
    ("busybox nc", ["busybox", "nc", "example.com", "80"]),
    ("busybox telnet", ["busybox", "telnet", "example.com"]),
    # python -m network modules
    ("python -m telnetlib", ["PYTHON", "-m", "telnetlib", "example.com", "23"]),
    ("python -m poplib", ["PYTHON", "-m", "poplib", "example.com"]),
    ("python -m imaplib", ["PYTHON", "-m", "imaplib", "example.com"]),
    ("python -m smtplib", ["PYTHON", "-m", "smtplib"]),
    ("python -m ftplib", ["PYTHON", "-m", "ftplib", "example.com"]),
    ("python -m http.server", ["PYTHON", "-m", "http.server", "8000"]),
    ("python -m timeit", ["PYTHON", "-m", "timeit", "import urllib.request; urllib.request.urlopen('https://x')"]),
    # launchers that run a program they are given
    ("setpriv", ["setpriv", "--no-new-privs", *CURL]),
    ("prlimit", ["prlimit", "--nofile=1024", *CURL]),
    ("dbus-run-session", ["dbus-run-session", "--", *CURL]),
    ("valgrind", ["valgrind", "--tool=none", "-q", *CURL]),
    ("numactl", ["numactl", "--interleave=all", *CURL]),
    ("fakeroot", ["fakeroot", "--", *CURL]),
    ("xvfb-run", ["xvfb-run", "-a", *CURL]),
    ("capsh -- -c", ["capsh", "--", "-c", CURL_TEXT]),
    ("faketime", ["faketime", "2020-01-01 00:00:00", *CURL]),
    ("chrt", ["chrt", "-o", "0", *CURL]),
    ("ionice", ["ionice", "-c", "3", *CURL]),
    ("taskset", ["taskset", "0x1", *CURL]),
    ("stdbuf", ["stdbuf", "-oL", *CURL]),
    ("unshare", ["unshare", "--map-root-user", *CURL]),
    ("firejail", ["firejail", "--quiet", *CURL]),
    ("flock", ["flock", "lockfile", *CURL]),
    ("script -c", ["script", "-qc", CURL_TEXT, "/dev/null"]),
    ("watch", ["watch", "-n", "1", CURL_TEXT]),
    ("strace", ["strace", "-f", "-o", "trace.txt", *CURL]),
    ("ltrace", ["ltrace", "-f", *CURL]),
    ("gdb -ex", ["gdb", "-batch", "-ex", "run", "--args", *CURL]),
    ("time", ["time", *CURL]),
    ("xargs", ["xargs", *CURL]),
    ("parallel", ["parallel", *CURL, ":::", "a"]),
    ("nohup", ["nohup", *CURL]),
    ("setsid", ["setsid", "-w", *CURL]),
    ("chroot", ["chroot", "/", *CURL]),
    ("runuser", ["runuser", "-u", "nobody", "--", *CURL]),
    ("su -c", ["su", "nobody", "-c", CURL_TEXT]),
    ("doas", ["doas", *CURL]),
    ("ssh-agent", ["ssh-agent", *CURL]),
    ("an unknown launcher", ["./client", "--retries", "3", *CURL]),
    # destinations given to programs codeflux does not know
    ("unknown program, URL", ["psql", "postgresql://app@db.example.com/app", "-c", "select 1"]),
    ("unknown program, host:port", ["./client", "db.example.com:5432"]),
    ("repository script, URL", ["PYTHON", "client.py", "https://example.com/api"]),
]


def _runnable(argv: list[str]) -> list[str]:
    """argv with its program resolved to an absolute path, or run through ``sh -c`` when not installed."""
    program = "python3" if argv[0] == "PYTHON" else argv[0]
    if program.startswith("./"):
        return [program, *argv[1:]]
    found = shutil.which(program)
    if found is not None:
        return [found, *argv[1:]]
    return [shutil.which("sh") or "/bin/sh", "-c", shlex.join([program, *argv[1:]])]


@pytest.mark.parametrize("argv", [argv for _, argv in SIDE_DOORS], ids=[label for label, _ in SIDE_DOORS])
def test_a_network_denial_refuses_the_side_door_without_asking(
    driver: ToolDriver, db: Database, task: Task, argv: list[str]
) -> None:
    denied = driver.submit_tool_request(task.task_id, "run_command", {"argv": CURL}, idempotency_key="deny",
                                        source="test")
    driver.decide(denied.request_id, UserDecision.DENY, reason="no network for this task", deny=(NETWORK,))

    side_door = driver.submit_tool_request(task.task_id, "run_command", {"argv": _runnable(argv)},
                                           idempotency_key="side-door", source="test")

    assert side_door.outcome is DecisionOutcome.REFUSED_DENIED_CAPABILITY
    with pytest.raises(CapabilityDeniedError):
        driver.execute(side_door.request_id)
    assert db.read(lambda view: view.query_all("SELECT count(*) FROM tool_executions"))[0][0] == 0
