"""Worker isolation, against real worker processes on a real repository.

Credentials in the coordinator's environment never reach a command; nothing a command starts outlives
it; secrets a command prints are redacted in every chunk and in the result; ``.git`` and symlink
escapes are refused with nothing created outside; repository configuration cannot make git run a program.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from codeflux.api.v1 import worker_pb2
from codeflux.domain.errors import ToolRequestInvalidError
from codeflux.domain.execution import ExecutionLimits, ExecutionState, FailureKind
from codeflux.worker.client.handle import WorkerHandle, WorkerOutcome
from codeflux.worker.client.launch import LaunchedWorker
from codeflux.worker.client.wire import encode_execution
from codeflux.worker.confinement import unconfined
from codeflux.worker.environment import ScreenedEnvironment
from codeflux.worker.processes import ProcessGroups
from codeflux.worker.tools.command import CommandPin
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.dispatch import execute_tool
from tests.fixtures.workers import (
    execute_on_one_stream,
    execution_of,
    live_processes_in_group,
    raw_worker,
    running_worker,
)
from tests.fixtures.worktrees import TaskWorktree, git, make_task_worktree

pytestmark = pytest.mark.security

CANARIES = {
    "CANARY_API_KEY": "canary-value-one-5f1c",
    "OPENAI_API_KEY": "canary-value-two-9d2e",
    "ANTHROPIC_API_KEY": "canary-value-three-7a3b",
    "GITHUB_TOKEN": "canary-value-four-1e8f",
    "AWS_SECRET_ACCESS_KEY": "canary-value-five-0c4d",
    "SSH_AUTH_SOCK": "/tmp/canary-agent.sock",
    "HTTPS_PROXY": "http://canary-proxy.invalid:3128",
    "CODEFLUX_HOME": "/tmp/canary-codeflux-home",
    "DB_PASSWORD": "canary-value-six-33aa",
}

ANTHROPIC_KEY = "sk-ant-api03-" + "Qz7xK2pLm9Vb4Nc8" * 3
AWS_KEY_ID = "AKIA" + "QWERTYUIOPASDFGH"
GITHUB_PAT = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


@pytest.fixture
def task(tmp_path: Path) -> TaskWorktree:
    return make_task_worktree(tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "precious.txt").write_text("outside content\n")
    return directory


@pytest.fixture
def worker(task: TaskWorktree, tmp_path: Path) -> Iterator[WorkerHandle]:
    with running_worker(task.worktree, tmp_path / "state") as handle:
        yield handle


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            for path in sorted(directory.rglob("*"))}


def run(worker: WorkerHandle, tool: str, arguments: Mapping[str, object], **options: object
        ) -> tuple[WorkerOutcome, list[str]]:
    chunks: list[str] = []
    outcome = worker.execute(execution_of(tool, arguments, **options),  # type: ignore[arg-type]
                             on_output=lambda _stream, text: chunks.append(text))
    return outcome, chunks


# -------------------------------------------------------------------------------------- environment


def test_a_canary_secret_in_the_coordinator_environment_is_invisible_to_commands(
    task: TaskWorktree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    with running_worker(task.worktree, tmp_path / "state") as worker:
        for argv in (["env"], ["printenv"], ["sh", "-c", "cat /proc/self/environ | tr '\\0' '\\n'"]):
            outcome, chunks = run(worker, "run_command", {"argv": argv})
            assert outcome.state is ExecutionState.SUCCEEDED
            seen = outcome.stdout + "".join(chunks)
            assert "PATH=" in seen
            for name, value in CANARIES.items():
                assert name not in seen and value not in seen, name
        worker_environment = Path(f"/proc/{worker.pid}/environ").read_bytes().decode()
        for name, value in CANARIES.items():
            assert name not in worker_environment and value not in worker_environment


def test_the_lease_token_is_in_neither_the_worker_argv_nor_its_environment(raw: LaunchedWorker) -> None:
    token = raw.lease_token.encode()
    assert token not in Path(f"/proc/{raw.process.pid}/cmdline").read_bytes()
    assert token not in Path(f"/proc/{raw.process.pid}/environ").read_bytes()


@pytest.fixture
def raw(task: TaskWorktree, tmp_path: Path) -> Iterator[LaunchedWorker]:
    with raw_worker(task.worktree, tmp_path / "raw") as launched:
        yield launched


# ------------------------------------------------------------------------------------ process groups


def _is_alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return text[text.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _wait_dead(pid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _live_processes_with_argument(argument: str) -> list[int]:
    """Host pids of live processes with ``argument`` in their argv (pids inside a box are namespaced, so a
    program's own ``$!`` names nothing on the host)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argument.encode() in argv and _is_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _wait_none_with_argument(argument: str, timeout_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (alive := _live_processes_with_argument(argument)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def _unique_duration() -> str:
    return f"300.{time.monotonic_ns() % 10**9:09d}"  # sleep accepts a fraction: a marker in its argv


@pytest.mark.parametrize("script", [
    "sleep {duration} & echo $!",
    "nohup sleep {duration} >/dev/null 2>&1 & echo $!",
    "(sleep {duration} & echo $!) ; true",
])
def test_a_backgrounded_sleep_started_by_a_successful_command_is_dead_afterwards(worker: WorkerHandle,
                                                                                 script: str) -> None:
    duration = _unique_duration()
    outcome, _ = run(worker, "run_command", {"argv": ["sh", "-c", script.format(duration=duration)]})
    assert (outcome.state, outcome.exit_code) == (ExecutionState.SUCCEEDED, 0)
    assert int(outcome.stdout.split()[0]) > 0  # the sleep really started in the background
    assert _wait_none_with_argument(duration) == [], "the background sleep survived a successful command"
    assert live_processes_in_group(outcome.process_group_id) == []


def test_a_sleep_that_left_the_group_with_setsid_is_dead_afterwards(worker: WorkerHandle) -> None:
    # The pause lets setsid take effect before the command ends, so the sleep really has left the group.
    duration = _unique_duration()
    script = f"setsid sleep {duration} >/dev/null 2>&1 & echo $!; sleep 0.3"
    outcome, _ = run(worker, "run_command", {"argv": ["sh", "-c", script]})
    assert outcome.state is ExecutionState.SUCCEEDED
    assert int(outcome.stdout.split()[0]) > 0
    assert _wait_none_with_argument(duration) == [], "the setsid'd sleep survived"


def test_the_unique_sleep_marker_finds_a_live_sleep() -> None:
    """The probe above is live: it sees a sleep that is running."""
    duration = _unique_duration()
    process = subprocess.Popen(["sleep", duration])
    try:
        deadline = time.monotonic() + 5
        while not _live_processes_with_argument(duration) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _live_processes_with_argument(duration) == [process.pid]
    finally:
        process.kill()
        process.wait()


# ---------------------------------------------------------------------------------------- redaction

PRINTERS = {
    "whole": ["sh", "-c", f"echo 'key: {ANTHROPIC_KEY}'; echo {AWS_KEY_ID} >&2; echo token {GITHUB_PAT}"],
    "split across chunks": ["sh", "-c", f"printf '%s' '{ANTHROPIC_KEY[:20]}'; sleep 0.6; "
                                        f"printf '%s\\n' '{ANTHROPIC_KEY[20:]}'; printf '{AWS_KEY_ID[:9]}' >&2; "
                                        f"sleep 0.4; printf '{AWS_KEY_ID[9:]}\\n' >&2"],
    "inside JSON": ["sh", "-c", f"printf '{{\"api_key\": \"{ANTHROPIC_KEY}\", \"id\": \"{AWS_KEY_ID}\"}}\\n'"],
    "after 100 lines": ["sh", "-c", f"seq 1 100; echo {ANTHROPIC_KEY}; seq 1 100 >&2; echo {GITHUB_PAT} >&2"],
}


@pytest.mark.parametrize("printer", list(PRINTERS))
def test_a_secret_printed_by_a_command_is_redacted_in_every_chunk_and_the_result(worker: WorkerHandle,
                                                                                 printer: str) -> None:
    outcome, chunks = run(worker, "run_command", {"argv": PRINTERS[printer]})
    assert outcome.state is ExecutionState.SUCCEEDED
    everything = "".join(chunks) + outcome.stdout + outcome.stderr + outcome.content + outcome.message
    for secret in (ANTHROPIC_KEY, AWS_KEY_ID, GITHUB_PAT, ANTHROPIC_KEY[:20], ANTHROPIC_KEY[20:]):
        assert secret not in everything
    assert "[REDACTED]" in outcome.stdout


@pytest.mark.parametrize("printer", list(PRINTERS))
def test_the_worker_itself_redacts_before_anything_leaves_it(raw: LaunchedWorker, printer: str) -> None:
    execution = execution_of("run_command", {"argv": PRINTERS[printer]})
    events = execute_on_one_stream(raw, encode_execution(execution, lease_token=raw.lease_token), timeout_s=60)
    assert events[-1].result.state == worker_pb2.RESULT_STATE_SUCCEEDED
    wire = "".join(event.output.text for event in events if event.WhichOneof("event") == "output")
    assert "[REDACTED]" in wire
    for secret in (ANTHROPIC_KEY, AWS_KEY_ID, GITHUB_PAT, ANTHROPIC_KEY[20:]):
        assert secret not in wire and secret not in str(events[-1].result)


def test_a_secret_in_a_file_is_redacted_in_what_reading_tools_return(worker: WorkerHandle,
                                                                     task: TaskWorktree) -> None:
    (task.worktree / "config.env").write_text(f"API_KEY={ANTHROPIC_KEY}\n")
    for tool, arguments in (("read_file", {"path": "config.env"}), ("grep", {"pattern": "API_KEY"}),
                            ("inspect_diff", {})):
        outcome, _ = run(worker, tool, arguments)
        assert outcome.state is ExecutionState.SUCCEEDED
        assert ANTHROPIC_KEY not in outcome.content and "[REDACTED]" in outcome.content


# ------------------------------------------------------------------------------------- .git and links


@pytest.mark.parametrize("path", [".git/hooks/pre-commit", ".git/config", "sub/.GIT/hooks/x", ".Git/HEAD"])
def test_writing_into_git_metadata_is_refused(worker: WorkerHandle, task: TaskWorktree, path: str) -> None:
    before = snapshot(task.repository / ".git" / "hooks")
    outcome, _ = run(worker, "write_file", {"path": path, "content": "#!/bin/sh\necho pwned\n"})
    assert (outcome.state, outcome.failure_kind) == (ExecutionState.FAILED, FailureKind.PATH_REFUSED)
    patch = f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+echo pwned\n"
    outcome, _ = run(worker, "apply_patch", {"patch": patch})
    assert (outcome.state, outcome.failure_kind) == (ExecutionState.FAILED, FailureKind.PATCH_REFUSED)
    assert snapshot(task.repository / ".git" / "hooks") == before
    assert git(task.worktree, "status", "--porcelain") == ""


def test_repository_configuration_cannot_make_git_tools_run_a_program(worker: WorkerHandle, task: TaskWorktree,
                                                                      tmp_path: Path) -> None:
    marker = tmp_path / "program-ran"
    program = f"sh -c 'touch {marker}'"
    git(task.repository, "config", "core.fsmonitor", program)
    git(task.repository, "config", "diff.evil.textconv", program)
    git(task.repository, "config", "diff.external", program)
    git(task.repository, "config", "core.pager", program)
    (task.worktree / ".gitattributes").write_text("*.py diff=evil\n")
    (task.worktree / "src/app.py").write_text("changed\n")
    hook = task.repository / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    for tool in ("git_status", "inspect_diff", "git_log"):
        outcome, _ = run(worker, tool, {})
        assert outcome.state is ExecutionState.SUCCEEDED, (tool, outcome.message)
    patch = "--- a/docs/notes.txt\n+++ b/docs/notes.txt\n@@ -1,2 +1,2 @@\n first line\n-second line\n+patched\n"
    assert run(worker, "apply_patch", {"patch": patch})[0].state is ExecutionState.SUCCEEDED
    assert not marker.exists()


# The empty path never gets this far: the tool binder refuses it (see the wire test in
# tests/integration/test_worker_process.py and tests/unit/worker/test_paths.py).
TRAVERSALS = ["../x", "../../x", "a/../../x", "/etc/passwd", "..\\x", "C:/x", "C:\\x", " ", "   ", "~/x",
              "..", "./../x", " a", "a "]


@pytest.mark.parametrize("path", TRAVERSALS, ids=repr)
def test_the_traversal_list_is_refused_by_every_file_tool_with_nothing_created_outside(
    worker: WorkerHandle, task: TaskWorktree, tmp_path: Path, path: str
) -> None:
    before = snapshot(tmp_path)
    for tool, arguments in (("read_file", {"path": path}), ("write_file", {"path": path, "content": "x"}),
                            ("edit_file", {"path": path, "old_text": "a", "new_text": "b"}),
                            ("delete_file", {"path": path}), ("list_directory", {"path": path})):
        outcome, _ = run(worker, tool, arguments)
        assert outcome.state is ExecutionState.FAILED
        assert outcome.failure_kind in {FailureKind.PATH_REFUSED, FailureKind.INVALID_REQUEST}, (tool, outcome)
    after = snapshot(tmp_path)
    created = sorted(set(after) - set(before) - {name for name in after if name.startswith("state")})
    assert created == []


def test_spellings_of_a_worktree_path_name_that_path_and_never_leave_the_worktree(
    worker: WorkerHandle, task: TaskWorktree
) -> None:
    """`a//b`, `./a/./b` and `.` are not traversals: binding makes them canonical (`a/b`; `.` is the root, which
    an optional path means when omitted and a required one refuses as empty). The resolver still takes only
    canonical paths (tests/unit/worker/test_paths.py): nothing non-canonical reaches it."""
    for spelled in ("a//b", "./a/./b", "a/b/"):
        outcome, _ = run(worker, "write_file", {"path": spelled, "content": spelled})
        assert outcome.state is ExecutionState.SUCCEEDED, (spelled, outcome.message)
        assert (task.worktree / "a" / "b").read_text() == spelled
        (task.worktree / "a" / "b").unlink()
    listed, _ = run(worker, "list_directory", {"path": "."})
    assert listed.state is ExecutionState.SUCCEEDED and "src/" in listed.content
    for tool, arguments in (("read_file", {"path": "."}), ("write_file", {"path": "./", "content": "x"}),
                            ("delete_file", {"path": "."})):
        with pytest.raises(ToolRequestInvalidError, match="must not be empty"):  # refused before it is sent
            run(worker, tool, arguments)


def test_planted_symlinks_are_refused_by_every_file_tool_with_nothing_created_outside(
    worker: WorkerHandle, task: TaskWorktree, outside: Path
) -> None:
    (task.worktree / "escape").symlink_to(outside)
    (task.worktree / "inner").symlink_to(task.worktree / "src")
    (task.worktree / "precious.txt").symlink_to(outside / "precious.txt")
    (task.worktree / "etc").symlink_to("/etc")
    before = snapshot(outside)
    attempts: list[tuple[str, dict[str, object]]] = [
        ("write_file", {"path": "escape/planted.txt", "content": "x"}),
        ("write_file", {"path": "inner/planted.py", "content": "x"}),
        ("write_file", {"path": "precious.txt", "content": "overwritten",
                        "expected_sha256": "0" * 64}),
        ("edit_file", {"path": "precious.txt", "old_text": "outside", "new_text": "inside"}),
        ("delete_file", {"path": "precious.txt"}),
        ("delete_file", {"path": "escape/precious.txt"}),
        ("read_file", {"path": "precious.txt"}),
        ("read_file", {"path": "etc/passwd"}),
        ("list_directory", {"path": "escape"}),
        ("grep", {"pattern": "outside", "path": "escape"}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/escape/planted.txt\n@@ -0,0 +1 @@\n+x\n"}),
    ]
    for tool, arguments in attempts:
        outcome, _ = run(worker, tool, arguments)
        assert outcome.state is ExecutionState.FAILED, (tool, outcome.message)
        assert outcome.failure_kind in {FailureKind.PATH_REFUSED, FailureKind.PATCH_REFUSED}, (tool, outcome)
    grep, _ = run(worker, "grep", {"pattern": "outside content"})
    assert grep.state is ExecutionState.SUCCEEDED and grep.content == ""
    assert snapshot(outside) == before
    assert (task.worktree / "precious.txt").is_symlink()


def test_the_worker_screens_its_own_environment_once_and_every_override_each_time(task: TaskWorktree) -> None:
    """The second wall: even a credential that got into the worker's own environment never reaches a
    command, although the worker screens that environment once (when it starts), not per command; the
    per-request overrides are still checked on every request."""
    screened = ScreenedEnvironment({"PATH": "/usr/bin:/bin", **CANARIES})
    assert set(screened) == {"PATH"}
    context = ToolContext(worktree=Path(os.path.realpath(task.worktree)), limits=ExecutionLimits(timeout_ms=10_000,
                          max_output_bytes=65_536), deadline=time.monotonic() + 10, cancelled=threading.Event(),
                          environment=screened, processes=ProcessGroups(),
                          confinement=unconfined(Path(os.path.realpath(task.worktree))))
    program = os.path.realpath("/usr/bin/env")
    digest = hashlib.sha256(Path(program).read_bytes()).hexdigest()

    def run_env(overrides: Mapping[str, str]) -> tuple[str, str, str]:
        pin = CommandPin(executable_path=program, executable_sha256=digest, env_overrides=overrides, stdin=b"")
        events = execute_tool(tool="run_command", raw_arguments={"argv": ["env"]}, context=context, pin=pin)
        printed: list[str] = []
        while True:
            try:
                event = next(events)
            except StopIteration as stop:
                return stop.value.state.value, stop.value.failure_kind, "".join(printed)
            printed.append(getattr(event, "text", ""))

    state, _, printed = run_env({"CI": "1"})
    assert state == "succeeded" and "CI=1" in printed and "PATH=" in printed
    for name, value in CANARIES.items():
        assert name not in printed and value not in printed, name
    for name in ("GITHUB_TOKEN", "AWS_PROFILE", "HOME"):
        state, kind, printed = run_env({name: "x"})
        assert (state, kind, printed) == ("failed", "unsafe-argument", ""), name
