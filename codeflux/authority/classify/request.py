"""The entry point: one bound tool request to its :class:`Classification`.

``run_command`` is read as an argv against the program table; every other tool is a file tool, read by
its path arguments.
"""

from __future__ import annotations

from typing import assert_never

from codeflux.authority.classify.classification import Classification, WorktreeFacts
from codeflux.authority.classify.commands import classify_argv
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.paths import classify_file_tool
from codeflux.authority.classify.programs import PROGRAMS
from codeflux.domain.capabilities import Capability
from codeflux.domain.tools import BoundToolRequest, ToolName

_C = Capability


def classify_tool_request(request: BoundToolRequest, *, facts: WorktreeFacts | None = None) -> Classification:
    """The capabilities ``request`` needs, each with a reason; never fewer than its tool's default."""
    findings = Findings()
    known = facts or WorktreeFacts()
    match request.tool:
        case ToolName.RUN_COMMAND:
            findings.add(_C.PROCESS, "run_command runs a program")
            classify_argv(request.argv(), findings, depth=0, programs=PROGRAMS)
        case (
            ToolName.READ_FILE
            | ToolName.LIST_DIRECTORY
            | ToolName.GLOB
            | ToolName.GREP
            | ToolName.INSPECT_DIFF
            | ToolName.GIT_STATUS
            | ToolName.GIT_LOG
            | ToolName.WRITE_FILE
            | ToolName.EDIT_FILE
            | ToolName.APPLY_PATCH
            | ToolName.DELETE_FILE
        ):
            classify_file_tool(request, known, findings)
        case _:
            assert_never(request.tool)
    return findings.freeze(request.tool)
