"""From a decoded wire request to a tool result: bind, route, and turn every expected failure into a value.

:func:`execute_tool` re-binds the request against the catalog (the worker trusts the coordinator's
authorization, not its bytes), checks the worktree is still there, and runs the tool. Every *expected*
failure — a request that does not fit its descriptor, a NUL byte, a refused path, a tool's own stated
failure, a file-system error — comes back as a FAILED (or CANCELLED) :class:`ToolResult` with a stable
``failure_kind``; nothing is half-executed (writes are atomic, patches all-or-nothing, commands either
start or do not). Anything else is a bug and is left to the RPC edge.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Generator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Final

from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import (
    PathNotFoundError,
    PathRefusedError,
    ToolFailedError,
    ToolRequestInvalidError,
    UnsafeArgumentError,
)
from codeflux.domain.execution import ExecutionState, FailureKind
from codeflux.domain.tools import BoundToolRequest, ToolName, bind_tool_request, canonical_tool_path
from codeflux.worker.paths import check_worktree_present
from codeflux.worker.tools.command import CommandOutput, CommandPin, CommandStarted, run_command
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.git import git_log, git_status, inspect_diff
from codeflux.worker.tools.patching import apply_patch
from codeflux.worker.tools.reading import list_directory, read_file
from codeflux.worker.tools.results import ToolResult, failed_result
from codeflux.worker.tools.search import glob_files, grep_files
from codeflux.worker.tools.writing import delete_file, edit_file, write_file

__all__ = ["ToolEvent", "execute_tool"]

ToolEvent = CommandStarted | CommandOutput
_ToolFunction = Callable[[BoundToolRequest, ToolContext], ToolResult]
_PATH_SHOWN: Final = 200

_PLAIN_TOOLS: Final[Mapping[ToolName, _ToolFunction]] = MappingProxyType({
    ToolName.READ_FILE: read_file,
    ToolName.LIST_DIRECTORY: list_directory,
    ToolName.GLOB: glob_files,
    ToolName.GREP: grep_files,
    ToolName.WRITE_FILE: write_file,
    ToolName.EDIT_FILE: edit_file,
    ToolName.APPLY_PATCH: apply_patch,
    ToolName.DELETE_FILE: delete_file,
    ToolName.INSPECT_DIFF: inspect_diff,
    ToolName.GIT_STATUS: git_status,
    ToolName.GIT_LOG: git_log,
})  # fmt: skip


def execute_tool(
    *, tool: str, raw_arguments: Mapping[str, object], context: ToolContext, pin: CommandPin
) -> Generator[ToolEvent, None, ToolResult]:
    """Run one tool request; yield a command's start and output; return the result (never raises for
    expected failures). A failed result of a tool given a ``path`` names that path in its message, so
    two failures on different files never read alike (to the model, or to the stall fingerprint)."""
    result = yield from _execute(tool=tool, raw_arguments=raw_arguments, context=context, pin=pin)
    return _naming_path(raw_arguments.get("path"), result)


def _naming_path(path: object, result: ToolResult) -> ToolResult:
    """``result`` with ``path`` (as bound: canonical, escaped for display, at most 200 characters) before its
    message when it failed and its message does not name the path already."""
    if result.state is ExecutionState.SUCCEEDED or not isinstance(path, str) or not path:
        return result
    named = escape_for_display(canonical_tool_path(path))
    if not named or named in result.message:
        return result
    shown = named if len(named) <= _PATH_SHOWN else named[: _PATH_SHOWN - 1] + "…"
    return replace(result, message=f"{shown}: {result.message}")


def _execute(
    *, tool: str, raw_arguments: Mapping[str, object], context: ToolContext, pin: CommandPin
) -> Generator[ToolEvent, None, ToolResult]:
    try:
        request = bind_tool_request(tool, raw_arguments)
        try:
            check_worktree_present(context.worktree)
        except PathRefusedError:  # PathNotFoundError included
            return failed_result(FailureKind.WORKTREE_MISSING, "the task worktree no longer exists")
        context.check_still_running()
        if request.tool is ToolName.RUN_COMMAND:
            return (yield from run_command(request, context, pin))
        if pin.executable_path or pin.executable_sha256:
            return failed_result(FailureKind.INVALID_REQUEST, f"{request.tool} runs no program; no executable pin")
        return _PLAIN_TOOLS[request.tool](request, context)
    except ToolRequestInvalidError as error:
        return failed_result(FailureKind.INVALID_REQUEST, str(error))
    except UnsafeArgumentError as error:
        return failed_result(FailureKind.UNSAFE_ARGUMENT, str(error))
    except PathNotFoundError as error:
        return failed_result(FailureKind.NOT_FOUND, str(error))
    except PathRefusedError as error:
        return failed_result(FailureKind.PATH_REFUSED, str(error))
    except ToolFailedError as error:
        return failed_result(error.failure_kind, error.message)
    except OSError as error:
        name = errno.errorcode.get(error.errno or 0, type(error).__name__)
        return failed_result(FailureKind.IO_ERROR, f"the file system refused ({name})")
