"""``run_command``: one program, argv only, exactly the binary that was approved, its group killed at the end.

- **Exactly the approved binary.** The coordinator resolved ``argv[0]`` and hashed it into the operation
  identity; the worker re-hashes that path right before exec and refuses a mismatch
  (``executable-mismatch``), then execs that path (``argv[0]`` is kept as written). The re-hash is
  skipped while the open file's (device, inode, size, mtime, ctime) still match a settled earlier hash
  (see :mod:`~codeflux.worker.tools.executables`); the file is still opened and ``fstat``-ed each time.
  Between that check and the exec the path is not held: swapping the file in that window is not
  detected (the hash-then-exec race, documented in ``docs/security.md``).
- **No shell** unless argv names one; the environment is the worker's allow-list plus the request's
  checked overrides; cwd is the worktree — or the directory the operation names, inside it or, as
  ``$TMPDIR/<path>``, under this worker's own TMPDIR (the pipeline's base-revision copies live there, never in
  the worktree) — an existing directory resolved without following a symbolic link and without ``..``;
  stdin is the request's bytes (or ``/dev/null``).
- **Bounded.** The descriptor's timeout; each output stream capped at ``max_output_bytes`` — its head
  streamed as it is released, its tail kept and released at the end after a note saying how many
  characters and lines were elided between them (truncation flagged) — decoded with replacement
  characters, pattern-redacted as a stream (a secret split across reads is caught).
- **Nothing outlives it.** The program leads its own process group, killed with ``SIGKILL`` when the
  command ends — on success, failure, timeout, cancel, or the RPC going away.

The exit status is the program's code, or ``-N`` when signal ``N`` ended it.
"""

from __future__ import annotations

import hmac
import os
import signal
import stat
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import CodefluxError, ToolFailedError
from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.domain.operations import task_temp_relative
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.environment import command_environment
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.pump import OutputCapture, PumpEnd, pump_process
from codeflux.worker.tools.results import ToolResult

__all__ = ["CommandOutput", "CommandPin", "CommandStarted", "run_command"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandPin:
    """What the coordinator pinned for this command: the executable and its sha256, overrides, stdin."""

    executable_path: str
    executable_sha256: str
    env_overrides: Mapping[str, str]
    stdin: bytes
    working_directory: str = "."


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandStarted:
    process_group_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandOutput:
    stream: str  # "stdout" or "stderr"
    text: str


def run_command(
    request: BoundToolRequest, context: ToolContext, pin: CommandPin
) -> Generator[CommandStarted | CommandOutput, None, ToolResult]:
    """Run the pinned program; yield its start and its output; return how it ended."""
    argv = request.argv()
    if not argv:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST, message="run_command needs an argv")
    _verify_executable(pin, context)
    cwd = _working_directory(pin, context)
    environment = command_environment(context.environment, pin.env_overrides)
    context.check_still_running()
    boxed, executable = context.confinement.command(argv, executable=pin.executable_path,
                                                    network=context.network_granted,
                                                    search_path=environment.get("PATH"), cwd=cwd)
    try:
        process = context.processes.spawn(boxed, executable=executable, cwd=cwd,
                                          env=context.confinement.environment(environment),
                                          stdin_piped=bool(pin.stdin))
    except FileNotFoundError:
        raise ToolFailedError(failure_kind=FailureKind.COMMAND_NOT_FOUND,
                              message="the program does not exist") from None
    except OSError as error:
        raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE,
                              message=f"the program could not be started ({type(error).__name__})") from None
    stdout = OutputCapture(limit=context.limits.max_output_bytes, redact=True, keep_tail=True)
    stderr = OutputCapture(limit=context.limits.max_output_bytes, redact=True, keep_tail=True)
    try:
        yield CommandStarted(process_group_id=process.pid)
        pumping = pump_process(process, stdin=pin.stdin, context=context, stdout=stdout, stderr=stderr)
        while True:
            try:
                stream, text = next(pumping)
            except StopIteration as stop:
                end: PumpEnd = stop.value
                break
            yield CommandOutput(stream=stream, text=text)
    finally:
        exit_code = context.processes.finish(process)
    return _result(end, exit_code, context=context, stdout=stdout, stderr=stderr)


def _result(end: PumpEnd, exit_code: int, *, context: ToolContext, stdout: OutputCapture,
            stderr: OutputCapture) -> ToolResult:
    if end is PumpEnd.TIMED_OUT:
        state, kind = ExecutionState.FAILED, FailureKind.TIMED_OUT
        message = f"ran past its {context.limits.timeout_ms / 1000:g}s limit; its process group was killed"
    elif end is PumpEnd.CANCELLED or (exit_code == -signal.SIGKILL and context.cancelled.is_set()):
        # Killed because of a cancel (or a shutdown) that raced the pump noticing it.
        state, kind = ExecutionState.CANCELLED, FailureKind.CANCELLED
        message = "cancelled; its process group was killed"
    elif exit_code == 0:
        state, kind, message = ExecutionState.SUCCEEDED, None, "exited with code 0"
    else:
        state, kind, message = ExecutionState.FAILED, FailureKind.NONZERO_EXIT, _describe_exit(exit_code)
    return ToolResult(state=state, failure_kind="" if kind is None else kind.value, message=message,
                      exit_code=exit_code, stdout_truncated=stdout.truncated, stderr_truncated=stderr.truncated)


def _describe_exit(exit_code: int) -> str:
    if exit_code >= 0:
        return f"exited with code {exit_code}"
    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        name = f"signal {-exit_code}"
    return f"killed by {name}"


def _working_directory(pin: CommandPin, context: ToolContext) -> Path:
    """The worktree, or the existing directory the operation names — inside the worktree, or under the
    worker's TMPDIR for ``$TMPDIR/<path>`` (no symlink on the way, no ``..``)."""
    if pin.working_directory in ("", "."):
        return context.worktree
    try:
        under_temp = task_temp_relative(pin.working_directory)
        if under_temp is None:
            path = resolve_worktree_path(context.worktree, pin.working_directory, must_exist=True)
        else:
            temp = context.environment.get("TMPDIR", "")
            if not os.path.isabs(temp):
                raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST,
                                      message="the working directory is refused: this worker has no TMPDIR")
            path = resolve_worktree_path(Path(temp), "/".join(under_temp), must_exist=True)
    except ToolFailedError:
        raise
    except CodefluxError as error:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST,
                              message=f"the working directory is refused: {error}") from None
    if not path.is_dir():
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST,
                              message="the working directory is not a directory")
    return path


def _verify_executable(pin: CommandPin, context: ToolContext) -> None:
    path = pin.executable_path
    if not path or not pin.executable_sha256:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST,
                              message="run_command needs the executable the coordinator pinned (path and sha256)")
    if not os.path.isabs(path) or "\x00" in path:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_REQUEST, message="the pinned executable is not absolute")
    try:
        # O_NONBLOCK: a program swapped for a FIFO since it was pinned must not block the worker here.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE, message="the program is not a file")
            # The facts of the descriptor just opened; a file object is only built to hash it.
            digest = context.executables.cached(path, info)
            if digest is None:
                with open(descriptor, "rb", closefd=False) as handle:
                    digest = context.executables.sha256_of(path, handle, info)
        finally:
            os.close(descriptor)
    except FileNotFoundError:
        raise ToolFailedError(failure_kind=FailureKind.COMMAND_NOT_FOUND,
                              message="the program does not exist") from None
    except OSError as error:
        raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE,
                              message=f"the program cannot be read ({type(error).__name__})") from None
    if not hmac.compare_digest(digest, pin.executable_sha256.lower()):
        raise ToolFailedError(failure_kind=FailureKind.EXECUTABLE_MISMATCH,
                              message="the program changed since it was approved (its sha256 differs); refused")
    if not os.access(path, os.X_OK):
        raise ToolFailedError(failure_kind=FailureKind.NOT_EXECUTABLE, message="the program is not executable")
