"""The outcome vocabulary of one tool execution in a worker, and the limits it runs under.

An execution ends in exactly one :class:`ExecutionState`. ``outcome-unknown`` means the coordinator
lost sight of the worker while the request was in flight (the worker died, its lease lapsed, it stopped
answering): the effect may or may not have happened, so it is never retried automatically; a person
records what happened. Every state other than ``succeeded`` carries a :class:`FailureKind`, a stable
kebab-case reason that code may branch on (messages are for people and may change).

:class:`ExecutionLimits` come from the tool descriptor, never from the model's request.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Self

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.tools import KIB, MIB, ToolDescriptor

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "ExecutionLimits",
    "ExecutionState",
    "FailureKind",
    "ToolExecutionState",
]

DEFAULT_MAX_FILE_BYTES: Final = 512 * KIB
"""The largest file a file tool reads whole, writes or edits."""

_MAX_TIMEOUT_MS: Final = 30 * 60 * 1000
_MAX_OUTPUT_BYTES: Final = 64 * MIB
_MAX_FILE_BYTES: Final = 64 * MIB


class ExecutionState(StrEnum):
    """How one execution ended. Stored as the kebab-case value."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    OUTCOME_UNKNOWN = "outcome-unknown"

    def is_known(self) -> bool:
        """True unless the effect may or may not have happened (``outcome-unknown``)."""
        return self is not ExecutionState.OUTCOME_UNKNOWN


class ToolExecutionState(StrEnum):
    """Where one recorded execution stands: not yet started, with the worker, or how it ended.

    Stored as ``tool_executions.state``; the end states are :class:`ExecutionState`'s values."""

    INTENDED = "intended"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    OUTCOME_UNKNOWN = "outcome-unknown"

    def is_finished(self) -> bool:
        """True once the execution has ended (any state but ``intended`` and ``running``)."""
        return self not in (ToolExecutionState.INTENDED, ToolExecutionState.RUNNING)


class FailureKind(StrEnum):
    """Why an execution did not succeed; stable values code may branch on."""

    # The request itself
    INVALID_REQUEST = "invalid-request"  # unknown tool, wrong argument names or types, bad ids, no pin
    UNSAFE_ARGUMENT = "unsafe-argument"  # a NUL byte or non-Unicode text
    WRONG_TASK = "wrong-task"  # the request names another task than the worker serves
    DUPLICATE_REQUEST = "duplicate-request"  # the same request id is already in flight
    # Paths and files
    PATH_REFUSED = "path-refused"  # absolute, '..', '.git', symlink, drive, backslash, over-long…
    NOT_FOUND = "not-found"
    ALREADY_EXISTS = "already-exists"
    WRONG_FILE_TYPE = "wrong-file-type"  # a directory where a file was expected, or the reverse
    CONTENT_MISMATCH = "content-mismatch"  # the file's sha256 is not the expected one
    TOO_LARGE = "too-large"
    NOT_TEXT = "not-text"  # binary or undecodable content where text is needed
    NO_MATCH = "no-match"
    AMBIGUOUS_MATCH = "ambiguous-match"
    INVALID_PATTERN = "invalid-pattern"
    PATCH_REFUSED = "patch-refused"  # touches a refused path, a symlink or a submodule
    PATCH_DOES_NOT_APPLY = "patch-does-not-apply"
    GIT_FAILED = "git-failed"
    WORKTREE_MISSING = "worktree-missing"
    IO_ERROR = "io-error"
    # Programs
    EXECUTABLE_MISMATCH = "executable-mismatch"  # the program's sha256 is not the pinned one
    COMMAND_NOT_FOUND = "command-not-found"
    NOT_EXECUTABLE = "not-executable"
    NONZERO_EXIT = "nonzero-exit"  # exited with a non-zero code or was killed by a signal
    TIMED_OUT = "timed-out"
    CANCELLED = "cancelled"
    # The worker
    WORKER_UNAVAILABLE = "worker-unavailable"  # not running before the request was sent: nothing ran
    WORKER_LOST = "worker-lost"  # died or lost its lease mid-request: outcome unknown
    WORKER_UNRESPONSIVE = "worker-unresponsive"  # no result by the deadline; the worker was killed
    INTERNAL_ERROR = "internal-error"
    # The coordinator
    INTERRUPTED = "interrupted"  # the coordinator stopped before a result came; set at startup, never by a worker


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionLimits:
    """What the worker enforces for one execution: wall-clock timeout, output cap, file size cap.

    ``max_output_bytes`` caps each output stream of a command (and the content of a result);
    ``max_file_bytes`` caps what file tools read whole, write or edit.
    """

    timeout_ms: int
    max_output_bytes: int
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    def __post_init__(self) -> None:
        if not 1 <= self.timeout_ms <= _MAX_TIMEOUT_MS:
            raise InvalidValueError(kind="execution limits", reason=f"timeout_ms must be 1..{_MAX_TIMEOUT_MS}")
        if not 1 <= self.max_output_bytes <= _MAX_OUTPUT_BYTES:
            raise InvalidValueError(kind="execution limits", reason="max_output_bytes is out of range")
        if not 1 <= self.max_file_bytes <= _MAX_FILE_BYTES:
            raise InvalidValueError(kind="execution limits", reason="max_file_bytes is out of range")

    @classmethod
    def for_tool(cls, descriptor: ToolDescriptor) -> Self:
        """The limits a tool's descriptor declares (the only place limits may come from)."""
        return cls(
            timeout_ms=descriptor.limits.timeout_seconds * 1000,
            max_output_bytes=descriptor.limits.output_cap_bytes,
        )
