"""Starting a worker process and waiting for it to say it is ready; the low-level half of ``workers``.

The worker runs as ``sys.executable -I -B -m codeflux.worker`` (:mod:`codeflux.worker.interpreter`) — isolated
mode, so neither ``PYTHON*`` variables nor the worktree (its cwd) can put modules on its path — with cwd = the
worktree, a new session (so its whole process group can be killed), the allow-listed environment with a per-task
``HOME`` and ``TMPDIR``, and stderr appended to ``<state_dir>/worker.log`` (0600). The startup JSON, token
included, is written to its stdin, which stays open: the worker stops when it reads end-of-file, so a
coordinator that dies takes its workers with it.

From a frozen single-file build the worker is ``codeflux __worker__ codeflux.worker``, and its environment also
holds the PyInstaller variables that make it run from the directory the coordinator's binary already unpacked
(:func:`~codeflux.worker.interpreter.frozen_runtime_environment`): the archive is never unpacked again per worker.
The worker keeps those variables from every program it starts (:meth:`Confinement.environment`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.errors import WorkerStartError
from codeflux.domain.ids import TaskId, WorkerLeaseId
from codeflux.redact import redact
from codeflux.worker.environment import build_worker_environment
from codeflux.worker.interpreter import frozen_runtime_environment, isolated_python_argv
from codeflux.worker.processes import kill_process_group
from codeflux.worker.startup import MAX_SOCKET_PATH_BYTES, STARTUP_PROTOCOL

__all__ = ["LaunchedWorker", "has_exited", "launch_worker", "reap_worker"]

_READY_LINE_LIMIT: Final = 4096
_SHORT_TEMP_ROOT: Final = "/tmp"  # noqa: S108 (a private mkdtemp directory is made inside it)


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchedWorker:
    """A worker process that announced readiness on its socket."""

    process: subprocess.Popen[bytes]
    socket_directory: Path
    socket_path: Path
    lease_id: WorkerLeaseId
    lease_token: str
    log_path: Path


def launch_worker(
    *,
    task_id: TaskId,
    worktree: Path,
    state_dir: Path,
    lease_interval_s: float,
    startup_timeout_s: float,
    base_commit: str | None,
    base_environment: dict[str, str],
    box: dict[str, object],
) -> LaunchedWorker:
    """Spawn a worker for ``task_id`` in ``worktree`` and wait until it serves; :class:`WorkerStartError`.

    ``box`` is the confinement part of its startup configuration
    (:func:`~codeflux.worker.client.confinement.box_request`).
    """
    if not worktree.is_absolute() or not worktree.is_dir():
        raise WorkerStartError(reason="the worktree must be an existing absolute directory")
    home, tmpdir = _per_task_directories(state_dir)
    socket_directory = Path(tempfile.mkdtemp(prefix="cfw-", dir=_socket_root()))
    socket_path = socket_directory / "w.sock"
    lease_id = WorkerLeaseId.from_entropy(os.urandom(16))
    token = secrets.token_urlsafe(32)
    log_path = state_dir / "worker.log"
    config = {
        "protocol": STARTUP_PROTOCOL, "socket_path": str(socket_path), "lease_id": str(lease_id),
        "lease_token": token, "worktree": str(worktree), "task_id": str(task_id),
        "lease_interval_ms": int(lease_interval_s * 1000), "base_commit": base_commit, "confinement": box,
    }  # fmt: skip
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        process = subprocess.Popen(
            isolated_python_argv("codeflux.worker"),
            cwd=worktree,
            env={**build_worker_environment(base=base_environment, home=home, tmpdir=tmpdir),
                 **frozen_runtime_environment()},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        shutil.rmtree(socket_directory, ignore_errors=True)
        raise WorkerStartError(reason=f"could not spawn the worker ({type(error).__name__})") from None
    finally:
        os.close(log)
    worker = LaunchedWorker(process=process, socket_directory=socket_directory, socket_path=socket_path,
                            lease_id=lease_id, lease_token=token, log_path=log_path)
    try:
        _send_config(process, config)
        _await_ready(process, timeout_s=startup_timeout_s, log_path=log_path)
    except WorkerStartError:
        reap_worker(worker)
        raise
    return worker


def task_temp_directory(state_dir: Path) -> Path:
    """The task's ``TMPDIR`` on the host for the worker whose ``state_dir`` it is (what the box makes writable)."""
    return state_dir / "tmp"


def _per_task_directories(state_dir: Path) -> tuple[Path, Path]:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    home, tmpdir = state_dir / "home", task_temp_directory(state_dir)
    for directory in (home, tmpdir):
        directory.mkdir(mode=0o700, exist_ok=True)
    return home, tmpdir


def _socket_root() -> str:
    # AF_UNIX paths hold at most 104-108 bytes; a deep TMPDIR would not leave room for "cfw-XXXXXXXX/w.sock".
    root = tempfile.gettempdir()
    return root if len(root.encode()) <= MAX_SOCKET_PATH_BYTES - 24 else _SHORT_TEMP_ROOT


def _send_config(process: subprocess.Popen[bytes], config: dict[str, object]) -> None:
    if process.stdin is None:
        raise WorkerStartError(reason="the worker has no stdin")
    try:
        process.stdin.write(json.dumps(config).encode("utf-8") + b"\n")
        process.stdin.flush()
    except OSError:
        raise WorkerStartError(reason="the worker exited before reading its configuration") from None


def _await_ready(process: subprocess.Popen[bytes], *, timeout_s: float, log_path: Path) -> None:
    if process.stdout is None:
        raise WorkerStartError(reason="the worker has no stdout")
    deadline = time.monotonic() + timeout_s
    line = b""
    descriptor = process.stdout.fileno()
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerStartError(reason=f"no readiness within {timeout_s:g}s{_last_log_line(log_path)}")
        readable, _, _ = select.select([descriptor], [], [], min(remaining, 0.5))
        if not readable:
            continue
        chunk = os.read(descriptor, _READY_LINE_LIMIT)
        if not chunk:
            raise WorkerStartError(reason=f"the worker exited during startup{_last_log_line(log_path)}")
        line += chunk
        if len(line) > _READY_LINE_LIMIT:
            raise WorkerStartError(reason="the worker's readiness line is too long")
    try:
        ready = json.loads(line)
    except ValueError:
        raise WorkerStartError(reason="the worker's readiness line is not JSON") from None
    if not isinstance(ready, dict) or ready.get("ready") is not True or ready.get("pid") != process.pid:
        raise WorkerStartError(reason="the worker announced something other than readiness")


def _last_log_line(log_path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return f": {redact(lines[-1])[:300]}"
    return ""


def has_exited(process: subprocess.Popen[bytes]) -> bool:
    """True once the worker has exited; it is left unreaped so its group id cannot be reused yet."""
    if process.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def reap_worker(worker: LaunchedWorker) -> None:
    """Kill the worker's whole process group, reap it, close its pipes and remove its socket directory."""
    process = worker.process
    kill_process_group(process.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    shutil.rmtree(worker.socket_directory, ignore_errors=True)
